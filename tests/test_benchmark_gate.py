"""The CI speed gate (`benchmarks/check_targets.py`) fails a run that misses a target by more than the
tolerance, and passes one within it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def _run(tmp_path: Path, medians: dict[tuple[str, str], float], *extra: str) -> subprocess.CompletedProcess:
    run = {
        "benchmarks": [
            {"extra_info": {"workload": "paired", "shape": shape, "ratio": name, "median": median}}
            for (shape, name), median in medians.items()
        ]
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "check_targets.py", str(path), *extra],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
    )


def test_a_run_within_the_tolerance_passes(tmp_path: Path) -> None:
    done = _run(
        tmp_path,
        {
            ("smollm", "stream 10k speed-up"): 6.5,  # 8x target, 20% tolerance: 6.4 passes
            ("qwen3_5", "parse 10k speed-up"): 3.3,  # 4x target: 3.2 passes
            ("gemma4", "stream µs/chunk 1M ÷ 10k"): 1.5,  # at most 1.3: 1.56 passes
            ("gpt_oss", "stream 10k respc ÷ floor"): 9.0,  # an aim, never enforced
        },
    )
    assert done.returncode == 0, done.stdout
    assert done.stdout.count("\n") == 3 and "MISSED" not in done.stdout


def test_a_missed_target_fails_and_is_named(tmp_path: Path) -> None:
    done = _run(tmp_path, {("smollm", "stream 10k speed-up"): 6.3, ("qwen3_5", "parse 10k speed-up"): 17.0})
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "MISSED smollm   stream 10k speed-up: 6.30 (target ≥ 8)"
    assert _run(tmp_path, {("smollm", "stream 10k speed-up"): 6.3}, "--tolerance", "0.25").returncode == 0
    assert _run(tmp_path, {("gemma4", "stream µs/chunk 1M ÷ 10k"): 1.6}).returncode == 1


def test_a_run_without_target_ratios_fails(tmp_path: Path) -> None:
    assert _run(tmp_path, {}).returncode == 1
