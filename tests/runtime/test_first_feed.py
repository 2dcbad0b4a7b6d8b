"""The first feeds a parser class remembers (`CompiledParser._first_feed`): a parser whose prefix left the
general mode, given a first chunk its class has seen after the same remainder, takes the state and events
that feed gave then. It must be the parser that feed would have made, own every list and dict it may
change, and stream exactly as transformers does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.compare import FIXTURES, TEMPLATES, assert_same, chunkings, oracle_stream, spy
from support.oracles import stream_trace

import respc
from respc.runtime import parser as runtime

TOOLS = [
    {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
]


def _cases(name: str) -> list[dict]:
    return json.loads((FIXTURES / "presets" / f"{name}.json").read_text(encoding="utf-8"))


def _known(cls: type, parser: Any, chunk: str) -> bool:
    return (parser._remainder, parser.errors is not None, chunk) in (cls.__dict__.get("_first_fed") or {})


def _state(parser: Any) -> list[tuple[str, Any]]:
    parser.initial_events  # noqa: B018 (a resumed parser copies its events when they are first read)
    return [
        (key, value)
        for key, value in vars(parser).items()
        if key not in ("_tools", "feed", "_pass", "_process")
    ]


@pytest.mark.parametrize("name", respc.presets())
def test_a_remembered_first_feed_streams_as_transformers_does(name: str) -> None:
    """Every preset and sample under several chunkings, each stream run cold (its first chunk new to the
    class) and then warm (remembered): both give transformers' trace."""
    module = respc.load_preset(name)
    cls = module.ResponseParser
    for index, case in enumerate(_cases(name)):
        prefix = case.get("prefix") or ""
        for chunks in chunkings(case["text"], seed=index, random_splits=1):
            theirs = oracle_stream(module.TEMPLATE, prefix, chunks)
            cls._first_fed = {}
            for round_ in ("cold", "warm"):
                ours = stream_trace(lambda p=prefix: cls(p), chunks)
                assert_same(ours, theirs, module.TEMPLATE, f"{name}[{index}] {round_} {chunks[:3]!r}")


@pytest.mark.parametrize(
    ("name", "case"),
    [("ernie4_5", 0), ("llama3_pythonic", 0), ("gemma3_pythonic", 0), ("llama4", 0), ("llama3_json", 1)],
)
def test_a_parser_that_resumes_a_first_feed_is_the_one_the_feed_makes(name: str, case: int) -> None:
    """The same attributes in the same order and values as a parser that fed the chunk itself, each list
    and dict a copy of its own, the events too, and no pass run."""
    cls = respc.load_preset(name).ResponseParser
    prefix, text = _cases(name)[case]["prefix"], _cases(name)[case]["text"]
    chunk = text[:4]
    cls._first_fed = {}
    fed = cls(prefix)
    assert fed.finalized is False and fed._finalized is None  # (never fed: its first feed may be kept)
    fed_events = fed.feed(chunk)
    assert _known(cls, fed, chunk)
    resumed = cls(prefix)
    calls = spy(resumed, "_pass", "_process")
    events = resumed.feed(chunk)
    assert calls == [] and events == fed_events and resumed.feed_mode == fed.feed_mode
    assert _state(resumed) == _state(fed)
    for key, value in vars(resumed).items():
        if isinstance(value, (list, dict)):
            assert value is not getattr(fed, key), key
    for ours, theirs in zip(events, cls(prefix).feed(chunk)):
        assert ours is not theirs


def test_initial_events_read_or_changed_before_the_first_feed_stay_the_parsers_own() -> None:
    """A caller that reads (or changes) `initial_events`, or holds `errors`, before the first feed keeps
    that very list after a remembered first feed, as after one fed the slow way (transformers keeps its
    attribute)."""
    cls = respc.load_preset("llama4").ResponseParser
    chunks = ["Hi", " there"]
    for _ in range(2):
        parser = cls("", errors="keep")
        events, errors = parser.initial_events, parser.errors
        events.append({"type": "mine"})
        parser.feed(chunks[0])
        assert parser.initial_events is events and events == [{"type": "mine"}] and parser.errors is errors
    assert _known(cls, parser, chunks[0])


def test_initial_events_replaced_by_anything_do_not_change_the_first_feed() -> None:
    """transformers' feed never reads `initial_events`: a caller that sets it to None, or puts a string in
    it, gets the same events from the first feed, cold or remembered (the memo keeps none of them)."""
    cls = respc.load_preset("ernie4_5").ResponseParser
    expected = cls("").feed("The ")
    for value in (None, ["not an event"], None):
        cls._first_fed = {} if value is None else cls._first_fed
        for _ in range(2):
            parser = cls("")
            parser.initial_events = value
            assert parser.feed("The ") == expected and parser.initial_events == value


def test_a_feed_the_caller_set_is_replaced_by_the_first_feed_either_way() -> None:
    """Wherever the first feed is remembered or not, it installs the mode's method as `feed`, replacing one
    the caller set on the instance (as a pass does)."""
    cls = respc.load_preset("ernie4_5").ResponseParser
    cls._first_fed = {}
    for chunk in ("<", "The "):
        for _ in range(2):
            parser = cls("")
            seen: list[str] = []
            parser.feed = lambda text, p=parser, s=seen: s.append(text) or type(p).feed(p, text)  # type: ignore
            parser.feed(chunk)
            parser.feed("x")
            assert seen == [chunk]


def test_changing_one_parser_changes_no_later_one() -> None:
    """A resumed parser's events and output are changed by its caller and it streams on: a parser resumed
    after it still streams as transformers does."""
    module = respc.load_preset("ernie4_5")
    case = _cases("ernie4_5")[0]
    prefix, text = case["prefix"], case["text"]
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    module.ResponseParser._first_fed = {}
    for _ in range(2):
        parser = module.ResponseParser(prefix)
        for event in parser.feed(chunks[0]):
            event["field"] = "changed"
        parser._output["role"] = "changed"
        for chunk in chunks[1:]:
            parser.feed(chunk)
        parser.finalize()
    ours = stream_trace(lambda: module.ResponseParser(prefix), chunks)
    assert_same(ours, oracle_stream(module.TEMPLATE, prefix, chunks), module.TEMPLATE, repr(chunks))


def test_first_feeds_are_kept_apart_by_remainder_and_errors_mode() -> None:
    """The same chunk after another remainder, or in the other errors mode, is a feed of its own; after a
    remainder that opens a region (mode plain) there is nothing to keep."""
    module = respc.load_preset("ernie4_5")
    cls = module.ResponseParser
    cls._first_fed = {}
    chunks = ["The", " answer</think>", "\n\n<response>\nok\n</response>"]
    for prefix in ("", "User: hi\nAssistant:", "<think>"):
        for errors in ("strict", "keep", "strict"):
            ours = stream_trace(lambda p=prefix, e=errors: cls(p, errors=e), chunks)
            assert_same(ours, oracle_stream(module.TEMPLATE, prefix, chunks), module.TEMPLATE, prefix)
    # ("", strict) and ("", keep): both first prompts leave the remainder "".
    assert set(cls.__dict__["_first_fed"]) == {("", False, "The"), ("", True, "The")}


def test_only_a_first_feed_in_a_guarded_state_is_remembered() -> None:
    """Where the first chunk's state has no guard, the fast modes or a held prefix answer it about as
    cheaply as resuming would: nothing is kept, and the class's `feed` goes straight to the general
    mode."""
    cls = respc.load_preset("qwen3").ResponseParser
    parser = cls("<|im_start|>assistant\n")
    assert parser._finalized is False and cls._UNFED is False
    parser.feed("Hi! ")
    assert cls.__dict__["_first_fed"] == {}
    assert respc.load_preset("llama4").ResponseParser._UNFED is None


def test_a_first_feed_that_closes_a_region_with_a_container_or_raises_is_fed_every_time() -> None:
    """A region closed in the first chunk whose value is a dict (a call, which the tools type) is each
    parser's own, and a feed that raises leaves nothing: neither is kept."""
    template = {"start_anchor": "A:", "fields": {"data": {"open": "<t>", "close": "</t>", "content": "json"}}}
    cls = respc.compile_template(template).ResponseParser
    chunk = '<t>{"a": [1]}</t>'
    for _ in range(2):
        parser = cls("")
        (event,) = [event for event in parser.feed(chunk) if event["type"] == "region_close"]
        message = parser.finalize()[0]
        assert message == {"data": {"a": [1]}} and event["value"] == {"a": [1]}
        message["data"]["a"].append(2)  # (a caller's change to its own message)
        assert not _known(cls, parser, chunk)
    calls = {
        "start_anchor": "A:",
        "fields": {"tool_calls": {"open": "<t>", "close": "</t>", "content": "json"}},
    }
    cls = respc.compile_template(calls).ResponseParser
    chunks = ['<t>{"function": {"name": "f", ', '"arguments": {"x": "5"}}}</t>']
    for tools in (TOOLS, None, TOOLS):
        ours = stream_trace(lambda t=tools: cls("", tools=t), chunks)
        assert_same(ours, oracle_stream(calls, "", chunks, tools), calls, repr(tools))
    failing = "<t>{not json}</t>"
    for _ in range(2):
        parser = cls("")
        with pytest.raises(ValueError):
            parser.feed(failing)
        assert not _known(cls, parser, failing)


def test_long_chunks_and_subclasses_are_not_remembered() -> None:
    """A chunk longer than the limit (a whole message fed at once) is fed every time; a subclass (which may
    change how a feed goes) keeps no memo."""
    base = respc.load_preset("ernie4_5").ResponseParser
    base._first_fed = {}
    long = "The answer is " + "x" * runtime._FIRST_LENGTH
    base("").feed(long)
    assert not _known(base, base(""), long)

    class Sub(base):  # type: ignore[misc, valid-type]
        pass

    for _ in range(2):
        Sub("").feed("The ")
    assert Sub.__dict__["_first_fed"] is None and Sub("")._first_fed is None


def test_the_memo_stays_small() -> None:
    """Replies that start with ever new chunks: the memo is cleared once it is full."""
    cls = respc.compile_template(TEMPLATES["smollm"]).ResponseParser
    for number in range(runtime._FIRST_LIMIT * 2 + 5):
        cls("").feed(f"x{number}")
        assert len(cls.__dict__["_first_fed"]) <= runtime._FIRST_LIMIT
