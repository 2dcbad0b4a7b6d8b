"""The wire formats, checked by the vendors' own code: every event validated (strictly, no unknown key)
with the `openai` and `anthropic` packages' types, whole streams fed to their accumulators, for every
preset's realistic outputs under random chunkings; the accumulated message equals respc's parsed one."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import typing
from typing import Any

import pydantic
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import LengthFinishReasonError, omit
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from support.serving import (
    PRESETS,
    cases_of,
    chunked,
    expected_text,
    flat_calls,
    random_tools,
    reference_events,
)

import respc
from respc.serving import (
    REASONING_FIELDS,
    ChatCompletionsWire,
    DeltaStream,
    MessagesWire,
    ResponsesWire,
    Usage,
)
from respc.serving.tool_args import call_parts, same_value

EXAMPLES = max(1, int(os.environ.get("RESPC_HYPOTHESIS_EXAMPLES", "60")) // 6)  # x 3 formats x 28 presets
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)
FORMATS = (ChatCompletionsWire, ResponsesWire, MessagesWire)


def _by_type(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    """The event classes of an SDK union by their `type` literal (pydantic reports one precise error)."""
    members = typing.get_args(typing.get_args(union)[0])
    return {typing.get_args(cls.model_fields["type"].annotation)[0]: cls for cls in members}


RESPONSE_EVENTS = _by_type(ResponseStreamEvent)
MESSAGE_EVENTS = _by_type(RawMessageStreamEvent)


def _strict(cls: type[pydantic.BaseModel], data: dict, allowed: frozenset = frozenset()) -> Any:
    """`data` validated as `cls` in pydantic's strict mode, with no key the type does not declare
    (the SDK models keep unknown keys, which would hide a misspelt field) but those `allowed`."""
    model = cls.model_validate(data, strict=True)

    def walk(value: Any) -> None:
        if isinstance(value, pydantic.BaseModel):
            extra = set(value.model_extra or {}) - allowed
            assert not extra, f"{type(value).__name__} has unknown keys {extra}: {data}"
            for name in type(value).model_fields:
                walk(getattr(value, name))
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(model)
    return model


def _wire(cls: type, **options: Any) -> Any:
    """A wire with deterministic ids and clock."""
    count = itertools.count(1)
    return cls(
        model="respc-test",
        new_id=lambda prefix: f"{prefix}{next(count)}",
        clock=lambda: 1_700_000_000,
        **options,
    )


def _stream(module: Any, prefix: str = "", tools: list | None = None) -> DeltaStream:
    """A DeltaStream whose call ids are deterministic, so that the formats can be compared."""
    count = itertools.count(1)
    return DeltaStream(module.ResponseParser(prefix, tools=tools), new_id=lambda: f"call_{next(count)}")


# -- what each SDK makes of a stream ----------------------------------------------------------------


def _chat(events: list[dict]) -> dict:
    """Validate the chunks, accumulate them with the SDK's stream state; the final message's parts."""
    assert events[0]["choices"][0]["delta"] == {"role": "assistant"}
    # The accumulator concatenates a string sent again ("assistantassistant"): the role comes once.
    assert not any("role" in event["choices"][0]["delta"] for event in events[1:] if event["choices"])
    state = ChatCompletionStreamState()
    for event in events:
        state.handle_chunk(_strict(ChatCompletionChunk, event, frozenset({"reasoning_content"})))
    final = state.get_final_completion()
    body = final.model_dump(exclude={"choices": {0: {"message": {"parsed"}}}})
    for call in body["choices"][0]["message"]["tool_calls"] or []:
        del call["function"]["parsed_arguments"], call["index"]  # the SDK's own additions
    _strict(ChatCompletion, body, frozenset({"reasoning_content"}))
    message = final.choices[0].message
    return {
        "reasoning": message.model_extra.get("reasoning_content"),
        "content": message.content,
        "calls": [
            (call.id, call.function.name, json.loads(call.function.arguments))
            for call in message.tool_calls or []
        ],
        "finish_reason": final.choices[0].finish_reason,
    }


def _responses(events: list[dict]) -> dict:
    """Validate the events, run them through the SDK's Responses stream state; the completed response's
    parts, after checking the SDK's own accumulation of text and arguments agrees with it."""
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    accumulated: dict[int, str] = {}  # output_index -> the SDK's snapshot of its text or arguments
    reasoning: dict[int, str] = {}  # the SDK does not accumulate reasoning text: concatenated here
    final = None
    for event in events:
        for out in state.handle_event(_strict(RESPONSE_EVENTS[event["type"]], event)):
            if out.type in ("response.output_text.delta", "response.function_call_arguments.delta"):
                accumulated[out.output_index] = out.snapshot
            elif out.type == "response.reasoning_text.delta":
                reasoning[out.output_index] = reasoning.get(out.output_index, "") + out.delta
            elif out.type == "response.completed":
                final = out.response
    assert final is not None and final.status == "completed" and events[-1]["type"] == "response.completed"
    _strict(Response, events[-1]["response"])
    texts = {}
    for index, item in enumerate(final.output):
        if item.type == "function_call":
            texts[index] = item.arguments
        else:
            texts[index] = "".join(part.text for part in item.content)
    assert {i: t for i, t in texts.items() if i in accumulated} == accumulated
    assert {i: t for i, t in texts.items() if i in reasoning} == reasoning
    return {
        "reasoning": "".join(texts[i] for i, item in enumerate(final.output) if item.type == "reasoning")
        or None,
        "content": final.output_text or None,
        "calls": [
            (item.call_id, item.name, json.loads(item.arguments))
            for item in final.output
            if item.type == "function_call"
        ],
    }


def _messages(events: list[dict]) -> dict:
    """Validate the events, accumulate them with the SDK's `accumulate_event`; the message's parts."""
    snapshot, buffers = None, {}
    started = []
    for event in events:
        model = _strict(MESSAGE_EVENTS[event["type"]], event)
        if event["type"] == "content_block_start":
            assert event["index"] == len(started) and (not started or started[-1] is None)
            started.append(event["index"])
        elif event["type"] == "content_block_stop":
            assert started and started[-1] == event["index"]
            started[-1] = None  # one block at a time: stopped before the next starts
        elif event["type"] == "content_block_delta":
            assert started[-1] == event["index"]
        snapshot = accumulate_event(event=model, current_snapshot=snapshot, json_bufs=buffers)
    assert events[-1]["type"] == "message_stop"
    message = _strict(Message, snapshot.to_dict())
    return {
        "reasoning": "".join(b.thinking for b in message.content if b.type == "thinking") or None,
        "content": "".join(b.text for b in message.content if b.type == "text") or None,
        "calls": [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"],
        "stop_reason": message.stop_reason,
    }


READ = {ChatCompletionsWire: _chat, ResponsesWire: _responses, MessagesWire: _messages}


def _expected(module: Any, case: dict, chunks: list[str], tools: list | None) -> dict:
    """respc's parsed message: reasoning, content, and every call as (name, arguments). A field the
    message keeps only the last segment of (quirk Q1) is expected as the stream sends it, every segment."""
    events, message, raised = reference_events(
        lambda: module.ResponseParser(case["prefix"], tools=tools), chunks
    )
    assert not raised
    assert same_value(message, module.parse_response(case["text"], prefix=case["prefix"], tools=tools))
    reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None)
    expected = {"reasoning": reasoning or None, "content": message.get("content") or None}
    for key, items in expected_text(module.TEMPLATE, events).items():
        if any(len(values) > 1 for _, values, _ in items):
            expected["reasoning" if key == "reasoning_content" else "content"] = (
                "".join(t for t, _, _ in items) or None
            )
    finals = [
        c
        for e in events
        if e["type"] == "region_close" and e["field"] == "tool_calls"
        for c in flat_calls(e["value"])
    ]
    expected["calls"] = [call_parts(call)[1:] for call in finals]
    return expected


def _same_parts(got: dict, expected: dict) -> None:
    assert (got["reasoning"], got["content"]) == (expected["reasoning"], expected["content"]), (got, expected)
    names = [name for _, name, _ in got["calls"]]
    assert names == [name for name, _ in expected["calls"]], (got, expected)
    for (_, _, arguments), (_, final) in zip(got["calls"], expected["calls"]):
        assert same_value(arguments, final), (arguments, final)


def _as_input(arguments: Any) -> Any:
    """Anthropic's `input` is an object: arguments that are a string holding one are sent as that object."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def check_formats(module: Any, case: dict, chunks: list[str], tools: list | None = None) -> None:
    """Stream `chunks` through every wire format: each SDK's accumulated message equals respc's parse,
    with the call ids DeltaStream gave and the finish reason it said."""
    expected = _expected(module, case, chunks, tools)
    for cls in FORMATS:
        stream = _stream(module, case["prefix"], tools)
        got = READ[cls](list(_wire(cls, usage=lambda: Usage(3, 5)).events(stream, chunks)))
        if cls is MessagesWire:
            calls = [(name, _as_input(arguments)) for name, arguments in expected["calls"]]
            _same_parts(got, {**expected, "calls": calls})
        else:
            _same_parts(got, expected)
        assert [call_id for call_id, _, _ in got["calls"]] == [call["id"] for call in stream.calls]
        if cls is ChatCompletionsWire:
            assert got["finish_reason"] == ("tool_calls" if got["calls"] else "stop")
        elif cls is MessagesWire:
            assert got["stop_reason"] == ("tool_use" if got["calls"] else "end_turn")


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_under_any_chunking_reads_back_through_each_sdk(name: str) -> None:
    module = respc.load_preset(name)
    cases = [case for case in cases_of(f"preset:{name}") if "expected_error" not in case]  # parsed ones

    @SETTINGS
    @given(st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(st.sampled_from(cases))
        chunks = data.draw(chunked(case["text"]))
        tools = None
        if data.draw(st.booleans()):
            tools = random_tools(data.draw, module.parse_response(case["text"], prefix=case["prefix"]))
        check_formats(module, case, chunks, tools)

    run()
    for case in cases:  # and the two extreme chunkings of every case
        for chunks in ([case["text"]], list(case["text"])):
            check_formats(module, case, chunks)


@pytest.mark.parametrize("name", PRESETS)
def test_bodies_of_parsed_messages_validate_and_match(name: str) -> None:
    """The non-streamed bodies: the same parts as the streamed ones, valid as each SDK's response type."""
    module = respc.load_preset(name)
    for case in cases_of(f"preset:{name}"):
        if "expected_error" in case:  # a malformed output has no message to send
            continue
        message = module.parse_response(case["text"], prefix=case["prefix"])
        reasoning = next((message[key] for key in REASONING_FIELDS if key in message), None) or None
        content = message.get("content") or None
        calls = [call_parts(call)[1:] for call in flat_calls(message.get("tool_calls"))]

        body = _strict(
            ChatCompletion, _wire(ChatCompletionsWire).body(message), frozenset({"reasoning_content"})
        )
        reply = body.choices[0].message
        assert (reply.model_extra.get("reasoning_content"), reply.content) == (reasoning, content)
        assert [(c.function.name, json.loads(c.function.arguments)) for c in reply.tool_calls or []] == calls
        assert body.choices[0].finish_reason == ("tool_calls" if calls else "stop")

        response = _strict(Response, _wire(ResponsesWire).body(message))
        assert response.output_text == (content or "")
        got = [
            (item.name, json.loads(item.arguments))
            for item in response.output
            if item.type == "function_call"
        ]
        assert got == calls

        anthropic_message = _strict(Message, _wire(MessagesWire).body(message))
        kinds = [block.type for block in anthropic_message.content]
        assert kinds == ["thinking"] * bool(reasoning) + ["text"] * bool(content) + ["tool_use"] * len(calls)
        inputs = [(b.name, b.input) for b in anthropic_message.content if b.type == "tool_use"]
        assert inputs == [(name, _as_input(arguments)) for name, arguments in calls]
        assert anthropic_message.stop_reason == ("tool_use" if calls else "end_turn")


# -- failures ---------------------------------------------------------------------------------------

MALFORMED = ["Let me ", "look.<tool_call>", '{"name": "f", "arg', 'uments": {"a": }}</tool_call>']
CUT_OFF = ["Let me look.", '<tool_call>{"name": "f", "arguments": {"a": 1']


def _failing(cls: type, chunks: Any) -> list[dict]:
    return list(_wire(cls).events(_stream(respc.load_preset("qwen3")), chunks))


@pytest.mark.parametrize("chunks, reason", [(MALFORMED, "malformed"), (CUT_OFF, "cut_off")])
def test_a_failing_call_ends_each_stream_with_its_error_after_the_text(
    chunks: list[str], reason: str
) -> None:
    events = _failing(ChatCompletionsWire, chunks)
    assert events[-1] == {
        "error": {
            "message": events[-1]["error"]["message"],
            "type": "server_error",
            "param": None,
            "code": reason,
        }
    }
    state = ChatCompletionStreamState()
    for event in events[:-1]:
        state.handle_chunk(_strict(ChatCompletionChunk, event))
    message = state.current_completion_snapshot.choices[0].message
    assert (
        message.content == "Let me look."
        and state.current_completion_snapshot.choices[0].finish_reason is None
    )

    events = _failing(ResponsesWire, chunks)
    assert [event["type"] for event in events[-2:]] == ["error", "response.failed"]
    assert events[-2]["code"] == reason
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for event in events:
        failed = state.handle_event(_strict(RESPONSE_EVENTS[event["type"]], event))
    response = failed[-1].response
    assert response.status == "failed" and response.error.code == "server_error"
    assert response.output[0].content[0].text == "Let me look." and response.output[0].status == "completed"
    # The call was announced and is in the output as far as it went, marked incomplete, never done.
    assert response.output[-1].type == "function_call" and response.output[-1].status == "incomplete"
    assert "response.function_call_arguments.done" not in [event["type"] for event in events]

    events = _failing(MessagesWire, chunks)
    assert events[-1]["type"] == "error" and _strict(ErrorResponse, events[-1]).error.type == "api_error"
    snapshot, buffers = None, {}
    for event in events[:-1]:
        snapshot = accumulate_event(
            event=_strict(MESSAGE_EVENTS[event["type"]], event), current_snapshot=snapshot, json_bufs=buffers
        )
    assert snapshot.content[0].text == "Let me look." and snapshot.content[-1].type == "tool_use"
    assert events[-2]["type"] != "content_block_stop"  # the cut-off call is not presented as finished


def test_an_engine_failure_is_reported_without_its_message_then_raised() -> None:
    def engine():
        yield "Hello"
        raise RuntimeError("secret detail")

    for cls in FORMATS:
        events = []
        with pytest.raises(RuntimeError, match="secret"):
            for event in _wire(cls).events(_stream(respc.load_preset("qwen3")), engine()):
                events.append(event)
        text = json.dumps(events)
        assert "Hello" in text and "secret" not in text and "the text stream failed: RuntimeError" in text


def test_length_finishes_each_format_as_truncated() -> None:
    deltas = [{"content": "Hello"}]
    chat = _wire(ChatCompletionsWire)
    state = ChatCompletionStreamState()
    for event in chat.start() + chat.feed(deltas) + chat.finish("length"):
        state.handle_chunk(_strict(ChatCompletionChunk, event))
    with pytest.raises(LengthFinishReasonError):
        state.get_final_completion()
    assert state.current_completion_snapshot.choices[0].finish_reason == "length"

    responses = _wire(ResponsesWire)
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for event in responses.start() + responses.feed(deltas) + responses.finish("length"):
        last = state.handle_event(_strict(RESPONSE_EVENTS[event["type"]], event))
    response = last[-1].response
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Hello" and response.output[0].status == "incomplete"

    messages = _wire(MessagesWire)
    events = messages.start() + messages.feed(deltas) + messages.finish("length")
    assert _messages(events)["stop_reason"] == "max_tokens"


# -- framing, drivers, usage ------------------------------------------------------------------------

GENERATION = (
    "<think>Weather, so a tool.</think>Let me check.<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
)


def _frames(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each server-sent event."""
    assert text.endswith("\n\n")
    frames = []
    for block in text[:-2].split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) <= {"event", "data"}
        frames.append((fields.get("event"), fields["data"]))
    return frames


@pytest.mark.parametrize("cls", FORMATS)
def test_sse_frames_carry_the_events(cls: type) -> None:
    chunks = [GENERATION[i : i + 7] for i in range(0, len(GENERATION), 7)]
    events = list(_wire(cls).events(_stream(respc.load_preset("qwen3")), chunks))
    frames = _frames("".join(_wire(cls).sse(_stream(respc.load_preset("qwen3")), chunks)))
    if cls is ChatCompletionsWire:
        assert frames[-1] == (None, "[DONE]") and all(name is None for name, _ in frames)
        frames = frames[:-1]
    else:
        assert all(name == json.loads(data)["type"] for name, data in frames)
    assert [json.loads(data) for _, data in frames] == events


@pytest.mark.parametrize("cls", FORMATS)
def test_async_drivers_give_the_same_events_and_text(cls: type) -> None:
    chunks = [GENERATION[i : i + 5] for i in range(0, len(GENERATION), 5)]

    async def source():
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk

    async def collect(generator):
        return [item async for item in generator]

    def stream():
        return _stream(respc.load_preset("qwen3"))

    assert asyncio.run(collect(_wire(cls).aevents(stream(), source()))) == list(
        _wire(cls).events(stream(), chunks)
    )
    assert asyncio.run(collect(_wire(cls).asse(stream(), source()))) == list(_wire(cls).sse(stream(), chunks))


def test_usage_is_the_callers_counts_when_the_stream_starts_and_ends() -> None:
    class Engine:
        usage = Usage(7, 0)

    def events(cls: type) -> list[dict]:
        Engine.usage = Usage(7, 0)
        wire = _wire(cls, usage=lambda: Engine.usage)
        out = wire.start() + wire.feed([{"content": "Hi there"}])
        Engine.usage = Usage(7, 2, reasoning_tokens=1)
        return out + wire.finish("stop")

    chat = events(ChatCompletionsWire)
    usage = _strict(ChatCompletionChunk, chat[-1]).usage
    assert chat[-1]["choices"] == [] and (
        usage.total_tokens,
        usage.completion_tokens_details.reasoning_tokens,
    ) == (9, 1)
    responses = events(ResponsesWire)
    assert "usage" not in responses[0]["response"]
    assert _strict(Response, responses[-1]["response"]).usage.output_tokens == 2
    messages = events(MessagesWire)
    assert messages[0]["message"]["usage"] == {"input_tokens": 7, "output_tokens": 0}
    assert messages[-2]["usage"] == {"output_tokens": 2}
    assert all("usage" not in chunk for chunk in chat[:-1])  # only the last chunk reports it


def test_the_library_imports_no_sdk_and_no_server() -> None:
    script = (
        "import sys, respc.serving, respc.serving.chat, respc.serving.responses, respc.serving.messages\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'starlette', 'uvicorn', 'pydantic') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
