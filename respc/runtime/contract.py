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

__all__ = ["ContractError", "Field", "State", "check_contract"]


class ContractError(ImportError):
    """A generated module written for another version of the runtime's contract."""


class State:
    """How the parser scans in one state.

    `scan(buf, pos)` is the streaming scan, returning `(commit, hold)`; `end_scan(buf, pos, memo)` the
    end-of-stream scan, returning the commit or None (a commit is `(start, end, is_open, field, match)`);
    `memo` is a dict the scans of one pass share (a class declaring `END_MEMO = False`, as modules
    generated before it did, gets `end_scan(buf, pos)`). A class may map end scans to twins for long
    texts in `FAR_SCANS` (same arguments and answers; used while more than 1,024 characters remain).
    `start_char` is the one character every watched delimiter starts with, when there is one; else
    `starts` is a pattern matching each character a watched delimiter can start with, when that is known.
    A chunk holding none of them cannot complete a delimiter, so it is routed without scanning. `runs`
    are the characters of the trailing runs that `\\s*<x>`-style delimiters hold back; `dirty` is the
    flag of the chunks routed in this state. `stems` are texts a watched delimiter's match can start
    with anywhere (its literals, a regex's literal prefix): held text that stays a proper prefix of one
    is a partial match, so the chunk that extends it is only added to the buffer; `partials` are the
    watched regex delimiters' whole patterns, for which the same holds while one still matches the held
    text partially at its start. `starters` (with a `start_char`, which each of them starts with) are
    texts that every match of every watched delimiter starts with (after its lead run): a chunk in
    which none occurs and no suffix is a proper prefix of one, nothing held, is routed without a scan.
    """

    __slots__ = (
        "dirty",
        "end_scan",
        "entered",
        "partials",
        "runs",
        "scan",
        "start_char",
        "starters",
        "starts",
        "stems",
    )

    def __init__(
        self,
        *,
        scan: Callable,
        end_scan: Callable,
        start_char: str | None = None,
        starts: Any = None,
        runs: tuple[frozenset[str], ...] = (),
        dirty: bool = False,
        stems: tuple[str, ...] = (),
        partials: tuple[Any, ...] = (),
        starters: tuple[str, ...] = (),
    ) -> None:
        self.scan = scan
        self.end_scan = end_scan
        self.start_char = start_char
        self.starts = starts
        self.runs = runs
        self.dirty = dirty
        self.stems = stems
        self.partials = partials
        self.starters = starters
        # What entering the state sets, in the order `CompiledParser._reset` and `_open` unpack it: one unpack
        # instead of eight attribute reads, since a whole-message parse changes state at every delimiter.
        self.entered = (scan, end_scan, start_char, starts, runs, dirty, stems, partials)


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
