"""DeltaStream's invariant checker and the cases it runs on (every fixture template and preset), shared
by the serving and wire-format tests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

import respc
from respc.serving import REASONING_FIELDS, DeltaStream, DeltaStreamError
from respc.serving.tool_args import call_parts, same_value, shape_of
from support.compare import SAMPLES, TEMPLATES

PRESET_CASES = Path(__file__).parents[1] / "fixtures" / "presets"
GENERATED_ID = re.compile(r"call_[0-9a-f]{24}\Z")


def _presets() -> list[str]:
    try:
        return [name for name in respc.presets() if (PRESET_CASES / f"{name}.json").is_file()]
    except Exception:  # presets not shipped in this checkout
        return []


PRESETS = _presets()


def module_of(name: str) -> Any:
    """A fixture template's module, or a preset's for "preset:NAME"."""
    if name.startswith("preset:"):
        return respc.load_preset(name.removeprefix("preset:"))
    return respc.compile_template(TEMPLATES[name])


def cases_of(name: str) -> list[dict]:
    if name.startswith("preset:"):
        return json.loads((PRESET_CASES / f"{name.removeprefix('preset:')}.json").read_text(encoding="utf-8"))
    return SAMPLES[name]


# -- the invariant checker -------------------------------------------------------------------------


def flat_calls(value: Any) -> list[dict]:
    if isinstance(value, list):
        return [call for item in value for call in flat_calls(item)]
    return [value] if isinstance(value, dict) else []


def reference_events(
    make: Any, chunks: list[str], by_char: bool = False
) -> tuple[list[dict], dict | None, bool]:
    """Every event of a parser fed `chunks` (or their characters), its message, and whether it raised."""
    parser = make()
    events = list(parser.initial_events)
    try:
        for chunk in list("".join(chunks)) if by_char else chunks:
            events += parser.feed(chunk)
        message, tail = parser.finalize()
    except Exception:
        return events, None, True
    return events + tail, message, False


def events_of_feeds(make: Any, chunks: list[str]) -> list[dict]:
    """The events of `chunks` fed to a fresh parser, without finalize."""
    parser = make()
    return list(parser.initial_events) + [event for chunk in chunks for event in parser.feed(chunk)]


def expected_text(template: dict, events: list[dict]) -> dict[str, list[tuple[str, list, str]]]:
    """The documented stream text of each field: its segments in order, joined as the policy says.

    A segment still open after `events` (the parser failed inside a later region) counts with the
    text it has routed so far, stripped as its value would be.
    """
    out: dict[str, list] = {}
    defaults = template.get("defaults") or {}
    for name, spec in template["fields"].items():
        key = "content" if name == "content" else "reasoning_content" if name in REASONING_FIELDS else None
        if key is None:
            continue
        join = spec.get("join") if spec.get("repeats") else None
        strip = (spec.get("content_args") or {}).get("strip", True)
        streams = spec.get("content", "text") == "text" and spec.get("transform") is None
        earlier = 1 if join is not None and isinstance(defaults.get(name), str) else 0
        parts, values, routed = [], [], None
        for event in (e for e in events if e["field"] == name):
            if event["type"] == "region_open":
                routed = []
            elif event["type"] == "region_chunk":
                routed.append(event["text"])
            else:
                values.append(event["value"])
                if isinstance(event["value"], str):
                    parts.append((join if join is not None and earlier else "") + event["value"])
                earlier, routed = earlier + 1, None
        if routed is not None and streams:
            text = "".join(routed).strip() if strip else "".join(routed)
            parts.append((join if join is not None and earlier and text else "") + text)
        out.setdefault(key, []).append(("".join(parts), values, name))
    return out


def collect_deltas(deltas: list[dict]) -> tuple[dict[str, str], list[dict]]:
    """Concatenated text per key and the calls (id, name, arguments text), checking each delta's shape."""
    text = {"content": "", "reasoning_content": ""}
    calls: list[dict] = []
    for delta in deltas:
        assert len(delta) == 1, delta
        ((key, value),) = delta.items()
        if key in text:
            assert isinstance(value, str) and value, delta
            text[key] += value
            continue
        assert key == "tool_calls" and len(value) == 1, delta
        entry = value[0]
        if "id" in entry:
            assert entry["index"] == len(calls) and entry["type"] == "function", delta
            assert entry["function"]["arguments"] == "", delta
            calls.append({"id": entry["id"], "name": entry["function"]["name"], "arguments": ""})
        else:
            assert set(entry) == {"index", "function"} and list(entry["function"]) == ["arguments"], delta
            assert entry["function"]["arguments"] and entry["index"] == len(calls) - 1, delta
            calls[entry["index"]]["arguments"] += entry["function"]["arguments"]
    return text, calls


def unterminated(error: DeltaStreamError, shape: Any) -> bool:
    """The documented case of an xml string parameter cut off before its region ended."""
    if shape.mode != "xml" or error.reason not in ("mismatch", "cut_off"):
        return False
    return len(list(shape.xml.head.finditer(error.raw))) > len(list(shape.xml.tag.finditer(error.raw)))


def check_stream(template: dict, make: Any, chunks: list[str], **options: Any) -> str:
    """Run a DeltaStream over `make()` fed `chunks` and check every documented invariant; returns
    "ok" or the failure reason (only where the parser itself fails or the policy says so)."""
    events, message, raised = reference_events(make, chunks)
    deltas: list[dict] = []
    fed = 0
    try:
        stream = DeltaStream(make(), template=template, **options)
        for chunk in chunks:
            fed += 1
            deltas += stream.feed(chunk)
        fed += 1
        last, finish_reason = stream.finish()
        deltas += last
    except DeltaStreamError as error:
        deltas += error.deltas
        text, _ = collect_deltas(deltas)
        shape = shape_of(template["fields"]["tool_calls"]) if "tool_calls" in template["fields"] else None
        assert raised or unterminated(error, shape), f"unexpected {error.reason}: {error}"
        with pytest.raises(RuntimeError):
            stream.feed("x")
        # No content or reasoning is lost: the events a parser fed one character at a time gives
        # before the failure (it loses none but the failing close) are all in the deltas; after a
        # mismatch, those of every feed up to the failing one.
        if raised:
            before, _, _ = reference_events(make, chunks, by_char=True)
        elif fed > len(chunks):
            before = events
        else:
            before = events_of_feeds(make, chunks[:fed])
        for key, items in expected_text(template, before).items():
            assert text[key] == "".join(expected for expected, _, _ in items), (key, text[key], error)
        return error.reason
    assert not raised, "the parser raised but the stream did not"
    text, calls = collect_deltas(deltas)
    for key, items in expected_text(template, events).items():
        assert text[key] == "".join(expected for expected, _, _ in items), (key, text[key], items)
        for expected, values, name in items:
            if len(values) == 1 and isinstance(values[0], str):  # one segment: exactly the final value
                assert expected == message.get(name, ""), (name, expected, message)
    finals = [
        c
        for e in events
        if e["type"] == "region_close" and e["field"] == "tool_calls"
        for c in flat_calls(e["value"])
    ]
    assert [c["name"] for c in calls] == [call_parts(c)[1] for c in finals], (calls, finals)
    for got, final in zip(calls, finals):
        call_id, _, arguments = call_parts(final)
        assert same_value(json.loads(got["arguments"]), arguments), (got, final)
        assert got["id"] == call_id if isinstance(call_id, str) else GENERATED_ID.match(got["id"]), got
    generated = [c["id"] for c in calls if GENERATED_ID.match(c["id"])]
    assert len(set(generated)) == len(generated)  # ids the template gives may repeat, as the model wrote them
    spec = template["fields"].get("tool_calls")
    regions = sum(1 for e in events if e["type"] == "region_close" and e["field"] == "tool_calls")
    if spec is not None and (spec.get("repeats") or regions <= 1):
        assert [call_parts(c)[1] for c in flat_calls(message.get("tool_calls", []))] == [
            c["name"] for c in calls
        ]
    assert finish_reason == ("tool_calls" if calls else "stop")
    assert same_value(stream.message, message) and [c["id"] for c in stream.calls] == [c["id"] for c in calls]
    return "ok"


# -- every template and preset, every chunking ------------------------------------------------------


@st.composite
def chunked(draw: st.DrawFn, text: str) -> list[str]:
    if not text:
        return []
    if draw(st.booleans()):
        step = draw(st.integers(1, 8))
        return [text[i : i + step] for i in range(0, len(text), step)]
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=20))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)]) if a < b]


def random_tools(rng: st.DrawFn, message: dict) -> list[dict]:
    kinds = ["integer", "number", "boolean", "string", "array", "object", "null", ["string", "integer"]]
    tools = []
    for call in flat_calls(message.get("tool_calls", [])):
        _, name, arguments = call_parts(call)
        if isinstance(name, str) and isinstance(arguments, dict):
            properties = {key: {"type": rng(st.sampled_from(kinds))} for key in arguments}
            tools.append(
                {"type": "function", "function": {"name": name, "parameters": {"properties": properties}}}
            )
    return tools


# JSON bodies in the json parser's dialect (`unquoted_keys`, `string_delims` `<|`/`|>`).
SPACES = st.sampled_from(["", "", " ", "  ", "\n"])
DIALECT_STRINGS = st.sampled_from(
    ['"Paris"', '"a,b: c"', '"x\\"y,k:1"', '"{q:1}"', "<|Oslo, d: e|>", '"é"', "<|x|>"]
)


@st.composite
def dialect_values(draw: st.DrawFn, depth: int = 2) -> str:
    kind = draw(st.sampled_from(["string", "string", "number", "object"] if depth else ["string", "number"]))
    if kind == "string":
        return draw(DIALECT_STRINGS)
    if kind == "number":
        return draw(st.sampled_from(["1", "-2.5", "true", "null"]))
    return draw(dialect_objects(depth - 1))


@st.composite
def dialect_objects(draw: st.DrawFn, depth: int = 2) -> str:
    """A JSON object in the dialect: bare keys (spaced around in places), strings in either delimiter."""
    members = []
    for key in draw(st.lists(st.sampled_from(["city", "n", "note", "k_2", "é"]), max_size=3, unique=True)):
        written = key if draw(st.booleans()) else f'"{key}"'
        members.append(f"{draw(SPACES)}{written}{draw(SPACES)}:{draw(SPACES)}{draw(dialect_values(depth))}")
    return "{" + ",".join(members) + draw(SPACES) + "}"
