"""The rows of the tables a generated parser class declares, and the check of its contract version.

`STATES` maps each parser state (a field's name inside its explicit region; the implicit field's name,
or None for the null sink, outside) to a `State`; `FIELDS` maps each field to a `Field`. The generated
code holds the decisions (one scan function per state, one value function per field); the runtime reads
these rows and holds the mechanism.
"""

from __future__ import annotations

from respc.runtime import CONTRACT

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["STEM_LIMIT", "ContractError", "Field", "State", "check_contract"]

STEM_LIMIT = 128  # the longest stem whose proper prefixes a state keeps as a set


class ContractError(ImportError):
    """A generated module written for another version of the runtime's contract."""


class State:
    r"""How the parser scans in one state, and how it feeds between passes.

    `scan(buf, pos)` is the streaming scan, returning `(commit, hold)`; `end_scan(buf, pos, memo)` the
    end-of-stream scan, returning the commit or None (a commit is `(start, end, is_open, field, match)`);
    `memo` is a dict the scans of one pass share (a class declaring `END_MEMO = False` gets
    `end_scan(buf, pos)`). A class may map end scans to twins for long texts in `FAR_SCANS` (same
    arguments and answers; used while more than 1,024 characters remain).

    `mode` is how a feed is handled while the state's region is open and nothing is held: "plain",
    "lead", "discard", "bare" or "general" (`respc.runtime.parser` says what each does; the plan decides,
    from the facts below). The facts:

    - `start_char`: the characters every watched delimiter's match starts with (after its lead run),
      when they are few; else `starts`, a pattern matching each character one can start with, if known.
      A chunk holding none of them cannot start a delimiter.
    - `runs`: the classes of the runs lead-run delimiters (`\s*<x>`) start with; a trailing run of the
      text is held back.
    - `stems`: texts a watched delimiter's match can start with anywhere, none found inside another: held
      text that stays a proper prefix of one is a partial match (mode held).
    - `starters`: texts every match of every watched delimiter starts with, after its lead run (the same
      as `stems` unless given; () when unknown): a chunk in which none occurs and no suffix is a proper
      prefix of one starts nothing.
    - `patterns`: the watched regex delimiters' whole patterns: held text that one still matches partially
      at its start is a hold too.
    - `guard`: the characters right after which a guarded branch of a watched delimiter (`(?<=;)...`) can
      match, "" when each is anchored at the buffer's start (`^...`); None when there is none. The facts
      above leave those branches out: they hold only past the buffer's start, where none of these
      characters is in the text looked at nor just before it.
    - `anchored`: for a state with a `guard`, the characters the text at the buffer's start must begin
      with for a branch anchored there (`^...`) to match or match partially (`^(?=\\[)`: "["); None when
      unknown. A chunk at the start that begins with none of them is judged by the facts above, as any
      later one (once no guard character is in it either).
    - `behind`: for a state with a `guard`, the literals its guarded branches' lookbehinds read, when
      each reads one (`(?<=</invoke>)`: `("</invoke>",)`); None when one reads a class of characters. A
      guard character right before the scan position guards nothing where the text up to it ends with
      none of them (`</think>`).
    - `dirty`: the flag of the chunks routed in this state.
    - `watch`: every watched delimiter, in the scan's tie-break order, as `(delimiter, is_open, field,
      recheck)`: the delimiter a regex's whole pattern or a tuple of literals; `recheck`, whether a regex
      match ending before the edge is final only if it survives extension (5.24), and for a tuple whether
      one of its literals extends another (a match at the edge may then grow, whichever it is). Given for
      the states of the fast modes: once a held partial match of a regex delimiter, or a held stem's
      prefix, completes at the scan position, the others are tested at its start only
      (`CompiledParser._commit_held`, `_commit_literal`), not searched.
    - `wide`: False for a state whose fast modes may keep only the chunk as the buffer in a template whose
      guard looks back more than one character (`CONTEXT` > 1): none of its own delimiters looks back
      that far, and each it watches either is at least `CONTEXT` characters long (a state entered by a
      commit here finds that much context in the delimiter itself) or is a literal that no lookbehind can
      read past (no literal of `LOOKBEHINDS` holds it after its first character). None: as `CONTEXT`
      says.

    `start_char` may hold several characters (up to three): the fast modes then test a chunk for all of
    them and the guard characters at once (`several`, a set).
    """

    __slots__ = (
        "anchored",
        "behind",
        "dirty",
        "end_scan",
        "entered",
        "guard",
        "mode",
        "patterns",
        "regex_prefixes",
        "runs",
        "scan",
        "several",
        "start_char",
        "starters",
        "starts",
        "stems",
        "watch",
        "watched",
        "wide",
    )

    def __init__(
        self,
        *,
        mode: str = "general",
        scan: Callable,
        end_scan: Callable,
        start_char: str | None = None,
        starts: Any = None,
        runs: tuple[frozenset[str], ...] = (),
        stems: tuple[str, ...] = (),
        starters: tuple[str, ...] | None = None,
        patterns: tuple[Any, ...] = (),
        guard: str | None = None,
        anchored: str | None = None,
        behind: tuple[str, ...] | None = None,
        dirty: bool = False,
        watch: tuple[tuple[Any, bool, Any, bool], ...] = (),
        wide: bool | None = None,
        **retired: Any,
    ) -> None:
        # `retired`: a row written for an older contract (its keys, such as `partials`) is accepted here so
        # that the class's contract check, which runs once the class body is done, says what to do.
        self.mode = mode
        self.scan = scan
        self.end_scan = end_scan
        self.start_char = start_char
        self.starts = starts
        self.runs = runs
        self.stems = stems
        self.starters = stems if starters is None else starters
        self.patterns = patterns
        self.guard = guard
        self.anchored = anchored
        self.behind = behind
        self.dirty = dirty
        self.watch = watch
        self.wide = wide
        # What entering the state sets, in the order `CompiledParser._reset` and `_open` unpack it: one
        # unpack instead of eight attribute reads, since a whole-message parse changes state at every
        # delimiter. With it, the one run class of mode lead and the proper prefixes of the stems, as a
        # set (of stems up to STEM_LIMIT characters: the set grows as the square of a stem's length, and
        # held text that only a longer stem explains goes the general way, which is exact anyway).
        run = runs[0] if len(runs) == 1 else None
        prefixes = frozenset(
            stem[:k] for stem in stems if len(stem) <= STEM_LIMIT for k in range(1, len(stem))
        )
        # The character the fast modes test a chunk for with `in`; "" when there are several (start and
        # guard characters), which they then test for at once, as a set (`isdisjoint`), before asking
        # `_starts_nothing` of a chunk that holds one.
        watched = self.watched = start_char + guard if start_char is not None and guard else start_char
        test = watched if watched is None or len(watched) == 1 else ""
        self.several = frozenset(watched) if test == "" else None
        self.entered = (scan, end_scan, test, run, dirty, stems, prefixes, patterns)
        # The proper prefixes of the regex delimiters' stems that are no literal stem's (of this state's):
        # held text that is one is that regex's partial match, which, once the text stops being a stem's
        # prefix, its partial search settles (`CompiledParser._stem_pattern`); a set lookup spares that
        # search for the others, which a pass settles anyway. (Per state: longcat's `</longcat_` is a
        # prefix of the literal `</longcat_think>` only where that is watched.)
        regex = {stem for pattern in patterns for stem in getattr(pattern, "stems", ())}
        self.regex_prefixes = frozenset(
            stem[:k] for stem in regex if len(stem) <= STEM_LIMIT for k in range(1, len(stem))
        ) - frozenset(
            stem[:k]
            for stem in stems
            if stem not in regex and len(stem) <= STEM_LIMIT
            for k in range(1, len(stem))
        )


class Field:
    """What closing a region of one field does.

    `value(body, captures)` gives the region's value (content parser, then transform); `join` is the
    string a repeated text field joins its values with (None: no join); `repeats` collects the values in
    a list; `close_captures` adds the named groups of the close match to the captures first.
    """

    __slots__ = ("close_captures", "closing", "join", "repeats", "value")

    def __init__(
        self, *, value: Callable, join: str | None = None, repeats: bool = False, close_captures: bool = False
    ) -> None:
        self.value = value
        self.join = join
        self.repeats = repeats
        self.close_captures = close_captures
        self.closing = (value, join, repeats)  # what `CompiledParser._close` unpacks, in one go


def check_contract(cls: type) -> None:
    """Refuse, with one line, a generated class written against another contract version."""
    declared = getattr(cls, "CONTRACT", None)  # inherited by subclasses of a generated parser
    if declared == CONTRACT:
        return
    module = cls.__module__
    written = "an older respc (before contract versions)" if declared is None else f"contract {declared}"
    raise ContractError(
        f"{module}: this parser module was generated for {written}, but this respc runtime speaks "
        f"contract {CONTRACT}; regenerate it (`respc regen` for the shipped presets, "
        "`respc compile SOURCE -o OUT` for your own modules)"
    )
