"""Install hints name what works where respc came from (its checkout; it is not on PyPI) and the
packages each extra brings, as pyproject.toml declares them."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from support.cli import ROOT, respc_cli

from respc._extras import PACKAGES, install_hint


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~ ]", requirement, maxsplit=1)[0]


def test_the_hints_name_every_extra_and_its_packages_as_pyproject_does() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra, packages in PACKAGES.items():
        declared = {_requirement_name(r) for r in extras[extra] if not r.startswith("respc[")}
        for included in (r for r in extras[extra] if r.startswith("respc[")):
            for name in included.removeprefix("respc[").removesuffix("]").split(","):
                declared |= {_requirement_name(p) for p in PACKAGES[name]}
        assert {_requirement_name(p) for p in packages} == declared, extra


def test_no_message_or_user_doc_asks_for_the_unpublished_respc_distribution() -> None:
    found = []
    docs = [
        ROOT / "README.md",
        *(ROOT / "docs" / f"{name}.md" for name in ("cli", "batch", "serving", "authoring")),
    ]
    for path in [*ROOT.glob("respc/**/*.py"), *ROOT.glob("examples/*.py"), *docs]:
        text = path.read_text(encoding="utf-8")
        found += [
            f"{path.relative_to(ROOT)}: {m}" for m in re.findall(r"pip install [^\n]*'respc\[\w+\]'", text)
        ]
    assert found == []


def test_a_missing_extra_gets_a_hint_that_works_from_a_checkout(tmp_path: Path) -> None:
    blocker = tmp_path / "pyarrow.py"
    blocker.write_text("raise ImportError('blocked', name='pyarrow')\n", encoding="utf-8")
    done = respc_cli(
        "parse",
        "--preset",
        "qwen3",
        "--jsonl",
        "-o",
        str(tmp_path / "o.parquet"),
        stdin='{"response": "x"}\n',
        env={"PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    assert done.returncode == 2
    assert install_hint("parquet") in done.stderr and "'respc[" not in done.stderr
