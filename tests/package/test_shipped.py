"""What the package ships: every data file the code reads is package data, and no shipped file carries
a path of the machine it was built on."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

import tomllib

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "respc"
# An absolute path of a development machine: /home/..., /root/..., /work/..., /Users/..., C:\Users\...
MACHINE_PATH = re.compile(r"(?<![\w.~/-])(?:/(?:home|root|work|Users|tmp|var/folders)/|[A-Z]:\\Users\\)")


def _shipped() -> list[Path]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["respc"]
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return [
        p
        for p in files
        if p.suffix == ".py" or any(fnmatch(p.relative_to(PACKAGE).as_posix(), g) for g in patterns)
    ]


def test_every_package_data_pattern_matches_files() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for pattern in data["tool"]["setuptools"]["package-data"]["respc"]:
        assert list(PACKAGE.glob(pattern)), f"package-data pattern {pattern!r} matches nothing"


def test_the_data_the_code_reads_is_shipped() -> None:
    shipped = {p.relative_to(PACKAGE).as_posix() for p in _shipped()}
    for needed in ("presets/index.json", "compiler/templates/module.py.jinja"):
        assert needed in shipped
    for preset in (PACKAGE / "presets").glob("*.json"):
        assert f"presets/{preset.name}" in shipped


def test_no_shipped_file_holds_a_machine_path() -> None:
    found = []
    for path in _shipped():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "\n".join(found)


def test_the_machine_path_check_finds_one() -> None:
    assert MACHINE_PATH.search('"verbatim in /work/main/tests/fixtures/templates/cohere.json"')
    assert MACHINE_PATH.search("C:\\Users\\me\\model")
    assert not MACHINE_PATH.search("respc/presets/qwen3.json and ~/.cache/respc and a/home/b")
