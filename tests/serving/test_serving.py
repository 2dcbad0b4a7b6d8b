"""DeltaStream: OpenAI deltas from every fixture template and preset, under every chunking hypothesis
tries, checked against the parser's own events and final message; plus each documented policy."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compare import SAMPLES, TEMPLATES
from support.serving import (
    PRESETS,
    SPACES,
    cases_of,
    check_stream,
    chunked,
    collect_deltas,
    dialect_objects,
    module_of,
    random_tools,
)

import respc
from respc.serving import DeltaStream, DeltaStreamError
from respc.serving.deltas import template_of

EXAMPLES = int(os.environ.get("RESPC_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


@pytest.mark.parametrize("name", sorted(TEMPLATES) + [f"preset:{p}" for p in PRESETS])
def test_realistic_cases_under_any_chunking(name: str) -> None:
    module, cases = module_of(name), cases_of(name)
    seen: set[str] = set()

    @SETTINGS
    @given(st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(st.sampled_from(cases))
        chunks = data.draw(chunked(case["text"]))
        tools = None
        if data.draw(st.booleans()):
            try:
                tools = random_tools(data.draw, module.parse_response(case["text"], prefix=case["prefix"]))
            except Exception:
                tools = None
        seen.add(
            check_stream(module.TEMPLATE, lambda: module.ResponseParser(case["prefix"], tools=tools), chunks)
        )

    run()
    for case in cases:  # and the two extreme chunkings of every case
        for chunks in ([case["text"]], list(case["text"])):
            make = lambda prefix=case["prefix"]: module.ResponseParser(prefix)  # noqa: E731
            seen.add(check_stream(module.TEMPLATE, make, chunks))
    assert "ok" in seen


GENERIC = [
    " ",
    "\n",
    "  ",
    "x",
    "hi",
    "{",
    "}",
    '"',
    ":",
    ",",
    "[",
    "]",
    "<",
    ">",
    "/",
    "é",
    "\\",
    "7",
    "null",
]
JSON_PIECES = ['"name": "f"', '"arguments": {', '"a": "x y"', '"b": 7', '{"name": "g", "arguments": {}}']


def _atoms(template: dict, cases: list[dict]) -> list[str]:
    found = []
    for field in template["fields"].values():
        for key in ("open", "close"):
            value = field.get(key)
            found += [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]
    found += [case["text"] for case in cases if case["text"]]
    return sorted(set(found)) + GENERIC + JSON_PIECES


@st.composite
def adversarial(draw: st.DrawFn, pool: list[str]) -> list[str]:
    pieces = []
    for _ in range(draw(st.integers(0, 10))):
        atom = draw(st.sampled_from(pool))
        if len(atom) > 1 and draw(st.booleans()):
            a = draw(st.integers(0, len(atom) - 1))
            atom = atom[a : draw(st.integers(a + 1, len(atom)))]
        pieces.append(atom)
    return draw(chunked("".join(pieces)))


@pytest.mark.parametrize("name", sorted(TEMPLATES) + [f"preset:{p}" for p in PRESETS])
def test_random_texts_keep_the_invariants(name: str) -> None:
    module = module_of(name)
    pool = _atoms(module.TEMPLATE, cases_of(name))

    @SETTINGS
    @given(adversarial(pool))
    def run(chunks: list[str]) -> None:
        check_stream(module.TEMPLATE, lambda: module.ResponseParser(""), chunks)

    run()


@pytest.mark.parametrize(
    "name", ["smollm", "qwen3", "serving_qwen3_5", "gpt_oss", "gemma4", "cohere", "ernie"]
)
def test_same_deltas_over_transformers_parser(name: str) -> None:
    from transformers.utils.chat_parsing import ResponseParser as OracleParser

    template, module = TEMPLATES[name], respc.compile_template(TEMPLATES[name])
    for case in SAMPLES[name]:
        for step in (1, 3, len(case["text"]) or 1):
            chunks = [case["text"][i : i + step] for i in range(0, len(case["text"]), step)]
            runs = []
            prefix = case["prefix"]
            for parser in (module.ResponseParser(prefix), OracleParser(template, prefix)):
                numbers = iter(range(1000))
                stream = DeltaStream(
                    parser, template=template, new_id=lambda numbers=numbers: f"call_{next(numbers)}"
                )
                try:
                    deltas = [d for c in chunks for d in stream.feed(c)] + stream.finish()[0]
                except DeltaStreamError as error:
                    deltas = [error.reason, error.deltas]
                runs.append(deltas)
            assert runs[0] == runs[1], (name, case["text"], step)


JSON_ARGUMENT_TEXTS = [
    '<tool_call>\n{"name": "write", "arguments": {"text": "a long argument, with \\"quotes\\" and \\\\ and é", '
    '"n": "7", "more": ["x y", "z"]}}\n</tool_call>',
    '<tool_call>\n{"name": "a", "arguments": {"s": "one two"}}\n</tool_call>'
    '<tool_call>\n{"name": "b", "arguments": {"s": "three four"}}\n</tool_call>',
    '<tool_call>\n{"name": "write", "arguments": {"text": "cut off in the middle of a str',
]


XML_ARGUMENT_TEXTS = [
    '<tool_call>\n<function=write>\n<parameter=text>\n  a long value, with "quotes", \\ and é <b>  \n'
    "</parameter>\n<parameter=n>\n7\n</parameter>\n</function>\n</tool_call>",
    "<tool_call>\n<function=write>\n<parameter=text>\ncut off in the middle of a val",
]


@pytest.mark.parametrize(
    "name",
    [
        "smollm",
        "preset:qwen3",
        "preset:llama3_json",
        "preset:mistral_v11",
        "serving_qwen3_5",
        "preset:qwen3_5",
        "preset:minimax_m2",
    ],
)
def test_the_in_string_fast_path_sends_what_the_general_path_sends(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeltaStream sends a chunk inside a JSON argument string, or an xml-inline string value, without
    walking, searching or rendering the body (`ToolRegion.feed_in_string`); with that path turned off, every stream must give the same deltas
    and the same end, with tools typing an argument or not, under any chunking."""
    from respc.serving.tool_args import ToolRegion

    module = module_of(name)
    texts = [case["text"] for case in cases_of(name)] + JSON_ARGUMENT_TEXTS + XML_ARGUMENT_TEXTS
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools = [{"type": "function", "function": {"name": "write", "parameters": schema}}]
    fast = ToolRegion.feed_in_string
    taken: list[bool] = []

    def counted(self: ToolRegion, text: str) -> Any:
        sent = fast(self, text)
        taken.append(sent is not None)
        return sent

    def deltas(chunks: list[str], typed: bool, path: Any) -> list:
        monkeypatch.setattr(ToolRegion, "feed_in_string", path)
        numbers = iter(range(100))
        parser = module.ResponseParser("", tools=tools if typed else None)
        stream = DeltaStream(parser, new_id=lambda: f"call_{next(numbers)}")
        try:
            return [d for chunk in chunks for d in stream.feed(chunk)] + list(stream.finish())
        except DeltaStreamError as error:
            return [error.reason, error.deltas]

    def same(chunks: list[str], typed: bool) -> None:
        assert deltas(chunks, typed, counted) == deltas(chunks, typed, lambda self, text: None)

    @SETTINGS
    @given(st.sampled_from(texts).flatmap(chunked), st.booleans())
    def run(chunks: list[str], typed: bool) -> None:
        same(chunks, typed)

    run()
    for text in texts:
        for typed in (False, True):
            same([text[i : i + 4] for i in range(0, len(text), 4)], typed)
    assert any(taken), "the fast path was never taken: this test could not see it go wrong"


@pytest.mark.parametrize(
    "name", ["preset:glm4_5", "preset:qwen3_5", "preset:minimax_m2", "preset:seed_oss", "preset:step3"]
)
def test_a_partial_xml_head_is_not_searched_again_before_its_last_character(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between xml-inline parameters, a chunk without the head pattern's last character (`>` of
    `<parameter=...>`) leaves a partial head partial, so `_XmlArgs.feed` does not search it again
    (`XmlTags.head_end`); with that turned off every stream must give the same deltas under any chunking."""
    from respc.serving.tool_args import _XmlArgs

    module = module_of(name)
    texts = [case["text"] for case in cases_of(name)] + XML_ARGUMENT_TEXTS
    skipped: list[bool] = []

    def waits(self: _XmlArgs) -> bool:
        skipped.append(self.__dict__["waits"])
        return self.__dict__["waits"]

    def store(self: _XmlArgs, value: bool) -> None:
        self.__dict__["waits"] = value

    def deltas(chunks: list[str], skip: bool) -> list:
        getter = waits if skip else (lambda self: False)
        monkeypatch.setattr(_XmlArgs, "head_waits", property(getter, store), raising=False)
        numbers = iter(range(100))
        stream = DeltaStream(module.ResponseParser(""), new_id=lambda: f"call_{next(numbers)}")
        try:
            return [d for chunk in chunks for d in stream.feed(chunk)] + list(stream.finish())
        except DeltaStreamError as error:
            return [error.reason, error.deltas]

    @SETTINGS
    @given(st.sampled_from(texts).flatmap(chunked))
    def run(chunks: list[str]) -> None:
        assert deltas(chunks, True) == deltas(chunks, False)

    run()
    for text in texts:
        chunks = [text[i : i + 2] for i in range(0, len(text), 2)]
        assert deltas(chunks, True) == deltas(chunks, False)
    assert any(skipped), "no search was spared: this test could not see it go wrong"


# -- policies ---------------------------------------------------------------------------------------


def _stream(
    name: str, chunks: list[str], prefix: str = "", tools: list | None = None
) -> tuple[list, str, Any]:
    module = module_of(name)
    stream = DeltaStream(module.ResponseParser(prefix, tools=tools))
    deltas = [d for chunk in chunks for d in stream.feed(chunk)]
    last, reason = stream.finish()
    return deltas + last, reason, stream


def _text(deltas: list[dict], key: str) -> str:
    return "".join(d.get(key, "") for d in deltas)


def test_whitespace_the_value_strips_is_never_sent() -> None:
    deltas, reason, stream = _stream("smollm", ["  \n Hel", "lo ", " \n", "world \n", " ", "<|im_end|>"])
    assert [d["content"] for d in deltas] == ["Hel", "lo", "  \nworld"]
    assert stream.message["content"] == "Hello  \nworld" and reason == "stop"


def test_a_later_implicit_segment_is_sent_after_the_earlier_one_quirk_q1() -> None:
    call = '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
    deltas, _, stream = _stream("smollm", ["Hello", call, " bye"])
    assert _text(deltas, "content") == "Hellobye" and stream.message["content"] == "bye"
    deltas, _, stream = _stream("smollm", ["Hello", call, "\n", call])  # a whitespace segment sends nothing
    assert _text(deltas, "content") == "Hello" and "content" not in stream.message


def test_joined_segments_send_the_join_between_them() -> None:
    template = {
        "defaults": {"role": "assistant", "content": "PRE"},
        "start_anchor": "<s>",
        "fields": {
            "thinking": {"open": "<t>", "close": "</t>", "repeats": True, "join": " | "},
            "content": {"close": "<end>", "repeats": True, "join": "\n"},
            "x": {"open": "<x>", "close": "</x>"},
        },
    }
    module = respc.compile_template(template)
    stream = DeltaStream(module.ResponseParser(""))
    deltas = [d for c in ["<t> a </t>", "one<x>1</x>", "<t></t><t>b</t>", " two "] for d in stream.feed(c)]
    deltas += stream.finish()[0]
    assert stream.message["thinking"] == "a |  | b" == _text(deltas, "reasoning_content")
    assert stream.message["content"] == "PRE\none\ntwo" and _text(deltas, "content") == "\none\ntwo"


def test_arguments_stream_while_the_call_is_generated() -> None:
    long = "word " * 40
    cases = {
        "smollm": ['<tool_call>{"name": "write", "arguments": {"text": "', long, '"}}', "</tool_call>"],
        "gpt_oss": [
            "<|channel|>commentary to=functions.write <|message|>",
            '{"text": "',
            long,
            '"}',
            "<|call|>",
        ],
        "gemma4": ['<|tool_call>call:write{text:<|"|>', long, '<|"|>}', "<tool_call|>"],
        "serving_qwen3_5": [
            "<tool_call>\n<function=write>\n<parameter=text>\n",
            long,
            "\n</parameter>\n",
            "</function>\n</tool_call>",
        ],
        "cohere": [
            '<|START_ACTION|>[{"tool_name": "write", "parameters": {"text": "',
            long,
            '"}}]',
            "<|END_ACTION|>",
        ],
    }
    for name, pieces in cases.items():
        module = module_of(name)
        stream = DeltaStream(module.ResponseParser(""))
        chunks = [c for piece in pieces[:-1] for c in (piece[i : i + 3] for i in range(0, len(piece), 3))]
        before = [d for c in chunks for d in stream.feed(c)]
        header = before[0]["tool_calls"][0]
        assert header["function"]["name"] == "write", name
        fragments = [d["tool_calls"][0]["function"]["arguments"] for d in before[1:]]
        assert len(fragments) > 20, (name, fragments)  # streamed in pieces, before the close arrived
        after = [d for d in stream.feed(pieces[-1])] + stream.finish()[0]
        arguments = "".join(fragments) + "".join(d["tool_calls"][0]["function"]["arguments"] for d in after)
        assert json.loads(arguments) == {"text": long.strip() if name == "serving_qwen3_5" else long}, name


def test_held_chunks_and_set_aside_arguments_take_the_streams_fast_paths() -> None:
    """A chunk the parser holds back whole costs the stream nothing more (no `_run`, no `_fast_target`);
    a string argument's chunks after its first are only set aside (without a call of the region), each
    sent with its own call's index: the second call's too."""
    from support.compare import spy

    stream = DeltaStream(respc.load_preset("qwen3").ResponseParser(""))
    assert stream.feed("Sure.") == [{"content": "Sure."}]
    calls = spy(stream, "_run", "_fast_target")
    assert stream.feed("\n<tool") == [] and calls == []  # (held: it may start `<tool_call>`)
    deltas = []
    for index in (0, 1):
        deltas += stream.feed(
            '_call>\n{"name": "write", "arguments": {"text": "' if index == 0 else "\n<tool"
        )
        if index:
            deltas += stream.feed('_call>\n{"name": "write", "arguments": {"text": "')
        region = stream._region
        aside = spy(region, "extend_aside", "feed_in_string", "feed")
        sent = [d for word in ("one", " two", " three", " four") for d in stream.feed(word)]
        # (the JSON string's chunks after the first are set aside by the stream itself, in the region's list)
        assert aside == ["feed_in_string"] and region.aside == [" two", " three", " four"], aside
        assert [d["tool_calls"][0] for d in sent] == [
            {"index": index, "function": {"arguments": word}} for word in ("one", " two", " three", " four")
        ]
        deltas += sent + stream.feed('"}}\n</tool_call>')
    last, reason = stream.finish()
    assert reason == "tool_calls" and [c["index"] for c in stream.calls] == [0, 1]
    for index in (0, 1):
        entries = [e for d in deltas + last for e in d.get("tool_calls", []) if e["index"] == index]
        arguments = "".join(e["function"]["arguments"] for e in entries)
        assert json.loads(arguments) == {"text": "one two three four"}


def test_the_name_is_sent_as_soon_as_the_open_pattern_completes() -> None:
    module = module_of("gpt_oss")
    stream = DeltaStream(module.ResponseParser(""))
    assert stream.feed("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>") == []
    header, fragment = stream.feed('{"ci')  # a regex open is committed one feed late (quirk Q19)
    assert header["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    assert fragment == {"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}
    assert stream.feed('ty"') == [{"tool_calls": [{"index": 0, "function": {"arguments": 'ty"'}}]}]


TYPED = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "properties": {"n": {"type": "integer"}, "s": {"type": "string"}, "l": {"type": "integer"}}
            },
        },
    }
]


def test_json_arguments_that_tools_cast_are_sent_cast() -> None:
    body = '<tool_call>{"name": "f", "arguments": {"s": "7", "n": "7", "l": ["1", "x"]}}</tool_call>'
    deltas, _, stream = _stream("smollm", list(body), tools=TYPED)
    fragments = [d["tool_calls"][0]["function"]["arguments"] for d in deltas[1:]]
    assert json.loads("".join(fragments)) == {"s": "7", "n": 7, "l": [1, "x"]}
    assert stream.message["tool_calls"][0]["function"]["arguments"] == {"s": "7", "n": 7, "l": [1, "x"]}
    # The raw text, except the members coercion casts: each held until complete, then sent cast.
    assert "".join(fragments) == '{"s": "7", "n": 7, "l": [1, "x"]}' and '[1, "x"]' in fragments


def test_xml_strings_stream_escaped_and_typed_values_complete() -> None:
    value = 'He said "hi"\n\tC:\\path é'
    body = f"<tool_call>\n<function=f>\n<parameter=s>\n{value}\n</parameter>\n<parameter=n>\n42\n</parameter>\n</function>\n</tool_call>"
    deltas, _, _ = _stream("serving_qwen3_5", list(body), tools=TYPED)
    fragments = [d["tool_calls"][0]["function"]["arguments"] for d in deltas[1:]]
    assert json.loads("".join(fragments)) == {"s": value, "n": 42}
    assert ', "n": 42' in fragments and sum('"s"' not in f and '"n"' not in f for f in fragments) > 5


def test_an_id_the_template_gives_is_the_call_id() -> None:
    text = '<actions batch=b1>[{"tool_call_id": "call_7", "fn": {"name": "f", "args": {"a": 1}}}]</actions>'
    deltas, reason, _ = _stream("feature_transform_each", [text[i : i + 4] for i in range(0, len(text), 4)])
    assert deltas[0]["tool_calls"][0]["id"] == "call_7" and reason == "tool_calls"


def test_prefix_events_come_with_the_first_feed() -> None:
    prompt = "<|im_start|>assistant\n<think>\nFirst"
    deltas, _, stream = _stream("serving_qwen3_5", [" idea</think>\n\nAnswer<|im_end|>"], prefix=prompt)
    assert deltas == [{"reasoning_content": "First idea"}, {"content": "Answer"}]
    assert stream.message["reasoning_content"] == "First idea"


def test_malformed_call_keeps_what_the_same_feed_produced_quirk_q6() -> None:
    module = module_of("smollm")
    stream = DeltaStream(module.ResponseParser(""))
    with pytest.raises(DeltaStreamError) as caught:
        stream.feed("<think>ok</think>Hi<tool_call>{bad}</tool_call>")
    error = caught.value
    assert error.reason == "malformed" and error.index is None and error.raw == "{bad}"
    assert error.deltas == [{"reasoning_content": "ok"}, {"content": "Hi"}]
    assert "json parser could not parse region as JSON" in str(error)
    with pytest.raises(RuntimeError):
        stream.finish()


def test_malformed_call_after_its_header_names_it() -> None:
    module = module_of("smollm")
    stream = DeltaStream(module.ResponseParser(""))
    sent = stream.feed('Hi <tool_call>{"name": "f", "arguments": {"a": 1}')
    assert [list(d) for d in sent] == [["content"], ["tool_calls"], ["tool_calls"]]
    with pytest.raises(DeltaStreamError) as caught:
        stream.feed(" oops}</tool_call>")
    assert caught.value.reason == "malformed" and caught.value.index == 0


def test_cut_off_calls_are_reported_at_finish() -> None:
    module = module_of("smollm")
    stream = DeltaStream(module.ResponseParser(""))
    assert _text(stream.feed('Hi<tool_call>{"name": "f", "arguments": {"a": '), "content") == "Hi"
    with pytest.raises(DeltaStreamError) as caught:
        stream.finish()
    assert caught.value.reason == "cut_off" and caught.value.index == 0
    stream = DeltaStream(module_of("serving_qwen3_5").ResponseParser(""))
    stream.feed("<tool_call>\n<function=f>\n<parameter=a>\nhalf a sent")
    with pytest.raises(DeltaStreamError) as caught:
        stream.finish()
    assert caught.value.reason == "cut_off" and caught.value.index == 0 and caught.value.deltas == []
    # A call the stream ends inside but whose body is whole is an ordinary call (gpt-oss drops <|call|>).
    deltas, reason, _ = _stream("gpt_oss", ['<|channel|>commentary to=functions.f<|message|>{"a": 1}'])
    assert reason == "tool_calls" and json.loads(deltas[1]["tool_calls"][0]["function"]["arguments"]) == {
        "a": 1
    }


def test_parser_errors_outside_calls_keep_the_text() -> None:
    module = module_of("feature_int_float_bool")
    stream = DeltaStream(module.ResponseParser(""))
    with pytest.raises(DeltaStreamError) as caught:
        stream.feed("Some text<count>many</count>")
    assert caught.value.reason == "parser" and caught.value.deltas == [{"content": "Some text"}]


def test_the_template_is_found_or_asked_for() -> None:
    module = respc.compile_template(TEMPLATES["smollm"])
    assert template_of(module.ResponseParser("")) is module.TEMPLATE
    assert template_of(respc.ResponseParser(TEMPLATES["smollm"], "")) == TEMPLATES["smollm"]
    if PRESETS:
        preset = respc.load_preset(PRESETS[0])
        assert template_of(preset.ResponseParser("")) is preset.TEMPLATE
    from transformers.utils.chat_parsing import ResponseParser as OracleParser

    with pytest.raises(TypeError, match="template="):
        DeltaStream(OracleParser(TEMPLATES["smollm"], ""))


def test_a_parser_class_has_its_template_read_once_and_not_kept_alive() -> None:
    import gc
    import weakref

    from respc._compile import load_module
    from respc.serving.deltas import _LAYOUTS

    # (compile_template keeps its modules for the process; a module loaded from source is collectable)
    module = load_module(respc.generate_source(TEMPLATES["qwen3"]), "<layout test>")
    first = DeltaStream(module.ResponseParser(""))
    assert DeltaStream(module.ResponseParser(""))._shape is first._shape  # read once, for the class
    assert DeltaStream(module.ResponseParser(""), target="5.23")._shape is not first._shape
    kept = weakref.ref(module.ResponseParser)
    assert kept() in _LAYOUTS
    del module, first
    gc.collect()
    assert kept() is None


def test_finish_reason_and_lifecycle() -> None:
    deltas, reason, stream = _stream("smollm", ["Just text."])
    assert deltas == [{"content": "Just text."}] and reason == "stop" and stream.calls == []
    with pytest.raises(RuntimeError, match="finished"):
        stream.feed("more")


def test_a_parameter_its_region_cuts_short_is_a_mismatch() -> None:
    text = "<tool_call>\n<function=echo>\n<parameter=text>\nsee </tool_call> here</parameter>"
    split = text.index("see") + 3
    stream = DeltaStream(module_of("qwen3").ResponseParser(""))
    assert stream.feed(text[:split])[-1] == {
        "tool_calls": [{"index": 0, "function": {"arguments": '{"text": "see'}}]
    }
    with pytest.raises(DeltaStreamError) as caught:
        stream.feed(text[split:] + "<think>after</think>")
    # The parser drops the unterminated parameter; the string already sent cannot be taken back.
    assert caught.value.reason == "mismatch" and caught.value.index == 0 and caught.value.raw.endswith("see ")
    assert caught.value.deltas == [{"reasoning_content": "after"}]


@st.composite
def dialect_calls(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["name", '"name"', " name "]))
    arguments = draw(st.sampled_from(["arguments", '"arguments"', "arguments "]))
    return "{" + f'{name}:{draw(SPACES)}"f",{draw(SPACES)}{arguments}:{draw(dialect_objects())}' + "}"


@pytest.mark.parametrize("target", ["5.23", "5.24"])
def test_json_dialect_arguments_stream_as_each_release_parses(target: str) -> None:
    """Bare keys (with spaces around them in 5.24) and key-like text inside strings (rewritten by 5.23,
    left alone by 5.24): the streamed arguments always complete to the final ones, whatever the release."""
    template = {
        "start_anchor": "S",
        "fields": {
            "content": {},
            "tool_calls": {
                "open": "<t>",
                "close": "</t>",
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [["<|", "|>"]]},
                "repeats": True,
                "transform": {"type": "function", "function": "{content}"},
            },
        },
    }
    module = respc.compile_template(template, target=target)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        body=st.one_of(
            dialect_calls(),
            st.sampled_from(
                [
                    '{ name : "f", arguments: { city: "a,b: c", note: "x\\\\"y,k:1" } }',
                    '{name:"f", arguments:{city:<|Paris, b: c|>, n :1}}',
                    '{"name": "f", "arguments": {"q": "{a:1}"}}',
                ]
            ),
        ),
        cuts=st.lists(st.integers(1, 12), max_size=8),
    )
    def check(body: str, cuts: list[int]) -> None:
        text = f"Hi<t>{body}</t>"
        chunks, at = [], 0
        for cut in cuts:
            chunks.append(text[at : at + cut])
            at += cut
        chunks.append(text[at:])
        check_stream(template, lambda: module.ResponseParser(""), chunks)

    check()


def test_a_call_whose_arguments_wait_for_its_region_holds_back_the_next() -> None:
    """Each call's deltas come before the next call's: an item without arguments (filled by the
    transform when the region closes) keeps the calls after it waiting until then."""
    template = {
        "start_anchor": "A:",
        "fields": {
            "content": {},
            "tool_calls": {
                "open": "<calls>",
                "close": "</calls>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": "{function}"},
            },
        },
    }
    module = respc.compile_template(template)
    text = (
        'hi<calls>[{"function": {"name": "a"}}, {"function": {"name": "b", "arguments": {"x": 1}}}, '
        '{"function": {"name": "c"}}]</calls>'
    )
    split = text.index('"x"')
    stream = DeltaStream(module.ResponseParser(""), new_id=lambda: "call_1")
    early = stream.feed(text[:split])
    assert [d.get("tool_calls", [{}])[0].get("index") for d in early] == [None, 0]  # b waits for a
    deltas = early + stream.feed(text[split:]) + stream.finish()[0]
    assert [(d["tool_calls"][0]["index"], d["tool_calls"][0]["function"]) for d in deltas[2:]] == [
        (0, {"arguments": "{}"}),
        (1, {"name": "b", "arguments": ""}),
        (1, {"arguments": '{"x": 1}'}),
        (2, {"name": "c", "arguments": ""}),
        (2, {"arguments": "{}"}),
    ]
    assert check_stream(template, lambda: module.ResponseParser(""), list(text)) == "ok"


def test_a_greedy_xml_value_is_sent_only_when_certain() -> None:
    # TRL's LFM2.5 template: `x=[1, 2]` values match `'...'|[...]|[^,)]*`, which is not lazy. With `x=[1, `
    # in one feed the match so far is `[1` (the bracket alternative is still open): sending it would
    # contradict the final `[1, 2]`. transformers parses the same feeds to the right message.
    from transformers.utils.chat_parsing import ResponseParser as OracleParser

    template = json.loads(
        (Path(__file__).parents[1] / "fixtures" / "serving" / "trl_lfm2_5.json").read_text()
    )
    module, prefix = respc.compile_template(template), "<|im_start|>assistant\n"
    chunks = ["<think>ok</think>", "<|tool_call_start|>[f(", "x=[1, ", "2], y='a", " b')]<|tool_call_end|>"]
    chunks.append("Done.<|im_end|>")
    for parser in (module.ResponseParser(prefix), OracleParser(template, prefix)):
        assert check_stream(template, lambda parser=parser: copy.deepcopy(parser), chunks) == "ok"
    stream = DeltaStream(module.ResponseParser(prefix))
    deltas = [d for chunk in chunks for d in stream.feed(chunk)] + stream.finish()[0]
    _, calls = collect_deltas(deltas)
    assert [json.loads(call["arguments"]) for call in calls] == [{"x": [1, 2], "y": "a b"}]
    assert stream.message == module.parse_response("".join(chunks), prefix=prefix)
