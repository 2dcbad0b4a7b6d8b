"""`respc serve`: the OpenAI- and Anthropic-compatible app of `respc.serving.app`, driven by the replay
stand-in model, with the parser of a preset, a template or a model directory (as `respc parse`)."""

from __future__ import annotations

import argparse
from typing import Any

from respc.cli.compile import add_target
from respc.cli.parse import add_parser_source, load_parser

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `serve` to the `respc` subcommands."""
    command = commands.add_parser(
        "serve",
        help="serve /v1/chat/completions, /v1/responses and /v1/messages (a replayed model)",
        description="An OpenAI- and Anthropic-compatible HTTP server whose stand-in model replays stored "
        "generations; respc.serving.app puts a real engine behind the same app.",
    )
    add_parser_source(command)
    command.add_argument(
        "--replay", required=True, metavar="FILE", help='JSONL generations to replay ("response", "prompt")'
    )
    command.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    command.add_argument("--port", type=int, default=8000, help="0 picks a free port (default: 8000)")
    command.add_argument("--name", help="the model name reported when a request names none")
    add_target(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from respc.serving.app import ReplayModel, create_app, read_replay, serve

    module, name = load_parser(args)
    records = read_replay(args.replay)
    app = create_app(module, ReplayModel(records), name=args.name or name)
    serve(app, args.host, args.port, lambda url: print(f"serving {name} on {url}", flush=True))
    return 0
