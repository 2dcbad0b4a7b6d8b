"""A held stem's prefix that a chunk completes into a stem, where no watched delimiter matches or partially
matches at the held text's start after all (`_commit_literal` answers `_NOTHING`) and nothing starts in
the text after it: the pass would route it all, and mode held routes it itself (`_release_held`), without
the pass (issue #31). Gemma 3's `\\n\\n` beside `(?:^|\\n\\n)(?=\\[[A-Za-z_])`, followed by `[1]`, not a call.
Where something may start after it (phi4-mini's ` functools.lr`, whose `functools` may begin a call), the
pass still runs. And where the held text has grown into another watched regex delimiter's complete match,
final, with nothing else starting there (hunyuan's `\\n助手：`, held as `\\s*<tool_calls>`'s run), that match
is committed without the pass (`_commit_held` of that delimiter). Each case is checked against
transformers, with what comes after it.
"""

from __future__ import annotations

import pytest
from support.compare import (
    SUPPORTED_TARGETS,
    assert_same,
    assert_streams_agree,
    oracle_stream,
    respc_stream,
    spy,
)

import respc

ROUTED = [
    ("gemma3_pythonic", "<start_of_turn>model\n", ["Paris.\n", "\n[1]"], "\n\n[1]"),
    ("gemma3_pythonic", "<start_of_turn>model\n", ["Paris.\n", "\n[", "1] x"], "\n\n[1] x"),
    ("gemma3_pythonic", "<start_of_turn>model\n", ["a\n", "\n", "[ ok"], "\n\n[ ok"),
]
TAILS = ([], [" more"], ["\n\n[f(x=1)]"], ["<end_of_turn>"], ["<eos>"], ["\n"])


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(("preset", "prefix", "chunks", "routed"), ROUTED)
def test_a_false_alarm_is_routed_without_a_pass(
    preset: str, prefix: str, chunks: list[str], routed: str, target: str
) -> None:
    try:
        module = respc.load_preset(preset, target=target)
    except respc.registry.TargetTooOld:
        pytest.skip(f"{preset} needs a newer target")
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    assert parser.feed_mode == "held"
    calls = spy(parser, "_pass", "_process")
    events = parser.feed(chunks[-1])
    assert not calls
    assert [event.get("text") for event in events if event["type"] == "region_chunk"] == [routed]
    assert_streams_agree(module.TEMPLATE, prefix, chunks, TAILS, target=target)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_a_stem_after_the_false_alarm_is_routed_once_its_pattern_finds_nothing(target: str) -> None:
    """phi4-mini's ` functool` held, then `s.lr`: `functools` could start a call after the held text's
    start, but the opener's search finds nothing (its lookahead fails) and the close's stems are not in
    the text (`_others_start_nothing`), so it is routed without the pass; where `functools[` follows,
    the call is found."""
    module = respc.load_preset("phi4_mini", target=target)
    prefix = "<|assistant|>"
    parser = module.ResponseParser(prefix)
    parser.feed("Use functool")
    calls = spy(parser, "_pass")
    assert parser.feed("s.lr")[-1]["text"] == " functools.lr"
    assert not calls
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        [],
        (
            ["Use functool", "s.lr", "u_cache.<|end|>"],
            ["Use functool", "s functools", '[{"name": "f", "arguments": {}}]<|end|>'],
            ["x", " functools", '[{"name": "f", "arguments": {}}]<|end|>'],
        ),
        target=target,
    )


def test_a_call_right_after_the_held_texts_start_is_left_to_the_pass() -> None:
    """Gemma 3's `a\\n` held, then `\\n\\n[f(x=1)]`: nothing matches at the held `\\n`, but the call's
    `\\n\\n[` starts one character later, so the pass runs and commits it."""
    module = respc.load_preset("gemma3_pythonic")
    prefix = "<start_of_turn>model\n"
    parser = module.ResponseParser(prefix)
    parser.feed("a\n")
    calls = spy(parser, "_pass")
    parser.feed("\n\n[f(x=1)]")
    assert calls == ["_pass"]
    chunks = ["a\n", "\n\n[f(x=1)]", "<end_of_turn>"]
    assert_same(
        respc_stream(module.TEMPLATE, prefix, chunks),
        oracle_stream(module.TEMPLATE, prefix, chunks),
        module.TEMPLATE,
        repr(chunks),
    )


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    "chunks",
    [
        ["<think>\nok\n</think>", "\n<answer>\n", "助手：北京"],  # (`\n` held by `\s*<tool_calls>`'s run)
        ["<think>\nok\n</think>", "\n<answer>\n", "助手", "：北京"],
    ],
)
def test_another_regex_delimiters_final_match_at_the_held_texts_start_commits_without_a_pass(
    chunks: list[str], target: str
) -> None:
    """Hunyuan's content closes on `\\s*(?:<answer>|...|助手：)`: a run held as `\\s*<tool_calls>`'s, then
    `助手：` and more, is that close's complete match, final, with nothing else starting there; it is
    committed (`_commit_held` of that pattern) without the pass."""
    module = respc.load_preset("hunyuan", target=target)
    prefix = "<|extra_0|>"
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    calls = spy(parser, "_pass", "_process")
    parser.feed(chunks[-1])
    assert not calls
    assert_streams_agree(module.TEMPLATE, prefix, chunks, ([], ["<|eos|>"], ["\n助手：y"]), target=target)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    ("preset", "prefix", "chunks"),
    [
        ("gpt_oss", "<|start|>assistant", ["<|channel|>final<|message|>Hi.<|end|>", "<|", "start"]),
        (
            "cohere",
            "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
            ["<|START_RESPONSE|>Hi<|END_RESPONSE|>", "<|", "END"],
        ),
    ],
)
def test_a_false_alarm_outside_every_region_is_dropped_without_a_pass(
    preset: str, prefix: str, chunks: list[str], target: str
) -> None:
    """Outside every region of a template without an implicit field (mode discard), held `<|` then
    `start`: no opener starts there, so the pass drops the text; mode held drops it too (`_release_held`)."""
    module = respc.load_preset(preset, target=target)
    parser = module.ResponseParser(prefix)
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    assert parser.feed_mode == "held"
    calls = spy(parser, "_pass", "_process")
    assert parser.feed(chunks[-1]) == []
    assert not calls and parser.feed_mode == "discard"
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        chunks,
        (
            [],
            ["<|channel|>final<|message|>x<|return|>"],
            ["<|START_RESPONSE|>y<|END_RESPONSE|>"],
            ["|>"],
        ),
        target=target,
    )
