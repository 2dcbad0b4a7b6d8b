"""The speed targets (targets.py) as medians of paired ratios: the figures of the README's speed table.

    python -m pytest benchmarks/test_targets.py --benchmark-only --benchmark-json=.benchmarks/targets.json

The side-by-side benchmarks in test_speed.py time respc, transformers and the floor one after the
other, minutes apart; on a shared machine whose speed drifts by 30-50% from one minute to the next, a
ratio of two such medians moves with the drift. Here every round times both sides back to back (in
alternating order), so each ratio compares like with like, and the median over the rounds is the
figure. pytest-benchmark's own timing of a test is the time of one whole round, and means nothing.
"""

from __future__ import annotations

import pytest
from timing import floor_parse, floor_stream, record_pairs, run_stream
from transformers.utils.chat_parsing import ResponseParser as OracleParser
from transformers.utils.chat_parsing import parse_response as oracle_parse
from workloads import SHAPES, chunks_of, response, template

import respc


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_speedup_10k(benchmark, shape: str) -> None:
    """transformers ÷ respc, streaming 10k characters in 4-character chunks."""
    tpl, chunks = template(shape), chunks_of(response(shape, 10_000))
    module = respc.compile_template(tpl)
    ours = lambda: run_stream(lambda: module.ResponseParser(""), chunks)  # noqa: E731
    theirs = lambda: run_stream(lambda: OracleParser(tpl, ""), chunks)  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=shape)
    record_pairs(benchmark, "stream 10k speed-up", ours, theirs, repeat=(3, 1))


SMALL = {500: "500", 2_000: "2k"}


@pytest.mark.parametrize("size", sorted(SMALL))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_speedup_short(benchmark, shape: str, size: int) -> None:
    """transformers ÷ respc, streaming a short response in 4-character chunks, a new parser for each
    (issue #17: the length of most chat responses, where setup and the first feeds weigh most)."""
    tpl, chunks = template(shape), chunks_of(response(shape, size))
    module = respc.compile_template(tpl)
    ours = lambda: run_stream(lambda: module.ResponseParser(""), chunks)  # noqa: E731
    theirs = lambda: run_stream(lambda: OracleParser(tpl, ""), chunks)  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=shape)
    repeat = 20_000 // size
    record_pairs(
        benchmark, f"stream {SMALL[size]} speed-up", ours, theirs, repeat=(repeat, max(1, repeat // 4))
    )


@pytest.mark.parametrize("size", sorted(SMALL))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parse_speedup_short(benchmark, shape: str, size: int) -> None:
    """transformers ÷ respc, parse_response on a short response."""
    tpl, text = template(shape), response(shape, size)
    module = respc.compile_template(tpl)
    ours = lambda: module.parse_response(text, prefix="")  # noqa: E731
    theirs = lambda: oracle_parse(text, tpl, prefix="")  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=shape)
    repeat = 200_000 // size
    record_pairs(
        benchmark, f"parse {SMALL[size]} speed-up", ours, theirs, repeat=(repeat, max(1, repeat // 6))
    )


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_batch_1000_speedup(benchmark, shape: str) -> None:
    """transformers ÷ respc, parse_response on 1,000 different short responses (about 300 characters)."""
    tpl = template(shape)
    texts = [response(shape, 300, seed) for seed in range(1000)]
    parse = respc.compile_template(tpl).parse_response
    ours = lambda: [parse(t, prefix="") for t in texts]  # noqa: E731
    theirs = lambda: [oracle_parse(t, tpl, prefix="") for t in texts]  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=shape)
    record_pairs(benchmark, "batch-1000 speed-up", ours, theirs, repeat=(1, 1), rounds=9)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parse_speedup_10k(benchmark, shape: str) -> None:
    """transformers ÷ respc, parse_response on a 10k-character message."""
    tpl, text = template(shape), response(shape, 10_000)
    module = respc.compile_template(tpl)
    ours = lambda: module.parse_response(text, prefix="")  # noqa: E731
    theirs = lambda: oracle_parse(text, tpl, prefix="")  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=shape)
    record_pairs(benchmark, "parse 10k speed-up", ours, theirs, repeat=(50, 10))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_floor_10k(benchmark, shape: str) -> None:
    """respc ÷ floor, streaming 10k characters in 4-character chunks (the aim is within 3x)."""
    tpl, chunks = template(shape), chunks_of(response(shape, 10_000))
    module = respc.compile_template(tpl)
    ours = lambda: run_stream(lambda: module.ResponseParser(""), chunks)  # noqa: E731
    benchmark.extra_info.update(shape=shape)
    # Swapped roles: the ratio is respc's time over the floor's.
    record_pairs(benchmark, "stream 10k respc ÷ floor", lambda: floor_stream(chunks), ours, repeat=(3, 3))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parse_floor_10k(benchmark, shape: str) -> None:
    """respc ÷ floor, parse_response on a 10k-character message (the aim is within 3x)."""
    tpl, text = template(shape), response(shape, 10_000)
    module = respc.compile_template(tpl)
    ours = lambda: module.parse_response(text, prefix="")  # noqa: E731
    floor = lambda: floor_parse(text, "<tool_call>", "</tool_call>")  # noqa: E731
    benchmark.extra_info.update(shape=shape)
    record_pairs(benchmark, "parse 10k respc ÷ floor", floor, ours, repeat=(200, 50))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_stream_flat_1m(benchmark, shape: str) -> None:
    """respc's per-chunk streaming time at 1M characters ÷ at 10k (the target is at most 1.3)."""
    tpl = template(shape)
    small, large = chunks_of(response(shape, 10_000)), chunks_of(response(shape, 1_000_000))
    module = respc.compile_template(tpl)

    def per_chunk(chunks: list[str]):
        return lambda: run_stream(lambda: module.ResponseParser(""), chunks)

    benchmark.extra_info.update(shape=shape)
    repeat = (len(large) // len(small) // 4, 1)  # about a quarter of the large run's time on each side
    # Both sides time whole runs: scaled to per-chunk.
    scale = len(small) / len(large)
    record_pairs(
        benchmark,
        "stream µs/chunk 1M ÷ 10k",
        per_chunk(small),
        per_chunk(large),
        repeat=repeat,
        rounds=7,
        scale=scale,
    )


CALL = (
    'search_{i}(query="weather in city {i}", filters={{"units": "metric", "days": [1, 2, 3], '
    '"nested": {{"a": [true, null, 1.5]}}}}, limit={i}, exact=False)'
)


# The content parsers on their own, on what the benchmark templates' tool calls carry: Qwen3-Coder's
# XML parameters with JSON values, Gemma 4's JSON dialect, key: value lines.
CONTENT_CASES = {
    "xml-inline": (
        "xml-inline",
        {
            "tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>",
            "value_parser": {"name": "json", "args": {"allow_non_json": True}},
        },
        "\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=units>\n"
        'metric\n</parameter>\n<parameter=options>\n{"hourly": true, "alerts": ["wind", "rain"]}\n</parameter>\n',
    ),
    "json-dialect": (
        "json",
        {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True},
        '{city:<|"|>Paris<|"|>,days:3,units:<|"|>metric<|"|>,options:{hourly:true,alerts:[<|"|>wind<|"|>,'
        '<|"|>rain<|"|>]}}',
    ),
    "kv-lines": (
        "kv-lines",
        {"value_parser": {"name": "json", "args": {"allow_non_json": True}}},
        'city: Paris\ndays: 3\nunits: metric\nhourly: true\nalerts: ["wind", "rain"]',
    ),
}


@pytest.mark.parametrize("case", sorted(CONTENT_CASES))
def test_content_parser_speedup(benchmark, case: str) -> None:
    """transformers ÷ respc, one content parser on its own (the region's value from its raw text): respc's
    is the field's parser a generated module builds from the field's arguments when imported."""
    from transformers.utils.chat_parsing.content_parsers import parse_content

    from respc.runtime.content import content_parser
    from respc.runtime.targets import get_target

    release = get_target("5.24")
    name, args, text = CONTENT_CASES[case]
    field_parser = content_parser(name, args, release)
    ours = lambda: field_parser(text)  # noqa: E731
    theirs = lambda: parse_content(text, name, args)  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape=case)
    record_pairs(benchmark, "content parser speed-up", ours, theirs, repeat=(200, 100))


def test_python_call_list_speedup(benchmark) -> None:
    """transformers ÷ respc, the python-call-list content parser on its own: 10 calls, nested arguments."""
    from transformers.utils.chat_parsing.content_parsers import parse_content

    from respc.runtime.content import content_parser
    from respc.runtime.targets import get_target

    text = "[" + ", ".join(CALL.format(i=i) for i in range(10)) + "]"
    field_parser = content_parser("python-call-list", {}, get_target("5.24"))
    ours = lambda: field_parser(text)  # noqa: E731
    theirs = lambda: parse_content(text, "python-call-list", {})  # noqa: E731
    assert ours() == theirs()
    benchmark.extra_info.update(shape="python-call-list")
    record_pairs(benchmark, "content parser speed-up", ours, theirs, repeat=(20, 5))
