"""Shipped presets: each template is right (hand-written expected messages), its generated module
is exact (transformers 5.24.0 runs the same template) and streaming agrees under random chunkings."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.compare import assert_same, chunkings, oracle_parse, oracle_stream, respc_stream

import respc

ROOT = Path(__file__).parents[2]
PRESETS = ROOT / "respc" / "presets"
CASES_DIR = Path(__file__).parents[1] / "fixtures" / "presets"
NAMES = sorted(p.stem for p in PRESETS.glob("*.json") if p.name != "index.json")
CASES = [
    pytest.param(name, i, id=f"{name}-{i}")
    for name in NAMES
    for i in range(len(json.loads((CASES_DIR / f"{name}.json").read_text(encoding="utf-8"))))
]


def _cases(name: str) -> list[dict]:
    return json.loads((CASES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _template(name: str) -> dict:
    return json.loads((PRESETS / f"{name}.json").read_text(encoding="utf-8"))


def test_every_preset_has_cases_and_an_index_entry() -> None:
    index = json.loads((PRESETS / "index.json").read_text(encoding="utf-8"))
    assert NAMES, "no presets shipped"
    for name in NAMES:
        assert len(_cases(name)) >= 5, f"{name}: fewer than five realistic cases"
        assert name in index, f"{name}: not in index.json"
    assert respc.presets() == NAMES


def test_the_readme_summarises_every_preset() -> None:
    """The README's preset table (one row per preset, written by hand) names exactly the shipped ones; the
    full table in docs/presets.md is generated (`respc regen --check --readme docs/presets.md`)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Presets\n")[1].split("\n## ")[0]
    assert re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE) == NAMES


@pytest.mark.parametrize(("name", "index"), CASES)
def test_preset_case(name: str, index: int) -> None:
    case = _cases(name)[index]
    module = respc.load_preset(name)
    template = _template(name)
    assert module.TEMPLATE == template
    if "expected_error" in case:  # a malformed output: the same failure as transformers
        with pytest.raises(Exception) as raised:
            module.parse_response(case["text"], prefix=case["prefix"])
        assert type(raised.value).__name__ == case["expected_error"], f"{name}[{index}] {case['note']}"
        (theirs,) = oracle_parse(template, case["text"], case["prefix"])
        assert theirs[0] == "raise" and theirs[2] == str(raised.value)
    else:
        message = module.parse_response(case["text"], prefix=case["prefix"])
        assert message == case["expected"], f"{name}[{index}] {case['note']}"
        assert oracle_parse(template, case["text"], case["prefix"]) == [("ok", case["expected"])]
    for chunks in chunkings(case["text"], seed=index, random_splits=5):
        ours = respc_stream(template, case["prefix"], chunks)
        theirs = oracle_stream(template, case["prefix"], chunks)
        assert_same(ours, theirs, template, f"{name}[{index}] chunks={chunks!r}")


def test_serving_fallbacks_are_shipped_verbatim() -> None:
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS

    for types, template in _RESPONSE_TEMPLATE_FALLBACKS.items():
        preset = respc.preset_for(types[0])
        assert (
            preset.TEMPLATE == template
        ), f"preset for {types[0]} differs from transformers' serving fallback"


def test_generated_presets_are_fresh() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "respc", "regen", "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr


def test_presets_need_no_compiler() -> None:
    code = (
        "import sys, respc; m = respc.load_preset(sys.argv[1]); m.parse_response('x', prefix='');"
        "print(sorted(k for k in sys.modules if k.split('.')[0] in ('jinja2', 'black', 'transformers', 'torch')"
        " or k.startswith('respc.compiler')))"
    )
    done = subprocess.run([sys.executable, "-c", code, NAMES[0]], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
