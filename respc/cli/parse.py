"""`respc parse`: parse stored model outputs into messages, one response or a JSONL file of them.

A record that fails to parse never stops the run and is never dropped (see `respc.batch`); the exit code
is then 1. A response that ends inside a region (cut off) is counted and flagged, and fails with
`--strict-end`. Usage errors and unreadable input exit 2 with one line on stderr. `-o OUT` is written
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
from respc.batch.files import (
    FORMATS,
    SUFFIXES,
    check_output,
    count_records,
    input_of,
    open_sink,
    output_of,
    require_pyarrow,
)
from respc.batch.records import LAYOUTS, Columns, ParserSource, RecordParser, result_line
from respc.cli.compile import SOURCE_HELP, add_target
from respc.cli.errors import UsageError, template_errors
from respc.cli.progress import Progress
from respc.model import ResponseTemplateNotFound, load_source, model_template

__all__ = ["register", "run"]


def add_parser_source(command: argparse.ArgumentParser) -> None:
    """The options that choose the parser (one of them, required): `load_parser` reads them."""
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a shipped preset (see `respc presets`)")
    source.add_argument("--template", metavar="SOURCE", help=SOURCE_HELP)
    source.add_argument(
        "--model",
        metavar="DIR",
        help="a model dir: its tokenizer_config.json, else the preset detected for it",
    )


def register(commands: Any) -> None:
    """Add `parse` to the `respc` subcommands."""
    command = commands.add_parser(
        "parse",
        help="parse model output with a preset or template",
        description="Parse model output into messages: one response (text), or many records (JSONL or "
        "Parquet; a file or a directory of shards), on this machine or on a Ray cluster.",
    )
    command.add_argument(
        "input",
        nargs="?",
        default="-",
        metavar="INPUT",
        help="a response text file, a .jsonl or .parquet file, or a directory of shards (default: stdin)",
    )
    add_parser_source(command)
    command.add_argument(
        "--format", choices=("text", *FORMATS), help="INPUT's format (default: from its name; stdin: text)"
    )
    command.add_argument("--jsonl", action="store_true", help="same as --format jsonl")
    prefix = command.add_mutually_exclusive_group()
    prefix.add_argument(
        "--prefix",
        metavar="TEXT",
        help="a single response: the prompt it continues (its end decides the first region, e.g. <think>)",
    )
    prefix.add_argument("--prefix-file", metavar="FILE", help="a single response: --prefix read from FILE")
    command.add_argument("--response-field", metavar="NAME", help="default: response")
    command.add_argument(
        "--prompt-field", metavar="NAME", help="used as prefix; default: prompt (if present)"
    )
    command.add_argument("--id-field", metavar="NAME", help="default: id (if present)")
    command.add_argument(
        "--tools-field", metavar="NAME", help="a record's own tools (a list or a JSON string of one)"
    )
    command.add_argument("--tools", metavar="FILE", help="JSON list of tools, to type tool-call arguments")
    command.add_argument(
        "--lenient", action="store_true", help='errors="keep": keep what parsed, list parse_errors'
    )
    command.add_argument(
        "--strict-end",
        action="store_true",
        help="fail a response that ends inside a region (cut off; by default it is flagged and counted)",
    )
    command.add_argument("-o", "--output", metavar="OUT", help="a file, or DIR/ for shards (default: stdout)")
    command.add_argument(
        "--output-format", choices=FORMATS, help="OUT's format (default: from its name, else jsonl)"
    )
    command.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="Parquet output: the message as JSON (json, the default), or also typed columns (typed)",
    )
    command.add_argument(
        "--shard-rows", type=int, metavar="N", help="records per output shard (-o DIR/; default 1000000)"
    )
    command.add_argument("--engine", choices=("local", "ray"), default="local", help="default: local")
    command.add_argument("--workers", type=int, default=1, metavar="N", help="local worker processes")
    command.add_argument(
        "--address", metavar="HOST:PORT", help="Ray: a running cluster (default: start a local one)"
    )
    command.add_argument(
        "--concurrency", type=int, metavar="N", help="Ray: parser actors (default: the cluster's CPUs)"
    )
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """0 when every record parsed, 1 when some failed; usage and input errors raise (exit 2)."""
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.engine != "ray" and (args.address is not None or args.concurrency is not None):
        raise UsageError("--address and --concurrency need --engine ray")
    source, name = _source(args)
    tools = _tools(args.tools)
    module = _load(source, name)  # a bad preset or template is found before any record is read
    form = _input_format(args)
    if form == "text":
        _check_text_options(args)
        prefix = _prefix(args)
        with _input(args.input) as stream:
            text = "".join(read_lines(stream, getattr(stream, "name", "<stdin>")))
        return _parse_one(args, module, text, prefix, tools)
    if args.prefix is not None or args.prefix_file is not None:
        raise UsageError("--prefix is for a single response; records take theirs from --prompt-field")
    return _parse_records(args, source, tools)


# Options that only records have (a single response takes --prefix and --tools).
RECORD_OPTIONS = {
    "response_field": "--response-field",
    "prompt_field": "--prompt-field",
    "id_field": "--id-field",
    "tools_field": "--tools-field",
    "shard_rows": "--shard-rows",
}


def _check_text_options(args: argparse.Namespace) -> None:
    if args.engine != "local":
        raise UsageError("a single response (text input) is parsed locally; --engine ray needs records")
    for key, option in RECORD_OPTIONS.items():
        if getattr(args, key) is not None:
            hint = "; its prompt goes in --prefix" if key == "prompt_field" else ""
            raise UsageError(f"{option} is for records (JSONL or Parquet); the input is one response{hint}")


def _prefix(args: argparse.Namespace) -> str:
    if args.prefix_file is not None:
        with open_text(args.prefix_file) as stream:
            return "".join(read_lines(stream, args.prefix_file))
    return args.prefix or ""


def load_parser(args: argparse.Namespace) -> tuple[Any, str]:
    """The parser module `--preset`, `--template` or `--model` names, and its name (`respc serve`)."""
    source, name = _source(args)
    module = _load(source, name)
    return module, (module.__name__.rpartition(".")[2] if source.preset is not None else name)


def _input_format(args: argparse.Namespace) -> str:
    if args.jsonl:
        if args.format not in (None, "jsonl"):
            raise UsageError(f"--jsonl contradicts --format {args.format}")
        return "jsonl"
    if args.format is not None:
        return args.format
    path = Path(args.input)
    if args.input != "-" and (path.is_dir() or path.suffix in (".jsonl", ".parquet")):
        return input_of(args.input).format
    return "text"


def _parse_records(args: argparse.Namespace, source: ParserSource, tools: list | None) -> int:
    from respc.batch.local import Job, run_local

    named = {
        "response": args.response_field,
        "prompt": args.prompt_field,
        "id": args.id_field,
        "tools": args.tools_field,
    }
    defaults = Columns()
    columns = Columns(
        **{key: value or getattr(defaults, key) for key, value in named.items()},
        # named on the command line: must exist (a misspelt name fails loudly); a record's own tools are
        # optional (without them the run's --tools apply)
        required=frozenset(v for k, v in named.items() if v is not None and k != "tools"),
    )
    output = output_of(args.output, args.output_format, args.shard_rows or 1_000_000)
    if args.shard_rows is not None and not output.shards:
        raise UsageError(f"--shard-rows is for a directory of shards (-o DIR/); {output.name} is one file")
    if args.layout is not None and output.format != "parquet":
        raise UsageError(f"--layout is for Parquet output; {output.name} is JSONL (the message as JSON)")
    job = Job(
        source=source,
        # (the format as named: a directory's files without a suffix are shards only when it is)
        input=input_of(args.input, "jsonl" if args.jsonl else args.format),
        output=output,
        columns=columns,
        tools=tools,
        layout=args.layout or "json",
        errors="keep" if args.lenient else "strict",
        strict_end=args.strict_end,
    )
    progress = Progress(count_records(job.input))
    if args.engine == "ray":
        from respc.batch.ray import run_ray

        summary = run_ray(job, address=args.address, concurrency=args.concurrency, progress=progress.advance)
    else:
        summary = run_local(job, workers=args.workers, progress=progress.advance)
    progress.end()
    cut_off = f", {summary.cut_off} cut off (ended inside a region)" if summary.cut_off else ""
    print(f"respc: {summary.records} records, {summary.failed} failed{cut_off}", file=sys.stderr)
    return 1 if summary.failed else 0


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


def _parse_one(args: argparse.Namespace, module: Any, text: str, prefix: str, tools: list | None) -> int:
    """One response: its message as indented JSON (stdout, or OUT), or as one record when OUT is a
    .jsonl or .parquet file (or --output-format says so). Exit 1 when it failed (or listed parse_errors)."""
    form = args.output_format or (SUFFIXES.get(Path(args.output).suffix) if args.output else None)
    if args.layout is not None and form != "parquet":
        raise UsageError("--layout is for Parquet output (-o FILE.parquet)")
    output = None if form is None else output_of(args.output, form)
    if output is not None:
        if output.shards:
            raise UsageError(f"{output.name}: one response is written to a file, not a directory of shards")
        if form == "parquet":
            require_pyarrow()
        check_output(output)
    errors = "keep" if args.lenient else "strict"
    records = RecordParser(module, tools=tools, errors=errors, strict_end=args.strict_end)
    result = records.result({"response": text, "prompt": prefix})
    if result.cut_off is not None:
        print(f"respc: the response ended inside region {result.cut_off!r} (cut off)", file=sys.stderr)
    if result.error is not None:
        print(f"respc: the response failed to parse: {result.error[0]}", file=sys.stderr)
    if output is None:
        with _output(args.output) as out:
            if result.error is None:
                out.write(json.dumps(result.message, ensure_ascii=False, indent=2) + "\n")
            else:
                out.write(result_line(result) + "\n")
    elif form == "jsonl":
        with open_sink(output) as sink:
            sink.write_lines([result_line(result)])
    else:
        import pyarrow as pa

        from respc.batch.arrow import output_schema, results_table

        layout = args.layout or "json"
        with open_sink(output, output_schema(None, layout)) as sink:
            sink.write_table(results_table([result], pa.nulls(1), layout))
    return 1 if result.failed else 0
