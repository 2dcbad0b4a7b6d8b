"""The TRL tests need TRL (and the torch it imports), which have a venv of their own (`.ci/trl` builds it and
runs them): where TRL is not installed, as in the main suite's venv, the folder is left out."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("trl") is None:
    collect_ignore_glob = ["*.py"]
