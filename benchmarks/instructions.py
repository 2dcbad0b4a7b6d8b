"""Instructions per delta of `DeltaStream` and of the parser alone, counted by valgrind (deterministic: the
same figure on a busy machine, where timings move by a factor of two).

    python benchmarks/instructions.py              # needs valgrind; about two minutes

Each workload streams one response through a shipped preset in 4-character chunks: 8k characters of
content, or one tool call whose one argument holds 8k characters (JSON for qwen3, xml-inline for
qwen3_5). A workload runs once to warm up and then 0 or 2 more times; the difference over the deltas is
the marginal count per delta, free of start-up and import costs.
"""

from __future__ import annotations

import re
import subprocess
import sys

WORKLOADS = (("qwen3", "args"), ("qwen3_5", "args"), ("qwen3", "content"))
WORDS = "the user asks about weather in Paris so I should call the tool and then summarise "
SIZE = 8_000


def _text(preset: str, kind: str) -> str:
    words = (WORDS * (SIZE // len(WORDS) + 1))[:SIZE]
    if kind == "content":
        return words
    if preset == "qwen3":
        return '<tool_call>\n{"name": "write", "arguments": {"text": "' + words + '"}}\n</tool_call>'
    return (
        f"<tool_call>\n<function=write>\n<parameter=text>\n{words}\n</parameter>\n</function>\n</tool_call>"
    )


def _run(preset: str, kind: str, side: str, rounds: int) -> None:
    """The workload itself, in the process valgrind counts."""
    from respc.registry import load_preset
    from respc.serving import DeltaStream

    module = load_preset(preset)
    text = _text(preset, kind)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]

    def once() -> None:
        if side == "stream":
            stream = DeltaStream(module.ResponseParser(""))
            for chunk in chunks:
                stream.feed(chunk)
            stream.finish()
        else:
            parser = module.ResponseParser("")
            for chunk in chunks:
                parser.feed(chunk)
            parser.finalize()

    for _ in range(1 + rounds):
        once()


def _count(preset: str, kind: str, side: str, rounds: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    command += [__file__, "run", preset, kind, side, str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        preset, kind, side, rounds = sys.argv[2:6]
        _run(preset, kind, side, int(rounds))
        return
    print("| workload | DeltaStream + parser | parser alone | instructions per delta |")
    print("|---|---:|---:|---|")
    for preset, kind in WORKLOADS:
        deltas = len(range(0, len(_text(preset, kind)), 4))
        per = {}
        for side in ("stream", "parser"):
            per[side] = (_count(preset, kind, side, 2) - _count(preset, kind, side, 0)) // (2 * deltas)
        print(f"| {preset} {kind} | {per['stream']:,} | {per['parser']:,} | {deltas} deltas |")


if __name__ == "__main__":
    main()
