"""`respc check [SOURCE] [--chat-template PATH] [--preset NAME]`: does a response template parse back what
its chat template writes? Exit 0 clean, 1 findings, 2 usage error (see `respc.authoring.check`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from respc.cli.compile import SOURCE_HELP, add_target
from respc.cli.errors import UsageError, template_errors

__all__ = ["load_chat_template_arg", "register", "run"]

CHAT_TEMPLATE_HELP = "a .jinja file, a JSON config with chat_template (tokenizer_config.json), or a model dir"


def register(commands: Any) -> None:
    """Add `check` to the `respc` subcommands."""
    command = commands.add_parser(
        "check",
        help="check a response template against its chat template",
        description="Render probe conversations with the chat template and parse each assistant turn back "
        "with the response template; report every difference and its cause.",
    )
    command.add_argument(
        "source",
        nargs="?",
        metavar="SOURCE",
        help=f"the response template: {SOURCE_HELP}; a model dir also gives the chat template",
    )
    command.add_argument("--chat-template", metavar="PATH", help=CHAT_TEMPLATE_HELP)
    command.add_argument("--preset", metavar="NAME", help="check a shipped preset (see `respc presets`)")
    command.add_argument("--json", action="store_true", help="print the report as JSON")
    add_target(command)
    command.set_defaults(run=run)


def load_chat_template_arg(path: str) -> Any:
    """The chat template a PATH argument names, compiled once so that a syntax error is a usage error."""
    import jinja2

    from respc.authoring.rendering import compile_chat_template
    from respc.authoring.sources import NoChatTemplate, load_chat_template

    try:
        chat_template = load_chat_template(path)
    except NoChatTemplate as error:
        raise UsageError(str(error)) from None
    for text in chat_template.texts():
        try:
            compile_chat_template(text)
        except jinja2.TemplateSyntaxError as error:
            raise UsageError(f"{chat_template.where}: line {error.lineno}: {error.message}") from None
        except ImportError as error:  # jinja2 too old to render untrusted templates safely
            from respc._extras import install_hint

            raise UsageError(f"{error}; or {install_hint('authoring')}") from None
    return chat_template


def run(args: argparse.Namespace) -> int:
    from respc.authoring.check import check
    from respc.model import load_source
    from respc.registry import load_preset

    if args.source is None and args.preset is None:
        raise UsageError("check needs SOURCE (a response template or model dir) or --preset NAME")
    chat_path = args.chat_template
    if chat_path is None:
        if args.source is None or not Path(args.source).is_dir():
            raise UsageError("--chat-template PATH is needed unless SOURCE is a model directory")
        chat_path = args.source
    chat_template = load_chat_template_arg(chat_path)
    if args.preset is not None:
        template, name = load_preset(args.preset).TEMPLATE, f"{args.preset} preset"
    else:
        template, name = load_source(args.source)
    with template_errors(name):
        report = check(chat_template, template, target=args.target, name=name)
    if args.json:
        json.dump({"clean": report.clean, **report.to_json()}, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report.text())
    return 0 if report.clean else 1
