"""The `respc` command, run as a subprocess the way users run it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import respc_cli
from support.compare import TEMPLATES

import respc

ROOT = Path(__file__).parents[2]


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": "<|im_end|>",
        "response_template": TEMPLATES["smollm"],
    }
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return model


def test_compile_to_stdout_matches_the_api(tmp_path: Path) -> None:
    path = tmp_path / "smollm.json"
    path.write_text(json.dumps(TEMPLATES["smollm"]), encoding="utf-8")
    done = respc_cli("compile", "smollm.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == respc.generate_source(TEMPLATES["smollm"], name="smollm.json").replace(
        "# Regenerate with: respc compile smollm.json\n", "# Regenerate with: respc compile smollm.json\n"
    )


def test_compile_tokenizer_config_dir_and_stdin_agree(config_dir: Path, tmp_path: Path) -> None:
    from_dir = respc_cli("compile", str(config_dir), "-o", str(tmp_path / "a.py"))
    from_file = respc_cli("compile", str(config_dir / "tokenizer_config.json"), "-o", str(tmp_path / "b.py"))
    from_stdin = respc_cli("compile", "-", stdin=json.dumps(TEMPLATES["smollm"]))
    assert (from_dir.returncode, from_file.returncode, from_stdin.returncode) == (0, 0, 0)
    body = lambda text: text.split("\nfrom __future__")[1]  # noqa: E731 - headers name their sources
    assert (
        body((tmp_path / "a.py").read_text())
        == body((tmp_path / "b.py").read_text())
        == body(from_stdin.stdout)
    )
    header = (tmp_path / "a.py").read_text().splitlines()[0]
    assert header.endswith("from tokenizer_config.json; do not edit.")  # never an absolute path


def test_compiled_module_imports_and_parses(config_dir: Path, tmp_path: Path) -> None:
    assert respc_cli("compile", str(config_dir), "-o", str(tmp_path / "smollm_parser.py")).returncode == 0
    code = (
        "import smollm_parser; print(smollm_parser.parse_response('<think>a</think>b<|im_end|>', prefix=''))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip() == "{'role': 'assistant', 'thinking': 'a', 'content': 'b'}"


def test_check_reports_fresh_stale_and_missing(config_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "parser.py"
    assert respc_cli("compile", str(config_dir), "--check", "-o", str(out)).returncode == 1  # missing
    assert not out.exists(), "--check must write nothing"
    assert respc_cli("compile", str(config_dir), "-o", str(out)).returncode == 0
    assert respc_cli("compile", str(config_dir), "--check", "-o", str(out)).returncode == 0
    out.write_text(out.read_text().replace("</think>", "</thonk>"))
    stale = respc_cli("compile", str(config_dir), "--check", "-o", str(out))
    assert stale.returncode == 1
    assert '-THINKING_CLOSE = "</thonk>"' in stale.stdout and '+THINKING_CLOSE = "</think>"' in stale.stdout
    assert "stale" in stale.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file or directory"),
        ('{"fields": {', "invalid JSON at line 1 column 13"),
        ('{"tokenizer_class": "X"}', "has no 'response_template' key"),
        ('{"response_template": null}', "'response_template' is null"),
        (
            '{"start_anchor": "a", "fields": {"x": {"open": "<x>", "bogus": 1}}}',
            "Field 'x': unknown keys ['bogus']",
        ),
        (
            '{"start_anchor": "a", "fields": {"x": {"open_pattern": "(", "close": "y"}}}',
            "Field 'x': invalid open_pattern regex",
        ),
        (b"\xff\xfe{", "not UTF-8 text"),
    ],
)
def test_errors_are_one_line_exit_2_and_touch_nothing(content: object, message: str, tmp_path: Path) -> None:
    source = tmp_path / "template.json"
    if isinstance(content, bytes):
        source.write_bytes(content)
    elif content is not None:
        source.write_text(content, encoding="utf-8")
    out = tmp_path / "out.py"
    out.write_text("previous contents")
    done = respc_cli("compile", str(source), "-o", str(out))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "template.json" in lines[0], done.stderr
    assert out.read_text() == "previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out.py", *(["template.json"] if content is not None else [])]
    )


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text('{"fields": {}}')
    done = respc_cli("-v", "compile", str(tmp_path / "t.json"))
    assert done.returncode == 2
    assert "Traceback" in done.stderr and "fields must be a non-empty dict" in done.stderr


def test_directory_without_config_and_usage_errors(tmp_path: Path) -> None:
    assert respc_cli("compile", str(tmp_path)).returncode == 2
    assert respc_cli("compile").returncode == 2
    assert respc_cli("frobnicate").returncode == 2


def test_explain_prints_the_plan(config_dir: Path) -> None:
    done = respc_cli("explain", str(config_dir))
    assert done.returncode == 0, done.stderr
    assert re.search(r"'thinking'\s+close\s+literal\s+'</think>'", done.stdout)
    assert re.search(r"\(prefix\)\s+anchor\s+literal\s+'<\|im_start\|>assistant\\n'", done.stdout)
    assert "_scan_outside: Outside explicit regions, in the implicit field 'content'" in done.stdout
    assert "Context kept before the scan position: 0 character(s)" in done.stdout


def test_write_is_atomic_when_the_rename_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from respc._io import write_atomic

    target = tmp_path / "parser.py"
    target.write_text("old")

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["parser.py"]


def test_backtracking_warning_is_one_line_and_compiles(tmp_path: Path) -> None:
    source = tmp_path / "t.json"
    source.write_text(
        json.dumps({"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": "(a+)+$"}}})
    )
    done = respc_cli("compile", str(source), "-o", str(tmp_path / "p.py"))
    assert done.returncode == 0
    assert done.stderr.startswith("respc: warning: ") and done.stderr.count("\n") == 1
    assert "may backtrack exponentially" in done.stderr


def test_main_in_process_leaves_the_callers_warning_display_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import warnings

    from respc.cli import main

    source = tmp_path / "t.json"
    source.write_text(
        json.dumps({"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": "(a+)+$"}}})
    )
    before = warnings.showwarning
    assert main(["compile", str(source), "-o", str(tmp_path / "p.py")]) == 0
    assert "respc: warning: " in capsys.readouterr().err
    assert warnings.showwarning is before


def test_model_dir_without_template_uses_the_preset_for_its_model_type(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "PreTrainedTokenizerFast"}')
    (tmp_path / "config.json").write_text('{"model_type": "qwen3"}')
    done = respc_cli("compile", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "from qwen3 preset (for " in done.stdout.splitlines()[0]
    assert respc.load_preset("qwen3").TEMPLATE == respc.preset_for("qwen3").TEMPLATE
    (tmp_path / "config.json").write_text('{"model_type": "no_such_model"}')
    missing = respc_cli("compile", str(tmp_path))
    assert missing.returncode == 2 and "has no response_template" in missing.stderr
    assert missing.stderr.count("\n") == 1


def test_outputs_get_ordinary_permissions(tmp_path: Path) -> None:
    import os
    import stat

    out = tmp_path / "parser.py"
    source = tmp_path / "t.json"
    source.write_text(json.dumps(TEMPLATES["smollm"]))
    assert respc_cli("compile", str(source), "-o", str(out)).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    out.chmod(0o640)
    assert respc_cli("compile", str(source), "-o", str(out)).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_regen_readme_errors_name_the_readme_in_one_line(tmp_path: Path) -> None:
    missing = respc_cli("regen", "--check", "--readme", str(tmp_path / "NOPE.md"))
    assert (missing.returncode, missing.stderr) == (
        2,
        f"respc: error: {tmp_path / 'NOPE.md'}: no such file or directory\n",
    )
    bare = tmp_path / "BARE.md"
    bare.write_text("# no table here\n", encoding="utf-8")
    unmarked = respc_cli("regen", "--check", "--readme", str(bare))
    assert unmarked.returncode == 2 and unmarked.stderr.count("\n") == 1
    assert unmarked.stderr.startswith(f"respc: error: {bare}: no <!-- preset-table:start -->")
    assert "respc/presets" not in unmarked.stderr
    assert respc_cli("regen", "--check", "--readme", "docs/presets.md").returncode == 0


def test_regen_rewrites_the_readme_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import stat

    from respc.compiler.regen import PRESET_TABLE_END, PRESET_TABLE_START, preset_table, update_readme

    readme = tmp_path / "README.md"
    stale = f"intro\n{PRESET_TABLE_START}\nold table\n{PRESET_TABLE_END}\noutro\n"
    readme.write_text(stale, encoding="utf-8")
    readme.chmod(0o640)
    assert update_readme(readme, check=True) and readme.read_text(encoding="utf-8") == stale
    monkeypatch.setattr(os, "replace", lambda *args: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError, match="No space left"):
        update_readme(readme)
    assert readme.read_text(encoding="utf-8") == stale and os.listdir(tmp_path) == ["README.md"]
    monkeypatch.undo()
    assert update_readme(readme)
    assert readme.read_text(encoding="utf-8") == (
        f"intro\n{PRESET_TABLE_START}\n{preset_table()}{PRESET_TABLE_END}\noutro\n"
    )
    assert stat.S_IMODE(readme.stat().st_mode) == 0o640
    assert not update_readme(readme)
