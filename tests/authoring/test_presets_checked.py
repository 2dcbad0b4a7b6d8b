"""Every shipped preset whose family has a real chat template here passes `respc check` against it, or its
findings are exactly the known ones its index entry lists (`known_findings`, said in its notes too)."""

from __future__ import annotations

import fnmatch

import pytest
from support.authoring import INDEX, NOW, chat_template

import respc
from respc.authoring import check
from respc.registry import preset_info

CHECKED = sorted(name for name, entry in INDEX.items() if entry["preset"])


def _matches(known: dict, finding: object) -> bool:
    return (
        fnmatch.fnmatchcase(finding.probe, known["probes"])
        and fnmatch.fnmatchcase(finding.field, known["field"])
        and fnmatch.fnmatchcase(finding.cause or "", known["cause"])
    )


@pytest.mark.parametrize("name", CHECKED)
def test_preset_against_its_chat_template(name: str) -> None:
    preset, model = INDEX[name]["preset"], INDEX[name]["model"]
    info = preset_info(preset)
    known = [k for k in info["known_findings"] if k["model"] == model]
    report = check(chat_template(name), respc.load_preset(preset), now=NOW, name=preset)
    assert report.checked, f"{name}: no probe renders as model output"
    unexplained = [f for f in report.findings if not any(_matches(k, f) for k in known)]
    assert not unexplained, f"{preset} against {name}:\n" + "".join(
        f"  {f.probe}: {f.field}: {f.cause}: {f.explanation}\n" for f in unexplained
    )
    stale = [k for k in known if not any(_matches(k, f) for f in report.findings)]
    assert not stale, f"{preset}: known_findings no longer found against {model}: {stale}"
    for entry in known:
        assert entry["why"].split(";")[0].split(", so")[0] in info["notes"], "the notes say what check finds"


def test_every_known_finding_names_a_model_of_the_collection() -> None:
    models = {entry["model"] for entry in INDEX.values()}
    for preset in respc.presets():
        for known in preset_info(preset)["known_findings"]:
            assert known["model"] in models, f"{preset}: {known['model']} has no chat template in the tests"
