"""Bad input at run time: what a serving loop may hand a parser, checked against the oracle where it can be.

Non-str chunks and prefixes, feeding after finalize and lone surrogates or NUL in text and delimiters
must give the oracle's results and exception types. Sizes the oracle cannot take in reasonable time
(a 100 MB chunk, a million one-character chunks) are run on respc alone: the result must equal a
one-shot parse, and memory must stay a small multiple of the input.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.compare import (
    FIXTURES,
    SUPPORTED_TARGETS,
    TEMPLATES,
    _same_trace,
    assert_same,
    oracle_parse,
    oracle_stream,
    respc_parse,
    respc_stream,
)
from support.oracles import stream_trace

import respc

SMOLLM = TEMPLATES["smollm"]
QWEN2 = TEMPLATES["serving_qwen2"]  # regex delimiters (`\s*<tool_call>`, `\s*(?:<|im_end|>|...)`)
GEMMA4 = TEMPLATES["gemma4"]  # literal lists, json dialect


BAD_CHUNKS: list[Any] = [b"<think>", bytearray(b"x"), None, 0, 1, 2.5, [], True, frozenset()]
CONTAINER_CHUNKS: list[Any] = [["a"], ("a",), {"a": 1}, ["<", "think>"]]


@pytest.mark.parametrize("name", ["smollm", "serving_qwen2", "gemma4"])
@pytest.mark.parametrize("bad", BAD_CHUNKS, ids=[repr(b) for b in BAD_CHUNKS])
@pytest.mark.parametrize("where", ["first", "middle", "held"])
def test_non_str_chunks_behave_as_upstream(name: str, bad: Any, where: str) -> None:
    """A bytes/None/int chunk: the same result or exception type, and the parser goes on the same way."""
    template = TEMPLATES[name]
    before = {"first": [], "middle": ["<think>ok</think>Hi"], "held": ["Hi <tool_ca"]}[where]
    chunks = [*before, bad, "ll>{}</tool_call> done"]
    ours, theirs = respc_stream(template, "", chunks), oracle_stream(template, "", chunks)
    assert_same(ours, theirs, template, f"{chunks!r}")


# Templates whose parsers take every fast path: plain (smollm), lead-run (serving_qwen2, qwen3_5), literal
# lists (gemma4), and discard outside explicit regions, with no implicit field (gpt_oss, cohere).
FAST_PATH_TEMPLATES = {
    **{name: TEMPLATES[name] for name in ("smollm", "serving_qwen2", "gemma4")},
    **{name: respc.load_preset(name).TEMPLATE for name in ("qwen3_5", "gpt_oss", "cohere")},
}


def test_container_chunks_raise_type_error_and_do_no_harm() -> None:
    """A list/tuple/dict chunk: TypeError as upstream, with the parser intact for the next chunk."""
    differences = []
    for name, template in FAST_PATH_TEMPLATES.items():
        for bad in CONTAINER_CHUNKS:
            # (the last: a lead-run state holding a trailing run, set aside in pieces)
            for before in ([], ["<think>ok</think>Hi"], ["Hi <tool_ca"], ["<think>ok</think>Hi ", "  "]):
                chunks = [*before, bad, "ll>{}</tool_call> done"]
                ours, theirs = respc_stream(template, "", chunks), oracle_stream(template, "", chunks)
                if not _same_trace(ours, theirs):
                    differences.append(f"{name} {chunks!r}: respc {ours!r}")
    assert not differences, "\n".join(differences)


class Text(str):
    """A str subclass, as some detokenizers hand out: the fast paths take only str itself."""


class ClaimsStr(list):
    """A list whose `__class__` says str, as `unittest.mock.MagicMock(spec=str)` does: only `type()` tells."""

    __class__ = property(lambda self: str)  # type: ignore[assignment]


class ClaimsStrHoldsNothing(ClaimsStr):
    def __contains__(self, item: object) -> bool:
        return False


@pytest.mark.parametrize("name", sorted(FAST_PATH_TEMPLATES))
@pytest.mark.parametrize("fake", [ClaimsStr, ClaimsStrHoldsNothing])
def test_objects_that_claim_to_be_str_raise_type_error_as_upstream(name: str, fake: type) -> None:
    """The fast paths test the chunk's real type: such an object raises TypeError, as upstream's
    concatenation does, and the parser goes on. (The oracle runs in this process: the fakes do not
    pickle to its subprocess.)"""
    from transformers.utils.chat_parsing import ResponseParser as OracleParser

    template = FAST_PATH_TEMPLATES[name]
    for before in ([], ["Hi"], ["<think>ok</think>Hi"], ["<think>ok</think>Hi ", "  "], ["Hi <tool_ca"]):
        chunks = [*before, fake(["a"]), " there</tool_call> done"]
        ours = stream_trace(lambda: respc.ResponseParser(template, ""), chunks)
        theirs = stream_trace(lambda: OracleParser(template, ""), chunks)
        assert _same_trace(ours, theirs), f"{name} {chunks!r}: respc {ours!r}"


@pytest.mark.parametrize("name", ["smollm", "serving_qwen2", "gemma4"])
def test_str_subclass_chunks_parse_as_str(name: str) -> None:
    template = TEMPLATES[name]
    text = "<think>a b </think>Hi there  <tool_call>{}</tool_call> done  \n"
    for size in (1, 2, 3, 4, 7):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        theirs = oracle_stream(template, "", chunks)
        for mixed in ([Text(c) for c in chunks], [Text(c) if i % 2 else c for i, c in enumerate(chunks)]):
            assert_same(respc_stream(template, "", mixed), theirs, template, f"{chunks!r}")


@pytest.mark.parametrize("bad", [b"<|im_start|>assistant\n", 5, 0, None, [], ["x"], 1.5, bytearray(b"")])
def test_non_str_prefix_behaves_as_upstream(bad: Any) -> None:
    ours, theirs = respc_stream(SMOLLM, bad, ["hi"]), oracle_stream(SMOLLM, bad, ["hi"])
    assert_same(ours, theirs, SMOLLM, repr(bad))
    ours, theirs = respc_parse(SMOLLM, "hi", bad), oracle_parse(SMOLLM, "hi", bad)
    assert_same(ours, theirs, SMOLLM, repr(bad))


@pytest.mark.parametrize("bad", [b"<think>a</think>", None, 0, 7, ["a"]])
def test_non_str_text_in_parse_response(bad: Any) -> None:
    ours, theirs = respc_parse(QWEN2, bad, ""), oracle_parse(QWEN2, bad, "")
    assert_same(ours, theirs, QWEN2, repr(bad))


@pytest.mark.parametrize("tools", [5, "abc", {"name": "f"}, [None, 3, "x", {"function": "x"}], ()])
def test_odd_tools_behave_as_upstream(tools: Any) -> None:
    chunks = ['<tool_call>{"name": "f", "arguments": {"a": "1"}}</tool_call>']
    ours, theirs = respc_stream(SMOLLM, "", chunks, tools), oracle_stream(SMOLLM, "", chunks, tools)
    assert_same(ours, theirs, SMOLLM, repr(tools))


def _after_finalize(parser: Any, chunks: list[str]) -> list:
    """Feed, finalize, then keep calling: the outcome of every call, in order."""
    calls = [*(lambda c=c: parser.feed(c) for c in chunks), parser.finalize]
    calls += [
        lambda: parser.feed("late"),
        lambda: parser.feed(""),
        lambda: parser.feed(None),
        parser.finalize,
    ]
    calls += [lambda: parser.feed("<think>x</think>"), parser.finalize]
    trace = []
    for call in calls:
        try:
            trace.append(("ok", call()))
        except Exception as error:
            trace.append(("raise", type(error), str(error)))
    return trace


@pytest.mark.parametrize(
    "chunks",
    [["<think>a</think>b"], [], ["<tool_call>{bad}</tool_call>"], ["<think>unclosed"], ["<tool_call>{"]],
    ids=["closed", "empty", "failing-region", "open-region", "failing-at-eos"],
)
@pytest.mark.parametrize("name", ["smollm", "serving_qwen2"])
def test_calls_after_finalize(chunks: list[str], name: str) -> None:
    """After a finalize that returned, every call raises RuntimeError; after one that raised, the parser
    goes on (and fails again) exactly as upstream."""
    from transformers.utils.chat_parsing import ResponseParser

    template = TEMPLATES[name]
    ours = _after_finalize(respc.ResponseParser(template, ""), chunks)
    theirs = _after_finalize(ResponseParser(template, ""), chunks)
    assert_same(ours, theirs, template, f"{chunks!r}")
    assert ours[len(chunks)][0] == "raise" or all(step[1] is RuntimeError for step in ours[len(chunks) + 1 :])


WEIRD = ["\x00", "\ud800", "\udfff", "\udc80\x00", "\x00\ud83d"]


def _weird_template(w: str) -> dict:
    return {
        "start_anchor": ["<s" + w + ">", w + "A"],
        "fields": {
            "think": {"open": "<" + w + ">", "close": ["</" + w + ">", w + w]},
            "tool": {
                "open_pattern": "\\s*<t" + w + "(?P<n>\\w*)>",
                "close_pattern": "(?:" + w + "|</t>)",
                "content": "json",
                "content_args": {"string_delims": [[w + "'", "'" + w]], "unquoted_keys": True},
                "transform": {"name": "{n}", "arguments": "{content}"},
            },
            "content": {"close": "END" + w},
        },
    }


@pytest.mark.parametrize("w", WEIRD, ids=[repr(w) for w in WEIRD])
def test_surrogates_and_nul_in_text_and_delimiters(w: str) -> None:
    template = _weird_template(w)
    texts = [
        f"a{w}b<{w}>th{w}ink</{w}>c{w}d",
        f"<t{w}f>{{k:{w}'v{w}x'{w}}}</t> {w}<{w}>x{w}{w}yEND{w}tail",
        f"<t{w}g>[1, 2]{w}z{w}<{w}",
        f"\x01<t{w}>\x01</t>",
        f"<{w}>x{w}" * 3,
    ]
    prefixes = ["", f"zz<s{w}>pre<{w}>", f"{w}A<t{w}"]
    for text in texts:
        for prefix in prefixes:
            for chunks in ([text], list(text), [text[: len(text) // 2], text[len(text) // 2 :]]):
                ours, theirs = respc_stream(template, prefix, chunks), oracle_stream(template, prefix, chunks)
                assert_same(ours, theirs, template, f"prefix={prefix!r} chunks={chunks!r}")


def test_surrogates_and_nul_in_a_plain_template() -> None:
    """NUL and lone surrogates in model output for realistic templates (text, json and regex regions)."""
    call = '{"name": "f\\ud800", "arguments": {"s": "\ud83d"}}'
    text = f"\x00<think>\ud800x\x00</think>\udfff<tool_call>{call}</tool_call>\x00"
    for template in (SMOLLM, QWEN2, GEMMA4):
        for chunks in ([text], list(text)):
            ours, theirs = respc_stream(template, "\ud800", chunks), oracle_stream(template, "\ud800", chunks)
            assert_same(ours, theirs, template, f"chunks={chunks!r}")


def _events_summary(parser: Any, chunks: Any) -> tuple[dict, int]:
    """Feed `chunks`, keep no events (a million of them would dwarf the input), return message and count."""
    count = len(parser.initial_events)
    for chunk in chunks:
        count += len(parser.feed(chunk))
    message, events = parser.finalize()
    return message, count + len(events)


@pytest.mark.parametrize("template", [SMOLLM, QWEN2], ids=["literal", "regex"])
def test_hundred_megabyte_chunk(template: dict) -> None:
    """One 100 MB chunk: the right message, and peak memory a small multiple of the input."""
    size = 100 * 1024 * 1024
    filler = "lorem ipsum " * (size // 24)
    text = f'<think>{filler}</think>{filler}\n<tool_call>{{"name": "f", "arguments": {{}}}}</tool_call>'
    tracemalloc.start()
    try:
        parser = respc.ResponseParser(template, "")
        message, _ = _events_summary(parser, [text])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message["thinking" if "thinking" in message else "reasoning_content"] == filler.strip()
    assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {}}}]
    assert len(message["content"]) == len(filler.strip())
    assert peak < 4 * len(text), f"peak {peak / 2**20:.0f} MiB for a {len(text) / 2**20:.0f} MiB chunk"


@pytest.mark.parametrize("template", [SMOLLM, QWEN2], ids=["literal", "regex"])
def test_a_million_tiny_chunks(template: dict) -> None:
    """A million one-character feeds give exactly the one-shot message."""
    unit = "<think>r</think>Hello there, " + '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>\n'
    text = unit * (1_000_000 // len(unit) + 1)  # whole units: every region closes
    expected = respc.parse_response(text, template, prefix="")
    message, count = _events_summary(respc.ResponseParser(template, ""), text)
    assert message == expected
    assert count > len(text) // 2  # streaming really happened chunk by chunk


@settings(max_examples=250, deadline=None, derandomize=True)
@given(
    anchors=st.lists(st.text("ab<", min_size=1, max_size=3), min_size=1, max_size=3, unique=True),
    prefix=st.text("ab<>x", max_size=14),
)
def test_the_last_literal_anchor_is_found_as_upstream_finds_it(anchors: list[str], prefix: str) -> None:
    """Literal anchors that cannot overlap are found from their last occurrences (`rfind`) instead of every
    match of their alternation; overlapping ones (`aa`, or `ab` beside `b<`) keep the walk. Either way the
    remainder, and so the first events and the message, are upstream's."""
    template = {"start_anchor": anchors, "fields": {"t": {"open": "<", "close": ">"}, "c": {}}}
    text = "x>y<z"
    assert_same(
        respc_stream(template, prefix, [text]),
        oracle_stream(template, prefix, [text]),
        template,
        repr(prefix),
    )


# States the skip path reaches with a chunk of another type: guards (MiniMax-M2's `>`, llama3's `;`), no
# stems (Mistral v11's and Kimi-K2's lookahead closes), a held lead run (a review found these raising
# another message: the guard's or start character's `in` test ran before the concatenation).
MESSAGE_PRESETS = ("minimax_m2", "mistral_v11", "kimi_k2", "llama3_json", "qwen3", "gemma3_pythonic")


@pytest.mark.parametrize("name", MESSAGE_PRESETS)
def test_chunks_of_another_type_raise_upstreams_message(name: str) -> None:
    """A chunk that is not a `str` raises the `TypeError` transformers raises, message and all, wherever
    it comes: at the start, after prose, after a trailing run, inside a held delimiter or a tool call."""
    module = respc.load_preset(name)
    sample = json.loads((FIXTURES / "presets" / f"{name}.json").read_text(encoding="utf-8"))[0]
    prefix, text = sample["prefix"], sample["text"]
    differences = []
    for bad in [b"x", 1.5, ["a"], bytearray(b"<")]:
        for cut in sorted({0, 1, 3, len(text) // 3, len(text) // 2, len(text) - 2}):
            chunks = [text[:cut], " ", bad, text[cut:]] if cut % 2 else [text[:cut], bad, text[cut:]]
            ours = respc_stream(module.TEMPLATE, prefix, chunks)
            theirs = oracle_stream(module.TEMPLATE, prefix, chunks)
            if not _same_trace(ours, theirs):
                differences.append(f"{chunks!r}: respc {ours!r}\n  transformers {theirs!r}")
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize(
    ("name", "prefix", "chunks"),
    [
        ("minimax_m2", "xS", ["a ", b"x", "b"]),  # a held lead run, beside a guard character
        ("minimax_m2", "xS", [" ", 1.5, "b"]),
        ("kimi_k2", "<|im_middle|>", ["<think>221", b"x", "b"]),  # no stems: a lookahead close
        ("mistral_v11", "[/INST]", ['[TOOL_CALLS]get_weather[ARGS]{"', b"x", "1}"]),
        ("llama3_json", "xS", ["hi;", b"x", " ok"]),  # the guard character just before
    ],
)
@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_a_chunk_of_another_type_beside_a_guard_raises_upstreams_message(
    name: str, prefix: str, chunks: list, target: str
) -> None:
    template = respc.load_preset(name).TEMPLATE
    ours = respc_stream(template, prefix, chunks, target=target)
    assert_same(ours, oracle_stream(template, prefix, chunks, target=target), template, repr(chunks), target)
