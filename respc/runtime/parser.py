"""The processing pass that every generated parser runs, written once.

A generated module subclasses `CompiledParser` and declares two tables (`STATES`: how each parser state
scans and feeds; `FIELDS`: what closing each field's region does, see `respc.runtime.contract`); this
class holds the mechanism of transformers' `ResponseParser._process` (commit the best delimiter, route
text, open and close regions, hold back possible delimiters), so event lists match the oracle's exactly.
Unlike the oracle it keeps only the unconsumed text (plus the context the patterns can look back at) and
region bodies as lists of parts, so every feed costs O(chunk + held text).

A feed is handled by the parser's current mode. The general mode is the class's `feed`; after each of
its passes `_settle` installs the next feed's mode on the instance (`self.feed`), so dispatch costs no
extra call, and names it in `_mode`. A caller may hold a bound `feed` across feeds (`f = parser.feed`,
`map(parser.feed, chunks)`), so every mode first checks that it is still the installed one and otherwise
hands the chunk to the one installed (`_installed`, a call more). Each fast mode answers the chunks it
can without a pass, exactly as the pass would, and hands every other chunk to the general mode's work
(`_general`, right in every state):

| mode | installed when | a chunk it takes |
|---|---|---|
| plain | the state's mode (a region, up to three start characters, no lead runs); the region is open, nothing held | holds no start character, or starts nothing: routed as one event; ends in a stem's proper prefix after no start character: the rest routed, that held (`_hold_tail`); in a state of one regex delimiter and no stem, held from that pattern's partial match (`_hold_pending`) |
| lead | the state's mode (as plain, with delimiters that start with a run of one class, `\\s*<x>`); the region is open; nothing held but a run | starts nothing: routed up to its trailing run, which is held (a chunk that is all run is set aside, not copied); ends in a stem's proper prefix, perhaps after a run: held from there as plain holds it, or from the run where a lead-run delimiter's partial match holds it |
| discard | the state's mode (outside every region of a template without implicit field); nothing held | holds no start character: dropped |
| bare | the state's mode (the region watches no delimiter); the region is open | any text: routed |
| opening | the state's mode is plain or lead, but the implicit region is not open yet (a reply's start, after `</think>`); nothing held | holds no start character (in mode lead, not all run): the region opens and that mode routes the chunk and is installed |
| held | the held text is a proper prefix of a stem, or a partial match of a known regex delimiter | keeps it one: the buffer grows |
| pending | where a guarded branch may match, the partial search of a regex delimiter found a partial match at the scan position | keeps it one (that partial search again): the buffer grows |
| general | otherwise (after construction, unless the prompt's pass settled a fast mode, or without a prompt's remainder the implicit state names one, `_FIRST_MODE`; an error, `finalize`) | every chunk: a chunk that ends in a stem's proper prefix after text with no start character is held without a scan (`_hold_stem`); a chunk in which nothing can start is routed without a scan (`_skips_scan`); any other takes the oracle's pass (`_process`) |

Within a pass, the state entered after a commit is not scanned when what is left starts nothing
(`_rest_hold`; its commonest answers, with the routing and the next mode, in one method: `_settle_rest`).
The facts the fast modes rest on leave out guarded branches (`^...`, `(?<=;)...`), so none of them is
taken where one may match (`_unguarded`; docs/internals.md says why each is exact). A mode never changes
what is routed, held or committed; `feed_mode` names the current one (the tests record the modes streams
take).

Routed text reaches a region's body through `_route` (append, coalesce long bodies, emit the chunk). The
fast modes inline its append, where a method call costs 8-10% of a chunk's time, and the pass appends
the last part of a region that closes at once, which needs no coalescing.
"""

from __future__ import annotations

from operator import attrgetter
from types import MappingProxyType

from respc.runtime.contract import check_contract
from respc.runtime.scan import (
    AfterHead,
    LazyRegex,
    held_pattern,
    lead_holds,
    partial_held,
    pending_start,
    remember_held,
    run_start,
    scan_pattern,
    starts_at,
    stems_rule_out,
)
from respc.runtime.tools import coerce_tool_calls, tool_params

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar

    from respc.runtime.contract import Field, State

__all__ = ["PREFIX_REQUIRED", "CompiledParser"]

_new = object.__new__

PREFIX_REQUIRED = (
    "`ResponseParser`/`parse_response` requires `prefix` (the chat prompt sent to the model before "
    "generation), because chat templates often pre-write part of the assistant message (e.g. an "
    "opening `<think>` tag) that the parser must see to parse the output correctly. If the generation "
    'already contains the complete message, pass `prefix=""` to opt out explicitly.'
)

_find = str.find
_COALESCE = 512  # parts of a region (or pieces of a held run) joined into one block at a time
_FAR_TEXT = 1024  # characters from which an end-of-stream pass takes the class's FAR_SCANS
_REST = 256  # the longest text left after a commit that `_rest_hold` looks at
_SIZED = (list, dict, str)  # values the oracle drops from the message when empty (None always)
# The modes, as `_mode` names the one installed (`feed_mode`): a fast mode checks it is still the installed
# one, since a caller may hold a bound `feed` across feeds (`f = parser.feed`, `map(parser.feed, chunks)`).
# Compared with `==`, not `is`: an unpickled parser's `_mode` is an equal string, not the same object.
_GENERAL, _PLAIN, _LEAD, _DISCARD, _BARE, _HELD = "general", "plain", "lead", "discard", "bare", "held"
_PENDING, _OPENING = "pending", "opening"

# `_commit_literal`'s answer when no watched delimiter matches or partially matches at the position; mode
# held's mark that it has not asked it yet; and `_commit_held`'s, when asked, for an empty match there.
_NOTHING = ()
_UNTRIED = object()
_EMPTY = object()
_NOWHERE = object()  # `_commit_held`'s, when asked, where its pattern's search finds nothing before the end

# The prefix passes remembered per parser class (`_remember`): remainders up to this long, this many.
_SETTLED_LENGTH, _SETTLED_LIMIT = 256, 64
# The first feeds remembered per parser class (`_first_feed`): chunks up to this long (a token, a small
# delta: not a whole message fed at once, which seldom recurs), this many.
_FIRST_LENGTH, _FIRST_LIMIT = 32, 256
# The general mode's passes (`_pass`) in this process: a first feed that took none is not kept. (Another
# thread's pass in between only makes one such feed kept: a state kept is exact whatever it cost.)
_PASSES = [0]
# The attributes `_start` sets, in its order, which `_resume` sets in the same order.
_SETTLED_ORDER = (
    *("_remainder", "_tools", "errors", "_buf", "_pos", "_output", "_finalized", "_run_pieces"),
    *("_run_pieces_limit", "_held", "_held_pattern", "_mode", "_current", "_scan", "_end_scan"),
    *("_start_char", "_run", "_dirty", "_stems", "_stem_prefixes", "_patterns", "_captures", "_parts"),
    *("_parts_limit", "_opened", "_empty_open", "_initial_events"),
)
_SETTLED_VALUES = attrgetter(*_SETTLED_ORDER)  # (read by name: `vars` would give the instance a dict)
_SCALARS = frozenset((str, int, float, bool, type(None)))


class CompiledParser:
    """Streaming parser for one compiled template; see the generated subclass for the format."""

    # Declared by the generated subclass (the contract version is checked when the class is created).
    CONTRACT: ClassVar[int]
    TARGET: ClassVar[str]  # the transformers release it parses as: "5.23"
    TEMPLATE: ClassVar[dict]  # the response template it was compiled from
    STATES: ClassVar[dict[Any, State]]  # state (field name; IMPLICIT outside explicit regions) -> State
    FIELDS: ClassVar[dict[Any, Field]]  # field name -> Field
    IMPLICIT: ClassVar[Any]  # the implicit field's name, or None for the null sink
    REQUIRED: ClassVar[tuple]  # fields with `optional` false, in template order
    DEFAULT_KEYS: ClassVar[frozenset]  # the keys of `defaults`, never dropped from the message
    START_ANCHOR: ClassVar[Any]  # compiled start anchor
    START_ANCHOR_KIND: ClassVar[str]  # "start_anchor" or "start_anchor_pattern"
    CONTEXT: ClassVar[int | None]  # consumed characters kept as pattern context; None keeps everything
    PATTERNS: ClassVar[tuple]  # every `LazyRegex` the module holds, for `warm_up`
    # Whether the end-of-stream scans take a memo, `end_scan(buf, pos, memo)` (modules generated before
    # it was added take two arguments and declare nothing).
    END_MEMO: ClassVar[bool] = False
    # End-of-stream scans for a pass over a long text, by the scan they replace (modules generated before
    # they were added, and templates without a literal worth it, have none).
    FAR_SCANS: ClassVar[dict | None] = None
    # (field, open pattern, literal, can extend) of every open, in template order, when the field names
    # cannot all be compared (None or an integer beside a string): a tie of two opens then raises
    # TypeError, as the oracle's tie-break does (`_break_tie`, at every scan outside explicit regions; the
    # plan gives such templates no fast path). Empty for the others, whose scans order opens as it does.
    UNORDERED: ClassVar[tuple] = ()
    # Whether `parse_whole` feeds the text and finalizes, as the oracle's `parse_response` does, rather
    # than take one end-of-stream pass (the plan's choice, for patterns its analyses do not read).
    WHOLE_BY_STREAM: ClassVar[bool] = False
    # A literal start anchor's literals (None for a pattern, and in modules generated before it was added),
    # and the same when no literal's end can overlap another's start (`_last_anchor_end`), set when the
    # class is created.
    START_ANCHOR_LITERALS: ClassVar[tuple[str, ...] | None] = None
    _RFIND_ANCHORS: ClassVar[tuple[str, ...] | None] = None
    _WIDE: ClassVar[bool] = False  # CONTEXT > 1 (a wide lookbehind guard): the fast modes take `_feed_wide`
    # The literals the guards wider than one character read (modules generated before it was added declare
    # none: None, and `_feed_wide` then always keeps the context), and the same less their first character,
    # set when the class is created.
    LOOKBEHINDS: ClassVar[tuple[str, ...] | None] = None
    _LOOKBEHIND_TAILS: ClassVar[tuple[str, ...] | None] = None

    # The first feeds this class remembers (`_first_feed`); None for a class that remembers none (a subclass
    # of a generated class, which may change how a feed goes). `_UNFED`: `_finalized` of a parser created
    # without a prompt's remainder, None where its first feed may be remembered (`_start`).
    _first_fed: ClassVar[dict | None] = None
    _UNFED: ClassVar[bool | None] = False
    # The mode of a parser created without a prompt's remainder: opening where its implicit state allows
    # (`_opens`: the first chunk of most replies is routed without the general mode), else general.
    _FIRST_MODE: ClassVar[str] = "general"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_contract(cls)
        states = cls.__dict__.get("STATES")
        remembers = "CONTRACT" in cls.__dict__
        cls._first_fed = {} if remembers else None
        start = states.get(cls.IMPLICIT) if remembers and states else None
        cls._UNFED = None if start is not None and start.guard is not None else False
        cls._WIDE = (cls.CONTEXT or 0) > 1 if "CONTEXT" in cls.__dict__ else cls._WIDE
        if states:
            first = states.get(cls.IMPLICIT)
            # (Not mode discard, outside every region: there a reply starts with a delimiter, `<|START_RESPONSE|>`,
            # whose prefix the general mode holds at once, where mode discard would ask `_starts_nothing` first.)
            opens = (
                first is not None
                and cls.IMPLICIT is not None
                and first.mode in ("plain", "lead")
                and first.guard is None
                and first.entered[2] is not None  # (the fast modes' start-character test, `_start_char`)
                and not (cls._WIDE and first.wide is not False)
            )
            cls._FIRST_MODE = _OPENING if opens else _GENERAL
        if "LOOKBEHINDS" in cls.__dict__:
            lookbehinds = cls.LOOKBEHINDS
            cls._LOOKBEHIND_TAILS = None if lookbehinds is None else tuple(text[1:] for text in lookbehinds)
        if "START_ANCHOR" in cls.__dict__ or "START_ANCHOR_LITERALS" in cls.__dict__:
            literals = cls.__dict__.get("START_ANCHOR_LITERALS")  # (a subclass's anchor, not its parent's)
            cls._RFIND_ANCHORS = literals if literals is not None and _overlap_free(literals) else None

    @classmethod
    def warm_up(cls) -> None:
        """Compile the template's regex patterns now rather than in the first parse.

        Generated modules compile `regex` patterns on first use, so that importing one stays cheap; the
        first parse then pays for importing `regex` (~15 ms once per process). A server that would rather
        pay it at start-up calls this once.
        """
        for pattern in (*cls.PATTERNS, cls.START_ANCHOR):
            if isinstance(pattern, LazyRegex):
                pattern.compiled()

    @staticmethod
    def defaults() -> dict:
        """A fresh copy of the template's `defaults`."""
        return {}

    def __new__(
        cls, prefix: Any = None, *, tools: list | None = None, errors: str = "strict", tokenizer: Any = None
    ) -> Any:
        """With a `tokenizer`, the parser as `tokenizer.get_response_parser` gives it (an id `prefix`,
        `feed_ids(ids)`), as the module's `parse_response` takes `tokenizer=`; else a parser."""
        if tokenizer is None:
            return object.__new__(cls)
        import functools

        from respc.runtime.tokenizer import response_parser_with_tokenizer

        return response_parser_with_tokenizer(
            functools.partial(cls, errors=errors), prefix=prefix, tools=tools, tokenizer=tokenizer
        )

    def __init__(
        self,
        prefix: str | None = None,
        *,
        tools: list | None = None,
        errors: str = "strict",
        tokenizer: Any = None,  # (taken by `__new__`, which returns another object then)
    ) -> None:
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if errors not in ("strict", "keep"):
            raise ValueError(f"errors must be 'strict' or 'keep', got {errors!r}")
        remainder = self._truncate_past_last_anchor(prefix) if prefix else ""
        self._start(remainder, tool_params(tools, self.TARGET) if tools else {}, errors == "keep")

    def _start(self, remainder: str, tools: dict[str, dict], keep_errors: bool) -> None:
        """The state right after construction: `remainder` is the prefix past its last start anchor."""
        # 28 attributes here, and `feed` once a fast mode is installed: CPython shares one key table among
        # instances of up to 30 attributes, and a 30th made creating a parser and reading its attributes
        # slower (a whole-message parse +15%); a 29th (a second start-character test) made the short
        # streams of every preset 3-5% dearer in instructions.
        if remainder:
            settled = type(self).__dict__.get("_settled")
            state = settled.get((remainder, keep_errors)) if settled is not None else None
            if state is not None:
                self._resume(state, tools)
                return
        self._remainder = remainder  # what `restart` replays (not the whole prompt)
        self._tools = tools
        # errors="keep": a region that fails to parse is reported here instead of raising (not upstream).
        self.errors: list[dict] | None = [] if keep_errors else None
        self._buf = ""
        self._pos = 0
        self._output: dict[str, Any] = self.defaults()
        # None until the first feed where that feed may be remembered (`_first_feed`); True once finalized.
        self._finalized: bool | None = self._UNFED
        self._run_pieces: list[str] = []  # mode lead's newest pieces of a held run, not yet in _buf
        self._run_pieces_limit = _COALESCE
        self._held: str | None = None  # held text that is a proper prefix of a stem (mode held)
        self._held_pattern: Any = None  # or the regex delimiter it is a partial match of
        self._mode = _GENERAL if remainder else self._FIRST_MODE  # the mode installed as `feed` (`_settle`)
        self._reset()
        self._initial_events: list[dict] | tuple[dict, ...] = []  # (read as `initial_events`)
        if remainder:
            self._buf = remainder
            self._process(self._initial_events, False)
            self._trim()
            # The first feed's mode, as after any pass: a prompt that opens a region (`<think>\n`) leaves
            # its first chunk to mode plain or lead, not to the general mode's tests and pass. It is named,
            # not installed: a bound method on the instance is a reference cycle, which a parser that is
            # never fed (a whole message, a request cancelled at once) would leave to the garbage
            # collector. The class's `feed` hands the first chunk to it and installs it (`_installed`).
            self._settle()
            # (Remembered where the first chunk takes the general mode in a state with a guard, whose pass
            # the fast modes cannot spare; elsewhere it costs about what resuming would.)
            self._finalized = (
                None
                if self._first_fed is not None
                and self._mode == _GENERAL
                and self.STATES[self._current].guard is not None
                else False
            )
            del self.feed
            if len(remainder) <= _SETTLED_LENGTH:
                self._remember(remainder, keep_errors)

    def _remember(self, remainder: str, keep_errors: bool) -> None:
        """Keep the state the prefix pass left, for the next parser of this class given the same remainder.

        A server sends every request of a model the same generation prompt, whose remainder (`<think>\n`)
        opens a region: replaying that pass cost 5-13 µs, several times the rest of creating a parser. The
        pass reads nothing but the remainder and the errors mode (the tools only to type a call that closes,
        whose value is a dict, refused below), so its result is a function of the two. The state is kept
        only when its attributes are the usual ones and every list or dict in it holds scalars (the events:
        dicts of scalars), which `_resume` copies; anything else (a closed call, a kept error, a list in the
        defaults) is replayed every time. (A held pattern, a `LazyRegex` or an `AfterHead`, is never
        changed once made, and is shared.) A generated class's pass sets just the attributes
        `_SETTLED_ORDER` names, read by name; only a subclass's (which may set more) is checked with
        `vars(self)`, which makes the instance keep a dict: this parser, which goes on streaming, would be
        about 30% slower.
        """
        if "CONTRACT" not in type(self).__dict__ and tuple(vars(self)) != _SETTLED_ORDER:
            return
        values = self._snapshot(self._initial_events)
        if values is None:
            return
        settled = type(self).__dict__.get("_settled")
        if settled is None:
            settled = {}
            type(self)._settled = settled
        elif len(settled) >= _SETTLED_LIMIT:
            settled.clear()  # prompts without a start anchor: each remainder is new; keep the memo small
        settled[remainder, keep_errors] = (values, tuple(dict(event) for event in self._initial_events))

    def _snapshot(self, events: list[dict]) -> tuple | None:
        """The attributes `_resume` sets, in its order, each list and dict copied, but `_tools` and
        `_initial_events` (each parser's own): when they and `events` hold only scalars; else None."""
        held = (
            self._output.values(),
            self._captures.values(),
            self._run_pieces,
            self._parts,
            self.errors or (),
            *(event.values() for event in events),
        )
        if any(type(item) not in _SCALARS for items in held for item in items):
            return None
        values = [value.copy() if type(value) in (list, dict) else value for value in _SETTLED_VALUES(self)]
        values[1] = values[-1] = None
        return tuple(values)

    def _resume(self, state: tuple[tuple, tuple[dict, ...]], tools: dict[str, dict]) -> None:
        """The state `_remember` kept, with fresh copies of its lists and dicts (callers may change them).

        The attributes are set one by one in `_start`'s order (`_SETTLED_ORDER`), so that the instance keeps
        its values inline: assigning a copied `__dict__` took 0.3 µs but made every later attribute access
        slower (a whole short stream +20%)."""
        values, events = state
        (
            self._remainder,
            self._tools,
            self.errors,
            self._buf,
            self._pos,
            self._output,
            self._finalized,
            self._run_pieces,
            self._run_pieces_limit,
            self._held,
            self._held_pattern,
            self._mode,
            self._current,
            self._scan,
            self._end_scan,
            self._start_char,
            self._run,
            self._dirty,
            self._stems,
            self._stem_prefixes,
            self._patterns,
            self._captures,
            self._parts,
            self._parts_limit,
            self._opened,
            self._empty_open,
            self._initial_events,
        ) = values
        self._tools = tools
        if self.errors is not None:
            self.errors = []
        self._output = self._output.copy()
        self._run_pieces = self._run_pieces.copy()
        self._captures = self._captures.copy()
        self._parts = self._parts.copy()
        self._initial_events = events  # (copied when read: `initial_events`)

    # -- read-only accessors (what the serving layer uses) -------------------------------------------

    @property
    def initial_events(self) -> list[dict]:
        """The events the prompt's remainder caused (a region it opened), as transformers' attribute. A
        parser resumed from a kept prefix pass (`_resume`) copies them when they are first read: a parser
        created and never fed (a request cancelled at once) pays nothing for them."""
        events = self._initial_events
        if type(events) is tuple:
            events = self._initial_events = [dict(event) for event in events]
        return events

    @initial_events.setter
    def initial_events(self, events: list[dict]) -> None:
        self._initial_events = events

    @property
    def current_field(self) -> Any:
        """The field whose region the parser is in: an explicit region's field, else the implicit field
        (None when the template has none)."""
        return self._current

    @property
    def tool_parameters(self) -> Mapping[str, dict]:
        """The `properties` of each tool's parameters, by tool name, as `tools=` gave them (read-only)."""
        return MappingProxyType(self._tools)

    @property
    def finalized(self) -> bool:
        """Whether `finalize` has returned (a later `feed` or `finalize` raises)."""
        return self._finalized is True

    def restart(self) -> CompiledParser:
        """A new parser of this class, as this one was right after construction: the same prefix (past its
        last start anchor), tools and errors mode."""
        parser = type(self).__new__(type(self))
        parser._start(self._remainder, self._tools, self.errors is not None)
        return parser

    # -- streaming -------------------------------------------------------------------------------------

    def _truncate_past_last_anchor(self, prefix: str) -> str:
        last_end = None
        literals = self._RFIND_ANCHORS
        if literals is not None and type(prefix) is str:
            # The end of the last match of the anchors' alternation, without walking every match: the
            # latest end of any literal's last occurrence, which, as no literal's end can be another's
            # start, is a match of the alternation (nothing matched before it can have consumed it).
            for literal in literals:
                at = prefix.rfind(literal)
                if at >= 0 and (last_end is None or at + len(literal) > last_end):
                    last_end = at + len(literal)
        else:
            try:
                for match in self.START_ANCHOR.finditer(prefix):
                    last_end = match.end()
            except TypeError as error:
                if not str(error).startswith("expected string or bytes-like object"):
                    raise
                # A prefix that is neither a str nor bytes-like: transformers searches it with the `regex`
                # module, whose message for it differs from `re`'s and between its own releases ("expected
                # string or buffer" in 2026.5, "a bytes-like object is required, not 'int'" in 2026.12), so
                # the installed module raises it.
                refused = error
            else:
                refused = None
            if refused is not None:
                import regex

                regex.compile("").search(prefix)
                raise refused  # (a type `regex` takes where `re` did not: none known)
        if last_end is None:
            import logging  # only needed on this path; keeps importing a parser cheap

            logging.getLogger("respc").info(
                "response_template defines %s but the anchor was not found in the prefix; "
                "the parser will process the entire prefix instead.",
                self.START_ANCHOR_KIND,
            )
            return prefix
        return prefix[last_end:]

    def _reset(self, entered: bool = False) -> None:
        """Back in the implicit region, as after construction; `entered`: its state is entered already
        (the region just closed was the implicit one). Entering a state takes its scans and fast-path facts
        in one unpack (`State.entered`), written out here and in `_open` (a method call costs as much)."""
        current = self._current = self.IMPLICIT
        if not entered:
            (
                self._scan,
                self._end_scan,
                self._start_char,
                self._run,
                self._dirty,
                self._stems,
                self._stem_prefixes,
                self._patterns,
            ) = self.STATES[current].entered
        self._captures: dict[str, str] = {}
        self._parts: list[str] = []
        self._parts_limit = _COALESCE
        self._opened = False
        self._empty_open = False  # a zero-width open with no text routed since (quirk Q5 guard)

    def _trim(self) -> None:
        context = self.CONTEXT
        if context is not None and self._pos > context:
            self._buf = self._buf[self._pos - context :]
            self._pos = context

    # -- feeding: one method per mode ------------------------------------------------------------------
    #
    # `feed` is the general mode. At the end of a pass `_settle` installs the mode of the next feed on the
    # instance (`self.feed`, a bound method: calling it costs no more than calling the class's `feed`) and
    # names it in `_mode`; each mode handles the chunks it can answer without a pass and hands the rest to
    # the general mode's work (`_general`). A mode checks `_mode` first: a `feed` bound earlier may be a
    # mode since replaced, and then hands the chunk to the mode `_mode` names (`_installed`). `_mode` is
    # stored before `feed`, so an interruption between the two leaves the newer decision named.

    def feed(self, text: str) -> list[dict]:
        """Consume the next piece of model output; returns the events it caused."""
        if self._mode != _GENERAL:
            if self._mode == _OPENING:
                return self._feed_opening(
                    text
                )  # (which installs the next feed's mode, whichever way it goes)
            return self._installed(text)  # bound before a fast mode was installed (`map(parser.feed, ...)`)
        if self._finalized is None:
            return self._first_feed(text)
        return self._general(text)

    def feed_text(self, text: str) -> str | None:
        """`feed` for a chunk that the installed fast mode routes into the open region as one
        `region_chunk` event or none: returns that event's text ("" for none). For any other chunk (or
        mode) it does nothing and returns None: then call `feed`.

        A streaming server's wrapper turns most feeds' one event into a delta of its own
        (`respc.serving.DeltaStream` calls this first); the field is `current_field`, which the chunk
        leaves as it was. The commonest branches of modes plain and lead are written out here without the
        event (a third of the wrapper's cost per delta); the others run the installed mode itself."""
        mode = self._mode
        if type(text) is not str or not text:
            return None
        if mode == _LEAD:
            if (
                self._start_char in text
                and (self._start_char or not self.STATES[self._current].several.isdisjoint(text))
                and not self._starts_nothing(text)
            ):
                return None
            if (
                (not self._WIDE or self.STATES[self._current].wide is False)
                and text[-1] not in self._run
                and not self._run_pieces
                and self._pos == len(self._buf)
            ):
                self._buf = text  # `_feed_lead`'s first branch
                self._pos = len(text)
                parts = self._parts
                parts.append(text)
                if len(parts) >= self._parts_limit:
                    self._coalesce()
                return text
        elif mode == _PLAIN:
            start = self._start_char
            if self.CONTEXT or not start:  # `_plain_mode`'s choice: not `_feed_plain_literal`
                if (
                    start in text
                    and (start or not self.STATES[self._current].several.isdisjoint(text))
                    and not self._starts_nothing(text)
                ):
                    return None
                if not self._WIDE or self.STATES[self._current].wide is False:
                    self._buf = text  # `_feed_plain`
                    self._pos = len(text)
                    parts = self._parts
                    parts.append(text)
                    if len(parts) >= self._parts_limit:
                        self._coalesce()
                    return text
            elif start in text:
                return None
            else:
                parts = self._parts  # `_feed_plain_literal`
                parts.append(text)
                if len(parts) >= self._parts_limit:
                    self._coalesce()
                return text
        elif mode != _BARE:
            return None  # (mode discard: outside every region, there is nothing to send)
        events = self.feed(text)  # the installed mode, on its fast branch
        return events[0]["text"] if events else ""

    def _installed(self, text: str) -> list[dict]:
        """A chunk given to a mode that is not installed: the mode `_mode` names takes it. That is a `feed`
        bound before the mode was installed (`map(parser.feed, ...)`), or the class's `feed` on the first
        chunk after the prompt's pass named a fast mode (`_start`), which is installed then. (Dispatched
        by `_mode`, not through `self.feed`, which a caller may have wrapped.)"""
        method = self._mode_method()
        if method is None:
            return self._general(text)
        self.feed = method  # (`vars(self)` would tell whether it is, but makes the instance keep a dict)
        return method(text)

    def _mode_method(self) -> Any:
        """The method of the fast or held mode `_mode` names, as `_settle` installs it; None for the general
        mode."""
        mode = self._mode
        if mode == _PLAIN:
            return self._plain_mode()
        if mode == _LEAD or mode == _DISCARD:
            if self._WIDE and self.STATES[self._current].wide is not False:
                return self._feed_wide
            return self._feed_lead if mode == _LEAD else self._feed_discard
        if mode == _HELD:
            return self._feed_held
        if mode == _PENDING:
            return self._feed_pending
        if mode == _BARE:
            return self._feed_bare
        if mode == _OPENING:
            return self._feed_opening
        return None

    def _general(self, text: str, may_skip: bool = True) -> list[dict]:
        """The general mode's work, in any state: a chunk a fast mode does not take comes here too (with
        `may_skip` False where `_starts_nothing` has said no of it: the pass's `_skips_scan` would too)."""
        if text and self._pos == len(self._buf) and not self._run_pieces and not self._finalized:
            if (self._stems or self._patterns) and (held := self._hold_stem(text)) is not None:
                return held
            if (
                self._patterns
                and self.STATES[self._current].guard is not None
                and not self.UNORDERED
                and type(text) is str  # (any other type: the pass's concatenation raises upstream's error)
                and (self._pos or not self._unguarded(self._buf, 0, text))
            ):
                # Where a guard may match (the response's start, or right after `</invoke>`), the chunk
                # that a watched regex delimiter's partial search holds from the scan position is held,
                # as the pass would hold it (mode pending's fact), without the pass. (Past the start the
                # search is cheaper than asking; at the start, prose beside `^(?=\[)` needs neither.)
                buf = self._buf + text
                if self._pend(buf, self._pos, text):
                    self._buf = buf
                    return []
        return self._pass(text, may_skip)

    def _first_feed(self, text: str) -> list[dict]:
        """The first chunk of a parser whose prefix left the general mode in a state with a guard (a reply's
        start, where a guarded branch `^...` may match): the general mode's work, but a chunk this class
        has seen first after the same remainder, in the same errors mode, gives the state and events it
        gave then.

        Every reply of a server's model starts after the same remainder, and most with one of a few tokens
        (`The`, `[`, `{"`): the general mode's pass cost 3-12 µs there, where the guard keeps the fast
        modes off (ERNIE's `(?:^|<think>\\s*)`, Llama 4's `^(?=\\[)`). Like the prefix pass (`_remember`),
        the feed reads nothing but the state `_start` left, which the remainder and the errors mode decide,
        and the chunk (the tools only to type a call that closes, whose value is a dict, refused as
        `_remember` refuses it); a feed that raises is not kept, nor one that took no pass (a held prefix,
        mode pending's partial search), which costs about what resuming does."""
        self._finalized = False
        known = self._first_fed
        if (
            known is None
            or type(text) is not str
            or len(text) > _FIRST_LENGTH
            or len(self._remainder) > _SETTLED_LENGTH
        ):
            return self._general(text)
        key = (self._remainder, self.errors is not None, text)
        state = known.get(key)
        if state is not None:
            # Its own initial events and `errors` list (as empty as the kept one's): a caller may hold them.
            initial, errors = self._initial_events, self.errors
            self._resume(state[0], self._tools)
            self._initial_events, self.errors = initial, errors
            # Installed as the pass installs it (replacing a `feed` the caller set), `_installed` spared.
            self.feed = self._mode_method() or self._feed_general
            return [dict(event) for event in state[1]]
        passes = _PASSES[0]
        events = self._general(text)
        if _PASSES[0] == passes:
            return events  # (a held prefix, or mode pending: about as cheap as resuming)
        values = self._snapshot(events)
        if values is None:
            return events
        if len(known) >= _FIRST_LIMIT:
            known.clear()  # (replies that start with ever new chunks: keep the memo small)
        known[key] = ((values, ()), tuple(dict(event) for event in events))
        return events

    # The general mode under the name `_settle` installs it by (an instance attribute named `feed` shadows
    # the class's), and the name contract 2 modules assign in their class body, kept so that importing one
    # reaches the contract check (which says to regenerate) instead of failing on the name.
    _feed_general = feed_without_context = feed

    def _feed_plain(self, text: str) -> list[dict]:
        """Mode plain: the chunk (an exact `str`) holds no start character, or starts nothing, and is
        routed whole. (`in` costs a third of a `str.find` call, but takes a list: any other type, a str
        subclass too, goes the general way, which raises TypeError as upstream; `type`, not `__class__`,
        which an object can fake.)"""
        if self._mode == _PLAIN and text and type(text) is str:
            start = self._start_char
            if start in text and (start or not self.STATES[self._current].several.isdisjoint(text)):
                at = text.find(start) if start else self._first_start(text)
                if at >= 0 and text[at:] in self._stem_prefixes:
                    return self._hold_tail(text, at)  # (`_starts_nothing` would say no)
                if start and (last := text.rfind(start)) > at:
                    # Or from a later one, where the text before it starts nothing: Gemma 4's `<|"|>}<` at
                    # a call's end, beside `<tool_call|>`.
                    if text[last:] in self._stem_prefixes and self._starts_nothing(text[:last], self._buf):
                        return self._hold_tail(text, last)
                if not self._starts_nothing(text, self._buf):
                    if self._stems or (held := self._hold_pending(text)) is None:
                        return self._general(text, False)
                    return held
            self._buf = text  # the chunk is all the context the patterns can look back at
            self._pos = len(text)
            parts = self._parts  # `_route`'s append, inlined: this is most of a stream's feeds
            parts.append(text)
            if len(parts) >= self._parts_limit:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}]
        return self._general(text) if self._mode == _PLAIN else self._installed(text)

    def _hold_pending(self, text: str) -> list[dict] | None:
        """Mode plain's chunk that may start something, in a state that watches one regex delimiter and no
        stem (ERNIE's content, `\\n?</response>`: a newline may start it): the pass's one scan is that
        pattern's partial search, which, finding a match it holds, routes the text before it and holds the
        rest, kept by that pattern (`_hold_tail` does it, as `_route`, `_trim`, `_settle` and `_held_by`
        would); None for any other answer (a commit), and in any other state."""
        state = self.STATES[self._current]
        watch = state.watch
        if len(watch) != 1 or type(watch[0][0]) is tuple or state.guard is not None or self.UNORDERED:
            return None
        pattern = watch[0][0]
        pos = self._pos  # (the buffer's end: mode plain holds nothing)
        buf = self._buf + text
        start = pending_start(pattern, buf, pos)
        if start < 0:
            return None
        if pattern.head is not None:
            pattern = held_pattern(pattern, buf, start)
        return self._hold_tail(text, start - pos, pattern)

    def _first_start(self, text: str) -> int:
        """For a state with several start characters (`_start_char` is ""), the index of the first of
        them in `text`; -1 where none is, or where `_hold_tail` may not be asked: a state without stems,
        or one where a guarded branch may match in the text or just before it (`_hold_stem`'s test, asked
        only of a text that `_hold_tail` would hold: MiniMax-M2's `[` of `[e~[`, beside its `>`)."""
        if not self._stem_prefixes:
            return -1
        state = self.STATES[self._current]
        at = _first_of(text, state.start_char)
        if (
            at >= 0
            and state.guard is not None
            and text[at:] in self._stem_prefixes
            and not self._unguarded(self._buf, self._pos, text)
        ):
            return -1
        return at

    def _hold_tail(self, text: str, at: int, pattern: Any = None) -> list[dict]:
        """Modes plain and lead, past the buffer's start: the chunk's text from its first start character
        (at `at`, after no run of the lead class; or, in mode plain, from a later one, where the text
        before it starts nothing) is a proper prefix of a stem, or (mode lead) from the run
        before that character (the held run too, when `at` is 0) a partial match of the lead-run delimiter
        `pattern`, where no guarded branch can match (one start character means no guard character: its
        guard, if any, is `^` alone, which matches nothing past the start; for several, `_first_start`
        asks `_unguarded`); or (mode plain, `_hold_pending`) from where the partial search of its one regex
        delimiter `pattern` holds it. `_hold_stem`'s answer, written out for them: the text before it
        (after mode lead's held run, if any) is routed, the rest held (mode held)."""
        buf = self._buf
        pos = self._pos
        if pos == len(buf):
            routed = text[:at]
            held = text[at:]
            pos += at
        elif at:
            routed = buf[pos:] + text[:at]
            held = text[at:]
            pos = len(buf) + at
        else:
            routed = ""
            held = buf[pos:] + text
        buf += text
        context = self.CONTEXT
        if context is not None and pos > context:
            buf = buf[pos - context :]  # (`_trim`)
            pos = context
        self._buf = buf
        self._pos = pos
        self._held = held
        self._held_pattern = pattern
        self._mode = _HELD
        self.feed = self._feed_held
        current = self._current
        if not routed or current is None:
            return []
        parts = self._parts
        parts.append(routed)
        if len(parts) >= self._parts_limit:
            self._coalesce()
        return [{"type": "region_chunk", "field": current, "text": routed, "dirty": self._dirty}]

    def _plain_mode(self) -> Any:
        """The method of mode plain for the state entered: without regex delimiters, one that keeps no
        context, when the state has one start character (`_feed_plain_literal`); with a guard that looks
        back further than one character, one that keeps that much (`_feed_wide`), unless the state's row
        says it need not (`State.wide`)."""
        if self._WIDE and self.STATES[self._current].wide is not False:
            return self._feed_wide
        return self._feed_plain if self.CONTEXT or not self._start_char else self._feed_plain_literal

    def _feed_wide(self, text: str) -> list[dict]:
        """Modes plain, lead and discard for a template whose guard looks back more than one character
        (`(?<=</invoke>)`, `CONTEXT` > 1): their fast paths keep only the chunk as the buffer, so the
        `CONTEXT` characters before it are put back in front of it, unless no lookbehind can read them:
        one tried at or after the scan position that reaches back past the chunk's start holds the
        chunk's text up to that position after its own first character, so where no lookbehind's text
        does (`LOOKBEHINDS`: prose is not in `/invoke>`), the chunk is all the context needed. (Whether a
        fast path took the chunk is told by the buffer being the chunk itself: every other path builds a
        new string from a nonempty buffer, except mode lead's for a chunk that is all run, which leaves
        the buffer alone and is told apart first, since the buffer may be that very object.)"""
        before, pieces, mode = self._buf, self._run_pieces, self._mode
        if mode == _LEAD:
            run = self._run
            if type(text) is str and text and text[-1] in run and all(char in run for char in text):
                return self._feed_lead(text)  # (set aside whole, or the general mode's)
            events = self._feed_lead(text)
        elif mode == _PLAIN:
            events = self._feed_plain(text)
        elif mode == _DISCARD:
            events = self._feed_discard(text)
        else:
            return self._installed(text)  # (a `feed` bound while this mode was installed)
        if self._buf is text and before:
            tails = self._LOOKBEHIND_TAILS
            if tails is not None:
                pos = self._pos
                read = text if pos == len(text) else text[:pos]
                for tail in tails:
                    if read in tail:
                        break
                else:
                    return events
            context = (before + "".join(pieces) if pieces else before)[-self.CONTEXT :]
            self._buf = context + text
            self._pos += len(context)
        return events

    def _feed_plain_literal(self, text: str) -> list[dict]:
        """Mode plain for a template without regex delimiters: literals never look back, so the chunk
        need not even be kept as context."""
        if self._mode == _PLAIN and text and type(text) is str and self._start_char not in text:
            parts = self._parts
            parts.append(text)
            if len(parts) >= self._parts_limit:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}]
        return self._general(text) if self._mode == _PLAIN else self._installed(text)

    def _feed_discard(self, text: str) -> list[dict]:
        """Mode discard: outside every region of a template without an implicit field, a chunk holding no
        start character, or starting nothing (ERNIE's `</s>` after `</response>`, beside `<think>`), is
        dropped (`_skips_scan` and `_route_skipping_scan`'s answer, where no guarded branch can match)."""
        if self._mode == _DISCARD and text and type(text) is str:
            start = self._start_char
            if start in text and (start or not self.STATES[self._current].several.isdisjoint(text)):
                if not self._starts_nothing(text) or (
                    self.STATES[self._current].guard is not None
                    and not self._unguarded(self._buf, self._pos, text)
                ):
                    return self._general(text, False)
            if self.CONTEXT:
                self._buf = text  # the chunk is the context kept
                self._pos = len(text)
            return []
        return self._general(text) if self._mode == _DISCARD else self._installed(text)

    def _opens(self, state: Any) -> bool:
        """Whether mode opening can take the next chunk in `state` (of mode plain or lead, where no guarded
        branch can match, nothing held): the implicit region, not open yet (a reply's start, the text
        after `</think>`), with one start character to test for and the chunk as all the context kept."""
        return (
            not self._opened
            and self._current is not None
            and self._start_char is not None
            and not (self._WIDE and state.wide is not False)
        )

    def _feed_opening(self, text: str) -> list[dict]:
        """Mode opening: the state's mode (plain or lead) but for the implicit region, which is not open
        yet (`_opens`). A chunk those modes route whole (it holds no start character, and in mode lead
        does not end with a run, which would be held) opens the region as `_route` would and is routed by
        that mode, installed from now on; any other goes the general way (the pass opens the region
        where it routes text). The first chunk of most replies: a fifth of a short reply's stream went to
        the general mode's tests and pass for it."""
        if self._mode != _OPENING:
            return self._installed(text)
        if text and type(text) is str:
            start = self._start_char
            if start not in text or (not start and self.STATES[self._current].several.isdisjoint(text)):
                if self.STATES[self._current].mode == "lead":
                    run = self._run
                    cut = len(text)
                    while cut and text[cut - 1] in run:
                        cut -= 1
                    if not cut:
                        return self._hold_opening_run(text)
                    self._mode = _LEAD
                    self.feed = feed = self._feed_lead
                else:
                    self._mode = _PLAIN
                    self.feed = feed = self._plain_mode()
                self._opened = True
                events = feed(text)
                events.insert(0, {"type": "region_open", "field": self._current})
                return events
        return self._general(text)

    def _hold_opening_run(self, text: str) -> list[dict]:
        """Mode opening's chunk that is all run of the lead class (the `\n` after `</think>`): the pass
        routes nothing (`_route_skipping_scan` holds a trailing run), so the region stays unopened, and
        `_settle` holds the run as a stem's prefix or by the lead-run delimiter whose partial match it is
        (mode held); written out here. The general mode's when no delimiter holds it."""
        context = self.CONTEXT
        if context is None:
            buf, pos = self._buf + text, self._pos
        else:
            buf = self._buf[-(context or 1) :] + text  # (`_route_skipping_scan`'s context, at rest)
            pos = len(buf) - len(text)
        if self.STATES[self._current].guard is not None:
            return self._general(text)  # (which holds it as mode pending where a guarded branch is watched)
        if text in self._stem_prefixes:
            pattern = None
        elif not self._patterns or (pattern := self._held_by(buf, pos, text)) is None:
            return self._general(text)
        self._buf = buf
        self._pos = pos
        self._held, self._held_pattern = text, pattern
        self._mode = _HELD
        self.feed = self._feed_held
        return []

    def _feed_bare(self, text: str) -> list[dict]:
        """Mode bare: the region watches no delimiter, so it runs to the end of the stream and every chunk
        is routed whole."""
        if self._mode == _BARE and text and type(text) is str:
            parts = self._parts
            parts.append(text)
            if len(parts) >= self._parts_limit:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}]
        return self._general(text) if self._mode == _BARE else self._installed(text)

    def _feed_lead(self, text: str) -> list[dict]:
        """Mode lead: the region's delimiters start with a run of one class (`\\s*<tool_call>`). A chunk
        holding no start character (nor starting anything) is routed up to its trailing run, which is
        held, since it may start a delimiter; the held run, if any, goes in front of it. The held text is
        a run (its newest pieces set aside in `_run_pieces`), or nothing."""
        if self._mode != _LEAD:
            return self._installed(text)  # a `feed` bound while this mode was installed
        if not text:
            # The oracle ignores an empty (or any false) chunk and reruns its pass, which changes nothing
            # here. Answering directly keeps the empty deltas of a streaming detokenizer from sending a
            # held run through the general mode (rejoined, rescanned).
            return []
        if type(text) is str:
            start = self._start_char
            if start in text and (start or not self.STATES[self._current].several.isdisjoint(text)):
                if self._run_pieces:
                    # A run set aside, then a start character: rejoined, as the pass rejoins it. The held
                    # run is the buffer's rest now, which `_held` (if a pass named it) no longer is.
                    self._rejoin_run()
                    self._held = self._held_pattern = None
                at = text.find(start) if start else self._first_start(text)
                if at >= 0 and text[at:] in self._stem_prefixes:  # (`_starts_nothing` would say no)
                    run = self._run
                    cut = at
                    while cut and text[cut - 1] in run:
                        cut -= 1
                    if cut == at and (at or self._pos == len(self._buf)):
                        return self._hold_tail(text, at)
                    # After a run (in the chunk, or held, or both), which a lead-run delimiter's partial
                    # match holds with it, if one does (`_hold_stem`): ` ok\n<|im`, where `\s*<|im_end|>`
                    # is watched; `\n` held (perhaps set aside), then `<too`, beside `\s*<tool_call>`.
                    rest = text[cut:] if cut else self._buf[self._pos :] + text
                    pattern = None
                    if rest in self._stem_prefixes or (
                        self._patterns and (pattern := self._known_hold(rest)) is not None
                    ):
                        return self._hold_tail(text, cut, pattern)
                if not self._starts_nothing(text, self._buf):  # (the held run rejoined: all before it)
                    return self._lead_other(text, False)
            run = self._run
            pieces = self._run_pieces
            if text[-1] not in run:
                # The commonest feed of such a region (Qwen's content): the chunk, after the held run if
                # any, is routed whole. (Two near-copies on purpose: one block with a `routed` variable
                # made the first case 5-8% slower.)
                if not pieces and self._pos == len(self._buf):
                    self._buf = text  # the chunk is all the context the patterns can look back at
                    self._pos = len(text)
                    parts = self._parts  # `_route`'s append, inlined
                    parts.append(text)
                    if len(parts) >= self._parts_limit:
                        self._coalesce()
                    return [
                        {"type": "region_chunk", "field": self._current, "text": text, "dirty": self._dirty}
                    ]
                if pieces:
                    self._rejoin_run()
                routed = self._buf[self._pos :] + text
                self._buf = text
                self._pos = len(text)
                self._held = None
                parts = self._parts
                parts.append(routed)
                if len(parts) >= self._parts_limit:
                    self._coalesce()
                return [
                    {"type": "region_chunk", "field": self._current, "text": routed, "dirty": self._dirty}
                ]
            # The chunk ends with a run, which a lead-run delimiter may start: it is held.
            cut = len(text) - 1
            while cut and text[cut - 1] in run:
                cut -= 1
            if not cut:
                # The whole chunk extends the held run. Set it aside rather than copy the held text on
                # every feed (quadratic in a long run), in blocks as `_coalesce` does.
                pieces.append(text)
                if len(pieces) >= self._run_pieces_limit:
                    pieces[-_COALESCE:] = ["".join(pieces[-_COALESCE:])]
                    self._run_pieces_limit = len(pieces) + _COALESCE
                return []
            if pieces:
                self._rejoin_run()
            pos, buf = self._pos, self._buf
            routed = buf[pos:] + text[:cut] if pos < len(buf) else text[:cut]
            self._buf = text  # the chunk: its text before the held trailing run is the context
            self._pos = cut
            self._held = None  # the held text is now the chunk's trailing run
            parts = self._parts  # `_route`'s append, inlined
            parts.append(routed)
            if len(parts) >= self._parts_limit:
                self._coalesce()
            return [{"type": "region_chunk", "field": self._current, "text": routed, "dirty": self._dirty}]
        return self._lead_other(text)

    def _lead_other(self, text: str, may_skip: bool = True) -> list[dict]:
        """Mode lead's chunk that may start something (or is no `str`); `may_skip` as `_general`'s."""
        if self._held is not None and not self._run_pieces:
            # A held run that a lead-run delimiter's partial match may grow: mode held from now on (its
            # pass, if it takes one, settles the mode again).
            self._mode = _HELD
            self.feed = feed = self._feed_held
            return feed(text)
        return self._general(text, may_skip)

    def _feed_held(self, text: str) -> list[dict]:
        """Mode held: the held text is a proper prefix of a stem, or a partial match of the regex delimiter
        `_held_pattern`. A chunk that keeps it one only grows the buffer: no delimiter commits at or after
        a partial match, and nothing before it is left to route."""
        held = self._held
        if self._mode == _HELD and text and not self._run_pieces:  # (pieces set aside: the held text grows)
            grown = held + text  # a non-str chunk raises TypeError here, as upstream's concatenation
            if grown in self._stem_prefixes:
                self._buf += text
                self._held = grown
                return []
            pattern = self._held_pattern
            literal = _UNTRIED  # (`_commit_literal`'s answer, once asked)
            complete = (
                False  # (a stem complete in the grown text, where the held text was a regex stem's prefix)
            )
            if pattern is None and held in self.STATES[self._current].regex_prefixes:
                # Held as a stem's proper prefix, and no longer one. Most often nothing starts in the text
                # any more (`</stept` then `ml:p`, where `</steptml:invoke>` is watched): it is routed,
                # without the partial search and the tests of a commit there, which could find nothing.
                for stem in self._stems:
                    if stem in grown:
                        complete = True  # (a commit's, or the pass's, to tell)
                        break
                else:
                    if self._opened:
                        routed = self._release_held(grown)
                        if routed is not None:
                            return routed
                # Else a regex delimiter's stem may be complete, which its partial search tells more
                # cheaply than a pass.
                pattern = self._held_pattern = self._stem_pattern(held)  # (kept while it holds)
            if pattern is not None:
                known = pattern.partials
                if known is not None and not pattern.context and known.get(grown):
                    self._buf += text  # remembered as a partial match (`partial_held`): a dict lookup
                    self._held = grown
                    return []
                if pattern.lead is not None:
                    if len(grown) <= pattern.longest and lead_holds(pattern, grown):
                        self._buf += text
                        self._held = grown
                        return []
                    # Held as a run and a stem's proper prefix, and no longer so, with no stem complete:
                    # most often the chunk ended a false alarm (phi4-mini's ` f`, then `or t`, beside
                    # `\s*functools`) or a held run (`</think>\n\n`, then the answer), and starts nothing,
                    # so it is routed without the tests of a commit, which could find none.
                    for stem in self._stems:
                        if stem in grown:
                            break
                    else:
                        routed = self._release_held(grown)
                        if routed is not None:
                            return routed
                        for other in self._patterns:
                            if (
                                other is not pattern
                                and other.lead is not None
                                and len(grown) <= other.longest
                                and lead_holds(other, grown)
                            ):
                                # Another lead-run delimiter's partial match now (hunyuan's `<` of
                                # `\s*<tool_calls>`, then `ans` of `<answer>`) holds it (`_held_by`).
                                self._buf += text
                                self._held = grown
                                self._held_pattern = other
                                return []
                else:
                    run = self._run
                    if run and held[-1:] in run:
                        # A held run, beside a pattern without a lead class (MiniMax-M2's), likewise.
                        routed = self._release_held(grown)
                        if routed is not None:
                            return routed
                holds = pattern.holds
                if holds is not None and holds(grown):
                    self._buf += text  # the head has matched, the tail still may: a partial match
                    self._held = grown
                    if known is not None and not pattern.context:
                        remember_held(known, grown, True, len(grown))  # (the partial search's answer)
                    return []
                buf = self._buf + text
                if partial_held(pattern, buf, self._pos, grown):
                    self._buf = buf
                    self._held = grown
                    if pattern.head is not None:
                        self._held_pattern = held_pattern(pattern, buf, self._pos)
                    elif holds is not None:
                        # An `AfterHead` that no longer holds the text, which is still a partial match: the
                        # head, matched when the text was shorter, may match more of it now (an optional
                        # head, `(?:<|message_model|>)?`, matches nothing until it is whole).
                        self._held_pattern = held_pattern(pattern.whole, buf, self._pos)
                    return []
                commit = self._commit_held(pattern, buf, None, _NOWHERE)
                if commit is _NOWHERE:
                    # Its search finds no match, nor a partial one, before the buffer's end: where it is
                    # the only delimiter watched (Llama 3's `;` in a call's arguments, then ` b`, beside
                    # `\s*;(?=\s*\{...)|<\|eom_id\|>|...`), or the others' starters say none of them
                    # starts there either (phi4-mini's ` functools`, then `.lr`: its lookahead fails),
                    # nothing starts in it, and the pass routes it all, as `_release_held` does once told.
                    # Not where a guarded branch is watched: its empty partial match at the buffer's end,
                    # right after a guard character the chunk brought (`(?<=;)\s*(?=X)` after `;`), is
                    # no match before the end, but the next chunk may complete it (a review found this).
                    if self.STATES[self._current].guard is None and self._others_start_nothing(
                        grown, pattern.whole if type(pattern) is AfterHead else pattern
                    ):
                        routed = self._release_held(grown, len(grown))
                        if routed is not None:
                            return routed
                    commit = None
                if commit is not None:
                    return self._take(buf, commit)
                if complete:
                    # Neither its partial match nor its commit: the anchored tests at the held text's start
                    # tell a false alarm (Gemma 3's `\n\n[1]`) or a literal's commit more cheaply than the
                    # others' partial searches below.
                    literal = self._commit_literal(buf, self._pos)
                    if literal is _NOTHING:
                        routed = self._release_held(grown, 1)
                        return routed if routed is not None else self._pass(text, False)
                    if literal is not None:
                        return self._take(buf, literal)
                whole = pattern.whole if type(pattern) is AfterHead else pattern
                other = self._held_by(buf, self._pos, grown, whole)
                if other is not None:
                    # Another watched delimiter's partial match holds the text (inkling's three openers
                    # share `<|content_`): the pass would hold it all too, so it goes on held by that.
                    self._buf, self._held, self._held_pattern = buf, grown, other
                    return []
            for stem in self._stems:
                if stem in grown:
                    # A starter is there (`_skips_scan` would say no): a commit at the held text's start,
                    # when one is found without the pass, is the pass's first (`_take`).
                    buf = self._buf + text
                    if self._patterns:
                        commit = self._commit_literal(buf, self._pos) if literal is _UNTRIED else literal
                        if commit is _NOTHING:
                            # No watched delimiter matches or partially matches at the held text's start:
                            # a false alarm (gemma3's `\n\n[1]` beside `(?:^|\n\n)(?=\[[A-Za-z_])`,
                            # phi4-mini's ` functools.lr`). Where nothing starts after it either, the pass
                            # routes it all, as `_release_held` does.
                            routed = self._release_held(grown, 1)
                            if routed is not None:
                                return routed
                            commit = None
                        elif (
                            commit is None
                            and pattern is None
                            and (other := self._pending_here(buf, grown)) is not None
                        ):
                            # A regex delimiter's match at the held text's start may still grow (complete
                            # at the buffer's edge, quirk Q19: seed-oss's `<seed:eos>` as its reply ends):
                            # the pass commits and routes nothing, and would hold the text by it.
                            self._buf, self._held, self._held_pattern = buf, grown, other
                            return []
                        if commit is None:
                            # Or a regex delimiter's complete match there, final, and nothing else starting
                            # there (hunyuan's `\n助手：`, closing its content, where `\n` was held by
                            # `\s*<tool_calls>`): `_commit_held` finds it for any watched pattern.
                            skip = pattern.whole if type(pattern) is AfterHead else pattern
                            for other in self._patterns:
                                if (
                                    other is not skip
                                    and (commit := self._commit_held(other, buf)) is not None
                                ):
                                    break
                    elif not self._patterns and not self.UNORDERED:
                        # A state of literals alone: its scan is a `str.find` or two, and its commit, if it
                        # starts at the held text's start and is not empty, is the pass's first.
                        commit = self._scan(buf, self._pos)[0]
                        if commit is not None and not commit[0] == self._pos < commit[1]:
                            commit = None
                    else:
                        commit = None
                    if commit is not None:
                        return self._take(buf, commit)
                    return self._pass(text, False)
            routed = self._release_held(grown)
            if routed is not None:
                return routed
        return self._pass(text) if self._mode == _HELD else self._installed(text)

    def _release_held(self, grown: str, known: int = 0) -> list[dict] | None:
        """Mode held's chunk when the held text and it start nothing (`<` then `para`, in a tool call's
        body; phi4-mini's `f` then `or t`, beside `functools[`): the pass would route them, but for a
        trailing run in mode lead's states (which a lead-run delimiter may start), and settle the state's
        mode (`_skips_scan`, `_route_skipping_scan`, `_settle`), written out here as mode plain and mode
        lead route a chunk, opening the implicit region if it is not open yet; None when they may start
        something. (The buffer keeps them all as context: at least `CONTEXT`, but for a wide guard's, which
        keeps that many characters before them too.) In a state with a guard, a guard character in them
        starts something (`_starts_nothing`), and one just before them or the buffer's start may guard
        them (`_unguarded`): the pass's then (MiniMax-M2's content, beside `(?<=</invoke>)`). `known`: 1
        when the caller has found that nothing matches or partially matches at their first character
        (`_commit_literal`'s `_NOTHING`), so that only the text after it is asked."""
        state = self.STATES[self._current]
        mode = state.mode
        if (
            (mode == "plain" or mode == "lead")
            and self._current is not None
            and self._starts_nothing(grown[known:] if known else grown)
            and (state.guard is None or self._unguarded(self._buf, self._pos))
        ):
            routed = grown
            cut = len(grown)
            if mode == "lead":
                run = self._run
                while cut and grown[cut - 1] in run:
                    cut -= 1
                if cut < len(grown):
                    if not cut or _first_of(grown, state.start_char, cut) >= 0:
                        return None  # (as `_settle`: a held run with a start character is the pass's)
                    routed = grown[:cut]
            wide = self._WIDE and state.wide is not False
            if wide:
                buf = self._buf[: self._pos] + grown
                pos = len(buf) - len(grown) + cut
                context = self.CONTEXT
                if pos > context:
                    buf = buf[pos - context :]  # (`_trim`)
                    pos = context
                self._buf = buf
                self._pos = pos
            else:
                self._buf = grown  # (`cut` is at least 1: the one character of context; `State.wide`)
                self._pos = cut
            self._held = self._held_pattern = None
            self._empty_open = False
            parts = self._parts
            parts.append(routed)
            if len(parts) >= self._parts_limit:
                self._coalesce()
            if mode == "plain":
                self._mode = _PLAIN
                self.feed = self._plain_mode()
            else:
                self._mode = _LEAD
                self.feed = self._feed_wide if wide else self._feed_lead
            chunk = {"type": "region_chunk", "field": self._current, "text": routed, "dirty": self._dirty}
            if self._opened:
                return [chunk]
            # The implicit region, not open yet: a run after `</think>` was held for it (`_route`).
            self._opened = True
            return [{"type": "region_open", "field": self._current}, chunk]
        if (
            mode == "discard"
            and not state.runs
            and not self._empty_open
            and self._starts_nothing(grown[known:] if known else grown)
            and (state.guard is None or self._unguarded(self._buf, self._pos))
        ):
            # Outside every region (gpt-oss's `<|` after `<|end|>`, then `start`): dropped, as mode discard
            # drops a chunk, keeping it as the context.
            wide = self._WIDE and state.wide is not False
            if wide:
                buf = self._buf[: self._pos] + grown
                context = self.CONTEXT
                self._buf = buf[-context:] if len(buf) > context else buf  # (`_trim`)
                self._pos = len(self._buf)
            else:
                self._buf = grown
                self._pos = len(grown)
            self._held = self._held_pattern = None
            self._mode = _DISCARD
            self.feed = self._feed_wide if wide else self._feed_discard
            return []
        return None

    def _feed_pending(self, text: str) -> list[dict]:
        """Mode pending: where a guarded branch may match (`State.guard`), the held text is a partial match
        of the regex delimiter `_held_pattern`, as its partial search found it (`_settle`). While the grown
        text still is one, the oracle's pass commits nothing (no committable match starts at or after a
        pending one) and routes nothing (it routes only up to the pending match), whatever the guards and
        the other delimiters: only the buffer grows. Held text's shape (a stem's prefix) says nothing here,
        so each chunk takes that one partial search instead of the pass's search of every delimiter."""
        if self._mode == _PENDING and text:
            buf = self._buf + text  # a non-str chunk raises TypeError here, as upstream's concatenation
            held = self._held + text
            if partial_held(self._held_pattern, buf, self._pos, held):
                self._buf = buf
                self._held = held
                return []
            commit = self._commit_held(self._held_pattern, buf, _EMPTY)
            if commit is _EMPTY:
                # Complete, but empty: the pass's, which checks for cycles (Llama 3's call at the start,
                # `^\s*(?=\{...)`, once `"parameters":` completes its lookahead). Nothing else here could
                # take the chunk: the pending text's own pattern commits there.
                return self._pass(text, False)
            if commit is not None:
                return self._take(buf, commit)
            if self._pend(buf, self._pos, held):
                # Another one's partial search holds it now (MiniMax-M2's `\n</min` after `</invoke>`, of
                # its content's close, no longer of the tool call's opener): the pass would still commit
                # and route nothing, and `_settle` would pend on that one.
                self._buf = buf
                return []
            # Or nothing starts in the text any more, nor can a guarded branch match there (MiniMax-M2's
            # `\n\n` after `</think>`, then `Hello`): the pass routes it, as mode held's `_release_held`.
            routed = self._release_held(held)
            if routed is not None:
                return routed
            state = self.STATES[self._current]
            if state.guard is not None and not self._unguarded(self._buf, self._pos):
                return self._pass(text)  # (`_release_held`'s test: Llama 3's `{"` then `city` at the start)
            if self._commit_literal(buf, self._pos) is _NOTHING:
                # Or a stem is whole in it, but nothing matches or partially matches at its start: routed
                # up to what starts after that character, if anything does (a paragraph's `\n\n` in Gemma
                # 3's content, then `The`, beside `(?:^|\n\n)(?=\[[A-Za-z_])`).
                routed = self._release_held(held, 1)
                if routed is not None:
                    return routed
        return self._pass(text) if self._mode == _PENDING else self._installed(text)

    def _commit_held(self, pattern: Any, buf: str, empty: Any = None, nowhere: Any = None) -> Any:
        """The commit of the oracle's next pass over `buf` (the buffer, chunk added) when the held text, a
        partial match of the regex delimiter `pattern` at the scan position, has become its complete
        match there, final, and no other watched delimiter (`State.watch`) has a match or a partial match
        starting there; else None (the pass then scans). Then the pass commits it: the oracle's best is
        the leftmost candidate (every other starts later), before every hold (each starts later too),
        and its partial search of `pattern` from there finds that match, the leftmost complete one. So
        only the others' starts are tested (by their stems where no guard is watched, else one anchored
        match each), not searched for through the buffer. (Not for templates whose opens' keys may not
        compare, whose ties the pass replays.) `empty` is returned instead of None when that match is
        complete, final and empty, which is the pass's to commit; `nowhere` when the search finds nothing
        before the buffer's end."""
        state = self.STATES[self._current]
        watch = state.watch
        if not watch or self.UNORDERED:
            return None
        unguarded = state.guard is None  # (the stems leave guarded branches out)
        whole = pattern.whole if type(pattern) is AfterHead else pattern
        pos = self._pos
        found = None
        for delimiter, is_open, field, recheck in watch:
            if delimiter is whole:
                # The oracle's candidate (`scan_pattern`): final, not at the edge, where it may grow (quirk
                # Q19); an empty one is left to the pass, which checks for cycles.
                candidate = scan_pattern(buf, pos, whole, False, recheck)
                if candidate is None or candidate[0] == len(buf):
                    return nowhere  # (or only where the buffer ends, which holds nothing)
                if candidate[0] != pos or not candidate[2]:
                    return None
                if candidate[1] == pos:
                    return empty
                found = (pos, candidate[1], is_open, field, candidate[3])
            elif type(delimiter) is tuple:
                # (Defensive: a literal's match or partial match at the held text's start makes that text
                # a stem's prefix, which mode held tests first and leaves without a held pattern.)
                for literal in delimiter:
                    if buf.startswith(literal, pos) or literal.startswith(buf[pos:]):
                        return None
            elif not (unguarded and stems_rule_out(delimiter, buf, pos)) and starts_at(delimiter, buf, pos):
                return None
        return found

    def _commit_literal(self, buf: str, pos: int) -> tuple | None:  # (or `_NOTHING`)
        """The commit of the oracle's next pass over `buf` (the buffer, chunk added) when the held text, a
        proper prefix of a stem, has grown into a watched literal's complete match at the scan position
        and no other watched delimiter (`State.watch`) has a match or a partial match starting there; else
        None (the pass then scans). The oracle's best is then that match (every other candidate, and every
        hold, starts later), as `_commit_held` says for a regex delimiter's; but a match at the buffer's
        end of a list of which one literal extends another may still grow, whichever literal it is
        (`scan_literals`' `can_extend`, the watch's last item for a list), and is left to the pass.
        (ERNIE's `</think>` and `<response>` beside its regex opener: one `startswith` each, instead of
        the state's scan, whose regex searches cost a third of the feed.) `_NOTHING` when no watched
        delimiter matches or partially matches there at all."""
        state = self.STATES[self._current]
        watch = state.watch
        if not watch or self.UNORDERED:
            return None
        unguarded = state.guard is None or self._unguarded(buf, pos)  # (the stems leave guarded branches out)
        rest = buf[pos:]
        found = None
        for delimiter, is_open, field, extends in watch:
            if type(delimiter) is tuple:
                for literal in delimiter:
                    if rest.startswith(literal):
                        if found is not None or (extends and len(literal) == len(rest)):
                            return None  # (two match there: the longest, or the first, is the pass's)
                        found = (pos, pos + len(literal), is_open, field, None)
                    elif literal.startswith(rest):
                        return None
            elif not (unguarded and stems_rule_out(delimiter, buf, pos)) and starts_at(delimiter, buf, pos):
                return None
        return _NOTHING if found is None else found

    def _take(self, buf: str, commit: tuple) -> list[dict]:
        """`_pass(text, False)` for a commit found without it (`_commit_held`, `_commit_literal`, a state of
        literals' scan) in `buf`, the buffer with the chunk added, written for its case: a match at the
        scan position, not empty, so nothing is routed before it and no cycle starts there (`_process` for
        one commit, then for the rest of the buffer, which `_settle_rest` or `_rest_hold` most often
        settles without a scan)."""
        self._buf = buf
        self._held = self._held_pattern = None
        events: list[dict] = []
        _, end, is_open, name, match = commit
        self._pos = end  # (consumed before the close, which may fail)
        try:
            if is_open:
                if self._opened:
                    self._close(events)
                self._open(events, name, match, False)
            elif self._opened:
                if match is not None and self.FIELDS[name].close_captures:
                    self._captures.update({k: v for k, v in match.groupdict().items() if v is not None})
                self._close(events)
            if not self._settle_rest(events, buf, end):
                hold = self._rest_hold(buf, end)
                if hold < 0:
                    if self._process(events, False):
                        return events
                elif hold > end:
                    self._route(events, buf[end:hold])
                    self._pos = hold
                self._trim()
                self._settle()
        except BaseException:
            self._mode = _GENERAL
            self.feed = self._feed_general
            raise
        return events

    def _settle_rest(self, events: list[dict], buf: str, end: int) -> bool:
        """After a commit that consumed the buffer up to `end`, in the state it entered: `_rest_hold`,
        `_route`, `_trim` and `_settle`, written out as one for their commonest answers, in a state of mode
        plain, lead or discard where no guarded branch can match. What is left is a proper prefix of a stem
        or a partial match known without a search (held), or holds no start character, so it is routed,
        but for a trailing run in mode lead (held), or starts nothing up to such a prefix or partial match
        (routed up to it, the rest held); then the mode is installed as `_settle` decides. True when done;
        False, having done nothing, for any other case. (A commit cost about ten Python calls; these were a
        third of them.)"""
        current = self._current
        state = self.STATES[current]
        mode = state.mode
        watched = state.watched
        if (
            watched is None
            or (mode != "plain" and mode != "lead" and (mode != "discard" or state.runs))
            or self._empty_open
            or (state.guard is not None and not self._unguarded(buf, end))
        ):
            return False
        pos = len(buf)
        held = None
        rest = ""
        if end < pos:
            if pos - end > _REST:
                return False
            rest = buf[end:]
            if rest in self._stem_prefixes:
                held, pos = rest, end
                rest = ""
            else:
                for char in watched:
                    if char in rest:
                        # A run, then a proper prefix of a lead-run delimiter's stem: its partial match,
                        # held (`_rest_hold`); or a text a regex delimiter's partial search is remembered
                        # to hold (`partial_held`'s memo: MiniMax-M2's `[e~[`, complete at the buffer's
                        # end, where it may grow).
                        if self._patterns and self._known_hold(rest) is not None:
                            held, pos = rest, end
                            rest = ""
                            break
                        # Or text that starts nothing, then such a partial match (ERNIE's `\n\n<` after
                        # `</think>`, GLM's `\n<` after a tool call's opener): the text is routed and the
                        # rest held, as `_hold_stem` says of a chunk.
                        first = state.start_char
                        cut = _first_of(rest, first) if first else -1
                        if mode == "lead":
                            run = self._run
                            while cut > 0 and rest[cut - 1] in run:
                                cut -= 1
                        if cut > 0:
                            # (The text before it holds no start character, nor a guard character: in a
                            # state with a guard, `_unguarded` has looked from `end`.)
                            tail = rest[cut:]
                            if tail in self._stem_prefixes or (
                                self._patterns and self._known_hold(tail) is not None
                            ):
                                held, rest, pos = tail, rest[:cut], end + cut
                                break
                        # Or nothing starts in it at all (GLM's `\n<ar` after a tool call's opener, whose
                        # name ends there): `_rest_hold`'s answer, as for text without a start character
                        # below; the general way's where a state has several run classes.
                        if first is None or len(state.runs) > 1 or not self._starts_nothing(rest):
                            return False
                        break
                if held is None:
                    if mode == "lead":
                        run = self._run
                        if rest[-1] in run:
                            cut = len(rest) - 1  # a trailing run, held (`run_start`)
                            while cut and rest[cut - 1] in run:
                                cut -= 1
                            held, rest, pos = rest[cut:], rest[:cut], end + cut
            if rest and current is not None:
                parts = self._parts  # `_route` (`_empty_open` is false already)
                parts.append(rest)
                if len(parts) >= self._parts_limit:
                    self._coalesce()
                if not self._opened:
                    events.append({"type": "region_open", "field": current})
                    self._opened = True
                events.append({"type": "region_chunk", "field": current, "text": rest, "dirty": self._dirty})
        context = self.CONTEXT  # `_trim`
        if context is not None and pos > context:
            buf = self._buf = buf[pos - context :]
            pos = context
        self._pos = pos
        wide = self._WIDE and state.wide is not False  # (the fast modes' methods: `_settle`'s choice)
        if held is None:
            if mode == "discard":
                self._mode = _DISCARD
                self.feed = self._feed_wide if wide else self._feed_discard
            elif not self._opened:
                if self._opens(state):
                    self._mode = _OPENING
                    self.feed = self._feed_opening
                else:
                    self._mode = _GENERAL
                    self.feed = self._feed_general
            elif mode == "plain":
                self._mode = _PLAIN
                self.feed = (
                    self._feed_wide
                    if wide
                    else self._feed_plain if context or not self._start_char else self._feed_plain_literal
                )
            else:
                self._mode = _LEAD
                self.feed = self._feed_wide if wide else self._feed_lead
            return True
        if held in self._stem_prefixes:
            self._held = held
        elif self._stems or self._patterns:
            pattern = self._held_by(buf, pos, held)  # (what `_settle` keeps the held text by)
            if pattern is not None:
                self._held, self._held_pattern = held, pattern
        if mode == "lead" and self._opened and _first_of(held, state.start_char) < 0:
            self._mode = _LEAD
            self.feed = self._feed_wide if wide else self._feed_lead
        elif self._held is None:
            self._mode = _GENERAL
            self.feed = self._feed_general
        else:
            self._mode = _HELD
            self.feed = self._feed_held
        return True

    def _pend(self, buf: str, pos: int, rest: str) -> bool:
        """Install mode pending when a watched regex delimiter's partial search holds `rest` (the buffer
        from `pos`) from there, as `_settle` decides where a guard may match: True if one does."""
        for pattern in self._patterns:
            if partial_held(pattern, buf, pos, rest):
                self._held, self._held_pattern = rest, pattern
                self._mode = _PENDING
                self.feed = self._feed_pending
                return True
        return False

    def _pending_here(self, buf: str, held: str) -> Any:
        """The watched regex delimiter whose partial search holds `held` (the buffer from the scan position,
        chunk added) from there, where no guarded branch can match: then the oracle's pass commits and
        routes nothing (no match commits at or after a pending one), and `_settle` would hold the text by
        that delimiter. None when none does, or where a guard may match (mode pending's case)."""
        pos = self._pos
        if self.STATES[self._current].guard is not None and not self._unguarded(buf, pos):
            return None
        return self._held_by(buf, pos, held)

    def _held_by(self, buf: str, pos: int, rest: str, skip: Any = None) -> Any:
        """The pattern mode held keeps `rest` (the buffer from `pos`) by: the first watched regex delimiter
        but `skip` whose partial match holds it (told without a search while `lead_holds`), as an
        `AfterHead` once its head has matched; None when none does."""
        for pattern in self._patterns:
            if pattern is not skip and (
                (pattern.lead is not None and lead_holds(pattern, rest))
                or partial_held(pattern, buf, pos, rest)
            ):
                return pattern if pattern.head is None else held_pattern(pattern, buf, pos)
        return None

    def _hold_stem(self, text: str) -> list[dict] | None:
        """Nothing is held and the chunk ends with a proper prefix of a stem (in mode lead's states, perhaps
        after a run of the lead class), or with a text a watched regex delimiter is known to hold
        (`_known_hold`: llama3-json's `<|` beside `<\\|eot_id\\|>`, in a state without stems), after text
        that holds no start character (the whole chunk, unless the state's mode is plain, lead or
        discard): the oracle's pass finds
        that partial match where the chunk's text stops routing, and no match can commit at or after it.
        So route what comes before it and hold the rest, without a scan (mode held). None when the chunk
        is not so. (After a feed that raised, the state entered and the buffer are still the oracle's, so
        the same holds there.)"""
        buf = self._buf + text  # a non-str chunk raises TypeError here, as upstream's concatenation
        state = self.STATES[self._current]
        if state.guard is not None and not self._unguarded(self._buf, self._pos, text):
            return None
        mode = state.mode
        plain = mode in ("plain", "lead") and self._opened and not self._empty_open
        first = state.start_char
        cut = _first_of(text, first) if plain or (mode == "discard" and not self._empty_open) else 0
        if cut > 0 and mode == "lead":
            # A lead-run delimiter's partial match starts where the run before its start character does
            # (mode lead's states watch runs of one class: `State.mode`).
            (run,) = state.runs
            while cut and text[cut - 1] in run:
                cut -= 1
        rest = text[cut:] if cut else text
        if rest in self._stem_prefixes:
            pattern = None  # (the held mode finds the pattern whose stem it is, if it needs it)
        else:
            pattern = (
                self._known_hold(rest)
                if self._patterns and (first is None or _first_of(rest, first) >= 0)
                else None
            )
            if pattern is None:
                return None
        self._buf = buf
        self._pos += cut
        self._held = rest
        self._held_pattern = pattern
        events: list[dict] = []
        if cut and plain:
            self._route(events, text[:cut])
        self._mode = _HELD
        self.feed = self._feed_held
        self._trim()
        return events

    def _pass(self, text: str, may_skip: bool = True) -> list[dict]:
        """The general mode's work: route the chunk without a scan when nothing can start in it (nor
        complete in the held text), else run the oracle's pass; then install the next feed's mode. (A
        commit that `_commit_held` has found takes `_take` instead.)"""
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        _PASSES[0] += 1
        if self._run_pieces:
            self._rejoin_run()
        self._held = self._held_pattern = None
        events: list[dict] = []
        try:
            if may_skip and text and type(text) is str and self._skips_scan(text):
                self._route_skipping_scan(events, text)
                self._settle()
            else:
                if text:
                    self._buf += text
                if not self._process(events, False):
                    self._trim()
                    self._settle()
        except BaseException:
            self._mode = _GENERAL
            self.feed = self._feed_general  # what a fast mode assumed may no longer hold
            raise
        return events

    def _settle(self) -> None:
        """Install the mode of the next feed, from where the pass left the parser: the state's own mode
        (the plan's choice, `State.mode`) while the region is open and nothing but a run (in mode lead) is
        held; mode held while a known partial match is; else the general mode. (None of them where a
        guarded branch may match: a complete match of one is committed even beside a partial match of the
        delimiter's other branches, `^|<think>` at position 0, so held text says nothing there either;
        there, mode pending while a regex delimiter's own partial search finds a partial match at the scan
        position.)"""
        buf, pos = self._buf, self._pos
        at_rest = pos == len(buf)
        state = self.STATES[self._current]
        guarded = state.guard is not None and not self._unguarded(buf, pos)
        if not at_rest and guarded:
            # (Not for templates whose opens' keys may not compare: the oracle's pass compares those of
            # complete matches even beside a pending one, and may raise there, `_break_tie`.)
            if self._patterns and not self.UNORDERED and self._pend(buf, pos, buf[pos:]):
                return
        elif not at_rest and (self._stems or self._patterns):
            rest = buf[pos:]
            if rest in self._stem_prefixes:
                self._held = rest
            else:
                # The regex delimiter whose partial match holds the text, if one does: the next feed
                # checks only it (without a search while `lead_holds`).
                pattern = self._held_by(buf, pos, rest)
                if pattern is not None:
                    self._held, self._held_pattern = rest, pattern
        mode = state.mode
        if self._empty_open or mode == "general" or guarded:
            pass
        elif mode == "plain":
            if at_rest and self._opened:
                self._mode = _PLAIN
                self.feed = self._plain_mode()
                return
            if at_rest and self._opens(state):
                self._mode = _OPENING
                self.feed = self._feed_opening
                return
        elif mode == "lead":
            # (Not while a partial match is held: the lead mode would only hand it on.)
            if self._opened and (at_rest or _first_of(buf, state.start_char, pos) < 0):
                self._mode = _LEAD
                self.feed = self._feed_wide if self._WIDE and state.wide is not False else self._feed_lead
                return
            if at_rest and self._opens(state):
                self._mode = _OPENING
                self.feed = self._feed_opening
                return
        elif mode == "discard":
            if at_rest:
                self._mode = _DISCARD
                self.feed = self._feed_wide if self._WIDE and state.wide is not False else self._feed_discard
                return
        elif at_rest and self._opened:  # bare
            self._mode = _BARE
            self.feed = self._feed_bare
            return
        if self._held is None:
            self._mode = _GENERAL
            self.feed = self._feed_general
        else:
            self._mode = _HELD
            self.feed = self._feed_held

    @property
    def feed_mode(self) -> str:
        """How the next `feed` is handled: "plain", "lead", "discard", "bare", "opening", "held", "pending"
        (the fast modes) or "general" (a pass); see the module docstring. For tests and the curious."""
        return self._mode

    def _known_hold(self, held: str) -> Any:
        """The first watched regex delimiter known without a search to hold `held` (the text from the scan
        position to the end of the buffer) as its partial match: a lead-run pattern by `lead_holds`, or one
        whose search reads nothing before its start by its memo (`partial_held` remembered it: phi4-mini's
        ` functools`, a whole stem before the lookahead `(?=\\s*\\[\\s*\\{)` can tell); None when none is."""
        for pattern in self._patterns:
            if pattern.lead is not None and lead_holds(pattern, held):
                return pattern
        for pattern in self._patterns:
            known = pattern.partials
            if known is not None and not pattern.context and known.get(held):
                return pattern
        return None

    def _stem_pattern(self, held: str) -> Any:
        """The watched regex delimiter that every stem `held` is a proper prefix of belongs to, if one
        does: the held text is that pattern's partial match, and once the stem is complete the next feed
        tests only it (the partial search) instead of a pass. None when a literal's stem (or another
        pattern's) is among them: which one completes is the pass's to find."""
        owner = None
        for stem in self._stems:
            if len(stem) > len(held) and stem.startswith(held):
                for pattern in self._patterns:
                    if stem in pattern.stems:
                        break
                else:
                    return None
                if owner is not None and owner is not pattern:
                    return None
                owner = pattern
        return owner

    def _skips_scan(self, text: str) -> bool:
        """Whether no watched delimiter can start in `text` nor complete in the held text: nothing is held,
        or (when lead runs are watched) the held text is such a run, holding no start character either."""
        state = self.STATES[self._current]
        first = state.start_char
        if state.guard is not None and not self._unguarded(self._buf, self._pos, text):
            return False
        if first is not None:
            if self._pos == len(self._buf):
                return self._starts_nothing(text)
            grown = self._buf[self._pos :] + text  # the held text too: nothing may start in either
            if _first_of(grown, first) >= 0:
                # (A held partial match that the chunk ends, as '<' then '/par' when '</function>' is
                # watched, starts nothing either.)
                return self._starts_nothing(grown)
            return bool(state.runs)  # the held text is a run (without runs, a partial match holds one)
        starts = state.starts
        if starts is None or starts.search(text) is not None:
            return False
        buf, pos = self._buf, self._pos
        if pos == len(buf):
            return True
        if not state.runs:
            return False  # held text is a partial delimiter the chunk may complete
        return starts.search(buf, pos) is None

    def _starts_nothing(self, text: str, before: str | None = None) -> bool:
        """Whether no match and no partial match of a watched delimiter starts in `text` (the text from the
        scan position to the end of the buffer): it holds no start character (nor guard character), or,
        by the state's `starters`, every match starts (after its lead run) with one, so one that starts
        in the text either holds a whole starter or runs to its end as a proper prefix of one, which then
        starts at a start character. The oracle's pass then routes it all (a lead run at the end is held
        by `_route_skipping_scan`). What comes before the text is the caller's to rule out (the guard's
        `_unguarded`). The fast modes ask it when a character they test is in the chunk: `_start_char`, or
        for a state with several (`_start_char` is then ""), one of `State.several`. `before`, when given,
        is what the buffer holds right before the text: a guard character in the text then starts
        something only where it may end a literal a lookbehind reads (`_guards`)."""
        state = self.STATES[self._current]
        for char in state.watched:
            if char in text:
                break
        else:
            return True  # (the commonest answer)
        guard = state.guard
        if guard:
            for char in guard:
                if char in text and (before is None or _guards(state.behind, before, text, char)):
                    return False
        starters = state.starters
        for starter in starters:
            if starter in text:
                return False
        for first in state.start_char:
            at = _find(text, first)
            if at >= 0 and not starters:
                return False
            while at >= 0:
                rest = text[at:]
                for starter in starters:
                    if len(starter) > len(rest) and starter.startswith(rest):
                        return False
                at = _find(text, first, at + 1)
        return True

    def _others_start_nothing(self, text: str, skip: Any) -> bool:
        """Whether no watched delimiter but `skip` has a match or a partial match starting in `text` (the text
        from the scan position to the buffer's end), by what each match starts with after its lead run: a
        literal list's members, a regex's declared stems (`stems_rule_out`'s), none of which occurs, nor
        ends the text as a proper prefix. (A partial match that is only a trailing lead run is mode lead's
        to hold, as `_release_held` does.) False when one declares none, or where a guarded branch is
        watched, which stems leave out (the caller asks only where none is)."""
        state = self.STATES[self._current]
        for delimiter, _, _, _ in state.watch:
            if delimiter is skip:
                continue
            starters = delimiter if type(delimiter) is tuple else delimiter.stems
            if not starters or state.guard is not None:
                return False
            for starter in starters:
                if starter in text:
                    return False
                first = starter[0]
                at = _find(text, first, max(0, len(text) - len(starter) + 1))
                while at >= 0:
                    if starter.startswith(text[at:]):
                        return False
                    at = _find(text, first, at + 1)
        return True

    def _unguarded(self, buf: str, pos: int, text: str = "") -> bool:
        """Whether no guarded branch of a watched delimiter (`State.guard`) can match in `buf[pos:]` and
        `text`: the parser is past the buffer's start (or the text there begins no anchored branch), and
        no guard character is in them or just before them (a branch `^...` matches only at transformers'
        position 0, which it never trims away, and a branch `(?<=;)...` only right after a `;`), or the
        one just before them ends none of the literals the guards' lookbehinds read (`State.behind`)."""
        state = self.STATES[self._current]
        guard = state.guard
        if guard is None:
            return True
        if pos < 1:
            # At the start, unless what is there begins with none of the characters an anchored branch
            # reads first (`State.anchored`): a reply that starts with prose, beside gemma3's `^(?=\[)`.
            heads = state.anchored
            head = buf[pos : pos + 1] or (text[:1] if type(text) is str else "")
            if heads is None or not head or head in heads:
                return False
            pos = 1  # (the guard characters are then looked for from the start)
        for char in guard:
            if char in text and _guards(state.behind, buf, text, char):
                return False
            at = _find(buf, char, pos - 1)
            if at >= 0:
                # Right before the position, a guard character guards nothing unless the text up to it ends
                # with a literal a lookbehind reads (`State.behind`: `</think>` is not `</invoke>`). Where
                # the buffer holds less than the literal, it may only if all it holds ends the literal (the
                # buffer is the text's last characters: `tool">` cannot end `</invoke>`, whatever came
                # before it, and a fast mode keeps just the chunk when no lookbehind can read more).
                behind = state.behind
                if behind is None or at >= pos or _find(buf, char, pos) >= 0:
                    return False
                for literal in behind:
                    if literal[-1] == char and (
                        literal.endswith(buf[:pos])
                        if len(literal) > pos
                        else buf.startswith(literal, pos - len(literal))
                    ):
                        return False
        return True

    def _route_skipping_scan(self, events: list[dict], text: str) -> None:
        """No watched delimiter can start in the chunk (nor complete in the held text): the oracle's pass
        routes everything but a trailing run that a lead-run delimiter (`\\s*<tool_call>`) may start."""
        context = self.CONTEXT
        if context is None or self._pos < len(self._buf):
            buf, pos = self._buf + text, self._pos
        else:
            # The context the patterns look back at (one character, but for a wide lookbehind guard);
            # keeping it also keeps a chunk from passing for the buffer's start, where `^...` can match.
            buf = self._buf[-(context or 1) :] + text
            pos = len(buf) - len(text)
        runs = self.STATES[self._current].runs
        if not runs:
            hold = len(buf)
        elif len(runs) == 1:
            run = runs[0]
            hold = len(buf)
            while hold > pos and buf[hold - 1] in run:
                hold -= 1
        else:
            hold = min(run_start(buf, pos, run) for run in runs)
        self._buf = buf
        self._pos = hold
        self._empty_open = self._empty_open and hold == pos
        if hold > pos:
            self._route(events, buf[pos:hold])
            if context is not None and hold > (context or 1):
                self._buf = buf[hold - (context or 1) :]  # the context the patterns look back at
                self._pos = context or 1

    def _rejoin_run(self) -> None:
        """Put the pieces of a held run that `feed` set aside back at the end of the buffer."""
        self._buf += "".join(self._run_pieces)
        self._run_pieces = []
        self._run_pieces_limit = _COALESCE

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close what is open and return `(message, events)`."""
        if self._finalized:
            raise RuntimeError("ResponseParser already finalized")
        if self._run_pieces:
            self._rejoin_run()
        try:
            del self.feed  # the class's general mode, which raises from now on; and no cycle is left
        except AttributeError:
            pass  # never fed
        self._mode = _GENERAL  # (a `feed` bound before this takes the general mode too, and raises)
        self._held = self._held_pattern = None
        events: list[dict] = []
        self._process(events, True)
        return self._finish(events), events

    # -- whole messages --------------------------------------------------------------------------------

    @classmethod
    def parse_whole(cls, text: str, prefix: str | None, tools: list | None, errors: str) -> dict:
        """`parse_response`: one end-of-stream pass and no events.

        The oracle feeds the text and then finalizes; a pass that holds back nothing (end of stream)
        reaches the same message, because holding only delays text, never reorders or drops it. (Where the
        plan cannot show that, `WHOLE_BY_STREAM`, the text is fed and finalized as the oracle does.)
        """
        parser = _new(cls)  # (not `cls(...)`: its `__new__`, for `tokenizer=`, costs a Python call)
        parser.__init__(prefix, tools=tools, errors=errors)
        return parser._whole(text)

    @classmethod
    def parse_cut_off(
        cls, text: str, prefix: str | None, tools: list | None, errors: str
    ) -> tuple[dict, Any]:
        """`parse_whole`, and the field of the explicit region the text ended inside (None: none was
        open). transformers closes such a region as if its delimiter had come (a truncated tool call
        parses to a call with fewer arguments); the batch engines count and flag it as cut off."""
        parser = _new(cls)
        parser.__init__(prefix, tools=tools, errors=errors)
        message = parser._whole(text)
        return message, getattr(parser, "_cut_off", None)

    def _whole(self, text: str) -> dict:
        if self.WHOLE_BY_STREAM:
            self.feed(text)
            message = self.finalize()[0]
        else:
            if text:
                self._buf += text
            self._process(None, True)
            message = self._finish(None)
        if self.errors:
            message["parse_errors"] = self.errors
        return message

    @classmethod
    def parse_tokens(cls, response: Any, prefix: Any, tools: list | None, errors: str, tokenizer: Any) -> Any:
        """`parse_response` with `tokenizer=`: token ids, batches and arrays as `tokenizer.parse_response`
        takes them (same classification, broadcasting and errors), each item parsed by `parse_whole`."""
        from respc.runtime.tokenizer import parse_with_tokenizer

        def parse(text: str, prefix: str | None, tools: list | None) -> dict:
            return cls.parse_whole(text, prefix, tools, errors)

        return parse_with_tokenizer(parse, response, prefix=prefix, tools=tools, tokenizer=tokenizer)

    def _finish(self, events: list[dict] | None) -> dict:
        missing = [name for name in self.REQUIRED if name not in self._output] if self.REQUIRED else None
        if missing:
            error = ValueError(f"Required response_template fields missing from parsed output: {missing}")
            if self.errors is None:
                raise error
            for name in missing:
                self._keep_error(events, name, "", error)
        self._finalized = True
        output = self._output
        for value in output.values():
            if not value:
                break  # maybe one to drop: the exact test below
        else:
            return output  # all true (most messages): nothing to drop, no comprehension to build
        defaults = self.DEFAULT_KEYS
        self._output = output = {
            k: v
            for k, v in output.items()
            if k in defaults or (v is not None and (not isinstance(v, _SIZED) or v))
        }
        return output

    # -- the pass --------------------------------------------------------------------------------------

    def _process(self, events: list[dict] | None, eos: bool) -> bool:
        """The oracle's processing pass; `events` is None when nobody will read them. True when, after a
        commit, it has also trimmed the buffer and installed the next feed's mode (`_settle_rest`); else
        that is the caller's to do (`_trim`, `_settle`)."""
        buf = self._buf
        pos = self._pos
        hold = len(buf)
        memo = {} if eos and self.END_MEMO else None  # where the end scans found each delimiter, this pass
        # While more than _FAR_TEXT characters remain, the scans that find literals from a rare character
        # (they make one or two `str.find` calls more per search, which cost more than they save on
        # short texts).
        far = far_until = None
        if eos and self.FAR_SCANS is not None and len(buf) - pos > _FAR_TEXT:
            far, far_until = self.FAR_SCANS, len(buf) - _FAR_TEXT
        committed = False
        cycle = None  # (field, position) of an open and a close that both just matched empty there
        while True:
            if self.UNORDERED and (self._current is None or self._current == self.IMPLICIT):
                self._break_tie(buf, pos, eos)
            if not eos:
                if committed:
                    if events is not None and self._settle_rest(events, buf, pos):
                        return True
                    if (rest := self._rest_hold(buf, pos)) >= 0:
                        hold = rest  # (what the state's scan would answer, with nothing to commit)
                        break
                commit, hold = self._scan(buf, pos)
            elif pos == len(buf):
                break  # nothing left: no end-of-stream scan commits a match at the end of the text
            elif far is None or pos >= far_until:
                commit = self._end_scan(buf, pos) if memo is None else self._end_scan(buf, pos, memo)
            else:
                scan = far.get(self._end_scan, self._end_scan)
                commit = scan(buf, pos) if memo is None else scan(buf, pos, memo)
            if commit is None:
                break
            start, end, is_open, name, match = commit
            if start > pos:
                # `_route`, inlined (a whole-message parse routes here once per delimiter), less the
                # coalescing: the region closes at this delimiter, so this is its last part.
                self._empty_open = False
                current = self._current
                if current is not None:
                    text = buf[pos:start]
                    self._parts.append(text)
                    if events is not None:
                        if not self._opened:
                            events.append({"type": "region_open", "field": current})
                        events.append(
                            {"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty}
                        )
                    self._opened = True
            # The oracle moves past the delimiter before closing, so a failing close leaves it consumed.
            self._pos = pos = end
            committed = True
            had_opened = self._opened
            if is_open:
                if start == end and cycle == (name, start):
                    # Open, close, and the same open again, all empty at one position: the parser is where
                    # it was, so transformers' pass repeats them forever (quirk Q5). (An open that only
                    # looks empty, `<a>\\K`, has consumed its text and is not found there again.)
                    raise RuntimeError(
                        f"response template field {name!r}: its open and close both matched the empty "
                        f"string at the same place, so transformers would loop forever here"
                    )
                cycle = None
                if start == end and name is None and self._current is None and self._empty_open:
                    # A field named None opened on nothing, where its open matches nothing again: the
                    # oracle's region None watches that open, so it reopens it there forever.
                    raise RuntimeError(
                        "response template field None: its open matched the empty string where it "
                        "had just opened, so transformers would reopen it there forever"
                    )
                if had_opened:
                    self._close(events)
                self._open(events, name, match, start == end)
                continue
            if had_opened:
                if match is not None and self.FIELDS[name].close_captures:
                    self._captures.update({k: v for k, v in match.groupdict().items() if v is not None})
                zero_width_open = self._empty_open
                self._close(events)
                cycle = (name, end) if start == end and zero_width_open else None
            elif start == end:
                return (
                    False  # an unopened region closed on nothing: the oracle stops the pass here (quirk Q4)
                )
        if eos:
            if pos < len(buf):
                self._route(events, buf[pos:])
                self._pos = len(buf)
            # (Set at the end of the stream only: an attribute fewer in `_start`, see there.)
            self._cut_off = self._current if self._current != self.IMPLICIT else None
            self._close(events)
        elif hold > pos:
            self._route(events, buf[pos:hold])
            self._pos = hold
        return False

    def _rest_hold(self, buf: str, pos: int) -> int:
        """Where the streaming scan of the state just entered would hold from, when it would commit nothing
        (else -1): nothing is left (no scan commits a match starting at the buffer's end); what is left is a
        proper prefix of a stem, or a run and then one for a lead-run delimiter, a partial match there (as
        `_hold_stem` says), before which nothing can commit; or it starts nothing (`_starts_nothing`), and only a trailing lead run is held. Asked after
        a commit only: a delimiter ending a chunk (`</think>`), followed by text (`<think>d`) or by the
        start of the next (`<|im`) then costs no scan of the new state."""
        left = len(buf) - pos
        if not left:
            return pos
        if left > _REST:
            return -1  # a long rest: the scan costs little more than these tests
        state = self.STATES[self._current]
        if state.guard is not None and not self._unguarded(buf, pos):
            return -1
        rest = buf[pos:]
        if rest in self._stem_prefixes:
            return pos
        if state.start_char is None:
            return -1
        if not self._starts_nothing(rest):
            # (A partial match known without a search: `_known_hold`.)
            return pos if self._patterns and self._known_hold(rest) is not None else -1
        runs = state.runs
        if not runs:
            return len(buf)
        return run_start(buf, pos, runs[0]) if len(runs) == 1 else -1

    def _coalesce(self) -> None:
        """Join the newest parts of a long region into one block: a 4-character chunk held as its own
        string costs about 60 bytes, so a long stream would hold 15 times its size. Each character is
        copied once more, and the blocks themselves are only joined at close."""
        parts = self._parts
        parts[-_COALESCE:] = ["".join(parts[-_COALESCE:])]
        self._parts_limit = len(parts) + _COALESCE

    def _route(self, events: list[dict] | None, text: str) -> None:
        """Route text into the current region (opening the implicit one lazily), as one chunk event."""
        self._empty_open = False
        current = self._current
        if current is None:
            return  # the null sink discards it
        parts = self._parts
        parts.append(text)
        if len(parts) >= self._parts_limit:
            self._coalesce()
        if events is None:
            self._opened = True
            return
        if not self._opened:
            events.append({"type": "region_open", "field": current})
            self._opened = True
        events.append({"type": "region_chunk", "field": current, "text": text, "dirty": self._dirty})

    def _open(self, events: list[dict] | None, name: Any, match: Any, zero_width: bool) -> None:
        self._current = name
        (
            self._scan,
            self._end_scan,
            self._start_char,
            self._run,
            self._dirty,
            self._stems,
            self._stem_prefixes,
            self._patterns,
        ) = self.STATES[name].entered
        if match is None:
            self._captures = {}
        else:
            captures = match.groupdict()  # (a fresh dict, empty for most delimiters)
            if None in captures.values():
                captures = {k: v for k, v in captures.items() if v is not None}
            self._captures = captures
        self._parts = []
        self._parts_limit = _COALESCE
        self._opened = True
        self._empty_open = zero_width
        if events is not None:
            events.append({"type": "region_open", "field": name})

    def _break_tie(self, buf: str, pos: int, eos: bool) -> None:
        """The oracle's scan over the watched opens, for templates whose field names do not all compare: it
        keys each committable match (start, length, kind, field name) and compares the keys, which raises
        TypeError where two opens match at one position with one length and their names do not compare.
        Only the raising matters: for the rest the generated scans answer as the oracle does."""
        import regex  # only templates with such field names come here

        from respc.runtime.targets import get_target

        recheck = get_target(self.TARGET).recheck_regex_matches
        best = None
        for name, pattern, literal, can_extend in self.UNORDERED:
            compiled = regex.compile(pattern, regex.DOTALL)
            match = compiled.search(buf, pos) if eos else compiled.search(buf, pos, partial=True)
            if match is None:
                continue
            if not eos:
                start, end = match.span()
                if match.partial:
                    continue
                if end != len(buf):
                    if not literal and recheck:  # 5.24: a regex match must survive the text going on
                        grown = compiled.match(buf + "\x00", start)
                        if (
                            grown is None
                            or grown.span() != (start, end)
                            or grown.groupdict() != match.groupdict()
                        ):
                            continue
                elif start == end or not literal or can_extend:
                    continue  # it may still grow: pending, not compared
            key = (match.start(), match.start() - match.end(), 0, name)
            if best is None or key < best:
                best = key

    def _close(self, events: list[dict] | None) -> None:
        current = self._current
        if not self._opened:
            # Only the implicit region (or the null sink) can be unopened: nothing to close, and its
            # state is already the one a reset gives.
            return
        if current is None:
            # The explicit field named None: the oracle's region None is its null sink, which closes
            # on nothing and keeps no value.
            self._reset()
            return
        body = "".join(self._parts)
        output = self._output
        try:
            parse, join, repeats = self.FIELDS[current].closing
            value = parse(body, self._captures)
            if self._tools:
                value = coerce_tool_calls(value, self._tools)
            if join is not None:
                if not isinstance(value, str):
                    raise ValueError(
                        f"Field '{current}': 'join' requires each match to parse to a string, "
                        f"got {type(value).__name__}."
                    )
                previous = output.get(current)
                # (`+` as upstream: a default that is not a string fails as it does there.)
                output[current] = value if previous is None else previous + join + value
            elif repeats:
                output.setdefault(current, []).append(value)
            else:
                output[current] = value
        except Exception as error:
            if self.errors is None:
                raise
            self._keep_error(events, current, body, error)
            self._reset()
            return
        if events is not None:
            events.append({"type": "region_close", "field": current, "value": value})
        # `_reset`, written out (a commit's calls are most of its cost).
        implicit = self._current = self.IMPLICIT
        if current != implicit:
            (
                self._scan,
                self._end_scan,
                self._start_char,
                self._run,
                self._dirty,
                self._stems,
                self._stem_prefixes,
                self._patterns,
            ) = self.STATES[implicit].entered
        self._captures = {}
        self._parts = []
        self._parts_limit = _COALESCE
        self._opened = False
        self._empty_open = False

    def _keep_error(self, events: list[dict] | None, field: Any, text: str, error: BaseException) -> None:
        """errors="keep": report a region that failed to parse, with its raw text, and carry on."""
        report = {"field": field, "text": text, "error": str(error), "exception": type(error).__name__}
        self.errors.append(report)
        if events is not None:
            events.append({"type": "region_error", **report})

    def _coerce_tool_calls(self, value: Any) -> Any:
        """Tool-argument coercion as upstream tests call it: returns `value`, cast in place."""
        return coerce_tool_calls(value, self._tools)


def _overlap_free(literals: tuple[str, ...]) -> bool:
    """Whether no literal is empty and none ends with a proper prefix of one (itself included): then the
    last match of their alternation ends where the latest last occurrence of any of them ends."""
    if not all(literals):
        return False
    return not any(a[k:] == b[: len(a) - k] for a in literals for b in literals for k in range(1, len(a)))


def _guards(behind: tuple[str, ...] | None, before: str, text: str, char: str) -> bool:
    """Whether the guard character `char` may, somewhere in `text`, end a literal that a guarded branch's
    lookbehind reads (`State.behind`; any text may where one reads a class): only right after such a
    literal can that branch match. `before` is the buffer before the text, the stream's last characters,
    so where it holds less than the literal, the literal may end there only if all it holds ends it."""
    if behind is None:
        return True
    at = _find(text, char)
    while at >= 0:
        end = at + 1
        for literal in behind:
            if literal[-1] == char:
                size = len(literal)
                if end >= size:
                    if text.startswith(literal, end - size):
                        return True
                else:
                    read = before[end - size :] + text[:end]
                    if read == literal or (len(read) < size and literal.endswith(read)):
                        return True
        at = _find(text, char, end)
    return False


def _first_of(text: str, chars: str, start: int = 0) -> int:
    """The index of the first of `chars` in `text` from `start`, or -1 (`str.find` for one character)."""
    if len(chars) == 1:
        return _find(text, chars, start)
    first = -1
    for char in chars:
        at = _find(text, char, start)
        if at >= 0 and (first < 0 or at < first):
            first = at
    return first
