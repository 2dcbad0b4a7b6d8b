"""Held partial matches of patterns with a tail (`respc.compiler.analysis.run_tail`: a head, a run of
characters other than some stops, a literal that starts with a stop; `head.*?literal` too): once the head
has matched, `respc.runtime.scan.AfterHead.holds` keeps the held text without a partial search. Its
claim is checked against the `regex` module's partial search on random patterns and texts, and templates
with such openers stream as transformers does."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import assert_same, chunkings, oracle_stream, respc_stream

from respc.compiler.analysis import run_tail
from respc.runtime.scan import LazyRegex, held_pattern


@pytest.mark.parametrize(
    ("pattern", "tail"),
    [
        (r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>", (r"\s*<tool_call>\s*<function=", ">", "\n>", 1)),
        (r'<invoke name="(?P<name>[^"]+)">', ('<invoke name="', '">', '"', 1)),
        (r"f<sep>(?P<name>[^\n]+)\n```json\n", ("f<sep>", "\n```json\n", "\n", 1)),
        (r"a[^>\n]*?>x", ("a", ">x", "\n>", 0)),  # lazy, and no group
        (r"a[^b]{2,}bc", ("a", "bc", "b", 2)),
        (r"a.*?<m>", ("a", "<m>", "", 0)),  # `lazy_tail`'s patterns
        (r"a[^b]+cb", None),  # the literal does not start with a stop: the run could take it
        (r"a[^\s<]+x", None),  # a category among the stops
        (r"a[^b]{1,3}b", None),  # a bounded run
        (r"(?<=x)a[^b]+b", None),  # a head that looks around
        (r"a\b[^b]+b", None),
        (r"(?i)a[^b]+b", None),  # inline flags: outside the shared syntax
        (r"[^b]+b", None),  # no head
        (r"a[^b]+", None),  # no literal
    ],
)
def test_run_tail(pattern: str, tail: tuple | None) -> None:
    assert run_tail(pattern) == tail


def _partial_at_start(pattern: regex.Pattern, text: str) -> bool:
    """What the oracle's pass holds: the partial search from 0 starts at 0 and may still grow."""
    match = pattern.search(text, 0, None, None, True)
    return match is not None and match.start() == 0 and (match.partial or match.end() == len(text))


HEADS = [r"<h>", r"\s*<h=", r"(?:<a>)?<h>", r"(?:<a>|<ab>)x", r"f<s>(?P<n>\w+)"]
TAILS = [(r"[^>]+", ">"), (r"[^\n]+", "\n```j\n"), (r'[^"]*?', '">'), (r"[^>x]{2,}", ">y"), (r".*?", "<m>")]


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(
    st.sampled_from(HEADS),
    st.sampled_from(TAILS),
    st.lists(
        st.sampled_from(
            ["<h>", "<h=", "<a>", "x", "f<s>", "ab", ">", ">y", "\n", "```j", '"', "<m", ">", " ", "y"]
        ),
        max_size=8,
    ),
)
def test_holds_only_what_the_partial_search_holds(
    head: str, tail: tuple[str, str], pieces: list[str]
) -> None:
    source = head + "(?P<tail>" + tail[0] + ")" + regex.escape(tail[1])
    shape = run_tail(source)
    assert shape is not None, source
    pattern = LazyRegex(source, tail=shape)
    compiled = regex.compile(source, regex.DOTALL)
    text = "".join(pieces)
    for cut in range(len(text) + 1):
        held = text[:cut]
        if not _partial_at_start(compiled, held):
            continue
        after = held_pattern(pattern, held, 0)
        if after is pattern:
            continue  # the head has not matched yet: the search decides
        for more in range(cut, len(text) + 1):
            grown = text[:more]
            if after.holds(grown):
                assert _partial_at_start(compiled, grown), (source, held, grown)


TEMPLATE = {
    "start_anchor": "S",
    "fields": {
        "call": {
            "open_pattern": r"\s*<call>\s*<f=(?P<name>[^>\n]+)>",
            "close": "</call>",
            "repeats": True,
            "transform": {"name": "{name}", "body": "{content}"},
        },
        "json": {
            "open_pattern": r"<s>(?P<name>[^\n]+)\n```json\n",
            "close": "\n```<e>",
            "content": "json",
            "transform": {"name": "{name}", "arguments": "{content}"},
        },
        "content": {"close_pattern": r"\s*<\|end\|>"},
    },
}


@pytest.mark.parametrize(
    "text",
    [
        "Hi.\n<call>\n<f=get weather>a\n</call> ok\n<|end|>",
        '<s>lookup name\n```json\n{"a": 1}\n```<e>tail<|end|>',
        "<call><f=bad\nname>x</call><s>n\n```jsox\n<s>m\n``",  # a stop that does not start the literal
        "<s>a<s>b\n```json\n[]\n```<e><call><f=>></call>",  # a head again, an empty run
    ],
)
def test_templates_with_tails_stream_as_transformers(text: str, target: str) -> None:
    for chunks in chunkings(text, seed=3, random_splits=6):
        ours = respc_stream(TEMPLATE, "", chunks, target=target)
        assert_same(ours, oracle_stream(TEMPLATE, "", chunks, target=target), TEMPLATE, repr(chunks), target)
