"""Regex delimiters that are a literal and runs (`literal_run`): end-of-stream scans find them without `regex`.

A pattern `R*LS*` (a literal `L`, perhaps after a lead run `R*` and before a run `S*` that ends it,
`<\\|tool_call_end\\|>\\s*`, `\\s*<\\|im_end\\|>`) has its leftmost match from any position at the first
occurrence of `L`, walked back over the run before it and forward over the run after it
(`respc.runtime.scan.literal_match`). The claim is checked against the `regex` module on random patterns
and texts, and whole messages and streams against transformers (both targets), on templates that put
such delimiters first and later in a state's watches, with runs of every class and Unicode whitespace.
"""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import (
    SUPPORTED_TARGETS,
    assert_same,
    chunkings,
    oracle_parse,
    oracle_stream,
    respc_parse,
    respc_stream,
)

import respc
from respc.compiler.analysis import literal_run, split_lead
from respc.compiler.analysis.lead import LEADS
from respc.compiler.plan import plan_parser
from respc.runtime.scan import RUN_CLASSES, literal_match
from respc.spec import load_template


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"<\|tool_call_end\|>\s*", ("<|tool_call_end|>", r"\s")),
        (r"<\|im_end\|>", ("<|im_end|>", None)),
        (r"<x>\n*", ("<x>", r"\n")),
        (r"<x>[ \t]*", ("<x>", r"[ \t]")),
        (r"<x> *", ("<x>", " ")),
        (r"<x>(?:\s)*", ("<x>", r"\s")),  # Python's parser drops the group
        (r"\s*<x>", None),  # the lead is `split_lead`'s: the rest qualifies
        (r"<x>\s+", None),
        (r"<x>\s*?", None),  # lazy: the match takes no run
        (r"<x>\s*\s*", None),
        (r"<x>[\t ]*", None),  # not written as a LEADS class
        (r"(?P<a><x>)", None),  # a group: the match's captures come from the regex
        (r"<x>|<y>", None),
        (r"a\\s*", None),  # a backslash, then a run of `s`
        (r"(?i)<x>", None),
        (r"\s*", None),
    ],
)
def test_literal_run(pattern: str, expected: tuple | None) -> None:
    assert literal_run(pattern) == expected


LITERALS = ["<x>", "<|e|>", "ab", "</b> ", "<\n>", "a"]
TEXT_PIECES = ["<x>", "<|e|>", "<|e", "ab", "a", "b", "</b>", " ", "\t", "\n", "\u3000", "\x85", "\x1f", "<"]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([None, *[lead for lead, _ in LEADS]]),
    st.sampled_from(LITERALS),
    st.sampled_from([None, *[lead for lead, _ in LEADS]]),
    st.lists(st.sampled_from(TEXT_PIECES), max_size=12),
)
def test_literal_match_is_the_regex_search(
    lead: str | None, literal: str, trail: str | None, pieces: list[str]
) -> None:
    """From every position, the literal's first occurrence walked over the runs is `regex`'s leftmost match."""
    pattern = (lead or "") + regex.escape(literal) + (trail or "")
    split = split_lead(pattern)
    run_class, rest = split if split else (None, pattern)
    shape = literal_run(rest)
    assert (split is None) == (lead is None)  # (no literal above starts with a run character)
    assert shape == (literal, None if trail is None else _class(trail))
    compiled = regex.compile(pattern, regex.DOTALL)
    text = "".join(pieces)
    for pos in range(len(text) + 1):
        at = text.find(literal, pos)
        expected = compiled.search(text, pos)
        if at < 0:
            assert expected is None
            continue
        lead_run = None if run_class is None else RUN_CLASSES[run_class][1]
        trail_run = None if shape[1] is None else RUN_CLASSES[shape[1]][1]
        ours = literal_match(text, pos, at, len(literal), lead_run, trail_run)
        assert ours[:2] == expected.span(), (pattern, text, pos)


def _class(run: str) -> str:
    """The run class of a LEADS prefix (`\\s*` -> `\\s`)."""
    return dict(LEADS)[run]


TEMPLATES = [
    {  # LFM2's shape: lead-run opens and closes outside, a trailing run closing the tool region
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open_pattern": r"\s*<\|tc\|>",
                "close_pattern": r"<\|/tc\|>\s*",
                "content": "json",
            },
            "content": {"close_pattern": r"\s*<\|e\|>", "repeats": True, "join": "\n\n"},
        },
    },
    {  # a literal regex after a literal in one state (the bounded branch), runs of each class
        "start_anchor": "S",
        "fields": {
            "aside": {"open": "<a>", "close_pattern": "</a>\n*"},
            "note": {"open_pattern": r"[ \t]*<n>", "close_pattern": r"</n> *"},
            "content": {"close_pattern": r"<\|e\|>"},
        },
    },
    {  # a lead-run close of a region whose parser reads its text as it is (`\u3000` is no space of it)
        "start_anchor": "S",
        "fields": {"tool": {"open": "<j>", "close_pattern": r"\s*</j>", "content": "python-call-list"}},
    },
    {  # a held partial match (`<a>.*?!`) before a lead run: at the end of the stream the run is the open's
        "start_anchor": "S",
        "fields": {
            "aside": {"open_pattern": "<a>.*?!", "close": "</a>"},
            "tool": {"open_pattern": r"\s*<t>", "close_pattern": r"</t>\s*"},
            "content": {"close": "<|e|>"},
        },
    },
]
PIECES = [
    "<think>",
    "</think>",
    "<|tc|>",
    '{"a": 1}',
    "<|/tc|>",
    "<|e|>",
    "<|e",
    "<a>",
    "</a>",
    "<n>",
    "</n>",
    "<j>",
    "</j>",
    "[f(a=1)]",
    "<t>",
    "</t>",
    "!",
    " ",
    "\t",
    "\n",
    "\u3000",
    "\x1f",
    "word",
    "<",
]


def test_the_templates_take_the_literal_scans() -> None:
    """Every regex delimiter above is found without `regex` at the end of the stream (else the tests below
    would test nothing new), in both shapes the generated code has."""
    for template in TEMPLATES:
        plan = plan_parser(load_template(template), "5.24")
        regexes = [
            d for d in plan.delimiters if d.anchor.literals is None and not d.anchor.pattern.endswith("?!")
        ]
        assert regexes and all(d.literal_run for d in regexes)
    source = respc.generate_source(TEMPLATES[1])
    assert "literal_match(buf, pos, at, ASIDE_CLOSE_PREFIX_LENGTH, None, RUN_NEWLINE)" in source
    assert "(at, at + CONTENT_CLOSE_PREFIX_LENGTH, True, None)" in source


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("index", range(len(TEMPLATES)))
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.integers(0, 2**16))
def test_messages_and_streams_agree_with_transformers(
    target: str, index: int, pieces: list[str], seed: int
) -> None:
    template, text = TEMPLATES[index], "".join(pieces)
    ours = respc_parse(template, text, "", target=target)
    assert_same(ours, oracle_parse(template, text, "", target=target), template, repr(text), target)
    for chunks in chunkings(text, seed, random_splits=1):
        ours = respc_stream(template, "", chunks, target=target)
        assert_same(ours, oracle_stream(template, "", chunks, target=target), template, repr(chunks), target)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    ("index", "text"),
    [
        # A trailing run at the end of the stream: held while streaming, committed by the end scan.
        (0, 'S<|tc|>{"a": 1}<|/tc|> \u3000\n'),
        (0, 'S<think>x</think> \x85\t<|tc|>{"a": 1}<|/tc|>\x1f<|e|>'),
        (0, "Sa \u2028<|e|>  b\n<|e|>"),
        (0, "Sx \n\u3000<|tc|>"),  # a lead run at the end of the stream
        (0, "Sx<|e|>\t <|tc|>[]<|/tc|>y \n<|e|>"),
        (1, "S<a>x</a>\n\n"),
        (1, "S<a>x</a>\n\n \n<n>y</n>  \t"),
        (1, "S \t<n>y</n> \t<|e|>z"),
        (1, "Sz \t<n>"),
        (2, "S<j>[]\u3000</j>"),
        (2, "S<j>[f(a=1)] \u3000</j><j>[]\t</j>"),
        (3, "Sx<a> \n<t>"),
        (3, "Sx<a>\u3000<t>y</t>\t"),
    ],
)
def test_runs_at_the_edges_agree_with_transformers(target: str, index: int, text: str) -> None:
    template = TEMPLATES[index]
    ours = respc_parse(template, text, "", target=target)
    assert_same(ours, oracle_parse(template, text, "", target=target), template, repr(text), target)
    for chunks in ([text], [text[:3], text[3:]], list(text)):
        ours = respc_stream(template, "", chunks, target=target)
        assert_same(ours, oracle_stream(template, "", chunks, target=target), template, repr(chunks), target)
