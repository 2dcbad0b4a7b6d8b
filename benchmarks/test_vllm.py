"""What one stream costs per delta inside vLLM: the respc plugin, vLLM's `hf` parser and vLLM's hand-written
pair for the same format (`--tool-call-parser hermes --reasoning-parser deepseek_r1`), on the same deltas.

Runs where vLLM is installed (the `.ci/vllm` venv; skipped elsewhere):

    python -m pytest benchmarks/test_vllm.py --benchmark-only --benchmark-json=.benchmarks/vllm.json
    python benchmarks/test_vllm.py .benchmarks/vllm.json       # the table

Each workload is one Qwen3/Hermes-format response, fed one token per `parse_delta` (texts from vLLM's own
incremental detokenizer over a byte-level BPE trained here): a short reasoning block and then content of
2k, 8k or 32k characters, or a short reasoning block and one tool call whose one argument holds 2k, 8k or
32k characters. The template is the qwen3 preset's with its reasoning field named `thinking`, the only
name `hf` accepts. Every round runs the three parsers back to back on the same deltas (drift cancels in
the ratios); the figures are medians over the rounds of the time per delta, and of the ratios to respc.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm.parser.parser_manager", reason="vLLM is not installed here")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integrations" / "vllm"))

from vllm_support import token_texts, train_tokenizer, vllm_tokenizer, write_model_dir

import respc

PARSERS = {"respc": ("respc", "respc"), "hf": ("hf", "hf"), "hermes+deepseek_r1": ("hermes", "deepseek_r1")}
SIZES = (2_000, 8_000, 32_000)
ROUNDS = 5
PROMPT = "<|im_start|>user\nTell me.<|im_end|>\n<|im_start|>assistant\n"
WORDS = "the a weather city river north light stone cloud table number seven blue quiet road".split()
TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}]


def _words(size: int, seed: int) -> str:
    rng = random.Random(seed)
    text = []
    while sum(map(len, text)) + len(text) < size:
        text.append(rng.choice(WORDS) + ("." if rng.random() < 0.1 else ""))
    return " ".join(text)[:size]


def response(kind: str, size: int) -> str:
    thinking = f"<think>{_words(200, 1)}</think>"
    if kind == "content":
        return f"{thinking}{_words(size, 2)}<|im_end|>"
    arguments = json.dumps({"text": _words(size, 3)})
    return f'{thinking}<tool_call>\n{{"name": "write", "arguments": {arguments}}}\n</tool_call><|im_end|>'


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> object:
    template = json.loads(
        json.dumps(respc.load_preset("qwen3").TEMPLATE).replace('"reasoning_content":', '"thinking":')
    )
    specials = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_start|>", "<|im_end|>"]
    corpus = [PROMPT + response(kind, 4_000) for kind in ("content", "argument")]
    tokenizer = train_tokenizer(corpus, specials)
    directory = write_model_dir(tmp_path_factory.mktemp("bench") / "m", tokenizer, response_template=template)
    from vllm.plugins import load_general_plugins

    load_general_plugins()
    return vllm_tokenizer(directory)


def _stream(
    parser_cls: type, tokenizer: object, prompt: list[int], deltas: list[tuple[str, list[int]]]
) -> None:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "x"}], tools=TOOLS)
    parser = parser_cls(tokenizer, request.tools)
    request = parser.adjust_request(request)
    last = len(deltas) - 1
    for at, (text, ids) in enumerate(deltas):
        parser.parse_delta(text, ids, request, prompt_token_ids=prompt, finished=at == last)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", ("content", "argument"))
def test_per_delta_cost(benchmark, model: object, kind: str, size: int) -> None:
    from vllm.parser.parser_manager import ParserManager

    tokenizer = model
    prompt = tokenizer.encode(PROMPT, add_special_tokens=False)
    ids = tokenizer.encode(response(kind, size), add_special_tokens=False)
    deltas = [(text, [token]) for text, token in zip(token_texts(tokenizer, prompt, ids), ids)]
    classes = {
        name: ParserManager.get_parser(
            tool_parser_name=tool,
            reasoning_parser_name=reasoning,
            enable_auto_tools=True,
            tokenizer=tokenizer,
        )
        for name, (tool, reasoning) in PARSERS.items()
    }
    times: dict[str, list[float]] = {name: [] for name in classes}

    def one_round() -> None:
        order = list(classes) if len(times["respc"]) % 2 else list(reversed(classes))
        for name in order:
            start = time.perf_counter()
            _stream(classes[name], tokenizer, prompt, deltas)
            times[name].append((time.perf_counter() - start) / len(deltas) * 1e6)

    benchmark.group = f"vllm: one stream, one token per delta ({kind})"
    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    medians = {name: statistics.median(values) for name, values in times.items()}
    benchmark.extra_info.update(
        workload=f"{kind}-{size}",
        deltas=len(deltas),
        us_per_delta=medians,
        ratio_to_respc={
            name: statistics.median(t / r for t, r in zip(values, times["respc"]))
            for name, values in times.items()
        },
    )


def table(path: str) -> str:
    """The README table of a `--benchmark-json` run."""
    runs = [
        b["extra_info"]
        for b in json.loads(Path(path).read_text())["benchmarks"]
        if "us_per_delta" in b["extra_info"]
    ]
    lines = [
        "| workload | deltas | respc µs/delta | hf µs/delta | hermes+deepseek_r1 µs/delta | hf ÷ respc | pair ÷ respc |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in sorted(runs, key=lambda r: (r["workload"].split("-")[0], int(r["workload"].split("-")[1]))):
        us, ratio = run["us_per_delta"], run["ratio_to_respc"]
        lines.append(
            f"| {run['workload']} | {run['deltas']} | {us['respc']:.1f} | {us['hf']:.1f} | "
            f"{us['hermes+deepseek_r1']:.1f} | {ratio['hf']:.2f} | {ratio['hermes+deepseek_r1']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1]))
