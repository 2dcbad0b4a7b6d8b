"""End-of-stream scans find a literal's rarest character first (`memchr`), then the literal from where it
can start (`respc.compiler.analysis.rare`, issue #17). The argument is in the module's docstring; these
tests check the choice, the argument on its own (a model of the generated code against `str.find`), and
the generated scans of every end-scan shape against transformers on texts full of the chosen characters,
where the first one found is rarely the delimiter's."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.outcome import outcome, same_outcome
from transformers.utils.chat_parsing import parse_response as oracle_parse

import respc
from respc.compiler.analysis import rare_char
from respc.compiler.plan import plan_parser
from respc.spec import load_template

QWEN_OTHERS = ("<think>", "</think>", "</tool_call>", r"\s*(?:<\|im_end\|>|<\|endoftext\|>)")


def test_the_rarest_character_not_in_the_other_delimiters_wins() -> None:
    # '<' and '>' are in every delimiter of the template, '_' in two: '_'.
    assert rare_char(("<tool_call>",), QWEN_OTHERS) == ("_", 5)
    # Within a class, the ranking: '|' is rarer than '<' in chat output.
    assert rare_char(("<|",), ()) == ("|", 1)
    # A list: only characters every literal has at one offset.
    assert rare_char(("<|im_end|>", "<|endoftext|>"), ()) == ("|", 1)
    assert rare_char(("[a]", "<a>"), ()) is None
    # Punctuation of prose when nothing rarer is there; non-ASCII before markup.
    assert rare_char(("Answer:",), ()) == (":", 6)
    assert rare_char(("<｜tool▁sep｜>",), ("<｜end｜>",)) == ("▁", 6)


def test_letters_digits_spaces_and_single_characters_keep_the_plain_search() -> None:
    assert rare_char(("think",), ()) is None
    assert rare_char(("Final answer 2",), ()) is None
    assert rare_char(("<",), ()) is None  # one character: `str.find` is memchr already
    assert rare_char((), ()) is None


@given(
    st.lists(st.text("ab<|_>", min_size=1, max_size=6), min_size=1, max_size=3), st.text("ab<|_>", max_size=8)
)
def test_the_character_is_at_its_offset_in_every_needle(needles: list[str], elsewhere: str) -> None:
    found = rare_char(tuple(needles), (elsewhere,))
    if found is not None:
        char, offset = found
        assert all(needle[offset] == char for needle in needles)
        assert char not in "ab"


def _two_step(buf: str, needle: str, pos: int, char: str, offset: int, end: int) -> int:
    """The far scans' search, as `scans.py.jinja` writes it (bounded by `end`)."""
    at = buf.find(char, pos + offset, end)
    return at if at < 0 else buf.find(needle, at - offset, end)


@settings(max_examples=3000)
@given(
    st.text("<|_>ab", max_size=40),
    st.text("<|_>ab", min_size=2, max_size=5),
    st.integers(0, 45),
    st.integers(0, 50),
    st.data(),
)
def test_finding_the_character_first_finds_the_same_literal(
    buf: str, needle: str, pos: int, end: int, data: st.DataObject
) -> None:
    offset = data.draw(st.integers(0, len(needle) - 1))
    assert _two_step(buf, needle, pos, needle[offset], offset, end) == buf.find(needle, pos, end)
    assert _two_step(buf, needle, pos, needle[offset], offset, len(buf)) == buf.find(needle, pos)


# One template per end-scan shape that finds a rare character first: a state of literals only (one
# alternation), one literal, a literal list's alternation and a literal after the first watch (bounded by
# the best so far), and a regex's prefix, first and after the first watch.
TEMPLATES = {
    "literals": {
        "start_anchor": "S",
        "fields": {
            "think": {"open": "<th_k>", "close": "</th_k>"},
            "calls": {"open": "<tc|x>", "close": "</tc|x>", "content": "json", "repeats": True},
            "content": {"close": "<|end|>"},
        },
    },
    "many": {
        "start_anchor": "S",
        "fields": {
            "a": {"open_pattern": r"\s*<a_x>", "close": "</a_x>"},
            "b": {"open": ["<b|1>", "<b|22>"], "close": "</b|>"},
            "c": {"open": "<c_c>", "close_pattern": r"</c_c>\s*"},
            "content": {"close_pattern": r"<\|e\|>|<\|end\|>"},
        },
    },
}
ALPHABET = ["<", "|", "_", ">", "/", "x", " ", "\n", "1", "22", "a", "b", "c", "e", "end", "th", "k", "tc"]
ALPHABET += ["_" * 40 + "|" * 40 + "<" * 40]
FILLER = "x y " * 300  # past the length from which a pass takes the far scans (1,024)


def _pieces(template: dict) -> list[str]:
    """The template's literals and short pieces of them, so texts hold whole and broken delimiters."""
    found = []
    for field in template["fields"].values():
        for key in ("open", "close"):
            for literal in [field[key]] if isinstance(field.get(key), str) else field.get(key, []):
                found += [literal, literal[:-1], literal[1:]]
    return [*found, "<a_x>", "</c_c>\n", "<|e|>", "<|end|>", '{"n": 1}']


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_plan_finds_rare_characters_first(name: str) -> None:
    plan = plan_parser(load_template(TEMPLATES[name]))
    chosen = [d.rare for d in plan.delimiters] + [s.rare for s in plan.states]
    assert any(rare is not None for rare in chosen)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_generated_end_scans_agree_with_transformers(name: str, data: st.DataObject) -> None:
    template = TEMPLATES[name]
    words = st.sampled_from([*ALPHABET, *_pieces(template), FILLER])
    text = "".join(data.draw(st.lists(words, max_size=30)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = respc.compile_template(template)
    for whole in (text, FILLER + text, text + FILLER):
        assert same_outcome(
            outcome(module.parse_response, whole, prefix=""),
            outcome(oracle_parse, whole, template, prefix=""),
        )


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_far_scans_find_what_the_plain_ones_find(name: str, data: st.DataObject) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = respc.compile_template(TEMPLATES[name])
    far = module.ResponseParser.FAR_SCANS
    words = st.sampled_from([*ALPHABET, *_pieces(TEMPLATES[name]), "x" * 50])
    buf = "".join(data.draw(st.lists(words, max_size=40)))
    pos = data.draw(st.integers(0, len(buf)))
    memo = module.ResponseParser.END_MEMO
    for plain, fast in far.items():
        # A fresh memo for each call: one filled by the other scan would answer for it.
        got = fast(buf, pos, {}) if memo else fast(buf, pos)
        assert _comparable(got) == _comparable(plain(buf, pos, {}) if memo else plain(buf, pos))


def _comparable(commit: tuple | None) -> tuple | None:
    """A commit with its match object as what it matched (match objects compare by identity)."""
    if commit is None or commit[4] is None:
        return commit
    return (*commit[:4], commit[4].span(), commit[4].groupdict())
