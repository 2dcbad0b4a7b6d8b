"""`respc check`: a correct response template gives no finding; each cause of a wrong parse is built on
purpose (a correct template broken in one place, or a chat template that writes a value unreadably) and
named, with the probe, field, output, expected and parsed values."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.authoring import NOW, chat_template

import respc
from respc.authoring import ChatTemplate, Probe, check
from respc.authoring.causes import ABSENT
from respc.authoring.probes import PROBES, TOOLS

QWEN3 = chat_template("qwen3")


def good() -> dict[str, Any]:
    """The qwen3 preset's template: clean against Qwen3's chat template."""
    return copy.deepcopy(respc.load_preset("qwen3").TEMPLATE)


def findings(chat: ChatTemplate, template: Any, **kwargs: Any) -> list:
    return list(check(chat, template, now=NOW, **kwargs).findings)


def only(found: list, probe: str, field: str) -> Any:
    hits = [f for f in found if f.probe == probe and f.field == field]
    assert len(hits) == 1, f"{probe}/{field} in {[(f.probe, f.field, f.cause) for f in found]}"
    return hits[0]


def test_a_correct_template_is_clean() -> None:
    report = check(QWEN3, good(), now=NOW, name="qwen3")
    assert report.clean and report.findings == ()
    assert len(report.checked) == 22
    assert [probe for probe, _ in report.skipped] == [
        "reasoning (enable_thinking=false)",
        "reasoning_and_call (enable_thinking=false)",
    ]
    assert all("does not continue the generation prompt" in reason for _, reason in report.skipped)
    assert report.text().endswith("22 probe(s) checked, 2 skipped, clean\n")


def test_whitespace() -> None:
    template = good()
    template["fields"]["reasoning_content"]["content_args"] = {"strip": False}
    finding = only(findings(QWEN3, template), "reasoning (enable_thinking=true)", "reasoning_content")
    assert finding.cause == "whitespace"
    assert finding.parsed == "\n" + finding.expected + "\n"
    assert "strip" in finding.fix


def test_end_token_missing_from_the_closes() -> None:
    template = good()
    template["fields"]["content"] = {"close": "<|endoftext|>"}
    finding = only(findings(QWEN3, template), "plain (enable_thinking=true)", "content")
    assert (finding.cause, finding.expected, finding.parsed) == (
        "end-token",
        "It is sunny in Paris today.",
        "It is sunny in Paris today.<|im_end|>",
    )
    assert "'<|im_end|>'" in finding.fix
    assert finding.output == "<think>\n\n</think>\n\nIt is sunny in Paris today.<|im_end|>"


def test_text_no_field_captures() -> None:
    template = good()
    del template["fields"]["reasoning_content"]
    finding = only(findings(QWEN3, template), "plain (enable_thinking=true)", "content")
    assert finding.cause == "unparsed"
    assert "'<think>\\n\\n</think>'" in finding.explanation
    explicit = good()
    explicit["fields"]["content"]["open"] = "<answer>"
    finding = only(findings(QWEN3, explicit), "plain (enable_thinking=true)", "content")
    assert (finding.cause, finding.parsed) == ("unparsed", ABSENT)
    assert "nothing captures 'It is sunny in Paris today.'" in finding.explanation


def test_value_in_the_wrong_field() -> None:
    template = good()
    template["fields"]["reasoning_content"]["close"] = "</thinking>"
    found = findings(QWEN3, template)
    finding = only(found, "reasoning (enable_thinking=true)", "content")
    assert (finding.cause, finding.parsed) == ("wrong-field", ABSENT)
    assert "lands in 'reasoning_content'" in finding.explanation


# Content, then the calls, then a newline the template writes before the end of the turn.
AFTER_CALLS = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% for c in m.tool_calls or [] %}<call>"
    "{{ c.function | tojson }}</call>{% endfor %}{{ '\\n' if m.tool_calls }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
AFTER_CALLS_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {
            "open": "<call>",
            "close": "</call>",
            "content": "json",
            "repeats": True,
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|end|>"},
    },
}


def test_a_later_implicit_segment_replaces_the_content() -> None:
    found = findings(ChatTemplate(AFTER_CALLS), AFTER_CALLS_TEMPLATE)
    finding = only(found, "content_and_call", "content")
    assert (finding.cause, finding.expected, finding.parsed) == (
        "overwrite",
        "Let me check the weather.",
        ABSENT,
    )
    assert "quirk Q1" in finding.explanation and r"\s*" in finding.fix
    fixed = copy.deepcopy(AFTER_CALLS_TEMPLATE)
    fixed["fields"]["tool_calls"] |= {"open_pattern": r"\s*<call>"}
    del fixed["fields"]["tool_calls"]["open"]
    fixed["fields"]["content"] = {"close_pattern": r"\s*<\|end\|>"}
    assert findings(ChatTemplate(AFTER_CALLS), fixed) == []


def test_a_field_that_is_not_repeats_keeps_the_last_call() -> None:
    template = good()
    template["fields"]["tool_calls"]["repeats"] = False
    template["fields"]["tool_calls"]["transform"] = [{"type": "function", "function": "{content}"}]
    finding = only(findings(QWEN3, template), "parallel_calls (enable_thinking=true)", "tool_calls")
    assert finding.cause == "overwrite" and "repeats: true" in finding.fix


@pytest.mark.parametrize("target", ["5.24", "5.23"])
def test_a_dollar_close_misreads_a_stream(target: str) -> None:
    """`</think>|$`: 5.23 closes the reasoning at the first newline that ends a chunk; 5.24 holds the `$`
    and misses the `</think>` after it, so the reasoning runs on into the content."""
    template = good()
    del template["fields"]["reasoning_content"]["close"]
    template["fields"]["reasoning_content"]["close_pattern"] = "</think>|$"
    found = findings(QWEN3, template, target=target)
    assert found and all(f.streamed and f.cause == "dollar-close" for f in found)
    finding = only(found, "reasoning (enable_thinking=true)", "reasoning_content")
    assert finding.expected == "The user asks about Paris.\nI should answer briefly."
    cut = {"5.23": ABSENT, "5.24": finding.expected + "\n</think>\n\nIt is sunny in Paris today.<|im_end|>"}
    assert finding.parsed == cut[target]
    assert "'</think>|$'" in finding.explanation and "\\Z" in finding.fix


def test_the_close_inside_a_value() -> None:
    call = {"type": "function", "function": {"name": "store", "arguments": {"text": "see </tool_call> here"}}}
    probe = Probe(
        "markup",
        ({"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]}),
        TOOLS,
    )
    [finding] = findings(QWEN3, good(), probes=[probe])
    assert (finding.field, finding.cause) == ("message", "close-in-value")
    assert finding.parsed.startswith("ValueError: json parser could not parse region as JSON.")


def test_a_value_of_the_wrong_type() -> None:
    upstream = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {
                "open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
            "content": {"close": "<|im_end|>"},
        },
    }
    finding = only(
        findings(chat_template("qwen3_coder"), upstream),
        "args_strings",
        "tool_calls[0].function.arguments.digits",
    )
    assert (finding.cause, finding.expected, finding.parsed) == ("type", "42", 42)
    assert "tools=" in finding.fix


def test_a_call_of_the_wrong_shape() -> None:
    template = good()
    template["fields"]["tool_calls"]["transform"] = "{content}"
    finding = only(findings(QWEN3, template), "tool_call (enable_thinking=true)", "tool_calls[0]")
    assert finding.cause == "shape" and '"type": "function"' in finding.fix
    template["fields"]["tool_calls"]["transform"] = {
        "type": "function",
        "function": {"name": "{content.name}", "arguments": "{content.parameters}"},
    }
    finding = only(findings(QWEN3, template), "tool_call (enable_thinking=true)", "message")
    assert finding.cause == "shape" and "missing key 'parameters'" in finding.explanation


def test_no_role() -> None:
    template = good()
    del template["defaults"]
    found = findings(QWEN3, template)
    assert {(f.field, f.cause) for f in found} == {("role", "role")}
    assert len(found) == 22


def test_a_chat_template_that_cannot_express_its_calls() -> None:
    found = findings(chat_template("phi4_mini"), respc.load_preset("phi4_mini"))
    finding = only(found, "tool_call", "tool_calls")
    assert finding.cause == "inexpressible" and "Python literals" in finding.explanation
    found = findings(chat_template("llama3_2_pythonic"), respc.load_preset("llama3_pythonic"))
    finding = only(found, "tool_call", "message")
    assert finding.cause == "inexpressible" and "without quotes" in finding.explanation


def test_a_parse_error_with_no_better_name() -> None:
    template = good()
    template["fields"]["tool_calls"]["content"] = "int"
    finding = only(findings(QWEN3, template), "tool_call (enable_thinking=true)", "message")
    assert finding.cause == "parse-error" and "invalid literal for int()" in finding.explanation


def test_a_dollar_open_cuts_another_field_in_a_stream() -> None:
    """An explicit open that can match at `$` opens early in a 5.23 stream, cutting the content there;
    the finding names the open that did it."""
    template = good()
    template["fields"]["marker"] = {"open_pattern": r"\.$", "close": "</never>"}
    probe = Probe(
        "dotted", ({"role": "user", "content": "x"}, {"role": "assistant", "content": "One.\nTwo."})
    )
    assert findings(QWEN3, template, probes=[probe]) == []
    finding = only(findings(QWEN3, template, probes=[probe], target="5.23"), "dotted", "content")
    assert finding.streamed and finding.cause == "dollar-close"
    assert "the open of 'marker'" in finding.explanation


def test_probes_the_chat_template_cannot_render_are_skipped() -> None:
    refusing = ChatTemplate(
        "{% if tools %}{{ raise_exception('no tools here') }}{% endif %}{% for m in messages %}<|{{ m.role }}|>"
        "{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|assistant|>",
        "fields": {"content": {"close": "<|end|>"}},
    }
    report = check(refusing, template, now=NOW)
    assert report.clean
    assert report.checked == ("plain", "empty_content")
    skipped = dict(report.skipped)
    assert skipped["tool_call"] == "the chat template raises TemplateError: no tools here"
    assert skipped["reasoning"] == "the chat template does not render the turn's reasoning_content"


def test_report_as_json() -> None:
    template = good()
    template["fields"]["content"] = {"close": "<|endoftext|>"}
    data = check(QWEN3, template, now=NOW, name="broken").to_json()
    assert data["response_template"] == "broken" and data["target"] == "5.24"
    first = data["findings"][0]
    assert set(first) == {
        "probe",
        "field",
        "output",
        "expected",
        "parsed",
        "cause",
        "explanation",
        "fix",
        "streamed",
    }
    template = good()
    template["fields"]["content"]["open"] = "<answer>"
    absent = check(QWEN3, template, now=NOW, probes=[PROBES[0]]).to_json()["findings"][0]
    assert "parsed" not in absent and absent["expected"] == "It is sunny in Paris today."


@pytest.mark.parametrize("target", ["5.24", "5.23"])
def test_a_preset_is_checked_as_its_target(target: str) -> None:
    report = check(QWEN3, respc.load_preset("qwen3"), target=target, now=NOW)
    assert report.target == target and report.clean
