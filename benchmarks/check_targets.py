"""Fail when a speed target is missed by more than the tolerance: the gate CI runs after test_targets.py.

    python -m pytest benchmarks/test_targets.py --benchmark-only --benchmark-json=.benchmarks/targets.json
    python benchmarks/check_targets.py .benchmarks/targets.json [--tolerance 0.2]
    python benchmarks/check_targets.py .benchmarks/presets.json   # the presets' floors (test_presets.py)
    python benchmarks/check_targets.py .benchmarks/deltas.json    # DeltaStream's ceilings (test_deltastream.py)

Each enforced ratio of `targets.py` must reach its bound within the tolerance (default 20%: a speed-up
target of 8x passes at 6.4x or more, a flatness bound of 1.3 at 1.56 or less). The ratios are medians of
paired rounds, which move by about 5% from run to run on one machine; the margin leaves room for a CI
machine slower or busier than the one the README's table was measured on, while a real regression (a
lost fast path costs 2-5x) still fails. Exit code 1 lists what missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from targets import DELTAS_AIM, DELTAS_CEILINGS, KIND, PRESET_AIMS, PRESET_FLOORS, TARGETS, enforced, verdict


def check(run: dict, tolerance: float) -> list[str]:
    """One line per enforced ratio and template; a line starting with "MISSED" fails the gate (a ratio
    the run lacks, too: a benchmark that silently disappeared must not pass)."""
    lines = []
    found = set()
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        name = info.get("ratio")
        if info.get("workload") != "paired" or name not in TARGETS or not enforced(name, info["shape"]):
            continue
        found.add((name, info["shape"]))
        bound, met = verdict(name, info["shape"], info["median"], tolerance)
        sign = "≥" if TARGETS[name][0] == ">=" else "≤"
        status = "ok" if met else "MISSED"
        lines.append(f"{status:6} {info['shape']:8} {name}: {info['median']:.2f} (target {sign} {bound:g})")
    if found:
        for name in TARGETS:
            for shape in KIND:
                if enforced(name, shape) and (name, shape) not in found:
                    lines.append(f"MISSED {shape:8} {name}: not measured in this run")
    return sorted(lines, key=lambda line: (not line.startswith("MISSED"), line))


def check_presets(run: dict, tolerance: float) -> list[str]:
    """One line per preset and target: "MISSED" (fails the gate) where a ratio of `PRESET_FLOORS` is below
    its floor by more than the tolerance, else "ok", with how many ratios reach the aims of issue #31."""
    lines = []
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") != "preset-paired":
            continue
        ratios, name = info["ratios"], f"{info['preset']} {info['target']}"
        low = [
            f"{key} {ratios.get(key, 0):.2f} (floor {floor:g}x)"
            for key, floor in PRESET_FLOORS.items()
            if ratios.get(key, 0) < floor * (1 - tolerance)
        ]
        aimed = sum(ratios.get(key, 0) >= aim for key, aim in PRESET_AIMS.items())
        if low:
            lines.append(f"MISSED {name}: {', '.join(low)}")
        else:
            lines.append(f"ok     {name}: floors met; {aimed} of {len(PRESET_AIMS)} ratios reach the aims")
    return sorted(lines, key=lambda line: (not line.startswith("MISSED"), line))


def check_deltas(run: dict, tolerance: float) -> list[str]:
    """One line per row of `test_deltastream.py`: "MISSED" where DeltaStream's own cost over the parser's is
    above its row's ceiling (`DELTAS_CEILINGS`) by more than the tolerance, or a row kind is missing."""
    lines = []
    seen = set()
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") == "deltas":
            row, name = info["kind"], f"{info['kind']} {info['size']:,} chars"
        elif info.get("workload") == "deltas-short":
            row, name = "short", f"{info['preset']} short requests"
        else:
            continue
        seen.add(row)
        ceiling, own = DELTAS_CEILINGS[row], info["median"]
        status = "MISSED" if own > ceiling * (1 + tolerance) else "ok"
        aim = " (reaches the aim)" if own <= DELTAS_AIM else ""
        lines.append(f"{status:6} DeltaStream {name}: own cost {own:.2f} (ceiling {ceiling:g}){aim}")
    if seen:
        lines += [
            f"MISSED DeltaStream {row}: not measured in this run"
            for row in DELTAS_CEILINGS
            if row not in seen
        ]
    return sorted(lines, key=lambda line: (not line.startswith("MISSED"), line))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run",
        type=Path,
        help="pytest-benchmark JSON of test_targets.py, test_presets.py or test_deltastream.py",
    )
    parser.add_argument("--tolerance", type=float, default=0.2, help="allowed shortfall (default: 0.2)")
    args = parser.parse_args()
    run = json.loads(args.run.read_text(encoding="utf-8"))
    lines = (
        check(run, args.tolerance) + check_presets(run, args.tolerance) + check_deltas(run, args.tolerance)
    )
    if not lines:
        print(f"{args.run}: no paired target ratios in this run", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 1 if any(line.startswith("MISSED") for line in lines) else 0


if __name__ == "__main__":
    raise SystemExit(main())
