"""Anthropic Messages: stream events from `DeltaStream` deltas (the API vLLM and llama.cpp also serve).

The events of one message (`msg_...`):

* `message_start`, the message with no content and the input token count;
* one content block at a time, at indices 0, 1, 2... in the order they start, opened when a delta of
  another kind or a new tool call comes and stopped before the next one starts:
  `content_block_start`, `content_block_delta`..., `content_block_stop`, where the block is
  `thinking` (with the empty `signature` the type requires; `thinking_delta`s), `text` (`text_delta`s)
  or `tool_use` (the delta's call id and the name, `input` `{}`; the arguments as `input_json_delta`
  fragments, which concatenate to the arguments' JSON);
* `input` must be an object, and clients parse the fragments as they come: arguments that turn out
  not to be an object are held until their block stops, then sent whole, a JSON string holding an
  object (what Granite 4 may write, and vLLM decodes) as that object, anything else as it is;
* `message_delta` with the `stop_reason` ("end_turn", "tool_use", or "max_tokens" for "length") and the
  output token count, then `message_stop`.

As server-sent events each has an `event:` line (the anthropic SDK drops data-only ones). A failure
sends `event: error` with `{"type": "error", "error": {"type": "api_error", "message"}}`, which the SDK
raises; the open block is not stopped, so no client takes a cut-off call for a finished one.
"""

from __future__ import annotations

import json
from typing import Any

from respc.serving.wire import Wire, describe_error, message_parts

__all__ = ["STOP_REASONS", "MessagesWire"]

STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _as_input(arguments: Any) -> Any:
    """Arguments as a tool_use `input`: a string holding a JSON object is that object."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
        return value if isinstance(value, dict) else arguments
    return arguments


class MessagesWire(Wire):
    """One message as Anthropic Messages stream events (see the module docstring)."""

    id_prefix = "msg_"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._index = -1  # of the open block, else of the last one
        self._open: str | None = None  # the open block's type
        self._held: list[str] | None = None  # a tool_use block's arguments while not known to be an object

    def _message(self, content: list[dict], stop_reason: str | None) -> dict:
        usage = self.usage()
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": self.model,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens if usage is not None else 0,
                "output_tokens": usage.output_tokens if usage is not None else 0,
            },
        }

    def start(self) -> list[dict]:
        return [{"type": "message_start", "message": self._message([], None)}]

    def feed(self, deltas: list[dict]) -> list[dict]:
        """The events of `DeltaStream` deltas (one of content, reasoning_content or tool_calls each)."""
        events: list[dict] = []
        for delta in deltas:
            text = delta.get("content")
            if text is not None:
                if self._open != "text":
                    self._start({"type": "text", "text": ""}, events)
                change = {"type": "text_delta", "text": text}
            else:
                text = delta.get("reasoning_content")
                if text is None:
                    for entry in delta.get("tool_calls", ()):
                        self._call(entry, events)
                    continue
                if self._open != "thinking":
                    self._start({"type": "thinking", "thinking": "", "signature": ""}, events)
                change = {"type": "thinking_delta", "thinking": text}
            events.append({"type": "content_block_delta", "index": self._index, "delta": change})
        return events

    def finish(self, finish_reason: str) -> list[dict]:
        usage = self.usage()
        stop = {"stop_reason": STOP_REASONS[finish_reason], "stop_sequence": None}
        return [
            *self._stop(),
            {
                "type": "message_delta",
                "delta": stop,
                "usage": {"output_tokens": usage.output_tokens if usage is not None else 0},
            },
            {"type": "message_stop"},
        ]

    def fail(self, error: Exception) -> list[dict]:
        message, _ = describe_error(error)
        return [{"type": "error", "error": {"type": "api_error", "message": message}}]

    def body(self, message: dict, finish_reason: str | None = None) -> dict:
        reasoning, content, calls = message_parts(message)
        blocks: list[dict] = []
        if reasoning is not None:
            blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        if content is not None:
            blocks.append({"type": "text", "text": content})
        for call_id, name, arguments in calls:
            call_id = call_id if isinstance(call_id, str) else self._new_id("toolu_")
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": _as_input(arguments)})
        stop_reason = STOP_REASONS[finish_reason or ("tool_calls" if calls else "stop")]
        return self._message(blocks, stop_reason)

    # -- blocks --------------------------------------------------------------------------------------

    def _start(self, block: dict, events: list[dict]) -> None:
        events += self._stop()
        self._index += 1
        self._open = block["type"]
        events.append({"type": "content_block_start", "index": self._index, "content_block": block})

    def _stop(self) -> list[dict]:
        if self._open is None:
            return []
        events = []
        if self._held:  # arguments that are not an object, sent whole
            text = "".join(self._held)
            try:
                text = json.dumps(_as_input(json.loads(text)), ensure_ascii=False)
            except ValueError:
                pass
            events.append(self._input(text))
        self._open, self._held = None, None
        return [*events, {"type": "content_block_stop", "index": self._index}]

    def _call(self, entry: dict, events: list[dict]) -> None:
        function = entry.get("function") or {}
        if "id" in entry:  # a call's first delta
            block = {"type": "tool_use", "id": entry["id"], "name": function.get("name"), "input": {}}
            self._start(block, events)
            self._held = []
        fragment = function.get("arguments")
        if not fragment:
            return
        if self._held is not None:  # not yet known to be an object
            self._held.append(fragment)
            text = "".join(self._held)
            if text.lstrip()[:1] != "{":
                return  # only space so far, or not an object: held until the block stops
            fragment, self._held = text, None
        events.append(self._input(fragment))

    def _input(self, fragment: str) -> dict:
        change = {"type": "input_json_delta", "partial_json": fragment}
        return {"type": "content_block_delta", "index": self._index, "delta": change}
