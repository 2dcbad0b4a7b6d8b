"""Pure analysis of a `Spec` into a `ParserPlan`: every decision the generated module writes out.

Decided here, once and deterministically: constant and function names, how each delimiter is scanned
(`str.find` for literals, partial regex search otherwise, a walk back over a lead run), the watch set of
each parser state in the oracle's tie-break order, the shape of each state's two scans, the characters
that let a chunk skip scanning, how much consumed text the patterns need as context, which constants
and imports the module needs (no others are written), and which templates must be refused because
transformers would hang on them. The Jinja templates print this plan and decide nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import regex

from respc.compiler.analysis import (
    LOOKS_BACK,
    anchored_heads,
    backtracking_risk,
    branch_lead,
    empty_together,
    guarded,
    is_plain,
    leading_literals,
    literal_alternatives,
    literal_prefix,
    literal_run,
    literal_strings,
    lookbehind_literals,
    looked_at_strings,
    match_first_chars,
    may_match_empty,
    rare_char,
    reads_back,
    run_tail,
    split_lead,
    stable_end,
)
from respc.compiler.analysis.syntax import parse
from respc.compiler.transforms import transform_expression
from respc.runtime.content import DIRTY_PARSERS
from respc.runtime.scan import RUN_CLASSES, literal_table
from respc.runtime.targets import Target
from respc.spec import Anchor, Field, Spec, TemplateError

__all__ = ["Delimiter", "FieldPlan", "ParserPlan", "State", "describe_anchor", "plan_parser"]

PARSER_FUNCTIONS = {
    "text": "parse_text",
    "int": "parse_int",
    "float": "parse_float",
    "bool": "parse_bool",
    "json": "parse_json",
    "xml-inline": "parse_xml_inline",
    "kv-lines": "parse_kv_lines",
    "python-call-list": "parse_python_call_list",
}
# Characters a far end-of-stream scan looks at for a literal before finding its rare character first.
NEAR = 64
OUTSIDE = "outside"  # the scan of the implicit field / null sink; reserved so no field takes the name
# A head wider than this (`Delimiter.tail_skip`) is taken as unbounded (`sre_parse` gives 2**64 for `*`).
_UNBOUNDED_HEAD = 1 << 16
# The most characters (or starters) an end-of-stream search looks for before a regex without a literal
# prefix (`Delimiter.skip`): each costs a `str.find` over the text.
_MOST_SKIP_CHARS = 4
# The most characters a state's fast modes test a chunk for (`State.start_char`): each costs an `in`.
_MOST_START_CHARS = 3


def describe_anchor(anchor: Anchor) -> str:
    """Literals as reprs, a pattern between slashes (as a repr if it holds unprintable characters)."""
    if anchor.literals is not None:
        return " | ".join(repr(literal) for literal in anchor.literals)
    return f"/{anchor.pattern}/" if anchor.pattern.isprintable() else f"/{anchor.pattern!r}/"


@dataclass(frozen=True)
class Delimiter:
    """One watched delimiter and how the generated code scans for it."""

    field: Any
    kind: str  # "open" or "close"
    anchor: Anchor
    name: str  # base of its constants' names: THINKING_OPEN
    literals: tuple[str, ...]  # longest first
    may_be_empty: bool
    lead: str | None = None  # regex class of a leading run the scan walks back over (`\s*<x>`)
    rest: str | None = None  # the pattern after that run, which the scan searches for
    prefix: str = ""  # literal text every match of the searched pattern starts with
    recheck: bool = False  # a match ending before the edge is final only if it survives extension (5.24)
    # (literal, trailing run class or None) when the searched pattern is a literal and perhaps a run
    # (`literal_run`): end-of-stream scans then need no regex search once they have found the prefix
    literal_run: tuple[str, str | None] | None = None
    # (char, offset) that end-of-stream scans find first (`memchr`) before the literal, the list's
    # alternation or the prefix (see `respc.compiler.analysis.rare`); None: the plain search
    rare: tuple[str, int] | None = None
    # The characters right after which a guarded branch (`guarded`: `(?<=;)...`) can match, "" when each
    # is anchored at the buffer's start (`^...`); None when no branch is guarded.
    guard: str | None = None
    guard_width: int = 0  # how far back the guards' lookbehinds read
    guard_texts: tuple[str, ...] = ()  # the literals of its lookbehinds wider than one character
    # The literals every lookbehind of its guarded branches reads (`lookbehind_literals`), or None (one
    # reads a class; no guard)
    guard_literals: tuple[str, ...] | None = None
    # The characters the text at the buffer's start must begin with for a branch anchored there to match
    # (`anchored_heads`: "" when none is anchored; None when unknown).
    anchored: str | None = None
    # What the fast modes see instead of the delimiter: its unguarded branches, as a delimiter of their
    # own (None when every branch is guarded), or, for an alternation whose branches start with one
    # class of run or none (`branch_lead`), the delimiter as a lead-run delimiter (for its facts only).
    view: Delimiter | None = None

    @property
    def fast(self) -> Delimiter | None:
        """The delimiter as the fast modes judge a chunk, once the parser is past the buffer's start and no
        guard character is near (`State.guard`): itself, or its `view` (None when every branch is
        guarded: it can then start nowhere)."""
        if self.guard is not None:
            return None if self.view is None else self.view.fast
        return self if self.view is None else self.view

    @property
    def method(self) -> str:
        """`literal`, `literals` (a list), `pattern` (a regex) or `lead` (a regex after a lead run)."""
        if self.anchor.literals is None:
            return "pattern" if self.lead is None else "lead"
        return "literal" if len(self.literals) == 1 else "literals"

    @property
    def const(self) -> str:
        """The module constant holding the literal(s) or the (lazily compiled) regex."""
        return self.name + ("_RE" if self.anchor.literals is None else "")

    @property
    def length(self) -> int:
        """The length of a literal delimiter's match (a list's longest literal: the one a tie goes to)."""
        return len(self.literals[0])

    @property
    def remembered(self) -> bool:
        """Whether an end-of-stream pass may reuse where it found this delimiter: only for a pattern in the
        syntax Python's parser and `regex` read alike (`is_plain`), whose match at a position does not
        depend on where the search started. That leaves out `\\G` (matches where the search starts),
        reverse searches with atomic or possessive parts (they stop at the search start) and fuzzy
        constraints (their best match depends on it): an independent review found the last two."""
        return is_plain(self.anchor.pattern)

    @property
    def stems(self) -> tuple[str, ...]:
        """The `starters` that no other one is found inside: a proper prefix of one holds no complete match
        (another starter inside it would be found complete first, `scan_literals`), so held text that is
        one is a partial match at its start (the runtime's held-prefix path)."""
        return _outermost(self.starters)

    @property
    def declared_stems(self) -> tuple[str, ...]:
        """The stems its pattern declares at run time (`LazyRegex(stems=...)`), where they are also texts
        every match starts with (`stems_rule_out` rules a position out by them): `stems`, unless a starter
        was left out of them for holding another (`<a>|a` starts with `<a>` or `a`, its stems are `a`
        alone), when it declares none. An independent review found `<a>|a` ruled out at `<a>`."""
        stems = self.stems
        return stems if set(stems) == set(self.starters) else ()

    @property
    def unguarded_facts(self) -> tuple[tuple[str, ...], str | None]:
        """`(stems, lead)` a pattern with guarded branches declares (`LazyRegex(stems=..., lead=...)`, the
        lead as the name of the runtime's constant for its run class, or None): its
        unguarded branches' (`view`), so that held text that is a run and then a proper prefix of one is
        taken as its partial match (`lead_holds`, `_stem_pattern`) as for any lead-run pattern; `((),
        None)` when there are none. The runtime asks those facts only where no guarded branch can match
        at the held text's start (`_unguarded`); inside such a text none can either, as long as no
        character of the run or of a stem's proper prefix is a guard character (MiniMax-M2's `>`, beside
        `\\s*<minimax:tool_call>`), which is required here. Stems leave guarded branches out wherever they
        are asked (`stems_rule_out` only where none can match)."""
        view = self.view
        if self.guard is None or view is None or view.guard is not None or not view.declared_stems:
            return (), None
        run = RUN_CLASSES[view.lead][1] if view.lead is not None else frozenset()
        characters = set(run).union(*(stem[:-1] for stem in view.stems))
        if characters & set(self.guard):
            return (), None
        return view.stems, None if view.lead is None else RUN_CLASSES[view.lead][0]

    @property
    def starters(self) -> tuple[str, ...]:
        """Texts one of which every match (of the part after the lead run) starts with: a literal list's
        members, a regex's literal strings or its literal prefix (no lookbehind: a match then depends
        on nothing before it); () when unknown."""
        if self.anchor.literals is not None:
            return self.literals
        if LOOKS_BACK.search(self.anchor.pattern):
            return ()
        strings = literal_strings(self.rest or self.anchor.pattern)
        if strings and all(strings):
            return strings
        return (self.prefix,) if self.prefix else ()

    @property
    def looked_at(self) -> tuple[str, ...]:
        """`starters`, or for a pattern with a lookahead branch (`</s>|(?=\\[TOOL_CALLS\\])`), texts one of
        which the text at every match starts with (`looked_at_strings`), though an empty match holds
        none: the state's `starters` (a text that holds none, nor ends with a proper prefix of one, starts
        no match and no partial match), not stems (a held proper prefix of one, once whole, is an empty
        match, which the held paths do not commit); () when unknown."""
        starters = self.starters
        if starters or self.anchor.literals is not None or LOOKS_BACK.search(self.anchor.pattern):
            return starters
        return looked_at_strings(self.rest or self.anchor.pattern) or ()

    @property
    def shortest(self) -> int:
        """The fewest characters a match can span (0 when unknown)."""
        if self.anchor.literals is not None:
            return min(map(len, self.anchor.literals))
        try:
            return int(parse(self.anchor.pattern).getwidth()[0])
        except Exception:
            return 0

    @property
    def memo(self) -> bool:
        """Whether the parser may remember which held texts are (or are not) a partial match of the whole
        pattern (`LazyRegex(memo=True)`, `respc.runtime.scan.partial_held`): only for a pattern whose
        search from a position reads a bounded text before it (`reads_back`, `memo_context`), so that the
        answer is a function of the held text and that much context."""
        return self.memo_context is not None

    @property
    def memo_context(self) -> int | None:
        """How many characters before a held text the memo's key takes (`LazyRegex(context=...)`): 0 for a
        pattern whose search reads nothing before its start (`reads_before`), else `reads_back`'s bound;
        None for a literal, or a pattern that reads back without a bound (no memo)."""
        return None if self.anchor.literals is not None else reads_back(self.anchor.pattern)

    @property
    def tail(self) -> tuple[str, str, str, int] | None:
        """`(head, literal, stops, least)` of a regex written head, a run of non-stops, a literal
        (`run_tail`; `head.*?literal` too): a held partial match of it is then tested with `str.find`s
        once the head has matched (`respc.runtime.scan.AfterHead`)."""
        return None if self.anchor.literals is not None else run_tail(self.anchor.pattern)

    @property
    def prefix_const(self) -> str:
        return self.name + "_PREFIX"

    @property
    def alternation_const(self) -> str:
        """A literal list as one `re` alternation (for end-of-stream scans that mix it with regexes)."""
        return self.name + "_ALT"

    @property
    def whole_const(self) -> str:
        """The whole pattern of a lead-run delimiter, for the recheck (`scan_lead`'s `whole`)."""
        return self.name + "_WHOLE"

    @property
    def run_const(self) -> str:
        """The runtime constant holding the lead-run characters (lead-run delimiters only)."""
        return RUN_CLASSES[self.lead][0]

    @property
    def trail_const(self) -> str:
        """The runtime constant holding the characters of the run that ends a `literal_run` pattern."""
        return RUN_CLASSES[self.literal_run[1]][0]

    @property
    def literal_match(self) -> str | None:
        """The end-of-stream match of a `literal_run` delimiter whose literal was found at `at`, as an
        expression (None for the others): no regex search, and no match object (it has no groups)."""
        if self.literal_run is None:
            return None
        literal, trail = self.literal_run
        # the literal is the prefix the search found (`prefixed`): its length is named with it
        assert literal == self.prefix, self.anchor
        length = self.prefix_const + "_LENGTH"
        if self.lead is None and trail is None:
            return f"(at, at + {length}, True, None)"
        # literal_match walks back over the lead run from the literal: sound only because split_lead
        # never leaves a run character at the start of the rest.
        assert self.lead is None or literal[0] not in RUN_CLASSES[self.lead][1], self.anchor
        lead = self.run_const if self.lead is not None else "None"
        return f"literal_match(buf, pos, at, {length}, {lead}, {self.trail_const if trail else 'None'})"

    @property
    def skip(self) -> str | None:
        """For a regex that matches with no literal prefix, the arguments after the pattern of its
        end-of-stream scan `respc.runtime.scan.scan_first` (which searches from the first position a
        match can start at, `first_start`) as an expression; None when not known. Every match of its
        unguarded branches (the fast modes' view) starts with one of at most _MOST_SKIP_CHARS literal
        characters (or of its `starters`, when known), perhaps after a run of its lead class (which holds
        none of them); its guarded branches match only at the start or right after a guard character
        (`guarded`). Only for a pattern whose match at a position does not depend on where the search
        began (`remembered`)."""
        if self.method != "pattern" or self.prefix or not self.remembered:
            return None
        fast = self.fast
        needles: str | tuple[str, ...] = ""
        run = "None"
        if fast is not None:
            chars = _literal_chars(match_first_chars(fast.rest or fast.anchor.pattern))
            if not chars or len(chars) > _MOST_SKIP_CHARS:
                return None
            needles = _needles(fast, fast.rest or fast.anchor.pattern, chars)
            if fast.lead is not None:
                run = fast.run_const
                # The walk back over the run from a needle is sound only if no needle starts with a run
                # character (`branch_lead` and `split_lead` refuse them; the needles start with `chars`).
                assert not {needle[0] for needle in needles} & RUN_CLASSES[fast.lead][1], self.anchor
        elif self.guard is None:
            return None
        return f"{needles!r}, {run}, {self.guard!r}"

    @property
    def lead_skip(self) -> str | None:
        """For a lead-run regex `R*X` whose `X` has no literal prefix, the characters (or `starters`) every
        match of `X` starts with, as an expression: its end-of-stream scan searches `X` from the first of
        them (`first_start`, then `scan_lead`'s `at`); None when not known. As for `skip`, only for a
        pattern whose match at a position does not depend on where the search began."""
        if self.method != "lead" or self.prefix or self.guard is not None or not self.remembered:
            return None
        chars = _literal_chars(match_first_chars(self.rest))
        if not chars or len(chars) > _MOST_SKIP_CHARS:
            return None
        needles = _needles(self, self.rest, chars)
        assert (
            not {needle[0] for needle in needles} & RUN_CLASSES[self.lead][1]
        ), self.anchor  # (as in `skip`)
        return repr(needles)

    @property
    def tail_skip(self) -> str | None:
        """For a regex with no literal prefix written head, a run of non-stops, a literal (`tail`), the
        arguments after the pattern of its end-of-stream scan `respc.runtime.scan.scan_tail` (the
        literal, the stops, the widest the head can match, None when unbounded) as an expression; None
        for the others. Only for a pattern whose match at a position does not depend on where the search
        began (`remembered`)."""
        if self.method != "pattern" or self.prefix or not self.remembered or self.tail is None:
            return None
        head, literal, stops, _ = self.tail
        width = parse(head).getwidth()[1] if head else 0
        return f"{literal!r}, {stops!r}, {width if width < _UNBOUNDED_HEAD else None}"

    @property
    def alternatives(self) -> tuple[str, ...] | None:
        """The literals of a regex that is (after its lead run) an alternation of literals and nothing else
        (`literal_alternatives`), in the order a match at one position tries them: an end-of-stream scan
        that has found its prefix finds its match with `str.find`s (`respc.runtime.scan.
        alternatives_match`), without a regex search and without a match object (it has no groups)."""
        if self.anchor.literals is not None or self.literal_run is not None:
            return None
        # (Guarded branches need no check here: `literal_alternatives` takes only literals, alternations
        # and groups, never an anchor, a lookaround or a repeat.)
        return literal_alternatives(self.rest or self.anchor.pattern)

    @property
    def alternatives_const(self) -> str:
        return self.name + "_STRINGS"

    @property
    def text(self) -> str:
        """The delimiter as a template author wrote it, for comments and `explain`."""
        return describe_anchor(self.anchor)


@dataclass(frozen=True)
class State:
    """A parser state: inside one explicit field, or outside (the implicit field or the null sink)."""

    key: Any  # the field name, or the implicit field's name (None: null sink) for the outside state
    function: str  # its streaming scan: _scan_<ident>
    explicit: bool
    watches: tuple[Delimiter, ...]  # in the oracle's tie-break order: opens by field name, then the close
    starts: str | None  # class of the characters a watched delimiter's match must start (or resume) with
    runs: tuple[str, ...]  # regex classes of the trailing runs that lead-run delimiters hold back
    dirty: bool
    rare: tuple[str, int] | None = None  # found first by the `literals` end scan, as `Delimiter.rare`
    context: int | None = 0  # the plan's: consumed characters the patterns look back at (None: all)
    lookbehinds: tuple[str, ...] = ()  # the plan's: what the guards wider than one character read
    # every feed takes the oracle's pass (no fast path): the runtime then replays the oracle's tie-break
    # of field names that do not compare (`ParserPlan.unordered`) at every scan, as the oracle does
    general: bool = False

    @property
    def mode(self) -> str:
        """How the runtime feeds while this state's region is open and nothing is held (see
        `respc.runtime.parser`): `bare` when it watches nothing (every chunk is routed); else, when a
        chunk's start characters say whether a delimiter can start in it (a `start_char`, and patterns
        that look back no further than one character), `plain` (route it), `lead` (route it up to a
        trailing run of the one lead-run class, which is held) or, outside every region of a template
        without an implicit field, `discard` (drop it); `general` otherwise (a pass per chunk). Guarded
        branches (`guard`) are left out of these facts: the runtime takes a fast mode only where they
        cannot match."""
        if self.general:
            return "general"
        if not self.watches:
            return "bare"
        if self.context is None or self.start_char is None or len(self.runs) > 1:
            return "general"
        if self.key is None and not self.explicit:
            return "discard" if not self.runs else "general"
        return "lead" if self.runs else "plain"

    @property
    def end_function(self) -> str:
        """The state's end-of-stream scan, which holds nothing back."""
        return self.function.replace("_scan_", "_end_", 1)

    @property
    def far_function(self) -> str:
        """The state's end-of-stream scan for a long text, which finds rare characters first."""
        return self.function.replace("_scan_", "_far_", 1)

    @property
    def far(self) -> bool:
        """Whether the end-of-stream scan searches a literal (or a regex's literal prefix) with a rare
        character, so that a scan for long texts is worth writing."""
        if self.end_shape == "literals":
            return self.rare is not None
        return self.end_shape != "nothing" and any(d.rare is not None for d in self.watches)

    @property
    def table(self) -> str:
        """Base of the names of the state's own constants: _OUTSIDE."""
        return self.function.removeprefix("_scan").upper()

    @property
    def literal_table(self) -> tuple[tuple[str, bool, Any], ...] | None:
        """For a state watching only literals (two or more), `(literal, is_open, field)` in the order an
        alternation must try them to reproduce the tie-break at one position (`respc.runtime.scan.
        literal_table`, which the generated module calls at import). None otherwise."""
        if not self.watches or any(d.method not in ("literal", "literals") for d in self.watches):
            return None
        if sum(len(d.literals) for d in self.watches) < 2:
            return None
        _, commits = literal_table(*((d.literals, d.kind == "open", d.field) for d in self.watches))
        return tuple((literal, *commit) for literal, commit in commits.items())

    @property
    def stems(self) -> tuple[str, ...]:
        """Texts a match of a watched delimiter can start with at any position (`Delimiter.stems`). Held
        text that is a proper prefix of a stem is a partial match at its start, so a chunk that keeps it
        one cannot commit or route anything (the runtime's held-prefix path)."""
        found = {stem for d in _fast(self.watches) for stem in d.stems}
        return tuple(sorted(found, key=lambda stem: (-len(stem), stem)))

    @property
    def guard(self) -> str | None:
        """The characters right after which a guarded branch of a watched delimiter can match, "" when each
        is anchored at the buffer's start; None when no watched delimiter has one. The fast modes' facts
        (`starts`, `runs`, `stems`, `starters`) leave those branches out, so they hold only once the parser
        is past the buffer's start and none of these characters is in the text looked at, nor just before
        it (the runtime checks)."""
        guards = [d.guard for d in self.watches if d.guard is not None]
        return None if not guards else "".join(sorted(set("".join(guards))))

    @property
    def anchored(self) -> str | None:
        """For a state with guarded branches (`guard`), the characters the text at the buffer's start must
        begin with for one anchored there to match or match partially (`Delimiter.anchored`): "" when none
        is (MiniMax-M2's lookbehind); None when unknown, or when no branch is guarded. At position 0 a chunk
        that begins with none of them is judged by the fast modes' facts, as past the start."""
        if self.guard is None:
            return None
        heads: set[str] = set()
        for d in self.watches:
            if d.guard is not None:
                if d.anchored is None:
                    return None
                heads.update(d.anchored)
        return "".join(sorted(heads))

    @property
    def behind(self) -> tuple[str, ...] | None:
        """For a state with guarded branches (`guard`), the literals their lookbehinds read, when each
        reads one (`Delimiter.guard_literals`; anchored branches, which match only at position 0, are left
        out): a guard character right before the scan position then guards nothing unless the text up to
        it ends with one of them (MiniMax-M2's `</think>`, beside `(?<=</invoke>)`). None when one reads a
        class, when each reads one character (the guard characters tell as much), or when no branch is
        guarded."""
        if self.guard is None:
            return None
        found: set[str] = set()
        for d in self.watches:
            if d.guard is not None:
                if d.guard_literals is None:
                    return None
                found.update(d.guard_literals)
        if all(len(literal) == 1 for literal in found):
            return None  # (one character each: the guard characters say it all)
        return tuple(sorted(found))

    @property
    def starters(self) -> tuple[str, ...]:
        """Texts that every match of every watched delimiter starts with (after its lead run), when each
        has some (`Delimiter.starters`), else (): a chunk in which none occurs and no suffix is a proper
        prefix of one starts no match and no partial match, so nothing held, it is routed without a
        scan (the runtime's skip path, for chunks that hold the start character)."""
        found: set[str] = set()
        for d in _fast(self.watches):
            if not d.looked_at:
                return ()
            found.update(d.looked_at)
        return tuple(sorted(found, key=lambda text: (-len(text), text)))

    @property
    def patterns(self) -> tuple[str, ...]:
        """The constants of the watched regex delimiters' whole patterns: held text that one of them still
        matches partially at its start, chunk added, is a hold there, so the chunk only grows the
        buffer (the runtime's mode held, for regex delimiters)."""
        return tuple(
            d.whole_const if d.method == "lead" else d.const
            for d in self.watches
            if d.anchor.literals is None
        )

    @property
    def wide(self) -> bool | None:
        """`State.wide` for the row: False where the template keeps more than one character of context (a
        guard's lookbehind reads further back: `CONTEXT`) but this state needs none of it: none of its own
        delimiters looks back that far, and each it watches either is at least `CONTEXT` characters long,
        so the state a commit here enters finds that much context in the committed delimiter, which the
        buffer holds whole (MiniMax-M2's tool call, which `</invoke>` closes), or is a literal no
        lookbehind can read past (`_no_lookbehind_reaches`: its reasoning, which `</think>` closes). Its
        fast modes then keep only the chunk as the buffer; None elsewhere (not written: the class's
        `CONTEXT` decides)."""
        if self.context is None or self.context <= 1 or not self.watches:
            return None
        if any(d.guard_width > 1 for d in self.watches):
            return None
        if all(d.shortest >= self.context or self._no_lookbehind_reaches(d) for d in self.watches):
            return False
        return None

    def _no_lookbehind_reaches(self, delimiter: Delimiter) -> bool:
        """Whether no guard's lookbehind can read past the start of this literal delimiter once it commits:
        a lookbehind tried at or after its end that reaches before its start holds the whole delimiter
        after at least one character, so one whose text holds none of its literals there never matches
        whatever came before (`</think>` is not in `/invoke>`, what `(?<=</invoke>)` reads after its first
        character)."""
        literals = delimiter.anchor.literals
        return (
            literals is not None
            and bool(self.lookbehinds)
            and all(literal and literal not in text[1:] for literal in literals for text in self.lookbehinds)
        )

    @property
    def watch(self) -> bool:
        """Whether the state's row lists its watched delimiters (`State.watch`, in the tie-break order): for
        a state of the fast modes, where a held partial match of a regex delimiter, or a held stem's
        prefix grown into a literal's match, is committed once complete after testing only the others at
        its start (`CompiledParser._commit_held`, `_commit_literal`)."""
        return not self.general and bool(self.watches)

    @property
    def table_literals(self) -> tuple[str, ...]:
        return tuple(literal for literal, _, _ in self.literal_table or ())

    @property
    def stream_shape(self) -> str:
        """How the streaming scan is written: `nothing` to watch; `literals`, every watch one literal,
        found with the literal table's alternation (a literal list may still grow at the buffer edge,
        which the alternation cannot say) and partial matches from the set of the literals' proper
        prefixes; `one` watched delimiter; or `many`, one helper call each."""
        if not self.watches:
            return "nothing"
        if len(self.watches) >= 2 and all(d.method == "literal" for d in self.watches):
            return "literals"
        return "one" if len(self.watches) == 1 else "many"

    @property
    def end_shape(self) -> str:
        """How the end-of-stream scan is written: `nothing`, `literals` (the literal table), `literal`
        (one `str.find`) or `many` (one candidate each)."""
        if not self.watches:
            return "nothing"
        if self.literal_table:
            return "literals"
        if len(self.watches) == 1 and self.watches[0].method == "literal":
            return "literal"
        return "many"

    @property
    def partial_span(self) -> int:
        """How far from the end of the buffer a partial match can start: the longest literal, less one."""
        return max(len(lit) for d in self.watches for lit in d.literals) - 1

    @property
    def first_chars(self) -> tuple[str, ...]:
        return tuple(sorted({lit[0] for d in self.watches for lit in d.literals}))

    @property
    def partial_char(self) -> str | None:
        """For the `literals` stream shape: the one character every watched literal starts with, found
        with `str.find`; None when there are several (the `starts` pattern finds them)."""
        return self.first_chars[0] if len(self.first_chars) == 1 else None

    @property
    def end_may_commit_at_edge(self) -> bool:
        """Whether the end-of-stream scan must refuse a zero-width match at the very end (only regex
        delimiters can match empty)."""
        return any(d.method in ("pattern", "lead") for d in self.watches)

    @property
    def start_char(self) -> str | None:
        """The characters `starts` matches, when it is a class of at most three literal characters: the
        fast modes test a chunk for each with `in` (None: for a pattern, `starts`)."""
        items = self.starts[1:-1] if self.starts and self.starts.startswith("[") else ""
        chars, i = [], 0
        while i < len(items):
            if items[i] == "\\":
                if i + 1 == len(items) or items[i + 1].isalnum():
                    return None  # a category such as \s
                chars.append(items[i + 1])
                i += 2
            elif items[i] == "-":
                return None  # a range
            else:
                chars.append(items[i])
                i += 1
        return "".join(chars) if 0 < len(chars) <= _MOST_START_CHARS else None

    @property
    def starts_const(self) -> str | None:
        """The pattern constant of `starts`, written unless one `start_char` says it all (the row's test
        without a `start_char`, and the literal scans' search for several first characters)."""
        if self.starts is None or (self.start_char is not None and len(self.start_char) == 1):
            return None
        return self.table + "_STARTS"

    @property
    def starts_engine(self) -> str:
        """`re` (lower call overhead) for classes of literal characters, `regex` when categories appear."""
        return "regex" if self.starts is None or re.search(r"\\[a-zA-Z]", self.starts) else "re"

    @property
    def run_consts(self) -> tuple[str, ...]:
        return tuple(RUN_CLASSES[run][0] for run in self.runs)

    @property
    def comment(self) -> str:
        if self.explicit:
            where = f"Field {self.key!r}"
        elif self.key is None:
            where = "Outside explicit regions (no implicit field: text is discarded)"
        else:
            where = f"Outside explicit regions, in the implicit field {self.key!r}"
        if not self.watches:
            return f"{where}: watches nothing, so the region runs to the end of the stream."
        watched = ", ".join(f"{d.kind} of {d.field!r} {d.text}" for d in self.watches)
        return f"{where}: watches {watched}."


@dataclass(frozen=True)
class FieldPlan:
    name: Any
    ident: str
    content: str
    parser: str  # runtime content parser function
    args: Any
    transform: Any
    transform_each: bool
    transform_expr: str | None  # the transform as an expression over `content` and `captures`
    repeats: bool
    join: str | None
    optional: bool
    close_captures: bool  # the close match's named groups join the captures (a target switch)

    @property
    def args_const(self) -> str:
        return f"{self.ident.upper()}_ARGS"

    @property
    def transform_const(self) -> str:
        return f"{self.ident.upper()}_TRANSFORM"

    @property
    def parse_const(self) -> str:
        return f"{self.ident.upper()}_PARSE"

    @property
    def parse_call(self) -> str:
        """The expression giving the parsed content from `body`: `text` with fixed arguments is inlined;
        the others call the field's parser, which the module builds once from its arguments and release
        (`respc.runtime.content.content_parser`, specialised to those arguments)."""
        if self.parser == "parse_text" and type(self.args) is dict and set(self.args) <= {"strip"}:
            if type(self.args.get("strip", True)) is bool:
                return "body.strip()" if self.args.get("strip", True) else "body"
        return f"{self.parse_const}(body)"

    @property
    def uses_args(self) -> bool:
        return self.parse_call != "body.strip()" and self.parse_call != "body"

    @property
    def value_shape(self) -> str:
        """`content` (no transform), `expression` (the transform written out), `each` (transform_each
        written out), or `runtime` / `runtime-each` (applied by the runtime: too large, or holding odd
        values)."""
        if self.transform is None:
            return "content"
        if self.transform_each:
            return "each" if self.transform_expr is not None else "runtime-each"
        return "expression" if self.transform_expr is not None else "runtime"

    @property
    def uses_transform(self) -> bool:
        return self.value_shape in ("runtime", "runtime-each")


@dataclass(frozen=True)
class ParserPlan:
    target: Target
    template: Any
    source_name: str
    fields: tuple[FieldPlan, ...]
    delimiters: tuple[Delimiter, ...]
    states: tuple[State, ...]
    implicit: Any
    defaults: dict
    required: tuple[Any, ...]
    start_anchor: Anchor
    context: int | None  # consumed characters the patterns need before the scan position (None: all)
    lookbehinds: tuple[str, ...] = ()  # the literals the guards wider than one character read
    warnings: tuple[str, ...] = ()  # template problems worth a look that do not stop compilation
    # (field, open pattern, literal, can_extend) of every open in template order, when the field names
    # cannot all be compared: the oracle's tie-break then raises TypeError where two committable opens
    # match at one position with one length
    unordered: tuple[tuple[Any, str, bool, bool], ...] = ()

    @property
    def start_anchor_kind(self) -> str:
        """The key the start anchor came from, as the oracle's log message names it."""
        return "start_anchor" if self.start_anchor.is_literal else "start_anchor_pattern"

    @property
    def whole_by_stream(self) -> bool:
        """Whether `parse_response` feeds the text and finalizes, as the oracle does, instead of its own
        end-of-stream pass: for delimiter patterns in syntax the analyses do not read (`is_plain`), such
        as `\\K` (a match then starts after text the stream may already have routed past) and fuzzy
        matching (its best match depends on where each search starts), the one pass is not shown to
        agree with the stream."""
        if self.unordered:
            return True  # the oracle's tie-break raises in the scans of the stream (`unordered`)
        return any(not is_plain(d.anchor.pattern) for d in self.delimiters if d.anchor.literals is None)

    @property
    def holds_values(self) -> bool:
        """Whether the module needs the section of content-parser arguments and transforms."""
        return self.uses_release or any(f.uses_args or f.uses_transform for f in self.fields)

    @property
    def start_anchor_literals(self) -> tuple[str, ...]:
        """The literal start anchors, longest first, as the oracle's alternation tries them."""
        return tuple(sorted(self.start_anchor.literals or (), key=len, reverse=True))

    # -- what the module holds -------------------------------------------------------------------------

    def _watched(self, shapes: tuple[str, ...], attribute: str) -> list[Delimiter]:
        return [d for s in self.states if getattr(s, attribute) in shapes for d in s.watches]

    @property
    def used_delimiters(self) -> frozenset[str]:
        """The delimiter constants some scan or literal table reads."""
        used = {d.const for d in self._watched(("one", "many"), "stream_shape")}
        used |= {d.const for d in self._watched(("literal", "literals", "many"), "end_shape")}
        return frozenset(used)

    @property
    def alternations(self) -> frozenset[str]:
        """Literal lists that an end-of-stream `many` scan searches as one alternation."""
        return frozenset(d.const for d in self._watched(("many",), "end_shape") if d.method == "literals")

    @property
    def prefixed(self) -> frozenset[str]:
        """Regex delimiters whose end-of-stream search starts at their literal prefix."""
        return frozenset(
            d.const
            for d in self._watched(("many",), "end_shape")
            if d.method in ("pattern", "lead") and d.prefix
        )

    @property
    def stream_prefixed(self) -> frozenset[str]:
        """Regex delimiters that a streaming `many` scan skips when no match can start by the best candidate
        found before them: their literal prefix is not there (nor, for a lead run, reaches it)."""
        return frozenset(
            d.const
            for s in self.states
            if s.stream_shape == "many"
            for d in s.watches[1:]
            if d.method in ("pattern", "lead") and d.prefix
        )

    def remembers(self, state: State, index: int) -> bool:
        """Whether the end-of-stream scan of `state` keeps its `index`-th watch's search in the pass's
        memo: a regex searched without a bound (not from its prefix up to the best so far) in a state
        watching several delimiters (with one, the match found is the one committed)."""
        d = state.watches[index]
        return (
            len(state.watches) > 1
            and d.method in ("pattern", "lead")
            and not (index > 0 and d.method == "pattern" and d.const in self.prefixed)
        )

    @property
    def end_memo(self) -> bool:
        """Whether some end-of-stream scan takes the pass's memo (`remembers`)."""
        return any(
            self.remembers(s, i) for s in self.states if s.end_shape == "many" for i in range(len(s.watches))
        )

    @property
    def near(self) -> int:
        """How far the far scans look for a literal before they find its rare character first."""
        return NEAR

    @staticmethod
    def far_skip(length: int, rare: tuple[str, int]) -> int | None:
        """Where, past the search position, a far scan finds the rare character of a literal of `length`
        that is not within NEAR characters: any occurrence then starts at `NEAR - length + 1` or later,
        and has the character `rare[1]` further. None for a literal longer than NEAR (no near look)."""
        return NEAR - length + 1 + rare[1] if length <= NEAR else None

    @property
    def rare_needles(self) -> tuple[tuple[str, tuple[str, int], str, bool], ...]:
        """`(base, rare, needle, is_list)` for what a far scan may find from its rarest character
        (`rare_char`): the base of its constants' names (`base_RARE`, `base_RARE_AT`, `base_FAR`) and the
        constant holding the needle (a list's longest literal is its first); delimiters (their literal,
        list or prefix) and states' literal tables."""
        needles = []
        for d in self.delimiters:
            if d.rare is not None:
                needle = d.const if d.method in ("literal", "literals") else d.prefix_const
                needles.append((d.name, d.rare, needle, d.method == "literals"))
        for s in self.states:
            if s.rare is not None:
                needles.append((s.table, s.rare, s.table + "_LITERALS", True))
        return tuple(needles)

    @property
    def far_states(self) -> tuple[State, ...]:
        """The states with an end-of-stream scan for long texts (`State.far`)."""
        return tuple(s for s in self.states if s.far)

    @property
    def rechecked_leads(self) -> frozenset[str]:
        """Lead-run delimiters whose streaming scan rechecks the whole pattern (`*_WHOLE` constants)."""
        return frozenset(
            d.const
            for d in self._watched(("one", "many"), "stream_shape")
            if d.method == "lead" and d.recheck
        )

    @property
    def lazy_patterns(self) -> tuple[str, ...]:
        """The module's `LazyRegex` constants, for `warm_up`."""
        names = []
        for d in self.delimiters:
            if d.anchor.literals is None and d.const in self.used_delimiters:
                names.append(d.const)
                if d.method == "lead":
                    names.append(d.whole_const)
        names += [s.starts_const for s in self.states if s.starts_const and s.starts_engine == "regex"]
        return tuple(names)

    @property
    def uses_release(self) -> bool:
        """Whether a value function passes the release to a content parser (`RELEASE`)."""
        return any(f.uses_args for f in self.fields)

    @property
    def imports(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """`from module import names` lines, sorted as ruff sorts them."""
        content = ("content_parser",) if any(f.uses_args for f in self.fields) else ()
        scan = {
            f"scan_{d.method}" for s in self.states if s.stream_shape in ("one", "many") for d in s.watches
        }
        scan |= {
            f"scan_{d.method}"
            for s in self.states
            if s.end_shape == "many"
            for d in s.watches
            if d.method in ("pattern", "lead")
        }
        scan |= {run for s in self.states for run in s.run_consts}
        many = [d for s in self.states if s.end_shape == "many" for d in s.watches]
        if any(d.alternatives for d in many):
            scan.add("alternatives_match")
        if any(s.end_shape == "literals" and len(s.first_chars) > 1 for s in self.states):
            scan.add("first_start")
        for d in many:
            if d.alternatives:
                continue
            if d.const not in self.prefixed and d.skip is not None:
                scan.add("scan_first")
                if d.fast is not None and d.fast.lead is not None:
                    scan.add(d.fast.run_const)
            elif d.const not in self.prefixed and d.tail_skip is not None:
                scan.add("scan_tail")
            elif d.const not in self.prefixed and d.lead_skip is not None:
                scan.add("first_start")
        scan |= {
            d.run_const for d in self.delimiters if d.method == "lead" and d.const in self.used_delimiters
        }
        scan |= {
            run
            for d in self.delimiters
            if d.method == "pattern" and d.const in self.used_delimiters
            if (run := d.unguarded_facts[1]) is not None
        }
        if any(d.method == "lead" for d in self.delimiters if d.const in self.stream_prefixed):
            scan.add("lead_reaches")
        for d in self.delimiters:
            if d.const in self.prefixed and d.literal_run is not None:
                if d.literal_run[1] is not None:
                    scan.add(d.trail_const)
                if d.literal_run[1] is not None or d.lead is not None:
                    scan.add("literal_match")
        if self.lazy_patterns or not self.start_anchor.is_literal:
            scan.add("LazyRegex")
        if any(s.end_shape == "literals" for s in self.states):
            scan.add("literal_table")
        transform = set()
        for f in self.fields:
            if f.value_shape == "runtime-each":
                transform.add("transform_each")
            elif f.value_shape == "runtime":
                transform.add("transform_value")
            elif f.value_shape == "each":
                transform.add("each_scope")
                if "resolve_in(" in f.transform_expr:
                    transform.add("resolve_in")
            elif f.value_shape == "expression" and "resolve_placeholder(" in f.transform_expr:
                transform.add("resolve_placeholder")
        lines = [
            ("respc.runtime.content", content),
            ("respc.runtime.contract", ("Field", "State")),
            ("respc.runtime.parser", ("CompiledParser",)),
            ("respc.runtime.scan", tuple(sorted(scan, key=lambda n: (not n.isupper(), n)))),
            ("respc.runtime.targets", ("get_target",) if self.uses_release else ()),
            ("respc.runtime.transform", tuple(sorted(transform))),
        ]
        return tuple((module, names) for module, names in lines if names)

    @property
    def uses_re(self) -> bool:
        return (
            self.start_anchor.is_literal
            or any(s.starts_const and s.starts_engine == "re" for s in self.states)
            or any(s.end_shape == "literals" for s in self.states)
            or bool(self.alternations)
        )

    @property
    def description(self) -> str:
        """One paragraph on the format, for the module docstring."""
        lines = []
        for field in self.fields:
            opening = next((d for d in self.delimiters if d.field == field.name and d.kind == "open"), None)
            closing = next((d for d in self.delimiters if d.field == field.name and d.kind == "close"), None)
            start = opening.text if opening else "wherever no other region is open"
            end = closing.text if closing else "the end of the stream"
            lines.append(f"{field.name!r} ({field.content}) from {start} to {end}")
        anchor = describe_anchor(self.start_anchor)
        return (
            f"Response parser compiled from {self.source_name} for transformers {self.target.name}.\n\n"
            "Regions: "
            + "; ".join(lines)
            + f".\nThe prefix is read from after its last start anchor {anchor}."
        )


def _identifiers(names: list[Any]) -> list[str]:
    taken = {OUTSIDE}
    out = []
    for name in names:
        base = re.sub(r"[^0-9A-Za-z]+", "_", str(name)).strip("_").lower() or "field"
        if base[0].isdigit():
            base = "f_" + base
        ident, n = base, 2
        while ident in taken:
            ident, n = f"{base}_{n}", n + 1
        taken.add(ident)
        out.append(ident)
    return out


def _delimiter(field: Field, ident: str, kind: str, anchor: Anchor, target: Target) -> Delimiter:
    name = f"{ident.upper()}_{kind.upper()}"
    if anchor.literals is None:
        split = split_lead(anchor.pattern)
        lead, rest = split if split else (None, None)
        guard = guarded(anchor.pattern)
        view = None
        if guard is not None and guard[0]:
            view = _delimiter(field, ident, kind, Anchor(anchor.key, None, guard[0], False, ()), target)
        branches = branch_lead(anchor.pattern) if split is None and guard is None else None
        delimiter = Delimiter(
            field.name,
            kind,
            anchor,
            name,
            (),
            may_match_empty(anchor.pattern),
            lead,
            rest,
            literal_prefix(rest or anchor.pattern),
            # (a pattern that reads nothing past its match always survives: `stable_end`)
            recheck=target.recheck_regex_matches and not stable_end(anchor.pattern),
            literal_run=literal_run(rest or anchor.pattern),
            guard=None if guard is None else guard[1],
            guard_width=0 if guard is None else guard[2],
            guard_texts=() if guard is None else guard[3],
            anchored=None if guard is None else anchored_heads(anchor.pattern),
            guard_literals=None if guard is None else lookbehind_literals(anchor.pattern),
            view=view,
        )
        if branches is not None:
            # (Facts only: the scan searches the whole alternation.)
            run, rest = branches
            lead_view = replace(delimiter, lead=run, rest=rest, prefix=literal_prefix(rest), literal_run=None)
            delimiter = replace(delimiter, view=lead_view)
        return delimiter
    return Delimiter(
        field.name, kind, anchor, name, tuple(sorted(anchor.literals, key=len, reverse=True)), False
    )


def _fast(watches: tuple[Delimiter, ...]) -> tuple[Delimiter, ...]:
    """The watched delimiters as the fast modes see them (`Delimiter.fast`): guarded branches set aside,
    and the delimiters that are nothing else left out."""
    return tuple(d.fast for d in watches if d.fast is not None)


def _starts(watches: tuple[Delimiter, ...]) -> str | None:
    """A character class matching every character a watched delimiter can start with, if one exists."""
    if not watches:
        return "(?!)"
    items: set[str] = set()
    for d in watches:
        if d.anchor.literals is not None:
            items |= {regex.escape(literal[0]) for literal in d.literals}
        else:
            first = match_first_chars(d.rest or d.anchor.pattern)
            if first is None:
                return None
            items |= first
    return "[" + "".join(sorted(items)) + "]"


def _needles(d: Delimiter, pattern: str, chars: str) -> str | tuple[str, ...]:
    """What `first_start` looks for ahead of a match of `pattern` (a delimiter, or what follows its lead
    run), whose matches start with one of `chars`: texts one of which every match starts with, when known
    (its `starters`, or the literals it opens with, `leading_literals`), which are rarer than their first
    characters; else the characters."""
    for texts in (d.starters, leading_literals(pattern, _MOST_SKIP_CHARS)):
        if texts and len(texts) <= _MOST_SKIP_CHARS and all(texts):
            return tuple(texts)
    return chars


def _literal_chars(items: set[str] | None) -> str | None:
    """The characters of a class's items (`match_first_chars`), when each is one literal character
    (escaped or not); None for a category (`\\s`), a range or no items."""
    if not items:
        return None
    chars = []
    for item in items:
        if len(item) == 1:
            chars.append(item)
        elif len(item) == 2 and item[0] == "\\" and not item[1].isalnum():
            chars.append(item[1])
        else:
            return None
    return "".join(sorted(chars))


def _runs(watches: tuple[Delimiter, ...]) -> tuple[str, ...]:
    """The distinct lead-run classes, in a fixed order."""
    return tuple(sorted({d.lead for d in watches if d.lead is not None}, key=lambda run: RUN_CLASSES[run][0]))


def _outermost(literals: tuple[str, ...]) -> tuple[str, ...]:
    """The literals no other one of them is found inside."""
    return tuple(lit for lit in literals if not any(other != lit and other in lit for other in literals))


def _texts(d: Delimiter) -> tuple[str, ...]:
    """What a delimiter's matches are written with, for `rare_char`'s count of the template's others."""
    return d.literals or (d.anchor.pattern,)


def _rare(d: Delimiter, delimiters: list[Delimiter]) -> tuple[str, int] | None:
    """The character an end-of-stream scan finds before the literal(s) or the regex's literal prefix."""
    needles = d.literals or ((d.prefix,) if d.prefix else ())
    return rare_char(needles, tuple(t for other in delimiters if other is not d for t in _texts(other)))


def _with_rare(state: State, delimiters: list[Delimiter]) -> State:
    """A `literals` end scan searches its table's alternation: it finds a character they share first."""
    if not state.literal_table:
        return state
    elsewhere = tuple(t for d in delimiters if d not in state.watches for t in _texts(d))
    return replace(state, rare=rare_char(state.table_literals, elsewhere))


def _kind(name: Any) -> tuple:
    """The names the oracle's tie-break can compare with `name`'s, as a sortable key: strings, numbers
    (bool, int and float compare with each other), or one other type."""
    if isinstance(name, str):
        return (0, "")
    if isinstance(name, (int, float)):
        return (1, "")
    return (2, type(name).__name__)


def _tie_order(names: list[Any]) -> tuple[list[Any], bool]:
    """The field names in the order the oracle's tie-break prefers them (it compares the names of two opens
    matching at one position with one length: the least wins), and whether they are all comparable. When
    they are not (`None` beside a string, an integer beside a string) the oracle raises `TypeError` at such
    a tie, which the runtime reproduces (`CompiledParser.UNORDERED`); each kind of name that compares
    among itself then keeps the oracle's order (9 before 10, `(9,)` before `(10,)`), the kinds in a fixed
    one, and names of a kind that do not all compare the order of their `repr`."""
    try:
        return sorted(names), True
    except TypeError:
        pass
    kinds: dict[tuple, list[Any]] = {}
    for name in names:
        kinds.setdefault(_kind(name), []).append(name)
    ordered: list[Any] = []
    for kind in sorted(kinds):
        try:
            ordered.extend(sorted(kinds[kind]))
        except TypeError:
            ordered.extend(sorted(kinds[kind], key=repr))
    return ordered, False


def _refuse_hanging(field: Field, opening: Delimiter, closing: Delimiter) -> None:
    if (
        opening.may_be_empty
        and closing.may_be_empty
        and empty_together(opening.anchor.pattern, closing.anchor.pattern)
    ):
        raise TemplateError(
            f"Field '{field.name}': {field.open.key} and {field.close.key} can both match the empty "
            "string at one position; transformers' parser then opens and closes the field there forever "
            "and never returns (quirk Q5). Make the open or the close consume at least one character."
        )


def plan_parser(spec: Spec, source_name: str = "<template>") -> ParserPlan:
    """Decide everything the generated module writes out; raises `TemplateError` for hanging templates."""
    target = spec.target
    idents = _identifiers([field.name for field in spec.fields])
    field_plans, delimiters = [], []
    opens: dict[Any, Delimiter] = {}
    closes: dict[Any, Delimiter] = {}
    for field, ident in zip(spec.fields, idents):
        if field.open is not None:
            opens[field.name] = _delimiter(field, ident, "open", field.open, target)
            delimiters.append(opens[field.name])
        if field.close is not None:
            closes[field.name] = _delimiter(field, ident, "close", field.close, target)
            delimiters.append(closes[field.name])
        if field.open is not None and field.close is not None:
            _refuse_hanging(field, opens[field.name], closes[field.name])
        field_plans.append(
            FieldPlan(
                name=field.name,
                ident=ident,
                content=field.content,
                parser=PARSER_FUNCTIONS[field.content],
                args=field.content_args,
                transform=field.transform,
                transform_each=field.transform_each,
                transform_expr=(
                    transform_expression(field.transform, each=field.transform_each)
                    if field.transform is not None
                    else None
                ),
                repeats=field.repeats,
                join=field.join,
                optional=field.optional,
                close_captures=target.close_captures and field.close is not None and bool(field.close.groups),
            )
        )
    rare = {d.name: replace(d, rare=_rare(d, delimiters)) for d in delimiters}
    delimiters = [rare[d.name] for d in delimiters]
    opens = {name: rare[d.name] for name, d in opens.items()}
    closes = {name: rare[d.name] for name, d in closes.items()}
    dirty = {field.name: field.content in DIRTY_PARSERS for field in spec.fields}
    implicit = spec.implicit.name if spec.implicit is not None else None
    ordered, comparable = _tie_order(list(opens))
    outside = tuple(opens[name] for name in ordered)
    if implicit is not None and implicit in closes:
        outside += (closes[implicit],)
    patterns = [d for d in delimiters if d.anchor.literals is None]
    # Patterns that look behind the scan position (or change how far back a boundary looks) need the whole
    # consumed text as context, unless the lookbehind is a guard (`guarded`), which reads a literal: the
    # context is then as wide as the widest. Anything else sees at most one character before it.
    looks_back = any(d.guard is None and LOOKS_BACK.search(d.anchor.pattern) for d in patterns)
    context = None if looks_back else (max(1, *(d.guard_width for d in patterns)) if patterns else 0)
    # The literals the wide guards read (`CONTEXT` above one): what the fast modes test a chunk against to
    # know whether the context before it can still matter (`CompiledParser._feed_wide`).
    lookbehinds = (
        tuple(sorted({text for d in patterns for text in d.guard_texts})) if context and context > 1 else ()
    )
    states = [
        State(
            implicit,
            "_scan_" + OUTSIDE,
            False,
            outside,
            _starts(_fast(outside)),
            _runs(_fast(outside)),
            dirty.get(implicit, False),
            context=context,
            lookbehinds=lookbehinds,
        )
    ]
    for field, ident in zip(spec.fields, idents):
        if field.open is None:
            continue
        if field.name is None:
            # A field named None: the oracle's current region None is its null sink, so once this field's
            # open commits, the parser watches what it watches outside every region and discards text.
            if implicit is not None:
                states.append(replace(states[0], key=None, function="_scan_" + ident))
        else:
            watches = (closes[field.name],) if field.name in closes else ()
            states.append(
                State(
                    field.name,
                    "_scan_" + ident,
                    True,
                    watches,
                    _starts(_fast(watches)),
                    _runs(_fast(watches)),
                    dirty[field.name],
                    context=context,
                    lookbehinds=lookbehinds,
                )
            )
    states = [replace(_with_rare(state, delimiters), general=not comparable) for state in states]
    warnings = tuple(
        f"Field '{d.field}': {d.anchor.key} {d.text} may backtrack exponentially ({risk})"
        for d in delimiters
        if d.anchor.literals is None and (risk := backtracking_risk(d.anchor.pattern))
    )
    return ParserPlan(
        target=target,
        template=spec.template,
        source_name=source_name,
        fields=tuple(field_plans),
        delimiters=tuple(delimiters),
        states=tuple(states),
        implicit=implicit,
        defaults=spec.defaults,
        required=tuple(field.name for field in spec.fields if not field.optional),
        start_anchor=spec.start_anchor,
        context=context,
        lookbehinds=lookbehinds,
        warnings=warnings,
        unordered=(
            ()
            if comparable
            else tuple(
                (f.name, f.open.pattern, f.open.is_literal, f.open.can_extend)
                for f in spec.fields
                if f.open is not None
            )
        ),
    )
