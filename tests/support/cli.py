"""The `respc` command as users run it: a fresh interpreter, from the repository root by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def respc_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m respc ARGS` and capture its exit code, stdout and stderr (text)."""
    return subprocess.run(
        [sys.executable, "-m", "respc", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=None if env is None else {**os.environ, **env},
    )
