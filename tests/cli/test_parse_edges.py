"""`respc parse` where a careful user would otherwise get a wrong answer without a word: the prompt of a
single response, abbreviated options, files without a suffix in a shard directory, and the format of
one response written to `-o`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import respc_cli

import respc

ANSWER = "The user asks for 2+2.\n</think>\n\n4<|im_end|>"


def test_a_single_response_takes_the_prompt_it_continues(tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER, encoding="utf-8")
    expected = respc.load_preset("qwen3_5").parse_response(ANSWER, prefix="<think>\n")
    assert expected["reasoning_content"].startswith("The user asks")
    done = respc_cli("parse", str(answer), "--preset", "qwen3_5", "--prefix", "<think>\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n", encoding="utf-8")
    done = respc_cli("parse", str(answer), "--preset", "qwen3_5", "--prefix-file", str(prompt))
    assert json.loads(done.stdout) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["parse", "-", "--preset", "qwen3_5", "--prompt", "<think>\n"],  # was --prompt-field, ignored
        ["parse", "-", "--preset", "qwen3_5", "--lenie"],
        ["compile", "-", "--tar", "5.23"],
    ],
)
def test_abbreviated_options_are_refused(argv: list[str]) -> None:
    done = respc_cli(*argv, stdin=ANSWER)
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr


def test_record_options_on_one_response_are_refused(tmp_path: Path) -> None:
    done = respc_cli("parse", "-", "--preset", "qwen3_5", "--prompt-field", "p", stdin=ANSWER)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--prompt-field is for records" in done.stderr
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"response": ANSWER}) + "\n", encoding="utf-8")
    done = respc_cli("parse", str(records), "--preset", "qwen3_5", "--prefix", "<think>\n")
    assert done.returncode == 2 and "--prefix is for a single response" in done.stderr


def test_verbose_after_the_command_works() -> None:
    done = respc_cli("parse", "-", "--preset", "nope", "-v", stdin="x")
    assert done.returncode == 2 and "Traceback" in done.stderr


def test_files_without_a_suffix_are_shards_only_with_format(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    gens = tmp_path / "gens"
    gens.mkdir()
    pq.write_table(pa.table({"response": ["Hi<|im_end|>"]}), gens / "a.parquet")
    (gens / "README").write_text("how these were made\n", encoding="utf-8")
    done = respc_cli("parse", str(gens), "--preset", "qwen3")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["message"]["content"] for line in done.stdout.splitlines()] == ["Hi"]
    named = respc_cli("parse", str(gens), "--preset", "qwen3", "--format", "parquet")
    assert named.returncode == 2 and "README" in named.stderr  # named: files without a suffix are shards


def test_one_response_to_a_parquet_file_writes_parquet(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    answer = tmp_path / "answer.txt"
    answer.write_text("<think>hm</think>Hi<|im_end|>", encoding="utf-8")
    out = tmp_path / "q.parquet"
    done = respc_cli("parse", str(answer), "--preset", "qwen3", "-o", str(out), "--layout", "typed")
    assert done.returncode == 0, done.stderr
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 1 and rows[0]["content"] == "Hi" and rows[0]["reasoning_content"] == "hm"
    assert json.loads(rows[0]["message"]) == respc.load_preset("qwen3").parse_response(
        answer.read_text(), prefix=""
    )
    line = tmp_path / "q.jsonl"
    assert respc_cli("parse", str(answer), "--preset", "qwen3", "-o", str(line)).returncode == 0
    assert json.loads(line.read_text())["message"]["content"] == "Hi"  # one record line


def test_options_that_would_be_ignored_are_refused(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"response": "Hi"}) + "\n", encoding="utf-8")
    out = str(tmp_path / "o.jsonl")
    typed = respc_cli("parse", str(records), "--preset", "qwen3", "-o", out, "--layout", "typed")
    assert typed.returncode == 2 and "--layout is for Parquet output" in typed.stderr
    rows = respc_cli("parse", str(records), "--preset", "qwen3", "-o", out, "--shard-rows", "5")
    assert rows.returncode == 2 and "--shard-rows is for a directory of shards" in rows.stderr
