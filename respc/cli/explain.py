"""`respc explain SOURCE|--preset NAME`: the delimiter table, the fields and the state plan, as text."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from respc.cli.compile import add_source, add_target, source_of
from respc.cli.errors import template_errors

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `explain` to the `respc` subcommands."""
    command = commands.add_parser("explain", help="print the delimiter table and state plan")
    add_source(command)
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from respc._compile import explain

    template, name, _ = source_of(args)
    with template_errors(name):
        text = explain(template, name=name, target=args.target)
    sys.stdout.write(text)
    return 0
