"""An OpenAI- and Anthropic-compatible HTTP server on respc's wire formats, driven by a stand-in model.

    pip install '.[serve]'     # in respc's checkout, or pip install starlette uvicorn
    python examples/server.py --preset qwen3_5 --replay examples/server_replay.jsonl [--host 127.0.0.1] [--port 8000]

`POST /v1/chat/completions`, `/v1/responses` and `/v1/messages`, with `"stream": true` (server-sent
events) or false (one JSON body), for the official `openai` and `anthropic` clients. The stand-in model
ignores the conversation: it replays the generations stored in the JSONL file (a "response" and an
optional "prompt", the text the model continued, per line) in turn, cycling, in token-sized pieces. The
request's tools type the tool-call arguments, as they would for a real model. `--port 0` picks a free
port; the first line printed is the address served.

To serve a real engine, give `create_app` any object whose `generate(request)` returns a `Generation`:
the prompt the engine continued and an async iterator of the text pieces it produces (see docs/serving.md).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import respc
from respc.serving import ChatCompletionsWire, DeltaStream, MessagesWire, ResponsesWire, Usage

# About one BPE token: a word piece of up to four characters with its leading space, punctuation, or a
# run of whitespace. Every character matches one of them, so the pieces join back to the text.
TOKEN = re.compile(r" ?\w{1,4}| ?[^\w\s]{1,2}|\s+")


@dataclass
class Generation:
    """One response being generated: the prompt the model continued, its text pieces, its token counts."""

    prompt: str
    pieces: AsyncIterator[str]
    usage: Callable[[], Usage]


class Model(Protocol):
    def generate(self, request: dict) -> Generation: ...


class ReplayModel:
    """The stand-in: each request gets the next stored generation, cycling, in token-sized pieces."""

    def __init__(self, records: list[dict]) -> None:
        self._records = itertools.cycle(records)

    def generate(self, request: dict) -> Generation:
        record = next(self._records)
        prompt, pieces = record.get("prompt", ""), TOKEN.findall(record["response"])
        sent = 0

        async def replay() -> AsyncIterator[str]:
            nonlocal sent
            for piece in pieces:
                await asyncio.sleep(0)  # as an engine's stream would, let other requests run
                sent += 1
                yield piece

        prompt_tokens = len(TOKEN.findall(prompt))
        return Generation(prompt, replay(), lambda: Usage(prompt_tokens, sent))


# Each API's tool definitions, as the JSON-schema tool dicts respc's parsers take.
def _chat_tools(tools: list[dict]) -> list[dict]:
    return [tool for tool in tools if tool.get("type") == "function"]


def _responses_tools(tools: list[dict]) -> list[dict]:
    return [
        {
            "type": "function",
            "function": {key: tool[key] for key in ("name", "description", "parameters") if key in tool},
        }
        for tool in tools
        if tool.get("type") == "function"
    ]


def _messages_tools(tools: list[dict]) -> list[dict]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema", {}),
            },
        }
        for tool in tools
        if "name" in tool
    ]


def _openai_error(message: str) -> dict:
    return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


def _anthropic_error(message: str) -> dict:
    return {"type": "error", "error": {"type": "api_error", "message": message}}


ENDPOINTS = {  # path -> (wire format, the request's tools for the parser, the error body of a failed request)
    "/v1/chat/completions": (ChatCompletionsWire, _chat_tools, _openai_error),
    "/v1/responses": (ResponsesWire, _responses_tools, _openai_error),
    "/v1/messages": (MessagesWire, _messages_tools, _anthropic_error),
}


def create_app(preset: str, model: Model, *, name: str | None = None) -> Starlette:
    """The ASGI app: each endpoint parses `model`'s generations with `preset` and answers in its format."""
    module = respc.load_preset(preset)

    def endpoint(path: str) -> Callable[[Request], Any]:
        wire_format, tools_of, error_body = ENDPOINTS[path]

        async def handle(request: Request) -> Response:
            body = await request.json()
            generation = model.generate(body)
            tools = tools_of(body.get("tools") or []) or None
            stream = bool(body.get("stream"))
            # A chat stream reports usage only when asked, as OpenAI does: clients read choices[0].
            asked = (
                path != "/v1/chat/completions"
                or not stream
                or (body.get("stream_options") or {}).get("include_usage")
            )
            wire = wire_format(
                model=body.get("model") or name or preset, usage=generation.usage if asked else None
            )
            if stream:
                deltas = DeltaStream(module.ResponseParser(generation.prompt, tools=tools))
                events = wire.asse(deltas, generation.pieces)
                return StreamingResponse(
                    events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
                )
            text = "".join([piece async for piece in generation.pieces])
            try:
                message = module.parse_response(text, prefix=generation.prompt, tools=tools)
            except Exception as error:  # the model's output does not parse: this request failed
                first_line = (str(error) or type(error).__name__).splitlines()[0]
                return JSONResponse(
                    error_body(f"the model's output does not parse: {first_line}"), status_code=500
                )
            return JSONResponse(wire.body(message))

        return handle

    return Starlette(routes=[Route(path, endpoint(path), methods=["POST"]) for path in ENDPOINTS])


def read_replay(path: Path) -> list[dict]:
    """The records of a JSONL replay file: a "response" (and optional "prompt") string per line."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record, dict) or not isinstance(record.get("response"), str):
            raise ValueError(f'{path}:{number}: each line needs a "response" string')
        if not isinstance(record.get("prompt", ""), str):
            raise ValueError(f'{path}:{number}: "prompt" must be a string')
        records.append(record)
    if not records:
        raise ValueError(f"{path}: no records")
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--preset", required=True, choices=respc.presets(), metavar="NAME", help="the response parser"
    )
    parser.add_argument(
        "--replay", required=True, type=Path, metavar="FILE", help="JSONL generations to replay"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (default: 8000)")
    parser.add_argument("--model", help="the model name responses report when a request names none")
    args = parser.parse_args(argv)
    try:
        records = read_replay(args.replay)
    except (OSError, ValueError) as error:
        parser.exit(2, f"server.py: {error}\n")
    app = create_app(args.preset, ReplayModel(records), name=args.model)
    listener = socket.create_server((args.host, args.port))  # bound and listening before the line below
    host, port = listener.getsockname()[:2]
    print(f"serving {args.preset} on http://{host}:{port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


if __name__ == "__main__":
    main()
