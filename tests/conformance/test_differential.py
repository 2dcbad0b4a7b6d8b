"""respc against transformers, each target against its release, on every fixture template and sample,
under many chunkings."""

from __future__ import annotations

import pytest
from support.compare import (
    SAMPLES,
    TEMPLATES,
    assert_same,
    chunkings,
    oracle_parse,
    oracle_stream,
    respc_parse,
    respc_stream,
)

CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in sorted(TEMPLATES)
    for index in range(len(SAMPLES.get(name, [])))
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "n": {"type": "integer"},
                    "a": {"type": ["integer", "string"]},
                    "x": {"type": "number"},
                    "flag": {"type": "boolean"},
                    "items": {"type": "array"},
                    "opts": {"type": "object", "nullable": True},
                },
            },
        },
    }
    for name in ("get_weather", "get-weather", "search", "f", "lookup", "calc")
]


@pytest.mark.parametrize(("name", "index"), CASES)
def test_parse_response_matches_oracle(name: str, index: int, target: str) -> None:
    template, case = TEMPLATES[name], SAMPLES[name][index]
    for tools in (None, TOOLS):
        ours = respc_parse(template, case["text"], case["prefix"], tools, target)
        theirs = oracle_parse(template, case["text"], case["prefix"], tools, target)
        assert_same(
            ours, theirs, template, f"parse_response {name}[{index}] tools={tools is not None}", target
        )


@pytest.mark.parametrize(("name", "index"), CASES)
def test_streaming_matches_oracle(name: str, index: int, target: str) -> None:
    template, case = TEMPLATES[name], SAMPLES[name][index]
    for chunks in chunkings(case["text"], seed=index):
        ours = respc_stream(template, case["prefix"], chunks, target=target)
        theirs = oracle_stream(template, case["prefix"], chunks, target=target)
        assert_same(ours, theirs, template, f"stream {name}[{index}] chunks={chunks!r}", target)


@pytest.mark.parametrize(("name", "index"), CASES)
def test_every_two_way_split_matches_oracle(name: str, index: int, target: str) -> None:
    template, case = TEMPLATES[name], SAMPLES[name][index]
    text = case["text"]
    if len(text) > 400:
        pytest.skip("two-way splits are exhaustive only for short inputs")
    for cut in range(len(text) + 1):
        chunks = [text[:cut], text[cut:]]
        ours = respc_stream(template, case["prefix"], chunks, TOOLS, target)
        theirs = oracle_stream(template, case["prefix"], chunks, TOOLS, target)
        assert_same(ours, theirs, template, f"split {name}[{index}] at {cut}", target)


@pytest.mark.parametrize(("name", "index"), CASES)
def test_prefix_split_from_text_matches_oracle(name: str, index: int, target: str) -> None:
    """The prefix and the generation form one buffer: move the prompt/generation boundary around."""
    template, case = TEMPLATES[name], SAMPLES[name][index]
    whole = case["prefix"] + case["text"]
    cuts = sorted(
        {len(case["prefix"]), max(0, len(case["prefix"]) - 3), min(len(whole), len(case["prefix"]) + 5)}
    )
    for cut in cuts:
        ours = respc_stream(template, whole[:cut], [whole[cut:]], target=target)
        theirs = oracle_stream(template, whole[:cut], [whole[cut:]], target=target)
        assert_same(ours, theirs, template, f"prefix cut {name}[{index}] at {cut}", target)
