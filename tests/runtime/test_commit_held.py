"""A held partial match that completes (`CompiledParser._commit_held`): the next pass's first commit is
found by one partial search of the held delimiter and an anchored match of each other watched delimiter
at its start, not by the state's scan; and a held text that another watched delimiter's partial match
holds stays held, without a pass. Each commit it finds is checked against the scan's own, on every
preset's samples under many chunkings, and every stream against transformers'."""

from __future__ import annotations

import json
from typing import Any

import pytest
import regex
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from support.compare import (
    FIXTURES,
    SUPPORTED_TARGETS,
    assert_same,
    assert_streams_agree,
    chunkings,
    oracle_stream,
    respc_stream,
)
from support.oracles import stream_trace

import respc
from respc.compiler.plan import plan_parser
from respc.runtime.parser import CompiledParser
from respc.runtime.scan import starts_at, stems_rule_out
from respc.spec import load_template

PRESETS = sorted(path.stem for path in (FIXTURES / "presets").glob("*.json"))


def _commits_checked(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Record each commit `_commit_held` finds, after checking it is the one the state's scan finds (an
    empty one, which it leaves to the pass when asked to say so, too)."""
    found: list[tuple] = []
    take = CompiledParser._commit_held

    def checked(self: CompiledParser, pattern: Any, buf: str, empty: Any = None, nowhere: Any = None) -> Any:
        commit = take(self, pattern, buf, empty, nowhere)
        if commit is not None and commit is nowhere:
            # (Its search finds nothing before the buffer's end: where the others' starters say none of
            # them starts in the text either, the scan commits nothing and holds at most a trailing run.)
            if self._others_start_nothing(buf[self._pos :], getattr(pattern, "whole", pattern)):
                scanned, hold = self._scan(buf, self._pos)
                assert scanned is None, (buf, self._pos, scanned)
                assert all(char in (self._run or ()) for char in buf[hold:]), (buf, self._pos, hold)
                found.append(("nowhere", self._current))
        elif commit is not None and commit is empty:
            # (An empty match at the scan position, which the pass commits: the scan's first commit.)
            scanned, _ = self._scan(buf, self._pos)
            assert scanned is not None and scanned[0] == scanned[1] == self._pos, (buf, self._pos, scanned)
            found.append(("empty", self._pos))
        elif commit is not None:
            scanned, _ = self._scan(buf, self._pos)
            assert scanned is not None, (buf, self._pos)
            assert commit[:4] == scanned[:4], (buf, self._pos, commit, scanned)
            if commit[4] is not None and scanned[4] is not None:
                assert commit[4].groupdict() == scanned[4].groupdict()
            found.append(commit[:4])
        return commit

    monkeypatch.setattr(CompiledParser, "_commit_held", checked)
    return found


@pytest.mark.parametrize("name", PRESETS)
def test_a_held_commit_is_the_scans_and_streams_agree_with_transformers(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _commits_checked(monkeypatch)
    module = respc.load_preset(name)
    cases = json.loads((FIXTURES / "presets" / f"{name}.json").read_text(encoding="utf-8"))
    for index, case in enumerate(cases):
        prefix = case.get("prefix") or ""
        for chunks in chunkings(case["text"], seed=index, random_splits=2):
            ours = stream_trace(lambda prefix=prefix: module.ResponseParser(prefix), chunks)
            theirs = oracle_stream(module.TEMPLATE, prefix, chunks)
            assert_same(ours, theirs, module.TEMPLATE, f"{name}[{index}] {chunks!r}")
    if name in ("inkling", "step3", "gemma4", "qwen3_5", "minimax_m2"):
        assert found  # (the path is taken where openers are regexes)
    if name in ("llama3_json", "gemma3_pythonic"):
        assert ("empty", 0) in found  # (a call at the reply's start: `^\s*(?=\{...)`, `^(?=\[...)`)
    if name == "llama3_json":
        assert ("nowhere", "tool_calls") in found  # (`a; b` in a call's arguments)
    if name == "phi4_mini":
        assert ("nowhere", "content") in found  # (` functools.lr` in prose)


# Two regex opens that share a start (and declare no stems, so the held text is held by a pattern): held
# by `\Wa>`, `<a>b` completes it where `\Wa>b+c` is still a partial match, so the pass holds, and
# commits nothing.
SHARED = {
    "start_anchor": "S",
    "fields": {
        "one": {"open_pattern": r"\Wa>", "close": "</a>"},
        "two": {"open_pattern": r"\Wa>b+c", "close": "</b>"},
        "content": {"close": "<|end|>"},
    },
}


@pytest.mark.parametrize(
    "text", ["x <a>bbc y</b>", "x <a>y</a>", "x <a>bby</a>", "x <a>", "x <a>b", "p <a>q</a> <a>bc</b><|end|>"]
)
def test_a_complete_match_beside_another_delimiters_partial_match_is_not_committed_early(text: str) -> None:
    assert_same(
        respc_stream(SHARED, "", ["x", " <a", ">", "b", "bc y"]),
        oracle_stream(SHARED, "", ["x", " <a", ">", "b", "bc y"]),
        SHARED,
        "held by the shorter opener",
    )
    for chunks in chunkings(text, seed=len(text), random_splits=4):
        assert_same(respc_stream(SHARED, "", chunks), oracle_stream(SHARED, "", chunks), SHARED, repr(chunks))


def test_a_held_text_another_opener_holds_takes_no_pass() -> None:
    """Inkling's three openers share `<|content_`: held as one's partial match, `<|content_th` is no
    longer that one's, but is still the thinking opener's, so the pass would hold it all: no pass."""
    module = respc.load_preset("inkling")
    chunks = ["<|co", "nten", "t_th", "inki", "ng|>", "hmm"]
    parser = module.ResponseParser("")
    passes: list[int] = []
    process, take = parser._process, parser._take  # (a pass, or the commit `_commit_held` found)
    parser._process = lambda *args: passes.append(len(passes)) or process(*args)  # type: ignore
    parser._take = lambda *args: passes.append(len(passes)) or take(*args)  # type: ignore
    modes = []
    for chunk in chunks:
        modes.append(parser.feed_mode)
        parser.feed(chunk)
        if len(modes) == 1:
            passes.clear()  # (the first feed's pass, if its class has no memo of `<|co` yet)
    assert modes[1:5] == ["held"] * 4
    assert len(passes) == 1  # the commit of the thinking opener
    assert_same(
        respc_stream(module.TEMPLATE, "", chunks),
        oracle_stream(module.TEMPLATE, "", chunks),
        module.TEMPLATE,
        repr(chunks),
    )


_ATOMS = st.sampled_from(["a", "b", "<", ">", r"\s", "[ab]", "x", "(?=a)", "(?<=b)", "^", "$"])
_PATTERNS = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "*?"])).map(lambda p: f"(?:{p[0]}){p[1]}"),
    ),
    max_leaves=6,
)


@settings(max_examples=1_500, deadline=None)
@example(pattern="a.*z|b", text="a b", pos=0)
@example(pattern="ab|a", text="a", pos=0)
@example(pattern="(?:x)*?(?<=b)", text="x", pos=0)  # (the `regex` module's partial match finds nothing here)
@example(pattern="(?:b)*?^", text="<<<<b", pos=4)
@given(pattern=_PATTERNS, text=st.text(alphabet="ab<> x", max_size=8), pos=st.integers(0, 8))
def test_a_partial_search_finds_nothing_at_a_position_where_starts_at_says_none_starts(
    pattern: str, text: str, pos: int
) -> None:
    """`_commit_held`'s and `_commit_literal`'s premise for the other watched delimiters: where `starts_at`
    says no complete or partial match starts at a position, the oracle's partial search from there finds
    nothing that starts there. (It may say one starts where the search finds none: the search prefers a
    complete match further on, `a.*z|b`; the pass then decides. The `regex` module's partial match, which
    it asks, finds nothing where a lazy repeat meets an anchor or a lookbehind at the text's end while the
    search holds the text, `(?:x)*?(?<=b)`: such a pattern is searched.) Asked only before the buffer's
    end (the held text is never empty): at the very end `regex` answers `$^`'s partial search with an
    empty partial match there, and its partial match with nothing."""
    assume(pos < len(text))
    try:
        compiled = regex.compile(pattern, regex.DOTALL)
    except regex.error:
        assume(False)
        return
    found = compiled.search(text, pos, partial=True)
    if found is not None and found.start() == pos:
        assert starts_at(compiled, text, pos), (pattern, text, pos)


# A delimiter whose partial search holds text at a position where the `regex` module's partial match finds
# nothing (a lazy repeat before a lookbehind), beside literals that complete there: the oracle holds, so
# the literal commits only once the stream ends.
LAZY = {
    "start_anchor": "S",
    "fields": {
        "tool_calls": {"open_pattern": "(?:x)*?(?<=b)", "close": "</t>"},
        "content": {"close": ["xx", "<e>"]},
        "reasoning_content": {"open": "<r>", "close_pattern": "</r>"},
    },
}


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(
    "chunks",
    [["hi", "x", "x"], ["hi x", "x"], ["hix", "x", "y"], ["hi", "xx"], ["b", "x", "x"], ["hi <", "e>"]],
)
def test_a_lazy_repeat_that_holds_where_no_partial_match_starts_keeps_the_commit_back(
    chunks: list[str], target: str
) -> None:
    assert_same(
        respc_stream(LAZY, "S", chunks, target=target),
        oracle_stream(LAZY, "S", chunks, target=target),
        LAZY,
        repr(chunks),
        target,
    )


def _declared_stems() -> list[tuple[Any, str | None]]:
    """Every regex delimiter a shipped preset declares stems for (the ones `stems_rule_out` reads), with
    the guard characters of its state (its stems leave guarded branches out: `State.guard`)."""
    found: dict[str, tuple[Any, str | None]] = {}
    for name in PRESETS:
        for state in respc.load_preset(name).ResponseParser.STATES.values():
            for delimiter, *_ in state.watch:
                if type(delimiter) is not tuple and delimiter.stems:
                    found.setdefault(delimiter.pattern, (delimiter, state.guard))
    return list(found.values())


STEMMED = _declared_stems()


@settings(max_examples=600, deadline=None)
@given(data=st.data(), index=st.integers(0, len(STEMMED) - 1))
def test_stems_rule_out_only_where_nothing_starts(data: st.DataObject, index: int) -> None:
    """`stems_rule_out`'s claim, on every shipped delimiter that declares stems: where it rules a position
    out, no match or partial match of the pattern starts there (texts drawn from pieces of its stems), where
    no guarded branch can match, as the parser asks it (`_unguarded`: past the start, no guard character
    from just before the position on; MiniMax-M2's opener declares its unguarded branch's stems)."""
    pattern, guard = STEMMED[index]
    pieces = [*pattern.stems, *(stem[:cut] for stem in pattern.stems for cut in (1, 2, len(stem) - 1))]
    text = "".join(data.draw(st.lists(st.sampled_from([*pieces, " ", "\n", "x", "<", "|"]), max_size=6)))
    pos = data.draw(st.integers(0, max(len(text) - 1, 0)))
    assume(pos < len(text))
    assume(guard is None or (pos > 0 and not any(char in text[pos - 1 :] for char in guard)))
    if stems_rule_out(pattern, text, pos):
        assert not starts_at(pattern, text, pos), (pattern.pattern, text, pos)


def test_stems_rule_out_is_asked_of_the_presets() -> None:
    assert len(STEMMED) >= 10  # (the property above has something to check)
    assert any(guard is not None for _, guard in STEMMED)
    qwen = respc.load_preset("qwen3").ResponseParser
    close = next(
        d for d, *_ in qwen.STATES["content"].watch if type(d) is not tuple and "im_end" in d.pattern
    )
    assert stems_rule_out(close, "x<think>", 1)
    assert not stems_rule_out(close, "x \n<|im_e", 1)  # a run, then a stem's prefix: maybe a partial match
    assert not stems_rule_out(close, "x  ", 1)  # a run to the end


# A branch that holds another's text (`<a>` holds `a`): its stems (`a`) are not texts every match starts
# with, so the pattern declares none, and `stems_rule_out` cannot rule `<a>` out beside `\s*<`'s match (an
# independent review found `<` committed where transformers commits `<a>`).
HOLDING = {
    "fields": {"t": {"open_pattern": "<a>|a", "close": "</t>"}, "c": {"close_pattern": r"\s*<"}},
    "start_anchor": "S",
}


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
@pytest.mark.parametrize(("prefix", "chunks"), [("S<a>", ["b"]), ("", ["<", "a>b"]), ("", ["x", "<a>", "b"])])
def test_a_branch_holding_anothers_text_is_not_ruled_out_by_the_others_stem(
    prefix: str, chunks: list[str], target: str
) -> None:
    assert_streams_agree(HOLDING, prefix, chunks, target=target)


@pytest.mark.parametrize(
    ("pattern", "declared"),
    [
        ("<a>|a", ()),
        ("ab|<ab>", ()),
        ("</a>|a", ()),
        ("<x>|y", ("<x>", "y")),
        (r"\s*<tool_call>", ("<tool_call>",)),
    ],
)
def test_a_pattern_declares_stems_only_where_every_match_starts_with_one(
    pattern: str, declared: tuple
) -> None:
    template = {
        "fields": {"t": {"open_pattern": pattern, "close": "</t>"}, "c": {"close": "<e>"}},
        "start_anchor": "S",
    }
    plan = plan_parser(load_template(template, "5.24"), "t")
    (opener,) = [d for d in plan.delimiters if d.kind == "open"]
    assert set(opener.declared_stems) == set(declared)
