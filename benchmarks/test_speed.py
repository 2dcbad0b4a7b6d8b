"""respc and transformers 5.24.0 side by side, in one run.

    python -m pytest benchmarks --benchmark-only --benchmark-json=.benchmarks/run.json
    python benchmarks/render_table.py .benchmarks/run.json --write   # the tables of README.md and docs/

Each benchmark's `group` puts respc, the oracle and the floor (the bare work the API requires)
next to each other. The oracle's streaming cost is quadratic, so it only runs at 1M characters
when RESPC_BENCH_ORACLE_1M=1 (it takes about 15 s a round there).
"""

from __future__ import annotations

import os

import pytest
from timing import floor_parse, floor_stream, run_stream
from transformers.utils.chat_parsing import ResponseParser as OracleParser
from transformers.utils.chat_parsing import parse_response as oracle_parse
from workloads import SHAPES, SIZES, chunks_of, response, template

import respc

IMPLS = ("respc", "transformers", "floor")
ORACLE_1M = os.environ.get("RESPC_BENCH_ORACLE_1M") == "1"


def _skip_slow(impl: str, size: int) -> None:
    if impl == "transformers" and size >= 1_000_000 and not ORACLE_1M:
        pytest.skip("transformers at 1M characters: set RESPC_BENCH_ORACLE_1M=1")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_4_chars(benchmark, shape: str, impl: str, size: int) -> None:
    _skip_slow(impl, size)
    tpl, text = template(shape), response(shape, size)
    chunks = chunks_of(text)
    benchmark.group = f"stream-4 {shape} {size}"
    benchmark.extra_info.update(shape=shape, impl=impl, size=size, chunks=len(chunks), workload="stream-4")
    if impl == "floor":
        benchmark(floor_stream, chunks)
        return
    if impl == "respc":
        module = respc.compile_template(tpl)
        make = lambda: module.ResponseParser("")  # noqa: E731
    else:
        make = lambda: OracleParser(tpl, "")  # noqa: E731
    result = benchmark.pedantic(run_stream, (make, chunks), rounds=3 if size >= 100_000 else 15, iterations=1)
    if size <= 10_000:
        assert result == run_stream(lambda: OracleParser(tpl, ""), chunks)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parse_whole(benchmark, shape: str, impl: str, size: int) -> None:
    tpl, text = template(shape), response(shape, size)
    benchmark.group = f"parse {shape} {size}"
    benchmark.extra_info.update(shape=shape, impl=impl, size=size, workload="parse")
    if impl == "floor":
        benchmark(floor_parse, text, "<tool_call>", "</tool_call>")
    elif impl == "respc":
        module = respc.compile_template(tpl)
        assert benchmark(module.parse_response, text, prefix="") == oracle_parse(text, tpl, prefix="")
    else:
        benchmark(oracle_parse, text, tpl, prefix="")


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_batch_of_1000_short(benchmark, shape: str, impl: str) -> None:
    tpl = template(shape)
    texts = [response(shape, 300, seed) for seed in range(1000)]
    benchmark.group = f"batch-1000 {shape}"
    benchmark.extra_info.update(shape=shape, impl=impl, size=300, workload="batch-1000")
    if impl == "floor":
        benchmark(lambda: [floor_parse(t, "<tool_call>", "</tool_call>") for t in texts])
    elif impl == "respc":
        parse = respc.compile_template(tpl).parse_response
        benchmark(lambda: [parse(t, prefix="") for t in texts])
    else:
        benchmark(lambda: [oracle_parse(t, tpl, prefix="") for t in texts])


@pytest.mark.parametrize("impl", ("respc", "transformers"))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_tokens(benchmark, shape: str, impl: str, token_chunks) -> None:
    """One real token per feed: a byte-level BPE trained in the session on the workloads."""
    tpl = template(shape)
    chunks = token_chunks(response(shape, 10_000))
    benchmark.group = f"stream-token {shape} 10000"
    benchmark.extra_info.update(
        shape=shape, impl=impl, size=10_000, chunks=len(chunks), workload="stream-token"
    )
    if impl == "respc":
        module = respc.compile_template(tpl)
        benchmark(run_stream, lambda: module.ResponseParser(""), chunks)
    else:
        benchmark(run_stream, lambda: OracleParser(tpl, ""), chunks)


@pytest.fixture(scope="session")
def token_chunks():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    specials = sorted({d for shape in SHAPES for d in _delimiters(template(shape))})
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=specials, show_progress=False)
    tokenizer.train_from_iterator([response(s, 20_000, seed) for s in SHAPES for seed in range(3)], trainer)

    def split(text: str) -> list[str]:
        offsets = tokenizer.encode(text).offsets
        return [text[a:b] for a, b in offsets if b > a]

    return split


def _delimiters(tpl: dict) -> list[str]:
    found = []
    for field in tpl["fields"].values():
        for key in ("open", "close"):
            value = field.get(key)
            found += [value] if isinstance(value, str) else list(value or [])
    return found
