"""`respc regen` works on a checkout of respc and says which: an installed copy is refused (checking it
would say nothing of the clone's presets), and `--check` names the tree it checked either way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import ROOT, respc_cli


def _copy_package(into: Path) -> Path:
    shutil.copytree(ROOT / "respc", into / "respc", ignore=shutil.ignore_patterns("__pycache__"))
    return into


def test_an_installed_copy_is_refused_with_one_line(tmp_path: Path) -> None:
    site = _copy_package(tmp_path / "site-packages")
    done = respc_cli("regen", "--check", cwd=site)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert "is an installed copy, not a checkout of respc" in done.stderr
    assert str(site / "respc") in done.stderr


def test_check_names_the_checkout_and_finds_an_edited_preset(tmp_path: Path) -> None:
    clone = _copy_package(tmp_path / "clone")
    shutil.copy(ROOT / "pyproject.toml", clone / "pyproject.toml")
    preset = clone / "respc" / "presets" / "qwen3.json"
    template = json.loads(preset.read_text(encoding="utf-8"))
    template["fields"]["reasoning_content"]["close"] = "</thinking>"
    preset.write_text(json.dumps(template, indent=2) + "\n", encoding="utf-8")
    done = respc_cli("regen", "--check", cwd=clone)
    assert done.returncode == 1, done.stderr
    assert "respc/generated/qwen3.py: stale" in done.stderr
    assert f"{clone / 'respc' / 'generated'} is stale" in done.stderr
