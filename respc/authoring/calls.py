"""How a chat template writes tool calls, read off its renderings of the probe calls, as the `tool_calls`
field of a response template.

Each probe call's name and arguments are known, so the rendering shows where the call sits and how its
arguments are encoded. The formats recognised, in the order tried:

- `json`: one JSON object per call, with the name and the arguments at two of its keys;
- `json-array`: one JSON array holding every call's object;
- `python`: a Python-style list of calls, `[name(key=value, ...)]` (python-call-list, transformers 5.24);
- `named-json`: the name written before a JSON object of the arguments (`name<sep>{...}`);
- `named-dialect`: the same with unquoted keys and strings between a special delimiter (Gemma 4);
- `xml`: the name in an opening tag and one tag per argument, values as text (`<parameter=key>value`).

Where the call is wrapped (`<tool_call>...</tool_call>`, a section around all calls) is read by comparing
the text around one call and around two. A format the template writes in a way no content parser reads
back (Python dicts, unquoted strings, a type attribute per value) is refused with the reason.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from respc.authoring.causes import bracketed, inexpressible_calls
from respc.authoring.check import same_value
from respc.authoring.layout import MARKUP, Refusal, common_prefix, common_suffix
from respc.authoring.probes import Rendering

__all__ = ["CallFormat", "read_calls"]


@dataclass
class CallFormat:
    """The `tool_calls` field to write, text the implicit content's close must take (a section's end), and
    the evidence."""

    field: dict[str, Any]
    swallowed: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


@dataclass
class _Spot:
    """Where one call of one rendering sits: [start, end) is the call's own text (the name or object first),
    `kind` the format and `info` what the format read (keys, separators, delimiters)."""

    start: int
    end: int
    kind: str
    info: dict[str, Any]


def _calls(rendering: Rendering) -> list[dict]:
    return [c["function"] for c in rendering.probe.turn.get("tool_calls") or []]


def _decode_at(text: str, at: int) -> tuple[Any, int] | None:
    try:
        return json.JSONDecoder().raw_decode(text, at)
    except ValueError:
        return None


def _json_object(text: str, call: dict, start: int) -> _Spot | None:
    """A JSON object holding the call's name and arguments at two keys."""
    at = text.find("{", start)
    while at >= 0:
        decoded = _decode_at(text, at)
        if decoded is not None and isinstance(decoded[0], dict):
            obj, end = decoded
            name_key = next((k for k, v in obj.items() if v == call["name"]), None)
            args_key = next(
                (k for k, v in obj.items() if k != name_key and same_value(v, call["arguments"])), None
            )
            if name_key is not None and args_key is None:
                as_string = [
                    k for k, v in obj.items() if isinstance(v, str) and _decodes_to(v, call["arguments"])
                ]
                if as_string:
                    raise Refusal(
                        f"the chat template writes the arguments as a JSON string (key {as_string[0]!r}): a "
                        "transform cannot parse a string into an object"
                    )
            if name_key is not None and args_key is not None:
                return _Spot(at, end, "json", {"name_key": name_key, "args_key": args_key, "keys": list(obj)})
        at = text.find("{", at + 1)
    return None


def _decodes_to(text: str, value: Any) -> bool:
    try:
        return same_value(json.loads(text), value)
    except ValueError:
        return False


def _json_array(text: str, spot: _Spot, calls: list[dict]) -> _Spot | None:
    """The JSON array around a call's object, holding every call of the turn."""
    before = text[: spot.start].rstrip()
    if not before.endswith("["):
        return None
    at = len(before) - 1
    decoded = _decode_at(text, at)
    if decoded is None or not isinstance(decoded[0], list) or len(decoded[0]) != len(calls):
        return None
    info = spot.info
    for item, call in zip(decoded[0], calls):
        if not isinstance(item, dict) or item.get(info["name_key"]) != call["name"]:
            return None
        if not same_value(item.get(info["args_key"]), call["arguments"]):
            return None
    return _Spot(at, decoded[1], "json-array", info)


def _python_list(text: str, calls: list[dict]) -> _Spot | None:
    """A Python-style list of every call of the turn."""
    from respc.runtime.content import parse_content
    from respc.runtime.targets import get_target

    match = re.search(r"\[\s*" + re.escape(calls[0]["name"]) + r"\s*\(", text)
    if match is None:
        return None
    listed = bracketed(text, match.start())
    if listed is None:
        return None
    end = match.start() + len(listed)
    try:
        parsed = parse_content(listed, "python-call-list", {}, get_target("5.24"))
    except ValueError:
        return None
    if len(parsed) != len(calls) or not all(
        p["name"] == c["name"] and same_value(p["arguments"], c["arguments"]) for p, c in zip(parsed, calls)
    ):
        return None
    return _Spot(match.start(), end, "python", {})


def _named(text: str, call: dict, start: int, hints: dict[str, Any]) -> _Spot | None:
    """The name, then the arguments as JSON or as a JSON dialect (unquoted keys, special string quotes)."""
    name_at = text.find(call["name"], start)
    if name_at < 0:
        return None
    after = name_at + len(call["name"])
    if text[name_at - 1 : name_at] == '"' and text[after:].startswith('":'):
        raise Refusal(
            f"the chat template writes the function name as a JSON object key ({text[name_at - 1 : after + 2]}...): "
            "a transform reads values at fixed keys and cannot turn a key into the name"
        )
    at = text.find("{", after)
    while at >= 0:
        decoded = _decode_at(text, at)
        if decoded is not None and same_value(decoded[0], call["arguments"]):
            return _Spot(name_at, decoded[1], "named-json", {"between": text[after:at]})
        dialect = _dialect(text, at, call["arguments"], hints)
        if dialect is not None:
            end, args = dialect
            return _Spot(name_at, end, "named-dialect", {"between": text[after:at], "args": args})
        at = text.find("{", at + 1)
    return None


def _dialect(text: str, at: int, arguments: dict, hints: dict[str, Any]) -> tuple[int, dict] | None:
    """A JSON dialect object at `at` that json's `unquoted_keys` and `string_delims` read as `arguments`;
    the string quote is read next to a string argument, or taken from `hints` (an earlier call)."""
    from respc.runtime.content import parse_content
    from respc.runtime.targets import get_target

    args = hints.get("dialect")
    strings = [v for v in arguments.values() if isinstance(v, str) and v]
    if strings:
        value_at = text.find(strings[0], at)
        head = re.search(r"[:,\[]\s*([^\s:,\[{]+)$", text[at:value_at]) if value_at >= 0 else None
        if head is None or head.group(1) == '"':
            return None
        args = {"unquoted_keys": True, "string_delims": [[head.group(1), head.group(1)]]}
    if args is None:
        return None
    end = text.find("}", at)
    while end >= 0:
        try:
            value = parse_content(text[at : end + 1], "json", args, get_target(None))
        except ValueError:
            value = None
        if value is not None and same_value(value, arguments):
            hints["dialect"] = args
            return end + 1, args
        end = text.find("}", end + 1)
    return None


def _xml(text: str, call: dict, start: int, hints: dict[str, Any]) -> _Spot | None:
    """The name, then one tag per argument: key and value written as text between fixed strings."""
    name_at = text.find(call["name"], start)
    items = list(call["arguments"].items())
    if name_at < 0 or not items:
        return None
    at = name_at + len(call["name"])
    middles, first_key, last_value = set(), None, None
    for key, value in items:
        key_at = text.find(key, at)
        if key_at < 0:
            return None
        if value == "":  # found where the others' key-to-value text says it is
            middle = hints.get("xml_middle")
            if middle is None or not text.startswith(middle, key_at + len(key)):
                return None
            at = last_value = key_at + len(key) + len(middle)
            first_key = key_at if first_key is None else first_key
            continue
        found = next(
            (
                (v_at, shown)
                for shown in _value_texts(value)
                for v_at in [text.find(shown, key_at + len(key))]
                if v_at >= 0
            ),
            None,
        )
        if found is None:
            return None
        value_at, shown = found
        middles.add(text[key_at + len(key) : value_at])
        first_key = key_at if first_key is None else first_key
        at = last_value = value_at + len(shown)
    if len(middles) == 1:
        hints.setdefault("xml_middle", next(iter(middles)))
    name_tail = text[name_at + len(call["name"]) : first_key]
    key_open = name_tail[name_tail.rfind("<") :] if "<" in name_tail else ""
    value_close = MARKUP.match(text[last_value:].lstrip())
    if not key_open or value_close is None:
        return None
    end = text.find(value_close.group(), last_value) + len(value_close.group())
    return _Spot(
        name_at,
        end,
        "xml",
        {
            "middles": middles,
            "name_tail": name_tail[: len(name_tail) - len(key_open)],
            "key_open": key_open,
            "value_close": value_close.group(),
        },
    )


def _value_texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return list(dict.fromkeys([json.dumps(value, ensure_ascii=False), str(value), repr(value)]))


_READERS = {"named-json": _named, "named-dialect": _named, "xml": _xml}


def _find(
    rendering: Rendering, text: str, kind: str | None, hints: dict[str, Any]
) -> tuple[list[_Spot], str]:
    """The spot of each call of a rendering in its turn text, and the format: `kind` when known (from an
    earlier rendering), else each format in order."""
    calls = _calls(rendering)
    if kind in (None, "json", "json-array"):
        first = _json_object(text, calls[0], 0)
        if first is not None:
            array = _json_array(text, first, calls)
            if array is not None and kind in (None, "json-array"):
                return [array], "json-array"
            spots, at = [], 0
            for call in calls:
                spot = _json_object(text, call, at)
                if spot is None:
                    break
                spots.append(spot)
                at = spot.end
            if len(spots) == len(calls) and kind in (None, "json"):
                return spots, "json"
    if kind in (None, "python"):
        python = _python_list(text, calls)
        if python is not None:
            return [python], "python"
    readers = [_named, _xml] if kind is None else [_READERS[kind]] if kind in _READERS else []
    for reader in readers:
        spots, at = [], 0
        for call in calls:
            spot = reader(text, call, at, hints)
            if spot is None:
                break
            spots.append(spot)
            at = spot.end
        if len(spots) == len(calls) and (
            kind is None or spots[0].kind == kind or {kind, spots[0].kind} <= {"named-json", "named-dialect"}
        ):
            return spots, spots[0].kind
    return [], ""


def _cut_at_markup_end(prefix: str) -> str:
    """`prefix` cut back to the end of its last markup token (or to itself when it ends with one)."""
    ends = [m.end() for m in MARKUP.finditer(prefix)]
    return prefix[: ends[-1]] if ends else ""


def _cut_at_markup_start(suffix: str) -> str:
    starts = [m.start() for m in MARKUP.finditer(suffix)]
    return suffix[starts[0] :] if starts else ""


def _pattern(text: str) -> str:
    """A regex for `text` with each run of whitespace as `\\s*`."""
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s*" if part.isspace() else re.escape(part) for part in parts if part)


def _varying(texts: list[str]) -> str:
    """A regex for texts that differ only in a middle part (an id, an index): that part becomes `.*?`."""
    distinct = sorted(set(texts))
    if len(distinct) == 1:
        return _pattern(distinct[0].strip()) if distinct[0].strip() else ""
    head = _cut_at_markup_end(common_prefix(distinct))
    tail = _cut_at_markup_start(common_suffix(distinct))
    return _pattern(head) + ".*?" + _pattern(tail)


def _name_class(texts: list[str]) -> str:
    """A character class for a name followed by any of `texts`: no whitespace, nor their first character."""
    stops = {t.lstrip()[:1] for t in texts if t.lstrip()}
    return "[^\\s" + "".join(sorted(re.escape(s) for s in stops)) + "]+"


def read_calls(
    renderings: list[Rendering],
    turns: dict[str, str],
    lead_before: dict[str, int],
    end_tokens: list[str],
    target: str,
) -> CallFormat | None:
    """The tool_calls field for the renderings with calls (None when no rendering has one).
    `lead_before[probe]` is where in the turn text the calls' own text may start (after the content and
    the reasoning the turn writes first); `end_tokens` end the turn."""
    with_calls = [r for r in renderings if r.probe.turn.get("tool_calls")]
    if not with_calls:
        return None
    # the simplest call first: its format is the one every other rendering must show
    with_calls.sort(key=lambda r: (not r.probe.name.startswith("tool_call"), r.probe.name))
    found: dict[str, list[_Spot]] = {}
    kind, hints = None, {}
    for r in with_calls:
        text = turns[r.probe.name]
        spots, seen = _find(r, text, kind, hints)
        if not spots:
            strings = tuple(v for c in _calls(r) for v in c["arguments"].values() if isinstance(v, str))
            reason = inexpressible_calls(text, strings)
            how = f"in the {kind} format of the other calls" if kind else "in a known tool-call format"
            raise Refusal(
                reason or f"the chat template does not write the calls of {r.probe.name} {how}: {text!r}"
            )
        found[r.probe.name] = spots
        kind = kind or seen
    evidence = [f"tool calls: {kind} format"]
    if kind == "xml":
        _refuse_typed_tags(found)
    leads, trails, betweens = [], [], []
    for r in with_calls:
        text, spots = turns[r.probe.name], found[r.probe.name]
        leads.append(text[lead_before.get(r.probe.name, 0) : spots[0].start])
        trails.append(_without_end(text[spots[-1].end :], end_tokens))
        betweens += [text[a.end : b.start] for a, b in itertools.pairwise(spots)]
    spots = [spot for spot_list in found.values() for spot in spot_list]
    if kind in ("json-array", "python"):
        return _list_field(kind, spots, leads, trails, end_tokens, evidence, target)
    return _call_field(kind, spots, leads, trails, betweens, end_tokens, evidence)


def _without_end(trail: str, end_tokens: list[str]) -> str:
    """`trail` without the end-of-turn token it ends with."""
    stripped = trail.rstrip()
    for token in sorted(end_tokens, key=len, reverse=True):
        if stripped.endswith(token):
            return stripped[: len(stripped) - len(token)]
    return stripped


def _refuse_typed_tags(found: dict[str, list[_Spot]]) -> None:
    middles = {
        re.sub(r"\s+", " ", m) for spots in found.values() for spot in spots for m in spot.info["middles"]
    }
    if len(middles) > 1:
        raise Refusal(
            "the chat template writes a different text between an argument's key and its value depending on the "
            f"value ({sorted(middles)}): it carries the value's type, and a value parser cannot branch on it"
        )


def _wrapping(leads: list[str], trails: list[str], betweens: list[str]) -> tuple[str, str, str, str]:
    """(section open, call open, call close, section close): the text before and after one call, split by
    the text between two calls into what wraps each call and what wraps all of them."""
    lead = common_suffix(leads)
    trail = common_prefix(trails)
    if not betweens:
        return "", lead.strip(), _cut_at_markup_end(trail).strip() or trail.strip(), ""
    between = common_prefix(betweens) if len(set(betweens)) > 1 else betweens[0]
    shared = common_suffix([lead, between])
    call_open = _cut_at_markup_start(shared) or shared.strip()
    shared = common_prefix([trail, between])
    call_close = _cut_at_markup_end(shared) or shared.strip()
    section_open = lead[: lead.rfind(call_open)] if call_open else lead
    section_close = trail[trail.find(call_close) + len(call_close) :] if call_close else trail
    return section_open.strip(), call_open.strip(), call_close.strip(), section_close.strip()


def _call_field(
    kind: str,
    spots: list[_Spot],
    leads: list[str],
    trails: list[str],
    betweens: list[str],
    end_tokens: list[str],
    evidence: list[str],
) -> CallFormat:
    section_open, call_open, call_close, section_close = _wrapping(leads, trails, betweens)
    opener = _pattern(call_open)
    if section_open:
        opener = rf"(?:{_pattern(section_open)}\s*)?" + opener
    field: dict[str, Any] = {"repeats": True}
    if kind == "json":
        info = spots[0].info
        if opener:
            field["open_pattern"] = r"\s*" + opener
        else:
            # nothing written before the call: it can only be recognised at the start of the turn
            field["open_pattern"] = r"^\s*(?=\{\s*" + re.escape(json.dumps(info["name_key"])) + r"\s*:)"
            evidence.append("a call has no opener: it is recognised only at the start of the turn")
        field["content"] = "json"
        if set(info["keys"]) == {"name", "arguments"}:
            field["transform"] = {"type": "function", "function": "{content}"}
        else:
            field["transform"] = {
                "type": "function",
                "function": {
                    "name": f"{{content.{info['name_key']}}}",
                    "arguments": f"{{content.{info['args_key']}}}",
                },
            }
        evidence.append(
            f"a call: a JSON object after {call_open!r}, its name at {info['name_key']!r}, its arguments at "
            f"{info['args_key']!r}"
        )
    else:
        if not opener:
            raise Refusal("the chat template writes a call's name with nothing before it to open on")
        if kind == "xml":
            tails = [spot.info["name_tail"] + spot.info["key_open"] for spot in spots]
            after_name = common_prefix([spot.info["name_tail"] for spot in spots]).strip()
            field["open_pattern"] = r"\s*" + opener + f"(?P<name>{_name_class(tails)})" + _pattern(after_name)
            field["content"] = "xml-inline"
            field["content_args"] = {"tag_pattern": _tag_pattern(spots)}
        else:
            between = [spot.info["between"] for spot in spots]
            # the name stops where the text after it starts (the arguments' "{" when nothing comes between)
            stops = [text + "{" for text in between]
            field["open_pattern"] = r"\s*" + opener + f"(?P<name>{_name_class(stops)})" + _varying(between)
            field["content"] = "json"
            if kind == "named-dialect":
                field["content_args"] = spots[0].info["args"]
        field["transform"] = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
        evidence.append(f"a call: {call_open!r}, the name, then the arguments ({kind})")
    if call_close:
        field["close"] = call_close
        evidence.append(f"a call ends at {call_close!r}")
    else:
        ends = [*([call_open] if call_open else []), *end_tokens]
        if not ends:
            raise Refusal("a call has no close and nothing follows it to end it")
        lookahead = f"(?={_pattern(call_open)})|" if call_open else ""
        field["close_pattern"] = lookahead + "|".join(_pattern(t) for t in end_tokens)
        evidence.append("a call ends where the next one starts, or at the end of the turn")
    swallowed = [section_close] if section_close else []
    if section_open or section_close:
        evidence.append(f"the calls sit in a section: {section_open!r} ... {section_close!r}")
    return CallFormat(field, swallowed, evidence)


def _tag_pattern(spots: list[_Spot]) -> str:
    middle = sorted(spots[0].info["middles"], key=len)[0]
    key_open, value_close = spots[0].info["key_open"], spots[0].info["value_close"]
    # \s* around the value: the whitespace a template writes next to a value is layout, not value
    middle = _pattern(middle.rstrip()) + r"\s*"
    return _pattern(key_open) + "(?P<key>.+?)" + middle + r"(?P<value>.*?)\s*" + _pattern(value_close)


def _list_field(
    kind: str,
    spots: list[_Spot],
    leads: list[str],
    trails: list[str],
    end_tokens: list[str],
    evidence: list[str],
    target: str,
) -> CallFormat:
    lead = common_suffix(leads).strip()
    trail = _cut_at_markup_end(common_prefix(trails)).strip()
    field: dict[str, Any] = {"transform_each": True}
    if not lead:
        raise Refusal("the chat template writes the list of calls with nothing before it to open on")
    field["open_pattern"] = r"\s*" + _pattern(lead)
    if trail:
        field["close"] = trail
    elif end_tokens:
        field["close"] = end_tokens[0] if len(end_tokens) == 1 else list(end_tokens)
    if kind == "python":
        if target == "5.23":
            raise Refusal(
                "the calls are a Python-style list, which only transformers 5.24 parses (python-call-list)"
            )
        field["content"] = "python-call-list"
        field["transform"] = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
    else:
        info = spots[0].info
        field["content"] = "json"
        field["transform"] = {
            "type": "function",
            "function": {"name": f"{{{info['name_key']}}}", "arguments": f"{{{info['args_key']}}}"},
        }
    evidence.append(f"calls: one {kind} after {lead!r}, up to {field.get('close', 'the end of the turn')!r}")
    return CallFormat(field, [], evidence)
