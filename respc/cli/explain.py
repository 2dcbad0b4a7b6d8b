"""`respc explain SOURCE`: the delimiter table, the fields and the state plan, as text."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from respc.cli.compile import SOURCE_HELP, add_target
from respc.cli.errors import template_errors
from respc.model import load_source

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `explain` to the `respc` subcommands."""
    command = commands.add_parser("explain", help="print the delimiter table and state plan")
    command.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from respc._compile import explain

    template, name = load_source(args.source)
    with template_errors(name):
        text = explain(template, name=name, target=args.target)
    sys.stdout.write(text)
    return 0
