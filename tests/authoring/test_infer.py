"""`respc infer`: a response template read off each real chat template, kept only if it parses every probe
exactly; where the preset of the family parses a probe right, the inferred template parses it the same.
Chat templates that write a format the template language cannot express are refused with the reason and
the nearest preset. Hand-written chat templates cover the formats no real one here shows cleanly."""

from __future__ import annotations

import pytest
from support.authoring import INDEX, NOW, chat_template

import respc
from respc.authoring import ChatTemplate, InferenceRefused, check, infer
from respc.authoring.check import compare
from respc.authoring.probes import Rendering, probes_for, render_probe

INFERRED = [
    "deepseek_v3_1", "glm4_6", "glm4_7_flash", "gpt_oss", "granite3_3", "granite4_0", "hunyuan_a13b",
    "internlm2", "kimi_k2", "llama3_1_json", "minimax_m2", "mistral_nemo", "mistral_small_3_2",
    "nemotron_nano_v2", "qwen2_5", "qwen3", "qwen3_5", "qwen3_coder", "smollm3",
]  # fmt: skip
REFUSED = {
    "apertus": ("function name as a JSON object key", "none (the chat template shows Apertus"),
    "deepseek_r1_distill": ("does not continue the generation prompt", "deepseek_r1"),
    "deepseek_v3_2": ("it carries the value's type", "none (the chat template shows deepseek_v3_2"),
    "gemma3_pythonic": ("no separator between them", "gemma3_pythonic"),
    "gemma4": ("Python's None, True or False", "gemma4"),
    "lfm2_5": ("without escaping the ' inside them", "lfm2"),
    "llama3_2_pythonic": ("string arguments without quotes", "llama3_pythonic"),
    "llama4_pythonic": ("string arguments without quotes", "llama4"),
    "phi4_mini": ("Python's None, True or False", None),
    "seed_oss": ("as a Python literal", "seed_oss"),
}


def test_every_real_chat_template_is_inferred_or_refused() -> None:
    assert sorted([*INFERRED, *REFUSED]) == sorted(INDEX)


def _messages(template: object, renderings: list[Rendering], target: str = "5.24") -> dict[str, object]:
    module = respc.compile_template(template, target=target)
    out = {}
    for r in renderings:
        try:
            out[r.probe.name] = module.parse_response(r.output, prefix=r.prompt, tools=r.probe.tool_list)
        except ValueError as error:
            out[r.probe.name] = f"error: {error}"
    return out


@pytest.mark.parametrize("name", INFERRED)
def test_inferred_template_parses_the_probes_as_the_preset_does(name: str) -> None:
    chat = chat_template(name)
    result = infer(chat, now=NOW)
    template = result.unwrap()
    report = check(chat, template, now=NOW)
    assert report.checked and all(f.cause == "wrong-field" for f in report.findings), report.text()
    assert all(any(w.startswith(f"{f.probe}: ") for w in result.warnings) for f in report.findings)
    preset = INDEX[name]["preset"]
    assert result.nearest == preset
    renderings = [r for p in probes_for(chat) if isinstance(r := render_probe(chat, p, NOW), Rendering)]
    preset_report = check(chat, respc.load_preset(preset), now=NOW)
    right = set(preset_report.checked) - {f.probe for f in preset_report.findings}
    ours, theirs = _messages(template, renderings), _messages(respc.load_preset(preset).TEMPLATE, renderings)
    for probe in right:  # the fields check compares: an id the preset adds is no difference
        assert isinstance(ours[probe], dict) and not compare(
            theirs[probe], ours[probe]
        ), f"{probe}: inferred {ours[probe]!r}, preset {theirs[probe]!r}"
    assert infer(chat, now=NOW).template == template  # the same evidence gives the same template


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_inexpressible_chat_templates_are_refused(name: str) -> None:
    result = infer(chat_template(name), now=NOW)
    reason, nearest = REFUSED[name]
    assert result.template is None and reason in result.refused
    if nearest is None:
        assert result.nearest is None
    else:
        assert result.nearest.startswith(nearest)
    with pytest.raises(InferenceRefused, match="cannot infer a response template"):
        result.unwrap()


def test_evidence_names_each_part() -> None:
    result = infer(chat_template("qwen3_5"), now=NOW)
    evidence = "\n".join(result.evidence)
    for part in (
        "start anchor: '<|im_start|>assistant\\n<think>\\n'",
        "reasoning opener '<think>' is prefilled by the generation prompt",
        "reasoning: from '<think>' to '</think>'",
        "end of turn: '<|im_end|>'",
        "tool calls: xml format",
        "checked: 22 probe(s) parse exactly, 2 skipped",
    ):
        assert part in evidence
    assert result.template["start_anchor"] == "<|im_start|>assistant\n"


def test_gpt_oss_content_written_as_analysis_is_a_warning() -> None:
    result = infer(chat_template("gpt_oss"), now=NOW)
    assert result.template is not None
    assert any(
        "content_and_call: the chat template writes the value 'Let me check the weather.' as reasoning_content"
        in w
        for w in result.warnings
    )


def test_reasoning_read_from_an_empty_block_is_a_warning() -> None:
    result = infer(chat_template("smollm3"), now=NOW)
    assert result.template["fields"]["reasoning_content"] == {"open": "<think>", "close": "</think>"}
    assert any("never writes reasoning_content" in w for w in result.warnings)


# Pythonic calls written as python-call-list reads them (values as JSON).
PYTHONIC = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% if m.tool_calls %}<|calls|>["
    "{% for c in m.tool_calls %}{{ c.function.name }}({% for k, v in c.function.arguments.items() %}{{ k }}="
    "{{ v | tojson }}{{ ', ' if not loop.last }}{% endfor %}){{ ', ' if not loop.last }}{% endfor %}]<|/calls|>"
    "{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Gemma 4's dialect (unquoted keys, strings between <|"|>), with null written as null.
DIALECT = (
    "{% macro value(x) %}{% if x is string %}<|\"|>{{ x }}<|\"|>{% elif x is mapping %}{{ '{' }}"
    "{% for k, y in x.items() %}{{ k }}:{{ value(y) }}{{ ',' if not loop.last }}{% endfor %}{{ '}' }}"
    "{% elif x is iterable %}[{% for y in x %}{{ value(y) }}{{ ',' if not loop.last }}{% endfor %}]"
    "{% else %}{{ x | tojson }}{% endif %}{% endmacro %}"
    "{% for m in messages %}<|turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{% for c in m.tool_calls or [] %}<|tool_call>call:"
    "{{ c.function.name }}{{ value(c.function.arguments) }}<tool_call|>{% endfor %}{{ m.content }}<turn|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|turn>model\n{% endif %}"
)


def test_pythonic_calls() -> None:
    chat = ChatTemplate(PYTHONIC)
    template = infer(chat, now=NOW).unwrap()
    calls = template["fields"]["tool_calls"]
    assert (calls["content"], calls["transform_each"]) == ("python-call-list", True)
    assert check(chat, template, now=NOW).clean
    refused = infer(chat, target="5.23", now=NOW)
    assert "only transformers 5.24 parses" in refused.refused


def test_json_dialect_calls() -> None:
    chat = ChatTemplate(DIALECT)
    template = infer(chat, now=NOW).unwrap()
    calls = template["fields"]["tool_calls"]
    assert calls["content_args"] == {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]}
    assert "(?P<name>" in calls["open_pattern"]
    assert check(chat, template, now=NOW).clean


@pytest.mark.parametrize("target", ["5.24", "5.23"])
def test_inferred_for_a_target_checks_on_that_target(target: str) -> None:
    result = infer(chat_template("qwen3"), target=target, now=NOW)
    assert result.report.target == target and result.report.clean


def test_nothing_renders() -> None:
    chat = ChatTemplate("{{ raise_exception('no') }}")
    result = infer(chat, now=NOW)
    assert result.refused == "no probe renders as a model output (the chat template raises TemplateError: no)"
