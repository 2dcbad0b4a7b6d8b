"""`benchmarks/feed_categories.py`, the tool that tells where a preset's streaming time goes, runs: its
table of categories, and `--slowest`'s list of the feeds furthest from 4x (in both chunkings)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def _run(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "feed_categories.py", *args],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_categories_of_a_presets_feeds_add_up() -> None:
    row, mean = _run("qwen3", "--rounds", "1")
    assert row.startswith("qwen3") and mean.startswith("mean")
    shares = [float(share) for share in re.findall(r" (\d+)%/", row)]
    assert "commit" in row and "fast" in row and 97 <= sum(shares) <= 103  # (each rounded)


@pytest.mark.parametrize("chunks", ["4", "token"])
def test_slowest_lists_feeds_with_both_times(chunks: str) -> None:
    rows = _run("phi4_mini", "minimax_m2", "--slowest", "4", "--rounds", "3", "--chunks", chunks)
    assert 1 <= len(rows) <= 4
    deficits = []
    for row in rows:
        found = re.match(
            r"\s*(-?[\d.]+) (phi4_mini|minimax_m2)\s+s\d\d f\s*\d+ \S+\s+respc\s+([\d.]+) µs", row
        )
        assert found, row
        deficits.append(float(found.group(1)))
        assert "transformers" in row
    assert deficits == sorted(deficits, reverse=True)
