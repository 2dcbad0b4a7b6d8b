"""The prefix passes a parser class remembers (`CompiledParser._remember` / `_resume`): a parser created with
a remainder seen before takes the state the pass left, and must be the parser the pass would have made,
own every list and dict it may change, and stream exactly as transformers does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.compare import FIXTURES, TEMPLATES, assert_same, chunkings, oracle_stream
from support.oracles import run_calls, stream_trace

import respc
from respc.runtime import parser as runtime

# The presets whose sample prompts end inside a region (`<think>\n`): the ones the memo is for.
OPENING = ("deepseek_r1", "deepseek_v3_1", "glm4_7", "minimax_m2", "qwen3_5", "step3")
TOOLS = [
    {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
]


def _cases(name: str) -> list[dict]:
    return json.loads((FIXTURES / "presets" / f"{name}.json").read_text(encoding="utf-8"))


def _fresh(cls: type, prefix: str, **options: Any) -> Any:
    """A parser made by the prefix pass itself, the memo set aside and put back."""
    settled = cls.__dict__.get("_settled")
    cls._settled = None
    try:
        return cls(prefix, **options)
    finally:
        cls._settled = settled


def _remembered(cls: type, parser: Any) -> bool:
    settled = cls.__dict__.get("_settled") or {}
    return (parser._remainder, parser.errors is not None) in settled


def _state(parser: Any) -> list[tuple[str, Any]]:
    parser.initial_events  # noqa: B018 (a resumed parser copies its events when they are first read)
    return [(key, value) for key, value in vars(parser).items() if key != "_tools"]


@pytest.mark.parametrize("name", respc.presets())
def test_a_resumed_parser_is_the_one_the_pass_makes(name: str) -> None:
    """Every preset and sample prompt: the same attributes in the same order (instances keep one key table)
    and values, each list and dict a copy of its own, and the memo used where a prompt opens a region."""
    cls = respc.load_preset(name).ResponseParser
    for case in _cases(name):
        fresh = _fresh(cls, case["prefix"])
        first, second = cls(case["prefix"]), cls(case["prefix"])
        assert _state(second) == _state(first) == _state(fresh)
        for key, value in vars(second).items():
            if isinstance(value, (list, dict)):
                assert value is not getattr(first, key), key
        for ours, theirs in zip(second.initial_events, first.initial_events):
            assert ours is not theirs
    if name in OPENING:
        prefix = _cases(name)[0]["prefix"]
        resumed = cls(prefix)
        assert _remembered(cls, resumed)
        assert type(vars(resumed)["_initial_events"]) is tuple  # not copied until read
        assert resumed.initial_events == _fresh(cls, prefix).initial_events
        assert type(resumed.initial_events) is list and resumed.initial_events is resumed.initial_events


@pytest.mark.parametrize("name", OPENING)
def test_changing_one_parser_changes_no_later_one(name: str) -> None:
    """The parser whose pass was remembered goes on streaming, a resumed one's events are changed by its
    caller and it streams too: a parser resumed after both still streams as transformers does."""
    module = respc.load_preset(name)
    case = _cases(name)[0]
    prefix = case["prefix"]
    _fresh(module.ResponseParser, prefix)
    module.ResponseParser._settled = None  # the next parser is the one that remembers
    first = module.ResponseParser(prefix)
    assert _remembered(module.ResponseParser, first)
    for parser in (first, module.ResponseParser(prefix)):
        for event in parser.initial_events:
            event["field"] = "changed"
        parser.initial_events.append({"type": "changed"})
        for chunk in chunkings(case["text"])[2]:
            parser.feed(chunk)
        parser.finalize()
    for chunks in chunkings(case["text"], random_splits=2):
        ours = stream_trace(lambda: module.ResponseParser(prefix), chunks)
        assert_same(ours, oracle_stream(module.TEMPLATE, prefix, chunks), module.TEMPLATE, repr(chunks))


def test_each_resumed_parser_types_arguments_with_its_own_tools() -> None:
    """A prompt that opens a tool call (the pass reads no tools) is remembered once; each parser then
    casts the call's arguments with the tools it was given, as transformers does."""
    module = respc.load_preset("qwen3")
    prefix = "<|im_start|>assistant\n<tool_call>\n"
    chunks = ['{"name": "f", "arguments": ', '{"x": "5"}}\n</tool_call>']
    for tools in (TOOLS, None, TOOLS):
        ours = stream_trace(lambda t=tools: module.ResponseParser(prefix, tools=t), chunks)
        assert_same(ours, oracle_stream(module.TEMPLATE, prefix, chunks, tools), module.TEMPLATE, repr(tools))
    assert _remembered(module.ResponseParser, module.ResponseParser(prefix))


def test_a_prompt_that_closes_a_call_is_passed_every_time() -> None:
    """A call closed in the prompt leaves a list in the output (and was typed with the tools): not kept."""
    cls = respc.load_preset("qwen3").ResponseParser
    prefix = '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"x": "5"}}\n</tool_call>\n'
    cls(prefix, tools=TOOLS)
    parser = cls(prefix)
    assert not _remembered(cls, parser)
    assert parser.initial_events[-1]["value"]["function"]["arguments"] == {"x": "5"}


def test_kept_errors_are_each_parsers_own() -> None:
    """errors="keep" is remembered apart from strict; a pass that kept an error is not remembered, and each
    parser's `errors` list is its own."""
    cls = respc.load_preset("qwen3").ResponseParser
    opened = "<|im_start|>assistant\n<think>\n"
    keep = [cls(opened, errors="keep") for _ in range(3)]
    assert keep[1].errors == keep[2].errors == [] and keep[1].errors is not keep[2].errors
    assert _remembered(cls, keep[2]) and cls(opened).errors is None
    failed = "<|im_start|>assistant\n<tool_call>\n{not json}\n</tool_call>\n"
    parsers = [cls(failed, errors="keep") for _ in range(2)]
    assert not _remembered(cls, parsers[1])
    assert len(parsers[0].errors) == len(parsers[1].errors) == 1
    assert parsers[0].errors[0] is not parsers[1].errors[0]
    trace = run_calls([lambda: cls(failed)], None)
    assert trace[0][0] == "raise"  # strict: the pass raises each time, nothing remembered


def test_the_memo_stays_small() -> None:
    """Prompts without a start anchor are each a new remainder: the memo is cleared once it is full, and a
    remainder longer than the limit is never kept."""
    cls = respc.compile_template(TEMPLATES["smollm"]).ResponseParser
    for number in range(runtime._SETTLED_LIMIT * 2 + 5):
        cls(f"<think>{number}")
        assert len(cls.__dict__["_settled"]) <= runtime._SETTLED_LIMIT
    long = "<think>" + "x" * runtime._SETTLED_LENGTH
    assert not _remembered(cls, cls(long))
    assert _remembered(cls, cls("<think>1"))


def test_a_subclass_keeps_its_own_memo() -> None:
    """The memo lives on the class whose parser made it: a subclass (which may change how a pass goes)
    never resumes its base's states."""
    base = respc.load_preset("qwen3_5").ResponseParser
    base("<think>\n")

    class Sub(base):  # type: ignore[misc, valid-type]
        pass

    parser = Sub("<think>\n")
    assert "_settled" in Sub.__dict__ and Sub.__dict__["_settled"] is not base.__dict__["_settled"]
    assert _state(parser) == _state(base("<think>\n"))


def test_a_subclass_whose_pass_sets_an_attribute_of_its_own_is_not_remembered() -> None:
    """A generated class's pass sets the attributes `_SETTLED_ORDER` names, read by name; a subclass's
    may set more, which `_resume` would not restore: such a pass is replayed every time."""
    base = respc.load_preset("qwen3_5").ResponseParser

    class Marked(base):  # type: ignore[misc, valid-type]
        def _open(self, *args: Any) -> None:
            super()._open(*args)
            self.opened_here = True

    for _ in range(2):
        parser = Marked("<think>\n")
        assert parser.opened_here and not _remembered(Marked, parser)


def test_a_list_in_the_defaults_is_each_parsers_own() -> None:
    """A default list (which a repeating field appends to) makes the state one the memo does not keep: each
    parser's calls stay its own, as in transformers."""
    template = {**TEMPLATES["smollm"], "defaults": {"role": "assistant", "tool_calls": []}}
    cls = respc.compile_template(template).ResponseParser
    chunks = ["a</think>", '<tool_call>{"name": "f", "arguments": {}}</tool_call>']
    theirs = oracle_stream(template, "<think>", chunks)
    for _ in range(3):
        assert_same(stream_trace(lambda: cls("<think>"), chunks), theirs, template, "list default")
    assert not _remembered(cls, cls("<think>"))
