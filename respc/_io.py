"""respc's one I/O layer: reading text and JSON with one wording for every failure, and atomic writes.

Every command and library path that reads a file the user named (a template, a tokenizer config, a
tools list, a README, a JSONL input) or writes one (a compiled module, `respc parse` output, the
generated presets, the parser cache) goes through here, so a failure reads the same everywhere: one
line naming the file. Writes go to a temporary file beside the target, renamed over it only when
complete, so a failure never leaves a partial file; the result keeps the permissions of the file it
replaces (a new one gets the umask's, or 0600 when private), and a special file (a FIFO, a device, a
directory) is never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = [
    "AtomicOutput",
    "InputError",
    "OutputError",
    "decode_json",
    "numbered_lines",
    "open_binary",
    "open_text",
    "read_json",
    "read_lines",
    "read_stdin",
    "read_text",
    "write_atomic",
]


class InputError(ValueError):
    """A file or stream respc cannot read or use; the message is one line naming it."""


class OutputError(OSError):
    """A file respc cannot write; the message is one line naming it."""


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _read_failure(path: object, error: BaseException) -> InputError:
    """The one wording of every reading failure."""
    if isinstance(error, FileNotFoundError):
        return InputError(f"{path}: no such file or directory")
    if isinstance(error, IsADirectoryError):
        return InputError(f"{path}: is a directory, expected a file")
    if isinstance(error, PermissionError):
        return InputError(f"{path}: permission denied")
    if isinstance(error, UnicodeDecodeError):
        return InputError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})")
    assert isinstance(error, OSError)
    return InputError(f"{path}: cannot read: {_reason(error)}")


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of `path`; every failure is an `InputError` naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _read_failure(path, error) from None


def open_text(path: str | os.PathLike) -> IO[str]:
    """`path` open for reading UTF-8 text, for inputs too large to read at once (see `read_lines`)."""
    try:
        return Path(path).open(encoding="utf-8")
    except OSError as error:
        raise _read_failure(path, error) from None


def read_lines(stream: IO[str], name: str) -> Iterator[str]:
    """The lines of an open text stream; a failure while reading is an `InputError` naming `name`."""
    try:
        yield from stream
    except (OSError, UnicodeDecodeError) as error:
        raise _read_failure(name, error) from None


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """`path` open for reading bytes (see `numbered_lines`); a failure is an `InputError` naming it."""
    try:
        return Path(path).open("rb")
    except OSError as error:
        raise _read_failure(path, error) from None


def numbered_lines(stream: IO[bytes], name: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a binary stream, as a text stream with universal newlines
    splits them (`\n`, `\r\n` and a lone `\r` end a line; U+2028 and friends do not), each decoded
    as UTF-8 on its own, so a bad byte is reported with its line."""
    number = 0
    try:
        for raw in stream:
            for piece in raw.splitlines() if b"\r" in raw else (raw.rstrip(b"\n"),):
                number += 1
                try:
                    yield number, piece.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise InputError(
                        f"{name}: line {number}: not UTF-8 text (byte {error.start}: {error.reason})"
                    ) from None
    except OSError as error:
        raise _read_failure(name, error) from None


def read_stdin() -> str:
    """Standard input as text (`<stdin>` in error messages)."""
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as error:
        raise InputError(f"<stdin>: not UTF-8 text (byte {error.start}: {error.reason})") from None


def decode_json(text: str, where: str) -> Any:
    """`json.loads(text)`; a failure is an `InputError` naming `where`, the line and the column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{where}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise InputError(f"{where}: invalid JSON: nested too deeply") from None


def read_json(path: str | os.PathLike, *, missing: Any = None, expect: type | None = None) -> Any:
    """The JSON value in `path`. `missing` (when not None) is returned for a file that does not exist;
    `expect=dict` (or list) makes any other top-level type an `InputError`."""
    path = Path(path)
    if missing is not None and not path.exists():
        return missing
    value = decode_json(read_text(path), str(path))
    if expect is not None and not isinstance(value, expect):
        kind = "a JSON object" if expect is dict else f"a JSON {expect.__name__}"
        raise InputError(f"{path}: expected {kind}, got {type(value).__name__}")
    return value


def _check_replaceable(path: Path) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {_reason(error)}") from None
    if not stat.S_ISREG(info.st_mode):
        # Renaming over a device, FIFO or directory would replace it (as root, even /dev/null).
        raise OutputError(f"{path}: cannot write: exists and is not a regular file")


class AtomicOutput:
    """A text (or, with `binary`, bytes) stream that becomes `path` only when the `with` block
    completes without an exception.

    The data goes to a temporary file in the same directory (so the final rename is atomic); on an
    exception it is deleted and `path` is left as it was.
    """

    def __init__(self, path: str | os.PathLike, *, private: bool = False, binary: bool = False) -> None:
        self.path = Path(path)
        self.private = private
        self.binary = binary
        self.stream: IO | None = None
        self._temporary: str | None = None

    def __enter__(self) -> IO:
        _check_replaceable(self.path)
        # Created with the mode a new file gets (the kernel applies the umask), unlike mkstemp's 0600.
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(8)}.tmp")
        try:
            handle = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if self.private else 0o666
            )
        except OSError as error:
            raise OutputError(f"{self.path}: cannot write: {_reason(error)}") from None
        self._temporary = str(temporary)
        if self.binary:
            self.stream = os.fdopen(handle, "wb")
        else:
            self.stream = os.fdopen(handle, "w", encoding="utf-8", newline="\n")
        return self.stream

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self.stream is not None and self._temporary is not None
        try:
            if kind is not None:
                return
            try:
                self.stream.close()  # flushes: a full disk shows here
                if not self.private:  # keep the mode of the file replaced
                    with contextlib.suppress(FileNotFoundError):
                        os.chmod(self._temporary, stat.S_IMODE(self.path.stat().st_mode))
                _check_replaceable(self.path)  # it may have become a FIFO meanwhile
                os.replace(self._temporary, self.path)
            except OutputError:
                raise
            except OSError as failure:
                raise OutputError(f"{self.path}: cannot write: {_reason(failure)}") from None
        finally:
            if not self.stream.closed:
                self.stream.close()
            Path(self._temporary).unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, text: str, *, private: bool = False) -> None:
    """Write `text` to `path` atomically (see `AtomicOutput`)."""
    with AtomicOutput(path, private=private) as stream:
        try:
            stream.write(text)
        except OSError as error:  # a full disk, a quota...
            raise OutputError(f"{path}: cannot write: {_reason(error)}") from None
