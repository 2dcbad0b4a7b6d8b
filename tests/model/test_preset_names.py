"""One resolver for preset names at every entry point: the API, `--preset` of parse, compile, explain
and check, and `respc presets NAME`; a name it does not know gets a short line of sensible guesses."""

from __future__ import annotations

import json

import pytest
from support.cli import respc_cli

import respc
from respc.registry import preset_name


@pytest.mark.parametrize(
    ("given", "meant"), [("Qwen3", "qwen3"), ("qwen3_moe", "qwen3"), ("QWEN3_5", "qwen3_5")]
)
def test_names_cases_and_model_types_resolve_everywhere(given: str, meant: str) -> None:
    assert preset_name(given) == meant
    assert respc.load_preset(given) is respc.load_preset(meant)
    parsed = respc_cli("parse", "-", "--preset", given, stdin="Hi<|im_end|>")
    assert parsed.returncode == 0, parsed.stderr
    assert json.loads(parsed.stdout)["content"] == "Hi"
    compiled = respc_cli("compile", "--preset", given)
    assert compiled.returncode == 0, compiled.stderr
    assert f"# Regenerate with: respc compile --preset {meant}\n" in compiled.stdout
    explained = respc_cli("explain", "--preset", given)
    assert explained.returncode == 0 and f"Template preset {meant}" in explained.stdout
    described = respc_cli("presets", given)
    assert described.returncode == 0 and meant in described.stdout


def test_an_unknown_name_gets_one_short_line_of_likely_presets() -> None:
    with pytest.raises(respc.PresetNotFound) as raised:
        respc.load_preset("llama3")
    message = str(raised.value)
    assert "did you mean llama3_json, llama3_pythonic?" in message and "jamba" not in message
    done = respc_cli("parse", "-", "--preset", "llama3", stdin="x")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert len(done.stderr) < 160 and "llama3_pythonic" in done.stderr
    assert "gemma4" not in done.stderr  # not every shipped name
    assert respc_cli("explain", "--preset", "nope").returncode == 2


def test_source_and_preset_exclude_each_other(tmp_path) -> None:
    done = respc_cli("compile", "x.json", "--preset", "qwen3")
    assert done.returncode == 2 and "not allowed with" in done.stderr
