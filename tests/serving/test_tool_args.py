"""The shortcuts of respc.serving.tool_args against what they stand in for, on any text."""

from __future__ import annotations

import json

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from support.outcome import outcome, same_outcome
from support.serving import dialect_objects

from respc.serving.tool_args import (
    _escape,
    _json_key,
    _loads,
    holds_no_tail,
    last_character,
    tail_start,
)

# Whitespace of every kind the two regex engines disagree on, delimiters' characters, and plain text.
ALPHABET = st.sampled_from(list(' \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000<>/=pamxé"\\\x00\x7f'))


def test_escape_is_json_escaping() -> None:
    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.text() | st.text(ALPHABET))
    def run(text: str) -> None:
        assert _escape(text) == json.dumps(text, ensure_ascii=False)[1:-1]
        assert _json_key(text) == json.dumps(text, ensure_ascii=False)

    run()
    assert _json_key(None) == "null"


def test_loads_is_json_loads() -> None:
    """`_loads` skips the decoder for strings without escapes: the same value or the same error."""

    @settings(max_examples=800, deadline=None, derandomize=True)
    @given(st.text(ALPHABET, max_size=8) | st.text(max_size=8), st.booleans())
    def run(text: str, quoted: bool) -> None:
        raw = f'"{text}"' if quoted else json.dumps(text, ensure_ascii=False)
        assert same_outcome(outcome(_loads, raw), outcome(json.loads, raw))

    run()
    for raw in ['"a"', '"', '""', '"a\\"b"', '"a"b"', '"\x1f"', '"\u2028"', "7", "[1]", '"\\u0041"']:
        assert same_outcome(outcome(_loads, raw), outcome(json.loads, raw)), raw


STREAMABLE = [r"\s*</parameter>", r"</parameter>", r"\s+</arg_value>", r"\n</p>", r"\<x", r"\s*\.end"]


@pytest.mark.parametrize("after", STREAMABLE)
def test_a_text_without_the_tails_start_holds_no_tail(after: str) -> None:
    start, tail = tail_start(after), regex.compile(after, regex.DOTALL)
    assert start is not None

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.text(ALPHABET, max_size=12), st.integers(0, 12))
    def run(text: str, at: int) -> None:
        if holds_no_tail(start, text, at):
            # At most the empty partial match at the very end, which every pattern has: where the value
            # is certain up to, either way.
            found = tail.search(text, at, partial=True)
            assert found is None or (found.partial and found.span() == (len(text), len(text)))

    run()


@pytest.mark.parametrize(
    "after", [r"a*</p>", r"\n?</p>", r"\<{2}", r"</p>|\n", r"(?i)</P>", r"[<>]/p", r"\s</p>", r"(</p>)", ""]
)
def test_tails_it_cannot_read_have_no_start(after: str) -> None:
    assert tail_start(after) is None


HEADS = [
    r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>",
    r"<parameter=(?P<key>[^>\n]+)>\s*",
    r'<parameter name="(?P<key>[^"]+)">',
    r"<p(?:=(?P<key>[^>]*))?/>",
    r"\n?<(?P<key>\w+)=",
]


@pytest.mark.parametrize("head", HEADS)
def test_a_partial_head_stays_partial_without_its_last_character(head: str) -> None:
    """`last_character`: after a partial match, text without that character completes none."""
    last, pattern = last_character(head), regex.compile(head, regex.DOTALL)
    assert last is not None

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.text(ALPHABET, max_size=14), st.text(ALPHABET, min_size=1, max_size=6), st.integers(0, 14))
    def run(text: str, more: str, at: int) -> None:
        found = pattern.search(text, min(at, len(text)), partial=True)
        if found is not None and found.partial and last not in more:
            grown = pattern.search(text + more, min(at, len(text)), partial=True)
            assert grown is None or grown.partial

    run()


@pytest.mark.parametrize(
    "head",
    [r"<p>|<q>", r"<p(?=x)>", r"(?i)<p>", r"<p>\s+", r"<p\>", r"<pa", r"<p>*", r"<p\s*", r"[<>]", "", ">"],
)
def test_heads_it_cannot_read_have_no_last_character(head: str) -> None:
    assert last_character(head) is None


@pytest.mark.parametrize("target", ["5.23", "5.24"])
def test_the_streaming_dialect_rewrite_gives_the_whole_text_rewrite(target: str) -> None:
    """serving's `_Dialect` rewrites the json parser's dialect (one `string_delims` pair, `unquoted_keys`)
    as text arrives; the content parser's `_dialect` is upstream's three passes over the whole body. The
    first is the second's streaming form: under any chunking, what it sends is the same JSON."""
    from respc.runtime.content import _dialect
    from respc.runtime.targets import get_target
    from respc.serving.tool_args import _Dialect

    release = get_target(target)
    args = {"unquoted_keys": True, "string_delims": [["<|", "|>"]]}

    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(dialect_objects(), st.lists(st.integers(1, 6), max_size=10))
    def run(body: str, cuts: list[int]) -> None:
        whole = _dialect(body, args["string_delims"], True, release)
        try:
            expected = json.loads(whole)
        except json.JSONDecodeError:
            assert target == "5.23"  # it quotes key-like text in strings too (quirk Q13)
            return
        dialect, sent, at = _Dialect(args, release.json_keys_skip_strings), [], 0
        for cut in cuts:
            sent.append(dialect.feed(body[at : at + cut]))
            at += cut
        sent.append(dialect.feed(body[at:], final=True))
        assert json.loads("".join(sent)) == expected, (body, cuts)

    run()
