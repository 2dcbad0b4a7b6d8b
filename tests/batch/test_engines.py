"""Stored generations at scale: Parquet and JSONL in and out (files and shard directories), the local
engine, Ray Data on a real local cluster and Hugging Face datasets give the same answer on the same
files (failing rows, tool typing and unicode included), faults (a Ray actor killed mid-job, damaged
input, missing columns, wrong types) and flat memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli import respc_cli

from respc.batch.files import input_of, output_of
from respc.batch.local import Job, run_local
from respc.batch.records import ParserSource

ROOT = Path(__file__).parents[2]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]
THINKING = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n"


def _response(i: int) -> tuple[str, str | None]:
    """A realistic Qwen3 output and its prompt: reasoning, calls (typed by TOOLS), unicode, failures."""
    city = ["Paris", "Zürich", "東京", "São Paulo", "Kraków"][i % 5]
    kind = i % 7
    if kind == 0:
        call = json.dumps({"name": "get_weather", "arguments": {"city": city, "days": str(1 + i % 5)}})
        return f"<think>\nThe user wants {city}.\n</think>\n\n<tool_call>\n{call}\n</tool_call><|im_end|>", ""
    if kind == 1:  # the prompt opened the reasoning (Qwen3 thinking models)
        return f"Plan for {city} ✓.\n</think>\n\nIt is sunny in {city} — 21 °C.<|im_end|>", THINKING
    if kind == 2:  # malformed call: the record fails, its text is kept
        return '<tool_call>\n{"name": "get_weather", "arguments": {city}}\n</tool_call><|im_end|>', None
    if kind == 3:
        first = json.dumps({"name": "get_weather", "arguments": {"city": city, "days": 2}})
        second = json.dumps({"name": "get_weather", "arguments": {"city": "Oslo", "days": "4"}})
        body = f"<tool_call>\n{first}\n</tool_call>\n<tool_call>\n{second}\n</tool_call>"
        return f"Checking two cities.\n{body}<|im_end|>", ""
    text = f"Answer {i}: " + "lorem ipsum dolor sit amet " * (2 + i % 9) + f"{city} 🌤"
    return text + "<|im_end|>", None if kind == 4 else ""


def _records(count: int) -> list[dict]:
    records = []
    for i in range(count):
        response, prompt = _response(i)
        records.append({"id": i, "prompt": prompt, "response": response})
    return records


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same 1,500 records as one Parquet file (row groups of 400), Parquet shards and JSONL."""
    root = tmp_path_factory.mktemp("scale")
    records = _records(1500)
    table = pa.Table.from_pylist(records)
    pq.write_table(table, root / "records.parquet", row_group_size=400)
    (root / "shards").mkdir()
    for n, start in enumerate(range(0, 1500, 600)):
        pq.write_table(table.slice(start, 600), root / "shards" / f"part-{n}.parquet")
    with open(root / "records.jsonl", "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    (root / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    return root


def _job(source: Path | str, out: Path | str | None, **options: Any) -> Job:
    return Job(
        source=ParserSource(preset="qwen3"),
        input=input_of(str(source)),
        output=output_of(None if out is None else str(out), options.pop("output_format", None)),
        tools=options.pop("tools", TOOLS),
        **options,
    )


@pytest.fixture(scope="module")
def reference(data: Path) -> dict[str, Any]:
    """The local engine's outputs, one worker: the answers every other engine must give."""
    tables = {}
    for layout in ("json", "typed"):
        run_local(_job(data / "records.parquet", data / f"local-{layout}.parquet", layout=layout))
        tables[layout] = pq.read_table(data / f"local-{layout}.parquet")
    run_local(_job(data / "records.jsonl", data / "local.jsonl"))
    return {"json": tables["json"], "typed": tables["typed"], "jsonl": (data / "local.jsonl").read_bytes()}


def test_the_reference_output_is_right(reference: dict[str, Any]) -> None:
    table = reference["typed"]
    assert table.num_rows == 1500 and table.column("id").to_pylist() == list(range(1500))
    rows = table.to_pylist()
    call = rows[0]
    assert call["error"] is None and call["raw_response"] is None
    assert call["tool_calls"] == [
        {"id": None, "name": "get_weather", "arguments": '{"city": "Paris", "days": 1}'}
    ]
    assert json.loads(call["message"])["tool_calls"][0]["function"]["arguments"] == {
        "city": "Paris",
        "days": 1,
    }
    assert rows[1]["reasoning_content"] == "Plan for Zürich ✓." and "21 °C" in rows[1]["content"]
    failed = rows[2]
    assert failed["message"] is None and failed["error"]["type"] == "ValueError"
    assert failed["raw_response"] == _response(2)[0]
    assert [c["arguments"] for c in rows[3]["tool_calls"]] == [
        '{"city": "São Paulo", "days": 2}',
        '{"city": "Oslo", "days": 4}',
    ]
    assert sum(row["error"] is not None for row in rows) == len(range(2, 1500, 7))
    lines = reference["jsonl"].decode().splitlines()
    assert json.loads(lines[0]) == {"id": 0, "message": json.loads(call["message"])}
    assert json.loads(lines[2])["response"] == _response(2)[0]


def test_local_engine_formats_workers_and_shards_agree(
    data: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    run_local(_job(data / "records.parquet", tmp_path / "w2.parquet"), workers=2)
    run_local(_job(data / "records.jsonl", tmp_path / "from-jsonl.parquet"))
    run_local(_job(data / "shards", tmp_path / "from-shards.parquet"))
    job = _job(data / "records.parquet", str(tmp_path / "out") + "/", output_format="parquet")
    job = Job(**{**job.__dict__, "output": output_of(str(tmp_path / "out") + "/", "parquet", shard_rows=700)})
    run_local(job, workers=2)
    for name in ("w2.parquet", "from-jsonl.parquet", "from-shards.parquet", "out"):
        assert pq.read_table(tmp_path / name).equals(reference["json"]), name
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"part-0000{i}.parquet" for i in range(3)]
    assert [pq.ParquetFile(p).metadata.num_rows for p in sorted((tmp_path / "out").iterdir())] == [
        700,
        700,
        100,
    ]
    run_local(_job(data / "records.parquet", tmp_path / "from-parquet.jsonl"), workers=2)
    assert (tmp_path / "from-parquet.jsonl").read_bytes() == reference["jsonl"]


def test_datasets_gives_the_same_answer(data: Path, reference: dict[str, Any]) -> None:
    import datasets

    from respc.batch.datasets import map_dataset

    datasets.disable_progress_bars()
    dataset = datasets.Dataset.from_parquet(str(data / "records.parquet"), cache_dir=str(data / "hf"))
    for layout in ("json", "typed"):
        for num_proc in (None, 2):
            parsed, failed = map_dataset(
                dataset, preset="qwen3", tools=TOOLS, layout=layout, num_proc=num_proc
            )
            assert parsed.data.table.equals(reference[layout]), (layout, num_proc)
            assert failed == len(range(2, 1500, 7))
    # the plain batched function, in the datasets' default (dict of lists) format
    from respc.batch.datasets import features, parse_batch

    plain = dataset.map(
        parse_batch,
        batched=True,
        fn_kwargs={"preset": "qwen3", "tools": TOOLS},
        remove_columns=dataset.column_names,
        features=features(pa.int64()),
        load_from_cache_file=False,
    )
    assert plain.data.table.equals(reference["json"])


# --- Ray -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    """A real local Ray cluster on this machine's CPUs, listening on loopback only; stopped after."""
    from respc.batch.ray import ray_environment

    ray_environment()
    ray = pytest.importorskip("ray")
    context = ray.init(
        num_cpus=os.cpu_count() or 2,
        include_dashboard=False,
        object_store_memory=512 * 1024 * 1024,
        logging_level="ERROR",
        log_to_driver=False,
    )
    yield context
    ray.shutdown()


def test_ray_gives_the_same_answer(
    ray_cluster: Any, data: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    from respc.batch.ray import run_ray

    for source, out, want in [
        ("records.parquet", "ray.parquet", reference["json"]),
        ("records.jsonl", "ray-from-jsonl.parquet", reference["json"]),
        ("shards", "ray-typed.parquet", reference["typed"]),
    ]:
        layout = "typed" if "typed" in out else "json"
        summary = run_ray(_job(data / source, tmp_path / out, layout=layout))
        assert pq.read_table(tmp_path / out).equals(want), out
        assert (summary.records, summary.failed) == (1500, len(range(2, 1500, 7)))
    for source in ("records.jsonl", "records.parquet"):
        run_ray(_job(data / source, tmp_path / "ray.jsonl"))
        assert (tmp_path / "ray.jsonl").read_bytes() == reference["jsonl"], source


def test_ray_data_pipeline_with_the_callable_class(
    ray_cluster: Any, data: Path, reference: dict[str, Any]
) -> None:
    import ray
    from ray.data import ActorPoolStrategy

    from respc.batch.ray import ParseResponses

    dataset = ray.data.read_parquet(str(data / "shards")).map_batches(
        ParseResponses,
        fn_constructor_kwargs={"preset": "qwen3", "tools": TOOLS, "layout": "typed"},
        batch_format="pyarrow",
        compute=ActorPoolStrategy(size=2),
        num_cpus=0.5,
    )
    parsed = pa.concat_tables(dataset.iter_batches(batch_format="pyarrow", batch_size=None))
    assert parsed.equals(reference["typed"])


def test_the_cli_runs_on_a_cluster_at_an_address(
    ray_cluster: Any, data: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    address = ray_cluster.address_info["gcs_address"]
    assert address.startswith("127.0.0.1:")  # loopback only
    out = tmp_path / "cli.parquet"
    done = respc_cli(
        "parse",
        str(data / "records.jsonl"),
        "--preset",
        "qwen3",
        "--tools",
        str(data / "tools.json"),
        "--engine",
        "ray",
        "--address",
        address,
        "--concurrency",
        "2",
        "-o",
        str(out),
    )
    assert done.returncode == 1, done.stderr  # some records failed, by design
    assert f"1500 records, {len(range(2, 1500, 7))} failed" in done.stderr
    assert pq.read_table(out).equals(reference["json"])


def test_the_ray_example_job_writes_shards_from_the_workers(
    ray_cluster: Any, data: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    address = ray_cluster.address_info["gcs_address"]
    done = subprocess.run(
        [
            sys.executable,
            "examples/ray_job.py",
            str(data / "shards"),
            str(tmp_path / "messages"),
            "--preset",
            "qwen3",
            "--address",
            address,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    # The job's summary line; Ray's raylet may print its own warnings after it (seen: "8 PYTHON worker
    # processes have been started"), so it need not be the last line.
    summary = f"1500 records, 214 failed -> {tmp_path / 'messages'}"
    assert summary in [line.strip() for line in done.stdout.splitlines()], done.stdout
    written = pq.read_table(tmp_path / "messages").sort_by("id")
    run_local(_job(data / "shards", tmp_path / "untyped.parquet", tools=None))  # the job passes no tools
    assert written.equals(pq.read_table(tmp_path / "untyped.parquet"))


def test_an_address_that_is_not_a_ray_cluster_fails_fast(tmp_path: Path, data: Path) -> None:
    import socket

    with socket.socket() as listener:  # something listens there, but it is no Ray GCS
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        started = time.monotonic()
        done = respc_cli(
            "parse",
            str(data / "records.jsonl"),
            "--preset",
            "qwen3",
            "--engine",
            "ray",
            "--address",
            f"127.0.0.1:{port}",
            "-o",
            str(tmp_path / "x.parquet"),
        )
    assert done.returncode == 2 and time.monotonic() - started < 60, done.stderr
    assert f"--address 127.0.0.1:{port}: not a Ray cluster" in done.stderr


def test_an_unreachable_address_fails_fast_and_clearly(tmp_path: Path, data: Path) -> None:
    import socket

    with socket.socket() as probe:  # a free port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    done = respc_cli(
        "parse",
        str(data / "records.jsonl"),
        "--preset",
        "qwen3",
        "--engine",
        "ray",
        "--address",
        f"127.0.0.1:{port}",
        "-o",
        str(tmp_path / "x.parquet"),
    )
    assert done.returncode == 2 and time.monotonic() - started < 60
    assert f"--address 127.0.0.1:{port}: cannot connect" in done.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_a_killed_ray_actor_loses_and_duplicates_nothing(
    ray_cluster: Any, tmp_path: Path, reference: dict[str, Any], data: Path
) -> None:
    import ray
    from ray import cloudpickle
    from ray.data import ActorPoolStrategy, DataContext
    from support import ray_slow

    cloudpickle.register_pickle_by_value(ray_slow)  # the workers get the test's subclass by value
    state = tmp_path / "state"
    state.mkdir()
    context = DataContext.get_current()
    saved = (context.target_max_block_size, context.execution_options.preserve_order)
    context.target_max_block_size = 32 * 1024  # many blocks, so the job outlives the kill
    context.execution_options.preserve_order = True
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            logs = sorted(state.glob("actor-*"))
            if sum(len(p.read_text().split()) for p in logs) >= 4:
                pid = int(logs[0].name.split("-")[1])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    try:
        dataset = ray.data.read_parquet(str(data / "records.parquet")).map_batches(
            ray_slow.SlowParse,
            fn_constructor_kwargs={"state": str(state), "delay": 0.15, "preset": "qwen3", "tools": TOOLS},
            batch_format="pyarrow",
            batch_size=100,
            compute=ActorPoolStrategy(size=2),
            num_cpus=0.5,
        )
        killer = threading.Thread(target=kill_one, daemon=True)
        killer.start()
        parsed = pa.concat_tables(dataset.iter_batches(batch_format="pyarrow", batch_size=None))
        killer.join()
    finally:
        context.target_max_block_size, context.execution_options.preserve_order = saved
        cloudpickle.unregister_pickle_by_value(ray_slow)
    assert killed, "the job ended before an actor could be killed"
    assert len(list(state.glob("actor-*"))) >= 3  # the killed actor was replaced
    assert parsed.column("id").to_pylist() == list(range(1500))  # every row once, in order
    assert parsed.equals(reference["json"])


def test_ray_reads_shards_that_differ_in_their_optional_columns(ray_cluster: Any, tmp_path: Path) -> None:
    from respc.batch.ray import run_ray

    shards = tmp_path / "mixed"
    shards.mkdir()
    text = "Plan.\n</think>\n\nSunny.<|im_end|>"
    pq.write_table(pa.table({"id": [1], "prompt": [THINKING], "response": [text]}), shards / "a.parquet")
    pq.write_table(pa.table({"id": [2], "response": [text]}), shards / "b.parquet")
    run_local(_job(shards, tmp_path / "local.jsonl"))
    run_ray(_job(shards, tmp_path / "ray.jsonl"))
    lines = (tmp_path / "ray.jsonl").read_text(encoding="utf-8").splitlines()
    assert (tmp_path / "local.jsonl").read_text(encoding="utf-8").splitlines() == lines
    assert json.loads(lines[0])["message"] == {
        "role": "assistant",
        "reasoning_content": "Plan.",
        "content": "Sunny.",
    }
    assert json.loads(lines[1])["message"]["content"] == "Plan.\n</think>\n\nSunny."


def test_ray_input_errors_stop_the_run_naming_the_input(ray_cluster: Any, tmp_path: Path, data: Path) -> None:
    from respc._io import InputError
    from respc.batch.ray import run_ray

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": 1, "response": "a"}\n' * 3 + b'{"id": 4, "response": "\xff"}\n')
    with pytest.raises(InputError, match=rf"{bad}: line 4: not UTF-8 text"):
        run_ray(_job(bad, tmp_path / "o.parquet"))
    ids = _jsonl(tmp_path / "ids.jsonl", [{"id": 1, "response": "a"}, {"id": "b", "response": "a"}])
    with pytest.raises(
        InputError, match=rf"{ids}: line 2: id \"b\" is a string, the ids before it are integers"
    ):
        run_ray(_job(ids, tmp_path / "o.parquet"))
    damaged = tmp_path / "damaged.parquet"
    good = (data / "records.parquet").read_bytes()
    damaged.write_bytes(good[: len(good) // 2] + b"\0" * 64 + good[len(good) // 2 + 64 :])
    with pytest.raises(InputError, match="the Ray job failed: "):
        run_ray(_job(damaged, tmp_path / "o.parquet"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "damaged.parquet", "ids.jsonl"]


def test_ray_keeps_columns_and_takes_any_batch_format(ray_cluster: Any, data: Path) -> None:
    import ray

    from respc.batch.ray import ParseResponses

    source = ray.data.read_parquet(str(data / "records.parquet")).limit(20)
    kept = source.map_batches(ParseResponses, fn_constructor_kwargs={"preset": "qwen3", "keep_columns": True})
    table = pa.concat_tables(kept.iter_batches(batch_format="pyarrow", batch_size=None))
    assert table.column_names == ["prompt", "response", "id", "message", "error", "raw_response", "cut_off"]
    assert table.column("response").to_pylist() == [r["response"] for r in _records(20)]


def test_the_cli_starts_and_stops_its_own_cluster(
    ray_cluster: Any, data: Path, reference: dict[str, Any], tmp_path: Path
) -> None:
    def ray_processes() -> set[int]:
        found = set()
        for entry in Path("/proc").iterdir():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"gcs_server" in command or b"raylet" in command:
                found.add(int(entry.name))
        return found

    before = ray_processes()
    out = tmp_path / "own.parquet"
    done = respc_cli(
        "parse",
        str(data / "records.parquet"),
        "--preset",
        "qwen3",
        "--tools",
        str(data / "tools.json"),
        "--engine",
        "ray",
        "-o",
        str(out),
    )
    assert done.returncode == 1, done.stderr
    assert pq.read_table(out).equals(reference["json"])
    time.sleep(1)
    assert ray_processes() <= before  # its own cluster is gone; the fixture's is untouched


# --- faults and formats ------------------------------------------------------------------------------


def test_the_output_is_checked_before_any_record_is_read(tmp_path: Path, data: Path) -> None:
    for engine in ("local", "ray"):
        started = time.monotonic()
        done = respc_cli(
            "parse",
            str(data / "records.jsonl"),
            "--preset",
            "qwen3",
            "--engine",
            engine,
            "-o",
            str(tmp_path / "missing" / "out.parquet"),
        )
        assert done.returncode == 2 and time.monotonic() - started < 20, done.stderr
        assert (
            f"{tmp_path / 'missing' / 'out.parquet'}: cannot write: {tmp_path / 'missing'} does not exist"
            in done.stderr
        )


def test_a_dead_worker_stops_the_run_instead_of_hanging(tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "in.jsonl", _records(150_000))
    out = tmp_path / "out.parquet"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "respc",
            "parse",
            str(source),
            "--preset",
            "qwen3",
            "--workers",
            "2",
            "-o",
            str(out),
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 30
    workers: list[str] = []
    while not workers and time.monotonic() < deadline:
        time.sleep(0.2)
        for task in Path(f"/proc/{process.pid}/task").iterdir():
            workers += (task / "children").read_text().split()
    time.sleep(0.5)
    os.kill(int(workers[0]), signal.SIGKILL)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()  # the run hung (ProcessPoolExecutor did, when the kill came mid-answer)
        process.communicate()
        pytest.fail("the run hung after its worker was killed")
    assert process.returncode == 2 and "a worker process died" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_run_removes_its_partial_output(tmp_path: Path, sent: int, code: int) -> None:
    source = _jsonl(tmp_path / "in.jsonl", _records(150_000))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "respc",
            "parse",
            str(source),
            "--preset",
            "qwen3",
            "--workers",
            "2",
            "-o",
            str(tmp_path / "out.parquet"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # SIGINT as a terminal sends it: a runner started in the background (`cmd &`) passes it on ignored,
        # and Python then installs no KeyboardInterrupt handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Signalled once the run reports progress, so mid-run: a fixed sleep let a fast run finish first.
    first = process.stderr.readline()
    assert first.startswith("respc: ") and first.endswith(" records\n"), first
    process.send_signal(sent)
    _, rest = process.communicate(timeout=60)
    err = first + rest
    assert process.returncode == code and err.endswith(("terminated\n", "interrupted\n")), err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_empty_inputs_give_valid_outputs_of_the_schema(tmp_path: Path) -> None:
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "response": pa.array([], pa.string())}), empty)
    out = tmp_path / "out.parquet"
    assert (
        respc_cli("parse", str(empty), "--preset", "qwen3", "--layout", "typed", "-o", str(out)).returncode
        == 0
    )
    from respc.batch.arrow import output_schema

    assert pq.read_table(out).schema.equals(output_schema(pa.int64(), "typed"))
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n", encoding="utf-8")
    assert respc_cli("parse", str(blank), "--preset", "qwen3", "-o", str(out)).returncode == 0
    assert pq.read_table(out).num_rows == 0


def test_shards_are_the_files_of_the_format_and_categoricals_are_strings(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    table = pa.table({"id": [1, 2], "response": pa.array(["a<|im_end|>", "b<|im_end|>"]).dictionary_encode()})
    pq.write_table(table, shards / "part-0.parquet")
    (shards / "README.md").write_text("how these were made", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = respc_cli("parse", str(shards), "--preset", "qwen3", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["message"]["content"] for line in out.read_text().splitlines()] == ["a", "b"]


def test_a_field_named_on_the_command_line_must_be_in_every_jsonl_record(tmp_path: Path) -> None:
    # (a field no record has stops the run: tests/batch/test_fields.py)
    records = [{"id": 1, "prompt": "", "response": "hi"}, {"id": 2, "response": "ho"}]
    source = _jsonl(tmp_path / "in.jsonl", records)
    done = respc_cli("parse", str(source), "--preset", "qwen3", "--prompt-field", "prompt")
    assert done.returncode == 1
    assert json.loads(done.stdout.splitlines()[1])["error"] == {
        "type": "InvalidRecord",
        "message": "field 'prompt' is missing",
    }
    assert respc_cli("parse", str(source), "--preset", "qwen3").returncode == 0


def test_damaged_input_names_the_file_and_writes_nothing(tmp_path: Path, data: Path) -> None:
    good = (data / "records.parquet").read_bytes()
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(good[: len(good) // 2] + b"\0" * 64 + good[len(good) // 2 + 64 :])
    out = tmp_path / "out.parquet"
    out.write_bytes(b"previous run")
    done = respc_cli("parse", str(damaged), "--preset", "qwen3", "-o", str(out))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"respc: error: {damaged}")
    assert out.read_bytes() == b"previous run" and sorted(p.name for p in tmp_path.iterdir()) == [
        "damaged.parquet",
        "out.parquet",
    ]
    shards = tmp_path / "shards"
    (shards).mkdir()
    for n in range(3):
        (shards / f"part-{n}.parquet").write_bytes(good if n != 1 else b"PAR1 not really")
    done = respc_cli("parse", str(shards), "--preset", "qwen3", "-o", str(tmp_path / "dir") + "/")
    assert done.returncode == 2 and f"{shards / 'part-1.parquet'}: not a readable Parquet file" in done.stderr
    assert not (tmp_path / "dir").exists() and not list(tmp_path.glob(".dir.*"))


def test_missing_and_mistyped_columns_are_named_before_any_output(tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1, 2], "text": ["a", "b"], "n": [1, 2]}), source)
    out = tmp_path / "out.parquet"
    done = respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out))
    assert done.returncode == 2 and f"{source}: no column 'response'; columns: id, text, n" in done.stderr
    done = respc_cli("parse", str(source), "--preset", "qwen3", "--response-field", "n", "-o", str(out))
    assert done.returncode == 2 and f"{source}: column 'n' holds int64, expected strings" in done.stderr
    done = respc_cli(
        "parse", str(source), "--preset", "qwen3", "--response-field", "text", "--prompt-field", "p"
    )
    assert done.returncode == 2 and "no column 'p'" in done.stderr  # named on the command line: required
    assert not out.exists()
    ok = respc_cli("parse", str(source), "--preset", "qwen3", "--response-field", "text", "-o", str(out))
    assert ok.returncode == 0, ok.stderr  # the default prompt column is optional
    assert pq.read_table(out).column("message").to_pylist() == [
        '{"role": "assistant", "content": "a"}',
        '{"role": "assistant", "content": "b"}',
    ]


def test_jsonl_records_of_the_wrong_shape_are_error_rows_in_every_format(tmp_path: Path) -> None:
    lines = [
        '{"id": 1, "response": "fine<|im_end|>"}',
        "not json",
        "[1, 2]",
        '{"id": 4, "response": 42}',
        '{"id": 5, "prompt": 7, "response": "x"}',
        '{"id": 6, "response": "<tool_call>{}</tool_call>", "tools": "[not json"}',
        "",
        '{"id": 8}',
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = respc_cli(
        "parse", str(source), "--preset", "qwen3", "--tools-field", "tools", "-o", str(tmp_path / "o.parquet")
    )
    assert done.returncode == 1 and "7 records, 6 failed" in done.stderr
    rows = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert [r["id"] for r in rows] == [1, None, None, 4, 5, 6, 8]
    assert [r["error"]["type"] if r["error"] else None for r in rows] == [
        None,
        "JSONDecodeError",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
    ]
    assert rows[3]["raw_response"] == "42" and rows[5]["error"]["message"].startswith(
        "field 'tools' is not valid JSON"
    )
    jsonl = respc_cli("parse", str(source), "--preset", "qwen3", "--tools-field", "tools")
    assert [json.loads(line).get("error", {}).get("type") for line in jsonl.stdout.splitlines()] == [
        None,
        "JSONDecodeError",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
        "InvalidRecord",
    ]


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_jsonl_ids_get_one_parquet_type_decided_by_the_first_id(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    # strings that look like numbers stay strings, whatever chunk they fall in
    source = _jsonl(tmp_path / "s.jsonl", [{"id": f"00{i}", "response": "a"} for i in range(2100)])
    assert respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out)).returncode == 0
    assert pq.read_table(out).column("id").to_pylist() == [f"00{i}" for i in range(2100)]
    # leading records without ids take the type of the first id, across chunk boundaries
    records = [{"response": "a"} for _ in range(3000)] + [
        {"id": 7, "response": "b"},
        {"id": 8.5, "response": "c"},
    ]
    source = _jsonl(tmp_path / "n.jsonl", records)
    done = respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out))
    assert (
        done.returncode == 2
        and f"{source}: line 3002: id 8.5 is a number, the ids before it are integers" in done.stderr
    )
    source = _jsonl(tmp_path / "n2.jsonl", records[:-1])
    assert respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out)).returncode == 0
    table = pq.read_table(out)
    assert table.schema.field("id").type == pa.int64() and table.column("id").to_pylist() == [None] * 3000 + [
        7
    ]
    # numbers take integers; an integer after strings, or an object, stops the run naming its line
    source = _jsonl(tmp_path / "m.jsonl", [{"id": 0.5, "response": "a"}, {"id": 2, "response": "b"}])
    assert respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out)).returncode == 0
    assert pq.read_table(out).column("id").to_pylist() == [0.5, 2.0]
    for records, message in [
        (
            [{"id": "a", "response": "a"}] * 3 + [{"id": 4, "response": "b"}],
            "line 4: id 4 is a integer, the ids before it are strings",
        ),
        (
            [{"id": {"a": 1}, "response": "a"}],
            'line 1: id {"a": 1} is dict: Parquet ids are integers, numbers or strings',
        ),
        ([{"id": True, "response": "a"}], "line 1: id true is bool"),
    ]:
        source = _jsonl(tmp_path / "x.jsonl", records)
        done = respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(out))
        assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
        assert f"{source}: {message}" in done.stderr
        assert (
            respc_cli("parse", str(source), "--preset", "qwen3", "-o", str(tmp_path / "o.jsonl")).returncode
            == 0
        )


def test_formats_from_names_and_flags(tmp_path: Path, data: Path) -> None:
    done = respc_cli("parse", "--preset", "qwen3", "--format", "parquet")
    assert done.returncode == 2 and "Parquet cannot be read from standard input" in done.stderr
    done = respc_cli("parse", str(data / "records.jsonl"), "--preset", "qwen3", "--output-format", "parquet")
    assert done.returncode == 2 and "Parquet cannot be written to standard output" in done.stderr
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.jsonl").write_text("{}\n", encoding="utf-8")
    (mixed / "b.parquet").write_bytes((data / "records.parquet").read_bytes())
    done = respc_cli("parse", str(mixed), "--preset", "qwen3")
    assert done.returncode == 2 and "holds both .jsonl and .parquet (use --format)" in done.stderr
    weird = tmp_path / "records.data"
    weird.write_bytes((data / "records.parquet").read_bytes())
    done = respc_cli(
        "parse", str(weird), "--preset", "qwen3", "--format", "parquet", "-o", str(tmp_path / "o.jsonl")
    )
    assert done.returncode == 1 and "1500 records" in done.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine", encoding="utf-8")
    done = respc_cli("parse", str(data / "records.jsonl"), "--preset", "qwen3", "-o", str(full))
    assert done.returncode == 2 and "exists and is not an empty directory" in done.stderr
    assert [p.name for p in full.iterdir()] == ["keep.txt"]


# --- memory ----------------------------------------------------------------------------------------


# Measures one child from a small launcher: a child forked from pytest itself would count pytest's
# memory (resident until its exec) in its peak.
MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024)
"""


def _peak_mib(args: list[str]) -> float:
    """Peak resident memory of one `respc parse` process, in MiB (os.wait4 measures that child only)."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "respc", "parse", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    code, peak = done.stdout.split()
    assert int(code) in (0, 1), done.stderr
    return float(peak)


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_memory_stays_flat_as_the_input_grows(tmp_path: Path, form: str) -> None:
    sizes = {}
    for count in (20_000, 200_000):
        records = _records(count)
        source = tmp_path / f"in-{count}.{form}"
        if form == "parquet":
            pq.write_table(pa.Table.from_pylist(records), source, row_group_size=10_000)
        else:
            source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        del records
        sizes[count] = _peak_mib(
            [str(source), "--preset", "qwen3", "-o", str(tmp_path / f"out-{count}.{form}")]
        )
    assert sizes[200_000] < 1.5 * sizes[20_000], sizes
