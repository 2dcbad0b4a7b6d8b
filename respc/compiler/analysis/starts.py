"""The characters a regex delimiter's matches start with, and the literal text they all start with.

If no character of a chunk can start a watched delimiter and nothing is held, the oracle's pass just
routes the chunk; the generated parser then skips scanning. That is only sound when the set truly covers
every match (and every partial match), so a pattern outside the shared syntax (Unicode properties, POSIX
or nested sets, fuzzy matching, inline flags, assertions, `.`) gets no set and its state always scans.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from respc.compiler.analysis.syntax import MAXREPEAT, is_plain, parse, plain_items

__all__ = [
    "Unknown",
    "first_chars",
    "first_chars_of",
    "item_kind",
    "lazy_tail",
    "leading_literals",
    "leading_texts",
    "literal_alternatives",
    "literal_prefix",
    "literal_strings",
    "looked_at_strings",
    "match_first_chars",
    "overlap",
    "run_tail",
    "sequence",
]

_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
END = ("end",)  # the end of the text, in the position sets of `respc.compiler.analysis.empty`


class Unknown(Exception):
    """The pattern may start with any character, or uses syntax outside the analysed subset."""


def sequence(items: Any) -> tuple[set[str], bool]:
    """Class items that any match of `items` starts with, and whether `items` can match empty."""
    found: set[str] = set()
    for op, av in items:
        first, nullable = _item(str(op), av)
        found |= first
        if not nullable:
            return found, False
    return found, True


def _class_item(kind: str, value: Any) -> str:
    if kind == "LITERAL":
        return regex.escape(chr(value))
    if kind == "RANGE":
        return regex.escape(chr(value[0])) + "-" + regex.escape(chr(value[1]))
    if kind == "CATEGORY" and str(value) in _CATEGORIES:
        return _CATEGORIES[str(value)]
    raise Unknown  # NEGATE and anything else


def _item(op: str, av: Any) -> tuple[set[str], bool]:
    if op == "LITERAL":
        return {regex.escape(chr(av))}, False
    if op == "IN":
        return {_class_item(str(kind), value) for kind, value in av}, False
    if op == "SUBPATTERN":
        if av[1] or av[2]:  # inline flags such as (?i:...)
            raise Unknown
        return sequence(av[3])
    if op == "ATOMIC_GROUP":
        return sequence(av)
    if op == "BRANCH":
        found, nullable = set(), False
        for branch in av[1]:
            first, empty = sequence(branch)
            found |= first
            nullable = nullable or empty
        return found, nullable
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        first, nullable = sequence(av[2])
        return first, nullable or av[0] == 0
    raise Unknown  # ANY, NOT_LITERAL, AT, ASSERT, GROUPREF...


def first_chars(pattern: str) -> set[str] | None:
    """Regex class items covering the first character of every match and partial match, if known."""
    if not is_plain(pattern):
        return None
    try:
        first, nullable = sequence(parse(pattern))
    except (Unknown, re.error, RecursionError, OverflowError, ValueError):
        return None
    return None if nullable else first


def match_first_chars(pattern: str) -> set[str] | None:
    """`first_chars`, reading a branch that starts with a lookahead `(?=X)` (Kimi-K2's
    `</think>|(?=<\\|tool_calls_section_begin\\|>)`) by X's first characters: the character at such a
    match's start, and at a partial match's, must be one of them. For the fast modes' facts only: a scan
    decision (a lead split) reads the pattern as written."""
    items = plain_items(pattern)
    return None if items is None else _ahead_first(list(items))


def _ahead_first(items: list) -> set[str] | None:
    if len(items) == 1 and str(items[0][0]) == "BRANCH":
        found: set[str] = set()
        for branch in items[0][1][1]:
            first = _ahead_first(list(branch))
            if first is None:
                return None
            found |= first
        return found
    found: set[str] = set()
    for op, av in items:
        if str(op) == "ASSERT" and av[0] == 1:
            # A lookahead after items that may match nothing (`\s*(?:<\|python_tag\|>\s*)?(?=\{)`): a match
            # there starts with one of their first characters or with one of the lookahead's.
            ahead = first_chars_of(av[1])
            return None if ahead is None else found | ahead
        try:
            first, nullable = _item(str(op), av)
        except (Unknown, RecursionError):
            return None
        found |= first
        if not nullable:
            return found
    return None  # (it can match the empty string: any character may follow)


def first_chars_of(items: Any) -> set[str] | None:
    """`first_chars` of an already parsed pattern."""
    try:
        first, nullable = sequence(items)
    except (Unknown, RecursionError):
        return None
    return None if nullable else first


def literal_prefix(pattern: str) -> str:
    """The literal text every match of `pattern` starts with ("" when unknown).

    An end-of-stream scan finds it with `str.find` before running the regex: no match can start before
    its first occurrence, and none at all if it does not occur.
    """
    items = plain_items(pattern)
    if items is None:
        return ""
    prefix = []
    for op, av in items:
        if str(op) != "LITERAL":
            break
        prefix.append(chr(av))
    return "".join(prefix)


def literal_strings(pattern: str, limit: int = 16) -> tuple[str, ...] | None:
    r"""Every string `pattern` can match, when it is made only of literals, alternations, groups and
    classes of literal characters and they are at most `limit` (a literal alternation such as
    `<\|im_end\|>|<\|endoftext\|>`); None otherwise."""
    items = plain_items(pattern)
    if items is None:
        return None
    found = _expand_strings(items, limit)
    return None if found is None else tuple(dict.fromkeys(found))


def _expand_strings(items: Any, limit: int) -> list[str] | None:
    """Every string the parsed `items` can match (`literal_strings`), or None."""
    found = [""]
    for op, av in items:
        kind = str(op)
        if kind == "LITERAL":
            options = [chr(av)]
        elif kind == "IN" and all(str(k) == "LITERAL" for k, _ in av):
            options = [chr(v) for _, v in av]
        elif kind == "BRANCH":
            options = []
            for branch in av[1]:
                more = _expand_strings(branch, limit)
                if more is None:
                    return None
                options += more
        elif kind == "SUBPATTERN" and not av[1] and not av[2]:  # a group without inline flags
            options = _expand_strings(av[3], limit)
            if options is None:
                return None
        else:
            return None
        found = [head + tail for head in found for tail in options]
        if len(found) > limit:
            return None
    return found


def looked_at_strings(pattern: str, limit: int = 16) -> tuple[str, ...] | None:
    r"""Texts one of which the text at every match of `pattern` starts with, for an alternation whose every
    branch is literal strings (`literal_strings`) or a lookahead of literal strings, perhaps followed by
    more (`</s>|(?=\[TOOL_CALLS\])`: the text at an empty match there starts with `[TOOL_CALLS]`). A
    partial match at a position is then a proper prefix of one running to the text's end, or holds one.
    At most `limit` texts, none empty; None otherwise (a lookahead first inside a group, a negative one,
    inline flags)."""
    items = plain_items(pattern)
    if items is None or items.state.flags & ~(re.DOTALL | re.UNICODE):
        return None
    data = list(items.data)
    branches = (
        [list(branch) for branch in data[0][1][1]]
        if len(data) == 1 and str(data[0][0]) == "BRANCH"
        else [data]
    )
    found: list[str] = []
    for branch in branches:
        if branch and str(branch[0][0]) == "ASSERT" and branch[0][1][0] == 1:
            strings = _expand_strings(list(branch[0][1][1]), limit)
        else:
            strings = _expand_strings(branch, limit)
        if not strings or not all(strings):
            return None
        found += strings
    found = list(dict.fromkeys(found))
    return tuple(found) if len(found) <= limit else None


def leading_literals(pattern: str, limit: int = 4) -> tuple[str, ...] | None:
    r"""Texts one of which every match of `pattern` starts with, read over the optional groups it opens with:
    step3's `(?:<｜tool_calls_begin｜>\s*)?(?:<｜tool_sep｜>\s*)?<｜tool_call_begin｜>...` starts with one
    of those three (`leading_texts`). At most `limit` of them; None otherwise (an alternation, a class, an
    anchor or a lookaround first)."""
    items = plain_items(pattern)
    if items is None or items.state.flags & ~(re.DOTALL | re.UNICODE):
        return None
    found = leading_texts(list(items.data))
    return tuple(dict.fromkeys(found)) if found is not None and len(found) <= limit else None


def leading_texts(items: list) -> list[str] | None:
    """Texts one of which every match of the parsed `items` starts with: the literal each optional group
    it opens with starts with (a match either takes the group, whose body starts with that literal, so
    it is not empty, or goes on to the next item), then the literal the first item that is not optional
    starts, which must be one; None otherwise."""
    found: list[str] = []
    for at, (op, av) in enumerate(items):
        kind = str(op)
        if kind == "LITERAL":
            found.append(_leading_literal(items[at:]))
            return found
        if kind not in ("MAX_REPEAT", "MIN_REPEAT") or av[0] != 0 or av[1] != 1:
            return None
        body = list(av[2])
        if len(body) == 1 and str(body[0][0]) == "SUBPATTERN" and not body[0][1][1] and not body[0][1][2]:
            body = list(body[0][1][3])  # (a capturing group without inline flags)
        literal = _leading_literal(body)
        if not literal:
            return None
        found.append(literal)
    return None  # every item optional: a match may start with anything that follows


def _leading_literal(items: list) -> str:
    """The text of the LITERAL items `items` starts with."""
    text = []
    for op, av in items:
        if str(op) != "LITERAL":
            break
        text.append(chr(av))
    return "".join(text)


def literal_alternatives(pattern: str) -> tuple[str, ...] | None:
    r"""The strings of a pattern that is an alternation of literals and nothing else (Qwen's
    `(?:<\|im_end\|>|<\|endoftext\|>)`: no groups, no flags), in the order a match at one position
    tries them (`literal_strings` expands in that order), when there are two or more; None otherwise.
    Its leftmost match is then the earliest occurrence of any of them, the first in that order on a tie,
    which `str.find` tells without a regex search."""
    items = plain_items(pattern)
    if items is None or items.state.groups != 1 or items.state.flags & ~(re.DOTALL | re.UNICODE):
        return None
    strings = literal_strings(pattern)
    if strings is None or len(strings) < 2 or not all(strings):
        return None
    return strings


_LOOKING = {"AT", "ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS"}


def _looks_around(items: Any) -> bool:
    """Whether the parse `items` hold an anchor, a boundary, a lookaround or a back-reference anywhere."""
    for op, av in items:
        if str(op) in _LOOKING:
            return True
        for part in av if isinstance(av, (list, tuple)) else ():
            if hasattr(part, "data") and _looks_around(part.data):
                return True
            if isinstance(part, list) and any(hasattr(p, "data") and _looks_around(p.data) for p in part):
                return True
    return False


def lazy_tail(pattern: str) -> tuple[str, str] | None:
    """`(head, literal)` when `pattern` is written `head.*?literal` (matched with DOTALL): a head that
    looks at nothing but the text it matches (no anchor, boundary, lookaround or back-reference, so a
    match of it at a position stays one whatever follows), then a lazy run of anything, then a literal.
    Once the head has matched where a held partial match starts, the held text stays a partial match (or
    a complete one up to its end) while the literal does not occur in it. None for any other pattern."""
    at = pattern.rfind(".*?")
    if at <= 0 or not is_plain(pattern):
        return None
    head, rest = pattern[:at], pattern[at + 3 :]
    strings = literal_strings(rest)
    if not strings or len(strings) != 1 or not strings[0]:
        return None
    try:
        whole, items = parse(pattern), parse(head)
    except Exception:
        return None
    # The split must be the parse's: `head` a whole pattern, then `.*?`, then the literal, at the top.
    expected = [*items.data, *parse(".*?").data, *parse(rest).data]
    if repr(list(whole.data)) != repr(expected) or not items.data or _looks_around(items.data):
        return None
    return head, strings[0]


def run_tail(pattern: str) -> tuple[str, str, str, int] | None:
    """`(head, literal, stops, least)` when `pattern` is written head, then a run of at least `least` of
    any character but `stops` (`[^"]+`, `[^>\\n]*?`, perhaps a group), then `literal`, which starts with
    one of `stops` (Qwen's `<function=(?P<name>[^>\\n]+)>`, DeepSeek's `(?P<name>[^\\n]+)\\n```json\\n`);
    the head as `lazy_tail`'s (it looks at nothing past its match); `lazy_tail`'s own patterns give
    `(head, literal, "", 0)`.

    Once the head has matched at `pos`, to `pos + offset`, held text from `pos` is a partial match of
    the pattern while the text after the head is a run of non-stops of at least `least` characters (or
    all of it is one), then a proper prefix of the literal, and the literal occurs nowhere in it: the run
    cannot take a stop, so it ends at the first one, which must start the literal; and every complete
    match holds the literal, so none starts anywhere in the text either (the `regex` module's partial
    search prefers one to a partial match). None for any other pattern."""
    lazy = lazy_tail(pattern)
    if lazy is not None:
        return lazy[0], lazy[1], "", 0
    if not is_plain(pattern):
        return None
    try:
        whole = parse(pattern)
    except Exception:
        return None
    items = list(whole.data)
    # The literal: the trailing LITERAL items; the run: the item before them (perhaps in a plain group).
    end = len(items)
    while end and str(items[end - 1][0]) == "LITERAL":
        end -= 1
    if end < 2 or end == len(items):
        return None
    literal = "".join(chr(av) for _, av in items[end:])
    stops = _negated_literals(items[end - 1])
    if stops is None or (stops[1] and literal[0] not in stops[1]):
        return None
    least, stops = stops
    head = items[: end - 1]
    if _looks_around(head):
        return None
    # The head as text: the pattern up to where the run begins, which must parse to exactly those items.
    for at in range(len(pattern) - 1, 0, -1):
        if pattern[at] not in "([":
            continue
        try:
            rest = list(parse(pattern[at:]).data)  # (its group numbers start again: compare what it reads)
            if (
                repr(list(parse(pattern[:at]).data)) == repr(head)
                and len(rest) == len(items) - end + 1
                and _negated_literals(rest[0]) == (least, stops)
                and repr(rest[1:]) == repr(items[end:])
            ):
                return pattern[:at], literal, "".join(sorted(stops)), least
        except Exception:
            continue
    return None


def _negated_literals(item: Any) -> tuple[int, set[str]] | None:
    """`(least, stops)` for a repeat (greedy or lazy, no upper bound, perhaps in a plain group) of one
    class that takes every character but some literal ones (`.`, DOTALL: all of them); else None."""
    op, av = str(item[0]), item[1]
    if op == "SUBPATTERN":
        if av[1] or av[2] or len(av[3].data) != 1:  # inline flags
            return None
        op, av = str(av[3].data[0][0]), av[3].data[0][1]
    if op not in ("MAX_REPEAT", "MIN_REPEAT") or av[1] != MAXREPEAT or len(av[2]) != 1:
        return None
    kind, value = str(av[2][0][0]), av[2][0][1]
    if kind == "ANY":  # (DOTALL: any character at all)
        return av[0], set()
    if kind == "NOT_LITERAL":
        return av[0], {chr(value)}
    if kind != "IN" or not value or str(value[0][0]) != "NEGATE":
        return None
    if not all(str(k) == "LITERAL" for k, _ in value[1:]) or len(value) < 2:
        return None
    return av[0], {chr(v) for _, v in value[1:]}


def item_kind(item: str) -> tuple[str, str]:
    """A class item from `first_chars`: ("char", c) for one (possibly escaped) character, else
    ("class", item) for a range or category."""
    if len(item) == 1 or (len(item) == 2 and item[0] == "\\" and not item[1].isalnum()):
        return ("char", item[-1])
    return ("class", item)


def overlap(a: Any, b: Any) -> bool:
    """Whether two sets of `item_kind`s (and `END`) may share a character (true when unsure).

    The very end of the text is left out: transformers never commits a zero-width match there (the
    stream may still grow, and at its end the pass stops), so `\\Z` against `\\Z` cannot loop.
    """
    for kind_a, *rest_a in a - {END}:
        for kind_b, *rest_b in b - {END}:
            if kind_a == "char" and kind_b == "char":
                if rest_a[0] == rest_b[0]:
                    return True
            elif kind_a == "char" or kind_b == "char":
                char, item = (rest_a[0], rest_b[0]) if kind_a == "char" else (rest_b[0], rest_a[0])
                if regex.fullmatch("[" + item + "]", char):
                    return True
            else:
                return True  # two ranges or categories: not worth proving apart
    return False
