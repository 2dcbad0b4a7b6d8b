"""The CI speed gate (`benchmarks/check_targets.py`) fails a run that misses a target by more than the
tolerance, and passes one within it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


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


def _full(**changes: float) -> dict[tuple[str, str], float]:
    """A run meeting every enforced target comfortably, with `changes` (keyed "shape|ratio") applied."""
    sys.path.insert(0, str(BENCHMARKS))
    from targets import KIND, TARGETS

    medians = {}
    for name, (comparison, bounds, _enforced) in TARGETS.items():
        for shape, kind in KIND.items():
            if kind in bounds:
                medians[shape, name] = bounds[kind] * (2 if comparison == ">=" else 0.5)
    for key, value in changes.items():
        shape, name = key.split("|")
        medians[shape, name] = value
    return medians


def test_a_run_within_the_tolerance_passes(tmp_path: Path) -> None:
    done = _run(
        tmp_path,
        _full(
            **{
                "smollm|stream 10k speed-up": 6.5,  # 8x target, 20% tolerance: 6.4 passes
                "qwen3_5|parse 10k speed-up": 4.1,  # 5x target: 4.0 passes
                "gemma4|stream µs/chunk 1M ÷ 10k": 1.5,  # at most 1.3: 1.56 passes
                "gpt_oss|stream 10k respc ÷ floor": 9.0,  # an aim, never enforced
            }
        ),
    )
    assert done.returncode == 0, done.stdout
    sys.path.insert(0, str(BENCHMARKS))
    from targets import KIND, TARGETS, enforced

    checked = sum(enforced(name, shape) for name in TARGETS for shape in KIND)
    assert "MISSED" not in done.stdout and done.stdout.count("\n") == checked


def test_a_missed_target_fails_and_is_named(tmp_path: Path) -> None:
    done = _run(tmp_path, _full(**{"smollm|stream 10k speed-up": 6.3}))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "MISSED smollm   stream 10k speed-up: 6.30 (target ≥ 8)"
    assert _run(tmp_path, _full(**{"smollm|stream 10k speed-up": 6.3}), "--tolerance", "0.25").returncode == 0
    assert _run(tmp_path, _full(**{"gemma4|stream µs/chunk 1M ÷ 10k": 1.6})).returncode == 1


def test_a_target_the_run_lacks_fails(tmp_path: Path) -> None:
    medians = _full()
    del medians["qwen3_5", "parse 10k speed-up"]
    done = _run(tmp_path, medians)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == "MISSED qwen3_5  parse 10k speed-up: not measured in this run"


def test_a_run_without_target_ratios_fails(tmp_path: Path) -> None:
    assert _run(tmp_path, {}).returncode == 1


def _presets_run(tmp_path: Path, ratios: dict[str, float]) -> subprocess.CompletedProcess:
    run = {
        "benchmarks": [
            {"extra_info": {"workload": "preset-paired", "preset": name, "target": "5.24", "ratios": ratios}}
            for name in ("qwen3", "llama3_json")
        ]
    }
    path = tmp_path / "presets.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "check_targets.py", str(path)], cwd=BENCHMARKS, capture_output=True, text=True
    )


def test_the_preset_floor_fails_a_stream_near_transformers_speed(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    from targets import PRESET_FLOORS

    fine = {key: 4.5 if key.startswith("stream") else 6.5 for key in PRESET_FLOORS}
    passed = _presets_run(tmp_path, fine)
    assert passed.returncode == 0, passed.stdout
    assert "ok     qwen3 5.24: floors met; 9 of 9 ratios reach the aims" in passed.stdout
    whole = _presets_run(tmp_path, {**fine, "parse short": 4.5})  # whole messages: 6x, less 20%
    assert whole.returncode == 1
    assert "MISSED llama3_json 5.24: parse short 4.50 (floor 6x)" in whole.stdout, whole.stdout
    within = _presets_run(tmp_path, {**fine, "stream-4 2000": 2.85})  # 3.5x less 20%: 2.8x passes
    assert within.returncode == 0, within.stdout
    slow = _presets_run(tmp_path, {**fine, "stream-token 500": 2.3})  # 3x less 20%: 2.4x
    assert slow.returncode == 1
    assert slow.stdout.startswith("MISSED llama3_json 5.24: stream-token 500 2.30 (floor 3x)"), slow.stdout
    short = _presets_run(tmp_path, {**fine, "stream-4 short": 1.9})  # 2.5x less 20%: 2x
    assert short.returncode == 1 and "stream-4 short 1.90 (floor 2.5x)" in short.stdout, short.stdout
    missing = _presets_run(tmp_path, {key: 4.5 for key in list(PRESET_FLOORS)[1:]})
    assert missing.returncode == 1  # a floor the run did not measure counts as missed


def _deltas_run(tmp_path: Path, own: dict[str, float]) -> subprocess.CompletedProcess:
    """A run of test_deltastream.py: a per-delta row of each kind at 8,000 characters, one short row."""
    benchmarks = [
        {"extra_info": {"workload": "deltas", "kind": kind, "size": 8000, "median": median}}
        for kind, median in own.items()
        if kind != "short"
    ]
    if "short" in own:
        benchmarks.append(
            {"extra_info": {"workload": "deltas-short", "preset": "qwen3", "median": own["short"]}}
        )
    path = tmp_path / "deltas.json"
    path.write_text(json.dumps({"benchmarks": benchmarks}), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "check_targets.py", str(path)], cwd=BENCHMARKS, capture_output=True, text=True
    )


def test_deltastream_ceilings_fail_a_stream_that_lost_its_fast_paths(tmp_path: Path) -> None:
    fine = {"content": 0.3, "reasoning": 0.6, "json args": 1.7, "xml args": 1.8, "short": 1.8}
    passed = _deltas_run(tmp_path, fine)
    assert passed.returncode == 0, passed.stdout
    assert (
        "ok     DeltaStream content 8,000 chars: own cost 0.30 (ceiling 0.6) (reaches the aim)"
        in passed.stdout
    )
    within = _deltas_run(tmp_path, {**fine, "json args": 2.35})  # 2.0 and 20%: 2.4 passes
    assert within.returncode == 0, within.stdout
    args = _deltas_run(tmp_path, {**fine, "xml args": 2.5})
    assert args.returncode == 1 and "MISSED DeltaStream xml args 8,000 chars" in args.stdout
    slow = _deltas_run(tmp_path, {**fine, "reasoning": 1.3})  # 1.0 and 20%: 1.2
    assert slow.returncode == 1
    assert slow.stdout.startswith("MISSED DeltaStream reasoning 8,000 chars: own cost 1.30"), slow.stdout
    short = _deltas_run(tmp_path, {**fine, "short": 3.1})
    assert short.returncode == 1 and "MISSED DeltaStream qwen3 short requests" in short.stdout
    missing = _deltas_run(tmp_path, {k: v for k, v in fine.items() if k != "xml args"})
    assert missing.returncode == 1 and "MISSED DeltaStream xml args: not measured" in missing.stdout
