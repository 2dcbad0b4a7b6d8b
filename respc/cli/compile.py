"""`respc compile SOURCE [-o OUT] [--check]`: write the parser module for a template."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from respc._io import InputError, write_atomic
from respc.cli.errors import UsageError, template_errors
from respc.model import load_source

__all__ = ["register", "run"]

SOURCE_HELP = "template .json, tokenizer_config.json, model dir, or -"


def register(commands: Any) -> None:
    """Add `compile` to the `respc` subcommands."""
    command = commands.add_parser("compile", help="compile a template to a Python parser module")
    command.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    command.add_argument("-o", "--output", metavar="OUT", help="write the module here (default: stdout)")
    command.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff if OUT is stale"
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.check and not args.output:
        raise UsageError("--check needs -o OUT: the file to compare against")
    template, name = load_source(args.source)
    out_name = None
    if args.output:
        out_name = Path(args.output).name if Path(args.output).is_absolute() else args.output
    regenerate = f"respc compile {name}" + (f" -o {out_name}" if out_name else "")
    from respc.compiler import generate_source

    with template_errors(name):
        source = generate_source(template, name=name, regenerate=regenerate)
    if args.check:
        return _check(Path(args.output), source)
    if args.output:
        write_atomic(args.output, source)
    else:
        sys.stdout.write(source)
    return 0


def _check(out: Path, source: str) -> int:
    try:
        current = out.read_text(encoding="utf-8") if out.is_file() else ""
    except UnicodeDecodeError:
        current = "\ufffd"  # not even UTF-8: certainly stale
    except OSError as error:
        raise InputError(f"{out}: cannot read: {error.strerror or error}") from None
    if current == source:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(True), source.splitlines(True), f"{out} (on disk)", f"{out} (regenerated)"
    )
    sys.stdout.writelines(diff)
    print(f"respc: {out} is {'stale' if current else 'missing'}", file=sys.stderr)
    return 1
