"""The memo of held texts (`respc.runtime.scan.partial_held`): a regex delimiter whose search reads a
bounded text before where it starts (`Delimiter.memo`, `reads_back`) remembers which held texts, with that
much context, are its partial match, so a server that parses one model's output searches each recurring
opener prefix once, not once per feed."""

from __future__ import annotations

import json
import re

import pytest
from support.compare import FIXTURES, assert_same, chunkings, oracle_stream, spy
from support.oracles import stream_trace

import respc
from respc.runtime import scan


def _ours(module: object, prefix: str, chunks: list[str]) -> list:
    return stream_trace(lambda: module.ResponseParser(prefix), chunks)


def _words(text: str) -> list[str]:
    """Chunks as a BPE tokenizer cuts text: a word with the space before it, a run of spaces or of
    punctuation (so a whole opener stem such as ` functools` comes as one chunk)."""
    return re.findall(r" ?\w+|\s+|[^\w\s]+", text)


def test_a_second_stream_takes_no_partial_search_for_the_held_texts_of_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = respc.load_preset("step3")
    opener = module.TOOL_CALLS_OPEN_WHOLE
    assert opener.partials is not None
    text = (
        '<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f">'
        '<steptml:parameter name="x">1</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>'
    )
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    searched: list[str] = []
    partial_at = scan.partial_at
    monkeypatch.setattr(
        scan, "partial_at", lambda p, b, pos: searched.append(b[pos:]) or partial_at(p, b, pos)
    )
    for pattern in module.ResponseParser.PATTERNS:
        if pattern.partials is not None:
            pattern.partials.clear()
    first = _ours(module, "", chunks)
    assert searched  # the opener's held prefixes were searched once...
    remembered = set().union(*(p.partials for p in module.ResponseParser.PATTERNS if p.partials is not None))
    assert set(searched) <= remembered
    searched.clear()
    assert _ours(module, "", chunks) == first
    assert searched == []  # ...and remembered
    assert_same(first, oracle_stream(module.TEMPLATE, "", chunks), module.TEMPLATE, repr(chunks))


def test_the_memo_keeps_short_texts_and_starts_afresh_when_full() -> None:
    pattern = scan.LazyRegex(r"<a>[^<]*</a>", memo=True)
    for i in range(scan._MEMO_SIZE):
        assert scan.partial_held(pattern, f"<a>{i}", 0, f"<a>{i}")
    assert len(pattern.partials) == scan._MEMO_SIZE
    assert scan.partial_held(pattern, "x<a>", 1, "<a>")
    assert pattern.partials == {"<a>": True}
    long = "<a>" + "x" * scan._MEMO_TEXT
    assert scan.partial_held(pattern, long, 0, long) and long not in pattern.partials
    assert not scan.partial_held(pattern, "<b>", 0, "<b>") and pattern.partials["<b>"] is False


def test_patterns_that_read_before_their_start_keep_their_context_in_the_key() -> None:
    assert respc.load_preset("minimax_m2").TOOL_CALLS_OPEN_RE.context == 10  # (?<=</invoke>)
    assert respc.load_preset("llama3_json").TOOL_CALLS_OPEN_RE.context == 2  # ^...|(?<=;)...
    pattern = scan.LazyRegex(r"(?:\s*<m>|(?<=</invoke>))\s*<invoke", memo=True, context=10)
    assert scan.partial_held(pattern, "x</invoke>\n<inv", 10, "\n<inv")
    assert not scan.partial_held(pattern, "x</other>\n\n<inv", 10, "\n<inv")  # same held text, no guard
    assert scan.partial_held(pattern, "yyx</invoke>\n<inv", 12, "\n<inv")  # the first's key: ten before
    assert len(pattern.partials) == 2
    anchored = scan.LazyRegex(r"^\s*<a>", memo=True, context=1)
    assert scan.partial_held(anchored, " <", 0, " <")  # at the start, where `^` holds...
    assert not scan.partial_held(anchored, "x <", 1, " <")  # ...and past it, with the same held text
    assert scan.partial_held(anchored, " <", 0, " <")


def test_a_pattern_that_reads_back_without_bound_keeps_no_memo() -> None:

    template = {"start_anchor": "S", "fields": {"content": {"open_pattern": "(?<=a+)b", "close": "c"}}}
    module = respc.compile_template(template)
    assert module.CONTENT_OPEN_RE.partials is None


@pytest.mark.parametrize(
    ("name", "text", "chunk"),
    [
        # A whole stem, held by the lookahead after it: a tool call, then prose.
        ("phi4_mini", 'Sure. functools[{"name": "f", "arguments": {}}]', " functools"),
        ("phi4_mini", "Use functools.lru_cache.", " functools"),
        # A state without stems: its closer `<\\|eot_id\\|>` starts after the arguments' end.
        ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>', '"}}<|'),
    ],
)
def test_a_remembered_partial_match_is_held_without_a_pass(name: str, text: str, chunk: str) -> None:
    """`_known_hold`: once the memo knows a text is a regex delimiter's partial match, a chunk ending in it
    is held as a stem's proper prefix is (`_hold_stem`), without the pass's search of every delimiter."""
    module = respc.load_preset(name)
    chunks = _words(text)
    first = _ours(module, "", chunks)  # (fills the memo)
    assert_same(first, oracle_stream(module.TEMPLATE, "", chunks), module.TEMPLATE, repr(chunks))
    parser = module.ResponseParser("")
    for earlier in chunks[: chunks.index(chunk)]:
        parser.feed(earlier)
    assert parser.feed_mode == "lead"
    calls = spy(parser, "_process")
    parser.feed(chunk)
    assert (parser.feed_mode, calls) == ("held", [])
    assert _ours(module, "", chunks) == first


@pytest.mark.parametrize(
    "name",
    [
        "step3",
        "kimi_k2",
        "deepseek_v3",
        "inkling",
        "qwen3_5",
        "minimax_m2",
        "llama3_json",
        "llama4",
        "phi4_mini",
    ],
)
def test_streams_agree_with_transformers_with_a_warm_memo(name: str) -> None:
    module = respc.load_preset(name)
    cases = json.loads((FIXTURES / "presets" / f"{name}.json").read_text(encoding="utf-8"))
    for round_ in range(2):  # cold, then warm
        for index, case in enumerate(cases):
            splits = [*chunkings(case["text"], seed=index + round_, random_splits=2), _words(case["text"])]
            for chunks in splits:
                ours = _ours(module, case.get("prefix") or "", chunks)
                theirs = oracle_stream(module.TEMPLATE, case.get("prefix") or "", chunks)
                assert_same(ours, theirs, module.TEMPLATE, f"{name}[{index}] round {round_}")
