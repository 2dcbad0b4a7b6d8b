"""Template validation parity: for each target, respc accepts exactly what that transformers release
accepts, with its message (they differ only in the content parsers each knows)."""

from __future__ import annotations

import json
import warnings

import pytest
from support.compare import FIXTURES

import respc
from respc.compiler import TemplateError, load_template

BAD = json.loads((FIXTURES / "bad_templates.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("entry", BAD, ids=[f"{i}-{e['note'][:40]}" for i, e in enumerate(BAD)])
def test_validation_matches_oracle(entry: dict, target: str) -> None:
    from support.oracles import oracle

    expected = oracle(target).request("load", entry["template"])
    assert expected == entry["oracle"][target], "fixture is stale: run tests/fixtures/make_oracle_columns.py"
    try:
        load_template(entry["template"], target)
    except Exception as error:
        assert expected != "accept", f"respc rejects a template the oracle accepts: {error!r}"
        oracle_type = {"ValueError": ValueError, "TypeError": TypeError}[expected.split(":")[0]]
        assert isinstance(error, oracle_type)
        if isinstance(error, TemplateError) and expected.startswith("ValueError"):
            assert str(error) == expected.split(": ", 1)[1]
        return
    assert expected == "accept", f"respc accepts a template the oracle rejects ({expected})"


def test_template_error_is_value_error() -> None:
    assert issubclass(respc.TemplateError, ValueError)
    with pytest.raises(respc.TemplateError, match=r"Field 'x': unknown keys \['bogus'\]"):
        respc.generate_source({"start_anchor": "a", "fields": {"x": {"bogus": 1}}})


# Open and close both able to match empty at one position: transformers loops forever (quirk Q5). The
# last two use syntax respc's empty-match analysis reads differently from the `regex` module (a POSIX
# class Python's parser sees as a one-character set; `\p{..}`, which it cannot parse, probed on a few
# strings).
HANGING = [
    {"open_pattern": "(?:<t>)?", "close_pattern": "(?:</t>)?"},
    {"open_pattern": "", "close_pattern": "$"},
    {"open_pattern": r"\b", "close_pattern": r"(?=x)"},
    {"open_pattern": r"\p{L}*", "close_pattern": r"\p{N}*"},
    {"open_pattern": r"[[:alpha:]]*", "close_pattern": r"[[:alpha:]]*"},
    {"open_pattern": r"(?=@)\p{L}*", "close_pattern": r"(?=@)\p{L}*"},
]


def _hanging(field: dict) -> dict:
    return {"start_anchor": "a", "fields": {"t": field, "c": {"close": "<eos>"}}}


@pytest.mark.parametrize("field", HANGING)
def test_these_templates_hang_the_oracle(field: dict) -> None:
    from support.compare import OracleTimeout, stream_trace
    from transformers.utils.chat_parsing import ResponseParser

    with pytest.raises(OracleTimeout):
        stream_trace(lambda: ResponseParser(_hanging(field), ""), ["1@x</t><t>x\n"], deadline=0.5)


def test_a_deadline_outlives_an_alarm_that_was_swallowed() -> None:
    """The deadline's exception can land where Python drops it (a finalizer run by the hung loop's
    allocations): the alarm comes again, so the call still stops."""
    from support.oracles import OracleTimeout, run_calls

    def hang_after_swallowing_one() -> None:
        try:
            while True:
                pass
        except BaseException:
            pass  # (as a finalizer's exception is printed and dropped)
        while True:
            pass

    with pytest.raises(OracleTimeout):
        run_calls([hang_after_swallowing_one], 0.2)
    assert run_calls([lambda: 1], 0.2) == [("ok", 1)]


@pytest.mark.parametrize("field", HANGING)
def test_templates_that_hang_the_oracle_are_refused(field: dict) -> None:
    """Quirk Q5: an explicit field whose open and close can both match empty loops forever upstream."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Python's parser: "Possible nested set"
        with pytest.raises(respc.TemplateError, match="quirk Q5"):
            respc.compile_template(_hanging(field))


def test_one_empty_matchable_side_is_accepted_and_exact() -> None:
    """Only the pair hangs; an empty-matchable open with a real close is fine (quirk Q5's second case)."""
    from support.compare import assert_same, oracle_parse, respc_parse

    template = {
        "start_anchor": "a",
        "fields": {
            "thinking": {"open_pattern": "(?:<think>)?", "close": "</think>"},
            "content": {"close": "<eos>"},
        },
    }
    for text in ("hello</think>world", "a</think>b</think>", ""):
        assert_same(respc_parse(template, text, ""), oracle_parse(template, text, ""), template, text)


@pytest.mark.parametrize(
    "field",
    [
        {"open_pattern": "(?=z)", "close_pattern": "$"},
        {"open_pattern": r"(?=<)", "close_pattern": r"(?=\d)"},
        {"open_pattern": "(?:<t>|(?=q))", "close_pattern": r"\Z"},
        {"open_pattern": r"<t>|\Z", "close_pattern": r"</t>|\Z"},  # never committed at the very end
    ],
)
def test_empty_matches_that_never_meet_are_accepted_and_exact(field: dict) -> None:
    """Open and close that can each match empty, but never at one position, cannot loop upstream: respc
    compiles them and agrees with the oracle (which returns) on every chunking."""
    from support.compare import assert_same, stream_trace
    from transformers.utils.chat_parsing import ResponseParser as Oracle

    template = {"start_anchor": "a", "fields": {"t": field, "c": {"close": "<eos>"}}}
    module = respc.compile_template(template)
    for text in ("zz", "az\n", "", "q<t>1q2", "x<y9<eos>z", "zq\nz"):
        for chunks in ([text], list(text)):
            theirs = stream_trace(lambda: Oracle(template, ""), chunks, deadline=2.0)
            ours = stream_trace(lambda: module.ResponseParser(""), chunks)
            assert_same(ours, theirs, template, f"chunks={chunks!r}")


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",
        r"(x*)*y",
        r"(\w+\s?)+!",
        r"(?:a|aa)+c",  # exponential in the `regex` module: 24 a's 0.07 s, about x1.9 per extra character
        r"(?:\d\w?)+;",
    ],
)
def test_backtracking_delimiters_compile_with_a_warning(pattern: str) -> None:
    from respc.compiler import TemplateWarning

    template = {"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": pattern}}}
    with pytest.warns(TemplateWarning, match=r"Field 'x': close_pattern /.*/ may backtrack exponentially"):
        respc.generate_source(template)


def test_plain_delimiters_compile_without_a_warning() -> None:
    plain = {"start_anchor": "a", "fields": {"x": {"open": "<x>", "close_pattern": r"\s*</x>(?:ab{2})+"}}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        respc.generate_source(plain)


def test_non_literal_values_are_refused() -> None:
    with pytest.raises(respc.TemplateError, match="cannot be inlined"):
        respc.generate_source({"start_anchor": "a", "fields": {"c": {}}, "defaults": {"x": object()}})


def test_templates_json_cannot_tell_apart_get_their_own_parsers() -> None:
    """The compile cache is keyed by template hash: `{1: x}` and `{"1": x}`, or a tuple and a list, are
    the same JSON text but not the same template (the oracle rejects a tuple of opens)."""
    from support.compare import oracle_parse

    def with_transform(key: object) -> dict:
        field = {"open": "<a>", "close": "</a>", "transform": {key: "{content}"}}
        return {"start_anchor": "S", "fields": {"content": {}, "t": field}}

    for first, second in ((1, "1"), ("1", 1)):
        respc.compile_template(with_transform(first))
        got = respc.compile_template(with_transform(second)).parse_response("x<a>y</a>", prefix="")
        assert got == {"content": "x", "t": {second: "y"}}
        assert [("ok", got)] == oracle_parse(with_transform(second), "x<a>y</a>", "")
    listed = {"start_anchor": "S", "fields": {"content": {}, "t": {"open": ["<a>", "<b>"], "close": "</a>"}}}
    respc.compile_template(listed)
    tupled = {"start_anchor": "S", "fields": {"content": {}, "t": {"open": ("<a>", "<b>"), "close": "</a>"}}}
    with pytest.raises(ValueError):
        respc.compile_template(tupled)
