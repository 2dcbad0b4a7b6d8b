"""End to end: `vllm serve` of a tiny random-weight model with the plugin, its output forced by a regex, read
through the official openai client's streaming helpers: reasoning, content and two tool calls whose
arguments arrive in fragments while each call is generated. One server, on loopback, stopped here."""

from __future__ import annotations

import json

import openai
import pytest
from serving_case import ANSWER, QUESTION, TOOLS, build, check_message
from vllm_support import Server, regex_literal

pytest.importorskip("vllm.parser.parser_manager", reason="vLLM is not installed here")

FORCED = {"structured_outputs": {"regex": regex_literal(ANSWER)}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    root = tmp_path_factory.mktemp("serve")
    model = build(root / "tiny")
    args = [
        "serve",
        str(model),
        "--served-model-name",
        "tiny",
        "--dtype",
        "float32",
        "--max-model-len",
        "512",
    ]
    args += ["--enforce-eager", "--max-num-seqs", "2", "--enable-auto-tool-choice"]
    args += ["--tool-call-parser", "respc", "--reasoning-parser", "respc"]
    args += ["--structured-outputs-config", json.dumps({"enable_in_reasoning": True})]
    with Server(args, root / "serve.log") as running:
        yield running


def _client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="-", max_retries=0, timeout=120)


def test_streamed_through_the_openai_stream_helpers(server: Server) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    reasoning, fragments, order = "", {}, []
    with _client(server).chat.completions.stream(
        model="tiny",
        messages=messages,
        tools=TOOLS,
        max_tokens=300,
        temperature=0,
        stream_options={"include_usage": True},
        extra_body=FORCED,
    ) as stream:
        for event in stream:
            if event.type == "chunk" and event.chunk.choices:
                reasoning += (event.chunk.choices[0].delta.model_extra or {}).get("reasoning") or ""
                for call in event.chunk.choices[0].delta.tool_calls or ():
                    order.append((call.index, "header" if call.id else "arguments"))
            elif event.type == "tool_calls.function.arguments.delta" and event.arguments_delta:
                fragments.setdefault(event.index, []).append(event.arguments_delta)
        final = stream.get_final_completion()
        usage = final.usage
    message = final.choices[0].message
    check_message(
        reasoning, message.content, [(c.function.name, c.function.arguments) for c in message.tool_calls]
    )
    assert final.choices[0].finish_reason == "tool_calls"
    assert [json.loads("".join(fragments[i])) for i in sorted(fragments)] == [
        json.loads(c.function.arguments) for c in message.tool_calls
    ]
    # Arguments stream while the call is generated: several fragments per call, the first call's all before
    # the second call's header (vLLM's hf sends each call's arguments in one piece when it closes).
    assert all(len(fragments[i]) > 3 for i in fragments), fragments
    second = order.index((1, "header"))
    assert sum(1 for entry in order[:second] if entry == (0, "arguments")) == len(fragments[0])
    assert usage.completion_tokens_details.reasoning_tokens > 0


def test_not_streamed(server: Server) -> None:
    reply = _client(server).chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": QUESTION}],
        tools=TOOLS,
        max_tokens=300,
        temperature=0,
        extra_body=FORCED,
    )
    message = reply.choices[0].message
    check_message(
        (message.model_extra or {}).get("reasoning"),
        message.content,
        [(c.function.name, c.function.arguments) for c in message.tool_calls],
    )


def test_a_forced_tool_choice_is_refused_with_a_400(server: Server) -> None:
    with pytest.raises(openai.BadRequestError, match="cannot guarantee"):
        _client(server).chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": QUESTION}],
            tools=TOOLS,
            tool_choice="required",
            max_tokens=5,
        )
