"""Render a pytest-benchmark JSON run as the speed tables of the documentation (never typed by hand).

    python benchmarks/render_table.py .benchmarks/run.json            # print the tables
    python benchmarks/render_table.py .benchmarks/run.json --write    # README.md and docs/*.md

Each table lives between a pair of markers, `<!-- NAME:start -->` and `<!-- NAME:end -->`, in one file:

- `speed-table` (README.md): the speed-up over transformers per template, the median of paired rounds
  (benchmarks/test_targets.py);
- `side-by-side-table` (docs/benchmarks.md): respc, transformers and the floor, medians of one run
  (benchmarks/test_speed.py, test_release_523.py);
- `content-table` (docs/benchmarks.md): the content parsers' paired speed-ups (test_targets.py);
- `cost-table` (docs/benchmarks.md): imports, compiles, memory and `respc parse` throughput
  (test_costs.py, test_batch_throughput.py);
- `wire-table` (docs/serving.md): the wire formats' cost over `DeltaStream` (test_wire_overhead.py);
- `deltas-table` (docs/serving.md): `DeltaStream`'s own cost over the parser's (test_deltastream.py);
- `deltas-short-table` (docs/serving.md): the same over each preset's short samples, whole requests;
- `scale-table` (docs/batch.md): the engines of `respc parse` at scale (test_scale.py);
- `presets-summary` (README.md): every shipped preset's speed-up over transformers, spread over the
  presets per workload and length (test_presets.py);
- `presets-table` (docs/benchmarks.md): the same, one row per preset and target (test_presets.py).

`--write FILE...` (default: README.md and docs/*.md) replaces each table the run has data for in every
given file that holds its markers; a table whose markers none of the files holds is an error.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

from targets import CONTENT, TARGETS, TEMPLATES, describe

ROOT = Path(__file__).parent.parent
WORKLOADS = {
    "stream-4": "stream, 4-char chunks (µs/chunk)",
    "stream-token": "stream, one BPE token per feed (µs/chunk)",
    "parse": "parse_response, whole message (ms)",
    "batch-1000": "1,000 short responses (ms)",
    # respc --target 5.23 against transformers 5.23.0 (benchmarks/test_release_523.py)
    "stream-4@5.23": "stream, 4-char chunks (µs/chunk), target 5.23 vs transformers 5.23.0",
    "parse@5.23": "parse_response, whole message (ms), target 5.23 vs transformers 5.23.0",
    "batch-1000@5.23": "1,000 short responses (ms), target 5.23 vs transformers 5.23.0",
}


def _cell(seconds: float | None, per: int, scale: float) -> str:
    return "—" if seconds is None else f"{seconds / per * scale:.3g}"


def _rows(run: dict) -> dict[tuple, dict]:
    """The side-by-side medians by (workload, shape, size): {impl: seconds, "chunks": n}."""
    rows: dict[tuple, dict] = defaultdict(dict)
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") not in WORKLOADS:
            continue  # fixed costs and `respc parse` throughput: see render_costs
        key = (info["workload"], info["shape"], info["size"])
        rows[key][info["impl"]] = bench["stats"]["median"]
        rows[key]["chunks"] = info.get("chunks", 1)
        if "oracle_median" in info:  # the oracle timed in a process of its own (an older release)
            rows[key]["transformers"] = info["oracle_median"]
    return rows


def _measured(run: dict) -> str:
    """When and where the run was measured: "Measured 2026-12-01 on AMD EPYC, CPython 3.11.7"."""
    machine = run["machine_info"]
    cpu = machine.get("cpu", {}).get("brand_raw", machine.get("processor", "?"))
    return f"Measured {run['datetime'][:10]} on {cpu}, {machine['python_implementation']} {machine['python_version']}"


def render_side_by_side(run: dict) -> str:
    """respc, transformers and the floor per workload, template and size: medians of one run."""
    rows = _rows(run)
    if not rows:
        return ""
    lines = [
        f"{_measured(run)}; medians of one run, respc and "
        "transformers 5.24.0 side by side (the rows marked 5.23: respc's 5.23 target and transformers 5.23.0). "
        "Floor: the bare work the API requires (iterating the chunks and building one event each; one "
        "`str.find` pass plus `json.loads` for a whole message).",
        "",
        "| workload | template | size | respc | transformers | speed-up | floor | respc / floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    order = list(WORKLOADS)
    for (workload, shape, size), cells in sorted(
        rows.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1], kv[0][2])
    ):
        per, scale = (cells["chunks"], 1e6) if workload.startswith("stream") else (1, 1e3)
        ours, theirs, floor = cells.get("respc"), cells.get("transformers"), cells.get("floor")
        speedup = f"{theirs / ours:.1f}x" if ours and theirs else "—"
        versus = f"{ours / floor:.1f}x" if ours and floor else "—"
        lines.append(
            f"| {WORKLOADS[workload]} | {shape} | {size:,} | {_cell(ours, per, scale)} | {_cell(theirs, per, scale)} "
            f"| {speedup} | {_cell(floor, per, scale)} | {versus} |"
        )
    return "\n".join(lines) + "\n"


PAIRED = tuple((name, describe(name)) for name in TARGETS)  # ratio names test_targets.py writes


def _paired(run: dict) -> dict[tuple[str, str], dict]:
    """The paired ratios test_targets.py recorded, by (shape, ratio name)."""
    paired: dict[tuple[str, str], dict] = {}
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") == "paired":
            paired[(info["shape"], info["ratio"])] = info
    return paired


def _rounds(infos: list[dict]) -> str:
    counts = sorted({len(info["ratios"]) for info in infos})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def _paired_table(paired: dict[tuple[str, str], dict], title: str, shapes: tuple[str, ...]) -> list[str]:
    """One row per shape, one column per ratio with a target for them (the target in its header)."""
    names = [(n, t) for n, t in PAIRED if any((shape, n) in paired for shape in shapes)]
    if not names:
        return []
    lines = [
        f"| {title} | " + " | ".join(f"{name} ({target})" for name, target in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for shape in shapes:
        if not any((shape, name) in paired for name, _ in names):
            continue
        cells = []
        for name, _ in names:
            info = paired.get((shape, name))
            unit = "x" if "speed-up" in name or "floor" in name else ""
            cells.append("—" if info is None else f"{info['median']:.{1 if unit else 2}f}{unit}")
        lines.append(f"| {shape} | " + " | ".join(cells) + " |")
    return lines


def render_targets(run: dict) -> str:
    """The speed targets per template (README.md): medians of paired rounds (test_targets.py) when the run
    has them, else ratios of the side-by-side medians."""
    paired = {key: info for key, info in _paired(run).items() if key[0] in TEMPLATES}
    if paired:
        table = _paired_table(paired, "template", TEMPLATES)
        intro = (
            f"{_measured(run)}. Each figure is the median of {_rounds(list(paired.values()))} paired rounds, "
            "each timing respc and transformers 5.24.0 back to back (`benchmarks/test_targets.py`), so that the "
            "machine's drift cancels; the header gives each target. A new parser for every response; 500 and "
            "2k are characters."
        )
        return "\n".join([intro, "", *table]) + "\n"
    rows = _rows(run)
    shapes = sorted({shape for _, shape, _ in rows})
    if not shapes:
        return ""
    lines = [
        f"{_measured(run)}; ratios of the side-by-side medians (a run without `benchmarks/test_targets.py`).",
        "",
        "| template | stream 10k speed-up | parse 10k speed-up | stream µs/chunk, 1M ÷ 10k |",
        "|---|---:|---:|---:|",
    ]
    for shape in shapes:
        cells = []
        for workload in ("stream-4", "parse"):
            got = rows.get((workload, shape, 10_000), {})
            ours, theirs = got.get("respc"), got.get("transformers")
            cells.append(f"{theirs / ours:.1f}x" if ours and theirs else "—")
        small, large = rows.get(("stream-4", shape, 10_000), {}), rows.get(("stream-4", shape, 1_000_000), {})
        if small.get("respc") and large.get("respc"):
            flat = (large["respc"] / large["chunks"]) / (small["respc"] / small["chunks"])
            cells.append(f"{flat:.2f}")
        else:
            cells.append("—")
        lines.append(f"| {shape} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_content(run: dict) -> str:
    """The content parsers' speed-ups on their own: medians of paired rounds (test_targets.py)."""
    paired = {key: info for key, info in _paired(run).items() if key[0] in CONTENT}
    if not paired:
        return ""
    intro = (
        f"The content parsers on their own, against transformers 5.24.0's: the median of "
        f"{_rounds(list(paired.values()))} paired rounds (`benchmarks/test_targets.py`)."
    )
    return "\n".join([intro, "", *_paired_table(paired, "content parser", CONTENT)]) + "\n"


def render_costs(run: dict) -> str:
    """Import, compile and memory costs from benchmarks/test_costs.py, when the run has them."""
    lines = []
    for bench in run["benchmarks"]:
        info, name = bench["extra_info"], bench["name"]
        if name.startswith("test_import_generated_module"):
            seconds = sorted(info["seconds"])
            regex = "imports `regex`" if info.get("imports_regex") else "without `regex`"
            lines.append(
                f"| import `respc.generated.{info['preset']}` ({regex}) | {seconds[len(seconds) // 2] * 1e3:.1f} ms |"
            )
            if info.get("uses_regex") and not info.get("imports_regex") and "warm_up_seconds" in info:
                warm = sorted(info["warm_up_seconds"])
                lines.append(
                    f"| import `respc.generated.{info['preset']}`, then its first use (`warm_up()`: imports "
                    f"`regex`, compiles the patterns) | +{warm[len(warm) // 2] * 1e3:.1f} ms |"
                )
        elif name.startswith("test_compile_template"):
            lines.append(
                f"| compile {info['shape']} (incl. black) | {bench['stats']['median'] * 1e3:.0f} ms |"
            )
        elif name.startswith("test_peak_memory_streaming_1m"):
            lines.append(
                f"| peak memory streaming 1M chars, {info['shape']} | {info['ratio']:.2f}x the text |"
            )
        elif info.get("workload") == "batch-parse" and "records_per_second_per_worker" in info:
            scaling = f" (x{info['scaling']} over 1 worker)" if "scaling" in info else ""
            lines.append(
                f"| `respc parse`, {info['records']:,} short {info['shape']} records, {info['workers']} "
                f"worker(s) | {info['records_per_second_per_worker']:,} records/s per worker{scaling} |"
            )
    if not lines:
        return ""
    header = [
        "| fixed cost or throughput (imports: fresh interpreter, bytecode cached) | median |",
        "|---|---:|",
    ]
    return "\n".join(header + sorted(lines)) + "\n"


def render_wire(run: dict) -> str:
    """The wire formats' time over the bare DeltaStream's (test_wire_overhead.py), per template."""
    medians: dict[tuple[str, str, str], float] = {}
    rounds = set()
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") == "wire":
            medians[(info["shape"], info["output"], info["wire"])] = info["median"]
            rounds.add(len(info["ratios"]))
    if not medians:
        return ""
    columns = sorted({(output, wire) for _, output, wire in medians})
    lines = [
        f"The wire formats' cost over the bare `DeltaStream` on the same stream (10k characters in 4-character "
        f"chunks), the median of {'/'.join(map(str, sorted(rounds)))} paired rounds "
        "(`benchmarks/test_wire_overhead.py`). Events: the event dicts, against the deltas (the aim is at "
        "most 1.3); SSE: the server-sent-event text, against each delta sent as a `data:` line.",
        "",
        "| template | " + " | ".join(f"{wire} {output}" for output, wire in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for shape in sorted({shape for shape, _, _ in medians}):
        cells = [medians.get((shape, output, wire)) for output, wire in columns]
        lines.append(f"| {shape} | " + " | ".join("—" if c is None else f"{c:.2f}" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_deltas(run: dict) -> str:
    """DeltaStream's own time over the parser's, per workload and size (test_deltastream.py)."""
    medians: dict[tuple[str, int], float] = {}
    parser_us: dict[tuple[str, int], float] = {}
    rounds = set()
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") == "deltas":
            medians[info["kind"], info["size"]] = info["median"]
            parser_us[info["kind"], info["size"]] = info["parser_us_per_delta"]
            rounds.add(len(info["own"]))
    if not medians:
        return ""
    sizes = sorted({size for _, size in medians})
    kinds = list(dict.fromkeys(kind for kind, _ in medians))
    lines = [
        "`DeltaStream`'s own time over the parser's, per delta (one BPE token a feed), the median of "
        f"{'/'.join(map(str, sorted(rounds)))} paired rounds (`benchmarks/test_deltastream.py`); in "
        "brackets, the parser's own µs per delta. Issue #31 aims at 0.5 at most.",
        "",
        "| workload | " + " | ".join(f"{size:,} chars" for size in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for kind in kinds:
        cells = [
            "—" if (kind, size) not in medians else f"{medians[kind, size]:.2f} ({parser_us[kind, size]:.2f})"
            for size in sizes
        ]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render_deltas_short(run: dict) -> str:
    """DeltaStream's own time over the parser's on each preset's short samples (test_deltastream.py)."""
    rows = [
        bench["extra_info"]
        for bench in run["benchmarks"]
        if bench["extra_info"].get("workload") == "deltas-short"
    ]
    if not rows:
        return ""
    rounds = sorted({len(info["own"]) for info in rows})
    lines = [
        "The same on whole requests: each preset's realistic samples, a new parser and stream per response "
        f"(the median of {'/'.join(map(str, rounds))} paired rounds); in brackets, the parser's own µs per "
        "response.",
        "",
        "| preset | responses | deltas | own cost |",
        "|---|---:|---:|---:|",
    ]
    for info in sorted(rows, key=lambda info: info["preset"]):
        lines.append(
            f"| {info['preset']} | {info['responses']} | {info['deltas']} | "
            f"{info['median']:.2f} ({info['parser_us_per_response']:.1f}) |"
        )
    return "\n".join(lines) + "\n"


def render_scale(run: dict) -> str:
    """Records per second and start-up cost per engine, and peak memory (benchmarks/test_scale.py)."""
    engines, memory, oracle = [], [], None
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        if info.get("workload") == "scale" and "records_per_second" in info:
            engines.append(info)
        elif info.get("workload") == "scale-memory" and "peaks_mib" in info:
            memory.append(info)
        elif info.get("workload") == "scale-oracle" and "records_per_second" in info:
            oracle = info["records_per_second"]
    if not engines:
        return ""
    records = engines[0]["records"]
    lines = [
        f"`respc parse --preset qwen3` on {records:,} Qwen3 outputs of about 1,000 characters (1 in 20 "
        "malformed), input and output in the same format, each run a fresh process on this machine (2 CPUs), "
        "one run each (`benchmarks/test_scale.py`). Records/s: the per-record cost, from the difference "
        f"with a run on {1000:,} records; start-up: the rest (imports, worker pool, Ray cluster start and stop).",
        "",
        "| engine | workers / actors | format | records/s | start-up (s) | whole run (s) |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for info in engines:
        lines.append(
            f"| {info['engine']} | {info['workers']} | {info['format']} | {info['records_per_second']:,} "
            f"| {info['startup_seconds']:.1f} | {info['seconds']:.1f} |"
        )
    if oracle:
        lines.append(
            f"| transformers 5.24.0 `parse_response` loop (reference) | 1 | in memory | {oracle:,} | — | — |"
        )
    if memory:
        lines += [
            "",
            "| local engine, peak memory (one process) | "
            + " | ".join(f"{int(k):,} records" for k in memory[0]["peaks_mib"])
            + " | ratio |",
            "|---|---:|---:|---:|",
        ]
        for info in memory:
            peaks = " | ".join(f"{v} MiB" for v in info["peaks_mib"].values())
            lines.append(f"| {info['format']} in and out | {peaks} | {info['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


PRESET_COLUMNS = [
    (workload, length)
    for workload in ("stream-4", "stream-token", "parse")
    for length in ("short", "500", "2000")
]
PRESET_WORKLOADS = {
    "stream-4": "streaming, 4-character chunks",
    "stream-token": "streaming, one BPE token per feed",
    "parse": "whole message",
}


def _presets(run: dict) -> list[dict]:
    return [b["extra_info"] for b in run["benchmarks"] if b["extra_info"].get("workload") == "preset-paired"]


def _presets_intro(run: dict, found: list[dict]) -> str:
    return (
        f"{_measured(run)}. Every shipped preset on its own realistic samples (`tests/fixtures/presets/`, "
        "mostly 50-300 characters, with their prompts as prefix) and on the same samples grown to 500 and "
        "2,000 characters; a new parser per response. Each figure is transformers ÷ respc, the median of "
        "paired rounds (`benchmarks/test_presets.py`); the 5.23 rows compare the 5.23 target with "
        "transformers 5.23.0."
    )


def render_presets_summary(run: dict) -> str:
    """Per target, workload and length: the speed-up's spread over the presets (README.md)."""
    found = _presets(run)
    if not found:
        return ""
    lines = [
        _presets_intro(run, found),
        "",
        "| target | workload | length | presets | min | 10th pct | median | max (preset) |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for target in sorted({info["target"] for info in found}, reverse=True):
        rows = [info for info in found if info["target"] == target]
        for workload, length in PRESET_COLUMNS:
            key = f"{workload} {length}"
            values = sorted((info["ratios"][key], info["preset"]) for info in rows if key in info["ratios"])
            if not values:
                continue
            ratios = [v for v, _ in values]
            tenth = ratios[int(0.1 * (len(ratios) - 1))]
            lines.append(
                f"| {target} | {PRESET_WORKLOADS[workload]} | {length} | {len(values)} | "
                f"{ratios[0]:.1f}x ({values[0][1]}) | {tenth:.1f}x | {statistics.median(ratios):.1f}x | "
                f"{ratios[-1]:.1f}x ({values[-1][1]}) |"
            )
    return "\n".join(lines) + "\n"


def render_presets_table(run: dict) -> str:
    """One row per preset and target, one column per workload and length (docs/benchmarks.md)."""
    found = _presets(run)
    if not found:
        return ""
    heads = [f"{w.replace('stream-', 's-')} {n}" for w, n in PRESET_COLUMNS]
    lines = [
        _presets_intro(run, found) + " Columns: s-4 streams 4-character chunks, s-token one BPE token per "
        "feed, parse the whole message; short, 500 and 2000 are the lengths.",
        "",
        "| preset | target | " + " | ".join(heads) + " |",
        "|---|---|" + "---:|" * len(heads),
    ]
    for info in sorted(found, key=lambda i: (i["preset"], i["target"])):
        cells = [info["ratios"].get(f"{w} {n}") for w, n in PRESET_COLUMNS]
        lines.append(
            f"| {info['preset']} | {info['target']} | "
            + " | ".join("—" if c is None else f"{c:.1f}x" for c in cells)
            + " |"
        )
    return "\n".join(lines) + "\n"


RENDERERS = {  # marker name -> its table (see the module docstring for the file that holds it)
    "speed-table": render_targets,
    "side-by-side-table": render_side_by_side,
    "content-table": render_content,
    "cost-table": render_costs,
    "wire-table": render_wire,
    "deltas-table": render_deltas,
    "deltas-short-table": render_deltas_short,
    "scale-table": render_scale,
    "presets-summary": render_presets_summary,
    "presets-table": render_presets_table,
}


def write(tables: dict[str, str], files: list[Path]) -> None:
    """Replace each non-empty table between its markers in every file of `files` that holds them."""
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    for section, table in tables.items():
        if not table:
            continue
        start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
        holders = [path for path, text in texts.items() if pattern.search(text)]
        if not holders:
            raise SystemExit(f"no {start} ... {end} section in {', '.join(map(str, files))}")
        for path in holders:
            texts[path] = pattern.sub(lambda _, start=start, end=end: f"{start}\n{table}{end}", texts[path])
    for path, text in texts.items():
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="pytest-benchmark JSON (--benchmark-json)")
    parser.add_argument(
        "--write",
        type=Path,
        nargs="*",
        metavar="FILE",
        help="files whose tables to replace (default: README.md and docs/*.md)",
    )
    args = parser.parse_args()
    run = json.loads(args.run.read_text(encoding="utf-8"))
    tables = {section: render(run) for section, render in RENDERERS.items()}
    if args.write is None:
        print("\n".join(table for table in tables.values() if table), end="")
        return
    write(tables, args.write or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


if __name__ == "__main__":
    main()
