"""examples/server.py (`respc serve`) end to end: started on 127.0.0.1 (a free port) in a process of its own, talked to
by the real `openai` and `anthropic` clients (strict response validation, no mocks), stopped after."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from support.http_server import running

ROOT = Path(__file__).parents[2]
SERVER = ROOT / "examples" / "server.py"
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS, "strict": False}]
MESSAGES_TOOLS = [{"name": "get_weather", "input_schema": PARAMETERS}]
MESSAGES = [{"role": "user", "content": "Weather in Paris for three days?"}]
REASONING = "The user wants the weather, so I call the tool."
ARGUMENTS = {"city": "Paris, France", "days": 3}  # days typed by the request's tools


@contextlib.contextmanager
def serving(directory: Path, preset: str, records: list[dict]) -> Iterator[str]:
    """Run examples/server.py on a free loopback port until the block ends; its base URL."""
    replay = directory / "replay.jsonl"
    replay.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    command = [sys.executable, str(SERVER), "--preset", preset, "--replay", str(replay), "--port", "0"]
    with running([*command, "--host", "127.0.0.1"], directory / "server.log") as url:
        yield url


def _clients(url: str) -> tuple[openai.OpenAI, anthropic.Anthropic]:
    options = {"api_key": "sk-test", "max_retries": 0, "timeout": 30, "_strict_response_validation": True}
    return openai.OpenAI(base_url=url + "/v1", **options), anthropic.Anthropic(base_url=url, **options)


@pytest.fixture(scope="module")
def weather(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server replaying one generation for every request: reasoning, a preamble, one tool call."""
    records = [
        json.loads(line) for line in (ROOT / "examples" / "server_replay.jsonl").read_text().splitlines()
    ]
    with serving(tmp_path_factory.mktemp("weather"), "qwen3_5", records[:1]) as url:
        yield url


def test_chat_completions_streamed_and_not(weather: str) -> None:
    client, _ = _clients(weather)
    with client.chat.completions.stream(model="qwen", messages=MESSAGES, tools=CHAT_TOOLS) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert (message.reasoning_content, message.content) == (REASONING, "Let me check.")
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == [
        ("get_weather", ARGUMENTS)
    ]
    assert final.choices[0].finish_reason == "tool_calls" and final.model == "qwen"

    chunks = list(
        client.chat.completions.create(model="qwen", messages=MESSAGES, tools=CHAT_TOOLS, stream=True)
    )
    assert all(chunk.choices for chunk in chunks)  # no usage chunk unless asked
    options = {"include_usage": True}
    chunks = list(
        client.chat.completions.create(model="qwen", messages=MESSAGES, stream=True, stream_options=options)
    )
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0

    completion = client.chat.completions.create(model="qwen", messages=MESSAGES, tools=CHAT_TOOLS)
    message = completion.choices[0].message
    assert (message.reasoning_content, message.content) == (REASONING, "Let me check.")
    assert json.loads(message.tool_calls[0].function.arguments) == ARGUMENTS
    assert completion.usage.completion_tokens > 0


def test_responses_streamed_and_not(weather: str) -> None:
    client, _ = _clients(weather)
    with client.responses.stream(model="qwen", input="Weather?", tools=RESPONSES_TOOLS) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_response()
    assert events[:2] == ["response.created", "response.in_progress"] and events[-1] == "response.completed"
    for response in (final, client.responses.create(model="qwen", input="Weather?", tools=RESPONSES_TOOLS)):
        assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
        assert response.output[0].content[0].text == REASONING and response.output_text == "Let me check."
        call = response.output[2]
        assert (call.name, json.loads(call.arguments)) == ("get_weather", ARGUMENTS)
        assert response.status == "completed" and response.usage.output_tokens > 0


def test_messages_streamed_and_not(weather: str) -> None:
    _, client = _clients(weather)
    with client.messages.stream(
        model="qwen", max_tokens=512, messages=MESSAGES, tools=MESSAGES_TOOLS
    ) as stream:
        final = stream.get_final_message()
    created = client.messages.create(model="qwen", max_tokens=512, messages=MESSAGES, tools=MESSAGES_TOOLS)
    for message in (final, created):
        assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
        assert message.content[0].thinking == REASONING and message.content[1].text == "Let me check."
        assert (message.content[2].name, message.content[2].input) == ("get_weather", ARGUMENTS)
        assert message.stop_reason == "tool_use" and message.usage.output_tokens > 0


def test_replays_cycle_and_failures_reach_each_client(tmp_path: Path) -> None:
    """Records are served in turn: a plain answer, then a malformed call after some text."""
    records = [
        {"response": "Plain answer.<|im_end|>"},
        {
            "response": 'Let me look.<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call>'
        },
    ]
    with serving(tmp_path, "qwen3", records) as url:
        chat, claude = _clients(url)
        with chat.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            assert stream.get_final_completion().choices[0].message.content == "Plain answer."
        received = []
        with pytest.raises(openai.APIError, match="malformed"):
            for chunk in chat.chat.completions.create(model="m", messages=MESSAGES, stream=True):
                received.append(chunk.choices[0].delta.content or "")
        assert "".join(received) == "Let me look."

        assert chat.responses.create(model="m", input="hi").output_text == "Plain answer."
        events = list(chat.responses.create(model="m", input="hi", stream=True))
        assert [event.type for event in events[-2:]] == ["error", "response.failed"]
        assert events[-1].response.output[0].content[0].text == "Let me look."

        assert (
            claude.messages.create(model="m", max_tokens=9, messages=MESSAGES).content[0].text
            == "Plain answer."
        )
        with pytest.raises(anthropic.APIStatusError) as caught:
            with claude.messages.stream(model="m", max_tokens=9, messages=MESSAGES) as stream:
                for _ in stream:
                    pass
        assert caught.value.body["error"]["type"] == "api_error"

        chat.chat.completions.create(model="m", messages=MESSAGES)  # the plain answer again
        with pytest.raises(openai.InternalServerError, match="does not parse"):
            chat.chat.completions.create(model="m", messages=MESSAGES)


def test_a_bad_replay_file_is_a_usage_error(tmp_path: Path) -> None:
    replay = tmp_path / "replay.jsonl"
    replay.write_text('{"prompt": "no response"}\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SERVER), "--preset", "qwen3", "--replay", str(replay), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and 'needs a "response" string' in done.stderr
