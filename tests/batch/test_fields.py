"""A misspelt field name stops the run before any record is parsed, in one line listing the fields the
records have (JSONL as Parquet always did), rather than failing every record of the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import respc_cli

ROWS = [{"id": 1, "text": "Hi<|im_end|>", "prompt": ""}, {"id": 2, "text": "Ho<|im_end|>"}]


def _jsonl(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "options",
    [["--response-field", "txt"], ["--response-field", "text", "--prompt-field", "promt"], []],
)
def test_a_field_no_record_has_stops_the_run_in_one_line(tmp_path: Path, options: list[str]) -> None:
    source = _jsonl(tmp_path, ROWS)
    out = tmp_path / "out.jsonl"
    for argv, stdin in (([str(source)], None), (["--jsonl"], source.read_text())):
        done = respc_cli("parse", *argv, "--preset", "qwen3", *options, "-o", str(out), stdin=stdin)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "no record has a field" in done.stderr
        assert "fields: id, text, prompt" in done.stderr
        assert not out.exists()


def test_a_field_some_records_lack_fails_only_those(tmp_path: Path) -> None:
    source = _jsonl(tmp_path, [*ROWS, {"id": 3, "response": "x"}])
    done = respc_cli("parse", str(source), "--preset", "qwen3", "--response-field", "text")
    assert done.returncode == 1, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row.get("error") is None for row in rows] == [True, True, False]
