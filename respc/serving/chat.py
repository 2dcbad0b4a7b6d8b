"""OpenAI Chat Completions: `chat.completion.chunk` objects from `DeltaStream` deltas.

The events of one response, each a chunk with the same `id` (`chatcmpl-...`), `created` and `model`, and
one choice (index 0):

* a first chunk whose delta is `{"role": "assistant"}` (the role only once: clients concatenate every
  string they receive, so a repeated role would read "assistantassistant");
* one chunk per delta, passed through as `DeltaStream` made it: `content`, `reasoning_content` (vLLM's
  and DeepSeek's name, which clients keep), or one `tool_calls` entry: a call's first has its index
  (0, 1, ... in order), id, type and name with empty arguments, later ones only the index and an
  argument fragment;
* a chunk with an empty delta and the `finish_reason`, then, when the caller counts tokens, a chunk with
  no choices and the `usage` (what `stream_options.include_usage` asks of OpenAI).

As server-sent events, each chunk is a `data:` line and the stream ends with `data: [DONE]`. A failure
sends `{"error": {"message", "type": "server_error", "param": null, "code"}}` (the code is the
`DeltaStreamError`'s reason), which the openai SDK raises as an `APIError`, then `[DONE]`.
"""

from __future__ import annotations

import json
from typing import Any

from respc.serving.wire import Usage, Wire, describe_error, message_parts

__all__ = ["ChatCompletionsWire"]


def _usage(usage: Usage) -> dict:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


class ChatCompletionsWire(Wire):
    """One chat completion as `chat.completion.chunk` objects (see the module docstring)."""

    id_prefix = "chatcmpl-"
    named = False
    done = "data: [DONE]\n\n"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._head = {  # what every chunk starts with
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }

    def _chunk(self, delta: dict, finish_reason: str | None = None) -> dict:
        return {**self._head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    def start(self) -> list[dict]:
        return [self._chunk({"role": "assistant"})]

    def feed(self, deltas: list[dict]) -> list[dict]:
        chunks = []
        for delta in deltas:
            chunk = self._head.copy()  # `_chunk` inlined, and a copy is cheaper than `**`: the hot path
            chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
            chunks.append(chunk)
        return chunks

    def finish(self, finish_reason: str) -> list[dict]:
        chunks = [self._chunk({}, finish_reason)]
        usage = self.usage()
        if usage is not None:
            chunks.append({**self._head, "choices": [], "usage": _usage(usage)})
        return chunks

    def fail(self, error: Exception) -> list[dict]:
        message, code = describe_error(error)
        return [{"error": {"message": message, "type": "server_error", "param": None, "code": code}}]

    def body(self, message: dict, finish_reason: str | None = None) -> dict:
        reasoning, content, calls = message_parts(message)
        reply: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            reply["reasoning_content"] = reasoning
        if calls:
            reply["tool_calls"] = [
                {
                    "id": call_id if isinstance(call_id, str) else self._new_id("call_"),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
                }
                for call_id, name, arguments in calls
            ]
        choice = {
            "index": 0,
            "message": reply,
            "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            "logprobs": None,
        }
        response = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }
        usage = self.usage()
        if usage is not None:
            response["usage"] = _usage(usage)
        return response
