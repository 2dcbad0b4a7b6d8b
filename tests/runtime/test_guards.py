"""Guarded branches and several start characters, against transformers (issue #31).

A delimiter branch written `^...` can match only at position 0 of transformers' buffer, which it never
trims, and one written `(?<=;)...` only right after a `;` (`respc.compiler.analysis.guards`). The fast
modes judge a chunk by the other branches once the parser is past the buffer's start and no guard
character is in or just before the text they look at (`State.guard`); a state whose delimiters start with
up to three characters tests each (`_start_char` is then "" and `_starts_nothing` decides). The templates
below put both on their edges: a guarded complete match beside a partial match of another branch at
position 0 (`^|<think>`, as ERNIE writes it), a lookbehind guard whose character ends a chunk or a run,
prefixes that leave the parser at position 0 or past it, and start characters that start nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import (
    SUPPORTED_TARGETS,
    assert_same,
    assert_streams_agree,
    chunkings,
    oracle_stream,
    respc_stream,
    spy,
)

import respc
from respc.compiler.analysis import anchored_heads, guarded, lookbehind_literals
from respc.compiler.plan import plan_parser
from respc.runtime.scan import RUN_WHITESPACE
from respc.spec import load_template

_CALL = r'(?=\{\s*"n":)'
TEMPLATES = [
    {  # llama3's JSON tool calls: a `^` branch and a `(?<=;)` branch, and calls split by `;`
        "start_anchor": "S",
        "fields": {
            "tool_calls": {
                "open_pattern": r"^\s*(?:<\|py\|>\s*)?" + _CALL + r"|(?<=;)\s*" + _CALL,
                "close_pattern": r"\s*;" + _CALL + r"|<\|e\|>",
                "repeats": True,
                "content": "json",
            },
            "content": {"close_pattern": r"\s*(?:<\|e\|>|<\|m\|>)"},
        },
    },
    {  # llama3's pythonic calls: an opener that matches only at the start
        "start_anchor": "S",
        "fields": {
            "tool_calls": {"open_pattern": r"^(?=\[)|<\|ps\|>", "close": ["<|e|>", "<|pe|>"]},
            "content": {"close": ["<|e|>", "<|m|>"]},
        },
    },
    {  # gemma3: a leading group with a `^` branch, and a newline start character
        "start_anchor": "S",
        "fields": {
            "tool_calls": {"open_pattern": r"(?:^|\n\n)(?=\[[a-z])", "close": "<e>"},
            "content": {"close": ["<e>", "<eos>"]},
        },
    },
    {  # ERNIE: `^` beside a literal in one pattern, no implicit field (text outside regions is dropped)
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open_pattern": r"(?:^|<think>\s*)", "close": "</think>"},
            "content": {"open": "<r>\n", "close_pattern": r"\n?</r>"},
            "tool_calls": {"open": "<t>", "close": "</t>"},
        },
    },
    {  # several start characters: two literal lists, no regex (no context kept)
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": ["[T]", "<think>"], "close": ["[/T]", "</think>"]},
            "tool_calls": {"open": "[C]", "close": "</s>"},
            "content": {"close": "</s>"},
        },
    },
    {  # several start characters after a lead run (hunyuan, phi4-mini), and a class lookbehind guard
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"open_pattern": r"\s*<t>|(?<=[;,])f\(", "close": "</t>"},
            "content": {"close_pattern": r"\s*(?:<a>|助：|<\|e\|>)"},
        },
    },
    {  # MiniMax-M2: a wide lookbehind guard (calls follow one another after `</inv>`); context 6, which
        # the reasoning's shorter `</r>` need not keep (no lookbehind reads past it: `State.wide`)
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": "<r>", "close": "</r>"},
            "tool_calls": {
                "open_pattern": r"(?:\s*<c>|(?<=</inv>))\s*<i n=(?P<name>\w+)>",
                "close": "</inv>",
                "repeats": True,
                "transform": {"name": "{name}", "body": "{content}"},
            },
            "content": {"close_pattern": r"\s*(?:</c>|<\|e\|>)"},
        },
    },
    {  # a quantified lookbehind is no guard: `(?<=;)*` matches anywhere (a review found it taken for one)
        "start_anchor": "S",
        "fields": {
            "tool_calls": {"open_pattern": r"(?<=;)*<x>|^?<y>", "close": "</t>"},
            "content": {"close": "</s>"},
        },
    },
    {  # Kimi-K2 and Mistral v11: closes with a lookahead branch, read by the lookahead's first character
        "start_anchor": "S",
        "fields": {
            "reasoning_content": {"open": "<think>", "close_pattern": r"</think>|(?=<\|tc\|>)"},
            "tool_calls": {"open": "<|tc|>", "close_pattern": r"</s>|(?=\[TC\])", "repeats": True},
            "content": {"open": "[TC]", "close": "</s>"},
        },
    },
]
PIECES = [
    "S",
    ";",
    ",",
    " ",
    "\n",
    "\n\n",
    '{"n": 1}',
    '{"n":',
    "{",
    '"n"',
    "<|py|>",
    "<|e|>",
    "<|e",
    "<|m|>",
    "<|ps|>",
    "<|pe|>",
    "[",
    "[f]",
    "[T]",
    "[/T]",
    "[C]",
    "<think>",
    "<th",
    "</think>",
    "<r>\n",
    "\n</r>",
    "</r>",
    "<t>",
    "</t>",
    "f(",
    "<a>",
    "助：",
    "助",
    "<e>",
    "<eos>",
    "</s>",
    "<",
    "word",
    "a; b",
    "<c>",
    "</c>",
    "<i n=f>",
    "</inv>",
    "</",
    "</i",
    "nv",
    ">",
    "<|tc|>",
    "<|tc",
    "[TC]",
    "[T",
    "C]",
    "<x>",
    "<y>",
]
PREFIXES = ["", "xS", "xSab", "xS;", "xS\n"]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize("index", range(len(TEMPLATES)))
@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(PREFIXES), st.integers(0, 2**16))
def test_streams_agree_with_transformers(
    target: str, index: int, pieces: list[str], prefix: str, seed: int
) -> None:
    template, text = TEMPLATES[index], "".join(pieces)
    respc.compile_template(template)  # each template is valid: an invalid one would compare only errors
    for chunks in chunkings(text, seed, random_splits=2):
        ours = respc_stream(template, prefix, chunks, target=target)
        theirs = oracle_stream(template, prefix, chunks, target=target)
        assert_same(ours, theirs, template, f"prefix {prefix!r}, chunks {chunks!r}", target)


@pytest.mark.parametrize(
    ("index", "prefix", "chunks"),
    [
        # `^` completes at position 0 beside `<think>`'s partial match: committed once `<th` stops being
        # a prefix of `<t>` (the held text says nothing at position 0).
        (3, "xS", ["<", "t", "h", "ink>x</think>"]),
        (3, "xS", ["<th", "ink>", "\nhi</think><r>\nok\n</r>"]),
        # The guard character ends a chunk, ends a routed run, or comes right after a call.
        (0, "xS", ["hi", ";", ' {"n": 1}', "<|e|>"]),
        (0, "xS", ["hi;", " ", ' {"n": 1}', "<|e|>"]),
        (0, "xS", ["hi ", ";", "\n", '{"n"', ": 1}<|e|>"]),
        (0, "xS", [' {"n": 1};{"n": 2}', "<|e|>"]),
        (0, "xS;", [' {"n": 1}', "<|e|>"]),
        # A run alone as the first chunks: the start of the buffer stays where `^` can match.
        (0, "xS", [" ", "\n", '{"n": 1}<|e|>']),
        (1, "xS", [" ", "[f()]<|e|>"]),
        (1, "xSab", ["[f()]<|e|>"]),
        (2, "xS", ["hi", "\n", "\n", "[a]<e>"]),
        (2, "xS\n", ["\n[a]<e>"]),
        # Start characters that start nothing, or a starter across chunks.
        (4, "xS", ["a<b", "[x", "]<th", "ink>r[/T]", "c</s>"]),
        (5, "xS", ["hi 助", "手", " 助：", "x"]),
        (5, "xS", ["a,", "f(1)</t>", "b;f", "(2)</t><|e|>"]),
        # The lookbehind's text arrives across chunks that take the general mode's skip.
        (6, "xS", ["<c>\n<i n=f>1</inv>", "\n", "<i n=g>2", "</inv>x"]),
        (6, "xS", ["a</", "inv", ">", " <i n=f>", "1</inv><|e|>"]),
        (6, "xS", ["a</inv", "> ", " ", "<i n=f>1</inv>"]),
        (6, "xS", ["hi", "x</inv", ">", " <i n=f>", "1</inv><|e|>"]),  # `x</inv` starts nothing: routed
        (6, "xS", ["hi", "x</i", "n", "v", ">", " <i n=f>", "1</inv><|e|>"]),  # in mode lead
        # A lookahead close: zero-width where its text starts, across chunks or at a chunk's start.
        (8, "xS", ["<think>", "hm", " <|t", "c|>x", "</s>"]),
        (8, "xS", ["<think>hm", "<|tc|>", "a [T", "C]b", "</s>"]),
        (7, "xS", ["hi", "<x>a</t>b", "<y>c</t></s>"]),
        # At the start, a chunk that begins with no character an anchored branch reads first is judged by
        # the other branches (`State.anchored`); one that does, or an empty start, is not.
        (1, "xS", ["hi [f()]", "<|e|>"]),
        (1, "xS", ["hi", " [f()]<|e|>"]),
        (1, "xS", ["<", "|ps|>[f()]<|pe|>"]),
        (1, "xS", ["<|p", "s|>", "[f()]<|pe|>"]),
        (1, "xS", ["", "[f()]<|e|>"]),
        (1, "xS", ["[", "f()]<|e|>"]),
        (2, "xS", ["hi\n\n[a]<e>"]),
        (2, "xS", ["\n", "\n[a]<e>"]),
        (2, "xS", ["\n\n", "[a]<e>"]),
        (2, "xS", ["<e", "os>"]),
        (6, "xS", ["hi</inv>", " <i n=f>1</inv><|e|>"]),
        (6, "xS", ["</inv>", "<i n=f>1</inv>"]),
        # A guard character that ends another delimiter (`</r>`) guards nothing (`State.behind`), unless
        # the buffer holds too little before it to tell, or the lookbehind's text is there after all.
        (6, "xS", ["<r>hm</r>", "<i n=f>1</inv>"]),
        (6, "xS", ["<r>hm</", "r>\n<i n=f>1</inv>"]),
        (6, "xS", ["<r>hm</r>\n", " <c><i n=f>1</inv><|e|>"]),
        (6, "xS", ["<r>hm</r>", "\n\n", "<c>", "<i n=f>1</inv>", "<i n=g>2</inv>"]),
        (6, "xS", ["nv>", "<i n=f>1</inv>"]),
        (6, "xS</i", ["nv>", "<i n=f>1</inv>"]),
        (6, "xS</inv>", ["<i n=f>1</inv>"]),
        (6, "xS", ["a</r>", "<i n=f>1</inv>"]),
    ],
)
@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_edge_streams_agree_with_transformers(
    index: int, prefix: str, chunks: list[str], target: str
) -> None:
    template = TEMPLATES[index]
    ours = respc_stream(template, prefix, chunks, target=target)
    assert_same(ours, oracle_stream(template, prefix, chunks, target=target), template, repr(chunks), target)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^(?=\[)", ("", "", 0, ())),
        (r"^(?=\[)|<\|ps\|>", (r"<\|ps\|>", "", 0, ())),
        (r"(?:^|\n\n)(?=\[[a-z])", (r"\n\n(?=\[[a-z])", "", 0, ())),
        (r"^\s*x|(?<=;)\s*y", ("", ";", 1, ())),
        (r"\s*<t>|(?<=[;,])f\(", (r"\s*<t>", ",;", 1, ())),
        (r"\A<a>|b", ("b", "", 0, ())),
        (r"(?:\s*<c>|(?<=</i>))\s*<a>", (r"\s*<c>\s*<a>", ">", 4, ("</i>",))),
        (r"(?<=ab)x|(?<=</i>)y|(?<=;)z", ("", ";>b", 4, ("</i>", "ab"))),
        # Not guards: no guarded branch, a lookbehind that reads a pattern, a lookbehind elsewhere, a
        # repeated group, inline flags (`(?m)^` matches after every newline).
        (r"<a>|b", None),
        (r"(?<=</i>\s)\s*<a>", None),
        (r"^a|b(?<=b)", None),
        (r"(?:^|x)+a", None),
        (r"(?m)^a|b", None),
        # A guard the `regex` module may repeat zero times guards nothing (a review found these).
        (r"(?<=;)*<x>|<y>", None),
        (r"^?<x>|<y>", None),
        (r"\A{0,1}x|y", None),
        (r"(?:^*|z)<x>", None),
        (r"a|[|]|^b", ("a|[|]", "", 0, ())),
    ],
)
def test_guarded_branches_are_read_as_written(
    pattern: str, expected: tuple[str, str, int, tuple[str, ...]] | None
) -> None:
    assert guarded(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"^(?=\[)", "["),
        (r"^(?=\[)|<\|ps\|>", "["),
        (r"(?:^|\n\n)(?=\[[a-z])", "["),
        (r"^[ab]c|\A(?=d)|x", "abd"),
        (r"(?<=;)x|(?:\s*<c>|(?<=</i>))\s*<a>", ""),  # no branch anchored: none matches at the start
        # A run of `\s` first: its characters (the runtime's `RUN_WHITESPACE`), then what follows it.
        (r"^\s*(?=\{)|(?<=;)\s*(?=\{)", "".join(sorted(RUN_WHITESPACE | {"{"}))),
        (r"^\s*(?:<\|python_tag\|>\s*)?(?=\{)", "".join(sorted(RUN_WHITESPACE | {"{", "<"}))),
        # Unknown: a branch that matches the empty string there, or reads another class first.
        (r"(?:^|<think>\s*)", None),
        (r"^\s*(?=\{?)", None),
        (r"^(?=[a-z])", None),
        (r"^\d*x", None),
        (r"^.x", None),
    ],
)
def test_anchored_branches_are_read_by_their_first_characters(pattern: str, expected: str | None) -> None:
    assert anchored_heads(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"(?:\s*<c>|(?<=</i>))\s*<a>", ("</i>",)),
        (r"(?<=ab)x|(?<=</i>)y|(?<=;)z", (";", "</i>", "ab")),
        (r"^\s*x|(?<=;)\s*y", (";",)),  # (the anchored branch matches only at position 0)
        (r"^(?=\[)", ()),
        (r"\s*<t>|(?<=[;,])f\(", None),  # a class: which character is unknown
        (r"<a>|b", None),  # nothing guarded
        (r"(?m)^a|(?<=x)b", None),  # outside the syntax the analyses read
    ],
)
def test_lookbehind_literals_are_read_as_written(pattern: str, expected: tuple[str, ...] | None) -> None:
    assert lookbehind_literals(pattern) == expected


def test_a_guard_character_that_ends_no_lookbehinds_literal_guards_nothing() -> None:
    """MiniMax-M2's content state watches `(?<=</invoke>)`: the `>` of `</think>` right before the scan
    position guards nothing (`State.behind`), so the text after the reasoning takes the fast facts; that of
    `</invoke>` does, and so does one with too little before it to tell. In the text itself the same holds
    of each guard character: `tool">` ends no `</invoke>`, whatever came before it."""
    module = respc.load_preset("minimax_m2")
    assert module.ResponseParser.STATES["content"].behind == ("</invoke>",)
    parser = module.ResponseParser("]~b]ai\n")
    parser.feed("Sure")
    assert parser.current_field == "content"
    assert parser._unguarded("a</think>", 9)
    assert parser._unguarded("a</think>\n\n", 9)
    assert not parser._unguarded("a</invoke>", 10)
    assert not parser._unguarded("voke>", 5)
    assert not parser._unguarded("a</think>x>", 9)
    assert parser._unguarded("a</think>", 9, "x>")
    assert parser._unguarded("tool", 4, '">')  # (too little before it, but none of it ends `</invoke>`)
    assert not parser._unguarded("a</inv", 6, "oke>")
    assert not parser._unguarded("k", 1, "e>")  # (`ke>` may end `</invoke>`)
    assert not parser._unguarded("a", 1, "x></invoke>")
    # Mode lead and mode plain tell `_starts_nothing` what the buffer holds before the chunk.
    assert parser._starts_nothing('">', "tool")
    assert not parser._starts_nothing('">')
    assert not parser._starts_nothing(">", " </invoke")
    assert not parser._starts_nothing("e>", "</invok")
    llama3 = plan_parser(load_template(TEMPLATES[0], "5.24"))
    assert all(state.behind is None for state in llama3.states)  # (`;` alone: the character tells it all)


@pytest.mark.parametrize(("index", "first"), [(1, "hi [f()]"), (2, "hi [a]")])
def test_a_reply_that_starts_with_prose_takes_no_pass_beside_an_anchored_opener(
    index: int, first: str
) -> None:
    """llama4's and gemma3's tool calls open with `^(?=\\[)`: at the buffer's start, a chunk that begins
    otherwise is routed without a pass (the guard says nothing about it); one that begins with `[` takes
    the pass, which opens the call."""
    module = respc.compile_template(TEMPLATES[index])
    parser = module.ResponseParser("xS")
    passes = spy(parser, "_process")
    parser.feed(first)
    assert not passes
    opener = module.ResponseParser("xS")
    passes = spy(opener, "_process")
    assert opener.feed("[a]")[0] == {"type": "region_open", "field": "tool_calls"}
    assert passes


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    "chunks",
    [
        ["The ", "answer", "<|eot_id|>"],
        [" \n", '{"name": "f", "parameters": {}}', "<|eot_id|>"],
        ["\n\n", 'Hi {"name": "f", "parameters": {}}'],
        ["<|pyth", 'on_tag|>{"name": "f", "parameters": {}}<|eom_id|>'],
        ['{"na', 'me": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {}}'],
        ["\u3000", "x"],
        ["T", '{"name": "f", "parameters": {}}'],
    ],
)
def test_llama3_json_reads_its_anchored_openers_run_first(target: str, chunks: list[str]) -> None:
    """llama3-json's tool calls open with `^\\s*(?:<\\|python_tag\\|>\\s*)?(?=\\{...)` (or after `;`): at
    the buffer's start, a chunk that begins with none of whitespace, `<` and `{` is judged by the other
    branches (`State.anchored` holds the run's characters), so prose takes no search; the rest as before."""
    module = respc.load_preset("llama3_json", target=target)
    prefix = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert_same(
        respc_stream(module.TEMPLATE, prefix, chunks, target=target),
        oracle_stream(module.TEMPLATE, prefix, chunks, target=target),
        module.TEMPLATE,
        repr(chunks),
    )
    module.ResponseParser._first_fed = {}  # (the first feed's own way, not a remembered one)
    parser = module.ResponseParser(prefix)
    searches = spy(parser, "_process", "_pend")  # (the pass, or mode pending's partial search)
    parser.feed(chunks[0])
    assert bool(searches) == (chunks[0][0] in "<{" or chunks[0][0].isspace())


@pytest.mark.parametrize(
    ("name", "state", "mode", "start_char", "guard"),
    [
        ("llama3_json", "content", "lead", "<", ";"),
        ("llama3_pythonic", "content", "plain", "<", ""),
        ("llama4", "content", "plain", "<", ""),
        ("gemma3_pythonic", "content", "plain", "<\n", ""),
        ("phi4_mini", "content", "lead", "<f", None),
        ("hunyuan", "content", "lead", "<助", None),
        ("mistral_v11", "content", "plain", "<[", None),
        ("mistral_v11", "tool_calls", "plain", "<[", None),
        ("kimi_k2", "reasoning_content", "plain", "<", None),
        ("minimax_m2", "content", "lead", "<[", ">"),
    ],
)
def test_presets_that_lagged_take_fast_modes(
    name: str, state: str, mode: str, start_char: str, guard: str | None
) -> None:
    """The presets whose content states took a pass per chunk (docs/benchmarks.md) now take a fast mode."""
    plan = plan_parser(load_template(respc.load_preset(name).TEMPLATE, "5.24"), name)
    found = {s.key: s for s in plan.states}[state]
    assert (found.mode, found.start_char, found.guard) == (mode, start_char, guard)


@pytest.mark.parametrize(
    ("name", "field", "facts"),
    [
        ("minimax_m2", "tool_calls", (("<minimax:tool_call>",), "RUN_WHITESPACE")),
        ("llama4", "tool_calls", (("<|python_start|>",), None)),
        ("ernie4_5", "reasoning_content", (("<think>",), None)),
        ("llama3_json", "tool_calls", ((), None)),  # (every branch is guarded)
    ],
)
def test_a_guarded_opener_declares_its_unguarded_branches_facts(name: str, field: str, facts: tuple) -> None:
    """A pattern with guarded branches declares the stems and lead run of its other branches, so that held
    text that is a run and a proper prefix of one is its partial match without a search (`lead_holds`)."""
    plan = plan_parser(load_template(respc.load_preset(name).TEMPLATE, "5.24"), name)
    (opener,) = [d for d in plan.delimiters if d.field == field and d.kind == "open"]
    assert opener.unguarded_facts == facts


def test_a_guard_character_in_a_stem_or_run_declares_no_facts() -> None:
    """Inside held text that holds a guard character a guarded branch could match after it, so a stem
    (or run) with one declares nothing; the stream still agrees with transformers."""
    template = {
        "start_anchor": "S",
        "fields": {
            "tool_calls": {"open_pattern": r"(?:<c>x|(?<=>))<i>", "close": "</i>"},
            "content": {"close": "<|e|>"},
        },
    }
    plan = plan_parser(load_template(template, "5.24"), "t")
    (opener,) = [d for d in plan.delimiters if d.kind == "open"]
    assert opener.guard == ">" and opener.unguarded_facts == ((), None)
    assert_streams_agree(
        template, "xS", [], (["a<c", ">x<i>b</i>"], ["a<c>", "<i>b</i>"], ["<c>", "x", "<i", ">b</i><|e|>"])
    )


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_minimaxs_opener_is_held_by_its_unguarded_branch_without_a_pass(target: str) -> None:
    """MiniMax-M2's `\\n<mi` after prose, in mode lead: a run and a proper prefix of `<minimax:tool_call>`,
    its opener's unguarded branch's stem (`lead_holds`), held without the general mode."""
    module = respc.load_preset("minimax_m2", target=target)
    prefix = "]~b]ai\n"
    parser = module.ResponseParser(prefix)
    parser.feed("Let me look that up.")
    assert parser.feed_mode == "lead"
    calls = spy(parser, "_general", "_pass")
    assert parser.feed("\n<mi") == []
    assert not calls and parser.feed_mode == "held"
    assert_streams_agree(
        module.TEMPLATE,
        prefix,
        [],
        (
            [
                "Let me look that up.",
                "\n<mi",
                'nimax:tool_call>\n<invoke name="f">',
                "</invoke>",
                "</minimax:tool_call>",
            ],
            ["Let me look that up.", "\n<mi", "nd you", "[e~["],
            ["a</invoke>", "\n<mi", 'nimax:tool_call><invoke name="g">x</invoke>'],
            [
                "a",
                "\n<mi",
                "nimax:tool",
                "_call>",
                '<invoke name="f">',
                "</invoke>",
                '\n<invoke name="g">',
                "</invoke>",
            ],
        ),
        target=target,
    )


MINIMAX_PIECES = [
    "a",
    "tool",
    '">',
    ">",
    "e>",
    "ke>",
    "oke>",
    "</invoke>",
    "</",
    "inv",
    "</inv",
    "oke",
    "k",
    " ",
    "\n",
    " -> ",
    "<",
    '<invoke name="f">',
    '\n<invoke name="g">',
    '<parameter name="x">1</parameter>',
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "[e~[",
    "[e~",
    "</think>",
]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(MINIMAX_PIECES), max_size=12), st.integers(0, 2**16))
def test_a_guard_character_in_a_chunk_guards_only_where_it_may_end_the_lookbehinds_literal(
    target: str, pieces: list[str], seed: int
) -> None:
    """MiniMax-M2's `>` in content (`tool">`, `->`, `</invoke>` split anywhere), in the fast modes that ask
    `_guards` of the chunk with the buffer before it (which may hold less than `</invoke>`): the same
    streams as transformers under many chunkings, the pieces glued to prose or to each other."""
    module = respc.load_preset("minimax_m2", target=target)
    text = "".join(pieces)
    # The pieces as chunks, and each glued to the next (`b</invoke>`, then `<invoke name="f">`), besides
    # cuts at random.
    glued = ["".join(pieces[i : i + 2]) for i in range(0, len(pieces), 2)]
    for chunks in [pieces, glued, *chunkings(text, seed, random_splits=3)]:
        assert_same(
            respc_stream(module.TEMPLATE, "]~b]ai\n", chunks, target=target),
            oracle_stream(module.TEMPLATE, "]~b]ai\n", chunks, target=target),
            module.TEMPLATE,
            repr(chunks),
            target,
        )


# States that watch one delimiter with a guarded branch (a review found these): its empty partial match
# right after a guard character at the buffer's end is no match before the end, yet the next chunk may
# complete it, so mode held's release of a text its pattern finds nowhere (`_NOWHERE`) must not take it.
SINGLE_GUARDED = [
    {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|a|>",
        "fields": {
            "tool_calls": {"open": "<c>", "close_pattern": r"</c>|(?<=;)\s*(?=X)", "repeats": True},
            "content": {"close": "</s>"},
        },
    },
    {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|a|>",
        "fields": {
            "tool_calls": {"open": "<c>", "close_pattern": r"</c>|(?<=</x>)\s*(?=X)", "repeats": True},
            "content": {"close": "</s>"},
        },
    },
    {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|a|>",
        "fields": {
            "reasoning_content": {"open": "<r>", "close_pattern": r"(?<=\.)\s*(?=[A-Z])"},
            "content": {"close": "</s>"},
        },
    },
]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    ("index", "prefix", "chunks"),
    [
        (0, "<|a|><c>", ["<", ";", "X"]),
        (0, "<|a|>", ["q", " ", "<c>;<", "/", "<", "/", ";", " ", ";", "cc"]),
        (1, "<|a|>", ["<c>", "<", "/x>", "X"]),
        (2, "<|a|>", ["<r>Done", "<", ".", " Now"]),
    ],
)
def test_a_held_text_found_nowhere_beside_a_guarded_branch_is_left_to_the_pass(
    target: str, index: int, prefix: str, chunks: list[str]
) -> None:
    """The review's repros: after `;` (or `</x>`, `.`) the guarded branch is pending at the buffer's end,
    and `X` (`Now`) completes it, so the region closes there as in transformers."""
    assert_streams_agree(SINGLE_GUARDED[index], prefix, chunks, target=target)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, len(SINGLE_GUARDED) - 1),
    st.lists(
        st.sampled_from(["<", "/", ";", ".", " ", "X", "Now", "<c>", "</c>", "</x>", "/x>", "<r>", "a"]),
        max_size=12,
    ),
    st.integers(0, 2**16),
)
def test_single_guarded_states_stream_as_transformers(
    target: str, index: int, pieces: list[str], seed: int
) -> None:
    template = SINGLE_GUARDED[index]
    text = "".join(pieces)
    for chunks in [pieces, *chunkings(text, seed, random_splits=2)]:
        assert_same(
            respc_stream(template, "<|a|>", chunks, target=target),
            oracle_stream(template, "<|a|>", chunks, target=target),
            template,
            repr(chunks),
            target,
        )
