"""`respc compile SOURCE [-o OUT] [--check]`: write the parser module for a template."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

from respc._io import InputError, read_text, write_atomic
from respc.cli.errors import UsageError, template_errors
from respc.model import load_source

__all__ = ["register", "run"]

SOURCE_HELP = "template .json, tokenizer_config.json, model dir, or -"


def add_target(command: Any) -> None:
    """The `--target` option: the transformers release to parse as."""
    from respc.runtime.targets import DEFAULT_TARGET, SUPPORTED_TARGETS

    command.add_argument(
        "--target",
        choices=SUPPORTED_TARGETS,
        default=None,
        help=f"the transformers release to parse as (default: {DEFAULT_TARGET}, the newest)",
    )


def add_source(command: Any) -> None:
    """SOURCE, or `--preset NAME` (a shipped preset's template)."""
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("source", nargs="?", metavar="SOURCE", help=SOURCE_HELP)
    source.add_argument("--preset", metavar="NAME", help="a shipped preset (see `respc presets`)")


def source_of(args: argparse.Namespace) -> tuple[Any, str, str]:
    """The template the arguments name, how to name it in errors and headers, and the argument that
    names it in a command (`--preset qwen3`, or the source)."""
    if args.preset is not None:
        from respc.registry import PresetNotFound, load_preset, preset_name

        try:
            name = preset_name(args.preset)
            return load_preset(name).TEMPLATE, f"preset {name}", f"--preset {name}"
        except PresetNotFound as error:
            raise UsageError(str(error)) from None
    template, name = load_source(args.source)
    path = Path(args.source)
    if args.source != "-" and path.is_dir():  # a model dir: its name may be the preset detected for it
        return template, name, path.name if path.is_absolute() else path.as_posix()
    return template, name, name


def register(commands: Any) -> None:
    """Add `compile` to the `respc` subcommands."""
    command = commands.add_parser("compile", help="compile a template to a Python parser module")
    add_source(command)
    command.add_argument("-o", "--output", metavar="OUT", help="write the module here (default: stdout)")
    command.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff if OUT is stale"
    )
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.check and not args.output:
        raise UsageError("--check needs -o OUT: the file to compare against")
    template, name, argument = source_of(args)
    out_name = None
    if args.output:
        out_name = Path(args.output).name if Path(args.output).is_absolute() else args.output
    regenerate = f"respc compile {argument}" + (f" -o {out_name}" if out_name else "")
    if args.target is not None:
        regenerate += f" --target {args.target}"
    from respc._compile import generate_source

    with template_errors(name):
        source = generate_source(template, name=name, regenerate=regenerate, target=args.target)
    if args.check:
        return _check(Path(args.output), source)
    if args.output:
        write_atomic(args.output, source)
    else:
        sys.stdout.write(source)
    return 0


def _check(out: Path, source: str) -> int:
    try:
        current = read_text(out) if out.is_file() else ""
    except InputError as error:
        if "not UTF-8" not in str(error):
            raise
        current = "\ufffd"  # not even UTF-8: certainly stale
    if current == source:
        return 0
    diff = difflib.unified_diff(
        current.splitlines(True), source.splitlines(True), f"{out} (on disk)", f"{out} (regenerated)"
    )
    sys.stdout.writelines(diff)
    print(f"respc: {out} is {'stale' if current else 'missing'}", file=sys.stderr)
    return 1
