"""The `respc` command: argument parsing, dispatch to one module per command, and error reporting.

Exit codes: 0 success, 1 `--check` found a difference or some input failed to parse, 2 usage error,
unreadable input or invalid template. Errors are one line naming the file (and the template's field and
key); `-v` adds the traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
import warnings
from typing import Any

from respc._extras import install_hint
from respc._io import InputError, OutputError
from respc._version import __version__
from respc.batch.records import WorkerDied
from respc.cli import check, explain, infer, parse, presets, regen, serve
from respc.cli import compile as compile_command
from respc.cli.errors import UsageError
from respc.model import ResponseTemplateNotFound
from respc.registry import PresetNotFound, TargetTooOld
from respc.runtime.targets import UnknownTarget

__all__ = ["build_parser", "main"]

COMMANDS = (compile_command, explain, presets, regen, parse, serve, check, infer)


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: no abbreviated options (argparse would take `--prompt` for
    `--prompt-field`, a different option, without a word), and `-v` after the subcommand too."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_abbrev=False, **kwargs)
        self.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP
        )


VERBOSE_HELP = "show the traceback of an error"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `respc` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="respc", description="Compile Hugging Face response templates.", allow_abbrev=False
    )
    parser.add_argument("--version", action="version", version=f"respc {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )
    for command in COMMANDS:
        command.register(commands)
    return parser


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, *rest: Any) -> None:
    print(f"respc: warning: {message}", file=sys.stderr)


class Terminated(BaseException):
    """SIGTERM, raised where the process is so that outputs being written are removed on the way out."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated


# The extra that installs a module the command may need.
EXTRAS = {
    "jinja2": "compiler",
    "black": "compiler",
    "pyarrow": "parquet",
    "ray": "ray",
    "datasets": "datasets",
    "starlette": "serve",
    "uvicorn": "serve",
}


_FORK_HOOK: list[bool] = []


def _reset_in_forks() -> None:
    """A forked worker process ends on SIGTERM, as its pool expects, rather than run `_terminate`
    (from the moment it exists, before its initializer could change anything)."""
    if not _FORK_HOOK:
        os.register_at_fork(after_in_child=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
        _FORK_HOOK.append(True)


def main(argv: list[str] | None = None) -> int:
    """Run the `respc` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
        _reset_in_forks()
    try:
        with warnings.catch_warnings():  # restores the caller's warning display when main() returns
            warnings.showwarning = _show_warning
            return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("\nrespc: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("respc: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:  # `respc presets | head`: the reader left; end quietly, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (
        UsageError,
        InputError,
        OutputError,
        ResponseTemplateNotFound,
        PresetNotFound,
        UnknownTarget,
        TargetTooOld,
        WorkerDied,
    ) as error:
        return _fail(args, str(error))
    except ImportError as error:
        module = (error.name or "").partition(".")[0]
        extra = EXTRAS.get(module, "compiler")
        return _fail(args, f"{module or error}: install the {extra} extra: {install_hint(extra)}")


def _fail(args: argparse.Namespace, message: str) -> int:
    if args.verbose:
        traceback.print_exc()
    print(f"respc: error: {message.splitlines()[0] if message else 'failed'}", file=sys.stderr)
    return 2
