r"""Regex delimiters whose matches never depend on text after them (transformers 5.24's recheck).

5.24 commits a streaming regex match that ends before the buffer's edge only if it "survives extension":
matched again at its start on the buffer plus one character, it keeps its span and named groups. That
costs a second match per commit. For a pattern that reads no character past its match, the answer is
always yes, and the generated scan leaves the recheck out.

`stable_end` proves it for a subset: a sequence of literal characters, single-character classes, groups
(without inline flags) of such sequences, alternations of literal strings none of which is a prefix of
another, repeats of one single-character class that the next item cannot start with (a negated class
that excludes its characters included; or that end the pattern), and optional groups of such a
sequence that starts with a literal no text a match of what follows can start with is comparable to
(`(?:<｜tool_calls_begin｜>\s*)?<｜tool_call_begin｜>`). Each item then has one way to match at a
position, found by looking at no character past its match except, for a repeat, the one character that
stops it, which lies inside the text when the match ends before the text's end (an optional group's
literal fails, if it does, inside what follows it). Anchors, boundaries, lookarounds and back-references
look past the match (or at the end of the text) and are refused, as is anything outside the shared
syntax.
"""

from __future__ import annotations

from typing import Any

import regex

from respc.compiler.analysis.starts import (
    _CATEGORIES,
    Unknown,
    _leading_literal,
    item_kind,
    leading_texts,
    literal_strings,
    sequence,
)
from respc.compiler.analysis.syntax import is_plain, parse

__all__ = ["stable_end"]

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_ONE = ("LITERAL", "NOT_LITERAL", "IN", "ANY")  # items matching one character
_EVERY = "\x00a0 \n<|\xe9\u4e00\U0001f600"  # a class matching all of these is taken to match anything


def stable_end(pattern: str) -> bool:
    """Whether every match of `pattern` (DOTALL) that ends before the end of the text stays the same match,
    groups included, however the text goes on (see the module docstring); False when unsure."""
    if not is_plain(pattern):
        return False
    try:
        items = list(parse(pattern))
        while len(items) == 1 and str(items[0][0]) == "SUBPATTERN":
            items = list(items[0][1][3])
        if len(items) == 1 and (str(items[0][0]) in _ONE or str(items[0][0]) in _REPEATS):
            # A lone one-character item, or a repeat of one: `regex`'s partial search at the end of the
            # text answers a match spanning (end, end - 1) for `.`, `.+?` or `[\s\S]{1,2}?` there, which
            # 5.24's recheck refuses. Such delimiters are rare: they keep the recheck.
            return False
        if _may_start_with_anything(items):
            return False  # likewise for `.b` or `[\s\S]+?x` at the end (`.` is taken as any character there)
        return _stable(items, set())
    except Exception:  # Unknown, or anything Python's parser reads that the analysis did not foresee
        return False


def _stable(items: list, follow: set[str] | None) -> bool:
    """Whether each item of `items` has one way to match, given `follow`: the class items (as
    `respc.compiler.analysis.starts.sequence` writes them) that what comes after `items` may start with
    (empty when only the end of the pattern can; None when unknown)."""
    for index, (op, av) in enumerate(items):
        kind = str(op)
        if kind in _ONE:
            continue  # one character: matched or not
        if kind == "BRANCH":
            strings = literal_strings(_source_of_branch(av))
            if not strings or any(a != b and b.startswith(a) for a in strings for b in strings):
                return False
            continue
        rest = items[index + 1 :]
        try:
            after, nullable = sequence(rest) if rest else (set(), True)
            after_follow = (None if follow is None else after | follow) if nullable else after
        except Unknown:  # (what follows is outside the analysed subset: no repeat may end before it)
            after_follow = None
        if kind == "SUBPATTERN":
            if av[1] or av[2] or not _stable(list(av[3]), after_follow):  # (inline flags: refused)
                return False
        elif kind in _REPEATS:
            low, high, body = av
            body = list(body)
            if len(body) != 1 or str(body[0][0]) not in _ONE:
                if (
                    low == 0
                    and high == 1
                    and kind != "POSSESSIVE_REPEAT"
                    and _optional(body, rest, after_follow)
                ):
                    continue
                return False
            if (
                low != high
                and (after_follow is None or not _disjoint(body[0], after_follow))
                and not _excluded_next(body[0], rest)
            ):
                return False  # (a fixed count has no choice)
        else:
            return False  # AT, ASSERT, ASSERT_NOT, GROUPREF, ATOMIC_GROUP...
    return True


def _excluded_next(item: tuple, rest: list) -> bool:
    r"""Whether `rest` must start with a character of a negated class that excludes every character the
    one-character `item` matches: `\s*` before `(?P<name>[^\s<]+)` (GLM's tool call opening), which the
    class items of `sequence` do not write."""
    if not rest:
        return False
    op, av = rest[0]
    while str(op) == "SUBPATTERN" and not av[1] and not av[2] and av[3]:
        op, av = next(iter(av[3]))
    if str(op) in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        if av[0] < 1 or len(av[2]) != 1:
            return False
        op, av = next(iter(av[2]))
    if str(op) == "NOT_LITERAL":
        return str(item[0]) == "LITERAL" and item[1] == av
    if str(op) != "IN" or not av or str(av[0][0]) != "NEGATE":
        return False
    excluded = {(str(kind), str(value)) for kind, value in av[1:]}
    if str(item[0]) == "LITERAL":
        return ("LITERAL", str(item[1])) in excluded
    if str(item[0]) != "IN" or not item[1] or str(item[1][0][0]) == "NEGATE":
        return False
    return all((str(kind), str(value)) in excluded for kind, value in item[1])


def _optional(body: list, rest: list, follow: set[str] | None) -> bool:
    """Whether `(?:body)?` (or `??`), followed by `rest`, has one way to match: the body starts with a
    literal that none of the texts every match of `rest` starts with is comparable to (neither is a prefix
    of the other), so no match can both take the body and skip it, and the body has one way to match
    itself. Where the body fails, it fails at a character that `rest`'s match holds."""
    if len(body) == 1 and str(body[0][0]) == "SUBPATTERN":
        if body[0][1][1] or body[0][1][2]:  # (inline flags)
            return False
        body = list(body[0][1][3])
    head = _leading_literal(body)
    texts = leading_texts(rest)
    if not head or texts is None or any(t.startswith(head) or head.startswith(t) for t in texts):
        return False
    return _stable(body, follow)


def _may_start_with_anything(items: list) -> bool:
    r"""Whether the first character of a match of `items` may be matched by an item that matches any
    character (`.`, `[\s\S]`), looking through groups, repeats and alternatives (True when unsure)."""
    for op, av in items:
        kind = str(op)
        if kind in _ONE:
            return all(_matches((op, av), char) for char in _EVERY)
        if kind == "SUBPATTERN":
            inners = [list(av[3])]
        elif kind in _REPEATS:
            inners = [list(av[2])]
        elif kind == "BRANCH":
            inners = [list(branch) for branch in av[1]]
        else:
            return True  # unsure
        if any(_may_start_with_anything(inner) for inner in inners):
            return True
        try:
            nullable = any(sequence(inner)[1] for inner in inners) or (kind in _REPEATS and av[0] == 0)
        except Unknown:
            return True
        if not nullable:
            return False  # this item takes the first character
    return False


def _source_of_branch(av: Any) -> str:
    """A pattern matching what the branch `av` matches, when it is made of literal characters only (for
    `literal_strings`); raises Unknown otherwise."""
    parts = []
    for branch in av[1]:
        chars = []
        for op, value in branch:
            if str(op) != "LITERAL":
                raise Unknown
            chars.append(regex.escape(chr(value)))
        parts.append("".join(chars))
    return "(?:" + "|".join(parts) + ")"


def _disjoint(item: tuple, follow: set[str]) -> bool:
    """Whether no character matched by the one-character `item` can start what follows (`follow`: class
    items; empty when nothing can follow but the end). Only single characters of `follow` are checked one
    by one; a range or category there is taken as overlapping."""
    for entry in follow:
        kind, value = item_kind(entry)
        if kind != "char" or _matches(item, value):
            return False
    return True


def _matches(item: tuple, char: str) -> bool:
    """Whether the one-character parse item `item` matches `char` (DOTALL: `.` matches everything)."""
    op, av = item
    kind = str(op)
    if kind == "LITERAL":
        return chr(av) == char
    if kind == "NOT_LITERAL":
        return chr(av) != char
    if kind == "ANY":
        return True
    negate = False
    found = False
    for sub, value in av:
        sub = str(sub)
        if sub == "NEGATE":
            negate = True
        elif sub == "LITERAL":
            found = found or chr(value) == char
        elif sub == "RANGE":
            found = found or value[0] <= ord(char) <= value[1]
        elif sub == "CATEGORY" and str(value) in _CATEGORIES:
            found = found or regex.fullmatch(_CATEGORIES[str(value)], char) is not None
        else:
            raise Unknown
    return found != negate
