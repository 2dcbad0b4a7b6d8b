"""`respc parse`: parse stored model outputs into messages, one response or a JSONL file of them.

A record that fails to parse never stops the run and is never dropped (see `respc.batch`); the exit code
is then 1. Usage errors and unreadable input exit 2 with one line on stderr. `-o OUT` is written
atomically, so an interrupted or failed run leaves OUT as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from respc._io import AtomicOutput, open_text, read_json, read_lines
from respc.batch import ParserSource, parse_records
from respc.batch.records import error_line
from respc.cli.compile import SOURCE_HELP, add_target
from respc.cli.errors import UsageError, template_errors
from respc.cli.progress import Progress
from respc.model import ResponseTemplateNotFound, load_source, model_template

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `parse` to the `respc` subcommands."""
    command = commands.add_parser(
        "parse",
        help="parse model output with a preset or template",
        description="Parse model output into messages: one response (text) or many (JSONL).",
    )
    command.add_argument(
        "input",
        nargs="?",
        default="-",
        metavar="INPUT",
        help="a response text file or a .jsonl file (default: stdin)",
    )
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a shipped preset (see `respc presets`)")
    source.add_argument("--template", metavar="SOURCE", help=SOURCE_HELP)
    source.add_argument(
        "--model",
        metavar="DIR",
        help="a model dir: its tokenizer_config.json, else the preset for its config.json",
    )
    command.add_argument("--jsonl", action="store_true", help="INPUT is JSONL (implied by a .jsonl name)")
    command.add_argument("--response-field", default="response", metavar="NAME", help="default: response")
    command.add_argument(
        "--prompt-field", default="prompt", metavar="NAME", help="used as prefix; default: prompt"
    )
    command.add_argument("--id-field", default="id", metavar="NAME", help="default: id")
    command.add_argument("--tools", metavar="FILE", help="JSON list of tools, to type tool-call arguments")
    command.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (default: 1)")
    command.add_argument("-o", "--output", metavar="OUT", help="write here, atomically (default: stdout)")
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """0 when every record parsed, 1 when some failed; usage and input errors raise (exit 2)."""
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    source, name = _source(args)
    tools = _tools(args.tools)
    module = _load(source, name)  # a bad preset or template is found before any record is read
    jsonl = args.jsonl or args.input.endswith(".jsonl")
    with _input(args.input) as stream, _output(args.output) as out:
        if jsonl:
            failed = _parse_jsonl(args, stream, out, source, tools)
        else:
            failed = _parse_one(stream, out, module, tools)
    return 1 if failed else 0


def _source(args: argparse.Namespace) -> tuple[ParserSource, str]:
    """The parser source the arguments name, and how to name it in errors."""
    if args.preset is not None:
        return ParserSource(preset=args.preset, target=args.target), args.preset
    if args.template is not None:
        template, name = load_source(args.template)
        return ParserSource(template=template, target=args.target), name
    try:
        template, preset = model_template(args.model)
    except ResponseTemplateNotFound as error:
        raise UsageError(str(error)) from None
    if preset is not None:
        return ParserSource(preset=preset.__name__.rpartition(".")[2], target=args.target), args.model
    return ParserSource(template=template, target=args.target), args.model


def _load(source: ParserSource, name: str) -> Any:
    from respc.registry import PresetNotFound

    try:
        if source.template is None:
            return source.load()
        with template_errors(name):
            return source.load()
    except PresetNotFound as error:
        raise UsageError(str(error)) from None


def _tools(path: str | None) -> list | None:
    return None if path is None else read_json(path, expect=list)


@contextlib.contextmanager
def _input(name: str) -> Iterator[IO[str]]:
    if name == "-":
        yield sys.stdin
        return
    with open_text(name) as stream:
        yield stream


@contextlib.contextmanager
def _output(name: str | None) -> Iterator[IO[str]]:
    if name is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    with AtomicOutput(name) as stream:
        yield stream


def _count_lines(name: str) -> int | None:
    if name == "-" or not Path(name).is_file():
        return None
    with open(name, "rb") as stream:
        return sum(1 for line in stream if line.strip())


def _parse_one(stream: IO[str], out: IO[str], module: Any, tools: list | None) -> int:
    text = "".join(read_lines(stream, getattr(stream, "name", "<stdin>")))
    try:
        message = module.parse_response(text, prefix="", tools=tools)
    except Exception as error:
        out.write(error_line(None, type(error).__name__, str(error), text) + "\n")
        print(f"respc: the response failed to parse: {type(error).__name__}", file=sys.stderr)
        return 1
    out.write(json.dumps(message, ensure_ascii=False, indent=2) + "\n")
    return 0


def _parse_jsonl(
    args: argparse.Namespace, stream: IO[str], out: IO[str], source: ParserSource, tools: list | None
) -> int:
    progress = Progress(_count_lines(args.input))
    fields = (args.response_field, args.prompt_field, args.id_field)
    lines = read_lines(stream, args.input if args.input != "-" else "<stdin>")
    failed = 0
    for line, bad in parse_records(lines, source, tools=tools, fields=fields, workers=args.workers):
        out.write(line + "\n")
        failed += bad
        progress.step()
    progress.end()
    print(f"respc: {progress.done} records, {failed} failed", file=sys.stderr)
    return failed
