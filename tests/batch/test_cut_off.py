"""Responses that end inside a region (cut off): transformers closes the region as if its delimiter had
come, and respc keeps that message, but every engine counts and flags such records, in every output
layout and in the summary, and `--strict-end` fails them. Also the typed `parse_errors` column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import respc_cli
from support.oracles import oracle

import respc
from respc.batch.records import ParserSource, RecordParser, parse_records

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CUT = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis"
WHOLE = CUT + "\n</parameter>\n</function>\n</tool_call>"


def _records(tmp_path: Path) -> Path:
    path = tmp_path / "gens.jsonl"
    rows = [{"id": 1, "response": WHOLE}, {"id": 2, "response": CUT}, {"id": 3, "response": "Hi<|im_end|>"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_cut_off_tool_call_parses_as_transformers_does_and_is_flagged() -> None:
    module = respc.load_preset("qwen3_5")
    template = module.TEMPLATE
    message = module.parse_response(CUT, prefix="")
    assert [("ok", message)] == oracle("5.24").request("parse", (template, CUT, "", None))  # upstream's
    assert message["tool_calls"][0]["function"]["arguments"] == {}
    result = RecordParser(module).result({"response": CUT})
    assert result.error is None and result.cut_off == "tool_calls"
    assert RecordParser(module).result({"response": WHOLE}).cut_off is None
    strict = RecordParser(module, strict_end=True).result({"response": CUT})
    assert strict.failed and strict.error[0] == "CutOff" and "'tool_calls'" in strict.error[1]


def test_jsonl_lines_carry_the_flag_for_any_worker_count(tmp_path: Path) -> None:
    lines = _records(tmp_path).read_text().splitlines()
    for workers in (1, 2):
        out = [
            json.loads(line)
            for line, _ in parse_records(lines, ParserSource(preset="qwen3_5"), workers=workers)
        ]
        assert [row.get("cut_off") for row in out] == [None, True, None]


@pytest.mark.parametrize("layout", ["json", "typed"])
def test_every_layout_and_the_summary_count_it(tmp_path: Path, layout: str) -> None:
    source = _records(tmp_path)
    out = tmp_path / "out.parquet"
    done = respc_cli("parse", str(source), "--preset", "qwen3_5", "-o", str(out), "--layout", layout)
    assert done.returncode == 0, done.stderr
    assert "3 records, 0 failed, 1 cut off" in done.stderr
    assert pq.read_table(out).column("cut_off").to_pylist() == [False, True, False]
    jsonl = respc_cli("parse", str(source), "--preset", "qwen3_5")
    assert "1 cut off" in jsonl.stderr
    assert [json.loads(line).get("cut_off") for line in jsonl.stdout.splitlines()] == [None, True, None]


def test_strict_end_fails_cut_off_records(tmp_path: Path) -> None:
    source = _records(tmp_path)
    done = respc_cli("parse", str(source), "--preset", "qwen3_5", "--strict-end")
    assert done.returncode == 1
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows[1]["error"]["type"] == "CutOff" and rows[1]["cut_off"] is True
    assert "3 records, 1 failed, 1 cut off" in done.stderr
    one = tmp_path / "answer.txt"
    one.write_text(CUT, encoding="utf-8")
    single = respc_cli("parse", str(one), "--preset", "qwen3_5")
    assert single.returncode == 0 and "cut off" in single.stderr
    assert respc_cli("parse", str(one), "--preset", "qwen3_5", "--strict-end").returncode == 1


def test_a_truncated_json_call_that_fails_is_flagged_too(tmp_path: Path) -> None:
    result = RecordParser(respc.load_preset("qwen3")).result({"response": '<tool_call>{"name": "f", "argu'})
    assert result.error is not None and result.cut_off == "tool_calls"


def test_lenient_typed_rows_put_region_errors_in_a_typed_column(tmp_path: Path) -> None:
    source = tmp_path / "gens.jsonl"
    rows = [{"id": 1, "response": '<tool_call>{"name": oops}</tool_call>'}, {"id": 2, "response": "ok"}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.parquet"
    done = respc_cli(
        "parse", str(source), "--preset", "qwen3", "--lenient", "--layout", "typed", "-o", str(out)
    )
    assert done.returncode == 1, done.stderr
    table = pq.read_table(out)
    assert table.schema.field("parse_errors").type == pa.list_(
        pa.struct(
            [
                ("field", pa.string()),
                ("exception", pa.string()),
                ("error", pa.string()),
                ("text", pa.string()),
            ]
        )
    )
    errors = table.column("parse_errors").to_pylist()
    assert errors[1] is None
    assert errors[0][0]["field"] == "tool_calls" and errors[0][0]["exception"] == "ValueError"
    assert errors[0][0]["text"] == '{"name": oops}'
