"""End-of-stream searches that start at the first position a match can start at (`first_start`).

A regex delimiter without a literal prefix (`\\s*;(?=...)|<\\|eom\\|>`, llama3's call separator) was
searched from the scan position: the `regex` module then tries the pattern at every character of the
text, ~45 ns each over a 2,000-character argument. The compiler proves where a match can start
(`Delimiter.skip`: one of a few characters, after a run of the lead class; or the buffer's start, or right
after a guard character), and the search starts at the first such place. These tests draw delimiters of
those shapes and texts that put their start characters, runs and guards on every edge, and compare the
search from there with the search from every position.
"""

from __future__ import annotations

from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from support.compare import SUPPORTED_TARGETS, assert_same, oracle_parse, respc_parse

import respc
from respc.compiler.analysis import leading_literals
from respc.compiler.plan import plan_parser
from respc.runtime import scan
from respc.runtime.scan import RUN_CLASSES, alternatives_match, first_start, scan_first, scan_lead, scan_tail
from respc.spec import load_template

_GUARDS = ["", "", "^", r"(?<=;)", r"(?<=</i>)", r"(?<=[;,])"]
_LEADS = ["", "", r"\s*", r"\n*", r"[ \t]*"]
_BODIES = [
    r";(?=\s*\{)",
    r"<e>",
    r"<\|m\|>",
    r"(?=\[)",
    r"(?=\[[a-z])",
    r"\n\n(?=\[)",
    r"<a>\s*",
    r";",
    r"x(?P<n>[^<;]*)<",
    r"(?:<t>|\[T\])",
    r"<(?=a)|;b",
]
# Texts are drawn as pieces of the delimiters above, so that their matches, near misses, runs before them
# and guard characters right before them all come up.
_PIECES = [
    *(";", "{", " ", "\n", "\t", "<", "[", "a", "b", "x", ",", ">"),
    *("<e>", "<|m|>", "[a", "</i>", "<a>", "[T]", "<t>"),
    *(" ;{", "\n\n[a", " <e>", "\t <a>", " ;\n{", "; <|m|>", ">\t<a>", ",\n<t>"),  # runs before matches
]


def _branches() -> st.SearchStrategy[str]:
    return st.tuples(st.sampled_from(_GUARDS), st.sampled_from(_LEADS), st.sampled_from(_BODIES)).map("".join)


def _skip_of(pattern: str) -> tuple | None:
    """The arguments the compiled end-of-stream search of `pattern` passes to `first_start`, or None."""
    field = {"open_pattern": pattern, "close": "</x>", "transform": {"c": "{content}"}}
    template = {"start_anchor": "S", "fields": {"x": field}}
    plan = plan_parser(load_template(template, "5.24"), "drawn")
    (d,) = [d for d in plan.delimiters if d.anchor.pattern == pattern]
    return None if d.skip is None else eval(f"({d.skip},)", vars(scan))  # (the compiler writes it as code)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    branches=st.lists(_branches(), min_size=1, max_size=3),
    text=st.lists(st.sampled_from(_PIECES), max_size=10).map("".join),
)
@example(branches=[r"\s*;(?=\s*\{)", "<e>"], text="a \t;{")  # a run before the start character
@example(branches=[r"^\s*(?=\{)", r"(?<=;)\s*(?=\{)"], text="{;{")  # `^` at 0, a guard after it
@example(branches=[r"(?<=</i>)<a>", "<e>"], text="</i><a>")  # a guard character right before
def test_the_search_from_the_first_start_finds_the_leftmost_match(branches: list[str], text: str) -> None:
    pattern = "|".join(branches)
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except regex.error:
        assume(False)
    skip = _skip_of(pattern)
    assume(skip is not None)
    for pos in range(len(text) + 1):
        expected = compiled.search(text, pos)
        at = first_start(text, pos, *skip)
        assert at == -1 or pos <= at <= len(text)
        if expected is not None and expected.start() < len(text):
            assert 0 <= at <= expected.start(), (pattern, text, pos, skip)
        found = scan_first(text, pos, compiled, *skip)
        if found is None:
            # (A zero-width match at the very end commits nothing: the end scans refuse it.)
            assert expected is None or expected.start() == len(text), (pattern, text, pos, skip)
        else:
            assert expected is not None, (pattern, text, pos)
            assert found[:3] == (*expected.span(), True), (pattern, text, pos, found)
            assert found[3].groupdict() == expected.groupdict()


# (Heads without a literal prefix: a delimiter with one is searched from it, and takes no tail skip.)
_HEADS = ["", "(?:<m>)?", "(?:<m>|b)?", "x*", "(?P<h>a?)", "(?:;a)?", "(?:ab<)?"]
_RUNS = [r"[^<]*", r"[^<]+", r"[^<;]*", r".*?", r"[^<]{2,}", r"(?P<r>[^<\n]+)"]
_LITERALS = ["<e>", "<t>", "<m>", "\n<e>"]
_TAIL_PIECES = [
    *("<", ";", "\n", "a", "b", "x", "<e>", "<t>", "<m>"),
    *(
        "<m>a",
        "<m>ab<e>",
        "a<t>",
        "xx<e>",
        "<m>x<t>",
        ";a<e>",
        "b\n<e>",
        "<m><e>",
        "b;<t>",
        "ab<x<e>",
        "ab<<t>",
    ),
]


def _tail_skip_of(pattern: str) -> tuple | None:
    field = {"open_pattern": pattern, "close": "</x>", "transform": {"c": "{content}"}}
    plan = plan_parser(load_template({"start_anchor": "S", "fields": {"x": field}}, "5.24"), "drawn")
    (d,) = [d for d in plan.delimiters if d.anchor.pattern == pattern]
    return None if d.tail_skip is None else eval(f"({d.tail_skip},)")  # (the compiler writes it as code)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.tuples(st.sampled_from(_HEADS), st.sampled_from(_RUNS), st.sampled_from(_LITERALS)),
    text=st.lists(st.sampled_from(_TAIL_PIECES), max_size=10).map("".join),
)
@example(parts=("(?:ab<)?", "[^<]*", "<e>"), text="ab<x<e>")  # a head ending with a stop
@example(parts=("(?:<m>)?", "[^<]*", "<e>"), text="b<m>ab<e>")  # a head starting with one
@example(parts=("", "[^<]+", "<t>"), text="<e><t>a<t>")  # a run that cannot be empty
def test_a_tail_search_finds_the_leftmost_match(parts: tuple[str, str, str], text: str) -> None:
    """Inkling's shape: a head, a run of non-stops, a literal (`scan_tail`)."""
    pattern = "".join(parts[:2]) + regex.escape(parts[2])
    skip = _tail_skip_of(pattern)
    assume(skip is not None)
    compiled = regex.compile(pattern, regex.DOTALL)
    for pos in range(len(text) + 1):
        expected = compiled.search(text, pos)
        found = scan_tail(text, pos, compiled, *skip)
        if expected is None:
            assert found is None, (pattern, text, pos)
        else:
            assert found is not None and found[:3] == (*expected.span(), True), (pattern, text, pos, found)
            assert found[3].groupdict() == expected.groupdict()


@pytest.mark.parametrize(
    ("pattern", "skip"),
    [
        (r"(?:<\|m\|>)?[^<]*<\|t\|>", ("<|t|>", "<", 5)),
        (r"x*[^<]*<e>", ("<e>", "<", None)),  # an unbounded head: only the literal is looked for
        (r"a.*?<e>", None),  # (a literal prefix: searched from it)
        (r"(?:a|b).*?;", (";", "", 1)),
        (r"[^<]*<e>(?=x)", None),  # not a tail
    ],
)
def test_what_the_compiler_proves_of_tails(pattern: str, skip: tuple | None) -> None:
    assert _tail_skip_of(pattern) == skip


@pytest.mark.parametrize(
    ("pattern", "skip"),
    [
        # llama3: a `^` branch and a `(?<=;)` branch (no unguarded one), and the separator after a run
        (r"^\s*(?=\{)|(?<=;)\s*(?=\{)", ("", None, ";")),
        (r"\s*;(?=\s*\{)|<\|eom\|>", (";<", scan.RUN_WHITESPACE, None)),
        (r"(?:^|\n\n)(?=\[[a-z])", (("\n\n",), None, "")),  # (a text every match starts with, when known)
        (r"</s>|(?=\[T\])", ("<[", None, None)),
        (r"(?:\s*<c>|(?<=</i>))\s*<a>", (("<c>",), scan.RUN_WHITESPACE, ">")),
        # Not skipped: a literal prefix (searched from it already), a category or too many characters
        # first, anything first.
        (r"<a>(?P<n>\w+)", None),
        (r"\w+;", None),
        (r"a|b|c|d|e", None),
        (r"x*;", (";x", None, None)),
        (r".*;", None),
    ],
)
def test_what_the_compiler_proves(pattern: str, skip: tuple | None) -> None:
    assert _skip_of(pattern) == skip


def test_presets_search_from_the_first_start() -> None:
    """The presets whose whole-message parse spent most of its time in such searches (issue #31) take it."""
    skipped = {}
    for name in ("llama3_json", "gemma3_pythonic", "llama4", "mistral_v11", "ernie4_5"):
        plan = plan_parser(load_template(respc.load_preset(name).TEMPLATE, "5.24"), name)
        skipped[name] = sorted(
            d.const for d in plan.delimiters if d.skip is not None and d.const not in plan.prefixed
        )
    assert skipped == {
        "llama3_json": ["TOOL_CALLS_CLOSE_RE", "TOOL_CALLS_OPEN_RE"],
        "gemma3_pythonic": ["TOOL_CALLS_OPEN_RE"],
        "llama4": ["TOOL_CALLS_OPEN_RE"],
        "mistral_v11": ["TOOL_CALLS_CLOSE_RE"],
        "ernie4_5": ["CONTENT_CLOSE_RE", "REASONING_CONTENT_OPEN_RE"],
    }


_WHOLE_TEMPLATES = [
    {  # a literal table whose literals start with two characters (mistral v3), searched from the first
        "start_anchor": "S",
        "fields": {
            "tool_calls": {"open": "[T]", "close": "</s>", "content": "json"},
            "content": {"close": ["</s>", "[E]"]},
        },
    },
    {  # llama3's shapes: guarded openers, a separator after a lead run
        "start_anchor": "S",
        "fields": {
            "tool_calls": {
                "open_pattern": r"^\s*(?=\{)|(?<=;)\s*(?=\{)",
                "close_pattern": r"\s*;(?=\s*\{)|<e>",
                "repeats": True,
            },
            "content": {"close_pattern": r"\s*<e>"},
        },
    },
    {  # inkling's: a head, a run of non-stops, a literal
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open_pattern": r"(?:<m>)?[^<]*<th>", "close": "<end>", "repeats": True},
            "content": {"open_pattern": r"(?:<m>)?[^<]*<tx>", "close": "<end>", "repeats": True},
        },
    },
]
_WHOLE_PIECES = [
    "[T]",
    "</s>",
    "[E]",
    "<e>",
    ";",
    " ",
    "{",
    "<m>",
    "<th>",
    "<tx>",
    "<end>",
    "<",
    "[",
    "x" * 150,
]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("index", range(len(_WHOLE_TEMPLATES)))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_WHOLE_PIECES), max_size=10), prefix=st.sampled_from(["", "S", "S{"]))
def test_long_whole_messages_agree_with_transformers(
    index: int, target: str, pieces: list[str], prefix: str
) -> None:
    """The scans above, as compiled into a parser, on whole messages long enough to take them (a piece of
    150 characters puts the text past LONG_TEXT), against transformers."""
    template, text = _WHOLE_TEMPLATES[index], "".join(pieces)
    ours = respc_parse(template, text, prefix, target=target)
    assert_same(ours, oracle_parse(template, text, prefix, target=target), template, repr(text), target)


_ALTERNATIVES = ["<a>", "<ab>", "<a", "<b>", "<|e|>", "<|eo|>", "[e~[", "ab"]


def _delimiter_of(pattern: str) -> Any:
    field = {"open": "<x>", "close_pattern": pattern, "transform": {"c": "{content}"}}
    plan = plan_parser(load_template({"start_anchor": "S", "fields": {"x": field}}, "5.24"), "drawn")
    (d,) = [d for d in plan.delimiters if d.anchor.pattern == pattern]
    return d


@example(lead="", literals=["<a", "<ab>"], text="<ab>")  # the first that matches at a position wins
@example(lead=r"\s*", literals=["<b>", "<a>"], text=" <a> <b>")  # the earliest, after its run
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.sampled_from(["", r"\s*", r"\n*"]),
    literals=st.lists(
        st.sampled_from(_ALTERNATIVES), min_size=2, max_size=3, unique=True
    ),  # (some share no prefix)
    text=st.lists(st.sampled_from([*_ALTERNATIVES, " ", "\n", "<", "a", "b>", "|"]), max_size=8).map("".join),
)
def test_an_alternation_of_literals_is_matched_without_a_search(
    lead: str, literals: list[str], text: str
) -> None:
    """Qwen's `\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)`: `alternatives_match` from the prefix's first
    occurrence, as the end-of-stream scans call it, against the regex search."""
    pattern = lead + "(?:" + "|".join(regex.escape(literal) for literal in literals) + ")"
    d = _delimiter_of(pattern)
    assume(d.alternatives is not None)
    compiled = regex.compile(pattern, regex.DOTALL)
    run = RUN_CLASSES[d.lead][1] if d.lead else None
    for pos in range(len(text) + 1):
        expected = compiled.search(text, pos)
        at = text.find(d.prefix, pos) if d.prefix else pos  # (a prefix found first, as the scans do)
        found = None if at < 0 else alternatives_match(text, pos, at, d.alternatives, run)
        if expected is None:
            assert found is None, (pattern, text, pos)
        else:
            assert found == (*expected.span(), True, None), (pattern, text, pos, found)


@pytest.mark.parametrize(
    ("pattern", "alternatives"),
    [
        (r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", ("<|im_end|>", "<|endoftext|>")),
        (r"</minimax:tool_call>|\[e~\[", ("</minimax:tool_call>", "[e~[")),
        (r"(?:<a|<ab>)", ("<a", "<ab>")),  # (the order they are tried in, not longest first)
        (r"(?P<end><a>|<b>)", None),  # a group: its match is read
        (r"(?i:<a>|<b>)", None),
        (r"<a>", None),  # one literal (`literal_run`'s)
        (r"<a>|<b>(?=c)", None),
    ],
)
def test_what_the_compiler_reads_as_alternatives(pattern: str, alternatives: tuple | None) -> None:
    assert _delimiter_of(pattern).alternatives == alternatives


_LEAD_BODIES = [
    r"(?:<a>\s*)?<b>",
    r"(?:<a>|\[b\])x",
    r"<(?:a|b)>(?=c)",
    r"(?:<a>)?(?P<n>\[b\])",
    r"(?:;|<e>)",
]


@example(lead=r"\s*", body=r"(?:<a>\s*)?<b>", text="x <a> <b>")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.sampled_from([r"\s*", r"\n*", r"[ \t]*"]),
    body=st.sampled_from(_LEAD_BODIES),
    text=st.lists(
        st.sampled_from(["<a>", "<b>", "[b]", " ", "\n", "\t", "x", "c", "<", ";", "<e>"]), max_size=8
    ).map("".join),
)
def test_a_lead_run_search_starts_at_the_first_start_character(lead: str, body: str, text: str) -> None:
    """step3's `\\s*(?:<｜tool_calls_begin｜>\\s*)?...`: what follows the run, searched from the first of
    its start characters (`lead_skip`), walked back over the run, against the whole pattern's search."""
    pattern = lead + body
    d = _delimiter_of(pattern)
    assume(d.method == "lead" and d.lead_skip is not None)
    needles = eval(d.lead_skip)  # (the compiler writes it as code)
    rest = regex.compile(d.rest, regex.DOTALL)
    whole = regex.compile(pattern, regex.DOTALL)
    for pos in range(len(text) + 1):
        expected = whole.search(text, pos)
        at = first_start(text, pos, needles, None, None)
        found = None if at < 0 else scan_lead(text, pos, rest, RUN_CLASSES[d.lead][1], True, at)
        if expected is None or expected.start() == len(text):
            assert found is None or found[0] == len(text), (pattern, text, pos, found)
        else:
            assert found is not None and found[:2] == expected.span(), (pattern, text, pos, found)
            assert found[3].groupdict() == expected.groupdict()


_OPTIONALS = [r"(?:<a>\s*)?", r"(?:;)??", r"(?P<g><b>)?", r"(?:<a>|<b>)?", r"(?:\s*<a>)?", r"(?:x[ab]*)?"]
_FIRSTS = ["<c>", "<a>", ";", "[ab]", "(?=<c>)", "<c>(?P<n>x*)"]


@example(optionals=[r"(?:<a>\s*)?"], first="<c>", text="<a> <c>")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    optionals=st.lists(st.sampled_from(_OPTIONALS), max_size=3),
    first=st.sampled_from(_FIRSTS),
    text=st.lists(
        st.sampled_from(["<a>", "<b>", "<c>", " ", ";", "x", "a", "<", "<a><c>", "x;<c>"]), max_size=8
    ).map("".join),
)
def test_every_match_starts_with_a_leading_literal(optionals: list[str], first: str, text: str) -> None:
    """`leading_literals`, which the searches above look for: every match starts with one of them."""
    pattern = "".join(optionals) + first
    texts = leading_literals(pattern)
    compiled = regex.compile(pattern, regex.DOTALL)
    if texts is None:
        return
    assert all(texts)
    for pos in range(len(text) + 1):
        match = compiled.search(text, pos)
        if match is not None:
            assert any(text.startswith(t, match.start()) for t in texts), (pattern, text, pos, texts)


@pytest.mark.parametrize(
    ("pattern", "texts"),
    [
        (r"(?:<a>\s*)?(?:<b>\s*)?<c>x", ("<a>", "<b>", "<c>x")),
        (r"(?P<g><a>)?<c>", ("<a>", "<c>")),
        (r"(?:<a>|<b>)?<c>", ("<", "<c>")),  # (the alternatives share a prefix, which is read)
        (r"(?:<a>)?[bc]", None),
        (r"(?:<a>)?", None),  # may match empty anywhere
        (r"(?i:<a>)?<c>", None),
    ],
)
def test_what_leading_literals_reads(pattern: str, texts: tuple | None) -> None:
    assert leading_literals(pattern) == texts


def test_a_literal_that_spells_a_run_constant_compiles() -> None:
    """A review found the compiler told a lead run by the text `RUN_` in the arguments it writes, which a
    delimiter's own literal can hold: `(?:<RUN_a>)?<b>` then failed to compile (KeyError)."""
    template = {"start_anchor": "S", "fields": {"x": {"open_pattern": r"(?:<RUN_a>)?<b>", "close": "</x>"}}}
    text = "a <RUN_a><b>c</x>d"
    assert_same(respc_parse(template, text, ""), oracle_parse(template, text, ""), template, repr(text))


def test_the_search_limit_covers_the_match_at_the_start_and_the_extension_check() -> None:
    # `scan_first` matches a guarded pattern at position 0 before it searches, and `survives_extension`
    # re-matches on the extended buffer: both go through the limit set with `set_search_timeout`.
    runaway = regex.compile(r"^(?:a|aa)+$|<e>", regex.DOTALL)
    text = "a" * 40 + "!"
    scan.set_search_timeout(0.05)
    try:
        with pytest.raises(scan.SearchTimeout, match=r"took longer than the 0.05 s limit"):
            scan_first(text, 0, runaway, "<", None, "")
        with pytest.raises(scan.SearchTimeout, match=r"took longer than the 0.05 s limit"):
            scan.survives_extension(regex.compile(r"(?:a|aa)+$"), text[:-1], 0, 40, None)
    finally:
        scan.set_search_timeout(None)
    assert scan_first("<e>", 0, runaway, "<", None, "")[:3] == (0, 3, True)
