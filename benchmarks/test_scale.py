"""Scaling out: `respc parse` on stored generations with each engine, and its memory as inputs grow.

    python -m pytest benchmarks/test_scale.py --benchmark-only --benchmark-json=.benchmarks/scale.json
    python benchmarks/render_table.py .benchmarks/scale.json --write   # the scale table of docs/batch.md

Each engine runs as a user runs it, in a fresh process: `respc parse` (local, 1 and 2 workers; Ray
Data with 2 actors on a local cluster it starts and stops) and a script calling
`respc.batch.datasets.map_dataset` (`num_proc=2`), on RECORDS realistic Qwen3 outputs of about 1,000
characters (reasoning, answers, tool calls, 1 in 20 malformed), from Parquet and from JSONL, to the
same format. Each engine also runs on SMALL records: the difference gives the per-record cost
(records/s) and the rest is the fixed start-up cost (imports, pools, the cluster). Peak memory of the
local engine is measured at PEAK_SIZES records (`os.wait4` of that one process). transformers'
`parse_response` in a loop gives the reference per-record cost. Set RESPC_SCALE_RECORDS to change
RECORDS; the untimed CI run (`--benchmark-disable`) uses small sizes so the code cannot rot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).parent.parent
SMALL = 1_000
ENGINES = [
    ("local", 1, "parquet"),
    ("local", 2, "parquet"),
    ("local", 1, "jsonl"),
    ("local", 2, "jsonl"),
    ("ray", 2, "parquet"),
    ("ray", 2, "jsonl"),
    ("datasets", 2, "parquet"),
]
DATASETS_SCRIPT = """
import sys, datasets
from respc.batch.datasets import map_dataset
datasets.disable_progress_bars()
source, out, cache = sys.argv[1:4]
dataset = datasets.Dataset.from_parquet(source, cache_dir=cache)
parsed, failed = map_dataset(dataset, preset="qwen3", num_proc=int(sys.argv[4]))
parsed.to_parquet(out)
"""
MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024)
"""


def _disabled(config: pytest.Config) -> bool:
    return bool(config.getoption("benchmark_disable", False))


def _sizes(config: pytest.Config) -> tuple[int, tuple[int, int]]:
    if _disabled(config):
        # Both sizes past the engines' first chunks of records (10,240 for JSONL): below that, peak memory
        # grows with the chunk read, the input itself (1,000 records 28 MiB, 10,000 records 43 MiB, then
        # flat: 20,000 56 MiB, 100,000 58 MiB).
        return 3_000, (20_000, 200_000)
    return int(os.environ.get("RESPC_SCALE_RECORDS", 200_000)), (100_000, 1_000_000)


def response(i: int) -> tuple[str, str]:
    """A Qwen3 output of about 1,000 characters and its prompt."""
    topic = ["the weather", "a refund", "the schedule", "an invoice", "the report"][i % 5]
    reasoning = f"The user asks about {topic} (request {i}). " + "Let me think it through step by step. " * 6
    answer = f"Here is what I found about {topic}: " + "the details are in the attached summary. " * 9
    if i % 20 == 7:  # malformed call: an error row
        return (
            f'<think>\n{reasoning}\n</think>\n\n<tool_call>\n{{"name": "lookup", "arguments": {{{topic}}}\n</tool_call><|im_end|>',
            "",
        )
    if i % 4 == 1:
        call = json.dumps({"name": "lookup", "arguments": {"topic": topic, "id": i, "notes": answer[:300]}})
        return (
            f"<think>\n{reasoning}\n</think>\n\n{answer[:200]}\n<tool_call>\n{call}\n</tool_call><|im_end|>",
            "",
        )
    return f"<think>\n{reasoning}\n</think>\n\n{answer}<|im_end|>", ""


def write_records(directory: Path, count: int, form: str) -> Path:
    path = directory / f"records-{count}.{form}"
    if path.exists():
        return path
    if form == "parquet":
        with pq.ParquetWriter(
            path, pa.schema([("id", pa.int64()), ("prompt", pa.string()), ("response", pa.string())])
        ) as out:
            for start in range(0, count, 10_000):
                rows = [(i, *reversed(response(i))) for i in range(start, min(count, start + 10_000))]
                out.write_table(pa.table(list(zip(*rows)), names=["id", "prompt", "response"]))
    else:
        with open(path, "w", encoding="utf-8") as out:
            for i in range(count):
                text, prompt = response(i)
                out.write(json.dumps({"id": i, "prompt": prompt, "response": text}) + "\n")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scale-bench")


def _command(engine: str, workers: int, source: Path, out: Path, cache: Path) -> list[str]:
    if engine == "datasets":
        return [sys.executable, "-c", DATASETS_SCRIPT, str(source), str(out), str(cache), str(workers)]
    command = [sys.executable, "-m", "respc", "parse", str(source), "--preset", "qwen3", "-o", str(out)]
    if engine == "ray":
        return [*command, "--engine", "ray", "--concurrency", str(workers)]
    return [*command, "--workers", str(workers)]


def _timed(command: list[str]) -> float:
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - started
    assert done.returncode in (0, 1), done.stderr  # 1: the malformed records, by design
    return elapsed


@pytest.mark.parametrize(("engine", "workers", "form"), ENGINES, ids=[f"{e}-{w}-{f}" for e, w, f in ENGINES])
def test_engine_records_per_second(
    benchmark, request, data: Path, engine: str, workers: int, form: str
) -> None:
    records, _ = _sizes(request.config)
    big, small = write_records(data, records, form), write_records(data, SMALL, form)
    out = data / f"out-{engine}-{workers}.{form}"
    cache = data / "hf-cache"
    benchmark.group = "scale"
    benchmark.extra_info.update(
        workload="scale", engine=engine, workers=workers, format=form, records=records
    )
    elapsed = benchmark.pedantic(
        _timed, (_command(engine, workers, big, out, cache),), rounds=1, iterations=1
    )
    if benchmark.disabled:
        return
    fixed_run = _timed(_command(engine, workers, small, out, cache))
    per_record = (elapsed - fixed_run) / (records - SMALL)
    benchmark.extra_info.update(
        records_per_second=round(1 / per_record),
        startup_seconds=round(fixed_run - SMALL * per_record, 2),
        seconds=round(elapsed, 2),
    )


def test_oracle_records_per_second(benchmark) -> None:
    """transformers 5.24.0's `parse_response` on the same records, one process, for reference."""
    from transformers.utils.chat_parsing import parse_response

    import respc

    template = respc.load_preset("qwen3").TEMPLATE
    items = [response(i) for i in range(2_000)]

    def run() -> int:
        failed = 0
        for text, prompt in items:
            try:
                parse_response(text, template, prefix=prompt)
            except Exception:
                failed += 1
        return failed

    benchmark.group = "scale"
    benchmark.extra_info.update(workload="scale-oracle", records=len(items))
    benchmark.pedantic(run, rounds=1, iterations=1)
    if not benchmark.disabled:
        benchmark.extra_info["records_per_second"] = round(len(items) / benchmark.stats.stats.median)


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_peak_memory_as_inputs_grow(benchmark, request, data: Path, form: str) -> None:
    """Peak memory of the local engine (one process) at two input sizes ten times apart."""
    sizes = _sizes(request.config)[1]
    peaks = {}

    def measure() -> None:
        for count in sizes:
            source = write_records(data, count, form)
            command = [
                sys.executable,
                "-c",
                MEASURE,
                *_command("local", 1, source, data / f"peak.{form}", data),
            ]
            done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
            code, peak = done.stdout.split()
            assert int(code) in (0, 1)
            peaks[count] = float(peak)

    benchmark.group = "scale-memory"
    benchmark.extra_info.update(workload="scale-memory", format=form)
    benchmark.pedantic(measure, rounds=1, iterations=1)
    small, large = sizes
    assert peaks[large] < 1.5 * peaks[small], peaks  # the bound: memory does not grow with the input
    benchmark.extra_info.update(
        peaks_mib={str(k): round(v) for k, v in peaks.items()}, ratio=round(peaks[large] / peaks[small], 2)
    )
