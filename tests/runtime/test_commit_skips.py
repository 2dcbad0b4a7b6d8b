"""Scans that streaming skips because they cannot change the pass's answer (issue #17), against transformers.

- After a commit, the state entered is not scanned when what is left is empty, a proper prefix of a stem,
  or text that starts no watched delimiter (`CompiledParser._rest_hold`): `</think>` ending a chunk,
  `<think>d`, `</tool_call><|im`.
- A held partial match that a chunk ends without starting anything (`<` then `/par` where `</function>`
  is watched) is routed without a scan (`_skips_scan`).
- A streaming scan watching several delimiters skips a regex delimiter when none of its matches (nor
  partial matches) can start by the best candidate found before it (`Plan.stream_prefixed`): its literal
  prefix does not start by then, enough text follows, and no lead run reaches back to it.

The templates put each condition on its edge: a literal that is a proper prefix of a later regex's
prefix (the regex's partial match holds the literal back while too little text follows it), a literal of
whitespace before a lead-run delimiter (whose run reaches back to the literal's start and wins the tie).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import SUPPORTED_TARGETS, assert_same, chunkings, oracle_stream, respc_stream

import respc
from respc.compiler.plan import plan_parser
from respc.spec import load_template

TEMPLATES = [
    {  # a literal, then a regex whose literal prefix extends it
        "start_anchor": "S",
        "fields": {
            "reasoning": {"open": "<t>", "close": "</t>"},  # opens are watched by field name
            "tool": {
                "open_pattern": r"<t>\[(?P<name>\w+)\]",
                "close": "</c>",
                "repeats": True,
                "transform": {"name": "{name}", "body": "{content}"},
            },
            "content": {"close": "<|e|>"},
        },
    },
    {  # a literal of whitespace, then a lead-run delimiter
        "start_anchor": "S",
        "fields": {
            "gap": {"open": "\n\n", "close": "</g>"},
            "tool": {"open_pattern": r"\s*<b>", "close_pattern": r"</b>\s*"},
            "content": {"close_pattern": r"\s*<\|e\|>"},
        },
    },
    {  # Qwen3.5's shape: lead runs outside, a regex close inside a region that holds `<`
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {
                "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
                "close_pattern": r"</function>\s*</tool_call>",
                "repeats": True,
                "transform": {"name": "{name}", "body": "{content}"},
            },
            "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)"},
        },
    },
]
PIECES = [
    "<t>",
    "<t>[",
    "[f]",
    "[",
    "f]",
    "</t>",
    "</c>",
    "<|e|>",
    "<|e",
    "|>",
    "\n\n",
    "\n",
    " ",
    "<b>",
    "</b>",
    "<g",
    "</g>",
    "<think>",
    "<thi",
    "nk>",
    "</think>",
    "<tool_call>",
    "<function=f>",
    "</function>",
    "</tool_call>",
    "<|im_end|>",
    "<|im",
    "<p=x>",
    "</p>",
    "<",
    "/",
    "a < b",
    "word",
    "d",
]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("index", range(len(TEMPLATES)))
@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.integers(0, 2**16))
def test_streams_agree_with_transformers(target: str, index: int, pieces: list[str], seed: int) -> None:
    template, text = TEMPLATES[index], "".join(pieces)
    respc.compile_template(template)  # each template is valid: an invalid one would compare only errors
    for chunks in chunkings(text, seed, random_splits=2):
        ours = respc_stream(template, "", chunks, target=target)
        assert_same(ours, oracle_stream(template, "", chunks, target=target), template, repr(chunks), target)


@pytest.mark.parametrize(
    ("index", "chunks"),
    [
        # The regex's partial match `<t>` holds the literal back until `[` or something else follows.
        (0, ["S", "<t>", "[f]x</c>", "<|e|>"]),
        (0, ["S", "<t>", "x</t>", "<|e|>"]),
        (0, ["S", "a<t>", "[", "f]", "y</c><|e|>"]),
        # The lead run reaches back to the whitespace literal's start: `\s*<b>` wins the tie.
        (1, ["S", "hi\n\n<b>", "yo</b>", "<|e|>"]),
        (1, ["S", "hi\n\n", "<b>yo</b>\n\nz</g><|e|>"]),
        (1, ["S", "hi\n\nz", "</g> <|e|>"]),
        (1, ["S", "hi\n\n<", "b>yo</b>", "<|e|>"]),  # the run reaches a partial `<b>`: held
        (1, ["S", "hi\n\n <c", "</g><|e|>"]),  # the run reaches no `<b>`: the literal commits
        # Rests after a commit: empty, a stem's prefix, text starting nothing, a trailing run.
        (
            2,
            [
                "S",
                "<think>",
                "x</think>",
                "\n\nhi",
                "\n<tool_call>\n<function=f>\n<p=x>\n1\n<",
                "/p>\n<",
                "/function>",
            ],
        ),
        (2, ["S<think>d", "</think>a <b", "\n<tool_call><function=f>x</function></tool_call><|im", "_end|>"]),
        (
            2,
            [
                "S",
                "<think>x</think>",
                "a</think> ",
                " \n",
                "<tool_call><function=g>\n</function>\n</tool_call>  ",
            ],
        ),
    ],
)
def test_edges_agree_with_transformers(target: str, index: int, chunks: list[str]) -> None:
    template = TEMPLATES[index]
    ours = respc_stream(template, "", chunks, target=target)
    assert_same(ours, oracle_stream(template, "", chunks, target=target), template, repr(chunks), target)


def test_the_skips_are_generated_where_they_apply() -> None:
    """Each template above takes the skip it was written for (else the tests would test nothing new)."""
    plans = [plan_parser(load_template(template), "5.24") for template in TEMPLATES]
    assert plans[0].stream_prefixed == {"TOOL_OPEN_RE"}
    assert plans[1].stream_prefixed == {"TOOL_OPEN_RE", "CONTENT_CLOSE_RE"}
    assert plans[2].stream_prefixed == {"TOOL_CALLS_OPEN_RE", "CONTENT_CLOSE_RE"}


def test_a_commit_followed_by_what_starts_nothing_costs_no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """`<think>d`, `</think>` at a chunk's end, a tool call's opening then text, its close then `<|im`: one
    scan per chunk (of the text it commits in), none of the state entered after the commit."""
    module = respc.compile_template(TEMPLATES[2])
    scanned: list[str] = []

    def counted(scan: Callable) -> Callable:
        return lambda buf, pos: (scanned.append(buf[pos:]), scan(buf, pos))[1]

    for state in module.ResponseParser.STATES.values():
        monkeypatch.setattr(state, "entered", (counted(state.entered[0]), *state.entered[1:]))
    parser = module.ResponseParser("")
    chunks = ["<think>d", "e</think>", "\n<tool_call><function=f>x", "</function></tool_call><|im"]
    for chunk in chunks:
        parser.feed(chunk)
    assert scanned == chunks
