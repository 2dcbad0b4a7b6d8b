"""Concurrency: parsers share a generated module across threads, compiles are shared, CLI writes are atomic.

A serving process runs many streams at once over one compiled module, and may compile templates from
several request threads; a build may run `respc compile` for the same output from several processes.
Thread switching is forced to be very frequent so interleavings really happen.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.compare import SAMPLES, TEMPLATES, chunkings, stream_trace

import respc

TOOLS = [
    {
        "name": "get_weather",
        "parameters": {"properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    }
]
SHARED_STATE = {  # defaults a parser appends to, transforms with constants: any sharing would show
    "defaults": {"role": "assistant", "tool_calls": [], "log": "start"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "json",
            "repeats": True,
            "transform": {"type": "function", "function": "{content}", "meta": {"tags": ["t"]}},
        },
        "log": {"open": "<log>", "close": "</log>", "repeats": True, "join": "|"},
        "content": {"close_pattern": r"\s*<eos>"},
    },
}


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads every microsecond instead of every 5 ms, so parsers interleave mid-feed."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _jobs() -> list[tuple[dict, str, list[str], Any]]:
    jobs = []
    for name in ("smollm", "serving_qwen2", "gemma4", "qwen3", "gpt_oss"):
        for i, sample in enumerate(SAMPLES[name]):
            for chunks in chunkings(sample["text"], seed=i, random_splits=1):
                jobs.append((TEMPLATES[name], sample["prefix"], chunks, TOOLS if i % 2 else None))
    shared_text = (
        '<log>a</log> hi <tool_call>{"name": "get_weather", "arguments": {"days": "3"}}</tool_call><log>b'
    )
    for chunks in chunkings(shared_text, random_splits=2):
        jobs.append((SHARED_STATE, "", chunks, TOOLS))
    return jobs


def _trace(job: tuple[dict, str, list[str], Any]) -> list:
    template, prefix, chunks, tools = job
    module = respc.compile_template(template)
    trace = stream_trace(lambda: module.ResponseParser(prefix, tools=tools), chunks)
    whole = "".join(chunks)
    try:
        trace.append(("ok", module.parse_response(whole, prefix=prefix, tools=tools)))
    except Exception as error:
        trace.append(("raise", type(error), str(error)))
    return trace


def test_many_parsers_in_many_threads_match_sequential(busy_switching: None) -> None:
    jobs = _jobs()
    expected = [_trace(job) for job in jobs]
    assert expected == [
        _trace(job) for job in jobs
    ], "a second sequential run differs: state leaks between parsers"
    with ThreadPoolExecutor(max_workers=16) as pool:
        for _ in range(3):
            got = list(pool.map(_trace, jobs))
            different = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
            assert not different, f"{len(different)} streams differ, first: {jobs[different[0]]!r}"


def test_interleaved_feeds_on_one_thread_each_parser_alone() -> None:
    """Parsers of one module fed in round-robin give what each gives alone (no module-level state)."""
    module = respc.compile_template(SHARED_STATE)
    texts = [
        f'<log>{i}</log>x{i} <tool_call>{{"name": "n{i}", "arguments": {{}}}}</tool_call>' for i in range(8)
    ]
    alone = [module.parse_response(text, prefix="") for text in texts]
    parsers = [module.ResponseParser("") for _ in texts]
    for step in range(max(map(len, texts))):
        for parser, text in zip(parsers, texts):
            parser.feed(text[step : step + 1])
    assert [p.finalize()[0] for p in parsers] == alone
    assert module.TEMPLATE == SHARED_STATE and module.ResponseParser.defaults()["tool_calls"] == []


def _unique(template: dict) -> dict:
    """A copy of `template` nobody compiled yet (a distinct field name changes its hash)."""
    fresh = json.loads(json.dumps(template))
    fresh["fields"][f"x_{uuid.uuid4().hex}"] = {"open": "<x>", "close": "</x>"}
    return fresh


def _compile_from_threads(templates: list[dict], per_template: int) -> tuple[list, int]:
    """Compile each template from `per_template` threads released at once; return modules, compile count."""
    calls = 0
    calls_lock = threading.Lock()
    import respc._compile as compiling

    original: Callable = compiling.generate_source

    def counting(template: Any, **kwargs: Any) -> str:
        nonlocal calls
        with calls_lock:
            calls += 1
        return original(template, **kwargs)

    work = [template for template in templates for _ in range(per_template)]
    barrier = threading.Barrier(len(work))

    def compile_one(template: dict) -> Any:
        barrier.wait()
        return respc.compile_template(template)

    compiling.generate_source = counting
    try:
        with ThreadPoolExecutor(max_workers=len(work)) as pool:
            modules = list(pool.map(compile_one, work))
    finally:
        compiling.generate_source = original
    return modules, calls


def test_concurrent_compiles_of_one_template_share_one_module() -> None:
    template = _unique(TEMPLATES["smollm"])
    modules, calls = _compile_from_threads([template], per_template=12)
    assert calls == 1, f"{calls} compiles for one template"
    assert all(module is modules[0] for module in modules)
    assert (
        respc.compile_template(json.loads(json.dumps(template))) is modules[0]
    )  # equal template, same module


def test_concurrent_compiles_of_different_templates() -> None:
    templates = [_unique(TEMPLATES[name]) for name in ("smollm", "serving_qwen2", "gemma4", "qwen3")]
    modules, calls = _compile_from_threads(templates, per_template=4)
    assert calls == len(templates), f"{calls} compiles for {len(templates)} templates"
    by_template = [modules[i * 4 : i * 4 + 4] for i in range(len(templates))]
    for template, group in zip(templates, by_template):
        assert all(module is group[0] for module in group)
        assert group[0].TEMPLATE == template
    assert len({id(group[0]) for group in by_template}) == len(templates)


def _compile_processes(tmp_path: Path, sources: list[str], out: str) -> list[subprocess.CompletedProcess]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "respc", "compile", source, "-o", out],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for source in sources
    ]
    return [subprocess.CompletedProcess(p.args, p.wait(), *p.communicate()) for p in procs]


def test_cli_compiles_racing_for_one_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Processes writing the same OUT: each run exits 0, OUT is exactly one run's output, no temp files."""
    from respc.cli import main

    names = ["smollm", "serving_qwen2", "gemma4"]
    expected = set()
    monkeypatch.chdir(tmp_path)
    for name in names:
        (tmp_path / f"{name}.json").write_text(json.dumps(TEMPLATES[name]), encoding="utf-8")
        assert main(["compile", f"{name}.json", "-o", "out.py"]) == 0
        expected.add((tmp_path / "out.py").read_text(encoding="utf-8"))
    for sources in ([f"{names[0]}.json"] * 6, [f"{name}.json" for name in names for _ in range(2)]):
        (tmp_path / "out.py").unlink()
        done = _compile_processes(tmp_path, sources, "out.py")
        assert [d.returncode for d in done] == [0] * len(done), [d.stderr for d in done]
        written = (tmp_path / "out.py").read_text(encoding="utf-8")
        assert written in expected, "OUT is not exactly one run's output (torn or mixed write)"
        compile(written, "out.py", "exec")
        leftovers = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".json"))
        assert leftovers == ["out.py"], f"temporary files left behind: {leftovers}"
