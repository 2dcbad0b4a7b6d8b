"""The plugin inside the real vLLM, in process: loaded through vLLM's plugin loader, chosen by vLLM's own
`ParserManager.get_parser`, fed deltas from vLLM's own detokenizer over tokenizers trained here.

For every preset's realistic outputs, per token and in random groups of tokens, the streamed message and
`parse()` equal what transformers 5.24.0 makes of them (recorded in tests/fixtures/vllm_expected.json,
checked fresh by the normal suite). vLLM's `hf` parser runs beside it on the same deltas; how it differs
is summarised at the end of the run.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer
from vllm_support import (
    HF_RESULTS,
    PRESETS,
    REASONING_FIELDS,
    cases,
    message_calls,
    pieces,
    preset_model,
    reasoning_of,
    same_arguments,
    stream,
    token_texts,
    train_tokenizer,
    vllm_tokenizer,
    write_model_dir,
)

import respc
from respc.integrations.template import TARGET_ENV, TEMPLATE_ENV

pytest.importorskip("vllm.parser.parser_manager", reason="vLLM is not installed here")


@pytest.fixture(scope="session", autouse=True)
def plugins() -> None:
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # as every vLLM process does: the entry point registers respc


def _parser_class(tokenizer: Any, name: str = "respc", *, tools: bool = True, reasoning: bool = True) -> Any:
    from vllm.parser.parser_manager import ParserManager

    return ParserManager.get_parser(
        tool_parser_name=name if tools else None,
        reasoning_parser_name=name if reasoning else None,
        enable_auto_tools=tools,
        model_name="test-model",
        tokenizer=tokenizer,
    )


def _request(tools: list | None, **extra: Any) -> Any:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest(
        model="test-model", messages=[{"role": "user", "content": "hi"}], tools=tools, stream=True, **extra
    )


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {preset: preset_model(root, preset) for preset in PRESETS}


def _run(
    parser_cls: Any, tokenizer: Any, sample: dict, tools: list | None, rng: random.Random | None, **extra: Any
) -> Any:
    request = _request(tools, **extra)
    parser = parser_cls(tokenizer, request.tools)
    request = parser.adjust_request(request)
    assert request.skip_special_tokens is False
    prompt_ids = tokenizer.encode(sample["prefix"], add_special_tokens=False)
    ids = tokenizer.encode(sample["text"], add_special_tokens=False)
    texts = token_texts(tokenizer, prompt_ids, ids)
    assert "".join(texts) == sample["text"], "the trained tokenizer round-trips the sample"
    return stream(parser, request, prompt_ids, pieces(texts, ids, rng)), parser, request, ids


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_streams_and_parses_as_transformers(preset: str, models: dict[str, Path]) -> None:
    tokenizer = vllm_tokenizer(models[preset])
    parser_cls = _parser_class(tokenizer)
    for number, (sample, expected) in enumerate(cases(preset)):
        for rng in (None, random.Random(number), random.Random(1000 + number)):
            got, parser, request, ids = _run(parser_cls, tokenizer, sample, expected["tools"], rng)
            again = parser_cls(tokenizer, request.tools)
            again.set_prompt_token_ids(tokenizer.encode(sample["prefix"], add_special_tokens=False))
            reasoning, content, calls = again.parse(sample["text"], request, enable_auto_tools=True)
            where = (preset, sample["note"], "per token" if rng is None else "random groups")
            if "error" in expected:  # transformers rejects the output: the request still completes
                assert [c["name"] for c in got.calls] == [c.name for c in calls or []], where
                continue
            message = expected["message"]
            assert (got.reasoning, got.content) == (
                expected["stream"]["reasoning"],
                expected["stream"]["content"],
            )
            assert (reasoning, content) == (reasoning_of(message), message.get("content")), where
            wanted = message_calls(message)
            assert [c["name"] for c in got.calls] == [name for name, _ in wanted], where
            assert [c.name for c in calls or []] == [name for name, _ in wanted], where
            for call, fragments, (_, arguments) in zip(calls or [], got.calls, wanted):
                assert same_arguments(fragments["arguments"], arguments), (where, fragments)
                assert same_arguments(call.arguments, arguments), (where, call)
                assert fragments["id"] and call.id, where
            assert parser.count_reasoning_tokens(ids) == again.count_reasoning_tokens(ids), where
            if rng is None:
                _compare_hf(preset, sample, expected, models[preset])


def _compare_hf(preset: str, sample: dict, expected: dict, model: Path) -> None:
    """How vLLM's own `hf` parser does on the same per-token deltas: with `--reasoning-parser hf` when the
    template has reasoning, as shipped, else with its reasoning field renamed `thinking` (hf's only name)."""
    template = respc.load_preset(preset).TEMPLATE
    reasoning = [name for name in template["fields"] if name in REASONING_FIELDS]
    tokenizer = vllm_tokenizer(model)
    try:
        parser_cls = _parser_class(tokenizer, "hf", reasoning=bool(reasoning))
        shipped = "as shipped"
    except TypeError as shipped_error:
        if not reasoning:
            HF_RESULTS.append((preset, sample["note"], f"refused: {_why(shipped_error)}"))
            return
        renamed = json.loads(json.dumps(template).replace(f'"{reasoning[0]}":', '"thinking":', 1))
        directory = model.parent.parent / "hf" / preset
        if not directory.is_dir():
            tokenizer_json = Tokenizer.from_file(str(model / "tokenizer.json"))
            write_model_dir(directory, tokenizer_json, response_template=renamed)
        tokenizer = vllm_tokenizer(directory)
        try:
            parser_cls = _parser_class(tokenizer, "hf")
        except TypeError as error:
            HF_RESULTS.append((preset, sample["note"], f"refused: {_why(error)}"))
            return
        shipped = "renamed"
    try:
        got, _, _, _ = _run(parser_cls, tokenizer, sample, expected["tools"], None)
    except Exception as error:
        HF_RESULTS.append((preset, sample["note"], f"{shipped}: raised {type(error).__name__}"))
        return
    wanted = message_calls(expected["message"])
    kinds = []
    if [c["name"] for c in got.calls] != [name for name, _ in wanted]:
        kinds.append(f"calls: {len(got.calls)} of {len(wanted)} sent")
    elif not all(same_arguments(c["arguments"], a) for c, (_, a) in zip(got.calls, wanted)):
        kinds.append("arguments differ")
    for key, sent in (("reasoning", got.reasoning), ("content", got.content)):
        want = expected["stream"][key]
        if sent != want:
            kinds.append(f"{key} whitespace" if sent.strip() == want.strip() else f"{key} differs")
    HF_RESULTS.append((preset, sample["note"], f"{shipped}: {'; '.join(kinds) or 'equal'}"))


def _why(error: Exception) -> str:
    return str(error).split(": ", 1)[-1].split(". Supported")[0][:100]


def test_the_template_comes_from_detection_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No response_template in the tokenizer: the preset the chat template shows, else RESPC_TEMPLATE."""
    sample, _ = cases("qwen3_5")[0]
    tokenizer = train_tokenizer([sample["prefix"], sample["text"]], ["<think>", "</think>", "<tool_call>"])
    qwen_chat = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    qwen_chat += "<tool_call>\n<function=name>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>"
    detected = write_model_dir(tmp_path / "detected", tokenizer, chat_template=qwen_chat)
    served = _parser_class(vllm_tokenizer(detected))(vllm_tokenizer(detected)).served
    assert served.preset == "qwen3_5" and "chat template" in served.origin

    bare = write_model_dir(tmp_path / "bare", tokenizer, model_type="no_such_family")
    with pytest.raises(TypeError, match=f"no shipped preset detected.*set {TEMPLATE_ENV}") as caught:
        _parser_class(vllm_tokenizer(bare))
    assert "\n" not in str(caught.value)
    monkeypatch.setenv(TEMPLATE_ENV, "smollm3")
    assert _parser_class(vllm_tokenizer(bare))(vllm_tokenizer(bare)).served.preset == "smollm3"
    template_file = tmp_path / "template.json"
    template_file.write_text(json.dumps(respc.load_preset("qwen3").TEMPLATE))
    monkeypatch.setenv(TEMPLATE_ENV, str(template_file))
    served = _parser_class(vllm_tokenizer(bare))(vllm_tokenizer(bare)).served
    assert served.template == respc.load_preset("qwen3").TEMPLATE and served.preset is None
    monkeypatch.setenv(TARGET_ENV, "5.23")
    assert _parser_class(vllm_tokenizer(bare))(vllm_tokenizer(bare)).served.target == "5.23"
    monkeypatch.setenv(TARGET_ENV, "4.0")
    with pytest.raises(TypeError, match=f"{TARGET_ENV}=4.0"):
        _parser_class(vllm_tokenizer(bare))
    monkeypatch.delenv(TARGET_ENV)
    template_file.write_text(json.dumps({"fields": {"content": {"content": "nonsense"}}}))
    with pytest.raises(TypeError, match="cannot compile the template"):
        _parser_class(vllm_tokenizer(bare))


def test_hf_refuses_what_respc_serves(models: dict[str, Path]) -> None:
    """A reasoning_content template (every preset's name for it): vLLM's hf refuses it at start-up."""
    tokenizer = vllm_tokenizer(models["qwen3"])
    with pytest.raises(TypeError, match="unsupported semantic fields"):
        _parser_class(tokenizer, "hf")
    assert _parser_class(tokenizer) is not None
    with pytest.raises(TypeError, match="cannot be combined"):
        from vllm.parser.parser_manager import ParserManager

        ParserManager.get_parser(
            tool_parser_name="respc",
            reasoning_parser_name="qwen3",
            enable_auto_tools=True,
            tokenizer=tokenizer,
        )


def _qwen3(models: dict[str, Path], text: str, tools: list | None, **extra: Any) -> tuple:
    tokenizer = vllm_tokenizer(models["qwen3"])
    parser_cls = _parser_class(tokenizer)
    prefix = "<|im_start|>assistant\n"
    sample = {"prefix": prefix, "text": text}
    got, _, request, _ = _run(parser_cls, tokenizer, sample, tools, None, **extra)
    again = parser_cls(tokenizer, request.tools)
    again.set_prompt_token_ids(tokenizer.encode(prefix, add_special_tokens=False))
    return got, again.parse(text, request), parser_cls, tokenizer


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


def test_without_tools_a_call_stays_text(models: dict[str, Path]) -> None:
    text = f"<think>hm</think>Let me look.\n{CALL}<|im_end|>"
    for tools, extra in ((None, {}), (TOOLS, {"tool_choice": "none"})):
        got, (reasoning, content, calls), _, _ = _qwen3(models, text, tools, **extra)
        assert got.calls == [] and calls is None
        assert got.reasoning == reasoning == "hm"
        assert got.content == content == f"Let me look.\n{CALL}", extra
    got, (_, content, calls), _, _ = _qwen3(models, text, TOOLS)
    assert [c["name"] for c in got.calls] == [c.name for c in calls] == ["get_weather"]
    assert json.loads(got.calls[0]["arguments"]) == {"city": "Oslo"} and content == "Let me look."


def test_arguments_stream_before_the_call_closes(models: dict[str, Path]) -> None:
    tokenizer = vllm_tokenizer(models["qwen3"])
    parser_cls = _parser_class(tokenizer)
    request = _request(TOOLS)
    parser = parser_cls(tokenizer, request.tools)
    request = parser.adjust_request(request)
    prompt = tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False)
    ids = tokenizer.encode(CALL, add_special_tokens=False)
    texts = token_texts(tokenizer, prompt, ids)
    fragments = []
    for at, (text, token) in enumerate(zip(texts, ids)):
        delta = parser.parse_delta(
            text, [token], request, prompt_token_ids=prompt, finished=at == len(ids) - 1
        )
        for call in delta.tool_calls if delta else ():
            fragments.append((at, call.id is not None, call.function.arguments))
    close = next(at for at in range(len(ids)) if "".join(texts[: at + 1]).endswith("</tool_call>"))
    assert fragments[0][1] and fragments[0][0] < close  # the header first, before the call closes
    assert sum(1 for at, header, args in fragments if args and at < close) > 3  # several fragments
    assert json.loads("".join(args for _, _, args in fragments)) == {"city": "Oslo"}


def test_a_malformed_call_loses_nothing(models: dict[str, Path]) -> None:
    broken = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo",,}}\n</tool_call>'
    got, (_, content, calls), _, _ = _qwen3(models, f"Checking.\n{broken}<|im_end|>", TOOLS)
    body = broken.removeprefix("<tool_call>").removesuffix("</tool_call>")
    assert calls is None and content == "Checking." + body  # transformers would raise: the text stays
    assert got.content == "Checking." + body and [c["name"] for c in got.calls] == ["get_weather"]
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os'  # max_tokens ran out
    got, (_, content, calls), _, _ = _qwen3(models, cut, TOOLS)
    assert calls is None and content == cut.removeprefix("<tool_call>")
    assert got.calls[0]["arguments"] == '{"city": "Os' and got.content == cut.removeprefix("<tool_call>")


def test_forced_tool_choice_and_strict_tools_are_refused(models: dict[str, Path]) -> None:
    from vllm.exceptions import VLLMValidationError

    tokenizer = vllm_tokenizer(models["qwen3"])
    parser_cls = _parser_class(tokenizer)
    strict = [{"type": "function", "function": {**TOOLS[0]["function"], "strict": True}}]
    named = {"type": "function", "function": {"name": "get_weather"}}
    for tools, choice, parameter in ((TOOLS, "required", "tool_choice"), (TOOLS, named, "tool_choice"),
                                     (strict, "auto", "tools")):  # fmt: skip
        request = _request(tools, tool_choice=choice)
        with pytest.raises(VLLMValidationError, match="cannot guarantee") as caught:
            parser_cls(tokenizer, request.tools).adjust_request(request)
        assert caught.value.parameter == parameter
    request = _request(TOOLS, parallel_tool_calls=False)
    assert parser_cls(tokenizer, request.tools).adjust_request(request) is request


def test_reasoning_end_for_the_structured_output_gate(models: dict[str, Path]) -> None:
    from vllm.reasoning import ReasoningParserManager

    tokenizer = vllm_tokenizer(models["qwen3"])
    reasoner_cls = ReasoningParserManager.get_reasoning_parser("respc")

    def ended(prompt: str, **kwargs: Any) -> bool:
        return reasoner_cls(tokenizer=tokenizer, **kwargs).is_reasoning_end(tokenizer.encode(prompt))

    turn = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert not ended(turn + "<think>\n")  # the prompt opened reasoning
    assert ended(turn + "<think>\n\n</think>\n\n")  # the prompt closed it (enable_thinking=False)
    assert not ended(turn)  # reasoning may still come
    assert ended(turn, chat_template_kwargs={"enable_thinking": False})
    reasoner = reasoner_cls(tokenizer=tokenizer)
    ids = tokenizer.encode(turn + "<think>\nso</think>ok")
    end = ids.index(tokenizer.convert_tokens_to_ids("</think>"))
    assert reasoner.is_reasoning_end_streaming(ids[: end + 1], ids[end : end + 1])
    assert not reasoner.is_reasoning_end_streaming(ids[:end], ids[end - 1 : end])
    parser = _parser_class(tokenizer)(tokenizer)
    assert parser.is_reasoning_end(tokenizer.encode(turn + "<think>\n\n</think>\n\n"))


def test_reasoning_tokens_are_counted(models: dict[str, Path]) -> None:
    text = "<think>one two three four</think>The answer.<|im_end|>"
    _, _, parser_cls, tokenizer = _qwen3(models, text, TOOLS)
    ids = tokenizer.encode(text, add_special_tokens=False)
    inside = tokenizer.encode("one two three four", add_special_tokens=False)
    fresh = parser_cls(tokenizer)
    fresh.set_prompt_token_ids(tokenizer.encode("<|im_start|>assistant\n", add_special_tokens=False))
    assert fresh.count_reasoning_tokens(ids) == len(inside)
    assert _parser_class(tokenizer, tools=True, reasoning=False)(tokenizer).count_reasoning_tokens(ids) == 0


def test_without_the_reasoning_parser_reasoning_stays_content(models: dict[str, Path]) -> None:
    tokenizer = vllm_tokenizer(models["qwen3"])
    parser_cls = _parser_class(tokenizer, reasoning=False)
    sample = {"prefix": "<|im_start|>assistant\n", "text": "<think>hm</think>Hello.<|im_end|>"}
    got, _, _, _ = _run(parser_cls, tokenizer, sample, TOOLS, None)
    assert (got.reasoning, got.content) == ("", "<think>hm</think>Hello.")
    assert _parser_class(tokenizer, tools=False, reasoning=False) is None
