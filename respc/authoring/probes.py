"""The probe conversations `respc check` and `respc infer` render, and how a rendering becomes a model
output: the generation prompt is the `prefix`, the assistant turn the chat template writes after it is the
text the model would have generated.

Each probe is a conversation whose last message is an assistant turn with known values: a plain answer,
reasoning, tool calls, arguments of every JSON type, empty content, a turn after tool results. A template
that takes a reasoning switch (`enable_thinking`, `thinking`) is probed with it on and off.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from respc.authoring.rendering import ChatTemplate, compile_chat_template

__all__ = [
    "PROBES",
    "SWITCHES",
    "TOOLS",
    "TOOL_RESULT_WORD",
    "Probe",
    "Rendering",
    "Skipped",
    "expected_message",
    "probes_for",
    "render_probe",
    "switches",
]

# Keyword arguments chat templates read to turn reasoning on or off (Qwen3, GLM, SmolLM3: enable_thinking;
# DeepSeek-V3.1, Granite 3.3: thinking).
SWITCHES = ("enable_thinking", "thinking")

# Values no template writes around a value by itself: a probe's strings never start or end with whitespace,
# so what surrounds them in a rendering is the template's.
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris today."
REASONING = "The user asks about Paris.\nI should answer briefly."
CALL_TEXT = "Let me check the weather."
AFTER_TOOL = "It is 18 degrees and clear in Paris."
TOOL_RESULT = '{"temperature": 18, "sky": "clear"}'
TOOL_RESULT_WORD = "temperature"  # in the tool result however a template encodes it


def _function(name: str, description: str, properties: dict[str, Any]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": []},
        },
    }


TOOLS: tuple[dict, ...] = (
    _function(
        "get_weather",
        "Get the current weather in a city.",
        {
            "city": {"type": "string", "description": "The city name."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    ),
    _function("get_time", "Get the current time in a timezone.", {"timezone": {"type": "string"}}),
    _function(
        "store",
        "Store values of every JSON type.",
        {
            "text": {"type": "string"},
            "unicode": {"type": "string"},
            "quoted": {"type": "string"},
            "path": {"type": "string"},
            "multiline": {"type": "string"},
            "empty": {"type": "string"},
            "digits": {"type": "string"},
            "zero": {"type": "integer"},
            "negative": {"type": "integer"},
            "max_safe": {"type": "integer"},
            "min_safe": {"type": "integer"},
            "ratio": {"type": "number"},
            "whole": {"type": "number"},
            "tiny": {"type": "number"},
            "enabled": {"type": "boolean"},
            "disabled": {"type": "boolean"},
            "nothing": {"type": ["string", "null"]},
            "options": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "matrix": {"type": "array"},
        },
    ),
)


def _call(index: int, name: str, arguments: dict[str, Any]) -> dict:
    # Mistral's templates want 9 alphanumeric characters in an id
    return {"id": f"call{index:05d}", "type": "function", "function": {"name": name, "arguments": arguments}}


PARIS = _call(1, "get_weather", {"city": "Paris", "unit": "celsius"})
TIME = _call(2, "get_time", {"timezone": "Europe/Paris"})
STRINGS = {
    "text": "Paris, France",
    "unicode": "Zürich, 東京 and ☀️",
    "quoted": "He said \"hi\" and 'bye'",
    "path": "C:\\new\\table",
    "multiline": "line one\nline two",
    "empty": "",
    "digits": "42",
}
NUMBERS = {
    "zero": 0,
    "negative": -17,
    "max_safe": 9007199254740991,
    "min_safe": -9007199254740991,
    "ratio": 0.5,
    "whole": 2.0,
    "tiny": 1e-07,
}
LITERALS = {"enabled": True, "disabled": False, "nothing": None}
NESTED = {
    "options": {"depth": {"level": 2, "items": [1, "two", None, True]}, "empty": {}},
    "tags": ["a", "b"],
    "matrix": [[1, 2], [3.5, []]],
}


@dataclass(frozen=True)
class Probe:
    """A conversation whose last message is the assistant turn under test, with the tools and template
    keyword arguments it is rendered with."""

    name: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[dict, ...] | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def turn(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.messages[-1]))

    @property
    def history(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(dict(m)) for m in self.messages[:-1]]

    @property
    def tool_list(self) -> list[dict] | None:
        return None if self.tools is None else copy.deepcopy(list(self.tools))


def _user(text: str = QUESTION) -> dict:
    return {"role": "user", "content": text}


def _assistant(content: str = "", reasoning: str | None = None, calls: list[dict] | None = None) -> dict:
    turn: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        turn["reasoning_content"] = reasoning
    if calls:
        turn["tool_calls"] = calls
    return turn


def _probe(name: str, *messages: dict, tools: bool = False) -> Probe:
    return Probe(name, tuple(messages), TOOLS if tools else None)


PROBES: tuple[Probe, ...] = (
    _probe("plain", _user(), _assistant(ANSWER)),
    _probe("reasoning", _user(), _assistant(ANSWER, REASONING)),
    _probe("empty_content", _user(), _assistant("")),
    _probe("tool_call", _user(), _assistant(calls=[PARIS]), tools=True),
    _probe("content_and_call", _user(), _assistant(CALL_TEXT, calls=[PARIS]), tools=True),
    _probe("reasoning_and_call", _user(), _assistant("", REASONING, [PARIS]), tools=True),
    _probe("parallel_calls", _user(), _assistant(calls=[PARIS, TIME]), tools=True),
    _probe("args_strings", _user(), _assistant(calls=[_call(3, "store", STRINGS)]), tools=True),
    _probe("args_numbers", _user(), _assistant(calls=[_call(4, "store", NUMBERS)]), tools=True),
    _probe("args_literals", _user(), _assistant(calls=[_call(5, "store", LITERALS)]), tools=True),
    _probe("args_nested", _user(), _assistant(calls=[_call(6, "store", NESTED)]), tools=True),
    _probe(
        "after_tool_result",
        _user(),
        _assistant(calls=[PARIS]),
        {"role": "tool", "tool_call_id": PARIS["id"], "name": "get_weather", "content": TOOL_RESULT},
        _assistant(AFTER_TOOL),
        tools=True,
    ),
)


def switches(chat_template: ChatTemplate) -> tuple[str, ...]:
    """The reasoning switches (`SWITCHES`) a chat template reads."""
    import jinja2.meta

    names: set[str] = set()
    for text in chat_template.texts():
        environment = compile_chat_template(text).environment
        names |= jinja2.meta.find_undeclared_variables(environment.parse(text))
    return tuple(name for name in SWITCHES if name in names)


def probes_for(chat_template: ChatTemplate) -> list[Probe]:
    """`PROBES`, each with every reasoning switch of the template on, then each with it off."""
    found = switches(chat_template)
    if not found:
        return list(PROBES)
    out = []
    for name in found:
        for value in (True, False):
            out += [
                Probe(f"{p.name} ({name}={str(value).lower()})", p.messages, p.tools, {name: value})
                for p in PROBES
            ]
    return out


@dataclass(frozen=True)
class Rendering:
    """A probe rendered: `prompt` (the conversation before the turn, with the generation prompt: the
    parser's `prefix`) and `output` (the turn as the model writes it, up to its end-of-turn token)."""

    probe: Probe
    prompt: str
    output: str

    @property
    def expected(self) -> dict[str, Any]:
        return expected_message(self.probe.turn)


@dataclass(frozen=True)
class Skipped:
    """A probe the chat template cannot render as a model output, and why."""

    probe: Probe
    reason: str


def render_probe(chat_template: ChatTemplate, probe: Probe, now: datetime) -> Rendering | Skipped:
    """The probe's prompt and output, or why it cannot be had: the template raises, the conversation does
    not continue the generation prompt (the template renders the turn differently from what it prompts
    the model to write), or it leaves out a value of the turn."""
    try:
        prompt, full = _render(chat_template, probe, now, string_arguments=False)
    except Exception as error:  # a template's own raise_exception, or its bug on this conversation
        try:
            # Templates written for OpenAI-style messages want each call's arguments as a JSON string.
            prompt, full = _render(chat_template, probe, now, string_arguments=True)
        except Exception:
            reason = str(error).splitlines()[0] if str(error) else ""
            return Skipped(probe, f"the chat template raises {type(error).__name__}: {reason}")
    if not full.startswith(prompt):
        common = _common_prefix(prompt, full)
        return Skipped(
            probe,
            "the rendered turn does not continue the generation prompt: after "
            f"{_tail(prompt[:common])} the prompt has {prompt[common:][:40]!r}, the conversation "
            f"{full[common:][:40]!r}",
        )
    # What the template writes after the end-of-turn token (a newline before the next turn) is not
    # generated: probe values never end in whitespace, so trailing whitespace is the template's.
    output = full[len(prompt) :].rstrip()
    missing = _unrendered(probe.turn, output)
    if missing:
        return Skipped(probe, f"the chat template does not render the turn's {missing}")
    return Rendering(probe, prompt, output)


def _render(
    chat_template: ChatTemplate, probe: Probe, now: datetime, *, string_arguments: bool
) -> tuple[str, str]:
    """(prompt, conversation): the history with the generation prompt, and the history with the turn."""
    history, turn = probe.history, probe.turn
    if string_arguments:
        for message in [*history, turn]:
            for call in message.get("tool_calls") or []:
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"], ensure_ascii=False)
        if not any(message.get("tool_calls") for message in [*history, turn]):
            raise ValueError("no tool calls to write as strings")
    tools = probe.tool_list
    prompt = chat_template.render(history, tools=tools, add_generation_prompt=True, now=now, **probe.kwargs)
    full = chat_template.render(
        [*history, turn], tools=tools, add_generation_prompt=False, now=now, **probe.kwargs
    )
    return prompt, full


def _unrendered(turn: dict[str, Any], output: str) -> str | None:
    for key in ("reasoning_content", "content"):
        if turn.get(key) and turn[key] not in output:
            return key
    for call in turn.get("tool_calls") or []:
        if call["function"]["name"] not in output:
            return "tool_calls"
    return None


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _tail(text: str, width: int = 40) -> str:
    return repr(text[-width:]) if text else "the start"


def expected_message(turn: dict[str, Any]) -> dict[str, Any]:
    """The message a response template should parse the turn's output into (empty values dropped, as
    `finalize` drops them; tool calls in transformers' `{"type", "function": {"name", "arguments"}}`)."""
    message: dict[str, Any] = {"role": "assistant"}
    if turn.get("reasoning_content"):
        message["reasoning_content"] = turn["reasoning_content"]
    if turn.get("content"):
        message["content"] = turn["content"]
    if turn.get("tool_calls"):
        message["tool_calls"] = [
            {
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
            }
            for c in turn["tool_calls"]
        ]
    return message
