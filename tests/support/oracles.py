"""The two oracles, side by side: transformers 5.24.0 and 5.23.0, one per target respc supports.

The test extra installs transformers 5.24.0 (the default target's release) into the environment, and
the tests call it in process. transformers 5.23.0 cannot share that environment, so it is installed
into a folder of its own (`python tests/support/oracles.py install`, which `.ci/run` runs and the tests run
on first use) and driven in a worker process that puts that folder first on `sys.path`; the two
releases need the same dependencies, which the worker takes from the environment. Both give traces of
one form: ("ok", value), ("raise", exception type, message), with remote exception types stood in for
by `RemoteType`, which compares by name along the local type's MRO.

    python tests/support/oracles.py install     # idempotent; RESPC_ORACLE_DIR moves the folder
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
ORACLE_DIR = Path(os.environ.get("RESPC_ORACLE_DIR", ROOT / ".oracles"))
RELEASES = {"5.24": "5.24.0", "5.23": "5.23.0"}  # target -> the transformers release that defines it
IN_PROCESS = "5.24"  # the release installed in the environment (pyproject's test extra pins it)


class OracleTimeout(BaseException):
    """The oracle did not return in time (it hangs on some templates: quirk Q5).

    A BaseException, so that a parser's own `except Exception` (transformers catches content-parser
    errors) cannot swallow the alarm and leave the hang running with no deadline left."""


class RemoteType:
    """An exception type raised in the worker process: its name and the names along its MRO."""

    def __init__(self, name: str, mro: tuple[str, ...]) -> None:
        self.__name__ = name
        self.mro_names = mro

    def __repr__(self) -> str:
        return f"<remote {self.__name__}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteType) and other.mro_names == self.mro_names

    def __hash__(self) -> int:
        return hash(self.mro_names)


def is_exception_of(ours: type, theirs: Any) -> bool:
    """Whether respc's exception type `ours` is (a subclass of) the oracle's `theirs`."""
    if isinstance(theirs, RemoteType):
        return theirs.__name__ in {klass.__name__ for klass in ours.__mro__}
    return issubclass(ours, theirs)


def folder(target: str) -> Path:
    return ORACLE_DIR / f"transformers-{RELEASES[target]}"


def install(target: str) -> Path:
    """Install the release of `target` into its folder (once), without dependencies."""
    path = folder(target)
    marker = path / ".complete"
    if marker.exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(path),
            "--upgrade",
            f"transformers=={RELEASES[target]}",
        ],
        check=True,
    )
    marker.touch()
    return path


# -- running calls with a deadline (shared by both oracles; the worker imports this module) -----------


_TIMING = [False]  # whether a call of `run_calls` is under its deadline now


def _alarm(signum: int, frame: Any) -> None:
    if not _TIMING[0]:
        return  # (an alarm that fired as the call returned)
    # The exception can land inside a finalizer or a weakref callback that the hung loop's allocations set
    # off (Ray's and pyarrow's objects, left by earlier tests), where Python prints and drops it: the alarm
    # is set again, so that the next one stops the call (a one-shot alarm once left a hang running for
    # good, growing by 1 GB a minute).
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    raise OracleTimeout()


def run_calls(calls: list, deadline: float | None) -> list:
    """Run each zero-argument call in order, recording ("ok", value) or ("raise", type, message)."""
    out = []
    old = signal.signal(signal.SIGALRM, _alarm) if deadline else None
    try:
        for call in calls:
            if deadline:
                _TIMING[0] = True
                signal.setitimer(signal.ITIMER_REAL, deadline)
            try:
                out.append(("ok", call()))
            except OracleTimeout:
                raise
            except Exception as error:
                out.append(("raise", type(error), str(error)))
            finally:
                if deadline:
                    _TIMING[0] = False
                    signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        if old is not None:
            signal.signal(signal.SIGALRM, old)
    return out


def stream_trace(make_parser: Any, chunks: list[str], deadline: float | None = None) -> list:
    """The trace of a whole stream: construction (with initial events), each feed, finalize (twice)."""
    holder: dict[str, Any] = {}

    def construct() -> list:
        holder["parser"] = make_parser()
        return holder["parser"].initial_events

    steps = run_calls([construct], deadline)
    if steps[0][0] != "ok":
        return steps
    parser = holder["parser"]
    calls = [lambda c=c: parser.feed(c) for c in chunks] + [parser.finalize, parser.finalize]
    return steps + run_calls(calls, deadline)


def load_outcome(template: Any) -> str:
    """ "accept", or "<ExceptionType>: <message>" from the oracle's `load_response_template`."""
    from transformers.utils.chat_parsing.response_templates import load_response_template

    try:
        load_response_template(template)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return "accept"


def _serve(request: tuple) -> Any:
    """One request, in whichever process holds the oracle."""
    kind, args, deadline = request
    if kind == "stream":
        from transformers.utils.chat_parsing import ResponseParser

        template, prefix, chunks, tools = args
        return stream_trace(lambda: ResponseParser(template, prefix, tools=tools), chunks, deadline)
    if kind == "parse":
        from transformers.utils.chat_parsing import parse_response

        template, text, prefix, tools = args
        return run_calls([lambda: parse_response(text, template, prefix=prefix, tools=tools)], deadline)
    if kind == "load":
        return load_outcome(args)
    if kind == "call":  # a function of tests/support/oracle_calls.py, for the tokenizer entry points
        from support import oracle_calls

        name, call_args = args
        return run_calls([lambda: getattr(oracle_calls, name)(*call_args)], deadline)
    raise ValueError(f"unknown oracle request {kind!r}")


# -- the oracles -------------------------------------------------------------------------------------


class InProcessOracle:
    """The release installed in the test environment, called directly."""

    def __init__(self, target: str) -> None:
        self.target = target
        import transformers

        assert transformers.__version__ == RELEASES[target], (
            f"the environment has transformers {transformers.__version__}, the tests need "
            f"{RELEASES[target]} (pip install -e '.[test]')"
        )

    def request(self, kind: str, args: Any, deadline: float | None = 10.0, isolated: bool = False) -> Any:
        """The answer to one request. `isolated` runs it in a forked child killed at the deadline: a
        hanging oracle has been seen to outlive the in-process alarm (and to eat gigabytes meanwhile)."""
        if not isolated:
            return _serve((kind, args, deadline))
        import multiprocessing

        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=_serve_into, args=((kind, args, deadline), send))
        child.start()
        send.close()
        if not receive.poll((deadline or 600) + 1):
            child.kill()
            child.join()
            raise OracleTimeout()
        status, value = receive.recv()
        child.join()
        if status == "timeout":
            raise OracleTimeout()
        return _remote_types(value)


def _serve_into(request: tuple, send: Any) -> None:
    try:
        send.send(("ok", _plain_types(_serve(request))))
    except OracleTimeout:
        send.send(("timeout", None))


class WorkerOracle:
    """A release installed in its own folder, called in a worker process over a pipe (pickle frames)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.path = install(target)
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        # The release first; then tests/ (the helpers) and the checkout, so the worker runs this checkout's
        # respc (respc.accelerate is called there) even where an editable install points elsewhere.
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(self.path), str(Path(__file__).parents[1]), str(ROOT)]),
            TRANSFORMERS_VERBOSITY="error",
        )
        return subprocess.Popen(
            [sys.executable, "-c", "from support import oracles; oracles.worker_main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def request(self, kind: str, args: Any, deadline: float | None = 10.0, isolated: bool = False) -> Any:
        """The answer to one request; `isolated` kills the worker soon after the deadline if it is stuck
        where its alarm cannot reach (the next request starts a new one)."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        data = pickle.dumps((kind, args, deadline))
        process.stdin.write(struct.pack("<Q", len(data)) + data)
        process.stdin.flush()
        # The worker's own alarm gives up after `deadline`; this outer limit only catches a worker stuck
        # where a signal cannot reach (inside the `regex` module's C code).
        limit = (deadline or 600) + 1 if isolated else (deadline or 600) * 3 + 30
        ready, _, _ = select.select([process.stdout], [], [], limit)
        if not ready:
            process.kill()
            process.wait()
            self.process = None
            raise OracleTimeout()
        size = process.stdout.read(8)
        if len(size) < 8:
            self.process = None
            raise RuntimeError(f"the transformers {RELEASES[self.target]} worker died")
        status, value = pickle.loads(process.stdout.read(struct.unpack("<Q", size)[0]))
        if status == "timeout":
            raise OracleTimeout()
        if status == "error":
            raise RuntimeError(f"the transformers {RELEASES[self.target]} worker failed: {value}")
        return _remote_types(value)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        self.process = None


def _plain_types(value: Any) -> Any:
    """Exception types in a trace, as (name, MRO names) so they pickle across processes."""
    if isinstance(value, list):
        return [_plain_types(item) for item in value]
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "raise" and isinstance(value[1], type):
        return ("raise", ("type", value[1].__name__, tuple(k.__name__ for k in value[1].__mro__)), value[2])
    return value


def _remote_types(value: Any) -> Any:
    if isinstance(value, list):
        return [_remote_types(item) for item in value]
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "raise" and isinstance(value[1], tuple):
        return ("raise", RemoteType(value[1][1], value[1][2]), value[2])
    return value


def worker_main() -> None:
    """The worker's loop: requests on stdin, replies on stdout, until stdin closes."""
    import transformers

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the oracle prints must not corrupt the replies
    expected = [target for target, release in RELEASES.items() if release == transformers.__version__]
    if not expected:
        raise SystemExit(
            f"worker imported transformers {transformers.__version__} from {transformers.__file__}"
        )
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    while True:
        size = stdin.read(8)
        if len(size) < 8:
            return
        request = pickle.loads(stdin.read(struct.unpack("<Q", size)[0]))
        try:
            reply = ("ok", _plain_types(_serve(request)))
        except OracleTimeout:
            reply = ("timeout", None)
        except Exception as error:  # a bug in the harness, not an oracle result
            reply = ("error", f"{type(error).__name__}: {error}")
        data = pickle.dumps(reply)
        stdout.write(struct.pack("<Q", len(data)) + data)
        stdout.flush()


_ORACLES: dict[str, Any] = {}


def oracle(target: str) -> InProcessOracle | WorkerOracle:
    """The oracle of `target`, started on first use."""
    if target not in _ORACLES:
        _ORACLES[target] = InProcessOracle(target) if target == IN_PROCESS else WorkerOracle(target)
    return _ORACLES[target]


def close_all() -> None:
    for each in _ORACLES.values():
        if isinstance(each, WorkerOracle):
            each.close()


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        raise SystemExit("usage: python tests/support/oracles.py install")
    for target in RELEASES:
        if target != IN_PROCESS:
            print(f"transformers {RELEASES[target]}: {install(target)}")
