"""One row per workload against transformers 5.23.0: respc compiled for the 5.23 target, side by side with
the release it follows (timed in a process of its own by benchmarks/oracle_523.py, since 5.23.0 cannot
share an environment with 5.24.0; `python tests/support/oracles.py install` puts it beside the environment).

    python -m pytest benchmarks/test_release_523.py --benchmark-only --benchmark-json=.benchmarks/523.json
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from timing import run_stream
from workloads import chunks_of, response, template

import respc

ROOT = Path(__file__).parent.parent
SHAPE = "smollm"
WORKLOADS = {"stream-4": 10_000, "parse": 10_000, "batch-1000": 300}


def _oracle_seconds(workload: str, size: int, rounds: int) -> float:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.oracles import install

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(install("5.23")), str(ROOT / "benchmarks")]))
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "oracle_523.py"),
        workload,
        SHAPE,
        str(size),
        str(rounds),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return float(done.stdout.split()[-1])


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_against_5_23(benchmark, workload: str) -> None:
    size = WORKLOADS[workload]
    module = respc.compile_template(template(SHAPE), target="5.23")
    if workload == "stream-4":
        chunks = chunks_of(response(SHAPE, size))
        run, args, per = run_stream, (lambda: module.ResponseParser(""), chunks), len(chunks)
    elif workload == "parse":
        text = response(SHAPE, size)
        run, args, per = (lambda t: module.parse_response(t, prefix="")), (text,), 1
    else:
        texts = [response(SHAPE, size, seed) for seed in range(1000)]
        run, args, per = (lambda ts: [module.parse_response(t, prefix="") for t in ts]), (texts,), 1
    benchmark.group = f"5.23 {workload} {SHAPE} {size}"
    benchmark.extra_info.update(shape=SHAPE, size=size, workload=f"{workload}@5.23", impl="respc", chunks=per)
    benchmark.pedantic(run, args, rounds=15, iterations=1)
    if not benchmark.disabled:
        benchmark.extra_info["oracle_median"] = _oracle_seconds(workload, size, 15)
