"""A server loop with respc: model text chunks in, OpenAI-compatible server-sent events out.

    python examples/serve_sse.py     # prints the events for a canned Qwen3.5 generation

`sse_events` is what a web handler would return as a `text/event-stream` body: a role chunk, one
`chat.completion.chunk` per delta (content, reasoning and tool-call arguments stream as they are
generated), a last chunk with the finish reason, then `[DONE]`. A malformed or cut-off tool call is
reported as an error event after the deltas produced before it, so no text already generated is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import respc
from respc.serving import DeltaStream, DeltaStreamError

PROMPT = "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n"
GENERATION = (
    "The user wants the weather, so I call the tool.\n</think>\n\nLet me check.\n"
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis, France\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>"
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]


def sse_events(
    chunks: Iterable[str], parser: Any, *, model: str = "qwen3.5", completion_id: str = "chatcmpl-respc"
) -> Iterator[str]:
    """The `data: ...` events of one streamed chat completion, from the model's text chunks."""

    def event(delta: dict, finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        chunk = {"id": completion_id, "object": "chat.completion.chunk", "model": model, "choices": [choice]}
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    stream = DeltaStream(parser)
    yield event({"role": "assistant", "content": ""})
    try:
        for chunk in chunks:
            for delta in stream.feed(chunk):
                yield event(delta)
        deltas, finish_reason = stream.finish()
    except DeltaStreamError as error:
        for delta in error.deltas:  # what was generated before the failure still reaches the client
            yield event(delta)
        yield f"data: {json.dumps({'error': {'message': str(error), 'type': error.reason}})}\n\n"
        yield "data: [DONE]\n\n"
        return
    for delta in deltas:
        yield event(delta)
    yield event({}, finish_reason)
    yield "data: [DONE]\n\n"


def model_chunks(text: str, size: int = 5) -> Iterator[str]:
    """Stand-in for a model: the generation in pieces of a few characters."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


def main() -> None:
    parser = respc.load_preset("qwen3_5").ResponseParser(PROMPT, tools=TOOLS)
    for sse in sse_events(model_chunks(GENERATION), parser):
        print(sse, end="")


if __name__ == "__main__":
    main()
