"""What `DeltaStream` adds to the parser it wraps, per delta (issue #31 aims at most 50% of the parser's).

    python -m pytest benchmarks/test_deltastream.py --benchmark-only --benchmark-json=.benchmarks/deltas.json
    python benchmarks/render_table.py .benchmarks/deltas.json --write   # the deltas table of docs/serving.md

Each workload streams one response through a shipped preset, one BPE token per feed (a byte-level BPE
trained on the response's words, as a model's tokenizer would split them): content or reasoning of 2k,
8k or 32k characters, or one tool call whose one argument holds that much text (JSON for qwen3,
xml-inline for qwen3_5). Every round times the parser alone and the same parser under a `DeltaStream`
back to back; the figure is the median over rounds of the stream's own time (the difference) over the
parser's, so that the machine's drift cancels. The parser's own speed is in the other tables.

`test_deltastream_on_short_samples` does the same for whole requests: each of a preset's realistic
samples (`tests/fixtures/presets`, a chat turn or a tool call), a new parser and stream per response, where
creating the stream, the region opens and closes and a call's JSON or xml structure weigh more than the
per-delta path.
"""

from __future__ import annotations

import statistics

import pytest
from preset_speed import _timed, bpe_chunks, run_requests, samples

import respc
from respc.serving import DeltaStream

SIZES = (2_000, 8_000, 32_000)
KINDS = ("content", "reasoning", "json args", "xml args")
PRESET = {"content": "qwen3", "reasoning": "qwen3", "json args": "qwen3", "xml args": "qwen3_5"}
ROUNDS = 9
WORDS = (
    "The user asks about the weather in Paris, so I should call the tool, read its answer and then "
    "summarise it in two sentences; temperatures are 18-24 degrees and it may rain after 5 pm.\n"
)


def response(kind: str, size: int) -> str:
    words = (WORDS * (size // len(WORDS) + 1))[:size]
    if kind == "content":
        return words + "<|im_end|>"
    if kind == "reasoning":
        return f"<think>\n{words}\n</think>\n\nDone.<|im_end|>"
    if kind == "json args":
        quoted = words.replace("\n", "\\n").replace('"', '\\"')
        return f'<tool_call>\n{{"name": "write", "arguments": {{"text": "{quoted}"}}}}\n</tool_call>'
    body = (
        f"<tool_call>\n<function=write>\n<parameter=text>\n{words}\n</parameter>\n</function>\n</tool_call>"
    )
    return body + "<|im_end|>"


def _parser_alone(module, chunks: list[str]) -> None:
    parser = module.ResponseParser("")
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()


def _stream(module, chunks: list[str]) -> None:
    stream = DeltaStream(module.ResponseParser(""))
    for chunk in chunks:
        stream.feed(chunk)
    stream.finish()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_deltastream_own_cost(benchmark, kind: str, size: int) -> None:
    module = respc.load_preset(PRESET[kind])
    text = response(kind, size)
    chunks = bpe_chunks([WORDS * 4])(text)
    own: list[float] = []
    parser_us: list[float] = []
    repeat = max(1, int(0.02 / max(_timed(lambda: _stream(module, chunks), 1), 1e-6)))

    def one_round() -> None:
        if len(own) % 2:
            alone = _timed(lambda: _parser_alone(module, chunks), repeat)
            wrapped = _timed(lambda: _stream(module, chunks), repeat)
        else:
            wrapped = _timed(lambda: _stream(module, chunks), repeat)
            alone = _timed(lambda: _parser_alone(module, chunks), repeat)
        own.append((wrapped - alone) / alone)
        parser_us.append(alone / len(chunks) * 1e6)

    benchmark.group = "DeltaStream: its own time over the parser's, per delta (see extra_info)"
    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(
        workload="deltas",
        kind=kind,
        size=size,
        deltas=len(chunks),
        own=own,
        median=statistics.median(own),
        parser_us_per_delta=statistics.median(parser_us),
    )


SHORT = ("qwen3", "qwen3_5", "llama3_json", "mistral_v11", "gpt_oss", "minimax_m2", "deepseek_r1", "glm4_5")


@pytest.mark.parametrize("preset", SHORT)
def test_deltastream_on_short_samples(benchmark, preset: str) -> None:
    module = respc.load_preset(preset)
    cases = samples(preset)
    split = bpe_chunks([case["text"] for case in cases])
    work = [(case.get("prefix") or "", split(case["text"])) for case in cases]
    own: list[float] = []
    parser_us: list[float] = []
    repeat = max(1, int(0.02 / max(_timed(lambda: run_requests(module.ResponseParser, work, True), 1), 1e-6)))

    def one_round() -> None:
        sides = (False, True) if len(own) % 2 else (True, False)
        timed = {
            stream: _timed(lambda: run_requests(module.ResponseParser, work, stream), repeat)
            for stream in sides
        }
        own.append((timed[True] - timed[False]) / timed[False])
        parser_us.append(timed[False] / len(work) * 1e6)

    benchmark.group = "DeltaStream on short samples: its own time over the parser's (see extra_info)"
    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(
        workload="deltas-short",
        preset=preset,
        responses=len(work),
        deltas=sum(len(chunks) for _, chunks in work),
        own=own,
        median=statistics.median(own),
        parser_us_per_response=statistics.median(parser_us),
    )
