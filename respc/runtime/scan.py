"""Hold-back helpers shared by generated scan functions.

Each helper answers, for one watched delimiter, what transformers' `regex` partial search would: the
leftmost complete match if there is one, else the leftmost partial match touching the end of the buffer.
The result is `(start, end, final, match)`: `final` is false while more input could still change the
match (a partial match, or a match ending at the buffer edge that may grow), and such a match holds
back every byte from its start.
"""

from __future__ import annotations

from functools import lru_cache

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
    "LazyRegex",
    "SearchTimeout",
    "ascii_twin",
    "partial_at",
    "partial_start",
    "run_start",
    "scan_lead",
    "scan_literal",
    "scan_literals",
    "scan_pattern",
    "set_search_timeout",
    "survives_extension",
    "twin_applies",
]

# The characters of the leading runs that lead-run delimiters (`\s*<tool_call>`) start with, by the
# regex class of one run character. Scans check them with set membership (the `regex` module's call
# overhead dominates one-character checks); tests/test_runtime.py enumerates Unicode to prove each set
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

_LIMIT: list[float | None] = [None]  # seconds allowed for one delimiter search; None: no limit

# Where `re` and `regex` agree: on ASCII text, `re` with the ASCII flag reads `\s`, `\w`, `\d` and `\b`
# as `regex` does (`\s` is ` \t\n\v\f\r` for both; `re` without the flag also takes U+001C-U+001F),
# and the constructs below mean the same in both. `re` is about three times faster on a short text.
_NEUTRAL_SEQUENCES = ("[[", "[:", "--", "&&", "||", "~~")  # nested sets, set operations


@lru_cache(maxsize=1024)
def _neutral_twin(pattern: str) -> Any:
    r"""`(compiled, required)`: `pattern` compiled by `re` (ASCII, DOTALL) when it matches every ASCII text
    exactly as the `regex` compile does, and in comparable time once the text holds its `required`
    literals (`twin_applies`); else None (also for a pattern without a required literal). Only literals, classes of literals, ranges and the six
    escapes `\d\D\s\S\w\W`, groups without flags, alternation, greedy and lazy repeats (no repeat or
    alternation inside a repeat: `regex` guards those against exponential backtracking, `re` does not),
    `^ $ \A \Z \b \B`, backreferences and lookarounds; no inline flags but `s`; no match of the empty
    string (where `findall` and `sub` step differently); nothing either engine reads in its own way
    (`[[:alpha:]]`, set operations)."""
    import re

    try:
        from re import _constants as sre  # Python 3.11+
        from re import _parser as sre_parse
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_constants as sre  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]

    if not isinstance(pattern, str) or any(sequence in pattern for sequence in _NEUTRAL_SEQUENCES):
        return None
    try:
        compiled = re.compile(pattern, re.ASCII | re.DOTALL)
        parsed = sre_parse.parse(pattern, re.ASCII | re.DOTALL)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    if compiled.flags & (re.IGNORECASE | re.MULTILINE | re.VERBOSE | re.LOCALE) or parsed.getwidth()[0] == 0:
        return None
    categories = {
        sre.CATEGORY_DIGIT,
        sre.CATEGORY_NOT_DIGIT,
        sre.CATEGORY_SPACE,
        sre.CATEGORY_NOT_SPACE,
        sre.CATEGORY_WORD,
        sre.CATEGORY_NOT_WORD,
    }
    positions = {
        sre.AT_BEGINNING,
        sre.AT_BEGINNING_STRING,
        sre.AT_END,
        sre.AT_END_STRING,
        sre.AT_BOUNDARY,
        sre.AT_NON_BOUNDARY,
    }

    def neutral(items: Any, repeated: bool) -> bool:
        # `repeated`: inside a repeat, where another repeat or an alternation could make `re` backtrack
        # exponentially on a text that `regex` (which guards such repeats) gets through at once.
        for op, arg in items:
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.GROUPREF):
                continue
            if op is sre.IN:
                for item_op, item_arg in arg:
                    if item_op is sre.CATEGORY:
                        if item_arg not in categories:
                            return False
                    elif item_op not in (sre.LITERAL, sre.RANGE, sre.NEGATE):
                        return False
            elif op is sre.AT:
                if arg not in positions:
                    return False
            elif op is sre.BRANCH:
                if repeated or not all(neutral(branch, repeated) for branch in arg[1]):
                    return False
            elif op is sre.SUBPATTERN:
                _, added, removed, body = arg
                if added or removed or not neutral(body, repeated):
                    return False
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
                if repeated or not neutral(arg[-1], True):
                    return False
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if not neutral(arg[-1], repeated):
                    return False
            else:
                return False
        return True

    if not neutral(parsed, False):
        return None
    required = tuple(sorted(set(_required_literals(parsed, sre)), key=len, reverse=True))
    return (compiled, required) if required else (compiled, None)


def ascii_twin(pattern: str) -> Any:
    """`(compiled, required)` as `_neutral_twin` gives it, or None (a pattern without required literal too)."""
    twin = _neutral_twin(pattern)
    return None if twin is None or twin[1] is None else twin


def _required_literals(items: Any, sre: Any) -> list[str]:
    """The runs of literal characters that every match contains (in the top-level sequence, its groups,
    and repeats of at least one), the "required strings" `regex` looks for before it tries to match."""
    runs: list[str] = []
    current: list[str] = []
    for op, arg in items:
        if op is sre.LITERAL:
            current.append(chr(arg))
            continue
        if current:
            runs.append("".join(current))
            current = []
        if op is sre.SUBPATTERN or (op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[0] >= 1):
            runs += _required_literals(arg[-1], sre)
    if current:
        runs.append("".join(current))
    return runs


def twin_applies(twin: Any, text: str, pos: int) -> bool:
    """Whether the `re` twin may answer for `text` from `pos`: it holds every required literal. Without
    one no match exists, which `regex` finds out at once (its required-string check) while `re` could
    backtrack for long over a run the pattern's repeats all take, as in `[ \t]*\n?[ \t]*</answer>`."""
    for literal in twin[1]:
        if text.find(literal, pos) < 0:
            return False
    return True


class LazyRegex:
    """A `regex` pattern compiled on first use (with DOTALL, as the oracle compiles delimiters).

    Importing `regex` costs more than the rest of a generated module (~15 ms against ~5 ms), so
    generated modules hold their patterns in these and the first parse pays for it. Every attribute read
    once is copied into the instance: afterwards `pattern.search` is one dict lookup, as cheap as a
    compiled pattern's. The compiler has already compiled each pattern, so a bad one cannot surface here.
    """

    def __init__(self, pattern: str, dotall: bool = True) -> None:
        self.pattern = pattern
        self.dotall = dotall

    def compiled(self) -> Any:
        """The compiled `regex` pattern (imports `regex` and compiles on the first call)."""
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            import regex

            compiled = self.__dict__["_compiled"] = regex.compile(
                self.pattern, regex.DOTALL if self.dotall else 0
            )
        return compiled

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes not yet in the instance: `search`, `finditer`, `groupindex`...
        if name.startswith("__"):
            raise AttributeError(name)  # copy, pickle and friends probe dunders; never compile for them
        if name == "twin":  # `ascii_twin` of the pattern: its `re` twin for ASCII text, or None
            value = self.__dict__["twin"] = ascii_twin(self.pattern) if self.dotall else None
            return value
        value = getattr(self.compiled(), name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"LazyRegex({self.pattern!r}{'' if self.dotall else ', dotall=False'})"


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
# keyword arguments double the cost of a short search. Without a time limit, a search that is not partial
# runs on the pattern's `re` twin when the text is ASCII (`str.isascii` is a flag read), three times faster.


def _search(pattern: Any, buf: str, pos: int, partial: bool) -> Any:
    limit = _LIMIT[0]
    if limit is None:
        if partial:
            return pattern.search(buf, pos, None, None, True)
        if buf.isascii():
            twin = getattr(pattern, "twin", None)
            if twin is not None and twin_applies(twin, buf, pos):
                return twin[0].search(buf, pos)
        return pattern.search(buf, pos)
    try:
        return pattern.search(buf, pos, None, None, partial, limit)
    except TimeoutError as error:
        raise SearchTimeout(
            f"respc: searching for the delimiter /{pattern.pattern}/ took longer than the {_LIMIT[0]} s "
            "limit set with respc.runtime.scan.set_search_timeout"
        ) from error


def partial_at(pattern: Any, buf: str, pos: int) -> bool:
    """Whether `pattern` matches `buf` at `pos` in a way that may still grow: partially, or completely up
    to the end of the buffer (which a streaming scan never takes as final, quirk Q19). Either way the
    scan holds the text from `pos`, and nothing before it can be committed."""
    limit = _LIMIT[0]
    try:
        match = (
            pattern.match(buf, pos, None, None, True)
            if limit is None
            else pattern.match(buf, pos, None, None, True, limit)
        )
    except TimeoutError as error:
        raise SearchTimeout(
            f"respc: searching for the delimiter /{pattern.pattern}/ took longer than the {_LIMIT[0]} s "
            "limit set with respc.runtime.scan.set_search_timeout"
        ) from error
    return match is not None and (match.partial or match.end() == len(buf))


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


def survives_extension(pattern: Any, buf: str, start: int, end: int, match: Any) -> bool:
    """Whether a complete match of `pattern` over `buf[start:end]`, ending before the buffer's edge, stays
    the same when the stream goes on: re-matched at `start` on the buffer extended by a character that is
    neither a newline nor the end of input, it must keep its span and the named groups of `match`
    (transformers 5.24; `$` before a trailing newline, or `\\Z` in a lookahead, fail this)."""
    limit = _LIMIT[0]
    try:
        if limit is None:
            twin = getattr(pattern, "twin", None) if buf.isascii() else None
            if twin is not None and twin_applies(twin, buf, start):
                extended = twin[0].match(buf + "\x00", start)
            else:
                extended = pattern.match(buf + "\x00", start)
        else:
            extended = pattern.match(buf + "\x00", start, None, None, False, limit)
    except TimeoutError as error:
        raise SearchTimeout(
            f"respc: searching for the delimiter /{pattern.pattern}/ took longer than the {_LIMIT[0]} s "
            "limit set with respc.runtime.scan.set_search_timeout"
        ) from error
    return (
        extended is not None and extended.span() == (start, end) and extended.groupdict() == match.groupdict()
    )


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


def run_start(buf: str, pos: int, run: frozenset[str]) -> int:
    """Where the trailing run of `run` characters of `buf` begins (not before `pos`)."""
    end = len(buf)
    while end > pos and buf[end - 1] in run:
        end -= 1
    return end
