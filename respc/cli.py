"""The `respc` command: compile and explain response templates.

Exit codes: 0 success, 1 `--check` found a difference, 2 usage error, unreadable input or invalid
template. Errors are one line naming the file (and the template's field and key); `-v` adds the
traceback. Outputs are written atomically, so a failure never leaves a partial file.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import json
import os
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Any

from respc._version import __version__

__all__ = ["main"]


class CliError(Exception):
    """A user-facing failure: printed as one line, exit code 2."""


def _decode_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(
            f"{where}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise CliError(f"{where}: invalid JSON: nested too deeply") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory, expected a file") from None
    except PermissionError:
        raise CliError(f"{path}: permission denied") from None
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except OSError as error:
        raise CliError(f"{path}: cannot read: {error.strerror or error}") from None


def load_source(source: str) -> tuple[Any, str]:
    """The response template a SOURCE argument names, and the name to show for it.

    SOURCE is a template `.json`, a `tokenizer_config.json` (its `response_template` key), a model
    directory holding one, or `-` for standard input. The shown name is never an absolute path, so
    generated headers do not depend on where the command ran.
    """
    if source == "-":
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError as error:
            raise CliError(f"<stdin>: not UTF-8 text (byte {error.start}: {error.reason})") from None
        return _unwrap(_decode_json(text, "<stdin>"), Path("<stdin>")), "<stdin>"
    path = Path(source)
    if path.is_dir():
        return _model_dir_template(path, source)
    name = path.name if path.is_absolute() else path.as_posix()
    return _unwrap(_decode_json(_read_text(path), str(path)), path), name


def _model_dir_template(path: Path, source: str) -> tuple[Any, str]:
    """A model directory: its tokenizer_config.json's template, else the preset for its model type."""
    from respc.model import ResponseTemplateNotFound, model_template

    try:
        template, preset = model_template(path)
    except ResponseTemplateNotFound as error:
        raise CliError(str(error)) from None
    except ValueError as error:  # unreadable or invalid JSON in the directory
        raise CliError(str(error).splitlines()[0]) from None
    config = path / "tokenizer_config.json"
    if preset is not None:
        return template, f"{preset.__name__.rpartition('.')[2]} preset (for {path.name})"
    return template, config.name if path.is_absolute() else config.as_posix()


def _unwrap(data: Any, path: Path) -> Any:
    """A tokenizer config's `response_template`, or the data itself when it is a bare template."""
    if isinstance(data, dict) and "fields" not in data:
        if "response_template" in data:
            if data["response_template"] is None:
                raise CliError(f"{path}: 'response_template' is null")
            return data["response_template"]
        if path.name == "tokenizer_config.json" or "tokenizer_class" in data:
            raise CliError(f"{path}: has no 'response_template' key")
    return data


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same directory, then rename."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.exists() and not path.is_file():
        # Renaming over a device, FIFO or directory would replace it (as root, even /dev/null).
        raise OSError(errno.EEXIST, "exists and is not a regular file", str(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        # mkstemp creates 0600: keep the mode of the file replaced, else the usual umask default.
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _generate(template: Any, name: str, out: str | None) -> str:
    from respc.compiler import TemplateError, generate_source
    from respc.compiler.format import SourceError

    regenerate = f"respc compile {name}" + (f" -o {out}" if out else "")
    try:
        return generate_source(template, name=name, regenerate=regenerate)
    except TemplateError as error:
        raise CliError(f"{name}: {error}".splitlines()[0]) from error
    except (SourceError, RecursionError, MemoryError) as error:
        # transformers accepts values nested deeper than Python source can spell (about 200 levels)
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CliError(f"{name}: cannot compile: template values are nested too deeply ({reason})") from error


def _cmd_compile(args: argparse.Namespace) -> int:
    template, name = load_source(args.source)
    out_name = (
        args.output
        if args.output and not Path(args.output).is_absolute()
        else (Path(args.output).name if args.output else None)
    )
    source = _generate(template, name, out_name)
    if args.check:
        if not args.output:
            raise CliError("--check needs -o OUT: the file to compare against")
        out = Path(args.output)
        try:
            current = out.read_text(encoding="utf-8") if out.is_file() else ""
        except UnicodeDecodeError:
            current = "\ufffd"  # not even UTF-8: certainly stale
        except OSError as error:
            raise CliError(f"{out}: cannot read: {error.strerror or error}") from None
        if current == source:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(True), source.splitlines(True), f"{out} (on disk)", f"{out} (regenerated)"
        )
        sys.stdout.writelines(diff)
        print(f"respc: {out} is {'stale' if current else 'missing'}", file=sys.stderr)
        return 1
    if args.output:
        try:
            write_atomic(Path(args.output), source)
        except OSError as error:
            raise CliError(f"{args.output}: cannot write: {error.strerror or error}") from None
    else:
        sys.stdout.write(source)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from respc.compiler import TemplateError, load_template, plan_parser
    from respc.compiler.explain import explain

    template, name = load_source(args.source)
    try:
        plan = plan_parser(load_template(template), name)
    except TemplateError as error:
        raise CliError(f"{name}: {error}".splitlines()[0]) from error
    sys.stdout.write(explain(plan))
    return 0


def _cmd_regen(args: argparse.Namespace) -> int:
    from respc.compiler import TemplateError
    from respc.compiler.regen import PACKAGE, regen, update_readme

    progress = None
    if sys.stderr.isatty():

        def progress(name: str) -> None:
            print(f"\rrespc: compiling {name:<40}", end="", file=sys.stderr, flush=True)

    try:
        drift = regen(check=args.check, progress=progress)
        readme_stale = update_readme(Path(args.readme), check=args.check) if args.readme else False
    except TemplateError as error:
        raise CliError(f"respc/presets/{error}".splitlines()[0]) from error
    if progress:
        print("\r" + " " * 60 + "\r", end="", file=sys.stderr)
    done = {"stale": "rewritten", "missing": "written", "orphaned": "removed"}
    for item in drift:
        state = item.kind if args.check else f"{item.kind} ({done[item.kind]})"
        print(f"respc: {item.path.relative_to(PACKAGE.parent)}: {state}", file=sys.stderr)
    if readme_stale:
        print(f"respc: {args.readme}: preset table {'stale' if args.check else 'rewritten'}", file=sys.stderr)
    if args.check:
        return 1 if drift or readme_stale else 0
    print(f"respc: generated/ is up to date ({len(drift)} file(s) changed)", file=sys.stderr)
    return 0


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _cmd_presets(args: argparse.Namespace) -> int:
    from respc.registry import preset_info, presets

    rows = [("preset", "families", "model types", "special tokens")]
    for name in presets():
        info = preset_info(name)
        types = _shorten(", ".join(info["model_types"]) or "-", 40)
        rows.append((name, _shorten(info["families"], 56), types, "keep" if info["special_tokens"] else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="respc", description="Compile Hugging Face response templates.")
    parser.add_argument("--version", action="version", version=f"respc {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    compile_ = commands.add_parser("compile", help="compile a template to a Python parser module")
    compile_.add_argument(
        "source", metavar="SOURCE", help="template .json, tokenizer_config.json, model dir, or -"
    )
    compile_.add_argument("-o", "--output", metavar="OUT", help="write the module here (default: stdout)")
    compile_.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 with a diff if OUT is stale"
    )
    compile_.set_defaults(run=_cmd_compile)
    explain_ = commands.add_parser("explain", help="print the delimiter table and state plan")
    explain_.add_argument(
        "source", metavar="SOURCE", help="template .json, tokenizer_config.json, model dir, or -"
    )
    explain_.set_defaults(run=_cmd_explain)
    regen_ = commands.add_parser("regen", help="rebuild respc/generated/ from respc/presets/")
    regen_.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is stale")
    regen_.add_argument("--readme", metavar="README", help="also refresh the preset table in this README")
    regen_.set_defaults(run=_cmd_regen)
    presets_ = commands.add_parser("presets", help="list the shipped parsers and the models they cover")
    presets_.set_defaults(run=_cmd_presets)
    from respc.batch import add_parse_command  # here, not at the top: respc.batch imports respc.cli

    add_parse_command(commands)
    return parser


def _show_warning(message: Warning | str, category: type, filename: str, lineno: int, *rest: Any) -> None:
    print(f"respc: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run the `respc` command; returns the exit code."""
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():  # restores the caller's warning display when main() returns
        warnings.showwarning = _show_warning
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return args.run(args)
    except BrokenPipeError:  # `respc presets | head`: the reader left; end quietly, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except CliError as error:
        if args.verbose:
            traceback.print_exc()
        print(f"respc: error: {error}", file=sys.stderr)
        return 2
    except ImportError as error:
        if args.verbose:
            traceback.print_exc()
        print(
            f"respc: error: {error.name or error}: install the compiler extra: pip install 'respc[compiler]'",
            file=sys.stderr,
        )
        return 2
