"""Over HTTP, without an engine: `vllm launch render` with the plugin renders a chat request to prompt token
ids and derenders generated token ids into the message, whole and streamed one token per call (the
client carries the stream state, as vLLM's disaggregated serving does). One server, on loopback."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from serving_case import ANSWER, PROMPT, QUESTION, TOOLS, build, check_message
from tokenizers import Tokenizer
from vllm_support import Server

pytest.importorskip("vllm.parser.parser_manager", reason="vLLM is not installed here")

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> tuple[Server, Path]:
    root = tmp_path_factory.mktemp("render")
    model = build(root / "tiny")
    args = ["launch", "render", str(model), "--served-model-name", "tiny", "--max-model-len", "512"]
    args += ["--enable-auto-tool-choice", "--tool-call-parser", "respc", "--reasoning-parser", "respc"]
    with Server(args, root / "render.log") as running:
        yield running, model


def _post(server: Server, path: str, body: dict) -> Any:
    request = urllib.request.Request(
        server.url + path, json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


def test_render_then_derender(server: tuple[Server, Path]) -> None:
    running, model = server
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    rendered = _post(running, "/v1/chat/completions/render", CHAT)
    prompt_ids = rendered["token_ids"]
    assert tokenizer.decode(prompt_ids, skip_special_tokens=False) == PROMPT
    ids = tokenizer.encode(ANSWER, add_special_tokens=False).ids
    whole = _post(
        running,
        "/v1/chat/completions/derender",
        {
            "generate_response": {"choices": [{"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
            "prompt_token_ids": prompt_ids,
            "chat_request": CHAT,
        },
    )
    message = whole["choices"][0]["message"]
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
    check_message(message.get("reasoning"), message["content"], calls)

    state, reasoning, content, fragments = None, "", "", {}
    for at, token in enumerate(ids):
        last = at == len(ids) - 1
        reply = _post(
            running,
            "/v1/chat/completions/derender",
            {
                "stream": True,
                "generate_chunk": {
                    "choices": [{"index": 0, "token_ids": [token], "finish_reason": "stop" if last else None}]
                },
                "stream_state": state,
                "prompt_token_ids": prompt_ids,
                "chat_request": CHAT,
            },
        )
        state = reply["stream_state"]
        for choice in (reply["chunk"] or {}).get("choices", ()):
            delta = choice["delta"]
            reasoning += delta.get("reasoning") or ""
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or ():
                entry = fragments.setdefault(call["index"], {"name": "", "arguments": []})
                entry["name"] += (call.get("function") or {}).get("name") or ""
                entry["arguments"].append((call.get("function") or {}).get("arguments") or "")
    calls = [(fragments[i]["name"], "".join(fragments[i]["arguments"])) for i in sorted(fragments)]
    check_message(reasoning, content, calls)
    assert all(sum(1 for a in fragments[i]["arguments"] if a) > 3 for i in fragments)
