"""Hold-back helpers shared by generated scan functions.

Each helper answers, for one watched delimiter, what transformers' `regex` partial search would: the
leftmost complete match if there is one, else the leftmost partial match touching the end of the buffer.
The result is `(start, end, final, match)`: `final` is false while more input could still change the
match (a partial match, or a match ending at the buffer edge that may grow), and such a match holds
back every byte from its start.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

    Found = tuple[int, int, bool, Any]  # (start, end, final, match)


__all__ = [
    "RUN_CLASSES",
    "RUN_NEWLINE",
    "RUN_SPACE",
    "RUN_SPACE_TAB",
    "RUN_WHITESPACE",
    "AfterHead",
    "LazyRegex",
    "SearchTimeout",
    "alternatives_match",
    "first_start",
    "held_pattern",
    "lead_holds",
    "lead_reaches",
    "literal_match",
    "partial_at",
    "partial_start",
    "remember_held",
    "run_start",
    "scan_first",
    "scan_lead",
    "scan_literal",
    "scan_literals",
    "scan_pattern",
    "scan_tail",
    "set_search_timeout",
    "starts_at",
    "stems_rule_out",
    "survives_extension",
]

# The characters of the leading runs that lead-run delimiters (`\s*<tool_call>`) start with, by the
# regex class of one run character. Scans check them with set membership (the `regex` module's call
# overhead dominates one-character checks); tests/runtime/test_runtime.py enumerates Unicode to prove each set
# equals what the `regex` module's class matches.
RUN_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
RUN_NEWLINE = frozenset("\n")
RUN_SPACE_TAB = frozenset("\t ")
RUN_SPACE = frozenset(" ")
RUN_CLASSES = {  # regex class -> (name of the constant, its characters)
    r"\s": ("RUN_WHITESPACE", RUN_WHITESPACE),
    r"\n": ("RUN_NEWLINE", RUN_NEWLINE),
    r"[ \t]": ("RUN_SPACE_TAB", RUN_SPACE_TAB),
    " ": ("RUN_SPACE", RUN_SPACE),
}

# A lazy repeat (`*?`, `+?`, `??`, `{m,n}?`; an escaped `\*?` counts too, which only costs a search).
_LAZY_REPEAT = re.compile(r"[*+?}]\?")
_LIMIT: list[float | None] = [None]  # seconds allowed for one delimiter search; None: no limit


class _FromCompiled:
    """An attribute of a `LazyRegex` that is its compiled pattern's (`search`, `groupindex`...): the first
    read compiles the pattern and copies the attribute into the instance, whose own value every later read
    finds first (this descriptor defines no `__set__`)."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = getattr(instance.compiled(), self.name)
        return value


class LazyRegex:
    """A `regex` pattern compiled on first use (with DOTALL, as the oracle compiles delimiters).

    Importing `regex` costs more than the rest of a generated module (~15 ms against ~5 ms), so
    generated modules hold their patterns in these and the first parse pays for it. The compiled
    pattern's attributes are read through it (`_FromCompiled`: `pattern.search` is then one dict lookup,
    as cheap as a compiled pattern's). The compiler has already compiled each pattern, so a bad one cannot
    surface here.

    The facts the parser reads of a held pattern are the instance's own attributes, all set by
    `__init__` in one order and none defined on the class, and the class defines no `__getattr__`: CPython
    then reads each in about 3 ns, not about 20 (a class default, or a `__getattr__`, keeps the read from
    being specialised), and a held feed reads several.
    """

    def __init__(
        self,
        pattern: str,
        dotall: bool = True,
        stems: tuple[str, ...] = (),
        lead: frozenset[str] | None = None,
        tail: tuple[str, str, str, int] | None = None,
        memo: bool = False,
        context: int = 0,
    ) -> None:
        self.pattern = pattern
        self.dotall = dotall
        # A delimiter's pattern may declare its stems (`respc.compiler.plan.Delimiter.stems`: texts every
        # match starts with, or all it can match): held text that is a proper prefix of one is its partial
        # match. A lead-run delimiter's whole pattern `R*X` declares X's stems and the run's characters
        # (`lead`): then a run before that prefix is too (`lead_holds`). `longest`: the longest stem (held
        # text longer than it is not worth `lead_holds`'s test).
        self.stems = stems
        self.longest = max(map(len, stems)) if stems else 0
        self.lead = lead if stems else None
        # A pattern written head, a run of non-stops, a literal (`respc.compiler.analysis.run_tail`:
        # `head.*?L`, `<function=(?P<name>[^>\n]+)>`) declares its tail: once the head has matched where a
        # held partial match starts, an `AfterHead` stands for the pattern and holds the text without a
        # search. `tail`: (literal, stops, least) after the head.
        self.head = None if tail is None else LazyRegex(tail[0], dotall)
        self.tail = ("", "", 0) if tail is None else tail[1:]
        self.holds = None  # (an `AfterHead`'s test)
        # A pattern whose search reads at most `context` characters before where it starts (0: nothing;
        # `respc.compiler.plan.Delimiter.memo`) keeps which held texts, with that context, are its partial
        # match and which are not (`partial_held`).
        self.partials: dict[Any, bool] | None = {} if memo else None
        self.context = context if memo else 0
        self.lazy = _LAZY_REPEAT.search(pattern) is not None  # (`starts_at` searches such a pattern)

    def compiled(self) -> Any:
        """The compiled `regex` pattern (imports `regex` and compiles on the first call)."""
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            import regex

            compiled = self.__dict__["_compiled"] = regex.compile(
                self.pattern, regex.DOTALL if self.dotall else 0
            )
        return compiled

    # The compiled pattern's attributes (the `regex` module's `Pattern`).
    search = _FromCompiled()
    match = _FromCompiled()
    fullmatch = _FromCompiled()
    finditer = _FromCompiled()
    findall = _FromCompiled()
    sub = _FromCompiled()
    subf = _FromCompiled()
    subn = _FromCompiled()
    subfn = _FromCompiled()
    split = _FromCompiled()
    splititer = _FromCompiled()
    scanner = _FromCompiled()
    groups = _FromCompiled()
    groupindex = _FromCompiled()
    flags = _FromCompiled()
    named_lists = _FromCompiled()
    prefixmatch = _FromCompiled()

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r}{'' if self.dotall else ', dotall=False'})"


class AfterHead:
    """A held partial match, from `pos`, of a pattern with a tail (head, a run of characters other than
    `stops`, at least `least` of them, then `literal`; `respc.compiler.analysis.run_tail`) whose head has
    matched from `pos` over `offset` characters.

    The head looks at nothing past its own match, so it stays matched whatever follows; the run cannot
    take a stop, so it ends at the first one, which must begin the literal. The held text is a partial
    match while the text after the head is such a run and then a proper prefix of the literal, and the
    literal occurs nowhere in it: every complete match holds the literal, so none starts anywhere in the
    text either (the `regex` module's partial search prefers one to a partial match). The parser holds
    such text with `holds` instead of a partial search, and falls back to the search (`search` is the
    pattern's) when it says no.
    """

    __slots__ = ("context", "least", "literal", "offset", "partials", "stops", "whole")
    stems: tuple[str, ...] = ()  # the attributes the parser reads of every held pattern
    lead = None
    head = None

    def __init__(self, whole: LazyRegex, offset: int) -> None:
        self.whole = whole
        self.literal, self.stops, self.least = whole.tail
        self.offset = offset
        self.partials = whole.partials
        self.context = whole.context

    def holds(self, held: str) -> bool:
        """Whether `held` (the text from the partial match's start) is still a partial match of it."""
        literal = self.literal
        if literal in held:
            return False
        stops = self.stops
        if not stops:
            return True  # (`head.*?literal`)
        after = held[self.offset :]
        end = len(after)
        for stop in stops:
            at = after.find(stop, 0, end)
            if at >= 0:
                end = at
        if end < self.least and end < len(after):
            return False
        rest = after[end:]
        return len(rest) < len(literal) and literal.startswith(rest)

    @property
    def pattern(self) -> str:
        return self.whole.pattern

    def search(self, *args: Any) -> Any:
        return self.whole.search(*args)

    def __repr__(self) -> str:
        return f"AfterHead({self.whole!r}, {self.offset})"


def held_pattern(pattern: Any, buf: str, pos: int) -> Any:
    """The pattern to remember for text held from `pos` as its partial match: an `AfterHead` once the
    head of its tail has matched there (one `regex` match), else the pattern itself."""
    head = pattern.head
    if head is not None:
        match = head.match(buf, pos)
        if match is not None:
            return AfterHead(pattern, match.end() - pos)
    return pattern


def lead_holds(pattern: Any, held: str) -> bool:
    """Whether `held` (the text from the scan position to the end of the buffer) is a run of the lead
    class of `pattern`, a lead-run delimiter's whole pattern `R*X`, then a proper prefix of one of the
    stems of `X`: a partial match at its start, which holds everything (no delimiter commits at or after
    a partial match), and no complete match of the pattern can start later in it (`X` cannot start with a
    run character, and a stem's proper prefix holds none). So the oracle's partial search holds it, and
    the caller can skip that search. False for other patterns, and when unsure."""
    run = pattern.lead
    if run is None or len(held) > pattern.longest:
        return False
    at, end = 0, len(held)
    while at < end and held[at] in run:
        at += 1
    if at == end:
        return False  # a run alone: the lead-run path's (or the partial search's) to decide
    core = held[at:] if at else held
    for stem in pattern.stems:
        if len(stem) > len(core) and stem.startswith(core):
            return True
    return False


def stems_rule_out(pattern: Any, buf: str, pos: int) -> bool:
    """Whether no match and no partial match of `pattern` can start at `pos`, by its declared stems (texts
    every match starts with, after a run of its lead class if it has one): the text there, past such a
    run, neither starts with one nor is a prefix of one. (Stems leave out guarded branches: ask only
    where none is watched.) False when unsure; then `starts_at` decides."""
    stems = pattern.stems
    if not stems:
        return False
    at = pos
    run = pattern.lead
    if run is not None:
        end = len(buf)
        while at < end and buf[at] in run:
            at += 1
    core = buf[at : at + pattern.longest]
    if not core:
        return False  # (a run to the buffer's end: perhaps a partial match)
    for stem in stems:
        if core.startswith(stem) or stem.startswith(core):
            return False
    return True


class SearchTimeout(TimeoutError):
    """A regex delimiter search ran past the limit set with `set_search_timeout`."""


def set_search_timeout(seconds: float | None) -> None:
    """Limit every regex delimiter search of every parser in this process (opt-in; None removes it).

    A template's regex can backtrack exponentially on some inputs; with a limit, such a search raises
    `SearchTimeout` naming the pattern instead of holding the thread.
    """
    if seconds is not None and not seconds > 0:
        raise ValueError(f"search timeout must be a positive number of seconds or None, got {seconds!r}")
    _LIMIT[0] = seconds


# `regex` takes `partial` and `timeout` positionally (string, pos, endpos, concurrent, partial, timeout):
# keyword arguments double the cost of a short search.


def _timed_out(pattern: Any) -> SearchTimeout:
    return SearchTimeout(
        f"respc: searching for the delimiter /{pattern.pattern}/ took longer than the {_LIMIT[0]} s "
        "limit set with respc.runtime.scan.set_search_timeout"
    )


def _search(pattern: Any, buf: str, pos: int, partial: bool) -> Any:
    limit = _LIMIT[0]
    if limit is None:
        return pattern.search(buf, pos, None, None, True) if partial else pattern.search(buf, pos)
    try:
        return pattern.search(buf, pos, None, None, partial, limit)
    except TimeoutError as error:
        raise _timed_out(pattern) from error


def _match(pattern: Any, buf: str, pos: int) -> Any:
    """`pattern.match(buf, pos)` under the search limit, like `_search`."""
    limit = _LIMIT[0]
    if limit is None:
        return pattern.match(buf, pos)
    try:
        return pattern.match(buf, pos, None, None, False, limit)
    except TimeoutError as error:
        raise _timed_out(pattern) from error


def starts_at(pattern: Any, buf: str, pos: int) -> bool:
    """Whether the oracle's partial search of `pattern` from `pos` finds a complete or partial match that
    starts at `pos`: the `regex` module's partial match there, which answers as that search does but
    where a lazy repeat meets an anchor or a lookbehind at the text's end (`(?:x)*?(?<=b)` over "x": the
    search holds "x", the match finds nothing), so a pattern with a lazy repeat is searched."""
    lazy = getattr(pattern, "lazy", None)
    if lazy is None:
        lazy = _LAZY_REPEAT.search(pattern.pattern) is not None
    if lazy:
        match = _search(pattern, buf, pos, True)
        return match is not None and match.start() == pos
    limit = _LIMIT[0]
    try:
        if limit is None:
            return pattern.match(buf, pos, None, None, True) is not None
        return pattern.match(buf, pos, None, None, True, limit) is not None
    except TimeoutError as error:
        raise _timed_out(pattern) from error


def partial_at(pattern: Any, buf: str, pos: int) -> bool:
    """Whether the oracle's partial search of `pattern` from `pos` holds the text from `pos`: its result
    starts there and may still grow (partial, or complete up to the end of the buffer, which a streaming
    scan never takes as final, quirk Q19). A search, not a match at `pos`: the `regex` module's partial
    search prefers a complete match further on to a partial one at `pos`, and then nothing is held."""
    if _LIMIT[0] is None:  # (`_search`, inlined: this is the held-text path's one search per feed)
        match = pattern.search(buf, pos, None, None, True)
    else:
        match = _search(pattern, buf, pos, True)
    return match is not None and match.start() == pos and (match.partial or match.end() == len(buf))


def pending_start(pattern: Any, buf: str, pos: int) -> int:
    """Where the oracle's partial search of `pattern` from `pos` finds a match it holds (partial, or
    complete up to the end of the buffer: quirk Q19), when that starts before the buffer's end; else -1
    (no match, or a complete one before the end, which may commit)."""
    match = _search(pattern, buf, pos, True)
    if match is None or not (match.partial or match.end() == len(buf)):
        return -1
    start = match.start()
    return start if start < len(buf) else -1


def partial_start(buf: str, pos: int, literal: str) -> int:
    """The leftmost index from which the rest of `buf` is a proper prefix of `literal`, or -1.

    Only the last `len(literal) - 1` characters can hold such a prefix, so only they are looked at.
    """
    end = len(buf)
    first = literal[0]
    at = buf.find(first, max(pos, end - len(literal) + 1))
    while at >= 0:
        if literal.startswith(buf[at:]):
            return at
        at = buf.find(first, at + 1)
    return -1


def scan_literal(buf: str, pos: int, literal: str, eos: bool, end: int | None = None) -> Found | None:
    """One literal delimiter: `str.find`, else a partial literal at the end of the buffer.

    `end` bounds the search when a scan already holds a candidate: a match starting after it cannot
    win, and a partial match at the buffer end past it cannot hold the candidate back.
    """
    start = buf.find(literal, pos, end)
    if start >= 0:
        return start, start + len(literal), True, None
    if eos:
        return None
    start = partial_start(buf, pos, literal)
    return None if start < 0 else (start, len(buf), False, None)


def scan_literals(
    buf: str, pos: int, literals: tuple[str, ...], can_extend: bool, eos: bool, limit: int | None = None
) -> Found | None:
    """A literal list (longest first): the leftmost occurrence, the longest literal on a tie.

    `limit` bounds the search as `scan_literal`'s `end` does.
    """
    start = end = -1
    for literal in literals:
        # Once one literal is found, the others only matter if they start no later.
        found = buf.find(literal, pos, limit) if start < 0 else buf.find(literal, pos, start + len(literal))
        if found >= 0 and (start < 0 or found < start):
            start, end = found, found + len(literal)
    if start >= 0:
        # A literal that another literal of the list extends may still grow at the buffer edge.
        return start, end, eos or end < len(buf) or not can_extend, None
    if eos:
        return None
    for literal in literals:
        found = partial_start(buf, pos, literal)
        if found >= 0 and (start < 0 or found < start):
            start = found
    return None if start < 0 else (start, len(buf), False, None)


def literal_table(*watches: tuple) -> tuple[tuple[str, ...], dict]:
    """For a state that watches only literals: the order an alternation must try them in to keep the
    oracle's tie-break at one position (longest first, then in watch order), and what each commits,
    `{literal: (is_open, field)}` (a literal two delimiters share goes to the first watched). Each watch is
    `(literals, is_open, field)`; the compiler orders its tables with this function too."""
    entries = sorted(
        (
            (-len(literal), index, literal, is_open, field)
            for index, (literals, is_open, field) in enumerate(watches)
            for literal in literals
        ),
        key=lambda entry: entry[:2],
    )
    commits: dict = {}
    for _, _, literal, is_open, field in entries:
        commits.setdefault(literal, (is_open, field))
    return tuple(commits), commits


# `partial_held`'s memo: texts up to this long, and this many per pattern (then it starts afresh). A server
# parses one model's output, whose delimiters come in a few spellings: their held prefixes recur.
_MEMO_TEXT, _MEMO_SIZE = 256, 512


def partial_held(pattern: Any, buf: str, pos: int, held: str) -> bool:
    """`partial_at(pattern, buf, pos)`, where `held` is `buf[pos:]`; for a pattern with a memo
    (`LazyRegex.partials`), remembered by `held` and the `context` characters before it: such a
    pattern's search from `pos` reads nothing further back (and a start anchor can hold only where `pos`
    is 0, which a key nearer the start records), so the answer is a function of the key (each recurring
    held text costs one dict lookup instead of a partial search). The key is the held text itself for a
    pattern that reads nothing before its start, so mode held may look it up directly."""
    known = pattern.partials
    if known is None:
        return partial_at(pattern, buf, pos)
    back = pattern.context
    key: Any = held if not back else buf[pos - back :] if pos >= back else (pos, buf)
    found = known.get(key)
    if found is None:
        found = partial_at(pattern, buf, pos)
        remember_held(known, key, found, len(held))
    return found


def remember_held(known: dict, key: Any, found: bool, size: int) -> None:
    """Keep `found` for `key`, of a held text `size` long, in a pattern's memo (`LazyRegex.partials`):
    texts up to `_MEMO_TEXT` characters; the memo starts afresh when full."""
    if size <= _MEMO_TEXT:
        if len(known) >= _MEMO_SIZE:
            known.clear()
        known[key] = found


def survives_extension(pattern: Any, buf: str, start: int, end: int, match: Any) -> bool:
    """Whether a complete match of `pattern` over `buf[start:end]`, ending before the buffer's edge, stays
    the same when the stream goes on: re-matched at `start` on the buffer extended by a character that is
    neither a newline nor the end of input, it must keep its span and the named groups of `match`
    (transformers 5.24; `$` before a trailing newline, or `\\Z` in a lookahead, fail this)."""
    extended = _match(pattern, buf + "\x00", start)
    if extended is None:
        return False
    regs = extended.regs
    if regs[0] == (start, end) and extended.re is match.re and regs == match.regs:
        # Every group spans the same characters of texts that agree up to the buffer's end, past which
        # no group of the first match can reach: the same groups, without building their dicts.
        return True
    return regs[0] == (start, end) and extended.groupdict() == match.groupdict()


def first_start(
    buf: str, pos: int, needles: str | tuple[str, ...], run: frozenset[str] | None, guard: str | None
) -> int:
    """The first position from `pos` where a match of a regex delimiter can start, by what the compiler
    proved of it (`Delimiter.skip`): every match of its unguarded branches starts with a run of `run`
    characters (perhaps empty; None: no run) and then one of `needles` (characters, or texts), which
    start with no run character; a guarded branch (`guard` not None) matches only at the buffer's start
    or right after one of `guard`. -1 when none can start. A search from there finds what one from `pos`
    finds, for a pattern whose match at a position does not depend on where the search began
    (`Delimiter.remembered`), and the text before it is never run through the regex engine (which tries
    a pattern such as `\\s*;(?=...)` at every character, ~45 ns each)."""
    if guard is not None and pos == 0:
        return 0  # (a `^` branch; and the guard's search below looks from `pos - 1`, which must be >= 0)
    start = -1
    for needle in needles:
        at = buf.find(needle, pos)
        if at >= 0 and (start < 0 or at < start):
            start = at
    if run is not None:
        while start > pos and buf[start - 1] in run:
            start -= 1
    if guard:
        for char in guard:
            at = buf.find(char, pos - 1)
            if at >= 0 and (start < 0 or at < start - 1):
                start = at + 1
    return start


def scan_first(
    buf: str,
    pos: int,
    pattern: Any,
    needles: str | tuple[str, ...],
    run: frozenset[str] | None,
    guard: str | None,
) -> Found | None:
    """The end-of-stream `scan_pattern` of a regex delimiter without a literal prefix (`Delimiter.skip`),
    searched from the first position a match can start at (`first_start`). At the buffer's start, where a
    guarded `^` branch may match, the pattern is matched there first: the leftmost match is the one there
    if any, and a search would otherwise try every position after it."""
    if pos == 0 and guard is not None:
        match = _match(pattern, buf, 0)
        if match is not None:
            return match.start(), match.end(), True, match
        at = first_start(buf, 1, needles, run, guard) if buf else -1
    else:
        at = first_start(buf, pos, needles, run, guard)
    if at < 0:
        return None
    match = _search(pattern, buf, at, False)
    return None if match is None else (match.start(), match.end(), True, match)


def scan_tail(buf: str, pos: int, pattern: Any, literal: str, stops: str, width: int | None) -> Found | None:
    """The end-of-stream `scan_pattern` of a regex written head, a run of characters other than `stops`,
    then `literal` (`Delimiter.tail_skip`; inkling's `(?:<\\|message_model\\|>)?[^<]*<\\|content_text\\|>`).

    Every match holds the literal, so there is none where it does not occur: the `regex` module would
    find that out by trying the head and the run at every position, each run to the next stop, which is
    quadratic in a text without stops. Where it occurs, and it starts with a stop, which no run takes,
    no match starts before the position after the last stop ahead of its first occurrence, less the
    widest the head can be (`width`; None: unbounded): the run of a match ending there starts after that
    stop, and that of one ending at a later occurrence after the first one."""
    at = buf.find(literal, pos)
    if at < 0:
        return None
    start = pos
    if stops and width is not None:
        last = max(buf.rfind(stop, pos, at) for stop in stops)
        if last >= 0:
            start = max(pos, last + 1 - width)
    match = _search(pattern, buf, start, False)
    return None if match is None else (match.start(), match.end(), True, match)


def scan_pattern(buf: str, pos: int, pattern: Any, eos: bool, recheck: bool = False) -> Found | None:
    """A regex delimiter: the `regex` module's partial search, as the oracle runs it. With `recheck`
    (transformers 5.24), a match ending before the edge is final only if it `survives_extension`."""
    match = _search(pattern, buf, pos, not eos)
    if eos:
        return None if match is None else (match.start(), match.end(), True, match)
    if match is None:
        return None
    end = match.end()
    # A regex ending at the edge may always grow, even one that could not really match more (quirk Q19).
    start = match.start()
    final = (
        not match.partial
        and end < len(buf)
        and (not recheck or survives_extension(pattern, buf, start, end, match))
    )
    return start, end, final, match


def scan_lead(
    buf: str,
    pos: int,
    rest: Any,
    run: frozenset[str],
    eos: bool,
    at: int | None = None,
    whole: Any = None,
) -> Found | None:
    """A regex `R*X` (a run of one character class, then `X`, which cannot start with one): search `X`
    and walk back over the run before it. The leftmost (partial) match of the whole pattern starts
    exactly there, so this agrees with the oracle's search without trying the run at every position.
    `at` starts the search for `X` later than `pos` when no match of `X` can start before it; `whole`, the
    whole pattern, rechecks a match ending before the edge as `scan_pattern`'s `recheck` does.
    """
    match = _search(rest, buf, pos if at is None else at, not eos)
    if match is None:
        return None
    start = match.start()
    while start > pos and buf[start - 1] in run:
        start -= 1
    end = match.end()
    if eos:
        return start, end, True, match
    final = (
        not match.partial
        and end < len(buf)
        and (whole is None or survives_extension(whole, buf, start, end, match))
    )
    return start, end, final, match


def literal_match(
    buf: str, pos: int, at: int, length: int, lead: frozenset[str] | None, trail: frozenset[str] | None
) -> Found:
    """The end-of-stream match of a regex `R*LS*` (a literal `L` of `length`, perhaps after a lead run
    `R*` and before a run `S*` that ends the pattern) whose literal's first occurrence from `pos` is at
    `at`: the leftmost match of the pattern from `pos` starts at the start of the run before it (not
    before `pos`) and takes the longest run after it, as a `regex` search finds (`L` cannot start with a
    lead-run character). No match object: the pattern has no groups."""
    start = at
    if lead is not None:
        while start > pos and buf[start - 1] in lead:
            start -= 1
    end = at + length
    if trail is not None:
        size = len(buf)
        while end < size and buf[end] in trail:
            end += 1
    return start, end, True, None


def alternatives_match(
    buf: str, pos: int, at: int, strings: tuple[str, ...], lead: frozenset[str] | None
) -> Found | None:
    """The end-of-stream match of a regex `R*(?:A|B|...)` (literals only, no groups; perhaps after a lead
    run `R*`) whose literal prefix first occurs at `at`, as a `regex` search from `pos` finds it: the
    earliest occurrence of any literal, the first in `strings` (the order a match at one position tries
    them) on a tie, from the start of the run before it (not before `pos`; no literal starts with a run
    character); None when none occurs. No match object: the pattern has no groups."""
    start = end = -1
    for string in strings:
        # Once one is found, the others only matter if they start no later.
        found = buf.find(string, at) if start < 0 else buf.find(string, at, start + len(string))
        if found >= 0 and (start < 0 or found < start):
            start, end = found, found + len(string)
    if start < 0:
        return None
    if lead is not None:
        while start > pos and buf[start - 1] in lead:
            start -= 1
    return start, end, True, None


def lead_reaches(buf: str, at: int, prefix: str, run: frozenset[str]) -> bool:
    """Whether the run of `run` characters from `at` is followed by `prefix`, or by the end of the buffer
    or a proper prefix of it there: then a lead-run delimiter `R*X` whose matches of `X` start with
    `prefix` may match (or partially match) from `at` or before, walking back over that run. (`X` cannot
    start with a run character, so a match reaching back to `at` has its `X` right after the run.)"""
    end = len(buf)
    while at < end and buf[at] in run:
        at += 1
    return buf.startswith(prefix, at) or (end - at < len(prefix) and prefix.startswith(buf[at:]))


def run_start(buf: str, pos: int, run: frozenset[str]) -> int:
    """Where the trailing run of `run` characters of `buf` begins (not before `pos`)."""
    end = len(buf)
    while end > pos and buf[end - 1] in run:
        end -= 1
    return end
