"""What the wire formats share: one response's events from a `DeltaStream`, and their server-sent-event text.

A `Wire` is one response in one wire format: `ChatCompletionsWire` (`respc.serving.chat`),
`ResponsesWire` (`respc.serving.responses`) or `MessagesWire` (`respc.serving.messages`). Its push half
turns what a `DeltaStream` returns into the format's event dicts: `start()` before any text,
`feed(deltas)` for each batch, then `finish(finish_reason)` ("stop", "tool_calls" or "length") or, after a
failure, `fail(error)`; `body(message)` is the non-streamed response for a whole parsed message. Its
drivers run a whole stream: `events(stream, chunks)` over an iterable of text chunks, `aevents` over an
async iterable (what an engine gives a server), and `sse` / `asse`, the same as server-sent-event text.

A `DeltaStreamError` (a malformed or cut-off tool call) ends the events with the deltas it carries, then
the format's error events. Any other exception from the chunks is reported the same way and then
re-raised, for the server to log. Ids come from `new_id(prefix)` and timestamps from `clock()`, both
injectable; token counts are the caller's (`usage`), read when the stream starts and when it ends.
"""

from __future__ import annotations

import json
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from respc.serving.deltas import REASONING_FIELDS, DeltaStream, DeltaStreamError, calls_of
from respc.serving.tool_args import call_parts

__all__ = ["Usage", "Wire", "describe_error", "message_parts", "random_id"]


@dataclass(frozen=True)
class Usage:
    """Token counts of one response, as the engine counted them."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0  # of output_tokens; 0 when not counted


def random_id(prefix: str) -> str:
    """`prefix` and 24 random hex digits: the ids the vendors' APIs make (`chatcmpl-`, `resp_`, `msg_`...)."""
    return prefix + secrets.token_hex(12)


def message_parts(message: dict) -> tuple[str | None, str | None, list[tuple[Any, Any, Any]]]:
    """A parsed message's reasoning, content and tool calls as (id, name, arguments); None for no text."""
    reasoning = next((message[key] for key in REASONING_FIELDS if isinstance(message.get(key), str)), None)
    content = message.get("content")
    calls = [call_parts(call) for call in calls_of(message.get("tool_calls"))]
    return reasoning or None, content if isinstance(content, str) and content else None, calls


def _dumps(event: dict) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def describe_error(error: Exception) -> tuple[str, str | None]:
    """What a client is told of a failure, (message, code): a `DeltaStreamError`'s message and reason; of
    anything else (an engine's exception may hold what the client must not see) only its type."""
    if isinstance(error, DeltaStreamError):
        return str(error), error.reason
    return f"the text stream failed: {type(error).__name__}", None


class Wire(ABC):
    """One response in one wire format, from `DeltaStream` deltas (see the module docstring).

    `model` is the model name the events report; `usage` returns the token counts so far (or None).
    """

    id_prefix: str  # of the response's id
    named = True  # server-sent events carry an `event:` line with the event's type
    done = ""  # server-sent-event text after the last event

    def __init__(
        self,
        *,
        model: str,
        usage: Callable[[], Usage | None] | None = None,
        new_id: Callable[[str], str] = random_id,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.model = model
        self._usage = usage
        self._new_id = new_id
        self.id = new_id(self.id_prefix)
        self.created = int(clock())

    @abstractmethod
    def start(self) -> list[dict]:
        """The events before any text."""

    @abstractmethod
    def feed(self, deltas: list[dict]) -> list[dict]:
        """The events of a batch of deltas, as `DeltaStream.feed` returns them."""

    @abstractmethod
    def finish(self, finish_reason: str) -> list[dict]:
        """The last events: "stop", "tool_calls" (as `DeltaStream.finish` says) or "length"."""

    @abstractmethod
    def fail(self, error: Exception) -> list[dict]:
        """The format's error events, after the deltas the failure carried were fed."""

    @abstractmethod
    def body(self, message: dict, finish_reason: str | None = None) -> dict:
        """The non-streamed response for a parsed message ("tool_calls" if it has calls, else "stop")."""

    def usage(self) -> Usage | None:
        """The caller's token counts so far, if it counts them."""
        return self._usage() if self._usage is not None else None

    # -- drivers -------------------------------------------------------------------------------------

    def events(self, stream: DeltaStream, chunks: Iterable[str]) -> Iterator[dict]:
        """Every event of the response whose text comes in `chunks`."""
        yield from self.start()
        feed, send = stream.feed, self.feed  # bound once: this loop is the hot path
        try:
            for chunk in chunks:
                deltas = feed(chunk)
                if deltas:
                    for event in send(deltas):  # noqa: UP028 (a loop resumes faster than `yield from`)
                        yield event
            deltas, finish_reason = stream.finish()
        except DeltaStreamError as error:
            yield from self.feed(error.deltas)
            yield from self.fail(error)
            return
        except Exception as error:
            yield from self.fail(error)
            raise
        yield from self.feed(deltas)
        yield from self.finish(finish_reason)

    async def aevents(self, stream: DeltaStream, chunks: AsyncIterable[str]) -> AsyncIterator[dict]:
        """`events` over an async iterable of text chunks."""
        for event in self.start():
            yield event
        try:
            async for chunk in chunks:
                deltas = stream.feed(chunk)
                if deltas:
                    for event in self.feed(deltas):
                        yield event
            deltas, finish_reason = stream.finish()
        except DeltaStreamError as error:
            for event in self.feed(error.deltas) + self.fail(error):
                yield event
            return
        except Exception as error:
            for event in self.fail(error):
                yield event
            raise
        for event in self.feed(deltas) + self.finish(finish_reason):
            yield event

    def frame(self, event: dict) -> str:
        """One event as server-sent-event text."""
        if self.named:
            return f"event: {event['type']}\ndata: {_dumps(event)}\n\n"
        return f"data: {_dumps(event)}\n\n"

    def sse(self, stream: DeltaStream, chunks: Iterable[str]) -> Iterator[str]:
        """`events` as server-sent-event text, the body of a `text/event-stream` response."""
        for event in self.events(stream, chunks):
            yield self.frame(event)
        if self.done:
            yield self.done

    async def asse(self, stream: DeltaStream, chunks: AsyncIterable[str]) -> AsyncIterator[str]:
        """`aevents` as server-sent-event text."""
        async for event in self.aevents(stream, chunks):
            yield self.frame(event)
        if self.done:
            yield self.done
