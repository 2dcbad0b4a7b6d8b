"""The answer the server tests force out of the tiny model, and what transformers 5.24 makes of it (the
qwen3 preset's template: reasoning, content and two tool calls; vLLM's hf parser refuses the template)."""

from __future__ import annotations

from pathlib import Path

from vllm_support import CHATML, tiny_model

import respc

TEMPLATE = respc.load_preset("qwen3").TEMPLATE
QUESTION = "Weather in Paris and Oslo?"
CALLS = [
    ("get_weather", {"city": "Paris", "unit": "celsius"}),
    ("get_weather", {"city": "Oslo", "unit": "celsius"}),
]
ANSWER = "<think>Two cities, two calls.</think>I will check both.\n" + "\n".join(
    f'<tool_call>\n{{"name": "{name}", "arguments": {{"city": "{args["city"]}", "unit": "celsius"}}}}\n</tool_call>'
    for name, args in CALLS
)
REASONING, CONTENT = "Two cities, two calls.", "I will check both."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
PROMPT = f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"


def build(directory: Path) -> Path:
    assert CHATML  # the chat template the prompt above is rendered with
    return tiny_model(directory, [PROMPT + ANSWER] * 4, TEMPLATE)


def check_message(reasoning: str | None, content: str | None, calls: list[tuple[str, str]]) -> None:
    import json

    assert (reasoning, content) == (REASONING, CONTENT)
    assert [(name, json.loads(arguments)) for name, arguments in calls] == CALLS
