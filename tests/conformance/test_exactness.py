"""The eight divergence classes an independent random-template fuzzer found (issue #32), each run on respc and
the oracle side by side for each target: whole texts, streams under every chunking, and load-time errors.

Templates are Python dicts, since some use keys JSON cannot hold (None, integers).
"""

from __future__ import annotations

import pytest
from support.compare import assert_same, chunkings, oracle_parse, oracle_stream, respc_parse, respc_stream
from support.oracles import is_exception_of, oracle

import respc


def t(fields: dict, **top: object) -> dict:
    return {"start_anchor": "<A>", "fields": fields, **top}


CASES = {
    # 1. `\K` (the `regex` module's "reset match start") in a delimiter pattern.
    "1 reset-start open": (t({"pos": {"open_pattern": ">\\K"}}), ">h"),
    "1 reset-start close": (t({"pos": {"open": ">", "close_pattern": ">\\K"}}), ">h>x"),
    "1 reset-start mid pattern": (t({"pos": {"open_pattern": "a\\Kb", "close": "</"}}), "xab</y"),
    # 2. Fuzzy matching (`{e<=1}` and friends).
    "2 fuzzy close": (t({"pos": {"open_pattern": "]|>", "close_pattern": "(?:ool>){e<=1}"}}), "><tool>"),
    "2 fuzzy close after json": (
        t({"pos": {"open_pattern": "]|>", "content": "json", "close_pattern": "(?:<tool>){e<=1}"}}),
        '>{"a":1}<tool>',
    ),
    "2 fuzzy open": (t({"pos": {"open_pattern": "(?:<ab>){s<=1}", "close": "."}}), "x<ac>y.z"),
    # 3. Opens that can match the empty string, beside other fields.
    "3 empty-group open beside a literal": (t({None: {"open_pattern": "(())"}, "x": {"open": "["}}), "[<"),
    "3 empty-group open before a colon": (t({None: {"open_pattern": "():"}}), ":\n"),
    "3 empty open beside a literal, named": (
        t({"e": {"open_pattern": "()", "close": "]"}, "x": {"open": "["}}),
        "a[b]c",
    ),
    # 4. Field names that are not strings.
    "4 None field opens": (t({None: {"open": ">"}}), ">"),
    "4 None field beside an implicit one": (t({None: {"open": ">"}, "c": {"close": "!"}}), "a>b!c>d"),
    "4 None implicit field with a close": (
        t({None: {"close": "!"}, "x": {"open": "<", "close": ">"}}),
        "a!<b>",
    ),
    "4 int and str tie": (t({1: {"open": ">"}, "a": {"open": ">"}}), ">x"),
    "4 str and int tie": (t({"a": {"open": ">"}, 1: {"open": ">"}}), "y>x"),
    "4 ints in numeric order": (t({10: {"open": ">"}, 9: {"open": ">"}}), ">x"),
    # (beside a str, which they do not compare with: their tie is still 9's, not "10" < "9"'s; a fuzz find)
    "4 ints in numeric order beside a str": (
        t({"a": {"open": "<"}, 10: {"open_pattern": ">"}, 9: {"open_pattern": ">"}}),
        ">x",
    ),
    # (a held partial match in a state without runs, then a chunk: mode held tests for a held run; a fuzz find)
    "4 held close pattern without runs": (t({"content": {"close_pattern": "<", "optional": False}}), "<\n"),
    "4 tuples in their order beside a str": (  # (a review's find: `repr` puts "(10,)" first)
        t({"a": {"open": "<"}, (10,): {"open": ">"}, (9,): {"open": ">"}}),
        ">x",
    ),
    "4 numbers in numeric order beside a str": (
        t({"a": {"open": "<"}, 1.5: {"open": ">"}, 1: {"open": ">"}, 2: {"open": ">"}}),
        ">x",
    ),
    "4 int beside str, no tie": (t({1: {"open": ">"}, "a": {"open": "<"}}), ">x<y"),
    # (the oracle compares the keys of the committable matches even when a pending one then holds them)
    "4 tie while a pattern holds": (
        t({"content": {"open": "<a>"}, 1: {"open": "<a>"}, "thinking": {"open_pattern": "<a>"}}),
        "\n<a>",
    ),
    "4 None and str tie": (t({"a": {"open_pattern": ">"}, None: {"open": ">"}}), ">x"),
    # 5. Field names that are names in the generated module.
    "5 field named like a scan": (
        t(
            {
                "_scan_outside": {
                    "open_pattern": "(?<e>[^n])\\u0060",
                    "transform": {"function": {"name": "{content.name}"}},
                }
            }
        ),
        "``",
    ),
    "5 generated names as fields": (
        t(
            {
                "STATES": {"open": "<s>", "close": "</s>"},
                "outside": {"open": "<o>", "close": "</o>"},
                "self": {"open": "<f>", "content": "int"},
                "__init__": {"open": "<i>", "close": "</i>"},
                "parse_response": {"open_pattern": "<p>", "close": "</p>"},
                "start_anchor": {"open": "<a>", "close_pattern": "</a>"},
                "x_open": {"open": "<x>"},
                "x": {"open_pattern": "<y>"},
            }
        ),
        "<s>1</s><o>2</o><i>3</i><p>4</p><a>5</a><x>6<y>7<f>8",
    ),
    # 6. Which error wins at the end of the stream.
    "6 missing None field before its parse": (
        t({None: {"open": ">", "content": "python-call-list", "optional": False}, "tools": {}}),
        ">",
    ),
    "6 missing field after a reset-start close": (
        t({"class": {"open": ["t a"], "optional": False}, "x_y": {"open": "]", "close_pattern": ">\\K"}}),
        "]>t a",
    ),
    # 7. Messages on rare paths.
    "7 xml-inline value group that did not take part": (
        t(
            {
                "c": {
                    "open": ">",
                    "content": "xml-inline",
                    "content_args": {
                        "tag_pattern": "<p=(?P<key>\\w+)>(?:(?P<value>\\d+))?</p>",
                        "value_parser": {"name": "python-call-list"},
                    },
                }
            }
        ),
        "><p=z></p>",
    ),
    # 8. Opens and closes that can match empty, but not at one position: no hang, no refusal.
    "8 close needs a character": (
        t({"tool_calls": {"open_pattern": "()", "transform": "{content}", "close_pattern": "(?<n>)(b)"}}),
        "xbz",
    ),
    "8 named groups spelled (?<name>)": (
        t({"c": {"open_pattern": "(?<o>)", "close_pattern": "(?<c>x?)y", "transform": "{content}"}}),
        "axyb",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_whole_text_matches_oracle(name: str, target: str) -> None:
    template, text = CASES[name]
    ours = respc_parse(template, text, "", target=target)
    theirs = oracle_parse(template, text, "", target=target)
    assert_same(ours, theirs, template, f"{name}: parse {text!r}", target)


@pytest.mark.parametrize("name", list(CASES))
def test_streams_match_oracle(name: str, target: str) -> None:
    template, text = CASES[name]
    for chunks in chunkings(text, random_splits=2):
        ours = respc_stream(template, "", chunks, target=target)
        theirs = oracle_stream(template, "", chunks, target=target)
        assert_same(ours, theirs, template, f"{name}: chunks {chunks!r}", target)


# 7. Load-time departures: respc's message names the field and key; its type is a subclass of the oracle's.
LOAD_DEPARTURES = {
    "unhashable content name": t({"thinking": {"open": ">", "content": ["json"]}}),
    "unhashable content name, dict": t({"thinking": {"open": ">", "content": {"json": 1}}}),
    "pattern not a string": t({"thinking": {"open_pattern": 5}}),
    "close pattern not a string": t({"thinking": {"open": "<t>", "close_pattern": ["</t>"]}}),
    "start anchor pattern not a string": {"start_anchor_pattern": None, "fields": {"c": {}}},
}


@pytest.mark.parametrize("name", list(LOAD_DEPARTURES))
def test_load_departures_subclass_the_oracle_type(name: str, target: str) -> None:
    template = LOAD_DEPARTURES[name]
    outcome = oracle(target).request("load", template)
    assert outcome != "accept", f"the oracle accepts {template!r}"
    with pytest.raises(Exception) as caught:
        respc.compile_template(template, target=target)
    theirs = outcome.split(":", 1)[0]
    assert theirs in {
        klass.__name__ for klass in type(caught.value).__mro__
    }, f"respc raises {type(caught.value).__name__}, not a subclass of the oracle's {outcome}"
    assert isinstance(caught.value, respc.TemplateError)
    assert is_exception_of(type(caught.value), TypeError if theirs == "TypeError" else ValueError)


def test_q5_refusal_still_fires_where_both_match_empty_together(target: str) -> None:
    """The refusal stays where transformers does loop (open and close empty at one position)."""
    for template in (
        t({"c": {"open_pattern": "a?", "close_pattern": "b?"}}),
        t({"c": {"open_pattern": "(?<o>a?)", "close_pattern": "(?<c>)", "transform": "{content}"}}),
        t({"c": {"open_pattern": "$", "close_pattern": "(?:ab){e<=2}"}}),  # two errors delete it all
    ):
        with pytest.raises(respc.TemplateError, match="quirk Q5"):
            respc.compile_template(template, target=target)


def test_none_field_reopening_on_nothing_raises_instead_of_looping(target: str) -> None:
    """An open of the field named None that matches empty where it just opened: transformers reopens it
    there forever (its region None watches that open); respc raises instead of hanging."""
    parser = respc.ResponseParser(t({None: {"open_pattern": "(())"}}), "", target=target)
    with pytest.raises(RuntimeError, match="reopen it there forever"):
        parser.feed("a")


# 8, continued: what only looks empty (a `\K` match has consumed text; inline flags and fuzzy matching that
# cannot shorten a match take nothing away from a delimiter's least width) is not refused either.
NOT_HANGING = {
    "reset-start open": (t({"c": {"open_pattern": "<a>\\K", "close_pattern": "()"}}), "x<a>y<a>"),
    "flagged close": (t({"c": {"open_pattern": "()", "close_pattern": "(?i)<a>"}}), "x<A>y"),
    "multiline close": (t({"c": {"open_pattern": "()", "close_pattern": "(?m)^<a>"}}), "x\n<a>y"),
    "fuzzy close": (t({"c": {"open_pattern": "()", "close_pattern": "(?:<ab>){s<=1}"}}), "x<ac>y"),
    # errors that shorten a match (`e`, `d`), but not to nothing: found by the long fuzz run
    "fuzzy close with an error": (
        t({"c": {"open_pattern": "(?:\\[/a\\]|$)", "close_pattern": "(?:<a){e<=1}"}}),
        "x[/a]y<bz[/a]a\n",
    ),
    "fuzzy open beside a lookahead close": (
        t({"c": {"open_pattern": "(?:\\[a\\]){e<=1}", "close_pattern": "(?=z)"}}),
        "[a]xz[b]z[a",
    ),
}


@pytest.mark.parametrize("name", list(NOT_HANGING))
def test_templates_that_cannot_loop_compile_and_match_oracle(name: str, target: str) -> None:
    template, text = NOT_HANGING[name]
    respc.compile_template(template, target=target)  # not refused as quirk Q5
    for chunks in chunkings(text, random_splits=1):
        ours = respc_stream(template, "", chunks, target=target)
        theirs = oracle_stream(template, "", chunks, target=target)
        assert_same(ours, theirs, template, f"{name}: chunks {chunks!r}", target)
    assert_same(
        respc_parse(template, text, "", target=target),
        oracle_parse(template, text, "", target=target),
        template,
        name,
        target,
    )
