"""The compiler's regex analyses (`respc.compiler.analysis`), each checked for the soundness its user
relies on: property tests draw patterns from a small regex grammar and texts over the same alphabet, and
compare each answer with what the `regex` module (the oracle's engine) actually matches."""

from __future__ import annotations

import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from respc.compiler.analysis import (
    backtracking_risk,
    empty_together,
    first_chars,
    literal_prefix,
    may_match_empty,
    reads_back,
    reads_before,
    split_lead,
)
from respc.compiler.analysis.syntax import is_plain
from respc.runtime.scan import RUN_CLASSES, partial_at, scan_lead

ALPHABET = "ab<> \n/"
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _atoms() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from([regex.escape(c) for c in ALPHABET]),
        st.sampled_from([r"[ab]", r"[<>]", r"\s", r"\w", r"\d", r"[a-z]", r"[^a]", r".", r"\S"]),
        st.sampled_from(["^", "$", r"\b", r"\Z", r"(?=a)", r"(?!b)", r"(?<=a)"]),
        st.just(r"\K"),  # the `regex` module's reset of the match start (issue #32)
    )


def _patterns() -> st.SearchStrategy[str]:
    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=4).map("".join),
            st.tuples(inner, inner).map(lambda pair: f"(?:{pair[0]}|{pair[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "*?", "+?"])).map(
                lambda pair: f"(?:{pair[0]}){pair[1]}"
            ),
            inner.map(lambda p: f"(?P<g>{p})"),
            inner.map(lambda p: f"(?<g>{p})"),  # the `regex` module's spelling of a named group
            inner.map(lambda p: f"(?i:{p})"),
            st.tuples(inner, st.sampled_from(["{e<=1}", "{s<=1}", "{d<=2}"])).map(
                lambda pair: f"(?:{pair[0]}){pair[1]}"  # fuzzy matching
            ),
        )

    return st.recursive(_atoms(), extend, max_leaves=6)


TEXTS = st.text(alphabet=ALPHABET, max_size=12)


# A repeat of a group that fuzzy deletions can empty (`(?:(?:a){d<=2})+`) makes `regex` itself allocate
# until MemoryError (seconds and gigabytes per search): such patterns are left out.
_DELETED_THEN_REPEATED = regex.compile(r"\{d<=\d\}.*\)(?:[*+]|\{0,2\}|\{2\})")
# So does a repeat of zero-width assertions in a fuzzy pattern (`(?:^)*?(?:a){e<=1}a` on "<<a": 1.7 s,
# 0.5 GB, then MemoryError).
_ZERO_WIDTH_REPEATED = regex.compile(r"\((?:\?:)?(?:\^|\$|\\b|\\Z|\(\?<?[=!][ab]\))+\)(?:[*+]|\{0,2\}|\{2\})")
_FUZZY = regex.compile(r"\{[esd]<=\d\}")
# And a fuzzy group around a repeat of something that can match empty (`(?:(?:a|\K)*){d<=2}` on "<":
# MemoryError): fuzzy patterns that repeat a group are left out too (the analyses know nothing of fuzzy
# patterns anyway, which are not in the plain syntax).
_GROUP_REPEATED = regex.compile(r"\)(?:[*+?]|\{0,2\}|\{2\})")


def _compiles(pattern: str) -> regex.Pattern | None:
    if _DELETED_THEN_REPEATED.search(pattern):
        return None
    if _FUZZY.search(pattern) and (_ZERO_WIDTH_REPEATED.search(pattern) or _GROUP_REPEATED.search(pattern)):
        return None
    try:
        return regex.compile(pattern, regex.DOTALL)
    except regex.error:
        return None


@SETTINGS
@given(pattern=_patterns(), text=TEXTS, partial=st.booleans())
def test_every_match_starts_with_a_first_char(pattern: str, text: str, partial: bool) -> None:
    """The skip-scan fast path: a chunk with none of these characters cannot start a match, complete or
    partial."""
    compiled = _compiles(pattern)
    assume(compiled is not None)
    first = first_chars(pattern)
    if first is None:
        return
    starts = regex.compile("[" + "".join(sorted(first)) + "]")
    for pos in range(len(text) + 1):
        match = compiled.search(text, pos, partial=partial)
        if match is not None and match.start() < len(text):
            assert starts.match(text[match.start()]), (pattern, text, pos, match)
        if match is not None and match.start() == match.end() == len(text) and not match.partial:
            raise AssertionError(f"{pattern!r} matched empty, yet has first characters {first}")


def _plain_patterns() -> st.SearchStrategy[str]:
    """Patterns in the plain syntax only (the analyses know nothing of the rest), with every kind of
    look at the text around a position."""
    atoms = st.one_of(
        st.sampled_from([regex.escape(c) for c in ALPHABET] + [r"[ab]", r"[^a]", r"\s", r"\w", r"."]),
        st.sampled_from(["^", "$", r"\A", r"\Z", r"\b", r"\B", r"(?=a)", r"(?!b)", r"(?<=a)", r"(?<!b)"]),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=4).map("".join),
            st.tuples(inner, inner).map(lambda pair: f"(?:{pair[0]}|{pair[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "*?"])).map(
                lambda p: f"(?:{p[0]}){p[1]}"
            ),
            inner.map(lambda p: f"(?P<g>{p})"),
            inner.map(lambda p: f"(?=x{p})"),
        )

    return st.recursive(atoms, extend, max_leaves=6)


@settings(SETTINGS, max_examples=2_000)
@example(pattern="(?<=a)b", before="a", held="b")
@example(pattern="(?<!b)a", before="b", held="a")
@example(pattern=r"\Bb", before="a", held="b")
@example(pattern="^a", before="b", held="a")
@given(pattern=_plain_patterns(), before=st.text(alphabet=ALPHABET, min_size=1, max_size=4), held=TEXTS)
def test_a_pattern_that_reads_nothing_before_holds_text_whatever_precedes_it(
    pattern: str, before: str, held: str
) -> None:
    """The parser's memo of held texts (`partial_held`): for a pattern that `reads_before` clears, whether
    the text from a position is a partial match there does not depend on the text before it."""
    compiled = _compiles(pattern)
    assume(compiled is not None and held)  # (held text is never empty; `regex` finds a partial `.` in "")
    if reads_before(pattern):
        return
    alone = partial_at(compiled, held, 0)
    assert partial_at(compiled, before + held, len(before)) == alone, (pattern, before, held)


@settings(SETTINGS, max_examples=2_000)
@example(pattern="(?<=ab)c", far="b", near="xa", held="c")
@example(pattern="(?<=(?<=a)b)c", far="x", near="ab", held="c")
@example(pattern="^a", far="", near="b", held="a")
@example(pattern=r"\bb", far="", near="a", held="b")
@given(
    pattern=_plain_patterns(),
    far=st.text(alphabet=ALPHABET, max_size=3),
    near=st.text(alphabet=ALPHABET, max_size=4),
    held=TEXTS,
)
def test_a_pattern_holds_text_whatever_precedes_what_reads_back_bounds(
    pattern: str, far: str, near: str, held: str
) -> None:
    """The memo of held texts with a context (`partial_held`): for a pattern that `reads_back` bounds by
    `n`, whether the text from a position is a partial match there is the same after any text that ends
    with the same `n` characters (or, nearer the start, after the same text)."""
    compiled = _compiles(pattern)
    assume(compiled is not None and held)  # (held text is never empty)
    back = reads_back(pattern)
    if back is None:
        return
    near = near[len(near) - back :] if back else ""  # the context the key keeps
    if len(near) < back:
        far = ""  # nearer the start the key is the whole text
    kept = partial_at(compiled, near + held, len(near))
    assert partial_at(compiled, far + near + held, len(far + near)) == kept, (pattern, far, near, held)


def test_how_far_back_a_pattern_reads() -> None:
    assert reads_back(r"\s*<tool_call>") == 0
    assert reads_back(r"^\s*x|(?<=;)\s*y") == 2  # a start anchor, and one character behind
    assert reads_back(r"(?:\s*<m>|(?<=</invoke>))\s*<invoke") == 10
    assert reads_back(r"(?<=(?<=a)bc)d") == 4  # a lookbehind within one reads further back
    assert reads_back(r"(?<=a+)b") is None  # the `regex` module's unbounded lookbehind
    assert reads_back(r"(?<=" + "a" * 70 + ")b") is None
    assert reads_back(r"(?r)a") is None  # outside the syntax the analyses read


def test_what_reads_before_a_position() -> None:
    reads = [r"^a", r"\Aa", r"(?<=;)x", r"(?<!x)a", r"a\b", r"a\Bb", r"(?m)^a", r"(?:x|(?<=>))y", r"\Ga"]
    reads_not = [r"\s*<tool_call>", r"a$", r"a\Z", r"x(?=\s*\{)", r"(?!<)a", r"(?:<\|m\|>)?[^<]*<\|c\|>"]
    assert [p for p in reads if not reads_before(p)] == []
    assert [p for p in reads_not if reads_before(p)] == []


@SETTINGS
@given(pattern=_patterns(), text=TEXTS)
def test_a_pattern_that_matches_empty_is_never_called_non_empty(pattern: str, text: str) -> None:
    """Empty from where the search starts (`\\K` makes a match that consumed text look empty: that one moves
    the parser on, so it is not the empty match quirk Q5 loops on)."""
    compiled = _compiles(pattern)
    assume(compiled is not None)
    empty = any((m := compiled.search(text, pos)) and m.end() == pos for pos in range(len(text) + 1))
    if empty:
        assert may_match_empty(pattern), (pattern, text)


@SETTINGS
@given(first=_patterns(), second=_patterns(), text=TEXTS)
def test_empty_at_one_position_is_never_missed(first: str, second: str, text: str) -> None:
    """Quirk Q5: a field whose open and close both match empty at one position hangs transformers, so
    `empty_together` may err towards true, never towards false. (The very end of the text is left out:
    the oracle never commits a zero-width match there.)"""
    a, b = _compiles(first), _compiles(second)
    assume(a is not None and b is not None)
    for pos in range(len(text)):
        one, two = a.match(text, pos), b.match(text, pos)
        if one is not None and two is not None and one.end() == pos and two.end() == pos:
            assert empty_together(first, second), (first, second, text, pos)
            return


@SETTINGS
@given(pattern=_patterns(), text=TEXTS)
def test_every_match_starts_with_the_literal_prefix(pattern: str, text: str) -> None:
    compiled = _compiles(pattern)
    assume(compiled is not None)
    prefix = literal_prefix(pattern)
    for match in compiled.finditer(text):
        assert match.group().startswith(prefix), (pattern, text, prefix)


@SETTINGS
@given(
    run=st.sampled_from(sorted(RUN_CLASSES)),
    rest=_patterns(),
    text=TEXTS,
    eos=st.booleans(),
    pos=st.integers(0, 6),
)
def test_a_lead_split_scans_as_the_whole_pattern(run: str, rest: str, text: str, eos: bool, pos: int) -> None:
    """`\\s*X` searched as X with a walk back over the run gives the whole pattern's leftmost match (the
    walk stops at the scan position, as the search does)."""
    lead = {r"\s": r"\s*", r"\n": r"\n*", r"[ \t]": r"[ \t]*", " ": " *"}[run]
    pattern = lead + rest
    whole = _compiles(pattern)
    assume(whole is not None)
    split = split_lead(pattern)
    if split is None:
        return
    run_class, searched = split
    assert run_class == run and searched == rest
    pos = min(pos, len(text))
    found = scan_lead(text, pos, regex.compile(searched, regex.DOTALL), RUN_CLASSES[run][1], eos)
    match = whole.search(text, pos, partial=not eos)
    if match is None:
        assert found is None
        return
    assert found is not None and found[:2] == match.span(), (pattern, text, found, match)


@SETTINGS
@given(pattern=_patterns(), text=TEXTS)
def test_plain_syntax_reads_alike_in_both_engines(pattern: str, text: str) -> None:
    """The analyses read patterns with Python's parser, the oracle with the `regex` module: on what
    `is_plain` accepts, both find the same matches."""
    import re

    if not is_plain(pattern):
        return
    ours = _compiles(pattern)
    try:
        python = re.compile(pattern, re.DOTALL)
    except re.error:
        return
    if ours is None:
        return
    assert [m.span() for m in ours.finditer(text)] == [m.span() for m in python.finditer(text)], (
        pattern,
        text,
    )


def test_lead_splits_of_the_serving_fallbacks() -> None:
    assert split_lead(r"\s*<tool_call>") == (r"\s", "<tool_call>")
    assert split_lead(r"\s*(?:<\|im_end\|>|<\|endoftext\|>)") == (r"\s", r"(?:<\|im_end\|>|<\|endoftext\|>)")
    assert split_lead(r"\s*|x") is None  # a top-level alternation: the run belongs to one branch
    assert split_lead(r"\s*\s<x>") is None  # the rest can start with a run character
    assert split_lead(r"\s*\w") is None  # categories cannot be checked against the run


def test_first_chars_and_prefixes_of_known_patterns() -> None:
    assert first_chars(r"<tool_call>\s*<function=(?P<name>\w+)>") == {"<"}
    assert first_chars(r"(?:a|b)?c") == {"a", "b", "c"}
    assert first_chars(r"a*") is None  # can match empty: any position
    assert first_chars(r".x") is None and first_chars(r"\p{L}") is None  # outside the analysed syntax
    assert (
        literal_prefix(r"<\|channel\|>commentary to=functions\.(?P<name>\w+)")
        == "<|channel|>commentary to=functions."
    )
    assert literal_prefix(r"(?:a)b") == "ab"  # Python's parser flattens a group that captures nothing
    assert literal_prefix(r"(a)b") == ""
    assert not is_plain(r"[[:alpha:]]") and not is_plain(r"(?i)a") and is_plain(r"\{a\}")


def test_empty_matches_of_known_patterns() -> None:
    assert may_match_empty(r"(?:^|<think>\s*)") and not may_match_empty(r"</think>")
    assert may_match_empty(r"\p{L}*") and not may_match_empty(r"\p{L}")  # read without Python's parser
    # fuzzy matching: errors can delete a match to nothing only where it is short enough
    assert not may_match_empty(r"(?:<a){e<=1}") and may_match_empty(r"(?:<a){e<=2}")
    assert may_match_empty(r"(?:<a){e<=1}|$")  # and an anchor beside it keeps the answer conservative
    # a match that depends on its own history can be empty in "qb" and not in "" (found by review)
    assert may_match_empty(r"(?>(?>(q)|)(?(1)c|)()|)(?(2)z|)")
    assert empty_together(r"(?:^|x)", r"$")  # both empty at the start of an empty line: refused
    assert not empty_together(r"(?=z)", r"$")  # never at one position: accepted
    assert not empty_together(r"\Z", r"\Z")  # only at the very end, where nothing is committed
    assert not empty_together(r"a", r"$")
    # `(?<n>...)` is a named group (not a lookbehind): read as Python's `(?P<n>...)` (issue #32, class 8)
    assert is_plain(r"(?<n>)(b)") and not may_match_empty(r"(?<n>)(b)")
    assert not empty_together(r"()", r"(?<n>)(b)") and empty_together(r"(?<o>a?)", r"(?<c>)")


def test_backtracking_shapes() -> None:
    assert backtracking_risk(r"(a+)+$") == "a repeated group contains another unbounded repeat"
    assert (
        backtracking_risk(r"(?:a|aa)+")
        == "a repeated group can split the same text into iterations in many ways"
    )
    assert backtracking_risk(r"(\d\w?)+") is not None  # a capturing group too (once missed)
    assert backtracking_risk(r"(?:\d\w?)+") is not None
    assert backtracking_risk(r"(?>a+)+") is None  # an atomic group does not backtrack into itself
    for safe in (r"<tool_call>\s*<function=(?P<name>\w+)>", r"(?:ab)+", r"a{2,5}b", r"[^<]*<"):
        assert backtracking_risk(safe) is None, safe
