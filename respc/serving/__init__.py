"""Serving: what a server sends while the model generates, from one response parser.

`DeltaStream` turns a parser's region events into OpenAI-style `delta` dicts (content, reasoning and
tool calls whose arguments stream as they are generated); `respc.serving.tool_args` holds the
incremental tool-argument builders it uses. The wire formats turn those deltas into what clients read:
`ChatCompletionsWire` (OpenAI `chat.completion.chunk`s), `ResponsesWire` (OpenAI Responses API events)
and `MessagesWire` (Anthropic Messages events), each also as server-sent-event text (`respc.serving.wire`).
"""

from respc.serving.chat import ChatCompletionsWire
from respc.serving.deltas import REASONING_FIELDS, DeltaStream, DeltaStreamError
from respc.serving.messages import MessagesWire
from respc.serving.responses import ResponsesWire
from respc.serving.wire import Usage, Wire

__all__ = [
    "REASONING_FIELDS",
    "ChatCompletionsWire",
    "DeltaStream",
    "DeltaStreamError",
    "MessagesWire",
    "ResponsesWire",
    "Usage",
    "Wire",
]
