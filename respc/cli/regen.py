"""`respc regen [--check] [--readme FILE]`: rebuild respc/generated/ from respc/presets/."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from respc.cli.errors import UsageError
from respc.cli.progress import Progress

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `regen` to the `respc` subcommands."""
    command = commands.add_parser("regen", help="rebuild respc/generated/ from respc/presets/")
    command.add_argument("--check", action="store_true", help="write nothing; exit 1 if anything is stale")
    command.add_argument(
        "--readme",
        metavar="FILE",
        help="also refresh the preset table in this Markdown file (docs/presets.md)",
    )
    command.set_defaults(run=run)


def checkout(package: Path) -> Path:
    """The checkout of respc whose `respc/` is `package` (the package this command runs from); a copy
    installed in site-packages is not one (checking it would say nothing of the clone's presets)."""
    root = package.parent
    try:
        project = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        project = ""
    if not re.search(r'(?m)^name\s*=\s*"respc"\s*$', project) or not (package / "presets").is_dir():
        raise UsageError(
            f"{package} is an installed copy, not a checkout of respc: run `python -m respc regen` from "
            "the checkout's root (or install it with pip install -e .)"
        )
    return root


def run(args: argparse.Namespace) -> int:
    from respc import _compile
    from respc.registry import presets
    from respc.spec import TemplateError

    root = checkout(Path(_compile.__file__).resolve().parent)
    readme = Path(args.readme) if args.readme else None
    progress = Progress(len(presets()), unit="presets", minimum=1, every=0)
    try:
        drift, readme_stale, package = _compile.regen(
            check=args.check, readme=readme, progress=lambda name: progress.step(f"compiling {name}")
        )
    except TemplateError as error:
        raise UsageError(str(error)) from error
    finally:
        progress.end()
    done = {"stale": "rewritten", "missing": "written", "orphaned": "removed"}
    for item in drift:
        state = item.kind if args.check else f"{item.kind} ({done[item.kind]})"
        print(f"respc: {item.path.relative_to(package.parent)}: {state}", file=sys.stderr)
    if readme_stale:
        print(f"respc: {readme}: preset table {'stale' if args.check else 'rewritten'}", file=sys.stderr)
    generated = package / "generated"
    if args.check:
        if drift or readme_stale:
            print(f"respc: {generated} is stale: run `respc regen` in {root}", file=sys.stderr)
            return 1
        print(f"respc: {generated} is up to date ({len(presets())} presets checked)", file=sys.stderr)
        return 0
    print(f"respc: {generated} is up to date ({len(drift)} file(s) changed)", file=sys.stderr)
    return 0
