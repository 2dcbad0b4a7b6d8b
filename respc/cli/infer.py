"""`respc infer SOURCE [-o OUT]`: derive a response template from a chat template (see
`respc.authoring.infer`). Exit 0 with the template, 1 when inference refuses (the reason and the nearest
preset on stderr), 2 usage error."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from respc._io import write_atomic
from respc.cli.check import CHAT_TEMPLATE_HELP, load_chat_template_arg
from respc.cli.compile import add_target

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `infer` to the `respc` subcommands."""
    command = commands.add_parser(
        "infer",
        help="derive a response template from a chat template",
        description="Render probe conversations with the chat template, read the delimiters and the tool-call "
        "format off the differences, and write the response template if it parses every probe back exactly.",
    )
    command.add_argument("source", metavar="SOURCE", help=CHAT_TEMPLATE_HELP)
    command.add_argument("-o", "--output", metavar="OUT", help="write the template here (default: stdout)")
    command.add_argument(
        "--json", action="store_true", help="print the template, evidence, warnings and check as JSON"
    )
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from respc.authoring.infer import infer

    chat_template = load_chat_template_arg(args.source)
    result = infer(chat_template, target=args.target)
    if args.json:
        json.dump(result.to_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        for line in result.evidence:
            print(f"  {line}", file=sys.stderr)
        for line in result.warnings:
            print(f"respc: warning: {line}", file=sys.stderr)
    if result.template is None:
        hint = f" (nearest preset: {result.nearest})" if result.nearest else ""
        print(f"respc: cannot infer a response template: {result.refused}{hint}", file=sys.stderr)
        return 1
    text = json.dumps(result.template, ensure_ascii=False, indent=2) + "\n"
    if args.output:
        write_atomic(args.output, text)
    elif not args.json:
        sys.stdout.write(text)
    return 0
