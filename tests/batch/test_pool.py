"""respc.batch.pool.ordered_map: order, errors, and a worker that dies in the middle of an answer."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from respc.batch.pool import WorkerDied, ordered_map


def _square_slowly(item: int) -> int:
    time.sleep(0.002 * (item % 3))  # uneven task times: answers come back out of order between workers
    return item * item


def test_results_come_in_input_order() -> None:
    assert list(ordered_map(_square_slowly, range(200), workers=2)) == [i * i for i in range(200)]


def _fail_on_seven(item: int) -> int:
    if item == 7:
        raise KeyError(f"no {item}")
    return item


def test_an_exception_in_a_worker_is_raised_after_the_answers_before_it() -> None:
    got = []
    with pytest.raises(KeyError, match="no 7"):
        for value in ordered_map(_fail_on_seven, range(20), workers=2):
            got.append(value)
    assert got == list(range(7))


_STATE: list[int] = []


def _init(value: int) -> None:
    if value < 0:
        raise ValueError("bad initializer argument")
    _STATE[:] = [value]


def _add_state(item: int) -> int:
    return item + _STATE[0]


def test_the_initializer_runs_in_each_worker_and_its_error_is_raised() -> None:
    assert list(ordered_map(_add_state, range(5), workers=2, initializer=_init, initargs=(10,))) == [
        10,
        11,
        12,
        13,
        14,
    ]
    with pytest.raises(ValueError, match="bad initializer argument"):
        list(ordered_map(_add_state, range(5), workers=2, initializer=_init, initargs=(-1,)))


def _die_while_answering(item: int) -> bytes:
    if item == 0:
        time.sleep(1.0)  # the parent waits for this answer first, so it reads nothing from worker 1 yet
    elif item == 1:
        # Worker 1's answer is larger than a pipe holds, so its write blocks part-way until the parent
        # reads; the timer kills it there, half-way through the message: the case that can leave
        # ProcessPoolExecutor waiting forever for the rest of a message (and its lock).
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
        return b"x" * 10_000_000
    return b"ok"


def test_a_worker_killed_in_the_middle_of_an_answer_fails_the_run() -> None:
    started = time.monotonic()
    with pytest.raises(WorkerDied, match="a worker process died"):
        list(ordered_map(_die_while_answering, range(8), workers=2))
    assert time.monotonic() - started < 30  # seen at once (its sentinel), not after worker 0's answer


def _children() -> set[int]:
    pid = os.getpid()
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as file:
            found.update(int(child) for child in file.read().split())
    return found


def test_closing_early_stops_the_workers() -> None:
    before = _children()
    results = ordered_map(_square_slowly, range(1000), workers=2)
    assert next(results) == 0
    assert _children() - before  # the workers run
    results.close()
    assert _children() - before == set()


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_workers_must_be_a_positive_integer(workers: object) -> None:
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        list(ordered_map(_square_slowly, range(3), workers=workers))  # type: ignore[arg-type]


def _exit_on_three(item: int) -> int:
    if item == 3:
        raise SystemExit(3)
    return item


def test_sys_exit_in_the_function_is_reported_not_a_dead_worker() -> None:
    got = []
    with pytest.raises(RuntimeError, match=r"called sys.exit\(3\) in a worker"):
        for value in ordered_map(_exit_on_three, range(10), workers=2):
            got.append(value)
    assert got == [0, 1, 2]


class _NeedsTwo(Exception):
    """Pickles (as its args) but cannot be rebuilt from them: unpickling calls __init__ with one."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} and {second}")


def _raise_needs_two(item: int) -> int:
    raise _NeedsTwo("a", str(item))


def test_an_exception_that_cannot_be_rebuilt_is_reported_by_name() -> None:
    with pytest.raises(RuntimeError, match="_NeedsTwo: a and 0"):
        list(ordered_map(_raise_needs_two, range(2), workers=1))
