"""What transformers 5.24 changed, target by target: every reproduction of transformers-5.24-changes.md
(and the docstring change the wheels show), each target checked against its own release, with the
results the changes file states pinned; then property tests of the two parsing changes (close-pattern
captures, the recheck of regex matches before the buffer's edge) over random templates and chunkings."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compare import (
    SUPPORTED_TARGETS,
    assert_same,
    chunkings,
    oracle_stream,
    respc_parse,
    respc_stream,
)
from support.oracles import is_exception_of, oracle

import respc
from respc.runtime.schema import get_json_schema


def t(fields: dict) -> dict:
    return {"start_anchor": "<A>", "fields": fields}


CALLS = t(
    {
        "content": {},
        "tool_calls": {
            "open": "<|tool_call_start|>",
            "close": "<|tool_call_end|>",
            "content": "python-call-list",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            "transform_each": True,
        },
    }
)
CLOSE_CAPTURES = t(
    {
        "content": {},
        "tool_calls": {
            "open_pattern": r"<call name=(?P<name>\w+)>",
            "close_pattern": r"</call id=(?P<id>\d+)>",
            "content": "json",
            "transform": {"name": "{name}", "id": "{id}", "arguments": "{content}"},
        },
    }
)
DOLLAR = t({"reasoning_content": {"open": "<r>", "close_pattern": "$"}, "content": {}})
UNQUOTED = t(
    {"j": {"open": "<j>", "close": "</j>", "content": "json", "content_args": {"unquoted_keys": True}}}
)
MERGE = t(
    {
        "x": {
            "open": "<x>",
            "close": "</x>",
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
                "merge_duplicates": True,
                "value_parser": {"name": "json"},
            },
        }
    }
)

# name -> (template, chunks, {target: the result the changes file states})
CHANGES = {
    "1 python-call-list": (
        CALLS,
        [
            'Ok<|tool_call_start|>[get_weather(city="Oslo", days=3), '
            "f(x=[1, {\"a\": None}], y='\\u00e9')]<|tool_call_end|>"
        ],
        {
            "5.24": {
                "content": "Ok",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}},
                    },
                    {
                        "type": "function",
                        "function": {"name": "f", "arguments": {"x": [1, {"a": None}], "y": "é"}},
                    },
                ],
            },
            "5.23": "ValueError: Field 'tool_calls': unknown content parser 'python-call-list'. Available: "
            "['bool', 'float', 'int', 'json', 'kv-lines', 'text', 'xml-inline']",
        },
    ),
    "2 close-pattern captures": (
        CLOSE_CAPTURES,
        ['Hi<call name=f>{"a": 1}</call id=7>'],
        {
            "5.24": {"content": "Hi", "tool_calls": {"name": "f", "id": "7", "arguments": {"a": 1}}},
            "5.23": "KeyError: \"transform placeholder '{id}' is not defined. Available: ['content', 'name']\"",
        },
    ),
    "3 a $ close at a chunk edge": (
        DOLLAR,
        ["<r>abc\n", "def"],
        {"5.24": {"reasoning_content": "abc\ndef"}, "5.23": {"reasoning_content": "abc", "content": "def"}},
    ),
    "4 unquoted keys leave strings alone": (
        UNQUOTED,
        ['<j>{ city: "Paris", note: "a,b: c"}</j>'],
        {
            "5.24": {"j": {"city": "Paris", "note": "a,b: c"}},
            "5.23": "ValueError: json: could not parse after dialect transforms.",
        },
    ),
    "5 merged list values": (
        MERGE,
        ["<x><k>[1]</k><k>[2]</k></x>"],
        {"5.24": {"x": {"k": [[1], [2]]}}, "5.23": {"x": {"k": [1, [2]]}}},
    ),
}


def _result(template: dict, chunks: list[str], target: str) -> object:
    """The message of respc's stream, or "<Exception>: <first line>" of its first failure."""
    trace = respc_stream(template, "<A>", chunks, target=target)
    failures = [
        step for step in trace if step[0] == "raise" and step[2] != "ResponseParser already finalized"
    ]
    if failures:  # named by its builtin class (respc's TemplateError is a ValueError)
        builtin = next(k.__name__ for k in failures[0][1].__mro__ if k.__module__ == "builtins")
        return f"{builtin}: {failures[0][2].splitlines()[0]}"
    return trace[-2][1][0]  # finalize's message (a second finalize follows it)


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_is_exact_for_each_target(change: str, target: str) -> None:
    template, chunks, expected = CHANGES[change]
    for split in [*chunkings("".join(chunks)), chunks]:
        ours = respc_stream(template, "<A>", split, target=target)
        theirs = oracle_stream(template, "<A>", split, target=target)
        assert_same(ours, theirs, template, f"{change} {split!r}", target)
    assert _result(template, chunks, target) == expected[target]


def test_a_python_call_list_template_for_5_23_fails_as_5_23_validates() -> None:
    with pytest.raises(respc.TemplateError) as raised:
        respc.compile_template(CALLS, target="5.23")
    assert str(raised.value) == CHANGES["1 python-call-list"][2]["5.23"].removeprefix("ValueError: ")
    assert respc.compile_template(CALLS, target="5.24").TRANSFORMERS_TARGET == "5.24"


def test_the_one_shot_parse_follows_the_target_too(target: str) -> None:
    """parse_response never holds anything back, so only the content-parser changes show there."""
    for template, text in ((UNQUOTED, '<j>{ a: "x,b:1"}</j>'), (MERGE, "<x><k>[1]</k><k>[2]</k></x>")):
        ours = respc_parse(template, text, "<A>", target=target)
        theirs = oracle(target).request("parse", (template, text, "<A>", None))
        assert_same(ours, theirs, template, text, target)


DOCSTRING = '''
def lookup(city: str, days: int = 1) -> dict:
    """Look the weather up.

    Args:
        city (str): The city.
        days (int, optional): How many days.
    """
'''


def test_docstring_arg_types_follow_the_target(target: str) -> None:
    """5.24's get_json_schema reads `name (type): text` entries (not in its release notes: the wheels
    show it); 5.23 finds no description for `city` there and fails."""
    namespace: dict = {}
    exec(textwrap.dedent(DOCSTRING), namespace)
    (theirs,) = oracle(target).request("call", ("schema_of_source", (textwrap.dedent(DOCSTRING), "lookup")))
    try:
        ours = ("ok", get_json_schema(namespace["lookup"], target))
    except Exception as error:
        ours = ("raise", type(error), str(error))
    if theirs[0] == "ok":
        assert ours == theirs and target == "5.24"
    else:
        assert ours[0] == "raise" and is_exception_of(ours[1], theirs[1]) and ours[2] == theirs[2]
        assert target == "5.23"


# -- property tests of the two changes to the processing pass ------------------------------------------------

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
CLOSES = [
    r"$",
    r"\n?$",
    r"(?:</r>|$)",
    r"</r>(?=\s*$)",
    r"</r>(?=\n)",
    r"(?=\Z)",
    r"</r>(?P<tail>.?)",
    r"</r>(?P<id>\d*)",
    r"</r>(?P<rest>[^<]*)",
    r"(?P<mark>[!?])\s",
    r"</r>\n?",
    r"\s*</r>",
    r"</(?P<tag>\w+)>",
]
TEXTS = st.text(alphabet="ab\n !?</r>12", max_size=24).map(lambda s: "<r>" + s)


@SETTINGS
@given(
    close=st.sampled_from(CLOSES),
    implicit=st.booleans(),
    text=TEXTS,
    cuts=st.lists(st.integers(1, 30), max_size=6),
    target=st.sampled_from(SUPPORTED_TARGETS),
)
def test_regex_closes_and_their_captures(
    close: str, implicit: bool, text: str, cuts: list[int], target: str
) -> None:
    """Closes that lean on the end of the input, and closes with named groups (which join the transform's
    scope in 5.24), explicit and implicit, under random chunkings."""
    transform = {
        "v": "{content}",
        **{name: "{" + name + "}" for name in ("tail", "id", "rest", "mark", "tag") if f"<{name}>" in close},
    }
    field = {"open": "<r>", "close_pattern": close}
    if len(transform) > 1:
        field["transform"] = transform
    fields = (
        {"r": field, "c": {}}
        if not implicit
        else {
            "r": {"open": "<r>", "close": "</x>"},
            "c": {"close_pattern": close, **({"transform": transform} if len(transform) > 1 else {})},
        }
    )
    template = t(fields)
    chunks, at = [], 0
    for cut in cuts:
        chunks.append(text[at : at + cut])
        at += cut
    chunks.append(text[at:])
    ours = respc_stream(template, "", chunks, target=target)
    theirs = oracle_stream(template, "", chunks, target=target)
    assert_same(ours, theirs, template, f"chunks={chunks!r}", target)


def test_every_target_has_its_oracle_and_switches() -> None:
    """The pieces docs/releases.md's "Adding the next release" puts together agree with each other."""
    import json
    import re
    from pathlib import Path

    from support import oracles
    from support.compare import FIXTURES

    from respc.runtime.targets import DEFAULT_TARGET, TARGETS

    root = Path(__file__).parents[2]
    assert set(oracles.RELEASES) == set(SUPPORTED_TARGETS) and oracles.IN_PROCESS == DEFAULT_TARGET
    assert all(TARGETS[name].release == release for name, release in oracles.RELEASES.items())
    pyproject = (root / "pyproject.toml").read_text()
    for extra in ("test", "bench"):  # both extras pin the default target's release
        declared = re.search(rf"^{extra} = \[(.*?)\]$", pyproject, re.MULTILINE | re.DOTALL)
        assert declared and f'"transformers=={oracles.RELEASES[DEFAULT_TARGET]}"' in declared[1], extra
    switches = [
        name for name in TARGETS[DEFAULT_TARGET].__slots__ if isinstance(getattr(TARGETS["5.23"], name), bool)
    ]
    assert switches and not any(getattr(TARGETS[SUPPORTED_TARGETS[0]], name) for name in switches)
    sources = "\n".join(p.read_text() for p in (root / "respc").rglob("*.py") if p.name != "targets.py")
    for name in switches:
        assert f".{name}" in sources, f"switch {name} is read nowhere"
    corpus = json.loads((FIXTURES / "bad_templates.json").read_text())
    assert all(set(entry["oracle"]) == set(SUPPORTED_TARGETS) for entry in corpus)
    for golden in (root / "tests" / "golden").glob("*.py"):
        assert f"for transformers {DEFAULT_TARGET} from" in golden.read_text().splitlines()[0], golden
