"""Whether a regex can match the empty string, and whether two can at one position.

transformers' parser loops forever when a field's open and close both match empty at one position
(quirk Q5); the compiler refuses such a template. A pair that can each match empty but never at the
same place (`(?=z)` and `$`) parses every text, and is accepted.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from respc.compiler.analysis.starts import END, first_chars_of, item_kind, overlap
from respc.compiler.analysis.syntax import is_plain, neutralise_escapes, parse

__all__ = ["empty_together", "may_match_empty"]

_EMPTY_PROBES = ("", "a", " ", "\n", "<", "0", "x y\nz", "@#!", "é思🙂", "A_1-")
_ZERO_WIDTH_ESCAPE = re.compile(r"\\[bBAZzGmM]")
_ESCAPE = re.compile(r"\\.", re.DOTALL)
# Group openers whose `?` says nothing of emptiness: non-capturing, flagged, named and atomic groups, and
# global inline flags (`(?i)`); lookarounds are left for _LOOKS_AROUND to see.
_GROUP_OPENER = re.compile(r"\(\?(?:[a-zA-Z^-]*[:)]|P?<[^\W\d]\w*>|>)")
_FLAGS = re.compile(r"\(\?[imsx]+[:)]")  # inline flags both parsers read alike
# What makes an empty match depend on the text around it (with escapes neutralised and group openers
# read): lookarounds and the anchors `^` and `$` (a `^` that negates a class too, conservatively).
_LOOKS_AROUND = re.compile(r"\(\?[=!<]|[\^$]")
# What lets a match depend on its own history (on the raw pattern, escapes included): conditionals, atomic
# groups, possessive quantifiers, backtracking verbs and backreferences.
_CONTROL = re.compile(r"\(\?\(|\(\?>|[*+?}]\+|\(\*|\\[1-9gk]|\(\?P=|\(\?&|\(\?R|\(\?[0-9+-]")
_CAN_BE_EMPTY = re.compile(r"[*?]|\{0|\{,|\(\?[=!<]|[\^$]|\(\||\|\)|\|\||^\||\|$")  # with escapes neutralised
# Fuzzy constraints that allow errors which shorten a match (any error `e`, or deletions `d`).
_SHORTENING_FUZZ = re.compile(r"\{[^{}]*[ed][^{}]*\}")
_ANYWHERE = "anywhere"  # an empty match whose position nothing in the analysis restricts
_NEVER = "never"  # the pattern cannot match the empty string


def _without_reset(pattern: str) -> str:
    """`pattern` without `\\K`: resetting the match start changes where a match is said to start, never
    which texts match, and the loop of quirk Q5 needs matches that are empty from where the search
    started (a match that `\\K` makes look empty has consumed text, so the parser moves on)."""
    if "\\K" not in pattern:
        return pattern
    return _ESCAPE.sub(lambda m: "" if m[0] == "\\K" else m[0], pattern)


def may_match_empty(pattern: str) -> bool:
    """Whether the pattern can match the empty string somewhere (true when unsure)."""
    pattern = _without_reset(pattern)
    compiled = regex.compile(pattern, regex.DOTALL)
    for probe in _EMPTY_PROBES:
        for start in range(len(probe) + 1):
            match = compiled.search(probe, start)
            if match is not None and match.start() == match.end():
                return True
    if is_plain(_FLAGS.sub(lambda m: "" if m[0].endswith(")") else "(?:", pattern)):
        # (Inline flags `i`, `m`, `s` and `x`, which Python reads alike, change no match's least width.)
        try:
            return parse(pattern).getwidth()[0] == 0
        except Exception:
            pass
    # Syntax Python's parser reads differently (POSIX classes, \p{..}, fuzzy matching...). A pattern that
    # asserts nothing about the text around it (no lookaround, anchor or boundary) matches empty nowhere
    # if it does not match the empty text: an empty match reads no character, so it is one in any text.
    # The first probe searched the empty text and found none. (Fuzzy constraints that allow deletions,
    # `(?:<a>){e<=1}`, can shorten a match, but to nothing only where the probe would see it.)
    # Where a match depends on what happened earlier in it (conditionals, backreferences, atomic and
    # possessive parts, verbs), an empty match can need text around it that the empty text lacks
    # (`(?>(?>(q)|)(?(1)c|)()|)(?(2)z|)` matches empty in "qb" only): for those, empty unless nothing in
    # the pattern can match without consuming a character.
    if _CONTROL.search(pattern):
        structure = _GROUP_OPENER.sub("(", neutralise_escapes(pattern))
        return bool(
            _CAN_BE_EMPTY.search(structure)
            or _SHORTENING_FUZZ.search(structure)
            or _ZERO_WIDTH_ESCAPE.search(pattern)
        )
    structure = _GROUP_OPENER.sub("(", neutralise_escapes(pattern))
    return bool(_LOOKS_AROUND.search(structure) or _ZERO_WIDTH_ESCAPE.search(pattern))


def _empty_where(items: Any) -> Any:
    """Where `items` can match the empty string, over-approximated by what must follow that position: a
    frozenset of ("char", c), ("class", item) and END, or _ANYWHERE, or _NEVER. All items of an empty
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
            return frozenset({END, ("char", "\n")})
        if at == "AT_END_STRING":
            return frozenset({END})
        return _ANYWHERE
    if op == "ASSERT" and av[0] == 1:  # a lookahead: the next character starts its match
        first = first_chars_of(av[1])
        return _ANYWHERE if first is None else frozenset(item_kind(item) for item in first)
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


def empty_together(first: str, second: str) -> bool:
    """Whether two patterns may both match the empty string at one position (true when unsure)."""
    first, second = _without_reset(first), _without_reset(second)
    if not (may_match_empty(first) and may_match_empty(second)):
        return False
    if not (is_plain(first) and is_plain(second)):
        return True
    try:
        where = [_empty_where(parse(p)) for p in (first, second)]
    except Exception:
        return True
    if _NEVER in where:  # Python's parser proves what the probes could not
        return False
    if _ANYWHERE in where:
        return True
    return overlap(*where)
