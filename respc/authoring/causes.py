"""Why a response template parses a probe wrong: the cause of a mismatch, named from the template, the
rendered output and the regions the parser closed, with the fix where one is known.

Cause ids (stable; `docs/authoring.md` explains each):

- `whitespace`: the value differs from the message only in whitespace.
- `end-token`: text the chat template writes after the value (an end-of-turn token) lands in the field.
- `unparsed`: text the chat template writes around the value lands in a field, or nothing captures it.
- `wrong-field`: the value lands in another field.
- `overwrite`: a later region of a field that is not `repeats` replaced an earlier one (for the implicit
  field, a whitespace-only segment between regions: quirk Q1).
- `dollar-close`: a delimiter that can match at `$` (the end of the text so far, or before a final
  newline) ended a field early or kept it open past its close; a stream reaches `$` at every chunk end.
- `close-in-value`: the field's close occurs inside the value, so it ended early.
- `type`: an argument has the right text but the wrong JSON type.
- `shape`: a tool call is not `{"type": "function", "function": {"name", "arguments"}}`.
- `role`: the message has no `role: assistant`.
- `inexpressible`: the chat template writes the value in a form no content parser reads back.
- `parse-error`: the parser raised and none of the above explains it.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from respc.spec import Spec

__all__ = [
    "ABSENT",
    "Cause",
    "Context",
    "bracketed",
    "diagnose",
    "diagnose_error",
    "diagnose_stream",
    "inexpressible_calls",
]


class _Absent:
    """The value of a key a message does not have."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()
_DOLLAR = re.compile(r"(?<!\\)(?:\\\\)*\$")  # an unescaped `$` in a regex source


@dataclass(frozen=True)
class Cause:
    """A named cause (`id`, see the module docstring), said in a sentence, and the fix where one is known."""

    id: str
    explanation: str
    fix: str | None = None


@dataclass(frozen=True)
class Context:
    """What a diagnosis reads: the loaded template, the rendered output, and the regions the whole-text
    parse closed, in order, as (field name, value)."""

    spec: Spec
    output: str
    closes: tuple[tuple[str, Any], ...] = ()
    expected: dict[str, Any] | None = None  # the message the output should parse into

    @property
    def tool_names(self) -> tuple[str, ...]:
        calls = (self.expected or {}).get("tool_calls") or []
        return tuple(call["function"]["name"] for call in calls)

    @property
    def string_values(self) -> tuple[str, ...]:
        """The string arguments of the expected calls."""
        calls = (self.expected or {}).get("tool_calls") or []
        return tuple(v for c in calls for v in c["function"]["arguments"].values() if isinstance(v, str))

    def owner(self, text: str, besides: str) -> str | None:
        """The field of the expected message (other than `besides`) whose text value `text` holds."""
        for key, value in (self.expected or {}).items():
            if key not in (besides, "role") and isinstance(value, str) and value and value in text:
                return key
        return None

    def field(self, name: str) -> Any:
        return next((f for f in self.spec.fields if f.name == name), None)


def _quoted(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def _around(output: str, value: str, width: int = 24) -> tuple[str, str] | None:
    """The text the chat template writes just before and after `value` in `output`."""
    start = output.find(value)
    if start < 0:
        return None
    return output[max(0, start - width) : start], output[start + len(value) : start + len(value) + width]


def _only_whitespace_differs(a: str, b: str) -> bool:
    return a != b and re.sub(r"\s+", "", a) == re.sub(r"\s+", "", b)


def diagnose(field: str, expected: Any, parsed: Any, context: Context) -> Cause | None:
    """The cause of one mismatch between the message and the parse (None when none can be named)."""
    if field == "role":
        return Cause("role", "the message has no role: assistant", 'add "defaults": {"role": "assistant"}')
    if field.startswith("tool_calls"):
        return _tool_calls(field, expected, parsed, context)
    return _text(field, expected, parsed, context)


def _text(field: str, expected: Any, parsed: Any, context: Context) -> Cause | None:
    where = f"Field '{field}'"
    if isinstance(expected, str) and isinstance(parsed, str) and _only_whitespace_differs(expected, parsed):
        return _whitespace(where, expected, parsed)
    if isinstance(parsed, str) and (expected is ABSENT or (isinstance(expected, str) and expected in parsed)):
        cause = _extra_text(field, "" if expected is ABSENT else expected, parsed, context)
        if cause is not None:
            return cause
    if isinstance(expected, str):
        return _lost_text(field, expected, parsed, context)
    return None


def _whitespace(where: str, expected: str, parsed: str) -> Cause:
    if len(parsed) > len(expected):
        return Cause(
            "whitespace",
            f"{where} keeps whitespace the message does not have ({_quoted(parsed)})",
            f"{where}: strip the value (content_args strip: true, the text parser's default), or take the "
            "whitespace into the delimiters",
        )
    return Cause(
        "whitespace",
        f"{where} loses whitespace of the value ({_quoted(parsed)} for {_quoted(expected)})",
        f"{where}: content_args strip: false, and keep the whitespace out of the delimiters",
    )


def _extra_text(field: str, expected: str, parsed: str, context: Context) -> Cause | None:
    """`parsed` holds `expected` (or nothing expected) plus text the chat template wrote around it."""
    where = f"Field '{field}'"
    before, _, after = parsed.partition(expected) if expected else ("", "", parsed)
    other = context.owner(before + after, field)
    if other is not None:
        return Cause(
            "wrong-field",
            f"'{field}' gets the message's {other} ({_quoted(parsed)}): the chat template writes the {other} "
            f"where the response template reads '{field}'",
            None,
        )
    if any(name in parsed for name in context.tool_names):
        return Cause(
            "unparsed",
            f"the tool-call text lands in '{field}' ({_quoted(after.strip() or before.strip())}): no field "
            "opens on it",
            "add a tool_calls field that opens on the text the chat template writes before a call",
        )
    tail = context.output.rstrip()
    if (
        after.strip()
        and not before.strip()
        and (expected + after).strip() in tail
        and tail.endswith(after.strip())
    ):
        token = after.strip()
        return Cause(
            "end-token",
            f"{where} runs on into {_quoted(token)}, which the chat template writes after the value (the end "
            "of the turn): no close of the field matches it",
            f"{where}: add {token!r} to its close (a literal list takes several)",
        )
    extra = (before + after).strip()
    if extra:
        return Cause(
            "unparsed",
            f"{where} gets {_quoted(extra)}, text the chat template writes around the value",
            f"open or close a field on {extra!r}, or let the start anchor take it",
        )
    return None


def _lost_text(field: str, expected: str, parsed: Any, context: Context) -> Cause | None:
    where = f"Field '{field}'"
    spec_field = context.field(field)
    closed = [value for name, value in context.closes if name == field]
    if spec_field is not None and not spec_field.repeats and len(closed) > 1:
        if any(isinstance(v, str) and expected.strip() in v for v in closed[:-1]):
            if spec_field.open is None:
                return Cause(
                    "overwrite",
                    f"a later implicit segment ({_quoted(closed[-1])}) replaced {_quoted(expected)}: the "
                    f"implicit field '{field}' is not repeats, so each segment overwrites the last (quirk Q1)",
                    r"start the other fields' opens and this field's close with \s* (whitespace between "
                    "regions then opens no segment), or make the field repeats with a join",
                )
            return Cause(
                "overwrite",
                f"a later '{field}' region replaced {_quoted(expected)}: the field is not repeats",
                f"{where}: repeats: true (with a join for text)",
            )
    close = spec_field.close if spec_field is not None else None
    if close is not None and isinstance(parsed, str) and expected.startswith(parsed.rstrip()):
        if close.literals and any(literal in expected for literal in close.literals):
            return Cause(
                "close-in-value",
                f"{where}'s close occurs inside the value, so the field ends at {_quoted(parsed)}",
                None,
            )
        if not close.literals and _DOLLAR.search(close.pattern):
            return Cause(
                "dollar-close",
                f"{where} closes at {_quoted(parsed)}: its close {close.pattern!r} matches at '$', which "
                "also matches before a final newline (and, before transformers 5.24, at a chunk edge)",
                r"close on \Z instead of $, or drop the $ alternative (a field without a close runs to the "
                "end of the stream)",
            )
    for name, value in context.closes:
        if name != field and isinstance(value, str) and expected.strip() in value:
            return Cause(
                "wrong-field",
                f"{_quoted(expected)} lands in '{name}' ({_quoted(value)}): '{name}' does not close before it",
                f"close '{name}' on the text the chat template writes between the two",
            )
    around = _around(context.output, expected)
    if around is not None:
        before, after = around
        return Cause(
            "unparsed",
            f"nothing captures {_quoted(expected)}: the chat template writes it between {before!r} and "
            f"{after!r}",
            f"a field '{field}' that opens on the text before it and closes on the text after it",
        )
    return None


def _same_text(expected: Any, parsed: Any) -> bool:
    """Whether two values of different JSON types are written alike (`"42"` and 42, 2 and 2.0, `"true"`
    and True, `"None"` and None)."""
    if type(expected) is type(parsed):
        return False
    texts = {json.dumps(expected, ensure_ascii=False), repr(expected), str(expected)}
    if isinstance(parsed, str):
        return parsed.strip() in texts
    if isinstance(expected, str):
        return json.dumps(parsed, ensure_ascii=False) == expected.strip() or repr(parsed) == expected.strip()
    numbers = (int, float)
    return isinstance(expected, numbers) and isinstance(parsed, numbers) and expected == parsed


def _tool_calls(field: str, expected: Any, parsed: Any, context: Context) -> Cause | None:
    spec_field = context.field("tool_calls")
    if field == "tool_calls":
        if parsed is ABSENT:
            return _calls_not_found(context)
        if isinstance(expected, list) and isinstance(parsed, list) and len(parsed) < len(expected):
            closed = [value for name, value in context.closes if name == "tool_calls"]
            if spec_field is not None and not spec_field.repeats and len(closed) > 1:
                return Cause(
                    "overwrite",
                    f"only the last of {len(closed)} tool_calls regions is kept: the field is not repeats",
                    "Field 'tool_calls': repeats: true",
                )
        return None
    if field.endswith("]") or field.endswith(".function") or field.endswith(".type"):
        return Cause(
            "shape",
            f"the call is {_quoted(json.dumps(parsed, ensure_ascii=False, default=str))}, not "
            '{"type": "function", "function": {"name", "arguments"}}',
            'Field \'tool_calls\': transform {"type": "function", "function": {"name": ..., "arguments": ...}}',
        )
    if field.endswith(".arguments") and isinstance(parsed, str):
        return Cause(
            "type",
            "the arguments are a string, not an object",
            "parse the arguments as JSON (content json) rather than text",
        )
    if isinstance(parsed, str) and isinstance(expected, (dict, list)) and _python_not_json(parsed.strip()):
        return Cause(
            "inexpressible",
            f"the chat template writes {field.rpartition('.')[2]!r} as a Python literal ({_quoted(parsed)}): "
            "json cannot read it and no content parser reads Python literals",
            None,
        )
    if _same_text(expected, parsed):
        if isinstance(parsed, str):
            fix = "pass tools= (the schema casts the text), or parse the value as JSON"
        else:
            fix = (
                "read values as text (no value_parser) and pass tools=, so the tool's schema decides the type"
            )
        return Cause(
            "type",
            f"{field.rpartition('.')[2]} is {type(parsed).__name__} {parsed!r}, the message has "
            f"{type(expected).__name__} {expected!r}",
            fix,
        )
    if isinstance(expected, str) and isinstance(parsed, str) and _only_whitespace_differs(expected, parsed):
        return _whitespace(f"argument {field.rpartition('.')[2]!r}", expected, parsed)
    return None


def _calls_not_found(context: Context) -> Cause | None:
    name = next((n for n in context.tool_names if n in context.output), None)
    if name is None:
        return None
    start = context.output.find(name)
    before = context.output[max(0, start - 30) : start]
    reason = inexpressible_calls(context.output, context.string_values)
    if reason is not None:
        return Cause("inexpressible", reason, None)
    return Cause(
        "unparsed",
        f"no field opens on the tool calls: the chat template writes {before!r} before {name!r}",
        "a tool_calls field that opens on the text before the call (repeats, one region per call)",
    )


def diagnose_error(error: BaseException, context: Context) -> Cause:
    """The cause of an exception from the parser (a content parser or transform that failed)."""
    message = str(error)
    first = message.splitlines()[0] if message else type(error).__name__
    body = _error_content(message)
    if isinstance(error, KeyError) or "transform placeholder" in message:
        return Cause(
            "shape",
            f"the transform reads a key the call does not have: {first}",
            "map the keys the chat template writes (see the rendered output) in the transform",
        )
    if "Required response_template fields missing" in message:
        return Cause("parse-error", first, "mark the field optional, or make the chat template write it")
    if body is not None:
        trailing = _trailing_after_json(body)
        if trailing:
            return Cause(
                "end-token",
                f"the region runs on into {trailing!r} after its JSON value: no close matches it",
                f"add {trailing!r} to the field's close",
            )
    reason = inexpressible_calls(body if body is not None else context.output, context.string_values)
    if reason is not None:
        return Cause("inexpressible", reason, None)
    if body is not None:
        for literal in _closes(context):
            if (
                literal in context.output
                and body
                and literal not in body
                and _value_cut(body, context.output, literal)
            ):
                return Cause(
                    "close-in-value",
                    f"the close {literal!r} occurs inside a value, so the region ended at {_quoted(body)}",
                    None,
                )
    return Cause("parse-error", f"{type(error).__name__}: {first}", None)


def _closes(context: Context) -> list[str]:
    return [
        lit
        for f in context.spec.fields
        if f.close is not None and f.close.literals
        for lit in f.close.literals
    ]


def _value_cut(body: str, output: str, literal: str) -> bool:
    """Whether the region body stops where `literal` occurs inside what the chat template wrote."""
    at = output.find(body)
    return at >= 0 and output.startswith(literal, at + len(body)) and output.count(literal) > 1


def _error_content(message: str) -> str | None:
    """The region body a content parser's error quotes (`Content: '...'`)."""
    match = re.search(r"Content: ('(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")", message)
    if match is None:
        return None
    try:
        return ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return None


def _trailing_after_json(body: str) -> str | None:
    text = body.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    rest = text[end:].strip()
    return rest or None


def inexpressible_calls(text: str, strings: tuple[str, ...] = ()) -> str | None:
    """Why tool calls written as `text` cannot be read back by any content parser, or None when they might:
    Python literals where JSON is expected, Python's None/True/False inside JSON, string arguments written
    without quotes or with their quote character unescaped (`strings`: the string values written),
    arguments without a separator between them."""
    for value in strings:
        for quote in "'\"":
            if quote in value and f"{quote}{value}{quote}" in text:
                return (
                    f"the chat template writes string arguments between {quote} quotes without escaping the "
                    f"{quote} inside them ({_quoted(quote + value + quote, 50)}): the text cannot be read back"
                )
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"' + r"|'(?:[^'\\]|\\.)*'", '""', text)
    if re.search(r"[{\[][^()]*?[:,\[]\s*(?:None|True|False)\s*[,}\]]", unquoted):
        return (
            "the chat template writes Python's None, True or False inside a JSON-like object "
            f"({_quoted(text, 50)}): the json parser cannot read them"
        )
    for opening in ("{", "["):
        start = text.find(opening)
        while start >= 0:
            candidate = bracketed(text, start)
            if candidate is not None and _python_not_json(candidate):
                return (
                    f"the chat template writes Python literals ({_quoted(candidate, 50)}) where JSON is "
                    "expected: json cannot read them, and no content parser reads Python dicts"
                )
            start = text.find(opening, start + 1)
    if re.search(r'(?:""|[\]}\d]|\b(?:true|false|null|True|False|None))[A-Za-z_]\w*=', unquoted):
        return (
            "the chat template writes arguments with no separator between them "
            f"({_quoted(text, 50)}): no content parser can split them"
        )
    if re.search(r"[(,]\s*[A-Za-z_]\w*=(?![\s\"'\[{\-\d]|True\b|False\b|None\b|true\b|false\b|null\b)", text):
        return (
            "the chat template writes string arguments without quotes "
            f"({_quoted(text, 50)}): strings, numbers and booleans look alike, so no content parser can "
            "read them back"
        )
    return None


def bracketed(text: str, start: int) -> str | None:
    """The bracketed span starting at `start`, by bracket counting that skips quoted strings."""
    depth, quote, escape = 0, None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _python_not_json(candidate: str) -> bool:
    try:
        json.loads(candidate)
        return False
    except ValueError:
        pass
    try:
        value = ast.literal_eval(candidate)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(value, (dict, list)) and bool(value)


def diagnose_stream(field: str, whole: Any, streamed: Any, context: Context) -> Cause | None:
    """The cause of a difference between the whole-text parse and the stream fed a character at a time:
    a delimiter that can match at `$` (the only pattern whose match depends on where a chunk ends; the
    field's own delimiters are named first)."""
    found = [
        (f.name, kind, anchor.pattern)
        for f in context.spec.fields
        for kind, anchor in (("open", f.open), ("close", f.close))
        if anchor is not None and not anchor.literals and _DOLLAR.search(anchor.pattern)
    ]
    if not found:
        return None
    name, kind, pattern = sorted(found, key=lambda item: item[0] != field)[0]
    return Cause(
        "dollar-close",
        f"streamed a character at a time, '{field}' is {streamed!r} where the whole text gives {whole!r}: the "
        f"{kind} of '{name}', {pattern!r}, matches at '$' (the end of the text so far, or before a final "
        "newline), which a stream reaches before the text there is complete",
        r"use \Z (the end of the whole text) instead of $, or a literal delimiter",
    )
