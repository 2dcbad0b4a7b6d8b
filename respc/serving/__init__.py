"""Serving: what a server sends while the model generates, from one response parser.

`DeltaStream` turns a parser's region events into OpenAI-style `delta` dicts (content, reasoning and
tool calls whose arguments stream as they are generated); `respc.serving.tool_args` holds the
incremental tool-argument builders it uses.
"""

from respc.serving.deltas import REASONING_FIELDS, DeltaStream, DeltaStreamError

__all__ = ["REASONING_FIELDS", "DeltaStream", "DeltaStreamError"]
