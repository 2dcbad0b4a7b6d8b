"""OpenAI Responses API: stream events from `DeltaStream` deltas.

The events of one response (`resp_...`), numbered by `sequence_number` from 0 across the stream:

* `response.created` and `response.in_progress`, the response with no output yet;
* one output item at a time, opened when a delta of another kind or a new tool call comes, and closed
  before the next one opens (as vLLM does), each at the next `output_index`:
  - reasoning (`rs_...`): `output_item.added`, `content_part.added` (a `reasoning_text` part),
    `reasoning_text.delta`..., `reasoning_text.done`, `content_part.done`, `output_item.done`;
  - message (`msg_...`): the same with an `output_text` part and `output_text.delta`/`.done` (with the
    empty `logprobs` the API requires);
  - function call (`fc_...`, its `call_id` the delta's call id): `output_item.added` with the name,
    `function_call_arguments.delta`..., `function_call_arguments.done`, `output_item.done`;
* `response.completed` with every item and the usage, or `response.incomplete`
  (`incomplete_details.reason` "max_output_tokens", the last item "incomplete") for "length".

A failure sends an `error` event (its code the `DeltaStreamError`'s reason), then `response.failed`,
whose output holds the closed items and the open one as far as it went ("incomplete"); the open item
gets no `.done` events, so no client takes a cut-off call for a finished one.
"""

from __future__ import annotations

import json
from typing import Any

from respc.serving.wire import Usage, Wire, describe_error, message_parts

__all__ = ["ResponsesWire"]

_TEXT = {"message": ("msg_", "response.output_text"), "reasoning": ("rs_", "response.reasoning_text")}


def _usage(usage: Usage) -> dict:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _part(kind: str, text: str) -> dict:
    if kind == "message":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "reasoning_text", "text": text}


class ResponsesWire(Wire):
    """One response as Responses API stream events (see the module docstring)."""

    id_prefix = "resp_"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._seq = 0
        self._output: list[dict] = []  # the closed items
        self._item: dict | None = None  # the open item: its id, type and what `output_item.added` names
        self._open: str | None = None  # its type: "reasoning", "message" or "function_call"
        self._index = 0  # its output_index
        self._parts: list[str] = []  # its text or arguments so far
        self._delta: dict = {}  # its delta event, to copy and fill in

    def _response(self, status: str, output: list[dict], **extra: Any) -> dict:
        response = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "model": self.model,
            "status": status,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            **extra,
        }
        usage = self.usage() if status != "in_progress" else None
        if usage is not None:
            response["usage"] = _usage(usage)
        return response

    def _event(self, event: dict) -> dict:
        event["sequence_number"] = self._seq
        self._seq += 1
        return event

    def start(self) -> list[dict]:
        return [
            self._event({"type": kind, "response": self._response("in_progress", [])})
            for kind in ("response.created", "response.in_progress")
        ]

    def feed(self, deltas: list[dict]) -> list[dict]:
        """The events of `DeltaStream` deltas (one of content, reasoning_content or tool_calls each)."""
        events: list[dict] = []
        for delta in deltas:
            text = delta.get("content")
            if text is not None:
                if self._open != "message":
                    self._open_item(self._text_item("message"), events)
                # A copy of a dict with every key, then set in place: cheaper than a literal (the hot path).
                event = self._delta.copy()
                event["delta"] = text
                event["logprobs"] = []
            else:
                text = delta.get("reasoning_content")
                if text is None:
                    for entry in delta.get("tool_calls", ()):
                        self._call(entry, events)
                    continue
                if self._open != "reasoning":
                    self._open_item(self._text_item("reasoning"), events)
                event = self._delta.copy()
                event["delta"] = text
            self._parts.append(text)
            event["sequence_number"] = self._seq
            self._seq += 1
            events.append(event)
        return events

    def finish(self, finish_reason: str) -> list[dict]:
        status = "incomplete" if finish_reason == "length" else "completed"
        events = self._close(status)
        extra = {"incomplete_details": {"reason": "max_output_tokens"}} if status == "incomplete" else {}
        response = self._response(status, list(self._output), **extra)
        events.append(self._event({"type": f"response.{status}", "response": response}))
        return events

    def fail(self, error: Exception) -> list[dict]:
        message, code = describe_error(error)
        output = self._output + ([self._done("incomplete")] if self._item is not None else [])
        failed = self._response("failed", output, error={"code": "server_error", "message": message})
        return [
            self._event({"type": "error", "code": code, "message": message, "param": None}),
            self._event({"type": "response.failed", "response": failed}),
        ]

    def body(self, message: dict, finish_reason: str | None = None) -> dict:
        reasoning, content, calls = message_parts(message)
        status = "incomplete" if finish_reason == "length" else "completed"
        output: list[dict] = []
        for kind, text in (("reasoning", reasoning), ("message", content)):
            if text is not None:
                output.append({**self._text_item(kind), "status": status, "content": [_part(kind, text)]})
        for call_id, name, arguments in calls:
            item = self._call_item(call_id if isinstance(call_id, str) else self._new_id("call_"), name)
            output.append({**item, "status": status, "arguments": json.dumps(arguments, ensure_ascii=False)})
        extra = {"incomplete_details": {"reason": "max_output_tokens"}} if status == "incomplete" else {}
        return self._response(status, output, **extra)

    # -- items ---------------------------------------------------------------------------------------

    def _text_item(self, kind: str) -> dict:
        item = {"id": self._new_id(_TEXT[kind][0]), "type": kind}
        return {**item, "role": "assistant"} if kind == "message" else {**item, "summary": []}

    def _call_item(self, call_id: str, name: Any) -> dict:
        return {"id": self._new_id("fc_"), "type": "function_call", "call_id": call_id, "name": name}

    def _call(self, entry: dict, events: list[dict]) -> None:
        function = entry.get("function") or {}
        if "id" in entry:  # a call's first delta
            self._open_item(self._call_item(entry["id"], function.get("name")), events)
        fragment = function.get("arguments")
        if fragment:
            self._parts.append(fragment)
            events.append(self._event({**self._delta, "delta": fragment}))

    def _open_item(self, item: dict, events: list[dict]) -> None:
        events += self._close("completed")
        kind, index = item["type"], len(self._output)
        self._item, self._open, self._index = item, kind, index
        body = {"arguments": ""} if kind == "function_call" else {"content": []}
        added = {**item, "status": "in_progress", **body}
        events.append(
            self._event({"type": "response.output_item.added", "output_index": index, "item": added})
        )
        where = {"item_id": item["id"], "output_index": index}
        if kind == "function_call":
            self._delta = {"type": "response.function_call_arguments.delta", **where, "delta": ""}
        else:
            where["content_index"] = 0
            part = _part(kind, "")
            events.append(self._event({"type": "response.content_part.added", **where, "part": part}))
            logprobs = {"logprobs": []} if kind == "message" else {}
            self._delta = {"type": _TEXT[kind][1] + ".delta", **where, "delta": "", **logprobs}
        self._delta["sequence_number"] = 0

    def _done(self, status: str) -> dict:
        """The open item as it stands, with `status`."""
        text = "".join(self._parts)
        if self._open == "function_call":
            return {**self._item, "status": status, "arguments": text}
        return {**self._item, "status": status, "content": [_part(self._open, text)]}

    def _close(self, status: str) -> list[dict]:
        if self._item is None:
            return []
        done, index = self._done(status), self._index
        where = {"item_id": done["id"], "output_index": index}
        if self._open == "function_call":
            arguments = done["arguments"]
            events = [
                self._event(
                    {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
                )
            ]
        else:
            part = done["content"][0]
            text = (
                {"text": part["text"], "logprobs": []} if self._open == "message" else {"text": part["text"]}
            )
            events = [
                self._event({"type": _TEXT[self._open][1] + ".done", **where, "content_index": 0, **text}),
                self._event(
                    {"type": "response.content_part.done", **where, "content_index": 0, "part": part}
                ),
            ]
        events.append(self._event({"type": "response.output_item.done", "output_index": index, "item": done}))
        self._output.append(done)
        self._item, self._open, self._parts = None, None, []
        return events
