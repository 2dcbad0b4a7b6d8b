"""errors="keep": a region that fails to parse is reported, nothing else is lost, finalize returns.

The default (errors="strict") stays identical to transformers; that is what every differential
test checks. Here the lenient mode is compared with the strict one on the same inputs.
"""

from __future__ import annotations

import pytest
from support.compare import TEMPLATES

import respc

SMOLLM = TEMPLATES["smollm"]
BAD_CALL = "<tool_call>{bad}</tool_call>"
GOOD_CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


def test_malformed_tool_call_is_reported_and_the_rest_kept() -> None:
    text = f"<think>plan</think>Hi{BAD_CALL}{GOOD_CALL}done<|im_end|>"
    with pytest.raises(ValueError, match="json parser could not parse"):
        respc.parse_response(text, SMOLLM, prefix="")
    message = respc.parse_response(text, SMOLLM, prefix="", errors="keep")
    assert message["thinking"] == "plan" and message["content"] == "done"
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]
    [report] = message["parse_errors"]
    assert (
        report["field"] == "tool_calls" and report["text"] == "{bad}" and report["exception"] == "ValueError"
    )
    assert "json parser could not parse region as JSON" in report["error"]


def test_streaming_reports_an_event_and_keeps_earlier_events() -> None:
    parser = respc.ResponseParser(SMOLLM, "", errors="keep")
    events = parser.feed(f"<think>ok</think>{BAD_CALL}tail")
    kinds = [(e["type"], e["field"]) for e in events]
    assert kinds[:3] == [
        ("region_open", "thinking"),
        ("region_chunk", "thinking"),
        ("region_close", "thinking"),
    ]
    assert ("region_error", "tool_calls") in kinds
    assert events[-1] == {"type": "region_chunk", "field": "content", "text": "tail", "dirty": False}
    message, _ = parser.finalize()
    assert message == {"role": "assistant", "thinking": "ok", "content": "tail"}
    assert [e["text"] for e in parser.errors] == ["{bad}"]


@pytest.mark.parametrize(
    ("template", "text", "field"),
    [
        (
            {"start_anchor": "a", "fields": {"n": {"open": "<n>", "close": "</n>", "content": "int"}}},
            "<n>x</n>",
            "n",
        ),
        (
            {"start_anchor": "a", "fields": {"t": {"open": "<t>", "close": "</t>", "content_args": None}}},
            "<t>x</t>",
            "t",
        ),
        (
            {"start_anchor": "a", "fields": {"t": {"open": "<t>", "close": "</t>", "transform": "{nope}"}}},
            "<t>x</t>",
            "t",
        ),
        (
            {"start_anchor": "a", "fields": {"c": {"open": "<c>", "close": "</c>", "optional": False}}},
            "none",
            "c",
        ),
        (
            {
                "start_anchor": "a",
                "fields": {
                    "t": {"open": "<t>", "close": "</t>", "content": "json", "repeats": True, "join": ","}
                },
            },
            "<t>{}</t>",
            "t",
        ),
    ],
    ids=["bad-int", "content-args-null", "undefined-placeholder", "required-missing", "join-non-string"],
)
def test_every_kind_of_close_failure_is_kept(template: dict, text: str, field: str) -> None:
    with pytest.raises(Exception) as strict:
        respc.parse_response(text, template, prefix="")
    message = respc.parse_response(text, template, prefix="", errors="keep")
    [report] = message.pop("parse_errors")
    assert report["field"] == field and report["exception"] == type(strict.value).__name__
    assert str(strict.value) in report["error"] or report["error"] == str(strict.value)


def test_keep_mode_matches_strict_mode_when_nothing_fails() -> None:
    text = f"<think>a</think>b{GOOD_CALL}<|im_end|>"
    assert respc.parse_response(text, SMOLLM, prefix="", errors="keep") == respc.parse_response(
        text, SMOLLM, prefix=""
    )


def test_unknown_errors_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="errors must be 'strict' or 'keep'"):
        respc.ResponseParser(SMOLLM, "", errors="ignore")
