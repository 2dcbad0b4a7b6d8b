"""The content parsers' fast paths (issue #17) against transformers: xml-inline tag shapes matched with
`str.find`, the one-pass JSON dialect, the C scanner instead of `json.loads`, and each field's parser built
once from its arguments (`content_parser`). Each one is exact only under conditions its code states; these
tests draw inputs around those conditions and compare with the oracle of each release."""

from __future__ import annotations

import subprocess
import sys

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.outcome import outcome, same_outcome
from transformers.utils.chat_parsing.content_parsers import parse_content as oracle_parse_content

from respc.runtime import content
from respc.runtime.tags import REGEX_SPACE, tag_at, tag_rows, tag_shape
from respc.runtime.targets import get_target


def _same_as_oracle(target: str, name: str, text: str, args: dict) -> None:
    """Both the general parser and the field's parser answer as `target`'s transformers does."""
    from support.oracles import oracle

    release = get_target(target)
    general = outcome(content.parse_content, text, name, args, release)
    field = outcome(content.content_parser(name, args, release), text)
    assert same_outcome(general, field), (text, args)
    (theirs,) = oracle(target).request("call", ("content", (name, text, args)))
    assert same_outcome(general, theirs), (text, args, general, theirs)


def test_regex_space_is_what_regex_means_by_backslash_s() -> None:
    everything = "".join(map(chr, range(0x110000)))
    assert "".join(regex.findall(r"\s", everything)) == REGEX_SPACE


# -- xml-inline tag shapes ---------------------------------------------------------------------------------

SHAPED = [
    r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>",
    r"<parameter=(?P<key>[^>\n]+)>(?P<value>.*?)</parameter>",
    r'<parameter name="(?P<key>[^"]+)">(?P<value>.*?)</parameter>',
    r'<steptml:parameter name="(?P<key>[^"]+)">(?P<value>.*?)</steptml:parameter>',
    r"<p=(?P<key>[^>]+)>\s*(?P<value>.*?)</p>",
    r"<p=(?P<key>[^>\n]+)>(?P<value>.*?)\s*</p>",
    r"a(?P<key>[^b]+)b\s*(?P<value>.*?)\s*a",
    r"aa(?P<key>[^ab]+)ba\s*(?P<value>.*?)\s*ab",
    r"<(?P<key>[^>]+)>(?P<value>.*?)<",
    r"\<\ (?P<key>[^\>\t]+)\>\t(?P<value>.*?)\n",
]
# Not of the shape: the engine keeps them (a backreference, a middle literal the key's run does not stop
# at, a closing literal starting with whitespace, a class with a range, an inline flag, a lazy key).
UNSHAPED = [
    r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
    r"<p=(?P<key>[^x]+)>(?P<value>.*?)</p>",
    r"<p=(?P<key>[^>]+)>\s*(?P<value>.*?)\s*\s</p>",
    r"<p=(?P<key>[^>]+)>\s*(?P<value>.*?)\s* </p>",
    r"<p=(?P<key>[^a-z>]+)>(?P<value>.*?)</p>",
    r"(?i)<p=(?P<key>[^>]+)>(?P<value>.*?)</p>",
    r"<arg_key>(?P<key>.*?)</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>",
    r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>+",
    r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p\d>",
    r"<p=(?P<key>[^>]+)>(?P<value>.+?)</p>",
]


@pytest.mark.parametrize("pattern", SHAPED)
def test_usual_tag_patterns_get_a_shape(pattern: str) -> None:
    assert tag_shape(pattern) is not None


@pytest.mark.parametrize("pattern", UNSHAPED)
def test_other_tag_patterns_stay_on_regex(pattern: str) -> None:
    assert tag_shape(pattern) is None


PIECES = [
    "<parameter=", "<parameter name=\"", "\">", ">", "\n", " ", "\t", "\x1c", "\u2003", "\x85",
    "</parameter>", "a", "b", "aa", "ab", "ba", "<p=", "</p>", "<", "x", "\"", "<steptml:parameter name=\"",
    "</steptml:parameter>", "\\", "< ", ">\t",
]  # fmt: skip
TAG_TEXTS = st.lists(st.sampled_from(PIECES), max_size=16).map("".join) | st.text(max_size=30)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.sampled_from(SHAPED), TAG_TEXTS)
def test_tag_rows_are_what_regex_finds(pattern: str, text: str) -> None:
    expected = [(m["key"], m["value"]) for m in regex.finditer(pattern, text, flags=regex.DOTALL)]
    assert tag_rows(text, tag_shape(pattern)) == expected


_LITERAL_CHARS = st.sampled_from(list('<>=/ab\n \t"x'))


@st.composite
def random_shapes(draw: st.DrawFn) -> str:
    """Tag patterns of the shape built from a few characters, so that literals overlap each other."""

    def literal(min_size: int = 1) -> str:
        return "".join(draw(st.lists(_LITERAL_CHARS, min_size=min_size, max_size=3)))

    middle = literal()
    stops = "".join(sorted(set(middle[0] + draw(st.text(alphabet='<>\n"ab', max_size=2)))))
    closing = literal()
    if closing[0] in " \t\n":
        closing = "<" + closing
    return (
        regex.escape(literal())
        + "(?P<key>[^"
        + "".join(regex.escape(c) for c in stops)
        + "]+)"
        + regex.escape(middle)
        + draw(st.sampled_from(["", r"\s*"]))
        + "(?P<value>.*?)"
        + draw(st.sampled_from(["", r"\s*"]))
        + regex.escape(closing)
    )


@settings(max_examples=3000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    random_shapes(), st.lists(st.sampled_from([*list('<>=/ab\n \t"x'), "\u2003"]), max_size=24).map("".join)
)
def test_random_tag_shapes_match_as_regex_does(pattern: str, text: str) -> None:
    shape = tag_shape(pattern)
    assert shape is not None, pattern
    expected = [(m["key"], m["value"]) for m in regex.finditer(pattern, text, flags=regex.DOTALL)]
    assert tag_rows(text, shape) == expected, (pattern, text)


def _matches_at_every_position(pattern: str, text: str) -> None:
    compiled = regex.compile(pattern, regex.DOTALL)
    for start in range(len(text) + 1):
        m = compiled.match(text, start)
        expected = None if m is None else (m["key"], m.start("value"), m["value"], m.end())
        assert tag_at(text, tag_shape(pattern), start) == expected, (pattern, text, start)


@st.composite
def shaped_tags(draw: st.DrawFn) -> tuple[str, str]:
    """A shaped pattern, and text of a few of its tags (a part left out here and there) among noise."""
    pattern = draw(st.sampled_from(SHAPED))
    shape = tag_shape(pattern)
    space = st.text(alphabet=" \n\u2003\x1c", max_size=2)
    noise = st.sampled_from(["", "v", " ", shape.opening[:2], shape.closing[:2]])
    text = draw(noise)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["k", "", "k" + shape.stops[0]]))
        value = draw(st.sampled_from(["v", "", " v", shape.closing[:1]]))
        parts = [shape.opening, key, shape.middle, draw(space), value, draw(space), shape.closing]
        kept = draw(st.lists(st.sampled_from([True, True, True, True, False]), min_size=7, max_size=7))
        text += "".join(part for part, keep in zip(parts, kept) if keep) + draw(noise)
    return pattern, text


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.sampled_from(SHAPED), TAG_TEXTS)
def test_tag_at_is_regexs_match_at_each_position(pattern: str, text: str) -> None:
    _matches_at_every_position(pattern, text)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(shaped_tags())
def test_tag_at_and_tag_rows_on_text_made_of_the_patterns_parts(case: tuple[str, str]) -> None:
    pattern, text = case
    _matches_at_every_position(pattern, text)
    expected = [(m["key"], m["value"]) for m in regex.finditer(pattern, text, flags=regex.DOTALL)]
    assert tag_rows(text, tag_shape(pattern)) == expected


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    random_shapes(), st.lists(st.sampled_from([*list('<>=/ab\n \t"x'), "\u2003"]), max_size=24).map("".join)
)
def test_tag_at_on_random_shapes_is_regexs_match(pattern: str, text: str) -> None:
    _matches_at_every_position(pattern, text)


XML_ARGS = st.fixed_dictionaries(
    {"tag_pattern": st.sampled_from(SHAPED[:6])},
    optional={
        "merge_duplicates": st.sampled_from([True, False, 1, None]),
        "value_parser": st.sampled_from(
            [
                None,
                {"name": "json", "args": {"allow_non_json": True}},
                {"name": "json"},
                {"name": "int"},
                {"name": "text", "args": {"strip": False}},
                {"name": "json", "args": {"allow_non_json": True, "strip": False}},
                {"name": "nope"},
                "json",
            ]
        ),
    },
)
XML_TEXTS = st.lists(
    st.sampled_from(
        [
            "<parameter=city>",
            "<parameter=days>",
            '<parameter name="city">',
            "</parameter>",
            "\n",
            " ",
            "Paris",
            "3",
            " 3 ",
            "[1, 2]",
            '{"a": true}',
            "true",
            "007",
            "<p=k>",
            "</p>",
            "x",
        ]
    ),
    max_size=14,
).map("".join)


@pytest.mark.parametrize("target", ["5.24", "5.23"])
def test_xml_inline_with_a_shaped_pattern_answers_as_transformers(target: str) -> None:
    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(XML_TEXTS, XML_ARGS)
    def check(text: str, args: dict) -> None:
        _same_as_oracle(target, "xml-inline", text, args)

    check()


# -- the JSON dialect and plain JSON ----------------------------------------------------------------------

DIALECT_PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", "city", "days", "_k1", "3", "-2.5", "true", "null", "\"", " ", "\n",
        '<|"|>', "Paris", "Zürich", "a\\b", "\t", "<<", ">>", "{a:1}", "\x01", "é",
    ]
)  # fmt: skip


@st.composite
def dialect_objects(draw: st.DrawFn) -> str:
    """Mostly well-formed dialect objects (so the fast path runs to `json.loads`), with some damage."""

    def value(depth: int) -> str:
        kind = draw(st.integers(0, 5 if depth < 3 else 2))
        if kind == 0:
            return draw(st.sampled_from(["3", "-1.5e3", "true", "null", "007"]))
        if kind in (1, 2):
            body = draw(st.sampled_from(["Paris", "", "a,b:c", 'say "hi"', "x\\ny", "Zürich", "{k:1}", "\t"]))
            return f'<|"|>{body}<|"|>'
        if kind == 3:
            return "[" + ",".join(value(depth + 1) for _ in range(draw(st.integers(0, 3)))) + "]"
        keys = draw(st.lists(st.sampled_from(["city", "days", "_x", "k2", "a b", ""]), max_size=3))
        return "{" + ",".join(f"{k}:{value(depth + 1)}" for k in keys) + "}"

    text = value(0)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(DIALECT_PIECES) + text[at:]
    return text


DIALECT_ARGS = st.sampled_from(
    [
        {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True},
        {"string_delims": [['<|"|>', '<|"|>']]},
        {"unquoted_keys": True},
        {"string_delims": [["<<", ">>"]], "unquoted_keys": True},
        {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True, "allow_non_json": True},
        {"string_delims": [['<|"|>', '<|"|>'], ["<<", ">>"]], "unquoted_keys": True},
        {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": 1},
        {},
        {"allow_non_json": True, "strip": False},
    ]
)


@pytest.mark.parametrize("target", ["5.24", "5.23"])
def test_json_dialect_answers_as_transformers(target: str) -> None:
    @settings(max_examples=1500, deadline=None, derandomize=True)
    @given(dialect_objects() | st.lists(DIALECT_PIECES, max_size=12).map("".join), DIALECT_ARGS)
    def check(text: str, args: dict) -> None:
        _same_as_oracle(target, "json", text, args)

    check()


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        ' {"a": 1}',
        '{"a": 1} ',
        '{"a": 1}{"b": 2}',
        "\ufeff{}",
        "[1, 2",
        '"\\ud800"',
        "NaN",
        "-Infinity",
        "1e400",
        '"a\x01b"',
        "[" * 50 + "]" * 50,
        "",
        "3 4",
    ],
)
def test_json_values_read_by_the_scanner_are_json_loads_values(text: str) -> None:
    """The C scanner stands in for `json.loads` only when it reads the whole text from its first
    character; the rest (whitespace around, extra data, a BOM, errors) is `json.loads`' own answer."""
    _same_as_oracle("5.24", "json", text, {})


# -- each field's parser ------------------------------------------------------------------------------------

ODD_ARGS = [
    ("kv-lines", {"kv_sep": "", "value_parser": {"name": "json"}}),
    ("kv-lines", {"line_sep": ""}),
    ("kv-lines", {"strip": 0, "kv_sep": "="}),
    ("kv-lines", {"value_parser": {"name": "int"}}),
    ("kv-lines", {"value_parser": {"name": "json", "args": {"allow_non_json": True}}, "kv_sep": "="}),
    ("kv-lines", {"value_parser": ["json"]}),
    ("xml-inline", {}),
    ("xml-inline", {"tag_pattern": 3}),
    ("xml-inline", {"tag_pattern": SHAPED[0], "value_parser": {"name": "python-call-list"}}),
    ("json", {"string_delims": "<>"}),
    ("json", {"allow_non_json": "yes"}),
    ("text", {"strip": None}),
    ("int", {}),
    ("bool", {"strip": False}),
    ("python-call-list", {}),
]
ODD_TEXTS = [
    "a: 1\nb = 2\n c :[1, 2] \n\nd:x:y",
    "<parameter=a>\n1\n</parameter><parameter=b>[x]</parameter>",
    " 42 ",
    '{"a": 1}',
    "[f(a=1)]",
    "",
]


@pytest.mark.parametrize("target", ["5.24", "5.23"])
@pytest.mark.parametrize(("name", "args"), ODD_ARGS)
def test_a_field_parser_answers_as_the_general_parser_and_transformers(
    name: str, args: dict, target: str
) -> None:
    if name == "python-call-list" and target == "5.23":
        pytest.skip("python-call-list is new in 5.24")
    for text in ODD_TEXTS:
        _same_as_oracle(target, name, text, args)


def test_an_unknown_parser_name_raises_on_use_as_upstream_does() -> None:
    parser = content.content_parser("python-call-list", {}, get_target("5.23"))
    with pytest.raises(KeyError):
        parser("[f(a=1)]")
    with pytest.raises(KeyError):
        oracle_parse_content("x", "nope", {})


def test_a_field_parser_reads_its_arguments_once() -> None:
    """A field's parser (`content_parser`, built when a generated module is imported) reads a dict's
    arguments when it is built, not on every region: changing them afterwards changes nothing."""
    release = get_target("5.24")
    cases = [
        ("json", {"allow_non_json": False}, "allow_non_json", True, "not json"),
        ("kv-lines", {"kv_sep": ":"}, "kv_sep", "=", "a: 1"),
        (
            "xml-inline",
            {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"},
            "merge_duplicates",
            True,
            "<a>1</a><a>2</a>",
        ),
    ]
    for name, args, key, changed, text in cases:
        parse = content.content_parser(name, args, release)
        before = outcome(parse, text)
        args[key] = changed
        assert same_outcome(outcome(parse, text), before), name
        assert not same_outcome(outcome(content.parse_content, text, name, args, release), before), name


# -- no slower than linear -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "'<parameter=' * 20000 + '\\n'",  # every opening's key runs to one far line break: no match
        "'<parameter=a>' * 20000",  # no closing literal after any value
        "'<parameter=a>' + ' ' * 200000 + 'x'",  # one long whitespace run, no closing literal
        "('<parameter=a>' + ' ' * 50 + 'v' + ' ' * 50) * 2000 + '</parameter>'",  # one value, many spaces
    ],
)
def test_tag_rows_stay_linear_on_hostile_text(text: str) -> None:
    code = (
        "import time, regex\n"
        "from respc.runtime.tags import tag_rows, tag_shape\n"
        f"text = {text}\n"
        "shape = tag_shape(r'<parameter=(?P<key>[^>\\n]+)>\\s*(?P<value>.*?)\\s*</parameter>')\n"
        "rows = tag_rows(text, shape)\n"
        "print(len(rows))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# -- what the review found (helper session): arguments and texts of other types --------------------------


@pytest.mark.parametrize(
    "string_delims",
    [{"<>": 1}, {("<", ">")}, (["<", ">"],), {0: ["<", ">"]}, None, 0, "", False],
)
@pytest.mark.parametrize("unquoted_keys", [True, False])
def test_string_delims_of_other_types_are_iterated_as_upstream_does(
    string_delims: object, unquoted_keys: bool
) -> None:
    release = get_target("5.24")
    args = {"string_delims": string_delims, "unquoted_keys": unquoted_keys}
    for text in ("{a:<x>}", '{"a":<x>}', '{"a":1}'):
        theirs = outcome(oracle_parse_content, text, "json", args)
        assert same_outcome(outcome(content.parse_content, text, "json", args, release), theirs), (text, args)
        assert same_outcome(outcome(content.content_parser("json", args, release), text), theirs), (
            text,
            args,
        )


@pytest.mark.parametrize("text", [None, 123, b"<p=a>b</p>", b"012", b"[1]"])
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("xml-inline", {"tag_pattern": r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>"}),
        ("json", {}),
        ("json", {"allow_non_json": True}),
        ("kv-lines", {}),
    ],
)
def test_texts_that_are_no_str_fail_as_upstream_does(text: object, name: str, args: dict) -> None:
    release = get_target("5.24")
    theirs = outcome(oracle_parse_content, text, name, args)
    assert same_outcome(outcome(content.parse_content, text, name, args, release), theirs)
    assert same_outcome(outcome(content.content_parser(name, args, release), text), theirs)
