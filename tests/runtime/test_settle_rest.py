"""After a commit, `_settle_rest` does what `_rest_hold`, `_route`, `_trim` and `_settle` do, for their
commonest answers, in one method (issue #31): what is left is a stem's proper prefix (held), a run and a
lead-run delimiter's prefix (held), or text that starts nothing (routed, but for a trailing run in mode
lead, held); then the mode is installed.

The first tests switch it off (a subclass whose `_settle_rest` declines every case, so the general way
runs) and compare everything a stream leaves after every feed: the events, and the parser's state (buffer,
position, region, held text and pattern, mode and the method installed as `feed`), on every shipped
preset's samples and every template fixture's, under many chunkings. The others compare edge streams with
transformers, and check that the common commits take it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.compare import (
    FIXTURES,
    SAMPLES,
    SUPPORTED_TARGETS,
    TEMPLATES,
    assert_same,
    assert_streams_agree,
    chunkings,
    oracle_stream,
    respc_stream,
    spy,
)

import respc
from respc.registry import TargetTooOld

PRESETS = sorted(path.stem for path in (FIXTURES / "presets").glob("*.json"))
_STATE = (
    *("_buf", "_pos", "_current", "_opened", "_empty_open", "_mode", "_held", "_run_pieces", "_parts"),
    *("_captures", "_output", "errors"),
)


def _general_way(cls: type) -> type:
    """`cls` with `_settle_rest` switched off: every commit takes `_rest_hold`, `_route`, `_trim`, `_settle`."""

    class GeneralWay(cls):
        def _settle_rest(self, events: list[dict], buf: str, end: int) -> bool:
            return False

    return GeneralWay


def _state(parser: Any) -> str:
    """The parser's state, written out (a snapshot: the lists and dicts go on changing; `nan` == `nan`)."""
    values = tuple(getattr(parser, name) for name in _STATE)
    # (A held pattern is compared by the delimiter it stands for: whether mode held has made it an
    # `AfterHead` yet depends on the pattern's memo, which the two parsers share.)
    pattern = parser._held_pattern
    return repr((*values, getattr(pattern, "whole", pattern), parser.feed.__func__.__name__))


def _trace(cls: type, prefix: str, chunks: list[str]) -> list:
    """The events of every feed and the state after it, then finalize's answer (or the error raised)."""
    parser = cls(prefix, errors="keep")
    trace: list = [repr(parser.initial_events), _state(parser)]
    for chunk in chunks:
        try:
            trace.append(repr(parser.feed(chunk)))
        except Exception as error:  # (the same error, at the same feed, either way)
            trace.append(repr(error))
            return trace
        trace.append(_state(parser))
    try:
        trace.append(repr(parser.finalize()))
    except Exception as error:
        trace.append(repr(error))
    return trace


def _compare(module: Any, cases: list[dict], context: str) -> int:
    general = _general_way(module.ResponseParser)
    compared = 0
    for index, case in enumerate(cases):
        prefix = case.get("prefix") or ""
        text = case["text"]
        splits = [*chunkings(text, seed=index), [text[i : i + 4] for i in range(0, len(text), 4)]]
        for chunks in splits:
            ours = _trace(module.ResponseParser, prefix, chunks)
            theirs = _trace(general, prefix, chunks)
            assert ours == theirs, f"{context} case {index}, chunks {chunks!r}"
            compared += 1
    return compared


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("preset", PRESETS)
def test_presets_stream_as_the_general_way_does(preset: str, target: str) -> None:
    try:
        module = respc.load_preset(preset, target=target)
    except TargetTooOld:
        pytest.skip(f"{preset} needs a newer release than {target}")
    cases = json.loads((FIXTURES / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    assert _compare(module, cases, preset) >= len(cases)


@pytest.mark.parametrize("name", sorted(set(TEMPLATES) & set(SAMPLES)))
def test_fixture_templates_stream_as_the_general_way_does(name: str) -> None:
    module = respc.compile_template(TEMPLATES[name])
    assert _compare(module, SAMPLES[name], name) >= len(SAMPLES[name])


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    ("preset", "prefix", "chunks"),
    [
        # What is left after the close: nothing, text, a run (mode lead holds it), text then a run, a
        # stem's prefix, a run and a lead-run delimiter's prefix.
        ("qwen3", "<think>\n", ["hm</think>", "Hi<|im_end|>"]),
        ("qwen3", "<think>\n", ["hm</thi", "nk>Hi", "<|im_end|>"]),
        ("qwen3", "<think>\n", ["hm</thi", "nk>\n\n", "Hi<|im_end|>"]),
        ("qwen3", "<think>\n", ["hm</thi", "nk>Hi \n", " there<|im_end|>"]),
        ("qwen3", "<think>\n", ["hm</thi", "nk><|im", "_end|>"]),
        (
            "qwen3",
            "<think>\n",
            ["hm</thi", "nk>\n<tool", '_call>\n{"name": "f", "arguments": {}}', "</tool_call>"],
        ),
        (
            "qwen3",
            "<think>\n",
            ["hm</thi", "nk>\n\n<tool_call>", '{"name": "f", "arguments": {}}</tool_call>\n'],
        ),
        # Outside every region of a template without implicit field (mode discard), and a guard.
        ("gpt_oss", "<|start|>assistant", ["<|channel|>analysis<|message|>hm<|end|>", "<|start|>assistant"]),
        ("cohere", "", ["<|START_THINKING|>hm<|END_THINKING|>", " <|START_RESPONSE|>Hi<|END_RESPONSE|>"]),
        ("minimax_m2", "]~b]ai\n<think>\n", ["hm</thi", "nk>\n\n", "Hi[e~["]),
        (
            "minimax_m2",
            "]~b]ai\n<think>\n",
            ["hm</thi", "nk>\n\n<minimax:tool_call>\n", '<invoke name="f">', "</invoke>"],
        ),
        ("ernie4_5", "User: hi\nAssistant:", ["Fine.\n</think>\n\n", "<response>\nHi\n</response>"]),
        # Text that starts nothing, then a stem's prefix or a run and a lead-run delimiter's prefix.
        ("ernie4_5", "User: hi\nAssistant:", ["Fine.\n</think", ">\n\n<", "response>\nHi\n</response>"]),
        ("ernie4_5", "User: hi\nAssistant:", ["Fine.\n</think", ">\n\n<", "b>"]),
        (
            "qwen3",
            "<think>\n",
            ["hm</thi", "nk>Hi \n<tool", '_call>\n{"name": "f", "arguments": {}}</tool_call>'],
        ),
        ("qwen3", "<think>\n", ["hm</thi", "nk>Hi \n<|im", "_start|>"]),
        (
            "glm4_5",
            "<|assistant|>",
            ["<tool_call>f", "\n<", "arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"],
        ),
        ("glm4_5", "<|assistant|>", ["<tool_call>f", "\n</tool", "_call>"]),
    ],
)
def test_edge_streams_agree_with_transformers(
    preset: str, prefix: str, chunks: list[str], target: str
) -> None:
    assert_streams_agree(respc.load_preset(preset).TEMPLATE, prefix, chunks, target=target)


@pytest.mark.parametrize(
    ("chunk", "mode", "held"),
    [
        ("nk>Hi", "lead", None),
        ("nk>\n\n", "held", "\n\n"),
        ("nk><|im", "held", "<|im"),
        ("nk>Hi \n", "lead", None),
    ],
)
def test_a_close_followed_by_what_starts_nothing_takes_no_general_step(
    chunk: str, mode: str, held: str | None
) -> None:
    """Qwen3's `</think>` completed by a chunk: the rest after it is settled by `_settle_rest` alone."""
    parser = respc.load_preset("qwen3").ResponseParser("<think>\n")
    parser.feed("hm</thi")
    assert parser.feed_mode == "held"
    calls = spy(parser, "_rest_hold", "_route", "_settle", "_process")
    events = parser.feed(chunk)
    assert events[0] == {"type": "region_close", "field": "reasoning_content", "value": "hm"}
    assert not calls and parser.feed_mode == mode and (held is None or parser._held == held)


@pytest.mark.parametrize(
    ("preset", "prefix", "chunks", "held"),
    [
        ("ernie4_5", "User: hi\nAssistant:", ["Fine.\n</think", ">\n\n<"], "<"),  # (discard: dropped)
        ("glm4_5", "<|assistant|>", ["<tool_call>f", "ile\n<"], "<"),  # (plain: routed)
        ("qwen3", "<think>\n", ["hm</thi", "nk>Hi \n<too"], " \n<too"),  # (lead: the run held too)
    ],
)
def test_a_commit_followed_by_text_then_a_prefix_takes_no_general_step(
    preset: str, prefix: str, chunks: list[str], held: str
) -> None:
    """After a commit, text that starts nothing and then a stem's proper prefix (or a run and a lead-run
    delimiter's): `_settle_rest` routes the text and holds the rest, as the general way would."""
    module = respc.load_preset(preset)
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    calls = spy(parser, "_rest_hold", "_process")
    parser.feed(chunks[-1])
    assert not calls and parser.feed_mode == "held" and parser._held == held
    general = _general_way(module.ResponseParser)
    assert _trace(module.ResponseParser, prefix, chunks) == _trace(general, prefix, chunks)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    ("preset", "prefix", "chunks", "mode"),
    [
        # GLM's opener ends with the name, so it commits when `\n<ar` comes: `<ar` starts nothing.
        ("glm4_5", "<|assistant|>", ["<tool_call>get_weather", "\n<ar"], "plain"),
        ("glm4_5", "<|assistant|>", ["<tool_call>f", "\n<a<b"], "plain"),
        # Mode lead: the text with a start character is routed, the trailing run held.
        ("qwen3", "<think>\n", ["hm</thi", "nk>a<b \n"], "lead"),
    ],
)
def test_a_commit_followed_by_a_start_character_that_starts_nothing_takes_no_general_step(
    preset: str, prefix: str, chunks: list[str], mode: str, target: str
) -> None:
    """After a commit, text with a start character where nothing starts (`_starts_nothing`): `_settle_rest`
    routes it all (in mode lead, but for a trailing run), as `_rest_hold` says."""
    module = respc.load_preset(preset, target=target)
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    calls = spy(parser, "_rest_hold", "_process")
    events = parser.feed(chunks[-1])
    assert not calls and parser.feed_mode == mode and events[-1]["type"] == "region_chunk"
    general = _general_way(module.ResponseParser)
    assert _trace(module.ResponseParser, prefix, chunks) == _trace(general, prefix, chunks)
    tails = ([], ["x"], ["g_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"], ["<|im_end|>"])
    assert_streams_agree(module.TEMPLATE, prefix, chunks, tails, target)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_a_rest_a_regex_delimiter_is_remembered_to_hold_is_held_without_a_scan(target: str) -> None:
    """MiniMax-M2 ends a message after tool calls with `</minimax:tool_call>`, then `[e~[`: the close
    commits and leaves `[e~[`, a complete match of the next state's `\\s*(?:</minimax:tool_call>|\\[e~\\[)`
    at the buffer's end, where it may still grow, so the pass would hold it. Once the pattern's memo
    (`partial_held`) has that answer, `_settle_rest` holds it without the scan."""
    module = respc.load_preset("minimax_m2", target=target)
    prefix = "]~b]ai\n"
    chunks = ["<minimax:tool_call>\n", '<invoke name="f">', "</invoke>", "\n</minimax:tool_call>", "[e~["]
    for _ in range(2):  # (the first stream fills the memo)
        parser = module.ResponseParser(prefix)
        for chunk in chunks[:-1]:
            parser.feed(chunk)
        calls = spy(parser, "_rest_hold", "_process")
        parser.feed(chunks[-1])
    assert not calls and parser.feed_mode == "held" and parser._held == "[e~["
    for tail in ([], ["x"], ["\n"], ["[e~["]):
        stream = [*chunks, *tail]
        assert_same(
            respc_stream(module.TEMPLATE, prefix, stream, target=target),
            oracle_stream(module.TEMPLATE, prefix, stream, target=target),
            module.TEMPLATE,
            repr(stream),
        )
