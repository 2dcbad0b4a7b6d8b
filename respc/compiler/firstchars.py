"""First-character sets of regex delimiters, for the skip-scan fast path.

If no character of a chunk can start a watched delimiter and nothing is held, the oracle's pass
just routes the chunk; the generated parser then skips scanning. That is only sound when the set
truly covers every match, so only syntax on which Python's regex parser and the `regex` module agree
is analysed; anything else (Unicode properties, POSIX or nested sets, fuzzy matching, inline flags,
assertions, `.`) gets no set and its state always scans.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import regex

try:  # Python's own regex parser gives the structure of the pattern
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

__all__ = ["empty_together", "first_chars", "literal_prefix", "may_match_empty"]

_BAD_ESCAPE = re.compile(r"\\[pPXNmMGKLhHvV]")  # escapes only the `regex` module knows, or reads otherwise
_ESCAPED = re.compile(r"\\.", re.DOTALL)
_BAD_SYNTAX = re.compile(
    r"\(\?(?!:|P<|P=|=|!|<=|<!|>|#)"  # inline flags, conditionals, branch reset... (lookarounds are shared)
    r"|\{(?![0-9]*,?[0-9]*\})"  # fuzzy matching and other non-repeat braces
    r"|\[\[|\[:|&&|\|\||--|~~"  # nested sets, POSIX classes, set operations
)


def _parse(pattern: str) -> Any:
    """Python's parse tree of `pattern`, without the FutureWarnings it gives for `regex`-module syntax
    such as `[[:alpha:]]` (those patterns are the `regex` module's to read; ours is only an analysis)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return sre_parse.parse(pattern, re.DOTALL)


class _NotPlain:
    """Syntax on which Python's regex parser and the `regex` module agree (escapes are neutralised
    before the structural checks, so `\\{` or `\\*` count as the characters they are)."""

    @staticmethod
    def search(pattern: str) -> bool:
        return bool(_BAD_ESCAPE.search(pattern) or _BAD_SYNTAX.search(_ESCAPED.sub("x", pattern)))


_NOT_PLAIN = _NotPlain()
_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
_EMPTY_PROBES = ("", "a", " ", "\n", "<", "0", "x y\nz", "@#!", "é思🙂", "A_1-")
_CAN_BE_EMPTY = re.compile(r"[*?]|\{0|\{,|\(\?[=!<]|[\^$]|\(\||\|\)|\|\||^\||\|$")  # with escapes neutralised
_ZERO_WIDTH_ESCAPE = re.compile(r"\\[bBAZzGKmM]")


class _Unknown(Exception):
    """The pattern may start with any character, or uses syntax outside the analysed subset."""


def _sequence(items: Any) -> tuple[set[str], bool]:
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
    raise _Unknown  # NEGATE and anything else


def _item(op: str, av: Any) -> tuple[set[str], bool]:
    if op == "LITERAL":
        return {regex.escape(chr(av))}, False
    if op == "IN":
        return {_class_item(str(kind), value) for kind, value in av}, False
    if op == "SUBPATTERN":
        if av[1] or av[2]:  # inline flags such as (?i:...)
            raise _Unknown
        return _sequence(av[3])
    if op == "ATOMIC_GROUP":
        return _sequence(av)
    if op == "BRANCH":
        found, nullable = set(), False
        for branch in av[1]:
            first, empty = _sequence(branch)
            found |= first
            nullable = nullable or empty
        return found, nullable
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        first, nullable = _sequence(av[2])
        return first, nullable or av[0] == 0
    raise _Unknown  # ANY, NOT_LITERAL, AT, ASSERT, GROUPREF...


def first_chars(pattern: str) -> set[str] | None:
    """Regex class items covering the first character of every match and partial match, if known."""
    if _NOT_PLAIN.search(pattern):
        return None
    try:
        first, nullable = _sequence(_parse(pattern))
    except (_Unknown, re.error, RecursionError, OverflowError, ValueError):
        return None
    return None if nullable else first


def literal_prefix(pattern: str) -> str:
    """The literal text every match of `pattern` starts with ("" when unknown).

    An end-of-stream scan finds it with `str.find` before running the regex: no match can start before
    its first occurrence, and none at all if it does not occur.
    """
    if _NOT_PLAIN.search(pattern):
        return ""
    try:
        items = _parse(pattern)
    except Exception:
        return ""
    prefix = []
    for op, av in items:
        if str(op) != "LITERAL":
            break
        prefix.append(chr(av))
    return "".join(prefix)


def may_match_empty(pattern: str) -> bool:
    """Whether the pattern can match the empty string somewhere (true when unsure)."""
    compiled = regex.compile(pattern, regex.DOTALL)
    for probe in _EMPTY_PROBES:
        for start in range(len(probe) + 1):
            match = compiled.search(probe, start)
            if match is not None and match.start() == match.end():
                return True
    if not _NOT_PLAIN.search(pattern):
        try:
            return _parse(pattern).getwidth()[0] == 0
        except Exception:
            pass
    # Syntax Python's parser reads differently (POSIX classes, \p{..}, fuzzy matching...): empty unless
    # nothing in the pattern can match without consuming a character.
    return bool(_CAN_BE_EMPTY.search(_ESCAPED.sub("x", pattern)) or _ZERO_WIDTH_ESCAPE.search(pattern))


_ANYWHERE = "anywhere"  # an empty match whose position nothing in the analysis restricts
_NEVER = "never"  # the pattern cannot match the empty string
_END = ("end",)


def _empty_where(items: Any) -> Any:
    """Where `items` can match the empty string, over-approximated by what must follow that position: a
    frozenset of ("char", c), ("class", item) and _END, or _ANYWHERE, or _NEVER. All items of an empty
    match sit at one position, so any one item's restriction holds for the whole sequence."""
    where: Any = _ANYWHERE
    for op, av in items:
        found = _empty_item(str(op), av)
        if found is _NEVER:
            return _NEVER
        if where is _ANYWHERE:
            where = found
    return where


def _empty_item(op: str, av: Any) -> Any:
    if op in ("LITERAL", "NOT_LITERAL", "IN", "ANY"):
        return _NEVER
    if op == "AT":
        at = str(av)
        if at == "AT_END":  # `$`: at the end, or before a newline that ends the text
            return frozenset({_END, ("char", "\n")})
        if at == "AT_END_STRING":
            return frozenset({_END})
        return _ANYWHERE
    if op == "ASSERT" and av[0] == 1:  # a lookahead: the next character starts its match
        first = first_chars_of(av[1])
        return _ANYWHERE if first is None else frozenset(_item_kind(item) for item in first)
    if op == "SUBPATTERN":
        return _ANYWHERE if av[1] or av[2] else _empty_where(av[3])
    if op == "ATOMIC_GROUP":
        return _empty_where(av)
    if op == "BRANCH":
        found: set = set()
        for branch in av[1]:
            where = _empty_where(branch)
            if where is _ANYWHERE:
                return _ANYWHERE
            if where is not _NEVER:
                found |= where
        return frozenset(found) if found else _NEVER
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return _ANYWHERE if av[0] == 0 else _empty_where(av[2])
    return _ANYWHERE  # lookbehinds, negative lookarounds, boundaries, group references...


def _item_kind(item: str) -> tuple[str, str]:
    """A class item from `first_chars`: one (possibly escaped) character, or a range or category."""
    if len(item) == 1 or (len(item) == 2 and item[0] == "\\" and not item[1].isalnum()):
        return ("char", item[-1])
    return ("class", item)


def first_chars_of(items: Any) -> set[str] | None:
    """`first_chars` of an already parsed pattern."""
    try:
        first, nullable = _sequence(items)
    except (_Unknown, RecursionError):
        return None
    return None if nullable else first


def _overlap(a: Any, b: Any) -> bool:
    # The very end of the text is left out: transformers never commits a zero-width match there (the
    # stream may still grow, and at its end the pass stops), so `\Z` against `\Z` cannot loop.
    for kind_a, *rest_a in a - {_END}:
        for kind_b, *rest_b in b - {_END}:
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


def empty_together(first: str, second: str) -> bool:
    """Whether two patterns may both match the empty string at one position (true when unsure).

    transformers' parser hangs when a field's open and close do (quirk Q5); a pair that can each match
    empty but never at the same place (`(?=z)` and `$`) parses every text, and is accepted.
    """
    if not (may_match_empty(first) and may_match_empty(second)):
        return False
    if _NOT_PLAIN.search(first) or _NOT_PLAIN.search(second):
        return True
    try:
        where = [_empty_where(_parse(p)) for p in (first, second)]
    except Exception:
        return True
    if _NEVER in where:  # Python's parser proves what the probes could not
        return False
    if _ANYWHERE in where:
        return True
    return _overlap(*where)


# Leading runs that many delimiters start with (the Qwen fallbacks' `\s*<tool_call>`), as
# (pattern prefix, class of one run character).
# The characters of each class are listed because the parser checks them with set membership (the
# `regex` module's call overhead dominates one-character checks); tests/test_runtime.py enumerates
# Unicode to prove each list equals what the `regex` module's class matches.
_LEADS = (
    (
        r"\s*",
        r"\s",
        "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
    ),
    (r"\n*", r"\n", "\n"),
    (r"[ \t]*", r"[ \t]", "\t "),
    (" *", " ", " "),
)
LEAD_CHARS = {run_class: chars for _, run_class, chars in _LEADS}


def split_lead(pattern: str) -> tuple[str, str] | None:
    """`(run class, rest)` when `pattern` is a run of one character class followed by `rest`.

    A match of such a pattern is a maximal run of the class ending where `rest` matches, so the
    parser can search for `rest` (which the `regex` module finds by its literal start) and walk
    back over the run, instead of trying the run at every position. That only holds when `rest`
    cannot start with a run character, which is checked on its literal first characters.
    """
    for prefix, run_class, _ in _LEADS:
        if not pattern.startswith(prefix) or len(pattern) == len(prefix):
            continue
        rest = pattern[len(prefix) :]
        if rest[0] in "*+?{" or _NOT_PLAIN.search(pattern):
            return None
        try:
            items = _parse(pattern)
        except Exception:
            return None
        if len(items) < 2 or str(items[0][0]) != "MAX_REPEAT":
            return None  # a top-level alternation: the run belongs to its first branch only
        first = first_chars(rest)
        # Only single characters (possibly escaped; `\\d`-style categories are not) can be checked here.
        if not first or not all(
            len(item) == 1 or (len(item) == 2 and not item[1].isalnum()) for item in first
        ):
            return None
        run = regex.compile(run_class)
        if any(run.fullmatch(item[-1]) for item in first):
            return None
        return run_class, rest
    return None


def _overlapping_branches(items: Any) -> bool:
    """Whether `items` is (a group around) an alternation two of whose branches can start alike, so
    that a repeat of it can split one text into iterations in many ways (`(?:a|aa)+`, `(?:\\s|\\n)*`)."""
    while len(items) == 1 and str(items[0][0]) == "SUBPATTERN":
        items = items[0][1][3]
    if len(items) != 1 or str(items[0][0]) != "BRANCH":
        return False
    starts = []
    for branch in items[0][1][1]:
        first = first_chars_of(branch)
        if first is not None:
            starts.append(frozenset(_item_kind(item) for item in first))
    return any(_overlap(a, b) for i, a in enumerate(starts) for b in starts[i + 1 :])


def _ambiguous_end(items: Any) -> bool:
    """Whether an iteration of `items` can end in an optional part that could also start the next
    iteration: `(?:a|aa)+`, which Python's parser reads as `(?:a(?:|a))+`, or `(?:aa?)+`."""
    start = first_chars_of(items)
    if not start:
        return False
    start_kinds = frozenset(_item_kind(item) for item in start)
    for index in range(len(items) - 1, -1, -1):
        op, av = items[index]
        op = str(op)
        if op in ("MAX_REPEAT", "MIN_REPEAT") and av[0] == 0:
            bodies = [av[2]]
        elif op == "BRANCH" and any(not branch for branch in av[1]):
            bodies = [branch for branch in av[1] if branch]
        else:
            bodies = []
        try:
            for body in bodies:
                first, _ = _sequence(body)
                if first and _overlap(frozenset(_item_kind(item) for item in first), start_kinds):
                    return True
            _, nullable = _sequence([items[index]])
        except (_Unknown, RecursionError):
            return False
        if not nullable:
            return False  # a required part ends every iteration: nothing optional can run into the next
    return False


def backtracking_risk(pattern: str) -> str | None:
    """Why `pattern` may backtrack exponentially (a repeat inside a repeat), or None.

    Heuristic and conservative in what it names: nested unbounded repeats such as `(a+)+` or
    `(?:\\s*x?)*`, the classic catastrophic shapes. Patterns Python's parser cannot read are skipped.
    """
    try:
        tree = _parse(pattern)
    except Exception:  # regex-module-only syntax: nothing to say
        return None

    def walk(items: Any, inside_repeat: bool) -> str | None:
        for op, av in items:
            op = str(op)
            if op in ("MAX_REPEAT", "MIN_REPEAT"):
                if inside_repeat and av[1] == sre_parse.MAXREPEAT:
                    return "a repeated group contains another unbounded repeat"
                if av[1] == sre_parse.MAXREPEAT and (_overlapping_branches(av[2]) or _ambiguous_end(av[2])):
                    return "a repeated group can split the same text into iterations in many ways"
                found = walk(av[2], inside_repeat or av[1] > 1)
            elif op == "SUBPATTERN":
                found = walk(av[3], inside_repeat)
            elif op == "BRANCH":
                found = next((r for r in (walk(b, inside_repeat) for b in av[1]) if r), None)
            elif op in ("ASSERT", "ASSERT_NOT"):
                found = walk(av[1], inside_repeat)
            elif op == "ATOMIC_GROUP":
                found = None  # atomic groups do not backtrack into themselves
            else:
                found = None
            if found:
                return found
        return None

    return walk(tree, False)
