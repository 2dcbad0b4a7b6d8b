"""`respc parse`: parse stored model outputs into messages, one response or a JSONL file of them.

A record that fails to parse never stops the run and is never dropped: it is written in place as
`{"id": ..., "error": {"type": ..., "message": ...}, "response": <raw text>}` and the exit code is 1.
Usage errors and unreadable input exit 2 with one line on stderr. Workers are processes fed in chunks
through an ordered `imap`, so the output keeps the input's order for any `--workers`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from respc.cli import CliError, load_source

__all__ = ["add_parse_command", "parse_records", "run_parse"]

PROGRESS_MIN_RECORDS = 1000  # shorter inputs finish before a progress display helps
COUNT_EVERY = 10_000  # records between plain progress lines when stderr is not a terminal
IMAP_CHUNK = 256  # records per task sent to a worker: amortises the inter-process round trip


def add_parse_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register `parse` on the `respc` command's subparsers; returns the new subparser."""
    parse = subparsers.add_parser(
        "parse",
        help="parse model output with a preset or template",
        description="Parse model output into messages: one response (text) or many (JSONL).",
    )
    parse.add_argument(
        "input",
        nargs="?",
        default="-",
        metavar="INPUT",
        help="a response text file or a .jsonl file (default: stdin)",
    )
    source = parse.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a shipped preset (see `respc presets`)")
    source.add_argument(
        "--template", metavar="SOURCE", help="template .json, tokenizer_config.json, model dir, or -"
    )
    source.add_argument(
        "--model",
        metavar="DIR",
        help="a model dir: its tokenizer_config.json, else the preset for its config.json",
    )
    parse.add_argument("--jsonl", action="store_true", help="INPUT is JSONL (implied by a .jsonl name)")
    parse.add_argument("--response-field", default="response", metavar="NAME", help="default: response")
    parse.add_argument(
        "--prompt-field", default="prompt", metavar="NAME", help="used as prefix; default: prompt"
    )
    parse.add_argument("--id-field", default="id", metavar="NAME", help="default: id")
    parse.add_argument("--tools", metavar="FILE", help="JSON list of tools, to type tool-call arguments")
    parse.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default: 1)")
    parse.add_argument("-o", "--output", metavar="OUT", help="write here, atomically (default: stdout)")
    parse.set_defaults(run=run_parse)
    return parse


def run_parse(args: argparse.Namespace) -> int:
    """Run `respc parse`: 0 when every record parsed, 1 when some failed, 2 on a usage or input error."""
    try:
        return _run(args)
    except CliError as error:
        if getattr(args, "verbose", False):
            traceback.print_exc()
        print(f"respc: error: {error}", file=sys.stderr)
        return 2


# -- the parser source -------------------------------------------------------------------------------


def _source(args: argparse.Namespace) -> tuple[str, Any]:
    """("preset", name) or ("template", dict): what a worker process needs to rebuild the parser."""
    if args.preset is not None:
        return "preset", args.preset
    if args.template is not None:
        template, _ = load_source(args.template)
        return "template", template
    from respc.model import ResponseTemplateNotFound, model_template

    try:
        template, preset = model_template(args.model)
    except (ResponseTemplateNotFound, NotADirectoryError) as error:
        raise CliError(str(error)) from None
    except ValueError as error:  # unreadable or invalid JSON in the directory
        raise CliError(str(error).splitlines()[0]) from None
    if preset is not None:
        return "preset", preset.__name__.rpartition(".")[2]
    return "template", template


def _module(source: tuple[str, Any]) -> Any:
    kind, value = source
    if kind == "preset":
        from respc.registry import PresetNotFound, load_preset

        try:
            return load_preset(value)
        except PresetNotFound as error:
            raise CliError(str(error)) from None
    import respc

    try:
        return respc.compile_template(value)
    except ImportError as error:
        raise CliError(
            f"{error.name or error}: install the compiler extra: pip install 'respc[compiler]'"
        ) from None
    except ValueError as error:  # respc.TemplateError
        raise CliError(f"template: {error}".splitlines()[0]) from None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except json.JSONDecodeError as error:
        raise CliError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None


def _tools(path: str | None) -> list | None:
    if path is None:
        return None
    tools = _read_json(Path(path))
    if not isinstance(tools, list):
        raise CliError(f"{path}: expected a JSON list of tools, got {type(tools).__name__}")
    return tools


# -- parsing records ---------------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(source: tuple[str, Any], tools: list | None, fields: tuple[str, str, str]) -> None:
    _WORKER.update(parse=_module(source).parse_response, tools=tools, fields=fields)


def _parse_line(line: str) -> tuple[str, bool]:
    """One JSONL input line -> (output line, failed), in the process that has the parser."""
    response_field, prompt_field, id_field = _WORKER["fields"]
    line = line.rstrip("\r\n")
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        return _error_line(None, "JSONDecodeError", f"invalid JSON: {error}", line), True
    if not isinstance(record, dict):
        return (
            _error_line(None, "InvalidRecord", f"expected a JSON object, got {type(record).__name__}", line),
            True,
        )
    record_id = record.get(id_field)
    response, prompt = record.get(response_field), record.get(prompt_field)
    if not isinstance(response, str):
        found = "missing" if response_field not in record else f"a {type(response).__name__}"
        message = f"field {response_field!r} must be a string, got {found}"
        return _error_line(record_id, "InvalidRecord", message, response), True
    if prompt is not None and not isinstance(prompt, str):
        message = f"field {prompt_field!r} must be a string or null, got {type(prompt).__name__}"
        return _error_line(record_id, "InvalidRecord", message, response), True
    try:
        message = _WORKER["parse"](response, prefix=prompt or "", tools=_WORKER["tools"])
    except Exception as error:  # any failure of one record is reported in its place
        return _error_line(record_id, type(error).__name__, str(error), response), True
    return json.dumps({"id": record_id, "message": message}, ensure_ascii=False), False


def _error_line(record_id: Any, kind: str, message: str, response: Any) -> str:
    error = {"id": record_id, "error": {"type": kind, "message": message}, "response": response}
    return json.dumps(error, ensure_ascii=False)


def parse_records(
    lines: Iterable[str],
    source: tuple[str, Any],
    *,
    tools: list | None = None,
    fields: tuple[str, str, str] = ("response", "prompt", "id"),
    workers: int = 1,
) -> Iterator[tuple[str, bool]]:
    """Output lines for JSONL input lines, in input order: (line, failed) for each non-blank line."""
    lines = (line for line in lines if line.strip())
    if workers <= 1:
        _init_worker(source, tools, fields)
        yield from map(_parse_line, lines)
        return
    # Compile (or load) once here: a bad template fails before any worker starts, and forked workers
    # find the module in respc's cache instead of each running black again.
    _module(source)
    with multiprocessing.Pool(workers, _init_worker, (source, tools, fields)) as pool:
        yield from pool.imap(_parse_line, lines, chunksize=IMAP_CHUNK)


# -- input, output and progress ----------------------------------------------------------------------


def _open_input(name: str) -> IO[str]:
    if name == "-":
        return sys.stdin
    path = Path(name)
    try:
        return path.open(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{name}: is a directory, expected a file") from None
    except OSError as error:
        raise CliError(f"{name}: cannot read: {error.strerror or error}") from None


def _count_lines(name: str) -> int | None:
    if name == "-" or not Path(name).is_file():
        return None
    with open(name, "rb") as stream:
        return sum(1 for line in stream if line.strip())


class _Progress:
    """A bar on a terminal, a count every COUNT_EVERY records otherwise; nothing for short inputs."""

    def __init__(self, total: int | None) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.bar = sys.stderr.isatty() and (total is None or total >= PROGRESS_MIN_RECORDS)
        self.shown = 0.0

    def step(self) -> None:
        self.done += 1
        if self.bar:
            now = time.monotonic()
            if now - self.shown >= 0.1 or self.done == self.total:
                self.shown = now
                rate = self.done / max(now - self.started, 1e-9)
                if self.total:
                    filled = int(30 * self.done / self.total)
                    bar = "#" * filled + "." * (30 - filled)
                    text = f"[{bar}] {self.done}/{self.total} {rate:,.0f} records/s"
                else:
                    text = f"{self.done} records {rate:,.0f} records/s"
                print(f"\rrespc: {text}", end="", file=sys.stderr, flush=True)
        elif self.done % COUNT_EVERY == 0:
            print(f"respc: {self.done} records", file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.bar and self.done:
            print(file=sys.stderr)


class _Output:
    """stdout, or a temporary file beside OUT renamed over it when the run completes."""

    def __init__(self, name: str | None) -> None:
        self.name, self.temporary = name, None
        if name is None:
            self.stream: IO[str] = sys.stdout
            return
        path = Path(name)
        try:
            handle, self.temporary = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else "."
            )
        except OSError as error:
            raise CliError(f"{name}: cannot write: {error.strerror or error}") from None
        self.stream = os.fdopen(handle, "w", encoding="utf-8", newline="\n")

    def commit(self) -> None:
        if self.temporary is None:
            self.stream.flush()
            return
        self.stream.close()
        try:
            os.replace(self.temporary, self.name)
        except OSError as error:
            raise CliError(f"{self.name}: cannot write: {error.strerror or error}") from None

    def discard(self) -> None:
        if self.temporary is not None:
            self.stream.close()
            Path(self.temporary).unlink(missing_ok=True)


def _run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1, got {args.workers}")
    source = _source(args)
    tools = _tools(args.tools)
    _module(source)  # a bad preset or template is a usage error, found before any record is read
    jsonl = args.jsonl or args.input.endswith(".jsonl")
    stream = _open_input(args.input)
    output = _Output(args.output)
    try:
        if jsonl:
            failed = _parse_jsonl(args, stream, output.stream, source, tools)
        else:
            failed = _parse_one(stream, output.stream, source, tools)
        output.commit()
    except BaseException:
        output.discard()
        raise
    finally:
        if stream is not sys.stdin:
            stream.close()
    return 1 if failed else 0


def _read(stream: IO[str], name: str) -> Iterator[str]:
    try:
        yield from stream
    except UnicodeDecodeError as error:
        raise CliError(f"{name}: not UTF-8 text (byte {error.start}: {error.reason})") from None


def _parse_one(stream: IO[str], out: IO[str], source: tuple[str, Any], tools: list | None) -> int:
    text = "".join(_read(stream, getattr(stream, "name", "<stdin>")))
    parse = _module(source).parse_response
    try:
        message = parse(text, prefix="", tools=tools)
    except Exception as error:
        out.write(_error_line(None, type(error).__name__, str(error), text) + "\n")
        print(f"respc: the response failed to parse: {type(error).__name__}", file=sys.stderr)
        return 1
    out.write(json.dumps(message, ensure_ascii=False, indent=2) + "\n")
    return 0


def _parse_jsonl(
    args: argparse.Namespace, stream: IO[str], out: IO[str], source: tuple[str, Any], tools: list | None
) -> int:
    progress = _Progress(_count_lines(args.input))
    fields = (args.response_field, args.prompt_field, args.id_field)
    lines = _read(stream, args.input if args.input != "-" else "<stdin>")
    failed = 0
    for line, bad in parse_records(lines, source, tools=tools, fields=fields, workers=args.workers):
        out.write(line + "\n")
        failed += bad
        progress.step()
    progress.end()
    print(f"respc: {progress.done} records, {failed} failed", file=sys.stderr)
    return failed
