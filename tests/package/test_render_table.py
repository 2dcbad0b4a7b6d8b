"""`benchmarks/render_table.py` writes each speed table between its own markers, in the file that holds
them: the README gets the per-template targets, docs/ the rest."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
BENCHMARKS = ROOT / "benchmarks"
MACHINE = {"cpu": {"brand_raw": "Test CPU"}, "python_implementation": "CPython", "python_version": "3.11.7"}


def _bench(name: str, seconds: float = 0.001, /, **info: object) -> dict:
    """A benchmark of pytest-benchmark's JSON: its median time and its `extra_info`."""
    return {"name": name, "stats": {"median": seconds}, "extra_info": info}


def _run_json(tmp_path: Path, benchmarks: list[dict]) -> Path:
    path = tmp_path / "run.json"
    run = {"datetime": "2026-12-01T00:00:00", "machine_info": MACHINE, "benchmarks": benchmarks}
    path.write_text(json.dumps(run), encoding="utf-8")
    return path


def _render(run: Path, *files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "render_table.py", str(run), "--write", *map(str, files)],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
    )


def _between(text: str, name: str) -> str:
    return text.split(f"<!-- {name}:start -->\n")[1].split(f"<!-- {name}:end -->")[0]


FULL_RUN = [
    *(
        _bench(
            f"test_stream[{impl}]",
            median,
            workload="stream-4",
            shape="smollm",
            size=10_000,
            impl=impl,
            chunks=2500,
        )
        for impl, median in (("respc", 0.0005), ("transformers", 0.005), ("floor", 0.0002))
    ),
    _bench(
        "test_pairs",
        workload="paired",
        shape="smollm",
        ratio="stream 10k speed-up",
        ratios=[10.0] * 7,
        median=10.5,
    ),
    _bench(
        "test_pairs",
        workload="paired",
        shape="kv-lines",
        ratio="content parser speed-up",
        ratios=[5.0] * 7,
        median=4.9,
    ),
    _bench("test_compile_template[smollm]", 0.054, shape="smollm"),
    _bench(
        "test_wire",
        workload="wire",
        shape="smollm",
        output="events",
        wire="chat",
        median=1.25,
        ratios=[1.2] * 15,
    ),
    _bench(
        "test_deltastream_on_short_samples",
        workload="deltas-short",
        preset="qwen3",
        responses=8,
        deltas=311,
        own=[1.5] * 9,
        median=1.55,
        parser_us_per_response=40.8,
    ),
    _bench(
        "test_scale",
        workload="scale",
        engine="local",
        workers=1,
        format="jsonl",
        records=200_000,
        records_per_second=60_000,
        startup_seconds=0.1,
        seconds=3.5,
    ),
]


def test_each_table_goes_between_its_markers_in_the_file_that_holds_them(tmp_path: Path) -> None:
    readme, docs = tmp_path / "README.md", tmp_path / "benchmarks.md"
    readme.write_text(
        "# intro\n<!-- speed-table:start -->\nold\n<!-- speed-table:end -->\nafter\n", encoding="utf-8"
    )
    names = (
        "side-by-side-table",
        "content-table",
        "cost-table",
        "wire-table",
        "deltas-short-table",
        "scale-table",
    )
    docs.write_text("".join(f"<!-- {n}:start -->\nold\n<!-- {n}:end -->\n" for n in names), encoding="utf-8")
    done = _render(_run_json(tmp_path, FULL_RUN), readme, docs)
    assert done.returncode == 0, done.stderr
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# intro\n") and text.endswith("after\n")
    targets = _between(text, "speed-table")
    assert targets.startswith(
        "Measured 2026-12-01 on Test CPU, CPython 3.11.7. Each figure is the median of 7 "
    )
    assert "| smollm | 10.5x |" in targets and "kv-lines" not in targets and "#" not in targets
    docs_text = docs.read_text(encoding="utf-8")
    assert (
        "| stream, 4-char chunks (µs/chunk) | smollm | 10,000 | 0.2 | 2 | 10.0x | 0.08 | 2.5x |"
        in _between(docs_text, "side-by-side-table")
    )
    assert "| kv-lines | 4.9x |" in _between(docs_text, "content-table")
    assert "| compile smollm (incl. black) | 54 ms |" in _between(docs_text, "cost-table")
    assert "| smollm | 1.25 |" in _between(docs_text, "wire-table")
    assert "| local | 1 | jsonl | 60,000 | 0.1 | 3.5 |" in _between(docs_text, "scale-table")
    assert "| qwen3 | 8 | 311 | 1.55 (40.8) |" in _between(docs_text, "deltas-short-table")


def test_a_table_without_data_is_left_alone_and_one_without_markers_fails(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    stale = "<!-- speed-table:start -->\nold\n<!-- speed-table:end -->\n"
    readme.write_text(stale + "<!-- wire-table:start -->\nold\n<!-- wire-table:end -->\n", encoding="utf-8")
    wire_only = [bench for bench in FULL_RUN if bench["extra_info"].get("workload") == "wire"]
    assert _render(_run_json(tmp_path, wire_only), readme).returncode == 0
    assert readme.read_text(encoding="utf-8").startswith(stale)
    assert "| smollm | 1.25 |" in _between(readme.read_text(encoding="utf-8"), "wire-table")
    done = _render(_run_json(tmp_path, FULL_RUN), readme)
    assert done.returncode == 1 and "no <!-- side-by-side-table:start -->" in done.stderr
    assert "| smollm | 1.25 |" in readme.read_text(encoding="utf-8") and "old" in readme.read_text(
        encoding="utf-8"
    )


def test_the_repository_holds_every_table_once() -> None:
    """The files `--write` writes by default hold each table's markers exactly once between them."""
    sys.path.insert(0, str(BENCHMARKS))
    from render_table import RENDERERS

    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))]
    for name in RENDERERS:
        pattern = re.compile(f"<!-- {name}:start -->\n.*?<!-- {name}:end -->", re.DOTALL)
        assert sum(len(pattern.findall(text)) for text in texts) == 1, name
    assert "speed-table:start" in texts[0]
