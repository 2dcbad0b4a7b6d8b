"""An ordered process pool that fails, instead of hanging, when one of its workers dies.

`concurrent.futures.ProcessPoolExecutor` can hang for good when a worker is killed while it sends a
result: its workers share one result pipe, so the half-written message leaves the pipe's lock taken (the
other workers wait on it) and the reading thread waits for the rest of a message nobody will finish
(CPython 3.11; reproduced by `tests/batch/test_engines.py`'s killed worker under load). Here each worker has a pipe
of its own in each direction, and only that worker holds the write end of its result pipe, so its death
reads as the end of that pipe (or shows as its process sentinel) and the run fails with `WorkerDied`.

Tasks go to the worker with the fewest in flight; each worker answers its tasks in the order it got them,
so reading the answers in the order the tasks were sent keeps the input order. A thread per worker writes
its tasks, so the parent never blocks on a full pipe while that worker blocks on writing an answer.
"""

from __future__ import annotations

import collections
import multiprocessing
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

__all__ = ["WINDOW", "WorkerDied", "ordered_map"]

WINDOW = 4  # tasks in flight per worker: enough to keep workers busy, bounded so memory stays flat
_END = object()  # tells a writer thread to close its worker's task pipe (the worker then exits)


class WorkerDied(RuntimeError):
    """A worker process of `ordered_map` ended without finishing its task."""


def ordered_map(
    function: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> Iterator[Any]:
    """`map(function, items)` in `workers` forked processes, in order, with at most `workers * WINDOW`
    items in flight (`Pool.imap` would read its whole input ahead, so memory would grow with the input).
    An exception raised by `function` (or `initializer`) in a worker is raised here; a worker that dies
    (killed, out of memory) fails the run with `WorkerDied`. Closing the iterator early stops the workers.
    """
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    context = multiprocessing.get_context("fork")  # workers find what the parent compiled in its cache
    processes: list[Any] = []
    results: list[Connection] = []
    outboxes: list[queue.SimpleQueue] = []
    task_ends: list[Connection] = []  # the parent's write end of each worker's task pipe
    writers: list[threading.Thread] = []
    finished = False
    try:
        for _ in range(workers):
            task_reader, task_writer = context.Pipe(duplex=False)
            result_reader, result_writer = context.Pipe(duplex=False)
            # The parent's ends of every pipe so far are closed in the new worker at once, so that each
            # pipe's write end lives in one process only (its end then reads as end of file).
            parents_ends = [*results, *task_ends, result_reader, task_writer]
            process = context.Process(
                target=_serve,
                args=(task_reader, result_writer, parents_ends, function, initializer, initargs),
                daemon=True,
            )
            process.start()
            task_reader.close()
            result_writer.close()
            processes.append(process)
            results.append(result_reader)
            task_ends.append(task_writer)
        # The writer threads start once every worker is forked: forking a process that runs threads is
        # what Python 3.12+ warns about.
        for task_writer in task_ends:
            outbox: queue.SimpleQueue = queue.SimpleQueue()
            writer = threading.Thread(target=_write_tasks, args=(task_writer, outbox), daemon=True)
            writer.start()
            outboxes.append(outbox)
            writers.append(writer)
        in_flight = [0] * workers
        order: collections.deque[int] = collections.deque()  # the worker of each task, oldest first
        sentinels = [process.sentinel for process in processes]

        def answer() -> Any:
            index = order.popleft()
            connection = results[index]
            if connection not in wait([connection, *sentinels]):
                raise WorkerDied(_DIED)  # a worker ended (workers only end once told to)
            try:
                ok, value = connection.recv()
            except (EOFError, OSError):
                raise WorkerDied(_DIED) from None
            in_flight[index] -= 1
            if not ok:
                raise value
            return value

        for item in items:
            index = min(range(workers), key=in_flight.__getitem__)
            outboxes[index].put(bytes(ForkingPickler.dumps(item)))  # pickled here: errors raise here
            in_flight[index] += 1
            order.append(index)
            if len(order) >= workers * WINDOW:
                yield answer()
        while order:
            yield answer()
        finished = True
    finally:
        for outbox in outboxes:
            outbox.put(_END)
        for process in processes:
            if not finished:
                process.kill()  # an error or an early close: what the workers do no longer matters
            # Every answer is in: a worker still running waits on a task pipe another pool's worker
            # may hold open (forked meanwhile), so it is stopped rather than waited for.
            process.join(timeout=1 if finished else 5)
            if process.is_alive():
                process.kill()
                process.join()
        for writer in writers:
            writer.join(timeout=5)
        for connection in results:
            connection.close()


_DIED = "a worker process died (killed, or out of memory?); nothing was written"


def _write_tasks(connection: Connection, outbox: queue.SimpleQueue) -> None:
    """A writer thread: send each pickled task to the worker until told to stop (or the worker is gone)."""
    try:
        while (task := outbox.get()) is not _END:
            connection.send_bytes(task)
    except OSError:
        pass  # the worker died: the reader finds out from its pipe or its sentinel
    finally:
        connection.close()


def _serve(
    tasks: Connection,
    results: Connection,
    inherited: list[Connection],
    function: Callable[[Any], Any],
    initializer: Callable[..., None] | None,
    initargs: tuple,
) -> None:
    """A worker: answer each task with `(True, value)` or `(False, exception)` until the task pipe ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    for connection in inherited:
        connection.close()
    failed: BaseException | None = None
    if initializer is not None:
        try:
            initializer(*initargs)
        except Exception as error:
            failed = error  # every task reports it, so the parent raises the real cause
    while True:
        try:
            item = tasks.recv()
        except EOFError:
            return
        if failed is not None:
            _answer(results, False, failed)
            continue
        try:
            value = function(item)
        except Exception as error:
            _answer(results, False, error)
        except SystemExit as error:
            # `sys.exit` in the function: the worker would end and the run fail as if it was killed.
            # Reported as what it was instead (not raised as SystemExit: the caller's process goes on).
            _answer(results, False, RuntimeError(f"the function called sys.exit({error.code!r}) in a worker"))
        else:
            _answer(results, True, value)


def _answer(results: Connection, ok: bool, value: Any) -> None:
    try:
        payload = ForkingPickler.dumps((ok, value))
        if not ok:
            pickle.loads(payload)  # an exception that pickles may still not unpickle (required arguments)
    except Exception as error:  # an exception (or a value) that cannot be pickled: say what it was
        payload = ForkingPickler.dumps((False, RuntimeError(f"{type(value).__name__}: {value} ({error})")))
    results.send_bytes(payload)
