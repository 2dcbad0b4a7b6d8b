"""xml-inline tag patterns of the usual shape, matched with `str.find` instead of the `regex` engine.

Most templates write their tool-call parameters as one of

    <parameter=(?P<key>[^>\\n]+)>(?P<value>.*?)</parameter>
    <parameter=(?P<key>[^>\\n]+)>\\s*(?P<value>.*?)\\s*</parameter>
    <parameter name="(?P<key>[^"]+)">(?P<value>.*?)</parameter>

that is: a literal, the key as a run of characters outside a set, a literal that starts with one of those
characters, an optional `\\s*`, the value as `.*?`, an optional `\\s*` and a closing literal (which does not
start with whitespace where a `\\s*` is next to the value). For that shape the leftmost-first search that
`regex.finditer(..., DOTALL)` makes has one answer, found without backtracking (each step of `tag_rows`
says why), and `tag_rows` finds the same `(key, value)` rows in linear time, faster than the engine.
`tag_shape` recognises the shape from the pattern's source; any other pattern (or any doubt) is left to
`regex`.
"""

from __future__ import annotations

import re
from collections import namedtuple
from functools import lru_cache

__all__ = ["REGEX_SPACE", "TagShape", "tag_at", "tag_rows", "tag_shape"]

# What `regex` (Unicode, version 0) means by `\s`: Unicode's White_Space, which differs from `str.isspace`
# (U+001C-U+001F are space to Python only). tests/runtime/test_runtime.py checks this against `regex` itself.
REGEX_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_SPACE = frozenset(REGEX_SPACE)

# opening: the literal before the key; stops: the characters the key's run stops at; middle: the literal
# after the key; lead / trail: whether `\s*` comes before / after the value; closing: the literal after it.
TagShape = namedtuple("TagShape", "opening stops middle lead trail closing")

# A literal character of the pattern: anything but a metacharacter, a backslash before an ASCII character
# that is no letter or digit (that character), `\n` or `\t`. Inside the key's set, `-`, `[`, `^`, `&`, `|`
# and `~` are left out too (ranges, nested sets and version-1 set operations).
_PUNCTUATION = r"\x00-/:-@\[-`{-\x7f"
_LITERAL = rf"(?:[^\\.^$*+?{{}}\[\]()|]|\\[{_PUNCTUATION}]|\\[nt])"
_SET_ITEM = rf"(?:[^\\\]\[\-^&|~]|\\[{_PUNCTUATION}]|\\[nt])"
_SHAPE = re.compile(
    rf"(?P<opening>{_LITERAL}+)\(\?P<key>\[\^(?P<stops>{_SET_ITEM}+)\]\+\)(?P<middle>{_LITERAL}+)"
    rf"(?P<lead>\\s\*)?\(\?P<value>\.\*\?\)(?P<trail>\\s\*)?(?P<closing>{_LITERAL}+)",
    re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _unescape(source: str) -> str:
    return _ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), source)


def tag_shape(pattern: object) -> TagShape | None:
    """The shape of `pattern` (a tag_pattern's source), or None when it is not of the shape above."""
    if type(pattern) is not str:
        return None
    found = _SHAPE.fullmatch(pattern)
    if found is None:
        return None
    shape = TagShape(
        _unescape(found["opening"]),
        _unescape(found["stops"]),
        _unescape(found["middle"]),
        found["lead"] is not None,
        found["trail"] is not None,
        _unescape(found["closing"]),
    )
    # The key's run ends where the middle literal may start (else a shorter key would be tried); next to a
    # `\s*`, the closing literal does not start with whitespace (else the `\s*` would give way to it).
    if shape.middle[0] not in shape.stops or ((shape.lead or shape.trail) and shape.closing[0] in _SPACE):
        return None
    return shape


@lru_cache(maxsize=256)
def _head(shape: TagShape) -> re.Pattern[str]:
    r"""The opening, key and middle literal (and the `\s*` after it) as one `re` pattern, matched at an
    opening: the same key as `_rows_from` finds (the longest run outside `stops`, which a shorter one
    cannot replace), with the classes written out character by character (`REGEX_SPACE` for `\s`)."""
    stops = "".join(re.escape(char) for char in shape.stops)
    lead = "[" + "".join(re.escape(char) for char in REGEX_SPACE) + "]*" if shape.lead else ""
    return re.compile(f"{re.escape(shape.opening)}([^{stops}]+){re.escape(shape.middle)}{lead}", re.DOTALL)


def tag_rows(text: str, shape: TagShape) -> list[tuple[str, str]]:
    """The `(key, value)` of each match of the shape's pattern in `text`, as `regex.finditer` (DOTALL)
    finds them, left to right. Linear in the text.

    While every opening starts a match, one `re` match reads its key (fewer steps than `_rows_from`);
    at the first opening that does not, `_rows_from` takes over: its searches go on from where the last
    one stopped, where `re` would read a long key run again from each of many failing openings."""
    head = _head(shape).match
    opening, closing, trail, skip_close = shape.opening, shape.closing, shape.trail, len(shape.closing)
    find = text.find
    rows: list[tuple[str, str]] = []
    append = rows.append
    pos = 0
    while (start := find(opening, pos)) >= 0:
        found = head(text, start)
        if found is None:
            return _rows_from(text, shape, start, rows)
        value_start = found.end()
        close_at = find(closing, value_start)
        if close_at < 0:  # no closing literal after this value start, nor after any later one
            break
        value = text[value_start:close_at].rstrip(REGEX_SPACE) if trail else text[value_start:close_at]
        append((found[1], value))
        pos = close_at + skip_close
    return rows


def tag_at(text: str, shape: TagShape, start: int) -> tuple[str, int, str, int] | None:
    """The match of the shape's pattern at `start` (`regex`'s `match`, DOTALL) as (key, value start, value,
    end), or None: `tag_rows`' step for one opening, so a streamed value that has just ended is read with
    two searches instead of the engine's lazy walk over it (0.4 ms for an 8,000-character value)."""
    found = _head(shape).match(text, start)
    if found is None:
        return None
    value_start = found.end()
    close_at = text.find(shape.closing, value_start)
    if close_at < 0:
        return None
    value = text[value_start:close_at]
    return (
        found[1],
        value_start,
        value.rstrip(REGEX_SPACE) if shape.trail else value,
        close_at + len(shape.closing),
    )


def _rows_from(text: str, shape: TagShape, pos: int, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`rows` and the rows of the matches from `pos` on, found with `str.find` in linear time."""
    opening, stops, middle, lead, trail, closing = shape
    find = text.find
    n, skip_open, skip_middle, skip_close = len(text), len(opening), len(middle), len(closing)
    single = stops if len(stops) == 1 else None
    append = rows.append
    stop_at = -1  # the first stop character at or after the last key's start
    close_from = close_at = -1  # the first closing literal at or after close_from is at close_at
    while (start := find(opening, pos)) >= 0:
        key_start = start + skip_open
        # The key: the longest run of characters outside `stops` (non-empty), then the middle literal. A
        # shorter key would leave a character outside `stops` where the middle literal must start. Key
        # starts only grow, so a stop character found stays the first one until a key starts after it.
        if key_start > stop_at:
            if single is not None:
                stop_at = find(single, key_start)
            else:
                stop_at = n
                for char in stops:
                    found = find(char, key_start, stop_at)
                    if found >= 0:
                        stop_at = found
                stop_at = -1 if stop_at == n else stop_at
            if stop_at < 0:  # no stop character is left: no later key can end either
                break
        if stop_at == key_start or not text.startswith(middle, stop_at):
            pos = start + 1
            continue
        value_start = stop_at + skip_middle
        if lead:  # greedy; giving a character back cannot help as the closing literal is no space
            while value_start < n and text[value_start] in _SPACE:
                value_start += 1
        # The value: up to the first closing literal (a lazy `.*?`), less the whitespace before it that
        # `\s*` takes. Value starts only grow too.
        if not close_from <= value_start <= close_at:
            close_from, close_at = value_start, find(closing, value_start)
            if close_at < 0:  # no closing literal after this value start, nor after any later one
                break
        value = text[value_start:close_at].rstrip(REGEX_SPACE) if trail else text[value_start:close_at]
        append((text[key_start:stop_at], value))
        pos = close_at + skip_close
    return rows
