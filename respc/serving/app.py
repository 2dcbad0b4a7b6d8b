"""An OpenAI- and Anthropic-compatible HTTP app on respc's wire formats (needs the `serve` extra).

`create_app(parser, model)` is a Starlette app: `POST /v1/chat/completions`, `/v1/responses` and
`/v1/messages`, streamed (`"stream": true`, server-sent events) or not, and `GET /v1/models`. `parser`
is a compiled parser module (a preset's, `respc.compile_template`'s, a model's); `model` is any object
whose `generate(request)` returns a `Generation`: the prompt the engine continued, an async iterator of
the text it produces, and its token counts. `ReplayModel` is a stand-in that replays stored generations;
`respc serve` (and `examples/server.py`) run the app with it.

A request the app cannot serve is answered with the error body of its API (OpenAI's, or Anthropic's on
`/v1/messages`): 400 for a body that is not a JSON object, a missing `messages` (`input` on
`/v1/responses`) or a known field of the wrong type, 413 for a body over `max_body` bytes (1 MiB by
default). A stream whose client goes away is stopped where it is: its parser and the model's iterator
are released (the iterator is closed, so an engine can stop generating).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import socket
import types
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from respc._io import InputError, read_text
from respc.serving.chat import ChatCompletionsWire
from respc.serving.deltas import DeltaStream
from respc.serving.messages import MessagesWire
from respc.serving.responses import ResponsesWire
from respc.serving.wire import Usage

__all__ = ["MAX_BODY", "TOKEN", "Generation", "Model", "ReplayModel", "create_app", "read_replay", "serve"]

MAX_BODY = 1 << 20  # bytes of a request body: a long conversation with tools fits many times over

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


def read_replay(path: str | Path) -> list[dict]:
    """The records of a JSONL replay file: a "response" (and optional "prompt") string per line;
    `InputError` naming the line otherwise."""
    records = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise InputError(f"{path}: line {number}: invalid JSON: {error}") from None
        if not isinstance(record, dict) or not isinstance(record.get("response"), str):
            raise InputError(f'{path}: line {number}: each line needs a "response" string')
        if not isinstance(record.get("prompt", ""), str):
            raise InputError(f'{path}: line {number}: "prompt" must be a string')
        records.append(record)
    if not records:
        raise InputError(f"{path}: no records")
    return records


# --- the APIs: their tools, required fields and error bodies -----------------------------------------


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


def _openai_error(message: str, kind: str = "server_error", param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _anthropic_error(message: str, kind: str = "api_error", param: str | None = None) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


@dataclass(frozen=True)
class Api:
    wire: type
    tools: Callable[[list[dict]], list[dict]]
    error: Callable[..., dict]
    required: str  # the field a request cannot do without
    too_large: str  # the error type of a body over the limit


ENDPOINTS = {
    "/v1/chat/completions": Api(
        ChatCompletionsWire, _chat_tools, _openai_error, "messages", "invalid_request_error"
    ),
    "/v1/responses": Api(ResponsesWire, _responses_tools, _openai_error, "input", "invalid_request_error"),
    "/v1/messages": Api(MessagesWire, _messages_tools, _anthropic_error, "messages", "request_too_large"),
}

# The fields the app reads, and the JSON types each may have (None is accepted where the API allows null).
FIELDS: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "stream": (bool,),
    "tools": (list,),
    "stream_options": (dict, type(None)),
    "messages": (list,),
    "input": (str, list),
    "max_tokens": (int, type(None)),
}
_JSON_NAMES = {str: "a string", bool: "a boolean", list: "an array", dict: "an object", int: "an integer"}


class BadRequest(Exception):
    """A request the app cannot serve: its status and the field at fault."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.param = status, param


async def _body(request: Request, limit: int) -> dict:
    """The request's JSON object, read up to `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(f"the request body is over {limit} bytes", 413)
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise BadRequest(f"the request body is over {limit} bytes", 413)
        parts.append(part)
    try:
        body = json.loads(b"".join(parts))
    except (ValueError, RecursionError) as error:  # (UnicodeDecodeError is a ValueError)
        raise BadRequest(f"the request body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def _check(body: dict, api: Api) -> None:
    if api.required not in body:
        raise BadRequest(f"{api.required!r} is required", param=api.required)
    for name, kinds in FIELDS.items():
        if name in body and not (isinstance(body[name], kinds) and not _is_bool_as_int(body[name], kinds)):
            expected = " or ".join(_JSON_NAMES.get(kind, "null") for kind in kinds)
            raise BadRequest(f"{name!r} must be {expected}", param=name)
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            raise BadRequest("'tools' must be an array of objects", param="tools")


def _is_bool_as_int(value: Any, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, bool) and bool not in kinds


async def _released(events: AsyncIterator[str], generation: Generation) -> AsyncIterator[str]:
    """`events`, and on the way out (the end, an error, the client gone) the model's iterator closed."""
    try:
        async for text in events:
            yield text
    finally:
        await events.aclose()  # type: ignore[attr-defined]
        close = getattr(generation.pieces, "aclose", None)
        if close is not None:
            await close()


def create_app(
    parser: types.ModuleType, model: Model, *, name: str = "respc", max_body: int = MAX_BODY
) -> Starlette:
    """The ASGI app: each endpoint parses `model`'s generations with the compiled `parser` module and
    answers in its API's format; `name` is the model name reported when a request names none (and the
    one model `GET /v1/models` lists)."""

    def endpoint(api: Api) -> Callable[[Request], Any]:
        async def handle(request: Request) -> Response:
            try:
                body = await _body(request, max_body)
                _check(body, api)
            except BadRequest as problem:
                kind = api.too_large if problem.status == 413 else "invalid_request_error"
                return JSONResponse(api.error(str(problem), kind, problem.param), status_code=problem.status)
            generation = model.generate(body)
            tools = api.tools(body.get("tools") or []) or None
            stream = bool(body.get("stream"))
            # A chat stream reports usage only when asked, as OpenAI does: clients read choices[0].
            asked = (
                api.wire is not ChatCompletionsWire
                or not stream
                or (body.get("stream_options") or {}).get("include_usage")
            )
            wire = api.wire(model=body.get("model") or name, usage=generation.usage if asked else None)
            if stream:
                deltas = DeltaStream(parser.ResponseParser(generation.prompt, tools=tools))
                events = _released(wire.asse(deltas, generation.pieces), generation)
                return StreamingResponse(
                    events, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
                )
            text = "".join([piece async for piece in generation.pieces])
            try:
                message = parser.parse_response(text, prefix=generation.prompt, tools=tools)
            except Exception as error:  # the model's output does not parse: this request failed
                first_line = (str(error) or type(error).__name__).splitlines()[0]
                return JSONResponse(
                    api.error(f"the model's output does not parse: {first_line}"), status_code=500
                )
            return JSONResponse(wire.body(message))

        return handle

    async def models(request: Request) -> Response:
        if "anthropic-version" in request.headers:  # the Anthropic client's list of models
            entry = {
                "type": "model",
                "id": name,
                "display_name": name,
                "created_at": "1970-01-01T00:00:00Z",
                "lifecycle": "active",
            }
            return JSONResponse({"data": [entry], "has_more": False, "first_id": name, "last_id": name})
        entry = {"id": name, "object": "model", "created": 0, "owned_by": "respc"}
        return JSONResponse({"object": "list", "data": [entry]})

    routes = [Route(path, endpoint(api), methods=["POST"]) for path, api in ENDPOINTS.items()]
    return Starlette(routes=[*routes, Route("/v1/models", models, methods=["GET"])])


def serve(app: Starlette, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Run `app` on `host:port` (0: a free port) until interrupted; `announce` gets the base URL once
    the socket listens, before the first request can come."""
    import uvicorn

    listener = socket.create_server((host, port))
    bound_host, bound_port = listener.getsockname()[:2]
    announce(f"http://{bound_host}:{bound_port}")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
