"""Held text that a chunk turns into a pending match of a regex delimiter stays held without a pass (issue
#31): the oracle's pass commits nothing at or after a pending match (a partial one, or a complete one at
the buffer's edge, which may still grow: quirk Q19) and routes nothing from it, so a pending match at the
scan position makes the pass a no-op.

- Held as a regex stem's proper prefix in a state where it is no literal's (`State.regex_prefixes`, per
  state): longcat's `</longcat_` is a prefix of the literal `</longcat_think>` only inside reasoning.
- Held as a stem's prefix that a chunk completes, where another delimiter's literal stem shares it
  (`_pending_here`): seed-oss's `<seed:` then `eos>`.
- In mode pending, held by one delimiter's partial match and then by another's (`_feed_pending`):
  MiniMax-M2's `\\n<` after `</invoke>`, then `/min`.

Each is checked to take no pass, then streamed on against transformers; the stems and prose around them
are streamed under random chunkings too.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import (
    SUPPORTED_TARGETS,
    assert_same,
    assert_streams_agree,
    oracle_stream,
    respc_stream,
    spy,
)

import respc

CASES = [
    ("longcat", "ASSISTANT:", ["Done.</longcat", "_s>"], "</longcat_s>", "held"),
    ("longcat", "ASSISTANT:", ["Done.\n</longcat_", "s>"], "\n</longcat_s>", "held"),
    ("seed_oss", "<seed:bos>assistant\n", ["Done.<seed:", "eos>"], "<seed:eos>", "held"),
    ("seed_oss", "<seed:bos>assistant\n", ["Done. <seed", ":eos>"], " <seed:eos>", "held"),
    (
        "minimax_m2",
        "]~b]ai\n",
        ['<minimax:tool_call>\n<invoke name="f">', "</invoke>\n<", "/min"],
        "\n</min",
        "pending",
    ),
]
TAILS = ([], [" more"], ["x"], ["\n"], ["imax:tool_call>"], ["<|im"], ["</longcat_s>"], ["<seed:eos>"])


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(("preset", "prefix", "chunks", "held", "mode"), CASES)
def test_a_chunk_that_leaves_a_pending_match_takes_no_pass(
    preset: str, prefix: str, chunks: list[str], held: str, mode: str, target: str
) -> None:
    module = respc.load_preset(preset, target=target)
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    calls = spy(parser, "_pass", "_process", "_commit_literal")
    assert parser.feed(chunks[-1]) == []
    assert parser.feed_mode == mode and parser._held == held
    assert "_pass" not in calls and "_process" not in calls
    if preset == "longcat":
        # (A regex stem's prefix in this state: its pattern's partial search settles it, `_stem_pattern`.)
        assert not calls
    assert_streams_agree(module.TEMPLATE, prefix, chunks, TAILS, target=target)


PIECES = {
    "longcat": ["</longcat_s>", "</longcat_think>", "<longcat_think>", "<longcat_tool_call>", "</longcat_"],
    "seed_oss": ["<seed:eos>", "<seed:think>", "</seed:think>", "<seed:tool_call>", "<seed:", "<function=f>"],
    "minimax_m2": ["</invoke>", '<invoke name="f">', "<minimax:tool_call>", "</minimax:tool_call>", "[e~["],
}
PREFIX = {"longcat": "ASSISTANT:", "seed_oss": "<seed:bos>assistant\n", "minimax_m2": "]~b]ai\n"}


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(sorted(PIECES)),
    data=st.data(),
)
def test_streams_of_stems_and_prose_agree_with_transformers(preset: str, data: st.DataObject) -> None:
    pieces = PIECES[preset] + ["ok", "\n", " ", "x.", '{"a": 1}', "<"]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), min_size=1, max_size=10)))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)]) if a < b]
    module = respc.load_preset(preset)
    assert_same(
        respc_stream(module.TEMPLATE, PREFIX[preset], chunks),
        oracle_stream(module.TEMPLATE, PREFIX[preset], chunks),
        module.TEMPLATE,
        repr(chunks),
    )


def _last_pending_feed(module: Any, prefix: str, chunks: list[str]) -> tuple[list[dict], list[str]]:
    """The last chunk's events, fed in mode pending after the others, and the pass's calls it made."""
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    assert parser.feed_mode == "pending"
    calls = spy(parser, "_pass", "_process")
    return parser.feed(chunks[-1]), calls


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("last", ["Hello", "Hi [x", "ok\n"])
def test_mode_pending_routes_what_starts_nothing_without_a_pass(last: str, target: str) -> None:
    """MiniMax-M2 after `</think>`: `\\n`, `\\n` (one token each) pend as the opener's run; then `Hello`
    starts nothing, and no guarded branch can match there (`</think>` is not `</invoke>`): routed with
    the run, opening the content, as mode held's `_release_held` routes it."""
    module = respc.load_preset("minimax_m2", target=target)
    prefix = "]~b]ai\n"
    chunks = ["<think>hm", "</think>", "\n", "\n", last]
    events, calls = _last_pending_feed(module, prefix, chunks)
    assert not calls and events[0] == {"type": "region_open", "field": "content"}
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        chunks,
        ([], ["<minimax:tool_call>"], ['\n<minimax:tool_call>\n<invoke name="f">', "</invoke>"]),
        target=target,
    )


@pytest.mark.parametrize(("paragraph", "last"), [("\n\n", "The"), ("\n\n", " <b"), ("\n\n[", "1] see")])
def test_mode_pending_routes_a_false_alarm_whose_stem_is_whole_without_a_pass(
    paragraph: str, last: str
) -> None:
    """Gemma 3's content beside `(?:^|\\n\\n)(?=\\[[A-Za-z_])`: a paragraph's `\\n\\n` pends (a guard is
    watched), and `The` leaves the stem `\\n\\n` whole, so `_release_held` alone cannot route it; but
    nothing matches or partially matches at its start any more (`_commit_literal`'s `_NOTHING`), so it
    is routed up to what may start after that character, without a pass. (A 5.24 preset.)"""
    module = respc.load_preset("gemma3_pythonic")
    prefix = "<start_of_turn>model\n"
    chunks = ["Hello there.", paragraph, last]
    events, calls = _last_pending_feed(module, prefix, chunks)
    assert not calls and events[0]["text"].startswith(paragraph)
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        chunks,
        ([], ["\n\n", "[f(a=1)]"], ["<end_of_turn>"], ["\n\n[f(x=2)]<end_of_turn>"], ["<end_"]),
    )


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_mode_pending_leaves_an_empty_commit_to_the_pass(target: str) -> None:
    """Llama 3's call at the reply's start (`^\\s*(?=\\{...)`) pends until `"parameters":` completes the
    lookahead; the match is then complete and empty, which the pass commits (it checks for cycles): the
    chunk goes to it at once, not through `_pend` and `_release_held` first."""
    module = respc.load_preset("llama3_json", target=target)
    chunks = ['{"name": "f", "paramete', 'rs":', ' {"a": 1}}<|eom_id|>']
    parser = module.ResponseParser("")
    parser.feed(chunks[0])
    assert parser.feed_mode == "pending"
    calls = spy(parser, "_pass", "_pend", "_release_held", "_commit_literal")
    events = parser.feed(chunks[1])
    assert calls == ["_pass"] and events[0] == {"type": "region_open", "field": "tool_calls"}
    assert_streams_agree(
        module.TEMPLATE, "", chunks, ([], [";", '{"name": "g", "parameters": {}}']), target=target
    )
