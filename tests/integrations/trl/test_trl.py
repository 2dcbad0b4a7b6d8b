"""TRL's rollout parsing with and without `respc.accelerate`: `trl.chat_template_utils.parse_response(tokenizer,
ids, prefix=prompt_ids, tools=tools)` after `add_response_schema`, on every TRL template family.

Each family's tokenizer is a model directory built here: TRL's own chat template, a BPE tokenizer trained on
conversations that template renders (its tags as special tokens), loaded with `AutoTokenizer`. Rollouts are
the assistant turns the template renders after the prompt (plain, reasoning, tool calls), cut short at
several lengths (`max_completion_length`), and with their tool calls broken (TRL falls back to the decoded
text where parsing raises); tools are given as JSON schemas and as Python functions.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import transformers
from support.models import trained_tokenizer, word_tokenizer
from transformers import AutoTokenizer
from trl import chat_template_utils as trl_templates

import respc
from respc.integrations.transformers import acceleration_of

# family -> (TRL's chat template variable, bos token, eos token)
FAMILIES = {
    "qwen3": ("qwen3_chat_template", None, "<|im_end|>"),
    "qwen3_5": ("qwen3_5_think_chat_template", None, "<|im_end|>"),
    "glm4moe": ("glm4moe_chat_template", None, "<|user|>"),
    "llama3": ("llama3_1_chat_template", "<|begin_of_text|>", "<|eot_id|>"),
    "gptoss": ("gptoss_chat_template", "<|startoftext|>", "<|return|>"),
    "lfm2_2_5": ("lfm2_2_5_chat_template", "<|startoftext|>", "<|im_end|>"),
    "nemotron_3": ("nemotron_3_nano_chat_template", None, "<|im_end|>"),
    "gemma4": ("gemma4_chat_template", "<bos>", "<turn|>"),
    "deepseek_r1_distill": (
        "deepseek_r1_distill_chat_template",
        "<｜begin▁of▁sentence｜>",
        "<｜end▁of▁sentence｜>",
    ),
}

TOOLS_SOURCE = '''
def get_weather(city: str, days: int):
    """The weather forecast for a city.

    Args:
        city: The city's name.
        days: How many days ahead.
    """


def multiply(a: int, b: float):
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
'''
NAMESPACE: dict[str, Any] = {}
exec(TOOLS_SOURCE, NAMESPACE)
FUNCTIONS = [NAMESPACE["get_weather"], NAMESPACE["multiply"]]
SCHEMAS = [transformers.utils.get_json_schema(function) for function in FUNCTIONS]

REASONING = "The user wants Zürich's weather 🌦️ and 6 × 7; call the tools."
PROMPT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Weather in Zürich for 3 days? And what is 6 × 7.5?"},
]
CALLS = [
    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 3}}},
    {"type": "function", "function": {"name": "multiply", "arguments": {"a": 6, "b": 7.5}}},
]
THINKING = {"reasoning_content": REASONING, "thinking": REASONING, "reasoning": REASONING}
ASSISTANT_TURNS = [
    {"role": "assistant", "content": "Sunny, 21 °C all week. 6 × 7.5 = 45."},
    {"role": "assistant", **THINKING, "content": "It is 45, and sunny in Zürich."},
    {"role": "assistant", "content": "", "tool_calls": CALLS[:1]},
    {"role": "assistant", **THINKING, "content": "Let me check both.", "tool_calls": CALLS},
]


def _render(directory: Path, messages: list[dict], **options: Any) -> str:
    tokenizer = AutoTokenizer.from_pretrained(directory)
    return tokenizer.apply_chat_template(messages, tools=SCHEMAS, tokenize=False, **options)


def _write_model(directory: Path, tokenizer: Any, chat_template: str, bos: str | None, eos: str) -> Path:
    directory.mkdir(parents=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "chat_template": chat_template, "eos_token": eos}
    if bos is not None:
        config["bos_token"] = bos
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def _completion(prompt: str, full: str) -> str | None:
    """What the model wrote after `prompt` for the conversation rendered as `full`. Templates that open a
    `<think>` block in the generation prompt but render past turns without reasoning (DeepSeek-R1 distills,
    Nemotron 3) do not render it after the prompt: there the model's reasoning is written in."""
    if full.startswith(prompt):
        return full[len(prompt) :] or None
    common = len(os.path.commonprefix([prompt, full]))  # noqa: RUF071 - strings, by character
    if prompt[common:].strip() != "<think>":
        return None
    answer = re.sub(r"^\s*<think>.*?</think>\s*", "", full[common:], flags=re.DOTALL)
    return f"{REASONING}\n</think>\n\n{answer}"


def _rollouts(root: Path, family: str) -> tuple[Any, list[tuple[list[int], list[int]]]]:
    """The family's tokenizer (with TRL's response template) and its rollouts: (prompt ids, completion ids)."""
    variable, bos, eos = FAMILIES[family]
    chat_template = getattr(trl_templates, variable)
    words = word_tokenizer(("[UNK]", *(token for token in (bos, eos) if token)))
    draft = _write_model(root / "draft", words, chat_template, bos, eos)
    prompt = _render(draft, PROMPT, add_generation_prompt=True)
    completions = []
    for turn in ASSISTANT_TURNS:
        try:
            full = _render(draft, [*PROMPT, turn])
        except Exception:  # a template that cannot render this turn (no tool support, ...)
            continue
        completion = _completion(prompt, full)
        if completion:
            completions.append(completion)
    assert len(completions) >= 2, f"{family}: the template renders too few assistant turns after its prompt"
    broken = []
    for text in completions:
        if "get_weather" in text:
            closer = next(c for c in ("}", "</", ")") if c in text)  # JSON, XML-like or Python-like calls
            cut = text.rindex(closer)
            broken.append(text[:cut] + text[cut + 1 :])  # a brace, a closing tag's "<" or a ")" lost
            broken.append(text.replace("Zürich", 'Zü"rich', 1))  # a stray quote in an argument
            broken.append(text.replace("get_weather", "", 1))  # no name
    tags = sorted(set(re.findall(r"<[|｜]?[^<>\s]{1,40}[|｜]?>", prompt + "".join(completions))))
    specials = sorted({*tags, eos, *([bos] if bos else [])})
    tokenizer = trained_tokenizer([prompt, *completions], specials)
    tokenizer = AutoTokenizer.from_pretrained(_write_model(root / family, tokenizer, chat_template, bos, eos))
    tokenizer = trl_templates.add_response_schema(tokenizer)
    assert tokenizer.response_template is not None
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    rollouts = []
    for text in completions + broken:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        rollouts.append((prompt_ids, ids))
        for cut in (len(ids) // 3, 2 * len(ids) // 3, len(ids) - 1):  # max_completion_length reached
            rollouts.append((prompt_ids, ids[:cut]))
    return tokenizer, rollouts


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_trl_parse_response_is_unchanged_by_accelerate(family: str, tmp_path: Path) -> None:
    tokenizer, rollouts = _rollouts(tmp_path, family)
    fallbacks = 0
    for tools in (None, SCHEMAS, FUNCTIONS):
        for prompt_ids, ids in rollouts:
            expected = trl_templates.parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
            with respc.accelerated(tokenizer):
                assert acceleration_of(tokenizer).target == "5.24"
                ours = trl_templates.parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
            assert ours == expected, (family, tokenizer.decode(ids))
            fallbacks += (
                expected
                == {
                    "role": "assistant",
                    "content": tokenizer.decode(ids, skip_special_tokens=True),
                }
                and "tool_calls" not in expected
            )
    print(f"{family}: {len(rollouts)} rollouts x 3 tool settings, {fallbacks} parsed as plain text")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_accelerate_after_add_response_schema_chains(family: str, tmp_path: Path) -> None:
    """The TRL recipe in one line, `respc.accelerate(add_response_schema(tokenizer))`; TRL's own
    `parse_response` without a prefix (its legacy call: transformers raises, TRL decodes the text); and
    torch tensors as ids (1-D, and a 2-D batch), which TRL's trainers hold."""
    import torch

    tokenizer, rollouts = _rollouts(tmp_path, family)
    prompt_ids, ids = rollouts[0]
    tensors = (torch.tensor(ids), torch.tensor([ids, ids]))

    def calls() -> list:
        return [
            trl_templates.parse_response(tokenizer, ids, prefix=prompt_ids),
            trl_templates.parse_response(tokenizer, ids),
            tokenizer.parse_response(tensors[0], prefix=torch.tensor(prompt_ids)),
            tokenizer.parse_response(tensors[1], prefix=prompt_ids),
        ]

    expected = calls()
    assert respc.accelerate(trl_templates.add_response_schema(tokenizer)) is tokenizer
    assert calls() == expected
