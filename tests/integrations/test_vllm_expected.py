"""The expectations the vLLM plugin's tests compare against (tests/fixtures/vllm_expected.json) are still what
transformers 5.24.0 gives, and what respc's DeltaStream sends for them: those tests run in vLLM's own venv,
where transformers is older, so this keeps their recorded oracle from going stale."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import respc
from respc.serving import DeltaStream

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
spec = importlib.util.spec_from_file_location("make_vllm_expected", FIXTURES / "make_vllm_expected.py")
recorder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recorder)
RECORDED = json.loads(recorder.EXPECTED.read_text(encoding="utf-8"))


def test_the_recorded_expectations_are_what_transformers_gives() -> None:
    assert recorder.render(recorder.record()) == recorder.EXPECTED.read_text(
        encoding="utf-8"
    ), "tests/fixtures/vllm_expected.json is stale: run python tests/fixtures/make_vllm_expected.py"


@pytest.mark.parametrize("preset", sorted(RECORDED))
def test_delta_stream_sends_the_recorded_text(preset: str) -> None:
    module = respc.load_preset(preset)
    cases = json.loads((FIXTURES / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    for case, expected in zip(cases, RECORDED[preset], strict=True):
        if "stream" not in expected:
            continue
        stream = DeltaStream(module.ResponseParser(case["prefix"], tools=expected["tools"]))
        text = case["text"]
        deltas = [d for at in range(0, len(text), 3) for d in stream.feed(text[at : at + 3])]
        deltas += stream.finish()[0]
        sent = {key: "".join(d.get(field, "") for d in deltas) for key, field in
                (("content", "content"), ("reasoning", "reasoning_content"))}  # fmt: skip
        assert sent == expected["stream"], (preset, case["note"])
        assert stream.message == expected["message"], (preset, case["note"])
