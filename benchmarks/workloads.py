"""Workloads shared by the benchmarks: realistic responses of a given size for each template shape."""

from __future__ import annotations

import json
import random
from pathlib import Path

TEMPLATES_DIR = Path(__file__).parent.parent / "tests" / "fixtures" / "templates"
PRESETS_DIR = Path(__file__).parent.parent / "respc" / "presets"
WORDS = (
    "the user asks about weather in Paris so I should call the tool and then summarise the forecast "
    "carefully with temperatures wind and rain probability for each day of the week"
).split()
QWEN_CALL = (
    "\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
)
# name -> (template file, builder(reasoning, answer) -> response text)
SHAPES = {
    "smollm": (
        "smollm",
        lambda r, a: f'<think>{r}</think>{a}<tool_call>{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}</tool_call><|im_end|>',
    ),
    "qwen3_5": ("serving_qwen3_5", lambda r, a: f"<think>{r}</think>\n\n{a}{QWEN_CALL}<|im_end|>"),
    "gpt_oss": (
        "gpt_oss",
        lambda r, a: f"<|channel|>analysis<|message|>{r}<|end|><|start|>assistant<|channel|>final<|message|>{a}<|end|>"
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
    ),
    "gemma4": (
        "gemma4",
        lambda r, a: f'<|channel>thought\n{r}<channel|>{a}<|tool_call>call:get_weather{{city:<|"|>Paris<|"|>}}<tool_call|><|tool_response>',
    ),
    # Pythonic calls (transformers 5.24's python-call-list): the shipped LFM2 preset, calls amid text.
    "lfm2": (
        "preset:lfm2",
        lambda r, a: f"<think>{r}</think>{a[: len(a) // 2]}<|tool_call_start|>[get_weather(city='Paris', "
        f'days=3), search(query="forecast", limit=5)]<|tool_call_end|>{a[len(a) // 2 :]}<|im_end|>',
    ),
}
SIZES = (1_000, 10_000, 100_000, 1_000_000)


def template(shape: str) -> dict:
    name = SHAPES[shape][0]
    path = PRESETS_DIR / f"{name[7:]}.json" if name.startswith("preset:") else TEMPLATES_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def prose(size: int, seed: int) -> str:
    rng = random.Random(seed)
    out, length = [], 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
        if rng.random() < 0.05:
            out.append("\n")
    return " ".join(out)[:size]


def response(shape: str, size: int, seed: int = 0) -> str:
    """A response of about `size` characters: two thirds reasoning, one third answer, one tool call."""
    return SHAPES[shape][1](prose(size * 2 // 3, seed), prose(size // 3, seed + 1))


def chunks_of(text: str, width: int = 4) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]
