"""A pytest plugin (`-p hf_report`, with this folder on the path: .ci/vllm loads it) that prints, at the end
of the run, how vLLM's own hf parser did beside respc on the same deltas (test_parser_manager.py records it):
counted by outcome, then every sample where it differs from transformers 5.24, with how."""

from __future__ import annotations

import pytest
from vllm_support import HF_RESULTS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not HF_RESULTS:
        return
    terminalreporter.section("vLLM's hf parser against transformers 5.24, on the same per-token deltas")
    kinds: dict[str, int] = {}
    for _, _, kind in HF_RESULTS:
        key = kind.split(":")[0] if kind.startswith("refused") else kind
        kinds[key] = kinds.get(key, 0) + 1
    for kind, count in sorted(kinds.items()):
        terminalreporter.write_line(f"{count:5d}  {kind}")
    for preset, note, kind in HF_RESULTS:
        if not kind.endswith("equal"):
            terminalreporter.write_line(f"  {preset}: {note[:50]}: {kind}")
