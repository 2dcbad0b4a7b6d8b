"""respc against transformers 5.23.0, side by side in one run: streaming in 4-character chunks and
whole-message parsing, on four template shapes. Run from the repository root:

    python benchmarks/compare.py
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from transformers.utils.chat_parsing import ResponseParser as OracleParser
from transformers.utils.chat_parsing import parse_response as oracle_parse

import respc

TEMPLATES = Path(__file__).parent.parent / "tests" / "fixtures" / "templates"
WORDS = "the model thinks about weather Paris and then answers carefully with detail".split()
CALL = "\n<tool_call>\n<function=get>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
SHAPES = {
    "smollm": lambda a, b: f"<think>{a}</think>{b}<|im_end|>",
    "serving_qwen3_5": lambda a, b: f"<think>{a}</think>\n\n{b}{CALL}<|im_end|>",
    "gpt_oss": lambda a, b: f"<|channel|>analysis<|message|>{a}<|end|><|start|>assistant<|channel|>final<|message|>{b}<|return|>",
    "gemma4": lambda a, b: f"<|channel>thought\n{a}<channel|>{b}<turn|>",
}


def prose(size: int, rng: random.Random) -> str:
    words = []
    while sum(map(len, words)) + len(words) < size:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:size]


def stream(make_parser, chunks: list[str]) -> tuple:
    parser = make_parser()
    for chunk in chunks:
        parser.feed(chunk)
    return parser.finalize()


def timed(function, repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    rng = random.Random(0)
    print(
        "template          size   stream us/chunk respc / transformers (x)   parse ms respc / transformers (x)"
    )
    for name, shape in SHAPES.items():
        template = json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))
        module = respc.compile_template(template)
        for size in (10_000, 100_000):
            text = shape(prose(size // 2, rng), prose(size // 2, rng))
            chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
            assert stream(lambda: module.ResponseParser(""), chunks) == stream(
                lambda: OracleParser(template, ""), chunks
            )
            ours = timed(lambda: stream(lambda: module.ResponseParser(""), chunks)) / len(chunks) * 1e6
            theirs = timed(lambda: stream(lambda: OracleParser(template, ""), chunks)) / len(chunks) * 1e6
            ours_parse = timed(lambda: module.parse_response(text, prefix=""), 20) * 1e3
            theirs_parse = timed(lambda: oracle_parse(text, template, prefix=""), 20) * 1e3
            print(
                f"{name:16} {size:>7}   {ours:6.2f} / {theirs:6.2f} ({theirs / ours:4.1f}x)"
                f"                 {ours_parse:7.3f} / {theirs_parse:7.3f} ({theirs_parse / ours_parse:4.1f}x)"
            )


if __name__ == "__main__":
    main()
