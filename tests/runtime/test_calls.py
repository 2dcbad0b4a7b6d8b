"""The `python-call-list` content parser against transformers 5.24.0's: the same value, or the same error
message (position included), for valid call lists and for every kind of damage to them."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.outcome import outcome, same_outcome
from transformers.utils.chat_parsing.content_parsers import _python_call_list as oracle_call_list

from respc.runtime.calls import _PLAIN_LIMIT, _PLAIN_LIST, parse_python_call_list
from respc.runtime.targets import get_target

RELEASE = get_target("5.24")
EXAMPLES = int(os.environ.get("RESPC_HYPOTHESIS_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def ours(text: str) -> tuple:
    return outcome(parse_python_call_list, text, {}, RELEASE)


def theirs(text: str) -> tuple:
    return outcome(oracle_call_list, text, {})


def assert_same(text: str) -> None:
    a, b = ours(text), theirs(text)
    assert same_outcome(a, b), f"{text!r}\nrespc:  {a!r}\noracle: {b!r}"


# -- a grammar of call lists, with the edges the spec names -------------------------------------------

SPACE = st.text(alphabet=" \t\n\r", max_size=2)
NAMES = st.sampled_from(
    ["f", "get_weather", "a.b", "web-search", "_x9", "True", "None", "x-", "a..b", "1a", ""]
)
ESCAPES = [r"\\", r"\'", r"\"", r"\/", r"\b", r"\f", r"\n", r"\r", r"\t", r"\u00e9", r"\ud83d\ude00"]
ESCAPES += [r"\ud83d", r"\ude00", r"\ud83dx", r"\u12", r"\x41", r"\q", "\\\n", r"\U0001F600"]
CHARS = st.sampled_from(["a", " ", "é", "思", "🙂", "'", '"', "\\", "\n", "\ud800", "\x00", "}", "]", ","])


@st.composite
def strings(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(["'", '"']))
    parts = draw(st.lists(st.one_of(st.sampled_from(ESCAPES), CHARS, st.text(max_size=3)), max_size=5))
    return quote + "".join(parts) + quote


NUMBERS = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60).map(str),
    st.sampled_from(["9007199254740991", "-9007199254740991", "9007199254740992", "12345678901234567"]),
    st.sampled_from(
        ["00", "-0", "0.5", "1e5", "1E+400", "-1e400", "1e-400", "1.", ".5", "-", "1.5e", "2e308"]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
CONSTANTS = st.sampled_from(["True", "true", "False", "false", "None", "null", "TRUE", "none", "True.x"])


def values(depth: int = 3) -> st.SearchStrategy[str]:
    leaves = st.one_of(strings(), NUMBERS, CONSTANTS)
    if depth == 0:
        return leaves

    def joined(items: list[str], left: str, right: str, sep: str) -> str:
        return left + sep.join(items) + right

    inner = values(depth - 1)
    lists = st.builds(
        joined, st.lists(inner, max_size=3), st.just("["), st.just("]"), st.sampled_from([",", ", ", " ,\n"])
    )
    pairs = st.builds(lambda k, s, v: f"{k}{s}:{s}{v}", st.one_of(strings(), NAMES), SPACE, inner)
    dicts = st.builds(
        joined, st.lists(pairs, max_size=3), st.just("{"), st.just("}"), st.sampled_from([",", ", "])
    )
    return st.one_of(leaves, lists, dicts)


@st.composite
def call_lists(draw: st.DrawFn) -> str:
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        arguments = [
            f"{draw(NAMES)}{draw(SPACE)}={draw(SPACE)}{draw(values())}"
            for _ in range(draw(st.integers(0, 3)))
        ]
        if draw(st.booleans()) and arguments:
            arguments.append(arguments[0])  # a repeated name
        separator = draw(st.sampled_from([",", ", ", ",\n  "]))
        calls.append(
            f"{draw(NAMES)}{draw(SPACE)}({separator.join(arguments)}{draw(st.sampled_from(['', '', ',']))})"
        )
    body = draw(SPACE) + "[" + draw(SPACE) + ", ".join(calls) + draw(SPACE) + "]" + draw(SPACE)
    return body + draw(st.sampled_from(["", "", "", " x", "]", "\n\n"]))


@SETTINGS
@given(text=call_lists())
def test_call_lists_match_the_oracle(text: str) -> None:
    assert_same(text)


@SETTINGS
@given(text=call_lists(), data=st.data())
def test_damaged_call_lists_match_the_oracle(text: str, data: st.DataObject) -> None:
    """Truncated, and with a character inserted, deleted or replaced anywhere."""
    at = data.draw(st.integers(0, len(text)))
    char = data.draw(st.sampled_from(list("[](){}=,:'\"\\ \n0aé-.\ud800")))
    for damaged in (
        text[:at],
        text[:at] + char + text[at:],
        text[:at] + text[at + 1 :],
        text[:at] + char + text[at + 1 :],
    ):
        assert_same(damaged)


@pytest.mark.parametrize("depth", [98, 99, 100, 101, 150])
def test_nesting_at_the_limit(depth: int) -> None:
    for opening, closing in (("[", "]"), ('{"k": ', "}")):
        assert_same("[f(a=" + opening * depth + "1" + closing * depth + ")]")
        assert_same("[f(a=" + opening * depth + closing * depth + ")]")


def test_every_truncation_of_a_realistic_list() -> None:
    text = '[get_weather(city="Oslo", days=3), f(x=[1, {"a": None, "b": [true, 1.5e3]}], y=\'\\u00e9\\n\')]'
    for end in range(len(text) + 1):
        assert_same(text[:end])
        assert_same(text[end:])


def test_the_spec_examples() -> None:
    cases = {
        "[f(1)]": "expected a keyword argument (positional arguments and trailing commas are not supported) at position 3",
        "[f(a=1, a=2)]": "repeated name 'a' at position 12",
        "[f(a=12345678901234567)]": "integer outside the range of -(2^53 - 1) to 2^53 - 1 at position 5",
        "[f(a=1e999)]": "number too large at position 5",
        "[f(a=1)] x": "unexpected content after the closing ']' at position 9",
    }
    for text, message in cases.items():
        assert ours(text) == ("raise", ValueError, f"python-call-list: {message}.\nContent: {text!r}")
        assert_same(text)
    text = '[get_weather(city="Oslo", days=3), f(x=[1, {"a": None}], y=\'\\u00e9\')]'
    assert ours(text) == (
        "ok",
        [
            {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}},
            {"name": "f", "arguments": {"x": [1, {"a": None}], "y": "é"}},
        ],
    )


def test_long_lists_of_nested_calls() -> None:
    call = 'search(query="weather in {city}", filters={"units": "metric", "days": [1, 2, 3]}, limit=10, exact=False)'
    text = "[" + ", ".join(call.replace("{city}", str(i)) for i in range(50)) + "]"
    assert_same(text)
    assert json.loads(json.dumps(ours(text)[1]))[49]["arguments"]["query"] == "weather in 49"


@pytest.mark.parametrize(
    "text",
    [
        '[f(a={"": [1]})]',  # an empty key before a nested value (the fast pair reads the key, _value the rest)
        "[f(a={'': {'': None}}, b='')]",
        '[f(a={"k":[1], \'q\' :{}, "": [{"": ""}]})]',
        "[f(a= [1], b =\n{'x': [2]})]",
        '[f(a={"k": [1,]})]',  # errors after the key, inside the nested value
        '[f(a={"k": })]',
        "[f(a=)]",
    ],
)
def test_names_and_keys_before_nested_values(text: str) -> None:
    assert_same(text)


PLAIN_LISTS = [
    "[get_weather(city='Paris', days=3), search(query=\"forecast\", limit=5)]",
    "[f(a='', b=\"\", c='x', d=\"y\")]",
    "[f(a=True, b=true, c=False, d=false, e=None, f=null)]",
    "[f(a=0, b=-0, c=-12, d=1.5, e=-0.25e-3, f=2E+10, g=9007199254740991, h=-9007199254740991)]",
    " \n[ \tns.get-x ( a = 1 ,b='q' ) , g( ) ,h()]\r\n",
    "[]",
    "[ ]",
    "[f()]",
    "[f(s='he said \"hi\"', t=\"it's\", u='é😀', v='(a=1), g(b=2)')]",
    # where the reader answers after all: a repeated name, an integer or a float out of range
    "[f(a=1, b=2, a=3)]",
    "[f(a=9007199254740992)]",
    "[f(a=123456789012345678)]",
    "[f(a=1e400)]",
    # plain, but read by the reader: a bracket in a string (the quick test before the match counts them)
    "[f(q='[x]'), g(r=\"{y}\")]",
]


@pytest.mark.parametrize("text", PLAIN_LISTS)
def test_lists_of_calls_with_scalar_arguments(text: str) -> None:
    """One match proves such a list and one findall reads its tokens (`_PLAIN_LIST`)."""
    assert _PLAIN_LIST.fullmatch(text) is not None
    assert_same(text)


NOT_PLAIN_LISTS = [
    "[f(a=1,)]",
    "[f(a=1)],",
    "[f(a=1) g(b=2)]",
    "[f(a=Truex)]",
    "[f(a=NaN)]",
    "[f(a=Nonex)]",
    "[f(a='\\n')]",
    "[f(a='x\ny')]",  # a raw line break in a string
    "[f(a='\ud800')]",  # a lone surrogate
    "\x0b[f(a=1)]",  # whitespace the grammar does not take: \v, \xa0, \u2028
    "[f(a=1)]\xa0",
    "[f\x0b(a=1)]",
    "[f(a=\u20281)]",
    "[f(a=1, b=[2])]",
    "[f(a={})]",
]


@pytest.mark.parametrize("text", NOT_PLAIN_LISTS)
def test_lists_that_are_not_plain_are_read_step_by_step(text: str) -> None:
    assert _PLAIN_LIST.fullmatch(text) is None
    assert_same(text)


def test_a_long_plain_list_is_read_by_the_reader() -> None:
    """Past `_PLAIN_LIMIT` characters the match's memory outweighs its gain: the reader answers alike."""
    text = "[" + ", ".join(f"f_{i}(a={i}, b='x')" for i in range(2000)) + "]"
    assert len(text) > _PLAIN_LIMIT and _PLAIN_LIST.fullmatch(text) is not None
    assert_same(text)
