"""One wording for one problem across commands, and headers that are commands one can run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from support.cli import respc_cli


def test_a_missing_input_reads_the_same_in_every_command(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.json")
    for argv in (
        ["compile", missing],
        ["explain", missing],
        ["parse", "--template", missing, "-"],
        ["parse", "--preset", "qwen3", missing],
    ):
        done = respc_cli(*argv, stdin="")
        assert done.returncode == 2, argv
        assert done.stderr == f"respc: error: {missing}: no such file or directory\n", argv


def test_a_missing_output_directory_is_said_so(tmp_path: Path) -> None:
    out = tmp_path / "nodir" / "out.jsonl"
    done = respc_cli("parse", "--preset", "qwen3", "--jsonl", "-o", str(out), stdin='{"response": "x"}\n')
    assert done.returncode == 2
    assert done.stderr == f"respc: error: {out}: cannot write: {out.parent} does not exist\n"


def test_record_errors_name_the_kind_with_its_article() -> None:
    done = respc_cli("parse", "--preset", "qwen3", "--jsonl", stdin='{"response": 7}\n')
    assert json.loads(done.stdout)["error"]["message"] == "field 'response' must be a string, got an integer"


def test_the_header_of_a_module_from_a_model_dir_is_a_runnable_command(tmp_path: Path) -> None:
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3"}), encoding="utf-8")
    first = respc_cli("compile", "my-model", "-o", "parser.py", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    header = (tmp_path / "parser.py").read_text(encoding="utf-8")
    command = next(line for line in header.splitlines() if line.startswith("# Regenerate with: "))
    argv = shlex.split(command.removeprefix("# Regenerate with: "))
    assert argv[0] == "respc"
    again = respc_cli(*argv[1:], "--check", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
