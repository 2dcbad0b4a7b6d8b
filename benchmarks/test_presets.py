"""Every shipped preset, side by side with transformers, on its realistic samples (issue #31).

    python -m pytest benchmarks/test_presets.py --benchmark-only --benchmark-json=.benchmarks/presets.json
    python benchmarks/render_table.py .benchmarks/presets.json --write   # README.md, docs/benchmarks.md

benchmarks/preset_speed.py builds the workloads and does the paired timing; here each preset is one
benchmark per target (5.24 in process; 5.23 in a process with the 5.23.0 oracle first on its path),
whose `extra_info` holds the median ratio of each workload and length. Untimed (`--benchmark-disable`,
as CI runs the benchmarks) it checks that respc and transformers agree on every workload instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from preset_speed import measure, presets, runs

from respc.registry import preset_info

ROOT = Path(__file__).parent.parent


def _in_523(*args: str) -> list[dict]:
    """preset_speed.py's JSON lines, run with transformers 5.23.0 first on the path."""
    from support.oracles import install

    paths = [str(install("5.23")), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "preset_speed.py"), *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths))),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@cache
def _checked_523() -> frozenset[str]:
    """The presets whose workloads agree with transformers 5.23.0 (one process checks them all)."""
    names = [name for name in presets() if preset_info(name)["min_target"] == "5.23"]
    return frozenset(line["preset"] for line in _in_523("--check-only", *names))


@pytest.mark.parametrize("target", ["5.24", "5.23"])
@pytest.mark.parametrize("preset", presets())
def test_preset_speedup(benchmark, preset: str, target: str) -> None:
    if target == "5.23" and preset_info(preset)["min_target"] != "5.23":
        pytest.skip(f"{preset} needs transformers {preset_info(preset)['min_target']}")
    benchmark.group = "presets: paired ratios (time of the whole measurement; see extra_info)"
    if benchmark.disabled:  # CI's untimed run: the workloads agree, nothing is timed
        if target == "5.24":
            runs(preset)
        else:
            assert preset in _checked_523()
        return
    found = benchmark.pedantic(
        lambda: measure(preset) if target == "5.24" else _in_523(preset)[0], rounds=1, iterations=1
    )
    benchmark.extra_info.update(workload="preset-paired", **found)
