"""The template a served model gets (`respc.integrations.template`, the engine-free half of the vLLM plugin),
and that respc imports no engine unless an engine loads its plugin."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import respc
from respc.integrations.template import TARGET_ENV, TEMPLATE_ENV, ServingTemplateError, served_template


def test_respc_imports_no_engine() -> None:
    code = (
        "import sys, respc, respc.integrations, respc.integrations.template, respc.serving, respc.model; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'vllm', 'sglang', 'torch', 'transformers'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_vllm_entry_point_is_declared() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert (
        '[project.entry-points."vllm.general_plugins"]\nrespc = "respc.integrations.vllm:register"'
        in pyproject
    )
    extra = next(line for line in pyproject.splitlines() if line.startswith("vllm = "))
    assert "respc[compiler]" in extra
    found = [e for e in importlib.metadata.entry_points(group="vllm.general_plugins") if e.name == "respc"]
    if found:  # an install from before the entry point existed has none
        assert found[0].value == "respc.integrations.vllm:register"


def _tokenizer(**attributes: object) -> SimpleNamespace:
    return SimpleNamespace(**{"name_or_path": "", "chat_template": None, **attributes})


def test_the_tokenizers_own_template_serves() -> None:
    template = respc.load_preset("qwen3").TEMPLATE
    served = served_template(_tokenizer(response_template=template), environ={})
    assert served.template == template and served.origin == "the tokenizer's response_template"
    assert served.reasoning_fields == ("reasoning_content",) and served.has_tools
    via_init_kwargs = served_template(_tokenizer(init_kwargs={"response_template": template}), environ={})
    assert via_init_kwargs.template == template
    module = served.module(tools=False)
    text = '<think>r</think>Hi <tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert module.parse_response(text, prefix="") == {
        "role": "assistant",
        "reasoning_content": "r",
        "content": 'Hi <tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
    }
    plain = served.module(reasoning=False, tools=False).parse_response(text, prefix="")
    assert plain["content"] == text and "reasoning_content" not in plain


def test_the_environment_wins_and_names_presets_or_files(tmp_path: Path) -> None:
    own = _tokenizer(response_template=respc.load_preset("qwen3").TEMPLATE)
    served = served_template(own, environ={TEMPLATE_ENV: "gemma4", TARGET_ENV: "5.23"})
    assert (served.preset, served.target) == ("gemma4", "5.23")
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"response_template": respc.load_preset("smollm3").TEMPLATE}))
    assert (
        served_template(own, environ={TEMPLATE_ENV: str(config)}).template
        == respc.load_preset("smollm3").TEMPLATE
    )
    for value, message in (
        ("no_such_preset", "neither a shipped preset"),
        (str(tmp_path), "neither a shipped preset"),
    ):
        with pytest.raises(ServingTemplateError, match=message):
            served_template(own, environ={TEMPLATE_ENV: value})
    config.write_text("{}")
    with pytest.raises(ServingTemplateError, match="neither a response template"):
        served_template(own, environ={TEMPLATE_ENV: str(config)})
    with pytest.raises(ServingTemplateError, match=f"{TARGET_ENV}=9.9"):
        served_template(own, environ={TARGET_ENV: "9.9"})


def test_detection_and_its_one_line_failure(tmp_path: Path) -> None:
    chat = "{{ messages }}<|im_start|>assistant\n<tool_call>\n<function=f>\n<parameter=p>\nv\n</parameter>"
    served = served_template(_tokenizer(chat_template=chat), environ={})
    assert served.preset == "qwen3_5" and served.origin.startswith("preset qwen3_5 (chat template")
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": "no_such_family"}))
    with pytest.raises(ServingTemplateError) as caught:
        served_template(_tokenizer(name_or_path=str(directory)), environ={})
    assert "\n" not in str(caught.value) and str(caught.value).endswith(
        f"set {TEMPLATE_ENV} to a preset name or a template file"
    )
    bad = {"fields": {"content": {"content": "nonsense"}}}
    with pytest.raises(ServingTemplateError, match="cannot compile the template"):
        served_template(_tokenizer(response_template=bad), environ={})
