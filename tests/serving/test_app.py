"""respc.serving.app, the server shipped in the package: requests it cannot serve get their API's error
body, `GET /v1/models`, the parser of a preset, a template or a model directory (`respc serve`), a real
engine behind it without examples/, and 64 concurrent official clients, some leaving mid-stream."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import http.client
import json
import shutil
import sys
import time
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import openai
import pytest
from support.compare import TEMPLATES
from support.http_server import ThreadServer, running

import respc
from respc.runtime.parser import CompiledParser
from respc.serving import DeltaStream, Usage
from respc.serving.app import Generation, ReplayModel, create_app

ROOT = Path(__file__).parents[2]
RECORD = json.loads((ROOT / "examples" / "server_replay.jsonl").read_text(encoding="utf-8").splitlines()[0])
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]
MESSAGES = [{"role": "user", "content": "Weather in Paris for three days?"}]
REASONING = "The user wants the weather, so I call the tool."
ARGUMENTS = {"city": "Paris, France", "days": 3}
LIMIT = 64 * 1024
OPTIONS = {"api_key": "sk-test", "max_retries": 0, "timeout": 60, "_strict_response_validation": True}


def _post(url: str, path: str, body: bytes | Iterable[bytes]) -> tuple[int, dict]:
    """POST `body` (an iterable: sent chunked, with no length) and read the JSON answer."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    try:
        headers = {"content-type": "application/json"}
        chunked = not isinstance(body, bytes)
        connection.request("POST", path, body=body, headers=headers, encode_chunked=chunked)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadServer]:
    app = create_app(respc.load_preset("qwen3_5"), ReplayModel([RECORD]), name="qwen-test", max_body=LIMIT)
    with ThreadServer(app) as running_server:
        yield running_server


# --- requests the app cannot serve ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/v1/chat/completions", b"{not json", 400, "not valid JSON"),
        ("/v1/chat/completions", b"\xff\xfe", 400, "not valid JSON"),
        ("/v1/chat/completions", b"[1, 2]", 400, "must be a JSON object"),
        ("/v1/chat/completions", b'{"model": "m"}', 400, "'messages' is required"),
        ("/v1/responses", b'{"model": "m"}', 400, "'input' is required"),
        ("/v1/chat/completions", b'{"messages": [], "stream": "yes"}', 400, "'stream' must be a boolean"),
        ("/v1/chat/completions", b'{"messages": [], "tools": {}}', 400, "'tools' must be an array"),
        ("/v1/chat/completions", b'{"messages": [], "tools": [1]}', 400, "array of objects"),
        ("/v1/responses", b'{"input": 5}', 400, "'input' must be a string or an array"),
        (
            "/v1/chat/completions",
            b'{"messages": [], "pad": "' + b"x" * LIMIT + b'"}',
            413,
            "over 65536 bytes",
        ),
    ],
)
def test_openai_endpoints_answer_400_in_openai_shape(
    server: ThreadServer, path: str, body: bytes, status: int, message: str
) -> None:
    code, answer = _post(server.url, path, body)
    assert code == status
    error = answer["error"]
    assert set(error) == {"message", "type", "param", "code"} and message in error["message"]
    assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "status", "kind", "message"),
    [
        (b"{not json", 400, "invalid_request_error", "not valid JSON"),
        (b'{"model": "m", "max_tokens": 9}', 400, "invalid_request_error", "'messages' is required"),
        (
            b'{"messages": [], "max_tokens": "9"}',
            400,
            "invalid_request_error",
            "'max_tokens' must be an integer",
        ),
        (b'{"messages": [], "pad": "' + b"x" * LIMIT + b'"}', 413, "request_too_large", "over 65536 bytes"),
    ],
)
def test_messages_answers_in_anthropic_shape(
    server: ThreadServer, body: bytes, status: int, kind: str, message: str
) -> None:
    code, answer = _post(server.url, "/v1/messages", body)
    assert code == status and answer["type"] == "error"
    assert answer["error"]["type"] == kind and message in answer["error"]["message"]


def test_an_oversized_body_without_a_length_is_refused_as_it_arrives(server: ThreadServer) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"messages": [], "pad": "'
        for _ in range(LIMIT // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    code, answer = _post(server.url, "/v1/chat/completions", chunks())
    assert code == 413 and "over" in answer["error"]["message"]


def test_the_official_clients_read_the_errors(server: ThreadServer) -> None:
    chat = openai.OpenAI(base_url=server.url + "/v1", **OPTIONS)
    with pytest.raises(openai.BadRequestError, match="'stream_options' must be an object") as caught:
        chat.chat.completions.create(model="m", messages=MESSAGES, extra_body={"stream_options": 5})
    assert caught.value.status_code == 400
    claude = anthropic.Anthropic(base_url=server.url, **OPTIONS)
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="m", max_tokens=9, messages=MESSAGES, extra_body={"stream": "yes"})
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    # and the server goes on serving
    assert (
        chat.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.reasoning_content
        == REASONING
    )


def test_models_are_listed_for_both_clients(server: ThreadServer) -> None:
    listed = openai.OpenAI(base_url=server.url + "/v1", **OPTIONS).models.list()
    assert [model.id for model in listed] == ["qwen-test"]
    claude = anthropic.Anthropic(base_url=server.url, **OPTIONS).models.list()
    assert [model.id for model in claude] == ["qwen-test"]


# --- where the parser comes from; the app without examples/ --------------------------------------------


def _replay(directory: Path, records: list[dict]) -> Path:
    path = directory / "replay.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_serve_takes_a_template_or_a_model_dir(tmp_path: Path) -> None:
    template = tmp_path / "smollm.json"
    template.write_text(json.dumps(TEMPLATES["smollm"]), encoding="utf-8")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3"}), encoding="utf-8")
    replay = _replay(tmp_path, [{"response": "<think>hm</think>Hello!<|im_end|>"}])
    expected = {"--template": ("hm", "Hello!"), "--model": ("hm", "Hello!")}
    for option, source in (("--template", template), ("--model", model)):
        command = [sys.executable, "-m", "respc", "serve", option, str(source), "--replay", str(replay)]
        with running([*command, "--port", "0"], tmp_path / "log.txt", cwd=ROOT) as url:
            client = openai.OpenAI(base_url=url + "/v1", **OPTIONS)
            message = client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message
            thinking = getattr(message, "thinking", None) or message.reasoning_content
            assert (thinking, message.content) == expected[option]


def test_the_example_runs_alone_over_the_installed_package(tmp_path: Path) -> None:
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    shutil.copy(ROOT / "examples" / "server.py", alone / "server.py")
    replay = _replay(tmp_path, [RECORD])
    command = [sys.executable, "server.py", "--preset", "qwen3_5", "--replay", str(replay), "--port", "0"]
    with running(command, tmp_path / "log.txt", cwd=alone) as url:
        listed = openai.OpenAI(base_url=url + "/v1", **OPTIONS).models.list()
        assert [model.id for model in listed] == ["qwen3_5"]


def test_a_real_engine_behind_the_shipped_app() -> None:
    """The docs' sketch: any object whose generate(request) returns a Generation."""

    class Engine:
        def generate(self, request: dict) -> Generation:
            async def pieces() -> Iterator[str]:
                for piece in ("<think>", "n", "o</think>", request["messages"][-1]["content"], "<|im_end|>"):
                    await asyncio.sleep(0)
                    yield piece

            return Generation("", pieces(), lambda: Usage(1, 5))

    with ThreadServer(create_app(respc.load_preset("qwen3"), Engine())) as engine:
        client = openai.OpenAI(base_url=engine.url + "/v1", **OPTIONS)
        with client.chat.completions.stream(
            model="m", messages=[{"role": "user", "content": "Echo"}]
        ) as stream:
            message = stream.get_final_completion().choices[0].message
        assert (message.reasoning_content, message.content) == ("no", "Echo")


# --- under load ----------------------------------------------------------------------------------------


def _live(kind: type) -> int:
    gc.collect()
    return sum(isinstance(obj, kind) for obj in gc.get_objects())


def _holders(kind: type) -> str:
    """What holds the live instances of `kind`, two referrers deep (for a failure's message: this test
    has failed rarely under CI load with one stream left alive, and the holder says where from)."""

    def name(obj: object) -> str:
        if isinstance(obj, types.FrameType):
            return f"frame {obj.f_code.co_name} ({obj.f_code.co_filename}:{obj.f_lineno})"
        return type(obj).__qualname__ + (f" {obj.__qualname__}" if hasattr(obj, "__qualname__") else "")

    lines, found = [], [obj for obj in gc.get_objects() if isinstance(obj, kind)]
    for obj in found:
        for holder in gc.get_referrers(obj):
            if holder is found:
                continue
            lines.append(
                f"  {name(holder)}, held by: "
                + "; ".join(
                    name(outer)
                    for outer in gc.get_referrers(holder)
                    if outer is not found and outer is not lines
                )[:600]
            )
    return "\n".join(lines)


async def _chat(url: str, leave: bool) -> tuple | None:
    async with openai.AsyncOpenAI(base_url=url + "/v1", **OPTIONS) as client:
        stream = await client.chat.completions.create(
            model="m", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
        )
        reasoning, content, arguments = [], [], []
        async for chunk in stream:
            delta = chunk.choices[0].delta
            reasoning.append(getattr(delta, "reasoning_content", None) or "")
            content.append(delta.content or "")
            arguments += [call.function.arguments or "" for call in delta.tool_calls or []]
            if leave and len(reasoning) == 3:
                await stream.close()  # the client goes away mid-stream
                return None
        return "".join(reasoning), "".join(content), json.loads("".join(arguments))


async def _messages(url: str, leave: bool) -> tuple | None:
    async with anthropic.AsyncAnthropic(base_url=url, **OPTIONS) as client:
        async with client.messages.stream(
            model="m", max_tokens=512, messages=MESSAGES, tools=MESSAGES_TOOLS
        ) as stream:
            seen = 0
            async for _ in stream:
                seen += 1
                if leave and seen == 3:
                    return None  # leaving the block closes the response
            final = await stream.get_final_message()
        thinking, text, call = final.content
        return thinking.thinking, text.text, call.input


async def _round(url: str, clients: int) -> list:
    calls = [(_chat if i % 2 else _messages)(url, leave=i % 4 == 3) for i in range(clients)]
    return await asyncio.wait_for(asyncio.gather(*calls), timeout=120)


def test_64_concurrent_streams_some_leaving_mid_stream_leave_nothing_behind(server: ThreadServer) -> None:
    baseline_tasks = server.tasks()
    live_after = []
    for _ in range(3):
        results = asyncio.run(_round(server.url, 64))
        done = [result for result in results if result is not None]
        assert len(done) == 48  # every fourth client left
        assert all(result == (REASONING, "Let me check.", ARGUMENTS) for result in done)
        deadline = time.monotonic() + 30
        while True:
            left = (server.tasks(), _live(DeltaStream), _live(CompiledParser))
            if left[0] <= baseline_tasks and not left[1] and not left[2]:
                break
            assert (
                time.monotonic() < deadline
            ), f"{left} left behind; the server's tasks:\n{server.stacks()}\nholders:\n{_holders(DeltaStream)}"
            time.sleep(0.1)
        live_after.append(len(gc.get_objects()))
    assert live_after[2] - live_after[1] < 5_000, live_after  # flat: nothing accumulates per round


def test_a_client_that_leaves_or_a_stream_that_fails_stops_the_generation() -> None:
    """The model's iterator is closed, not read to its end, so an engine can stop generating."""
    ends: list[tuple[str, int]] = []

    class SlowEngine:
        def __init__(self) -> None:
            self.calls = 0

        def generate(self, request: dict) -> Generation:
            self.calls += 1
            broken = self.calls % 2 == 0  # every other generation: a malformed call, then more text

            async def pieces() -> Iterator[str]:
                sent = 0
                try:
                    if broken:
                        yield '<tool_call>{"name": "f", "arguments": {"x": }}</tool_call>'
                    for _ in range(400):
                        await asyncio.sleep(0.005)
                        sent += 1
                        yield "word "
                    ends.append(("finished", sent))
                finally:
                    if len(ends) < self.calls and sent < 400:
                        ends.append(("closed", sent))

            return Generation("", pieces(), lambda: Usage(0, 0))

    async def leave(url: str) -> None:
        async with openai.AsyncOpenAI(base_url=url + "/v1", **OPTIONS) as client:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            count = 0
            with contextlib.suppress(openai.APIError):  # the broken ones fail
                async for _ in stream:
                    count += 1
                    if count == 3:
                        await stream.close()
                        return

    with ThreadServer(create_app(respc.load_preset("qwen3"), SlowEngine())) as engine:

        async def clients() -> None:
            await asyncio.wait_for(asyncio.gather(*(leave(engine.url) for _ in range(16))), 60)

        asyncio.run(clients())
        deadline = time.monotonic() + 10
        while len(ends) < 16:
            assert time.monotonic() < deadline, ends
            time.sleep(0.05)
    assert all(kind == "closed" and sent < 100 for kind, sent in ends), ends
