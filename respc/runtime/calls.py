"""The `python-call-list` content parser (transformers 5.24): pythonic tool calls.

A region holding `[get_weather(city="Paris", days=3), f(x=[1, {"a": None}])]` becomes
`[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, ...]`. The grammar is deliberately
strict, and so is this parser: the same values and the same error messages (position included) as
transformers' `_python_call_list`, for every input. Keyword arguments only, no trailing commas; strings in
either quote without raw line breaks, with the escapes `\\\\ \\' \\" \\/ \\b \\f \\n \\r \\t` and `\\uXXXX`
(surrogate pairs joined, lone surrogates refused); JSON numbers, integers within ±(2^53 - 1) and 17
characters, floats that overflow refused; `True/true`, `False/false`, `None/null`; lists, and dicts
with string keys, nested at most 100 deep; no repeated argument or dict key; nothing after the `]`.
Whitespace between tokens is `[ \\t\\n\\r]*`.

It is written as functions of `(text, position)` returning `(value, position)`, with local variables on
the hot paths, rather than transformers' closures over a shared position: the same grammar, read once.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

    from respc.runtime.targets import Target

__all__ = ["parse_python_call_list"]

_SPACE = frozenset(" \t\n\r")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
# A quoted string: characters other than its quote, a backslash or a line break, or a backslash and any
# character. Written as an unrolled loop, which matches the same strings without backtracking.
_STRING = re.compile(
    r"'([^'\\\n\r]*(?:\\.[^'\\\n\r]*)*)'|\"([^\"\\\n\r]*(?:\\.[^\"\\\n\r]*)*)\"",
    re.DOTALL,
)
_SURROGATE = re.compile("[\ud800-\udfff]")

# The common case in one match: whitespace, a scalar (a string without backslashes or surrogates, a number,
# a constant) and whitespace up to the separator after it, after a keyword argument's `name =`, a dict
# key's `'key' :`, or nothing (a list item). Each piece is the grammar's own token: the separator right
# after the scalar proves the token ends where the step-by-step reader would end it (a name, a number or
# a constant cannot go on with whitespace or a separator), so a match reads what the reader reads. What
# does not match (escapes, nested values, errors, integers out of range, infinite floats) goes the step-
# by-step way from the same position, which gives its answers and its errors. For arguments and pairs the
# scalar and separator are optional: a match without them (`filters=` before a dict) has read the name (or
# key) and `=` (or `:`) as the reader would, and `_value` reads the value from there.
_WS = r"[ \t\n\r]*"
_DOUBLE, _SINGLE = r'"[^"\\\n\r\ud800-\udfff]*"', r"'[^'\\\n\r\ud800-\udfff]*'"  # no escape, no surrogate
_NUMBER_TEXT = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_CONSTANT_TEXT = r"True|False|None|true|false|null"
_KEY = f"\"({_DOUBLE[1:-1]})\"|'({_SINGLE[1:-1]})'"  # the same strings, their bodies captured
_SCALAR = rf"(?:{_KEY}|({_NUMBER_TEXT})|({_CONSTANT_TEXT}))"
_FAST_ARGUMENT = re.compile(rf"{_WS}(?P<name>{_NAME.pattern}){_WS}={_WS}(?:{_SCALAR}{_WS}(?P<end>[,)]))?")
_FAST_ITEM = re.compile(rf"{_WS}{_SCALAR}{_WS}(?P<end>[,\]])")
_FAST_PAIR = re.compile(rf"{_WS}(?:{_KEY}){_WS}:{_WS}(?:{_SCALAR}{_WS}(?P<end>[,}}]))?")
# The group numbers the loops read (indexing a match by number costs less than by name): the separator
# after the scalar, and where the scalar's four groups (_SCALAR: either string, number, constant) start,
# after an argument's name or a pair's key (_KEY: the body of either string).
_ARGUMENT_NAME, _ARGUMENT_END = _FAST_ARGUMENT.groupindex["name"], _FAST_ARGUMENT.groupindex["end"]
_ARGUMENT_SCALAR = _ARGUMENT_NAME + 1
_ITEM_SCALAR, _ITEM_END = 1, _FAST_ITEM.groupindex["end"]
_PAIR_DOUBLE, _PAIR_SINGLE, _PAIR_SCALAR, _PAIR_END = 1, 2, 3, _FAST_PAIR.groupindex["end"]
_FAST_CALL = re.compile(rf"{_WS}({_NAME.pattern}){_WS}\({_WS}")  # a call's name and "(": as in _FAST_ARGUMENT
_NOT_FAST = object()

# Commonest of all, a whole list whose calls take only such scalars (`[f(a=1, b='x'), g()]`): one `re`
# match proves the text is one, and one `findall` reads its tokens, a call's `name(` or an argument's
# `name = scalar`. Once the list has matched, the tokens are the grammar's (no token can start in the
# whitespace, commas and brackets between them, and each scalar is read whole as in the fast matches
# above). A name repeated in a call, an integer out of range or an infinite float: the reader answers.
_PLAIN_ARGUMENT = rf"{_NAME.pattern}{_WS}={_WS}(?:{_DOUBLE}|{_SINGLE}|{_NUMBER_TEXT}|{_CONSTANT_TEXT})"
_PLAIN_CALL = rf"{_NAME.pattern}{_WS}\({_WS}(?:{_PLAIN_ARGUMENT}(?:{_WS},{_WS}{_PLAIN_ARGUMENT})*{_WS})?\)"
_PLAIN_LIST = re.compile(rf"{_WS}\[{_WS}(?:{_PLAIN_CALL}(?:{_WS},{_WS}{_PLAIN_CALL})*{_WS})?\]{_WS}")
# Longer lists go to the reader: the match's backtracking state (about 170 bytes a character) would
# outweigh the time it saves.
_PLAIN_LIMIT = 16_384
_PLAIN_TOKEN = re.compile(rf"({_NAME.pattern}){_WS}(?:(\()|={_WS}{_SCALAR})")


def _scalar(match: re.Match, at: int) -> Any:
    """The scalar of a fast match whose groups `at`..`at + 3` are _SCALAR's, or _NOT_FAST where the
    step-by-step reader must answer (a number it refuses)."""
    if match[at] is not None:
        return match[at]
    if match[at + 1] is not None:
        return match[at + 1]
    number = match[at + 2]
    if number is None:
        return _CONSTANTS[match[at + 3]]
    return _number(number)


def _number(number: str) -> Any:
    """A number of a fast match, or _NOT_FAST where the step-by-step reader must answer."""
    if "." in number or "e" in number or "E" in number:
        value = float(number)
        return _NOT_FAST if value in _INFINITIES else value
    if len(number) > 17:
        return _NOT_FAST
    value = int(number)
    return _NOT_FAST if abs(value) > _MAX_INTEGER else value


_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_LOW_SURROGATE = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CONSTANTS = {"True": True, "true": True, "False": False, "false": False, "None": None, "null": None}
_MAX_INTEGER = 2**53 - 1
_MAX_DEPTH = 100
_INFINITIES = (float("inf"), float("-inf"))


class _Failure(Exception):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def parse_python_call_list(text: str, args: dict, target: Target) -> list[dict]:
    """Parse a list of keyword-argument calls into `[{"name": ..., "arguments": {...}}, ...]`."""
    if (
        type(text) is str
        and len(text) <= _PLAIN_LIMIT
        and "\\" not in text  # (an escape, a nested dict or list: it would not match, after a long try)
        and "{" not in text
        and text.count("[") == 1
        and _PLAIN_LIST.fullmatch(text) is not None
    ):
        calls = _plain_call_list(text)
        if calls is not None:
            return calls
    if not isinstance(text, str):
        # Upstream's first step is its whitespace pattern's match (a `regex` pattern), whose TypeError for
        # anything but a string (an xml-inline value group that did not take part: None) is the one raised.
        import regex  # only on this path: importing it costs ~15 ms

        regex.compile(r"[ \t\n\r]*").match(text, 0)
    try:
        return _call_list(text)
    except _Failure as failure:
        raise ValueError(
            f"python-call-list: {failure.message} at position {failure.position}.\nContent: {text!r}"
        ) from None


def _plain_call_list(text: str) -> list[dict] | None:
    """The calls of a text `_PLAIN_LIST` matches, or None where the reader must answer."""
    calls = []
    arguments: dict = {}
    for name, paren, double, single, number, constant in _PLAIN_TOKEN.findall(text):
        if paren:
            arguments = {}
            calls.append({"name": name, "arguments": arguments})
        elif name in arguments:
            return None
        elif number:
            value = _number(number)
            if value is _NOT_FAST:
                return None
            arguments[name] = value
        elif constant:
            arguments[name] = _CONSTANTS[constant]
        else:
            arguments[name] = double or single  # (both empty for an empty string)
    return calls


def _skip(text: str, pos: int) -> int:
    end = len(text)
    while pos < end and text[pos] in _SPACE:
        pos += 1
    return pos


def _call_list(text: str) -> list[dict]:
    # (`_skip`, inlined: most lists have a space only after each comma, which _FAST_CALL reads.)
    end = len(text)
    pos = 0
    while pos < end and text[pos] in _SPACE:
        pos += 1
    if not text.startswith("[", pos):
        raise _Failure("expected '['", pos)
    pos = _skip(text, pos + 1)
    calls = []
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            call, pos = _call(text, pos)
            calls.append(call)
            while pos < end and text[pos] in _SPACE:
                pos += 1
            if text.startswith("]", pos):
                pos += 1
                break
            if not text.startswith(",", pos):
                raise _Failure("expected ','", pos)
            pos += 1
    while pos < end and text[pos] in _SPACE:
        pos += 1
    if pos != end:
        raise _Failure("unexpected content after the closing ']'", pos)
    return calls


def _call(text: str, pos: int) -> tuple[dict, int]:
    """One call from `pos`: the common case (scalar arguments, each one fast match, no name repeated) read
    here with as little Python as it takes, and from the first argument that is not, step by step."""
    head = _FAST_CALL.match(text, pos)
    if head is None:
        return _call_stepwise(text, pos)
    arguments: dict = {}
    at = head.end()
    if text.startswith(")", at):
        return {"name": head[1], "arguments": arguments}, at + 1
    match = _FAST_ARGUMENT.match
    while True:
        fast = match(text, at)
        if fast is None:
            break
        key, double, single, number, constant, separator = fast.groups()
        if separator is None:
            break  # not a scalar: `_arguments` reads it
        if double is not None:
            value = double
        elif single is not None:
            value = single
        elif number is None:
            value = _CONSTANTS[constant]
        else:
            value = _number(number)
            if value is _NOT_FAST:
                break
        if key in arguments:
            break
        arguments[key] = value
        if separator == ")":
            return {"name": head[1], "arguments": arguments}, fast.end()
        at = fast.end()
    # (A repeated name is read again there and kept: `_unique` fails after the call, as the reader does.)
    return _arguments(text, at, head[1], list(arguments.items()))


def _call_stepwise(text: str, pos: int) -> tuple[dict, int]:
    head = _FAST_CALL.match(text, pos)
    if head is not None:
        name, pos = head[1], head.end()
    else:
        pos = _skip(text, pos)
        match = _NAME.match(text, pos)
        if match is None:
            raise _Failure("expected a function name", pos)
        name = match[0]
        pos = _skip(text, match.end())
        if not text.startswith("(", pos):
            raise _Failure("expected '('", pos)
        pos = _skip(text, pos + 1)
    if text.startswith(")", pos):
        return {"name": name, "arguments": {}}, pos + 1
    return _arguments(text, pos, name, [])


def _arguments(text: str, pos: int, name: str, pairs: list) -> tuple[dict, int]:
    """The keyword arguments of a call from `pos` (an argument's start) to its `)`, after `pairs`."""
    while True:
        fast = _FAST_ARGUMENT.match(text, pos)
        if (
            fast is not None
            and fast[_ARGUMENT_END] is not None
            and (value := _scalar(fast, _ARGUMENT_SCALAR)) is not _NOT_FAST
        ):
            pairs.append((fast[_ARGUMENT_NAME], value))
            pos = fast.end()
            if fast[_ARGUMENT_END] == ")":
                break
            continue
        if fast is not None and fast[_ARGUMENT_END] is None:
            key = fast[_ARGUMENT_NAME]  # `name =` read: a value that is not a scalar follows
            value, pos = _value(text, fast.end(), 0)
        else:
            pos = _skip(text, pos)
            match = _NAME.match(text, pos)
            if match is None:
                raise _Failure(
                    "expected a keyword argument (positional arguments and trailing commas are not supported)",
                    pos,
                )
            key = match[0]
            pos = _skip(text, match.end())
            if not text.startswith("=", pos):
                raise _Failure("expected '=' (positional arguments are not supported)", pos)
            value, pos = _value(text, pos + 1, 0)
        pairs.append((key, value))
        pos = _skip(text, pos)
        if text.startswith(")", pos):
            pos += 1
            break
        if not text.startswith(",", pos):
            raise _Failure("expected ','", pos)
        pos += 1
    return {"name": name, "arguments": _unique(pairs, pos)}, pos


def _unique(pairs: list[tuple[str, Any]], pos: int) -> dict:
    """The pairs as a dict; a repeated name fails at `pos`, just after the closing bracket."""
    out = dict(pairs)
    if len(out) == len(pairs):  # no name repeated: the same dict, in the same order
        return out
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Failure(f"repeated name {key!r}", pos)
        out[key] = value
    return out


def _value(text: str, pos: int, depth: int) -> tuple[Any, int]:
    """A value nested in `depth` lists and dicts."""
    pos = _skip(text, pos)
    first = text[pos : pos + 1]
    if first == "'" or first == '"':
        return _string(text, pos)
    if first == "[" or first == "{":
        if depth >= _MAX_DEPTH:
            raise _Failure(f"lists and dicts nested more than {_MAX_DEPTH} levels deep", pos)
        if first == "[":
            return _list(text, pos + 1, depth + 1)
        return _dict(text, pos + 1, depth + 1)
    match = _NUMBER.match(text, pos)
    if match is not None:
        number = match[0]
        if match[1] is None and match[2] is None:
            # The length first, so that huge literals never reach int().
            if len(number) > 17 or abs(int(number)) > _MAX_INTEGER:
                raise _Failure("integer outside the range of -(2^53 - 1) to 2^53 - 1", pos)
            return int(number), match.end()
        value = float(number)
        if value in _INFINITIES:
            raise _Failure("number too large", pos)
        return value, match.end()
    match = _NAME.match(text, pos)
    if match is not None and match[0] in _CONSTANTS:
        return _CONSTANTS[match[0]], match.end()
    raise _Failure("expected a string, number, list, dict, True, False or None", pos)


def _list(text: str, pos: int, depth: int) -> tuple[list, int]:
    out: list = []
    pos = _skip(text, pos)
    if text.startswith("]", pos):
        return out, pos + 1
    while True:
        fast = _FAST_ITEM.match(text, pos)
        if fast is not None and (value := _scalar(fast, _ITEM_SCALAR)) is not _NOT_FAST:
            out.append(value)
            if fast[_ITEM_END] == "]":
                return out, fast.end()
            pos = fast.end()
            continue
        value, pos = _value(text, pos, depth)
        out.append(value)
        pos = _skip(text, pos)
        if text.startswith("]", pos):
            return out, pos + 1
        if not text.startswith(",", pos):
            raise _Failure("expected ','", pos)
        pos += 1


def _dict(text: str, pos: int, depth: int) -> tuple[dict, int]:
    pairs = []
    pos = _skip(text, pos)
    if text.startswith("}", pos):
        pos += 1
    else:
        while True:
            fast = _FAST_PAIR.match(text, pos)
            if (
                fast is not None
                and fast[_PAIR_END] is not None
                and (value := _scalar(fast, _PAIR_SCALAR)) is not _NOT_FAST
            ):
                double = fast[_PAIR_DOUBLE]
                pairs.append((double if double is not None else fast[_PAIR_SINGLE], value))
                pos = fast.end()
                if fast[_PAIR_END] == "}":
                    break
                continue
            if fast is not None and fast[_PAIR_END] is None:
                double = fast[_PAIR_DOUBLE]  # `'key' :` read: not a scalar follows
                key = double if double is not None else fast[_PAIR_SINGLE]
                value, pos = _value(text, fast.end(), depth)
            else:
                pos = _skip(text, pos)
                if not text.startswith(("'", '"'), pos):
                    raise _Failure("dict keys must be strings", pos)
                key, pos = _string(text, pos)
                pos = _skip(text, pos)
                if not text.startswith(":", pos):
                    raise _Failure("expected ':'", pos)
                value, pos = _value(text, pos + 1, depth)
            pairs.append((key, value))
            pos = _skip(text, pos)
            if text.startswith("}", pos):
                pos += 1
                break
            if not text.startswith(",", pos):
                raise _Failure("expected ','", pos)
            pos += 1
    return _unique(pairs, pos), pos


def _string(text: str, pos: int) -> tuple[str, int]:
    """A quoted string starting at `pos` (its errors name that position)."""
    match = _STRING.match(text, pos)
    if match is None:
        raise _Failure("invalid string", pos)
    body = match[1] if match[1] is not None else match[2]
    if _SURROGATE.search(body) is not None:
        raise _Failure("lone surrogate in the string starting", pos)
    backslash = body.find("\\")
    if backslash < 0:
        return body, match.end()
    out, start = [], 0
    while backslash >= 0:
        out.append(body[start:backslash])
        escaped = body[backslash + 1]
        start = backslash + 2
        if escaped in _ESCAPES:
            out.append(_ESCAPES[escaped])
        else:
            hex4 = _HEX4.match(body, backslash + 2) if escaped == "u" else None
            if hex4 is None:
                raise _Failure(
                    f"unsupported escape {body[backslash : backslash + 2]!r} in the string starting", pos
                )
            code, start = int(hex4[0], 16), hex4.end()
            if 0xD800 <= code <= 0xDBFF:
                low = _LOW_SURROGATE.match(body, start)
                if low is not None:
                    code, start = 0x10000 + ((code - 0xD800) << 10) + (int(low[1], 16) - 0xDC00), low.end()
            if 0xD800 <= code <= 0xDFFF:
                raise _Failure("lone surrogate escape in the string starting", pos)
            out.append(chr(code))
        backslash = body.find("\\", start)
    out.append(body[start:])
    return "".join(out), match.end()
