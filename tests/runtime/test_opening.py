"""Mode opening (issue #31): where the implicit region is not open yet and nothing is held, in a state of
mode plain or lead where no guarded branch can match (a reply's start after its prompt's anchor, the text
after `</think>`), a chunk that starts nothing opens the region and is routed as those modes route it,
without the general mode's tests and pass; a parser created without a remainder starts in it (or in mode
discard, outside every region of a template without implicit field).

The first test switches it off (a subclass whose `_feed_opening` takes the general way) and compares every
feed's events and the state it leaves, on every shipped preset's samples and every template fixture's,
under many chunkings; the others check which chunks it takes, and streams of them against transformers.
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

PRESETS = sorted(path.stem for path in (FIXTURES / "presets").glob("*.json"))
# (The buffer is compared from the scan position: the fast modes keep the chunk as the context, the pass
# keeps `CONTEXT` characters of it; both are at least what the patterns look back at.)
_STATE = (
    "_current",
    "_opened",
    "_empty_open",
    "_mode",
    "_held",
    "_run_pieces",
    "_parts",
    "_output",
    "errors",
)


def _general_way(cls: type) -> type:
    """`cls` with mode opening switched off: its chunks take the general mode."""

    class GeneralWay(cls):
        def _feed_opening(self, text: str) -> list[dict]:
            if self._mode != "opening":
                return self._installed(text)
            return self._general(text)

    return GeneralWay


def _trace(cls: type, prefix: str, chunks: list[str]) -> list:
    parser = cls(prefix, errors="keep")
    trace: list = [repr(parser.initial_events)]
    for chunk in chunks:
        try:
            trace.append(repr(parser.feed(chunk)))
        except Exception as error:
            trace.append(repr(error))
            return trace
        # (In mode lead a held run is the buffer's rest, whether `_held` names it or not: the pass's
        # `_settle` names it, mode lead's own routing does not.)
        state = tuple(
            None if name == "_held" and parser._mode == "lead" else getattr(parser, name) for name in _STATE
        )
        pattern = parser._held_pattern  # (by the delimiter it stands for, as test_settle_rest.py compares it)
        pattern = None if parser._mode == "lead" else getattr(pattern, "whole", pattern)
        trace.append(repr((*state, pattern, parser._buf[parser._pos :], parser.feed.__func__.__name__)))
    try:
        trace.append(repr(parser.finalize()))
    except Exception as error:
        trace.append(repr(error))
    return trace


def _compare(module: Any, cases: list[dict], context: str) -> None:
    general = _general_way(module.ResponseParser)
    for index, case in enumerate(cases):
        prefix = case.get("prefix") or ""
        text = case["text"]
        for chunks in [*chunkings(text, seed=index), [text[i : i + 4] for i in range(0, len(text), 4)]]:
            assert _trace(module.ResponseParser, prefix, chunks) == _trace(
                general, prefix, chunks
            ), f"{context} case {index}, chunks {chunks!r}"


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("preset", PRESETS)
def test_presets_stream_as_the_general_way_does(preset: str, target: str) -> None:
    try:
        module = respc.load_preset(preset, target=target)
    except respc.registry.TargetTooOld:
        pytest.skip(f"{preset} needs a newer target")
    cases = json.loads((FIXTURES / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    _compare(module, cases, preset)


@pytest.mark.parametrize("name", sorted(set(TEMPLATES) & set(SAMPLES)))
def test_fixture_templates_stream_as_the_general_way_does(name: str) -> None:
    module = respc.compile_template(TEMPLATES[name])
    _compare(module, SAMPLES[name], name)
    # (Each text from its second character too: another first chunk, from a parser without a remainder.)
    _compare(module, [{"text": case["text"][1:]} for case in SAMPLES[name] if len(case["text"]) > 1], name)


def test_most_presets_open_a_reply_in_mode_opening() -> None:
    """The mode is taken where it should be: every preset whose reply starts in an unguarded implicit
    region of mode plain or lead (all but those with a guard at the start, which `_first_feed` serves)."""
    opening = [name for name in PRESETS if respc.load_preset(name).ResponseParser("").feed_mode == "opening"]
    assert len(opening) >= 20, opening
    assert "qwen3" in opening and "llama4" not in opening  # (Llama 4's `^(?=\[)`: a guard at the start)


@pytest.mark.parametrize(
    ("chunk", "events", "mode", "held"),
    [
        ("Hi", [("region_open", None), ("region_chunk", "Hi")], "lead", None),
        ("Hi \n", [("region_open", None), ("region_chunk", "Hi")], "lead", None),  # (the run is held)
        (" Hi", [("region_open", None), ("region_chunk", " Hi")], "lead", None),
    ],
)
def test_a_first_chunk_that_starts_nothing_opens_the_region_without_a_pass(
    chunk: str, events: list, mode: str, held: str | None
) -> None:
    parser = respc.load_preset("qwen3").ResponseParser("<|im_start|>assistant\n")
    assert parser.feed_mode == "opening"
    calls = spy(parser, "_general", "_pass")
    got = parser.feed(chunk)
    assert not calls
    assert [(event["type"], event.get("text")) for event in got] == events
    assert all(event["field"] == "content" for event in got)
    assert parser.feed_mode == mode


@pytest.mark.parametrize("chunk", ["<", "Hi <tool", "<tool_call>", "a<b"])
def test_a_chunk_that_may_start_something_takes_the_general_way(chunk: str) -> None:
    """A start character."""
    module = respc.load_preset("qwen3")
    parser = module.ResponseParser("<|im_start|>assistant\n")
    calls = spy(parser, "_general")
    parser.feed(chunk)
    assert calls == ["_general"]
    for tail in ([], ["x"], [" y"], ["_call>\n{}"], ["\n</tool_call>"]):
        chunks = [chunk, *tail]
        assert_same(
            respc_stream(module.TEMPLATE, "<|im_start|>assistant\n", chunks),
            oracle_stream(module.TEMPLATE, "<|im_start|>assistant\n", chunks),
            module.TEMPLATE,
            repr(chunks),
        )


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_the_text_after_a_close_opens_the_implicit_region_in_mode_opening(target: str) -> None:
    module = respc.load_preset("qwen3", target=target)
    prefix = "<|im_start|>assistant\n<think>\n"
    parser = module.ResponseParser(prefix)
    parser.feed("hm")
    parser.feed("</think>")
    assert parser.feed_mode == "opening"
    calls = spy(parser, "_general", "_pass")
    assert parser.feed("Sure") == [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "Sure", "dirty": False},
    ]
    assert not calls and parser.feed_mode == "lead"
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        [],
        (["hm", "</think>", "Sure", "."], ["hm", "</think>", "\n\n", "Sure"], ["</think>", "x"]),
        target=target,
    )


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("run", ["\n", "\n\n", " ", " \n "])
def test_a_chunk_that_is_all_run_is_held_without_a_pass(run: str, target: str) -> None:
    """The `\n` token after `</think>`: the region stays unopened and the run is held by the lead-run
    delimiter whose partial match it is (`_hold_opening_run`), as the pass's `_settle` would hold it."""
    module = respc.load_preset("qwen3", target=target)
    prefix = "<|im_start|>assistant\n<think>\n"
    parser = module.ResponseParser(prefix)
    parser.feed("hm</think>")
    assert parser.feed_mode == "opening"
    calls = spy(parser, "_general", "_pass")
    assert parser.feed(run) == []
    assert not calls and parser.feed_mode == "held" and parser._held == run and not parser._opened
    for tail in (["Sure"], ["<tool_call>\n{}\n</tool_call>"], ["\n", "x"], ["<|im_end|>"], []):
        chunks = ["hm</think>", run, *tail]
        assert_same(
            respc_stream(module.TEMPLATE, prefix, chunks, target=target),
            oracle_stream(module.TEMPLATE, prefix, chunks, target=target),
            module.TEMPLATE,
            repr(chunks),
        )
