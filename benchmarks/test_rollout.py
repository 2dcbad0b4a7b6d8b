"""A TRL-style rollout loop with and without `respc.accelerate`, side by side in one run.

    python -m pytest benchmarks/test_rollout.py --benchmark-only --benchmark-group-by=group

For each template shape: 1,000 completions of about 1,000 tokens each, parsed from their token ids with the
prompt's ids as `prefix` and tools given, as TRL's trainers call `tokenizer.parse_response` once per rollout
(`trl.chat_template_utils.parse_response`). The tokenizer is a real one: a byte-level BPE trained on the
shape's responses, saved as a model directory and loaded with `AutoTokenizer` (transformers 5.24.0). Three
workloads per shape, each for transformers and for the same tokenizer accelerated: the whole call (ids in:
decoding is part of it), the parse alone (text in), and the decoding alone (`tokenizer.decode`, its
`tokenizers` backend called directly, and the decoder the accelerated call uses). The loops' results are
checked equal first.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from support.models import model_dir, trained_tokenizer
from timing import record_pairs
from transformers import AutoTokenizer
from workloads import SHAPES, response, template

import respc
from respc.runtime.tokenizer import load_tokenizer

COMPLETIONS = 1_000
TOKENS = 1_000  # about, per completion
PROMPT = "<|im_start|>user\nWhat is the weather in Paris this week?<|im_end|>\n<|im_start|>assistant\n"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }
    for name, properties in [
        ("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
        ("search", {"query": {"type": "string"}, "limit": {"type": "integer"}}),
    ]
]
# The tags of every shape's responses: a real tokenizer of each family has its delimiters as special tokens.
DELIMITERS = [
    *(
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<|im_start|>",
        "<|im_end|>",
        "<function=get_weather>",
    ),
    *(
        "</function>",
        "<parameter=city>",
        "</parameter>",
        "<|channel|>",
        "<|message|>",
        "<|end|>",
        "<|start|>",
    ),
    *("<|constrain|>", "<|call|>", "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", '<|"|>'),
    *("<|tool_response>", "<|tool_call_start|>", "<|tool_call_end|>"),
]


@functools.cache
def rollouts(shape: str) -> tuple[Any, list[int], list[list[int]], list[str]]:
    """The shape's tokenizer (with its template), the prompt's ids, and the completions (ids and text)."""
    sample = [response(shape, 4_000, seed) for seed in range(8)]
    tokenizer = trained_tokenizer([PROMPT, *sample], DELIMITERS)
    chars = 4_000 * TOKENS // len(tokenizer.encode(sample[0]).ids)  # characters for about TOKENS tokens
    directory = model_dir(
        Path(tempfile.mkdtemp()), shape, tokenizer=tokenizer, response_template=template(shape)
    )
    loaded = AutoTokenizer.from_pretrained(directory)
    ids = [tokenizer.encode(response(shape, chars, seed)).ids for seed in range(COMPLETIONS)]
    texts = [loaded.decode(each) for each in ids]
    return loaded, tokenizer.encode(PROMPT).ids, ids, texts


@functools.cache
def tokenizers(shape: str) -> dict[str, Any]:
    """transformers' tokenizer and an accelerated one, loaded alike."""
    plain = rollouts(shape)[0]
    fast = AutoTokenizer.from_pretrained(plain.name_or_path)
    fast.response_template = plain.response_template
    return {"transformers": plain, "respc": respc.accelerate(fast)}


def rollout_loop(tokenizer: Any, prompt_ids: list[int], completions: list[list[int]]) -> list[dict]:
    return [tokenizer.parse_response(ids, prefix=prompt_ids, tools=TOOLS) for ids in completions]


def parse_loop(tokenizer: Any, prompt: str, texts: list[str]) -> list[dict]:
    return [tokenizer.parse_response(text, prefix=prompt, tools=TOOLS) for text in texts]


def decode_loop(decode: Any, completions: list[list[int]]) -> list[str]:
    return [decode(ids) for ids in completions]


@pytest.mark.parametrize("impl", ["transformers", "tokenizers", "respc"])
@pytest.mark.parametrize("workload", ["rollout", "parse", "decode"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_rollout(benchmark: Any, shape: str, workload: str, impl: str) -> None:
    if impl == "tokenizers" and workload != "decode":
        pytest.skip("the tokenizers backend only decodes")
    _, prompt_ids, completions, texts = rollouts(shape)
    if benchmark.disabled:  # CI runs each benchmark once so that it cannot rot: a tenth of the loop will do
        completions, texts = completions[:100], texts[:100]
    tokenizer = tokenizers(shape)["transformers" if impl == "tokenizers" else impl]
    benchmark.group = f"rollout {shape} {workload}"
    benchmark.extra_info.update(shape=shape, impl=impl, workload=workload, completions=len(completions))
    benchmark.extra_info["tokens"] = sum(map(len, completions)) / len(completions)
    if workload == "rollout":
        run, args = rollout_loop, (tokenizer, prompt_ids, completions)
        expected = rollout_loop(tokenizers(shape)["transformers"], prompt_ids, completions[:50])
    elif workload == "parse":
        run, args = parse_loop, (tokenizer, PROMPT, texts)
        expected = parse_loop(tokenizers(shape)["transformers"], PROMPT, texts[:50])
    else:
        decode = {
            "transformers": tokenizer.decode,
            "tokenizers": functools.partial(tokenizer.backend_tokenizer.decode, skip_special_tokens=False),
            "respc": load_tokenizer(tokenizer).decode,  # what the accelerated call decodes with
        }[impl]
        run, args = decode_loop, (decode, completions)
        expected = texts[:50]
    assert run(*args[:-1], args[-1][:50]) == expected
    benchmark.pedantic(run, args, rounds=3, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("workload", ["rollout", "parse", "decode"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_rollout_paired(benchmark: Any, shape: str, workload: str) -> None:
    """transformers' time over respc's, both timed back to back in each round (the machine's drift
    cancels): `extra_info["median"]` is the speed-up. 200 completions a round."""
    _, prompt_ids, completions, texts = rollouts(shape)
    plain, fast = tokenizers(shape)["transformers"], tokenizers(shape)["respc"]
    size = 50 if benchmark.disabled else 200  # CI runs it once, untimed
    completions, texts = completions[:size], texts[:size]
    if workload == "rollout":
        ours, other = (lambda: rollout_loop(fast, prompt_ids, completions)), (
            lambda: rollout_loop(plain, prompt_ids, completions)
        )
    elif workload == "parse":
        ours, other = (lambda: parse_loop(fast, PROMPT, texts)), (lambda: parse_loop(plain, PROMPT, texts))
    else:
        decoder = load_tokenizer(fast)
        ours, other = (lambda: decode_loop(decoder.decode, completions)), (
            lambda: decode_loop(plain.decode, completions)
        )
    assert ours() == other()
    record_pairs(benchmark, f"rollout {shape} {workload}", ours, other, repeat=(1, 1), rounds=9)
