r"""Random-template differential fuzzing: respc against transformers on templates nobody wrote, each target
against its release (5.24.0 the main run, 5.23.0 a shorter profile).

hypothesis draws whole response templates from the language: literal, literal-list and regex
delimiters over a small alphabet (`< > / a b t | [ ]`) so that they collide, implicit-field and
null-sink layouts, every content parser with its arguments, repeats, join, optional, defaults,
transforms with captures and dotted paths, transform_each, and literal, list and pattern start
anchors; a small share is made invalid on purpose. Texts are built from each template's own
delimiters, their fragments and filler; prefixes, tools and chunkings are random too.

Widened for issue #32 so that it finds each class an independent fuzzer found (the generator change that
finds it): 1. `\K` shapes (`<a>\K`, `<a>\K<b>`); 2. fuzzy shapes (`(?:<a>){e<=1}`, `{s<=1}`); 3. opens
that match empty (`()`, `(())`, `()<a>`) beside other fields' opens; 4. field names None and integers
(`ODD_NAMES`, a quarter of the templates draw from it); 5. names the generated module uses (`_scan_outside`,
`STATES`, `outside`, `self`, `parse_response`, `x_open` beside `x`); 6. None names with `optional: false`
and python-call-list content (the end-of-parse errors); 7. the xml-inline filler `<p=z></p>` for the tag
pattern whose value group is optional, with the python-call-list value parser; 8. named groups spelled
`(?<n>...)` and empty groups before a character (`(?<n>)(<a>)`), which the Q5 analysis once refused.

For each template: if the oracle rejects it, respc must reject it with the same exception type; if
respc refuses it as hanging (quirk Q5) that is counted, and the oracle is probed briefly; otherwise
the full traces (initial events, every feed, finalize twice, exceptions) must be identical under
every chunking. The oracle hanging (`OracleTimeout`) on a template respc compiled is counted apart (respc
must return there: it raises where transformers would loop), and respc hanging is a failure.

Profiles: the default (CI) fuzzes 400 templates for 5.24 and 150 for 5.23 in a few minutes on two cores.
The long profile (`RESPC_FUZZ_TARGETS=5.23` or `5.24` to run one):

    RESPC_FUZZ_EXAMPLES=5000 python -m pytest tests/conformance/test_fuzz_templates.py -s

`RESPC_FUZZ_UNFORMATTED=1` skips black when compiling (about 1.5x the templates an hour; the meaning of
a module is the same). `RESPC_FUZZ_SEED=<n>` replaces the fixed (derandomized) sequence with a seeded one, to explore
further. The figures (templates fuzzed, traces compared, ...) are printed at the end of the run.
"""

from __future__ import annotations

import copy
import os
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from support.compare import (
    DEFAULT_TARGET,
    SUPPORTED_TARGETS,
    OracleTimeout,
    assert_same,
    respc_parse,
    stream_trace,
)
from support.oracles import oracle

import respc

EXAMPLES = int(os.environ.get("RESPC_FUZZ_EXAMPLES", "400"))
# The main target gets EXAMPLES templates; each older one a third of them (its own profile).
TARGETS = os.environ.get("RESPC_FUZZ_TARGETS", ",".join(SUPPORTED_TARGETS)).split(",")
DEADLINE = {"oracle": 2.0, "respc": 5.0}  # seconds per call: texts are short, only a hang gets near it
LOG = os.environ.get("RESPC_FUZZ_LOG")  # append each hang found here as it happens (for long runs)
SEED = os.environ.get("RESPC_FUZZ_SEED")
STATS: dict[str, Counter] = {target: Counter() for target in SUPPORTED_TARGETS}

ALPHABET = "<>/abt|[]"
TAGS = [
    "<a>",
    "</a>",
    "<b>",
    "</b>",
    "<t>",
    "</t>",
    "[a]",
    "[/a]",
    "<|a|>",
    "|",
    "a",
    "<",
    ">>",
    "<a",
    "ab",
    "<é>",
]
NAMES = ["content", "thinking", "tool_calls", "a", "b", "t", "z", "é", "x y"]
# Field names are data: names the generated module uses itself (class 5), and keys only the Python API can
# give, None and integers (class 4: None is upstream's null sink; a tie of opens compares the names).
ODD_NAMES = ["_scan_outside", "STATES", "outside", "self", "parse_response", "x_open", "x", None, 1, 9, 10]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": ["boolean", "string"]},
                    "c": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                }
            },
        },
    }
]
FILLER = {
    "text": ["hi", " ", "\n", "é", "x y", "\u3000"],
    "int": ["42", " 7 ", "+4_2", "4.0", "٤٢"],
    "float": ["1e3", "nan", "1,5", "2.5", "-0"],
    "bool": ["true", "1", "TRUE", "yes", "0"],
    "json": [
        '{"a": "5"}',
        "{a:1,b:{c:2}}",
        '[{"a": 1}, {"name": "f", "a": "5"}]',
        '{"name": "f", "arguments": {"a": "5", "b": "true"}}',
        "{a:<|x,y:z|>}",
        "[[s]]",
        "null",
        '{"a": {"b": 2}}',
        "[NaN]",
        "{",
        '"',
    ],
    "xml-inline": [
        "<p=a>5</p>",
        "<p=z></p>",
        "<p=a>[1]</p>",
        "<a>1</a>",
        "a=5",
        "<p=b>true</p>",
        "<p=c>1.5</p>",
    ],
    "kv-lines": ["a: 5\n", "b=true;", "a|1", "\n: e\n", "c: x"],
    "python-call-list": [
        "[f(a=1)]",
        "[f(a='x'), g()]",
        "[]",
        "[f(1)]",
        '[f(a=[1, {"k": None}])]',
        "[f(a=True)",
    ],
}
GENERIC = [" ", "\n", "x", "z", "é", "1", "\x00", "\x01", "🙂", "\\", "<", ">", "/", "S"]


@dataclass(frozen=True)
class Delim:
    """A generated delimiter: its template value, strings it matches, and the named groups it captures."""

    literal: Any  # str or list for `open`/`close`, None for a pattern
    pattern: str | None
    examples: tuple[str, ...]
    groups: tuple[str, ...] = ()

    def keys(self, kind: str) -> dict:
        return {kind: self.literal} if self.pattern is None else {kind + "_pattern": self.pattern}


@dataclass(frozen=True)
class Case:
    template: dict
    prefix: str
    texts: tuple[str, ...]
    cuts: tuple[tuple[int, ...], ...]  # one drawn split of each text
    with_tools: bool


def _literal() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TAGS), st.text(ALPHABET, min_size=1, max_size=4))


@st.composite
def delimiter(draw: st.DrawFn, captures: bool) -> Delim:
    """A literal, a literal list or a regex; regexes come from shapes real templates use."""
    kind = draw(st.sampled_from(["literal", "literal", "list", "pattern", "pattern", "pattern"]))
    if kind == "literal":
        lit = draw(_literal())
        return Delim(lit, None, (lit,))
    if kind == "list":
        lits = draw(st.lists(_literal(), min_size=1, max_size=3))
        return Delim(lits, None, tuple(lits))
    a, b = draw(_literal()), draw(_literal())
    ea, eb = regex.escape(a), regex.escape(b)
    shapes = [
        (ea, (a,)),
        (r"\s*" + ea, (a, " " + a, "\n\n" + a)),
        (r"\s*(?:" + ea + "|" + eb + ")", (a, b, " \n" + b)),
        (r"\n*" + ea, (a, "\n" + a)),
        (r"[ \t]*" + ea, (a, " \t" + a)),
        (" *" + ea, (a, "  " + a)),
        (r"\s+" + ea, (" " + a,)),
        (r"[<|]" + eb, ("<" + b, "|" + b)),
        (r"\w+:" + ea, ("ab:" + a,)),
        ("[ab]*" + ea, (a, "ab" + a)),
        ("(?:" + ea + ")?" + "x", (a + "x", "x")),
        (ea + "|" + eb, (a, b)),
        (ea + r"\n?", (a, a + "\n")),
        (ea + r"\s*", (a, a + " ")),
        (ea + ".*?" + eb, (a + "x" + b, a + b)),
        ("(?i)" + regex.escape(a.upper()), (a, a.upper())),
        ("(?<=a)" + ea, ("a" + a,)),
        # A lookbehind guard that may read several characters (MiniMax-M2's `(?<=</invoke>)`): the parser
        # keeps that much context only where the lookbehind can read it (`LOOKBEHINDS`, `State.wide`).
        ("(?<=" + eb + ")" + ea, (b + a, a)),
        ("(?:" + ea + "|(?<=" + eb + r"))\s*y", (a + "y", b + " y", b + "y")),
        (ea + r"\b", (a + "x", a)),
        (r"\b" + ea, (a, "x" + a)),
        (ea + "(?=" + eb + ")", (a + b,)),
        ("(?>" + ea + "+)" + eb, (a + b, a + a + b)),
        (r"(<\w>)\1", ("<a><a>", "<é><é>")),
        (r"(?m)^" + ea, (a, "\n" + a)),
        ("(?:^|" + ea + ")", (a,)),
        (ea + r"(?=\s*$)", (a, a + " \n")),
        (ea + r"\n?$", (a, a + "\n")),
        ("(?:" + ea + "|$)", (a, "\n")),
        ("$", ("\n",)),
        (r"\Z", ("",)),
        ("(?=z)", ("z",)),
        ("(?=" + ea + ")", (a,)),
        ("(?:" + ea + ")?", (a,)),
        ("x*", ("xx",)),
        ("", ("",)),
        # Class 1: `\K` resets the match start, so a match starts after text the scan has passed.
        (ea + r"\K", (a,)),
        (ea + r"\K" + eb, (a + b,)),
        # Class 2: fuzzy matching, whose best match depends on where each search starts.
        ("(?:" + ea + "){e<=1}", (a, a[1:] + "x", "x" + a)),
        ("(?:" + ea + eb + "){s<=1}", (a + b, a + "x")),
        # Class 3: opens that match the empty string (beside other fields' opens).
        ("()", ("",)),
        ("(())", ("",)),
        ("()" + ea, (a,)),
    ]
    captured = [
        (r"<t(?P<n>\w)>", ("<tf>", "<ta>")),
        (r"<t(?P<n>\w+)>", ("<tf>", "<tfé>")),
        (ea + r"(?: n=(?P<n>\w+))?>", (a + ">", a + " n=f>")),
        (r"\s*<(?P<n>[a-z]+)\|", ("<f|", " <ab|")),
        (r"</t(?P<m>\d*)>", ("</t>", "</t7>", "</t12>")),
        (ea + r"(?P<m>.?)$", (a, a + "!", a + "\n")),
        # Class 8: the `regex` module's spelling of named groups; empty groups before a character.
        (r"(?<n>)" + ea, (a,)),
        (r"(?<n>)(" + ea + ")", (a,)),
        (r"<t(?<n>\w)>", ("<tf>",)),
    ]
    # Drawn apart: hypothesis favours the first elements of a list, and these come last.
    pattern, examples = draw(
        st.sampled_from(captured if captures and draw(st.integers(0, 3)) == 0 else shapes)
    )
    return Delim(None, pattern, examples, _group_names(pattern))


def _group_names(pattern: str) -> tuple[str, ...]:
    """The pattern's named groups. Compiling a new pattern when `regex`'s cache is full evicts entries
    chosen with the global `random` (`regex._regex_core._shrink_cache`), which hypothesis forbids inside a
    strategy (a deprecation warning today): the state is put back."""
    state = random.getstate()
    try:
        return tuple(sorted(regex.compile(pattern, regex.DOTALL).groupindex))
    finally:
        random.setstate(state)


@st.composite
def content_spec(draw: st.DrawFn) -> tuple[str, dict | None]:
    """A content parser name and its args (None: the key is left out)."""
    name = draw(st.sampled_from(list(FILLER)))
    args: dict = {}
    if name in ("text", "int", "float", "bool") and draw(st.booleans()):
        args["strip"] = draw(st.booleans())
    elif name == "json":
        if draw(st.booleans()):
            args["unquoted_keys"] = True
        if draw(st.booleans()):
            pairs = [["<|", "|>"], ["'", "'"], ["[[", "]]"], ["<", ">"]]
            args["string_delims"] = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=2))
        if draw(st.booleans()):
            args["allow_non_json"] = True
            if draw(st.booleans()):
                args["strip"] = False
    elif name == "xml-inline":
        tags = [
            r"<p=(?P<key>\w+)>(?P<value>.*?)</p>",
            r"<(?P<key>\w+)>\s*(?P<value>.*?)\s*</(?P=key)>",
            r"(?P<key>\w+)=(?P<value>\w*)",
            r"<p=(?P<key>\w+)>(?:(?P<value>\d+))?</p>",
            r"(?P<k>\w+)=",
        ]
        if draw(st.integers(0, 5)):
            args["tag_pattern"] = draw(st.sampled_from(tags))
        parsers = [None, {}, {"name": "int"}, {"name": "json", "args": {"allow_non_json": True}}]
        parsers.append({"name": "python-call-list"})
        parsers.append({"name": "kv-lines", "args": {"kv_sep": "="}})
        if (value_parser := draw(st.sampled_from(parsers))) is not None:
            args["value_parser"] = value_parser
        if draw(st.booleans()):
            args["merge_duplicates"] = True
    elif name == "python-call-list" and draw(st.integers(0, 3)) == 0:
        args["ignored"] = True  # the parser takes no arguments
    elif name == "kv-lines":
        if draw(st.booleans()):
            args["line_sep"] = draw(st.sampled_from(["\n", ";", "|"]))
        if draw(st.booleans()):
            args["kv_sep"] = draw(st.sampled_from([":", "=", "|"]))
        if draw(st.booleans()):
            args["value_parser"] = draw(
                st.sampled_from([{"name": "int"}, {"name": "bool"}, {"name": "json"}])
            )
        if draw(st.booleans()):
            args["strip"] = draw(st.booleans())
    return name, (args if args or draw(st.booleans()) else None)


@st.composite
def transform_spec(draw: st.DrawFn, groups: tuple[str, ...]) -> tuple[Any, bool]:
    """A transform (absent, a bare placeholder, a constant or a nested shape) and transform_each."""
    if draw(st.integers(0, 2)) == 0:
        return None, False
    name = "{" + groups[0] + "}" if groups else "f"
    if draw(st.integers(0, 3)) == 0:
        each = [
            {"name": "{name}", "arguments": "{a}"},
            {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            {"x": "{a}", "cap": name},
            "{a}",
            {"type": "function", "function": {"name": "{name}", "arguments": {"a": "{a}"}}},
        ]
        return draw(st.sampled_from(each)), True
    shapes = [
        "{content}",
        {"type": "function", "function": {"name": name, "arguments": "{content}"}},
        {"v": "{content}", "const": "k", "num": 3, "list": ["{content}", None, True], "{content}": 1},
        "{content.a}",
        {"deep": "{content.a.b}", "n": name},
        "const",
        5,
        "{missing}",
        ["{content}", "{content}"],
        {"{x}": "{ content }", "e": "{}"},
    ]
    if groups:
        shapes += ["{" + g + "}" for g in groups]
    return draw(st.sampled_from(shapes)), False


@st.composite
def field_spec(draw: st.DrawFn, implicit: bool) -> tuple[dict, list[str], str]:
    """One field: delimiters, content, flags and transform; returns the field, its atoms, its content."""
    field: dict = {}
    atoms: list[str] = []
    groups: tuple[str, ...] = ()
    if not implicit:
        opening = draw(delimiter(captures=True))
        field.update(opening.keys("open"))
        atoms += opening.examples
        groups = opening.groups
    if draw(st.integers(0, 4)):
        closing = draw(delimiter(captures=draw(st.integers(0, 5)) == 0))
        field.update(closing.keys("close"))
        atoms += closing.examples
        groups += tuple(group for group in closing.groups if group not in groups)  # 5.24: they join the scope
    content, args = draw(content_spec())
    if content != "text" or draw(st.booleans()):
        field["content"] = content
    if args is not None:
        field["content_args"] = args
    if draw(st.booleans()):
        field["repeats"] = draw(st.sampled_from([True, True, False, 1]))
        if field["repeats"] and draw(st.integers(0, 2)) == 0:
            field["join"] = draw(st.sampled_from(["", " ", "|", "\n"]))
    if draw(st.integers(0, 3)) == 0:
        field["optional"] = draw(st.sampled_from([False, True, 0]))
    transform, each = draw(transform_spec(groups))
    if transform is not None or (groups and draw(st.integers(0, 4)) == 0):
        field["transform"] = transform
    if each:
        field["transform_each"] = True
    return field, atoms, content


INVALID = [
    ("join without repeats", lambda t, f: f.update(join=" ", repeats=False)),
    ("second implicit field", lambda t, f: t["fields"].setdefault("zz_implicit", {"close": "x"})),
    ("empty literal", lambda t, f: f.update(open=[""]) or f.pop("open_pattern", None)),
    ("empty literal list", lambda t, f: f.update(close=[]) or f.pop("close_pattern", None)),
    ("bad regex", lambda t, f: f.update(close_pattern="(") or f.pop("close", None)),
    ("non-str pattern", lambda t, f: f.update(close_pattern=5) or f.pop("close", None)),
    ("unknown content", lambda t, f: f.update(content="yaml")),
    ("unhashable content", lambda t, f: f.update(content=["json"])),
    ("mixed placeholder", lambda t, f: f.update(transform={"k": "pre {content}"})),
    ("transform_each not bool", lambda t, f: f.update(transform_each="yes")),
    ("transform_each alone", lambda t, f: f.update(transform_each=True) or f.pop("transform", None)),
    ("both open keys", lambda t, f: f.update(open="<a>", open_pattern="<b>")),
    ("unknown field key", lambda t, f: f.update(bogus=1)),
    ("no start anchor", lambda t, f: t.pop("start_anchor", None) or t.pop("start_anchor_pattern", None)),
    ("version 2", lambda t, f: t.update(version=2)),
    ("defaults not a dict", lambda t, f: t.update(defaults=None)),
    ("field not a dict", lambda t, f: t["fields"].update(zz_bad="x")),
]


@st.composite
def template_spec(draw: st.DrawFn) -> tuple[dict, list[str], str]:
    """A whole template (sometimes made invalid on purpose), its text atoms, and a note on what it is."""
    pool = NAMES + ODD_NAMES if draw(st.integers(0, 3)) == 0 else NAMES
    names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
    implicit = draw(st.sampled_from([None, *names]))
    template: dict = {}
    if draw(st.booleans()):
        template["version"] = draw(st.sampled_from([1, 1.0, True]))
    atoms: list[str] = []
    fields: dict = {}
    for name in names:
        field, field_atoms, content = draw(field_spec(implicit=name == implicit))
        fields[name] = field
        atoms += field_atoms + FILLER[content]
    template["fields"] = fields
    anchor_kind = draw(st.sampled_from(["start_anchor", "start_anchor", "list", "start_anchor_pattern"]))
    if anchor_kind == "start_anchor":
        template["start_anchor"] = draw(st.sampled_from(["S", "<a>", "S\n", "|"]))
    elif anchor_kind == "list":
        template["start_anchor"] = draw(
            st.lists(st.sampled_from(["S", "SS", "<a>", "T"]), min_size=1, max_size=3)
        )
    else:
        template["start_anchor_pattern"] = draw(
            st.sampled_from(["S", "S+", "(?:S|<a>)", "", "x*", r"\n", "S$"])
        )
    atoms += ["S", "SS", "T", "S\n"]
    if draw(st.booleans()):
        defaults: dict = {"role": "assistant"}
        if draw(st.booleans()):
            defaults[draw(st.sampled_from(names))] = draw(
                st.sampled_from(["PRE", [], ["x"], "", 0, {"k": 1}])
            )
        template["defaults"] = defaults
    note = "valid"
    if draw(st.integers(0, 11)) == 5:  # not 0: hypothesis favours boundary values
        note, mutate = draw(st.sampled_from(INVALID))
        mutate(template, fields[draw(st.sampled_from(names))])
    return template, atoms, note


@st.composite
def piece(draw: st.DrawFn, pool: list[str]) -> str:
    """An atom, or a fragment of one (so partial delimiters appear)."""
    atom = draw(st.sampled_from(pool))
    if len(atom) > 1 and draw(st.integers(0, 3)) == 0:
        a = draw(st.integers(0, len(atom) - 1))
        return atom[a : draw(st.integers(a + 1, len(atom)))]
    return atom


@st.composite
def fuzz_case(draw: st.DrawFn) -> tuple[Case, str]:
    template, atoms, note = draw(template_spec())
    pool = sorted(set(atoms)) + GENERIC
    prefix = "".join(draw(st.lists(piece(pool), max_size=4))) if draw(st.booleans()) else ""
    texts, cuts = [], []
    for _ in range(draw(st.integers(2, 5))):
        text = "".join(draw(st.lists(piece(pool), min_size=2, max_size=14)))
        texts.append(text)
        cuts.append(tuple(sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=5))))))
    case = Case(template, prefix, tuple(texts), tuple(cuts), draw(st.integers(0, 3)) == 0)
    return case, note


def chunkings(text: str, cuts: tuple[int, ...]) -> Iterator[list[str]]:
    """Whole, one character at a time, and the drawn split."""
    yield [text]
    if len(text) > 1:
        yield list(text)
        points = [c for c in cuts if 0 < c < len(text)]
        if points:
            yield [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def _oracle_load_error(template: Any, target: str) -> str | None:
    """The oracle's "<ExceptionType>: <message>" for a template it rejects, or None."""
    outcome = oracle(target).request("load", template)
    return None if outcome == "accept" else outcome


def _same_rejection(error: BaseException, oracle_error: str) -> bool:
    return oracle_error.split(":", 1)[0] in {klass.__name__ for klass in type(error).__mro__}


def _probe_oracle_hang(template: dict, case: Case, target: str) -> bool:
    """Whether the oracle hangs on any of the case's texts (only for refused templates, for the figures).

    The oracle's call is stopped at its deadline by an alarm in its own process; one stuck where a signal
    cannot reach is killed (the worker process), or the probe gives up on it (in process)."""
    for text in case.texts:
        try:
            oracle(target).request(
                "stream", (template, case.prefix, [text], None), deadline=1.0, isolated=True
            )
        except OracleTimeout:
            return True
    return False


_PATTERN_KEYS = ("open_pattern", "close_pattern")
# An escape (its character kept), else syntax (dropped): group openers, quantifiers, anchors, alternation.
_SPELLING = regex.compile(r"\\(.)|\(\?(?:[=!:]|<[=!]|P?<\w+>)|[()?*+|^$]|\{[^}]*\}", regex.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _spelled(pattern: Any) -> str:
    r"""The literal characters of a pattern, its syntax dropped and escapes read (`(?=\]\|)` → "]|")."""
    if not isinstance(pattern, str):
        return ""
    return _SPELLING.sub(lambda m: _ESCAPES.get(m[1], m[1]) if m[1] else "", pattern)


def _empty_together_witness(template: dict, case: Case) -> bool:
    """Whether some field's open and close both match the empty string at one position of a drawn text (or
    of a few others): what makes a refusal as hanging (quirk Q5) certain. Refusals without one are
    counted (`q5_no_witness`): that is where a refusal of what cannot loop (issue #32, class 8) shows."""
    texts = [*case.texts, "", "\n", "x", "a\nb", " z"]
    # and the text the delimiters spell (`(?=\]\|)` spells "]|"): what a lookahead waits for
    spelled = [_spelled(f.get(key)) for f in template["fields"].values() for key in _PATTERN_KEYS]
    texts += [text for text in spelled if text]
    for field in template["fields"].values():
        if not {"open_pattern", "close_pattern"} <= set(field):
            continue
        opening = regex.compile(field["open_pattern"], regex.DOTALL)
        closing = regex.compile(field["close_pattern"], regex.DOTALL)
        for text in texts:
            for pos in range(len(text) + 1):
                one, two = opening.match(text, pos), closing.match(text, pos)
                if one is not None and two is not None and one.end() == pos and two.end() == pos:
                    return True
    return False


@pytest.fixture(scope="module", autouse=True)
def fuzz_figures(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the fuzzing figures when the module is done: what was compared, rejected and refused."""
    yield
    lines = []
    for target, stats in STATS.items():
        if not stats["templates"]:
            continue
        lines.append(
            f"respc fuzz {target}: {stats['templates']} templates fuzzed ({stats['compiled']} compiled and "
            f"compared, {stats['rejected']} rejected by both, {stats['q5']} refused as hanging (quirk Q5), of "
            f"which the oracle hung on a drawn text for {stats['q5_hang']} and {stats['q5_no_witness']} had no "
            f"open and close found empty at one position); {stats['traces']} traces compared "
            f"({stats['events']} events, {stats['raised']} raising calls), {stats['oneshot']} one-shot parses; "
            f"the oracle hung on {stats['oracle_hang']} calls (counted apart, not compared)"
        )
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # shown without -s, after the module's results
        print("\n" + "\n".join(lines))


def _count(stats: Counter, trace: list) -> None:
    stats["traces"] += 1
    for step in trace:
        if step[0] == "raise":
            stats["raised"] += 1
        elif isinstance(step[1], list):
            stats["events"] += len(step[1])
        elif isinstance(step[1], tuple):
            stats["events"] += len(step[1][1])


ORACLE_HANG = "oracle hangs"  # what `_guarded` answers for an oracle call that does not return


def _guarded(
    who: str, template: dict, case: Case, chunks: list[str], tools: Any, target: str, context: str
) -> list | str:
    """The trace of one stream under a deadline. respc hanging fails the test (and keeps no frames alive);
    the oracle hanging is answered ORACLE_HANG, counted apart (transformers loops on some templates that
    respc compiles and raises on, such as a field named None whose open matches empty where it opened)."""
    try:
        if who == "oracle":
            return oracle(target).request("stream", (template, case.prefix, chunks, tools), DEADLINE[who])
        make = lambda: respc.ResponseParser(template, case.prefix, tools=tools, target=target)  # noqa: E731
        return stream_trace(make, chunks, DEADLINE[who])
    except OracleTimeout:
        pass  # handled outside the handler, so the hung frames (and their event lists) are released
    if LOG:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"{who} {target} hangs: {context}\n{template!r}\n\n")
    if who == "oracle":
        return ORACLE_HANG
    pytest.fail(f"{who} {target} does not return on a template respc compiles ({context}):\n{template!r}")


def _progress(target: str) -> None:
    """Every 500 templates of a long run, its figures so far (appended to RESPC_FUZZ_LOG)."""
    stats = STATS[target]
    if LOG and stats["templates"] % 500 == 0:
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"progress {target}: {dict(stats)}\n")


def check_case(case: Case, note: str, target: str) -> None:
    """The whole differential check of one template (see the module docstring)."""
    template = case.template
    pristine = copy.deepcopy(template)
    stats = STATS[target]
    stats["templates"] += 1
    _progress(target)
    oracle_error = _oracle_load_error(template, target)
    try:
        respc.compile_template(template, target=target)
        respc_error = None
    except Exception as error:
        respc_error = error
    if oracle_error is not None:
        assert (
            respc_error is not None
        ), f"respc accepts a template the oracle rejects ({note}): {oracle_error}"
        assert _same_rejection(
            respc_error, oracle_error
        ), f"{note}: respc raises {respc_error!r}, the oracle {oracle_error}"
        stats["rejected"] += 1
        return
    if respc_error is not None:
        assert isinstance(respc_error, respc.TemplateError) and "quirk Q5" in str(
            respc_error
        ), f"respc rejects a template the oracle accepts: {respc_error!r}"
        stats["q5"] += 1
        stats["q5_hang"] += _probe_oracle_hang(template, case, target)
        if not _empty_together_witness(template, case):
            stats["q5_no_witness"] += 1
            if LOG:
                with open(LOG, "a", encoding="utf-8") as log:
                    log.write(f"q5 refusal without a witness ({target}):\n{template!r}\n\n")
        return
    stats["compiled"] += 1
    tools = TOOLS if case.with_tools else None
    for text, cuts in zip(case.texts, case.cuts):
        for chunks in chunkings(text, cuts):
            context = f"prefix={case.prefix!r} chunks={chunks!r} tools={case.with_tools}"
            theirs = _guarded("oracle", template, case, chunks, tools, target, context)
            ours = _guarded("respc", template, case, chunks, tools, target, context)
            if theirs == ORACLE_HANG:
                stats["oracle_hang"] += 1
                continue
            assert_same(ours, theirs, template, context, target)
            _count(stats, ours)
        ours = respc_parse(template, text, case.prefix, tools, target)
        try:
            theirs = oracle(target).request("parse", (template, text, case.prefix, tools), DEADLINE["oracle"])
        except OracleTimeout:
            stats["oracle_hang"] += 1
            continue
        assert_same(ours, theirs, template, f"one-shot {text!r}", target)
        stats["oneshot"] += 1
    assert template == pristine, "compiling or parsing mutated the template"


def _examples(target: str) -> int:
    return EXAMPLES if target == DEFAULT_TARGET else max(20, EXAMPLES // 3)


@pytest.fixture
def unformatted(monkeypatch: pytest.MonkeyPatch) -> None:
    """With RESPC_FUZZ_UNFORMATTED=1, modules are compiled without black, which changes their layout, not
    their code, and costs about half of a template's time in a long run."""
    if os.environ.get("RESPC_FUZZ_UNFORMATTED") == "1":
        import respc.compiler

        monkeypatch.setattr(respc.compiler, "format_source", lambda source: source)


@pytest.mark.usefixtures("unformatted")
@pytest.mark.parametrize("target", [t for t in SUPPORTED_TARGETS if t in TARGETS])
def test_random_templates_match_oracle(target: str) -> None:
    """respc and transformers agree on random templates, texts, prefixes, tools and chunkings."""

    @settings(
        max_examples=_examples(target),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=SEED is None,
        database=None,
    )
    @given(fuzz_case())
    def fuzz(drawn: tuple[Case, str]) -> None:
        check_case(*drawn, target)

    (seed(int(SEED))(fuzz) if SEED is not None else fuzz)()
    stats = STATS[target]
    assert (
        stats["compiled"] > _examples(target) // 2
    ), f"the generator makes too few usable templates: {dict(stats)}"


def _has_implicit(template: dict) -> bool:
    return any(
        isinstance(f, dict) and not {"open", "open_pattern"} & set(f) for f in template["fields"].values()
    )


def test_generator_covers_the_language() -> None:
    """The strategy really reaches every part of the language (else the fuzzing proves little)."""
    seen: Counter = Counter()

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(template_spec())
    def survey(drawn: tuple[dict, list[str], str]) -> None:
        template, _, note = drawn
        seen[note] += 1
        seen["implicit" if _has_implicit(template) else "null sink"] += 1
        for key in ("start_anchor", "start_anchor_pattern", "defaults"):
            seen[key] += key in template
        for field in template["fields"].values():
            if not isinstance(field, dict):
                continue
            for key, value in field.items():
                seen[key] += 1
                seen[f"{key}:list"] += isinstance(value, list) and key in ("open", "close")
            seen[f"content:{field.get('content', 'text')}"] += 1
            for arg in field.get("content_args") or {}:
                seen[f"arg:{arg}"] += 1
            seen["dotted"] += "{content.a" in repr(field.get("transform"))
            seen["capture"] += "(?P<n>" in str(field.get("open_pattern", ""))
            seen["close capture"] += "(?P<" in str(field.get("close_pattern", ""))
            patterns = str(field.get("open_pattern", "")) + str(field.get("close_pattern", ""))
            # what finds each class of issue #32 (see the module docstring)
            seen["1 reset start"] += "\\K" in patterns
            seen["2 fuzzy"] += "{e<=1}" in patterns or "{s<=1}" in patterns
            seen["3 empty group"] += any(
                str(field.get(key, "")).startswith("()") or field.get(key) == "(())"
                for key in ("open_pattern", "close_pattern")
            )
            seen["8 (?<n>) group"] += "(?<n>)" in patterns
            seen["7 absent value group"] += "(?:(?P<value>" in repr(field.get("content_args"))
        names = list(template["fields"])
        seen["4 None name"] += None in names
        seen["4 int name"] += any(isinstance(name, int) for name in names)
        seen["5 generated name"] += any(name in ("_scan_outside", "STATES", "x_open") for name in names)
        seen["6 required"] += any(
            isinstance(f, dict) and f.get("optional") is False for f in template["fields"].values()
        )

    survey()
    wanted = "implicit|null sink|start_anchor|start_anchor_pattern|defaults|open|open:list|open_pattern|close"
    wanted += (
        "|close:list|close_pattern|repeats|join|optional|transform|transform_each|dotted|capture|arg:strip"
    )
    wanted += "|arg:unquoted_keys|arg:string_delims|arg:allow_non_json|arg:tag_pattern|arg:value_parser"
    wanted += (
        "|close capture|arg:merge_duplicates|arg:line_sep|arg:kv_sep|1 reset start|2 fuzzy|3 empty group"
    )
    wanted += "|4 None name|4 int name|5 generated name|6 required|7 absent value group|8 (?<n>) group|"
    wanted += "|".join(f"content:{name}" for name in FILLER)
    missing = [item for item in wanted.split("|") if not seen[item]]
    assert not missing, f"never generated: {missing}"


@pytest.mark.parametrize("mutation", INVALID, ids=[note for note, _ in INVALID])
def test_invalid_templates_are_rejected_alike(mutation: tuple, target: str) -> None:
    """Random templates broken in one known way: respc rejects exactly when the oracle does, same type."""
    note, mutate = mutation

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(template_spec(), st.data())
    def check(drawn: tuple[dict, list[str], str], data: st.DataObject) -> None:
        template = drawn[0]
        mutate(template, template["fields"][data.draw(st.sampled_from(list(template["fields"])))])
        oracle_error = _oracle_load_error(template, target)
        try:
            respc.compile_template(template, target=target)
        except Exception as error:
            if oracle_error is None and "quirk Q5" in str(error):
                return
            assert oracle_error is not None, f"{note}: respc rejects a template the oracle accepts: {error!r}"
            assert _same_rejection(
                error, oracle_error
            ), f"{note}: respc raises {error!r}, the oracle {oracle_error}"
            return
        assert oracle_error is None, f"{note}: respc accepts a template the oracle rejects: {oracle_error}"

    check()
