"""The tests of the vLLM plugin need vLLM, which has a venv of its own (`.ci/vllm` builds it and runs them
with `--confcutdir` here): where vLLM is not installed, as in the main suite's venv, the folder is left
out. Their helpers (`vllm_support`, `serving_case`...) are modules of this folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("vllm") is None:
    collect_ignore_glob = ["*.py"]
else:
    sys.path.insert(0, str(Path(__file__).parent))
