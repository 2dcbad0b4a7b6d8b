"""The end-of-stream pass remembers where it found each regex delimiter, and over a long text the first
literal a state watches (`memo`, issue #17): a match found from an earlier position is reused until the
pass moves past it. Exactness is the differential suites' job
(every whole-message parse goes through it); these tests pin what could go wrong: patterns whose matches
depend on where the search starts (`\\G`, reverse atomic groups, fuzzy constraints), and the memo doing its
work (each delimiter searched about once per region it ends, not once per scan)."""

from __future__ import annotations

import warnings

import pytest
from transformers.utils.chat_parsing import parse_response as oracle_parse

import respc


def _assert_parse_and_stream_as_oracle(template: dict, text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = respc.compile_template(template)
        expected = oracle_parse(text, template, prefix="")
    assert module.parse_response(text, prefix="") == expected
    parser = module.ResponseParser("")
    parser.feed(text)
    assert parser.finalize()[0] == expected


G_TEMPLATE = {
    "start_anchor": "S",
    "fields": {
        "a": {"open_pattern": r"\G<a>", "close": "</a>"},
        "b": {"open": "<b>", "close_pattern": r"\G</b>"},
        "c": {"close_pattern": r"\G!|\Z"},
    },
}


@pytest.mark.parametrize(
    "text",
    [
        "<b></b><a>y</a>",  # \G<a> fails from 0, then matches at 7: a remembered miss would lose it
        "<a>x</a><a>y</a>",
        "<b></b>!<a>x</a>",
        "ab!<b>x</b>",
        "<b>x</b>q<a>y</a>!",
        "<b></b><b></b><a>z</a>!",
    ],
)
def test_patterns_anchored_where_the_search_starts_are_searched_anew(text: str) -> None:
    _assert_parse_and_stream_as_oracle(G_TEMPLATE, text)


# Found by an independent review (helper session): matches that depend on where the search starts
# beyond `\G`. A reverse search stops an atomic group at the search start; a fuzzy match's best start
# depends on it. Only patterns in the plain syntax (`is_plain`) are remembered.
START_DEPENDENT = [
    (
        {
            "start_anchor": "S",
            "fields": {
                "a": {"open": "<a>", "close": "!a"},
                "b": {"open_pattern": "(?r)(?<=a)(?>a*)c", "close": "</b>"},
            },
        },
        "<a>q!aaacZ",
    ),
    (
        {
            "start_anchor": "S",
            "fields": {
                "a": {"open": "x", "close_pattern": "(?=b)"},
                "b": {"open_pattern": "(?:aab){e<=1}", "close": "</b>"},
                "c": {},
            },
        },
        "xbaabbx",
    ),
]


@pytest.mark.parametrize(("template", "text"), START_DEPENDENT)
def test_matches_that_depend_on_the_search_start_are_searched_anew(template: dict, text: str) -> None:
    _assert_parse_and_stream_as_oracle(template, text)


def test_each_delimiter_is_searched_once_per_region_it_ends() -> None:
    """Qwen 3.5's outside state watches three delimiters; a message of 200 tool calls leaves and re-enters
    it 200 times. The im_end close is searched once (not 200 times), the tool-call open once per call."""
    module = respc.load_preset("qwen3_5")
    call = "<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"
    text = "<think>r</think>text" + ("\nmore" + call) * 200 + "<|im_end|>"
    searched: list[str] = []
    original, matched = module.scan_lead, module.alternatives_match

    def counting(buf: str, pos: int, rest: object, *args: object) -> object:
        searched.append(rest.pattern)
        return original(buf, pos, rest, *args)

    def counting_literals(buf: str, pos: int, at: int, strings: tuple, *args: object) -> object:
        searched.append(strings)  # (the im_end close is an alternation of literals: no regex search)
        return matched(buf, pos, at, strings, *args)

    module.scan_lead, module.alternatives_match = counting, counting_literals
    try:
        message = module.parse_response(text, prefix="")
    finally:
        module.scan_lead, module.alternatives_match = original, matched
    assert len(message["tool_calls"]) == 200
    assert message == oracle_parse(text, module.TEMPLATE, prefix="")
    assert searched.count(module.CONTENT_CLOSE_STRINGS) == 1
    assert searched.count(module.TOOL_CALLS_OPEN_RE.pattern) == 200  # each call once (then no prefix is left)


CALLS = {
    "lfm2": '<|tool_call_start|>[f(x=1), g(y="two")]<|tool_call_end|>',
    "qwen3_5": "\n<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
}
PROSE = "the weather in Paris < tomorrow, and then some more words about it\n" * 20  # ~1,300 characters


@pytest.mark.parametrize("preset", sorted(CALLS))
@pytest.mark.parametrize(
    "layout",
    [
        "<think>r</think>{p}{c}{p}<think>late</think>{p}{c}{p}<|im_end|>",  # found far ahead, reused past a call
        "{p}{c}{p}{c}{p}<think>x</think>{c}",
        "{p}{c}{p}{c}{p}<|im_end|>",  # never found: remembered as nowhere
        "<think>{p}</think>{p}<think>{p}",  # an unclosed region at the end
        "{p}{c}{p}{p}{p}<think>",  # only in the last characters, where the near scans take over
    ],
)
def test_a_literal_remembered_over_a_long_text_is_found_where_the_oracle_finds_it(
    preset: str, layout: str
) -> None:
    """Over a long text the far scans keep the first watched literal (`<think>`) in the pass's memo: found
    far ahead, it stays the answer up to there; not found, it is not looked for again."""
    module = respc.load_preset(preset)
    text = layout.format(p=PROSE, c=CALLS[preset])
    assert module.parse_response(text, prefix="") == oracle_parse(text, module.TEMPLATE, prefix="")
    parser = module.ResponseParser("")
    parser.feed(text)
    assert parser.finalize()[0] == oracle_parse(text, module.TEMPLATE, prefix="")


def test_a_literal_found_one_character_behind_the_pass_is_searched_again() -> None:
    """Found by an independent review: a remembered literal that starts just before where the pass now
    stands (`start == pos - 1`) is no longer ahead, so it must be looked for again. A reuse test off by one
    (`start < pos - 1`) passed every other test."""
    template = {
        "start_anchor": "S",
        "fields": {
            "f0": {"open": "<x>", "close": "</x>"},
            "content": {"close_pattern": r"\s*<", "repeats": True},
        },
    }
    _assert_parse_and_stream_as_oracle(template, "q <x>" + "lorem ipsum dolor sit " * 60)
