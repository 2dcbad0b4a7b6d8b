"""`respc check` and `respc infer` on the command line (exit 0 clean or inferred, 1 findings or refused, 2
usage errors), and `respc.for_model(..., infer=True)` for a model no preset covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.authoring import CHAT_TEMPLATES, INDEX, chat_template, model_dir

import respc
from respc.cli import main

QWEN3 = str(CHAT_TEMPLATES / "qwen3.jinja")
# A format no preset knows (its markers match none), with JSON calls: respc infers it.
BESPOKE = (
    "{% for m in messages %}<|from:{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<|invoke|>"
    "{{ c.function | tojson }}<|/invoke|>{% endfor %}<|over|>{% endfor %}"
    "{% if add_generation_prompt %}<|from:assistant|>{% endif %}"
)


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_clean(capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, "check", "--preset", "qwen3", "--chat-template", QWEN3)
    assert (code, err) == (0, "")
    assert out.endswith("22 probe(s) checked, 2 skipped, clean\n")


def test_check_findings_as_json(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(
        capsys,
        "check",
        "--preset",
        "gpt_oss",
        "--chat-template",
        str(CHAT_TEMPLATES / "gpt_oss.jinja"),
        "--json",
    )
    report = json.loads(out)
    assert code == 1 and report["clean"] is False
    assert {f["cause"] for f in report["findings"]} == {"unparsed", "wrong-field"}
    assert report["response_template"] == "gpt_oss preset" and report["target"] == "5.24"


def test_check_a_template_file_and_a_model_directory(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    template = tmp_path / "template.json"
    template.write_text(json.dumps(respc.load_preset("qwen3").TEMPLATE), encoding="utf-8")
    assert run(capsys, "check", str(template), "--chat-template", QWEN3)[0] == 0
    broken = respc.load_preset("qwen3").TEMPLATE | {"defaults": {}}
    directory = model_dir(
        tmp_path / "model",
        {
            "chat_template": chat_template("qwen3").template,
            "response_template": broken,
            **INDEX["qwen3"]["special_tokens"],
        },
    )
    code, out, _ = run(capsys, "check", str(directory), "--target", "5.23")
    assert code == 1 and "role: role" in out and "(transformers 5.23)" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "check needs SOURCE"),
        (["check", "--preset", "qwen3"], "--chat-template PATH is needed"),
        (["check", "--preset", "nope", "--chat-template", QWEN3], "no preset named 'nope'"),
        (["check", "--preset", "qwen3", "--chat-template", "missing.jinja"], "missing.jinja: no such file"),
        (["infer", "missing.jinja"], "missing.jinja: no such file"),
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_syntax_errors_and_bad_templates(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m }", encoding="utf-8")
    code, _, err = run(capsys, "infer", str(bad))
    assert code == 2 and "bad.jinja: line 1:" in err
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"fields": {}}), encoding="utf-8")
    code, _, err = run(capsys, "check", str(invalid), "--chat-template", QWEN3)
    assert code == 2 and "invalid.json: response_template.fields must be a non-empty dict" in err


def test_infer_writes_the_template(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out_file = tmp_path / "template.json"
    code, out, err = run(capsys, "infer", QWEN3, "-o", str(out_file))
    assert (code, out) == (0, "")
    assert "checked: 22 probe(s) parse exactly" in err
    template = json.loads(out_file.read_text(encoding="utf-8"))
    assert run(capsys, "check", str(out_file), "--chat-template", QWEN3)[0] == 0
    code, out, _ = run(capsys, "infer", QWEN3)
    assert code == 0 and json.loads(out) == template


def test_infer_refuses(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    out_file = tmp_path / "template.json"
    code, out, err = run(
        capsys, "infer", str(CHAT_TEMPLATES / "llama3_2_pythonic.jinja"), "-o", str(out_file)
    )
    assert (code, out) == (1, "") and not out_file.exists()
    assert (
        "respc: cannot infer a response template: the chat template writes string arguments without quotes"
        in err
    )
    assert "(nearest preset: llama3_pythonic)" in err
    code, out, _ = run(capsys, "infer", str(CHAT_TEMPLATES / "llama3_2_pythonic.jinja"), "--json")
    result = json.loads(out)
    assert code == 1 and result["template"] is None and result["nearest_preset"] == "llama3_pythonic"


def test_for_model_infers_as_a_last_step(tmp_path: Path) -> None:
    directory = model_dir(tmp_path / "bespoke", {"chat_template": BESPOKE, "eos_token": "<|over|>"})
    with pytest.raises(respc.ResponseTemplateNotFound, match="no shipped preset matches"):
        respc.for_model(directory)
    parser = respc.for_model(directory, infer=True, cache=tmp_path / "cache")
    assert parser.origin == "inferred from tokenizer_config.json (respc infer)"
    assert any(line.startswith("checked: ") for line in parser.evidence)
    output = 'Sure.<|invoke|>{"name": "f", "arguments": {"x": 1}}<|/invoke|><|over|>'
    assert parser.parse_response(output, prefix="<|from:user|>Hi<|over|><|from:assistant|>") == {
        "role": "assistant",
        "content": "Sure.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
    }


def test_for_model_says_why_inference_refused(tmp_path: Path) -> None:
    text = chat_template("phi4_mini").template
    directory = model_dir(tmp_path / "phi", {"chat_template": text})
    with pytest.raises(
        respc.ResponseTemplateNotFound, match="inference refused: the chat template writes Python"
    ):
        respc.for_model(directory, infer=True, cache=tmp_path / "cache")
    empty = model_dir(tmp_path / "empty", {})
    with pytest.raises(respc.ResponseTemplateNotFound, match="no chat template to infer one from"):
        respc.for_model(empty, infer=True)
