"""The fixed costs around parsing: importing a generated module, compiling a template (black
included), creating a parser with a prompt, and the peak memory of streaming a 1M-character response.
Measured, never asserted:

    python -m pytest benchmarks/test_costs.py --benchmark-only
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import pytest
from preset_speed import samples
from workloads import SHAPES, chunks_of, response, template

import respc


@pytest.mark.parametrize("preset", ["smollm3", "qwen3_5", "gpt_oss", "gemma4"])
def test_import_generated_module(benchmark, preset: str) -> None:
    """A fresh interpreter importing one shipped parser, minus the interpreter's own start-up.

    Bytecode caches are allowed (and warmed by a first run), as in any installed package. Regex patterns
    compile on first use, so the child then times `warm_up()`: what the first parse of a template with
    regex delimiters pays on top (importing `regex`, once per process, and compiling the patterns).
    """
    code = (
        f"import sys, time; t = time.perf_counter(); import respc.generated.{preset} as m; "
        "t1 = time.perf_counter(); regex_at_import = 'regex' in sys.modules; m.ResponseParser.warm_up(); "
        "t2 = time.perf_counter(); print(t1 - t, t2 - t1, regex_at_import, 'regex' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def child() -> list[str]:
        command = [sys.executable, "-c", code]
        return subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout.split()

    def run() -> float:
        return float(child()[0])

    first = child()  # also writes the bytecode caches
    benchmark.extra_info.update(imports_regex=first[2] == "True", uses_regex=first[3] == "True")
    benchmark.group = "import generated module (s, in-process time printed by the child)"
    samples = [child() for _ in range(5)]
    benchmark.extra_info.update(
        preset=preset,
        seconds=[float(sample[0]) for sample in samples],
        warm_up_seconds=[float(sample[1]) for sample in samples],
    )
    benchmark.pedantic(run, rounds=3, iterations=1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_compile_template(benchmark, shape: str) -> None:
    """generate_source end to end: validate, plan, render, black, verify."""
    tpl = template(shape)
    benchmark.group = "compile template (generate_source)"
    benchmark.extra_info.update(shape=shape)
    benchmark(respc.generate_source, tpl)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_peak_memory_streaming_1m(benchmark, shape: str) -> None:
    """Peak additional memory (tracemalloc) while streaming 1M characters in 4-character chunks."""
    module = respc.compile_template(template(shape))
    text = response(shape, 1_000_000)
    chunks = chunks_of(text)

    def run() -> int:
        tracemalloc.start()
        parser = module.ResponseParser("")
        for chunk in chunks:
            parser.feed(chunk)
        parser.finalize()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    peak = run()
    benchmark.group = "peak memory streaming 1M chars (bytes in extra_info)"
    benchmark.extra_info.update(
        shape=shape, peak_bytes=peak, text_bytes=sys.getsizeof(text), ratio=peak / len(text)
    )
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


# A parser created with a preset's prompt and never fed (a request cancelled at once): finding the last
# start anchor, and the prefix pass over what follows it. The prompts are the presets' own samples':
# one whose generation prompt opens a region (`<think>\n`) and
# one that leaves nothing after the anchor.
CREATED = {"minimax_m2": "opening", "step3": "opening", "qwen3": "plain", "gpt_oss": "plain"}


def _prompt(preset: str, kind: str) -> str:
    parser_class = respc.load_preset(preset).ResponseParser
    for sample in samples(preset):
        prefix = sample.get("prefix") or ""
        opens = bool(prefix) and bool(parser_class(prefix).initial_events)
        if prefix and opens == (kind == "opening"):
            return prefix
    raise AssertionError(f"{preset} has no {kind} prompt among its samples")


@pytest.mark.parametrize("side", ["respc", "transformers"])
@pytest.mark.parametrize("preset", sorted(CREATED))
def test_create_parser(benchmark, preset: str, side: str) -> None:
    from transformers.utils.chat_parsing import ResponseParser

    module = respc.load_preset(preset)
    prompt = _prompt(preset, CREATED[preset])
    if side == "respc":
        create = lambda: module.ResponseParser(prompt)  # noqa: E731
    else:
        create = lambda: ResponseParser(module.TEMPLATE, prefix=prompt)  # noqa: E731
    create()
    benchmark.group = f"create a parser with its prompt: {preset} ({CREATED[preset]})"
    benchmark.extra_info.update(preset=preset, side=side, prompt_chars=len(prompt))
    benchmark(create)
