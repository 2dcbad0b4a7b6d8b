"""Guarded alternatives: branches of a delimiter that can match only at the start of the buffer or right
after one character.

transformers never trims its buffer, so a branch written `^...` (or `\\A...`) can match only at its
position 0, and a branch written `(?<=;)...` only right after a `;`. Once the parser has consumed a
character, and the text before and in a chunk holds no such character, those branches cannot start in it:
the chunk is judged by the other branches alone (the fast modes' facts), and the scans, which search the
whole pattern, stay as they are. llama3's tool-call opener (`^\\s*...|(?<=;)\\s*...`) and gemma3's
(`(?:^|\\n\\n)(?=\\[...)`) are written so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import regex

from respc.compiler.analysis.starts import match_first_chars
from respc.compiler.analysis.syntax import is_plain, parse, plain_items
from respc.runtime.scan import RUN_CLASSES

__all__ = [
    "LOOKS_BACK",
    "anchored_heads",
    "guarded",
    "lookbehind_literals",
    "reads_back",
    "reads_before",
    "split_branches",
]

# Syntax that looks behind the scan position, or changes how far back a boundary looks (a guard's own
# lookbehind is set aside before this is asked).
_WIDEST = 32  # the widest literal lookbehind read as a guard (the parser keeps that much context)
LOOKS_BACK = re.compile(r"\(\?<[=!]|\(\?[a-zA-Z0-9^-]*[wr][a-zA-Z0-9^-]*[:)]")


def guarded(pattern: str) -> tuple[str, str, int, tuple[str, ...]] | None:
    """`(rest, guard, width, texts)` when some top-level branch of `pattern` (or of a leading non-capturing
    group, as in `(?:^|\\n\\n)X`) is guarded: `rest` is the alternation of the unguarded branches ("" when
    every branch is guarded), `guard` the characters right after which a guarded branch can match ("" when
    each is anchored at the start), `width` how far back the guards' lookbehinds read (0 for anchors alone;
    `(?<=</invoke>)` reads 9 characters and can match only after a `>`), `texts` the literals of the
    lookbehinds wider than one character (`("</invoke>",)`). None when no branch is guarded,
    when a branch looks back otherwise (the patterns then need the whole consumed text), or when the
    pattern is outside the syntax the analyses read."""
    if not is_plain(pattern):
        return None
    branches = _branches(pattern)
    if branches is None:
        return None
    rest, guard, width, texts, found = [], set(), 0, set(), False
    for branch in branches:
        kind, reads, after, text = _guard_of(branch)
        if kind is None:
            rest.append(branch)
        else:
            found = True
            guard |= set(kind)
            width = max(width, reads)
            if reads > 1:
                texts.add(text)
        if LOOKS_BACK.search(after):
            return None
    if not found:
        return None
    joined = "|".join(rest)
    try:
        if joined:
            parse(joined)
    except Exception:
        return None
    return joined, "".join(sorted(guard)), width, tuple(sorted(texts))


def anchored_heads(pattern: str) -> str | None:
    """The characters the text at the buffer's start must begin with for a branch of `pattern` anchored
    there (`^...`) to match, or match partially, at all: the few literal characters such a branch reads
    first past its anchor (`^(?=\\[)` reads `[`; llama3-json's `^\\s*(?:<\\|python_tag\\|>\\s*)?(?=\\{...)`,
    whitespace, `<` and `{`); "" when no branch is anchored. None when unknown: a branch that can match
    the empty string there (`(?:^|<think>)`), or reads a class other than `\\s`, or anything outside the
    syntax the analyses read. Elsewhere than at position 0 an anchored branch never matches, so a
    chunk at the start that begins otherwise is judged by the unguarded branches alone, as any later one
    (gemma3's and llama4's `^(?=\\[)`: a reply that starts with prose)."""
    if not is_plain(pattern):
        return None
    branches = _branches(pattern)
    if branches is None:
        return None
    heads: set[str] = set()
    for branch in branches:
        guard, _, after, _ = _guard_of(branch)
        if guard != "":
            continue  # unguarded, or after a lookbehind: never at position 0, where nothing is before
        first = match_first_chars(after) if after else None
        if not first:
            return None
        for item in first:
            if item in RUN_CLASSES:
                heads.update(RUN_CLASSES[item][1])  # (`\s`: the characters the runtime's runs are)
            elif regex.escape(item[-1:]) != item:
                return None  # a range or another class: not a few characters
            else:
                heads.add(item[-1])
    return "".join(sorted(heads))


def lookbehind_literals(pattern: str) -> tuple[str, ...] | None:
    """The literals the lookbehinds of `pattern`'s guarded branches read (`(?<=</invoke>)`: `("</invoke>",)`;
    `(?<=;)`: `(";",)`), when each reads a literal; None when one reads a class (`(?<=[;,])`), when no
    branch is guarded, or when unknown. Anchored branches (`^...`) are left out: they match only at
    position 0. A guarded branch can then match right after a guard character only where the text up to
    it ends with one of these literals (`</think>` ends with `>`, but not with `</invoke>`)."""
    if not is_plain(pattern):
        return None
    branches = _branches(pattern)
    if branches is None:
        return None
    found: set[str] = set()
    guarded_any = False
    for branch in branches:
        guard, width, _, text = _guard_of(branch)
        if guard is None:
            continue
        guarded_any = True
        if width:
            if not text:
                return None  # a class of characters
            found.add(text)
    return tuple(sorted(found)) if guarded_any else None


# The anchors that read nothing before the position they are tried at (`$` and `\Z` read what follows).
_AHEAD_ANCHORS = {"AT_END", "AT_END_STRING"}


def reads_before(pattern: str) -> bool:
    """Whether what a search of `pattern` from a position finds may depend on the text before that
    position: an anchor at the start (`^`, `\\A`), a word boundary, a lookbehind, anywhere; True for a
    pattern outside the syntax the analyses read (unknown). Where it is False, whether the text from a
    position on is a partial match there is a function of that text alone, which the parser remembers
    (`respc.runtime.scan.partial_held`)."""
    items = plain_items(pattern)
    return items is None or _reads_before(items)


# The most characters before a search's start that `reads_back` bounds (a longer lookbehind: unbounded).
_FARTHEST = 64


def reads_back(pattern: str) -> int | None:
    """How many characters before a search's start position what the search of `pattern` finds may
    depend on: 0 when it reads nothing there (`reads_before` is False); else one (an anchor at the start
    or a boundary reads whether a character is there, and which) plus the widest every lookbehind can read,
    summed (a lookbehind within one reads further back). None when unbounded or unknown. From the start
    position `p`, a match starting at `q >= p` reads back no further than `p` less that bound, and `^`
    can hold only when `p` is 0: the search's result is a function of the text from `p` less the bound
    (or of the whole text and `p`, nearer the start), which the parser remembers
    (`respc.runtime.scan.partial_held`)."""
    items = plain_items(pattern)
    if items is None:
        return None
    if not _reads_before(items):
        return 0
    widest = _lookbehind_widths(items)
    return None if widest is None or widest > _FARTHEST else 1 + widest


def _lookbehind_widths(items: list) -> int | None:
    """The sum of the widest match of every lookbehind in `items` (None: one is unbounded)."""
    total = 0
    for op, av in items:
        if str(op) in ("ASSERT", "ASSERT_NOT") and av[0] < 0:
            widest = av[1].getwidth()[1]
            if widest > _FARTHEST:
                return None
            total += widest
        for part in av if isinstance(av, (list, tuple)) else ():
            for sub in part if isinstance(part, list) else (part,):
                if hasattr(sub, "data"):
                    inner = _lookbehind_widths(sub.data)
                    if inner is None:
                        return None
                    total += inner
    return total


def _reads_before(items: list) -> bool:
    for op, av in items:
        name = str(op)
        if name == "AT" and str(av) not in _AHEAD_ANCHORS:
            return True
        if name in ("ASSERT", "ASSERT_NOT") and av[0] < 0:
            return True  # a lookbehind
        for part in av if isinstance(av, (list, tuple)) else ():
            if hasattr(part, "data") and _reads_before(part.data):
                return True
            if isinstance(part, list) and any(hasattr(p, "data") and _reads_before(p.data) for p in part):
                return True
    return False


def _guard_of(branch: str) -> tuple[str | None, int, str, str]:
    """`(guard, width, after, text)`: ("", 0) for a branch anchored at the start; for one that starts with
    a lookbehind `(?<=...)` of a literal (or of one character of a small literal set), the characters its
    match must come right after, the lookbehind's width and its literal ("" for a set); (None, 0) for an
    unguarded branch. `after` is the branch past its guard."""
    found: tuple[str | None, int, str, str] = (None, 0, branch, "")
    for anchor in ("^", "\\A"):
        if branch.startswith(anchor):
            found = "", 0, branch[len(anchor) :], ""
    if branch.startswith("(?<="):
        end = _group_end(branch, 0)
        read = None if end is None else _lookbehind(branch[4 : end - 1])
        if read is not None:
            found = read[0], read[1], branch[end:], read[2]
    if found[2][:1] in ("*", "+", "?", "{"):
        return None, 0, branch, ""  # `^?x`, `(?<=;)*x`: the `regex` module repeats the guard, perhaps never
    return found


def _lookbehind(body: str) -> tuple[str, int, str] | None:
    """`(last characters, width, literal)` of a lookbehind that reads a literal (up to 32 characters), or
    one character of a class of at most four literals (literal ""); None for any other."""
    try:
        items = parse(body)
    except Exception:
        return None
    if not items:
        return None
    if all(str(op) == "LITERAL" for op, _ in items) and len(items) <= _WIDEST:
        return chr(items[-1][1]), len(items), "".join(chr(value) for _, value in items)
    op, av = items[0]
    if len(items) == 1 and str(op) == "IN" and av and all(str(kind) == "LITERAL" for kind, _ in av):
        if len(av) <= 4:
            return "".join(chr(value) for _, value in av), 1, ""
    return None


def _branches(pattern: str) -> list[str] | None:
    """The top-level branches of `pattern`; a single branch that starts with a non-capturing group of
    branches, not repeated, is distributed over what follows it (`(?:A|B)C` as `AC`, `BC`)."""
    top = split_branches(pattern)
    if top is None:
        return None
    if len(top) == 1 and pattern.startswith("(?:"):
        end = _group_end(pattern, 0)
        if end is None:
            return None
        if end < len(pattern) and pattern[end] in "*+?{":
            return top
        inner = split_branches(pattern[3 : end - 1])
        if inner is None:
            return None
        if len(inner) > 1:
            return [branch + pattern[end:] for branch in inner]
    return top


def split_branches(pattern: str) -> list[str] | None:
    """`pattern` cut at its top-level `|` (None when its brackets do not balance)."""
    branches, start = [], 0
    for at, char, depth in _structure(pattern, 0):
        if at is None or depth < 0:
            return None
        if char == "|" and depth == 0:
            branches.append(pattern[start:at])
            start = at + 1
    branches.append(pattern[start:])
    return branches


def _structure(pattern: str, i: int) -> Iterator[tuple[int | None, str, int]]:
    """The parentheses and `|` of `pattern` from `i`, outside escapes and character classes, each with the
    group depth after it, and nothing past a `)` that closes more groups than were open (depth -1); last,
    `(None, "", depth)` when a class does not close or groups are left open (the shared walk of
    `split_branches` and `_group_end`)."""
    depth = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(pattern, i)
            if i is None:
                yield None, "", 0
                return
            continue
        if char in "()|":
            depth += (char == "(") - (char == ")")
            yield i, char, depth
            if depth < 0:
                return
        i += 1
    if depth:
        yield None, "", depth


def _class_end(pattern: str, i: int) -> int | None:
    """The index past the character class opening at `i`."""
    i += 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1  # a `]` right after `[` or `[^` is a member
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return None


def _group_end(pattern: str, i: int) -> int | None:
    """The index past the group opening at `i`."""
    for at, char, depth in _structure(pattern, i):
        if at is None or depth < 0:
            return None
        if char == ")" and depth == 0:
            return at + 1
    return None
