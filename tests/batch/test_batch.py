"""`respc parse`: one response or JSONL, presets, templates and model dirs, workers, failures kept in
place, atomic output and exit codes (through `python -m respc parse`), and the `respc.batch` library."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import respc_cli
from support.compare import FIXTURES, TEMPLATES

import respc
from respc.batch import ParserSource, parse_records
from respc.cli.progress import Progress

ROOT = Path(__file__).parents[2]
SMOLLM = FIXTURES / "templates" / "smollm.json"
PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}}
]


def run_cli(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `respc parse ARGV`."""
    result = respc_cli("parse", *argv, stdin=stdin)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def cli():
    return run_cli


def _response(i: int) -> str:
    return f'<think>step {i}</think>Answer {i}.<tool_call>{{"name": "f", "arguments": {{"n": "{i}"}}}}</tool_call>'


def _write_jsonl(path: Path, records: list) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8"
    )
    return path


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_one_response_from_a_file_and_from_stdin(cli, tmp_path: Path) -> None:
    text = "<think>hmm</think>Hello!<|im_end|>"
    (tmp_path / "out.txt").write_text(text, encoding="utf-8")
    expected = {"role": "assistant", "thinking": "hmm", "content": "Hello!"}
    for argv, stdin in (
        (["--template", str(SMOLLM), str(tmp_path / "out.txt")], ""),
        (["--template", str(SMOLLM)], text),
    ):
        code, out, err = cli(argv, stdin)
        assert (code, json.loads(out), err) == (0, expected, "")


def test_one_response_that_fails_is_written_as_an_error(cli) -> None:
    code, out, err = cli(["--template", str(SMOLLM)], "<tool_call>{bad}</tool_call>")
    record = json.loads(out)
    assert (
        code == 1
        and record["error"]["type"] == "ValueError"
        and record["response"] == "<tool_call>{bad}</tool_call>"
    )
    assert "failed to parse" in err


def test_jsonl_records_keep_order_ids_and_failures(cli, tmp_path: Path) -> None:
    records = [{"id": f"r{i}", "prompt": PROMPT, "response": _response(i)} for i in range(300)]
    records[7]["response"] = "<tool_call>{bad}</tool_call>"
    records[11] = {"id": "no-response", "prompt": PROMPT}
    records[13] = "{not json"
    records.insert(20, "   ")  # blank lines are not records
    source = _write_jsonl(tmp_path / "in.jsonl", records)
    outputs = []
    for workers in ("1", "2"):
        code, out, err = cli(
            ["--template", str(SMOLLM), "--tools", str(_tools(tmp_path)), "--workers", workers, str(source)]
        )
        assert code == 1 and err.strip().endswith("300 records, 3 failed"), err
        outputs.append(out)
    assert outputs[0] == outputs[1]  # the same bytes, whatever the number of workers
    lines = _lines(outputs[0])
    assert [line["id"] for line in lines[:7]] == [f"r{i}" for i in range(7)] and len(lines) == 300
    assert lines[0]["message"] == {
        "role": "assistant",
        "thinking": "step 0",
        "content": "Answer 0.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"n": 0}}}],
    }
    assert lines[7] == {
        "id": "r7",
        "error": {"type": "ValueError", "message": lines[7]["error"]["message"]},
        "response": "<tool_call>{bad}</tool_call>",
    }
    assert lines[7]["error"]["message"].startswith("json parser could not parse region as JSON.")
    assert lines[11]["error"] == {
        "type": "InvalidRecord",
        "message": "field 'response' must be a string, got missing",
    }
    assert lines[13] == {"id": None, "error": lines[13]["error"], "response": "{not json"}
    assert lines[13]["error"]["type"] == "JSONDecodeError" and lines[299]["id"] == "r299"


def _tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS), encoding="utf-8")
    return path


def test_field_names_and_jsonl_from_stdin(cli) -> None:
    stdin = json.dumps({"key": 5, "out": "Hi<|im_end|>", "ctx": None}) + "\n"
    code, out, err = cli(
        [
            "--template",
            str(SMOLLM),
            "--jsonl",
            "--response-field",
            "out",
            "--prompt-field",
            "ctx",
            "--id-field",
            "key",
        ],
        stdin,
    )
    assert code == 0 and _lines(out) == [{"id": 5, "message": {"role": "assistant", "content": "Hi"}}]
    assert "1 records, 0 failed" in err


def test_prompt_is_the_prefix(cli, tmp_path: Path) -> None:
    record = {"id": 1, "prompt": PROMPT + "<think>\n", "response": "plan</think>done"}
    code, out, _ = cli(["--template", str(SMOLLM), str(_write_jsonl(tmp_path / "p.jsonl", [record]))])
    assert code == 0 and _lines(out)[0]["message"] == {
        "role": "assistant",
        "thinking": "plan",
        "content": "done",
    }


def test_sources_preset_template_config_and_model_dir(cli, tmp_path: Path) -> None:
    text = "<think>a</think>b<|im_end|>"
    config = tmp_path / "model" / "tokenizer_config.json"
    config.parent.mkdir()
    config.write_text(
        json.dumps({"tokenizer_class": "X", "response_template": TEMPLATES["smollm"]}), encoding="utf-8"
    )
    expected = {"role": "assistant", "thinking": "a", "content": "b"}
    for argv in (
        ["--template", str(config)],
        ["--template", str(config.parent)],
        ["--model", str(config.parent)],
    ):
        code, out, err = cli(argv, text)
        assert (code, json.loads(out)) == (0, expected), (argv, err)
    if "smollm3" in respc.presets():
        code, out, _ = cli(["--preset", "smollm3"], text)
        assert code == 0 and json.loads(out)["reasoning_content"] == "a"
        bare = tmp_path / "bare"
        bare.mkdir()
        (bare / "config.json").write_text(json.dumps({"model_type": "smollm3"}), encoding="utf-8")
        (bare / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "X"}), encoding="utf-8")
        code, out, _ = cli(["--model", str(bare)], text)
        assert code == 0 and json.loads(out)["content"] == "b"


def test_usage_errors_exit_2_with_one_line(cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "tools.json").write_text('{"not": "a list"}', encoding="utf-8")
    (tmp_path / "bad.bin").write_bytes(b"\xff\xfe")
    cases = {
        "no such file": ["--template", str(SMOLLM), str(tmp_path / "missing.txt")],
        "no preset named": ["--preset", "no-such-preset"],
        "model_type: config.json gives none": ["--model", str(empty)],
        "expected a JSON list, got dict": [
            "--template",
            str(SMOLLM),
            "--tools",
            str(tmp_path / "tools.json"),
        ],
        "--workers must be at least 1": ["--template", str(SMOLLM), "--workers", "0"],
        "not UTF-8": ["--template", str(SMOLLM), str(tmp_path / "bad.bin")],
        "unknown content parser": ["--template", "-"],
    }
    for message, argv in cases.items():
        stdin = (
            json.dumps({"start_anchor": "x", "fields": {"a": {"content": "nope"}}}) if argv[-1] == "-" else ""
        )
        code, out, err = cli(argv, stdin)
        assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, (
            message,
            err,
        )
    code, _, err = cli([str(SMOLLM)])  # no parser source given: argparse's usage error
    assert code == 2 and "one of the arguments --preset --template --model is required" in err


def test_output_is_written_atomically(cli, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("previous\n", encoding="utf-8")
    source = _write_jsonl(tmp_path / "in.jsonl", [{"id": i, "response": f"r{i}"} for i in range(3)])
    code, _, _ = cli(["--preset", "no-such-preset", str(source), "-o", str(target)])
    assert code == 2 and target.read_text(encoding="utf-8") == "previous\n"
    code, out, _ = cli(["--template", str(SMOLLM), str(source), "-o", str(target)])
    assert (
        code == 0 and out == "" and [r["id"] for r in _lines(target.read_text(encoding="utf-8"))] == [0, 1, 2]
    )
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out.jsonl"]  # no temporary file left behind


def test_progress_is_a_bar_on_a_terminal_and_a_count_otherwise() -> None:
    err = io.StringIO()
    progress = Progress(5, every=2, stream=err)
    for _ in range(5):
        progress.step()
    progress.end()
    assert err.getvalue() == "respc: 2 records\nrespc: 4 records\n"
    terminal = io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    progress = Progress(1000, stream=terminal)
    for _ in range(1000):
        progress.step()
    assert f"\rrespc: [{'#' * 30}] 1000/1000" in terminal.getvalue()
    progress.end()
    assert terminal.getvalue().endswith("\r" + " " * 80 + "\r")  # the bar's line is left clean


def test_parse_records_in_order_for_any_workers() -> None:
    lines = [json.dumps({"id": i, "response": _response(i)}) for i in range(200)]
    source = ParserSource(template=TEMPLATES["smollm"])
    one = list(parse_records(lines, source, tools=TOOLS))
    two = list(parse_records(lines, source, tools=TOOLS, workers=2))
    assert one == two and [json.loads(line)["id"] for line, _ in one] == list(range(200))
    assert not any(failed for _, failed in one)


def test_interleaved_runs_each_keep_their_own_parser() -> None:
    """Two runs in one process, advanced in turn, each parse with their own template (a process-wide
    parser once made the second run's template win for both)."""
    lines = [json.dumps({"id": i, "response": "<think>t</think>Hi<|im_end|>"}) for i in range(600)]
    smollm = parse_records(lines, ParserSource(template=TEMPLATES["smollm"]))
    qwen = parse_records(lines, ParserSource(preset="qwen3"))
    for (ours, _), (theirs, _) in zip(smollm, qwen):
        assert json.loads(ours)["message"] == {"role": "assistant", "thinking": "t", "content": "Hi"}
        assert json.loads(theirs)["message"] == {
            "role": "assistant",
            "reasoning_content": "t",
            "content": "Hi",
        }


def test_the_command_line_entry_point() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "respc", "parse", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0 and "--workers" in result.stdout


def test_output_keeps_the_mode_of_the_file_it_replaces_and_gets_the_umask_when_new(
    cli, tmp_path: Path
) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "response": "x"}])
    fresh = tmp_path / "fresh.jsonl"
    assert cli(["--template", str(SMOLLM), str(source), "-o", str(fresh)])[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600
    fresh.chmod(0o640)
    assert cli(["--template", str(SMOLLM), str(source), "-o", str(fresh)])[0] == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640


def test_output_never_replaces_a_fifo(cli, tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", [{"id": 1, "response": "x"}])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = cli(["--template", str(SMOLLM), str(source), "-o", str(fifo)])
    assert code == 2 and err == f"respc: error: {fifo}: cannot write: exists and is not a regular file\n"
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "pipe"]
