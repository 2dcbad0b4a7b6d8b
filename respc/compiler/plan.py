"""Pure analysis of a `Spec` into a `ParserPlan`: every decision the generated module writes out.

Decided here, once and deterministically: constant and function names, how each delimiter is
scanned (`str.find` for literals, partial regex search otherwise), the watch set of each parser
state in the oracle's tie-break order, the characters that let a chunk skip scanning, how much
consumed text the patterns need as context, and which templates must be refused because
transformers would hang on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import regex

from respc.compiler.firstchars import (
    LEAD_CHARS,
    backtracking_risk,
    empty_together,
    first_chars,
    literal_prefix,
    may_match_empty,
    split_lead,
)
from respc.compiler.spec import Anchor, Field, Spec, TemplateError
from respc.compiler.transforms import transform_expression
from respc.runtime.content import DIRTY_PARSERS

__all__ = ["Delimiter", "FieldPlan", "ParserPlan", "State", "plan_parser"]

PARSER_FUNCTIONS = {
    "text": "parse_text",
    "int": "parse_int",
    "float": "parse_float",
    "bool": "parse_bool",
    "json": "parse_json",
    "xml-inline": "parse_xml_inline",
    "kv-lines": "parse_kv_lines",
}
OUTSIDE = "outside"  # the scan of the implicit field / null sink; reserved so no field takes the name
# Patterns that look behind the scan position (or change how far back a boundary looks) need the
# whole consumed text as context; anything else sees at most one character before it.
_LOOKS_BACK = re.compile(r"\(\?<[=!]|\(\?[a-zA-Z0-9^-]*[wr][a-zA-Z0-9^-]*[:)]")


@dataclass(frozen=True)
class Delimiter:
    """One watched delimiter and how the generated code scans for it."""

    field: Any
    kind: str  # "open" or "close"
    anchor: Anchor
    const: str  # module constant holding the literal(s) or the compiled regex
    literals: tuple[str, ...]  # longest first
    may_be_empty: bool
    lead: str | None = None  # class of a leading run the scan walks back over (regex `\s*<x>`)
    rest: str | None = None  # the pattern after that run, which the scan searches for
    prefix: str = ""  # literal text every match of the searched pattern starts with

    @property
    def prefix_const(self) -> str:
        """Module constant holding `prefix` (regex delimiters with a literal prefix only)."""
        return self.const.removesuffix("_RE") + "_PREFIX"

    @property
    def method(self) -> str:
        if self.anchor.literals is None:
            return "pattern" if self.lead is None else "lead"
        return "literal" if len(self.literals) == 1 else "literals"

    @property
    def run_const(self) -> str:
        """Module constant holding the lead-run characters (lead-run delimiters only)."""
        return self.const.removesuffix("_RE") + "_RUN"

    @property
    def run_chars(self) -> str:
        return LEAD_CHARS[self.lead]

    @property
    def text(self) -> str:
        """The delimiter as a template author wrote it, for comments and `explain`."""
        return describe_anchor(self.anchor)


@dataclass(frozen=True)
class State:
    """A parser state: inside one explicit field, or outside (the implicit field or the null sink)."""

    key: Any  # the field name, or the implicit field's name (None: null sink) for the outside state
    function: str
    explicit: bool
    watches: tuple[Delimiter, ...]  # in the oracle's tie-break order: opens by field name, then the close
    quick: str | None  # class of the characters a watched delimiter's match must start (or resume) with
    tails: tuple[str, ...] = ()  # characters of the trailing runs that lead-run delimiters hold back

    @property
    def end_function(self) -> str:
        """The state's end-of-stream scan, which holds nothing back."""
        return self.function.replace("_scan_", "_end_", 1)

    @property
    def end_literals(self) -> tuple[tuple[str, bool, Any], ...] | None:
        """For a state watching only literals (two or more), `(literal, is_open, field)` in the order an
        alternation must try them to reproduce the tie-break at one position: longest first, then in
        watch order (a literal two delimiters share goes to the first watched). None otherwise."""
        if not self.watches or any(d.method not in ("literal", "literals") for d in self.watches):
            return None
        entries = [
            (-len(literal), index, literal, d.kind == "open", d.field)
            for index, d in enumerate(self.watches)
            for literal in d.literals
        ]
        if len(entries) < 2:
            return None
        seen: set[str] = set()
        ordered = []
        for _, _, literal, is_open, field in sorted(entries, key=lambda e: e[:2]):
            if literal not in seen:
                seen.add(literal)
                ordered.append((literal, is_open, field))
        return tuple(ordered)

    @property
    def stream_literals(self) -> bool:
        """Whether the streaming scan can use the end-of-stream alternation too: two or more watches, each
        one literal (a literal list may still grow at the buffer edge, which the alternation cannot say).
        Partial matches are then found from the set of the literals' proper prefixes."""
        return len(self.watches) >= 2 and all(d.method == "literal" for d in self.watches)

    @property
    def partial_span(self) -> int:
        """How far from the end of the buffer a partial match can start: the longest literal, less one."""
        return max(len(lit) for d in self.watches for lit in d.literals) - 1

    @property
    def first_chars(self) -> tuple[str, ...]:
        return tuple(sorted({lit[0] for d in self.watches for lit in d.literals}))

    @property
    def end_texts(self) -> tuple[str, ...]:
        return tuple(literal for literal, _, _ in self.end_literals or ())

    @property
    def first(self) -> str | None:
        """The one character `quick` matches, when it is a single literal (checked with `in`)."""
        items = self.quick[1:-1] if self.quick and self.quick.startswith("[") else None
        if items and (len(items) == 1 or (len(items) == 2 and items[0] == "\\" and not items[1].isalnum())):
            return items[-1]
        return None

    @property
    def quick_engine(self) -> str:
        """`re` (lower call overhead) for classes of literal characters, `regex` when categories appear."""
        return "regex" if self.quick is None or re.search(r"\\[a-zA-Z]", self.quick) else "re"

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
    args_const: str
    args: Any
    transform_const: str | None
    transform: Any
    transform_each: bool
    transform_expr: str | None  # the transform as an expression over `content` and `captures`
    dirty: bool
    repeats: bool
    join: str | None
    optional: bool

    @property
    def parse_call(self) -> str:
        """The expression giving the parsed content from `body`: `text` with fixed arguments is inlined."""
        if self.parser == "parse_text" and type(self.args) is dict and set(self.args) <= {"strip"}:
            if type(self.args.get("strip", True)) is bool:
                return "body.strip()" if self.args.get("strip", True) else "body"
        return f"{self.parser}(body, {self.args_const})"


@dataclass(frozen=True)
class ParserPlan:
    template: Any
    source_name: str
    fields: tuple[FieldPlan, ...]
    delimiters: tuple[Delimiter, ...]
    states: tuple[State, ...]
    implicit: Any
    defaults: dict
    required: tuple[Any, ...]
    start_anchor: Anchor
    keep: int | None
    warnings: tuple[str, ...] = ()  # template problems worth a look that do not stop compilation

    @property
    def start_anchor_literals(self) -> tuple[str, ...]:
        """The literal start anchors, longest first, as the oracle's alternation tries them."""
        return tuple(sorted(self.start_anchor.literals or (), key=len, reverse=True))

    @property
    def uses_regex(self) -> bool:
        """Whether the module holds `regex` patterns (`LazyRegex`; literal-only templates use only `re`)."""
        return (
            not self.start_anchor.is_literal
            or any(d.anchor.literals is None for d in self.delimiters)
            or any(s.quick is not None and s.quick_engine == "regex" for s in self.states)
        )

    @property
    def uses_re(self) -> bool:
        return (
            self.start_anchor.is_literal
            or any(s.quick_engine == "re" for s in self.states)
            or any(s.end_literals for s in self.states)
            or any(d.method == "literals" for d in self.delimiters)
        )

    @property
    def parser_functions(self) -> tuple[str, ...]:
        return tuple(sorted({f.parser for f in self.fields if f.parse_call.startswith(f.parser + "(")}))

    @property
    def scan_helpers(self) -> tuple[str, ...]:
        helpers = {f"scan_{d.method}" for s in self.states if not s.stream_literals for d in s.watches}
        if self.uses_regex:
            helpers.add("LazyRegex")
        return tuple(sorted(helpers))

    @property
    def transform_helpers(self) -> tuple[str, ...]:
        helpers = set()
        for f in self.fields:
            if f.transform_each:
                helpers.add("transform_each")
            elif f.transform_expr is not None:
                if "resolve_placeholder(" in f.transform_expr:
                    helpers.add("resolve_placeholder")
            elif f.transform_const:
                helpers.add("transform_value")
        return tuple(sorted(helpers))

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
            f"Response parser compiled from {self.source_name}.\n\nRegions: "
            + "; ".join(lines)
            + (f".\nThe prefix is read from after its last start anchor {anchor}.")
        )


def describe_anchor(anchor: Anchor) -> str:
    """Literals as reprs, a pattern between slashes (as a repr if it holds unprintable characters)."""
    if anchor.literals is not None:
        return " | ".join(repr(literal) for literal in anchor.literals)
    return f"/{anchor.pattern}/" if anchor.pattern.isprintable() else f"/{anchor.pattern!r}/"


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


def _delimiter(field: Field, ident: str, kind: str, anchor: Anchor) -> Delimiter:
    const = f"{ident.upper()}_{kind.upper()}"
    if anchor.literals is None:
        split = split_lead(anchor.pattern)
        lead, rest = split if split else (None, None)
        return Delimiter(
            field.name,
            kind,
            anchor,
            const + "_RE",
            (),
            may_match_empty(anchor.pattern),
            lead,
            rest,
            literal_prefix(rest or anchor.pattern),
        )
    return Delimiter(
        field.name, kind, anchor, const, tuple(sorted(anchor.literals, key=len, reverse=True)), False
    )


def _quick(watches: tuple[Delimiter, ...]) -> str | None:
    """A character class matching every character a watched delimiter can start with, if one exists."""
    if not watches:
        return "(?!)"
    items: set[str] = set()
    for d in watches:
        if d.anchor.literals is not None:
            items |= {regex.escape(literal[0]) for literal in d.literals}
        else:
            first = first_chars(d.rest or d.anchor.pattern)
            if first is None:
                return None
            items |= first
    return "[" + "".join(sorted(items)) + "]"


def _tails(watches: tuple[Delimiter, ...]) -> tuple[str, ...]:
    """The characters of each distinct lead-run class, in a fixed order."""
    return tuple(sorted({d.run_chars for d in watches if d.lead is not None}))


def _sort_key(name: Any) -> tuple:
    return (0, name) if isinstance(name, str) else (1, type(name).__name__, repr(name))


def plan_parser(spec: Spec, source_name: str = "<template>") -> ParserPlan:
    """Decide everything the generated module writes out; raises `TemplateError` for hanging templates."""
    idents = _identifiers([field.name for field in spec.fields])
    field_plans, delimiters = [], []
    opens: dict[Any, Delimiter] = {}
    closes: dict[Any, Delimiter] = {}
    for field, ident in zip(spec.fields, idents):
        if field.open is not None:
            opens[field.name] = _delimiter(field, ident, "open", field.open)
            delimiters.append(opens[field.name])
        if field.close is not None:
            closes[field.name] = _delimiter(field, ident, "close", field.close)
            delimiters.append(closes[field.name])
        if field.open is not None and field.close is not None:
            opening, closing = opens[field.name], closes[field.name]
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
        field_plans.append(
            FieldPlan(
                name=field.name,
                ident=ident,
                content=field.content,
                parser=PARSER_FUNCTIONS[field.content],
                args_const=f"{ident.upper()}_ARGS",
                args=field.content_args,
                transform_const=f"{ident.upper()}_TRANSFORM" if field.transform is not None else None,
                transform=field.transform,
                transform_each=field.transform_each,
                transform_expr=(
                    transform_expression(field.transform)
                    if field.transform is not None and not field.transform_each
                    else None
                ),
                dirty=field.content in DIRTY_PARSERS,
                repeats=field.repeats,
                join=field.join,
                optional=field.optional,
            )
        )
    implicit = spec.implicit.name if spec.implicit is not None else None
    outside_watches = tuple(opens[name] for name in sorted(opens, key=_sort_key))
    if implicit is not None and implicit in closes:
        outside_watches += (closes[implicit],)
    states = [
        State(
            implicit,
            "_scan_" + OUTSIDE,
            False,
            outside_watches,
            _quick(outside_watches),
            _tails(outside_watches),
        )
    ]
    for field, ident in zip(spec.fields, idents):
        if field.open is not None:
            watches = (closes[field.name],) if field.name in closes else ()
            states.append(
                State(field.name, "_scan_" + ident, True, watches, _quick(watches), _tails(watches))
            )
    patterns = [d.anchor.pattern for d in delimiters if d.anchor.literals is None]
    keep = None if any(_LOOKS_BACK.search(p) for p in patterns) else (1 if patterns else 0)
    warnings = tuple(
        f"Field '{d.field}': {d.anchor.key} {d.text} may backtrack exponentially ({risk})"
        for d in delimiters
        if d.anchor.literals is None and (risk := backtracking_risk(d.anchor.pattern))
    )
    return ParserPlan(
        warnings=warnings,
        template=spec.template,
        source_name=source_name,
        fields=tuple(field_plans),
        delimiters=tuple(delimiters),
        states=tuple(states),
        implicit=implicit,
        defaults=spec.defaults,
        required=tuple(field.name for field in spec.fields if not field.optional),
        start_anchor=spec.start_anchor,
        keep=keep,
    )
