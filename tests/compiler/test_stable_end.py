"""`stable_end` (issue #17): patterns whose matches read nothing past their end need no 5.24 recheck.

The claim is checked against the `regex` module itself: for random patterns the analysis accepts, every
match ending before the text's end (found as the oracle finds it, by a partial search and a plain one)
survives extension (`respc.runtime.scan.survives_extension`, transformers 5.24's test). A pattern it
refuses must include some that fail, or the analysis is only cautious; the known failures are refused.
"""

from __future__ import annotations

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from respc.compiler.analysis import stable_end
from respc.compiler.plan import plan_parser
from respc.runtime.scan import survives_extension
from respc.spec import load_template


@pytest.mark.parametrize(
    ("pattern", "stable"),
    [
        (r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>", True),  # Qwen3.5's tool call opening
        (r"</function>\s*</tool_call>", True),
        (r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", True),  # Python's parser factors out the `<|`
        (r"<\|tool_call_end\|>\s*", True),  # a run that ends the pattern stops inside the text
        (r"a{3}b", True),
        (r"(?:ab|cd)", True),
        (r"$", False),  # quirk Q18: `$` before a trailing newline
        (r"<r>(?=\n)", False),
        (r"<r>\w+\b", False),
        (r"(?:ab|abc)d", False),  # one alternative a prefix of another
        (r"a[^b]*c", False),  # the run may take the `c`
        (r"a{1,3}a", False),
        (r"x.*y", False),  # true, but beyond the subset
        (r"(?i)abc", False),
        (r"\p{L}+:", False),
        (r".", False),  # `regex` answers a match of (end, end - 1) for it at the end of the text
        (r"(\S)", False),
        (r"[\s\S]+?", False),
        (r".b", False),  # likewise (4, 3) for `<<b<` from 4
        (r"[^<]b", True),
        (r"(?:.|a)b", False),
        (r"(a?).b", False),  # the group may be empty: `.` may take the first character
        (r"(?:x|a?).b", False),
        (r"(a)[^<]b", True),
        (r"(?P<x>[\s\S])+?b", False),
        # Optional groups that start with a literal no text what follows starts with is comparable to
        # (step3's and DeepSeek's tool call openings):
        (r"\s*(?:<｜tool_calls_begin｜>\s*)?(?:<｜tool_sep｜>\s*)?<｜tool_call_begin｜>\s*<x>", True),
        (r"(?:ab)?ac", True),
        (r"(?:a[^<]*)?<", True),
        (r"(?:ab)?abc", False),  # what follows may start as the group does
        (r"(?:ab)?a", False),  # `a` is a prefix of `ab`
        (r"(?:ab)?", False),  # nothing follows: the group may fail past the match
        (r"(?:ab)?\s*c", False),  # what follows starts with a run, not a literal
        (r"(?:[ab]c)?d", False),  # the group starts with a class
        (r"(?i:ab)?c", False),
        # A run before a negated class that excludes it (GLM's tool call opening):
        (r"\s*<tool_call>\s*(?P<name>[^\s<]+)", True),
        (r"ab*[^b]", True),
        (r"a[ab]*[^ab]", True),
        (r"a[ab]*[^a]", False),  # the run may take what the class would
        (r"a\s*[^<]+", False),
        (r"a\s*(?:[^\s<])?x", False),  # the class may be skipped
    ],
)
def test_stable_end(pattern: str, stable: bool) -> None:
    assert stable_end(pattern) is stable


PIECES = [
    "a",
    "b",
    "<",
    ">",
    r"\n",
    " ",
    r"\s",
    r"\S",
    r"\w",
    ".",
    "[^>\\n]",
    "[ab]",
    "[^a]",
    "(?:ab|b<)",
    "(?:a|ab)",
    "$",
    r"\b",
    "(?=a)",
    "(?P<g>a)",
    "(?P<h>[^<]+)",
    "(.)",
    "(?:.|a)",
    "[\\s\\S]",
]
QUANTIFIERS = ["", "", "", "*", "+", "?", "*?", "+?", "{2}", "{1,2}"]
TEXT = st.text(alphabet="ab<> \nx\x00", max_size=12)


@st.composite
def patterns(draw: st.DrawFn) -> str:
    items = draw(
        st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(QUANTIFIERS)), min_size=1, max_size=5)
    )
    out, groups = [], 0
    for piece, quantifier in items:
        if piece.startswith("(?P<"):  # each group name once
            groups += 1
            piece = piece.replace("(?P<g>", f"(?P<g{groups}>").replace("(?P<h>", f"(?P<h{groups}>")
        if piece in ("$", r"\b", "(?=a)"):
            quantifier = ""
        out.append(piece + quantifier)
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(patterns(), st.lists(TEXT, min_size=1, max_size=6))
def test_accepted_patterns_survive_extension(pattern: str, texts: list[str]) -> None:
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except regex.error:
        return
    if not stable_end(pattern):
        return
    for text in texts:
        for start in range(len(text) + 1):
            for match in (compiled.search(text, start), compiled.search(text, start, None, None, True)):
                if match is None or match.partial or match.end() >= len(text):
                    continue
                assert survives_extension(compiled, text, match.start(), match.end(), match), (
                    pattern,
                    text,
                    match,
                )


OPTIONAL = [
    "(?:ab)?",
    "(?:ab)??",
    "(?:a\\s*)?",
    "(?:<a)?",
    "(?:<b>)?",
    "(?:a[^<]*)?",
    "(?P<o>ab)?",
    "a",
    "b",
    "<",
    "ab",
    "<a",
    "\\s*",
    "[^<]+",
    "[^<]",
    "[^\\s<]+",
    "[^b]",
    "b*",
    "(?P<n>[^<>]+)",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(OPTIONAL), min_size=1, max_size=5), st.lists(TEXT, min_size=1, max_size=6))
@example(["(?:ab)?", "[^<]"], ["ab"])  # the group fails at the text's end: a class may then take more
@example(["(?:ab)?", "a"], ["abab", "ab", "aba"])
def test_accepted_optional_groups_survive_extension(pieces: list[str], texts: list[str]) -> None:
    """As above, for sequences of optional groups and what may follow them."""
    names = iter(range(len(pieces)))
    pattern = "".join(piece.replace("(?P<o>", f"(?P<o{next(names)}>") for piece in pieces)
    pattern = pattern.replace("(?P<n>", "(?P<n_>", 1).replace("(?P<n>", "(?:")
    test_accepted_patterns_survive_extension.hypothesis.inner_test(pattern, texts)


def test_the_recheck_can_fail() -> None:
    """The pieces above include ones that fail the recheck (so the test above fails for an analysis that
    accepts them): `$` before a trailing newline, and a lookahead at the end of the text."""
    for pattern, text in ((r"a$", "a\n"), (r"a(?=\n?(?!.))", "a\n"), (r"a\b", "a\n")):
        compiled = regex.compile(pattern, regex.DOTALL)
        match = compiled.search(text)
        if pattern == r"a\b":  # a boundary reads the next character, which is in the text: it survives
            assert survives_extension(compiled, text, 0, 1, match)
        else:
            assert not survives_extension(compiled, text, 0, 1, match), pattern
        assert stable_end(pattern) is False, pattern


def test_qwen_commits_without_the_recheck() -> None:
    """The 5.24 target leaves the recheck out where the pattern is stable, and keeps it elsewhere."""
    template = {
        "start_anchor": "S",
        "fields": {
            "tool_calls": {
                "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
                "close_pattern": r"</function>\s*</tool_call>",
                "transform": {"name": "{name}", "arguments": "{content}"},
            },
            "reasoning_content": {"open": "<think>", "close_pattern": r"</think>$"},
            "content": {},
        },
    }
    plan = plan_parser(load_template(template), "5.24")
    recheck = {d.const: d.recheck for s in plan.states for d in s.watches}
    assert recheck == {
        "TOOL_CALLS_OPEN_RE": False,
        "TOOL_CALLS_CLOSE_RE": False,
        "REASONING_CONTENT_OPEN": False,
        "REASONING_CONTENT_CLOSE_RE": True,
    }
