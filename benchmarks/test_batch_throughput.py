"""`respc parse` throughput: records per second per worker, for 1 and 2 worker processes.

    python -m pytest benchmarks/test_batch_throughput.py --benchmark-only

Each round parses 20,000 short responses (about 300 characters each, as `test_batch_of_1000_short`)
through `respc.batch.parse_records`, the engine of `respc parse`: JSONL lines in, output lines out,
in order. A round includes starting the worker pool, as a command-line run does. `extra_info` holds
`records_per_second_per_worker` and, for 2 workers, `scaling` (the 1-worker time over the 2-worker
time, measured in the same round; 2.0 would be perfect).
"""

from __future__ import annotations

import json
import time

import pytest
from workloads import response, template

from respc.batch import ParserSource, parse_records

RECORDS = 20_000
SHAPE = "smollm"


def _lines() -> list[str]:
    return [json.dumps({"id": i, "prompt": "", "response": response(SHAPE, 300, i)}) for i in range(RECORDS)]


def _parse(lines: list[str], workers: int) -> int:
    """The number of records that failed."""
    return sum(
        bad for _, bad in parse_records(lines, ParserSource(template=template(SHAPE)), workers=workers)
    )


@pytest.mark.parametrize("workers", (1, 2))
def test_batch_records_per_second(benchmark, workers: int) -> None:
    lines = _lines()
    benchmark.group = f"batch-parse {RECORDS} {SHAPE}"
    benchmark.extra_info.update(shape=SHAPE, records=RECORDS, workers=workers, workload="batch-parse")
    failed = benchmark.pedantic(_parse, (lines, workers), rounds=3, iterations=1, warmup_rounds=1)
    assert failed == 0
    if benchmark.disabled:  # CI runs the benchmarks once, untimed
        return
    mean = benchmark.stats.stats.mean
    benchmark.extra_info["records_per_second_per_worker"] = round(RECORDS / mean / workers)
    if workers > 1:
        started = time.perf_counter()
        _parse(lines, 1)
        single = time.perf_counter() - started
        benchmark.extra_info["scaling"] = round(single / mean, 2)
