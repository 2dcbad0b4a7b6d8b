"""`respc infer`: a response template derived from a chat template by differential rendering.

The probes (`respc.authoring.probes`) are rendered with known values; comparing the renderings gives the
start anchor, the reasoning block (and an opener the generation prompt prefills), the content, the end of
the turn (`respc.authoring.layout`) and the tool-call format (`respc.authoring.calls`). The template built
from them must then pass `respc check` on the same probes; where it does not, or where the format cannot
be expressed, inference refuses with the reason and the nearest shipped preset: it never guesses silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from respc.authoring.calls import read_calls
from respc.authoring.check import Report, check
from respc.authoring.layout import Layout, Refusal, read_layout
from respc.authoring.probes import Probe, Rendering, probes_for, render_probe
from respc.authoring.rendering import ChatTemplate

__all__ = ["Inference", "InferenceRefused", "infer"]


class InferenceRefused(ValueError):
    """No response template could be inferred; the message gives the reason and the nearest preset."""

    def __init__(self, message: str, nearest: str | None = None) -> None:
        super().__init__(message)
        self.nearest = nearest


@dataclass(frozen=True)
class Inference:
    """The inferred response template (None when refused), the evidence for each part, warnings (a part
    read from weak evidence, a probe the chat template writes ambiguously), the refusal reason and the
    nearest shipped preset by the chat template's markers, and the check of the template."""

    template: dict[str, Any] | None
    evidence: tuple[str, ...]
    warnings: tuple[str, ...]
    refused: str | None
    nearest: str | None
    report: Report | None

    def unwrap(self) -> dict[str, Any]:
        """The template, or `InferenceRefused` with the reason."""
        if self.template is None:
            hint = f"; nearest preset: {self.nearest}" if self.nearest else ""
            raise InferenceRefused(f"cannot infer a response template: {self.refused}{hint}", self.nearest)
        return self.template

    def to_json(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "refused": self.refused,
            "nearest_preset": self.nearest,
            "evidence": list(self.evidence),
            "warnings": list(self.warnings),
            "check": None if self.report is None else self.report.to_json(),
        }


def _nearest(chat_template: ChatTemplate) -> str | None:
    from respc.registry import AmbiguousPreset, PresetNotFound, match_chat_template

    try:
        match = match_chat_template("\n".join(chat_template.texts()))
    except AmbiguousPreset as error:
        return " or ".join(error.candidates)
    except PresetNotFound as error:  # UnsupportedFormat: the registry knows the format is inexpressible
        return f"none ({str(error).splitlines()[0]})"
    return None if match is None else match.preset


def infer(
    chat_template: ChatTemplate, *, target: str | None = None, now: datetime | None = None
) -> Inference:
    """The response template `chat_template` implies, checked on the probes (see the module docstring)."""
    from respc.runtime.targets import get_target

    release = get_target(target).name
    now = now or datetime.now()
    probes = probes_for(chat_template)
    evidence: list[str] = []
    nearest = _nearest(chat_template)
    try:
        template, warnings = _build(chat_template, probes, release, now, evidence)
    except Refusal as refusal:
        return Inference(None, tuple(evidence), (), str(refusal), nearest, None)
    report = check(
        chat_template, template, target=release, name="the inferred template", probes=probes, now=now
    )
    blocking = []
    for finding in report.findings:
        conflated = _conflated(finding, template)
        if conflated is not None:
            warnings.append(conflated)
        else:
            blocking.append(finding)
    if blocking:
        first = blocking[0]
        reason = (
            f"the inferred template fails {len(blocking)} check(s); first: {first.probe}: {first.field}: "
            f"{first.cause or 'cause unknown'}: {first.explanation}"
        )
        return Inference(None, tuple(evidence), tuple(warnings), reason, nearest, report)
    evidence.append(f"checked: {len(report.checked)} probe(s) parse exactly, {len(report.skipped)} skipped")
    return Inference(template, tuple(evidence), tuple(dict.fromkeys(warnings)), None, nearest, report)


def _build(
    chat_template: ChatTemplate, probes: list[Probe], target: str, now: datetime, evidence: list[str]
) -> tuple[dict[str, Any], list[str]]:
    renderings: list[Rendering] = []
    skipped = []
    for probe in probes:
        rendering = render_probe(chat_template, probe, now)
        if isinstance(rendering, Rendering):
            renderings.append(rendering)
        else:
            skipped.append(rendering)
    if not renderings:
        raise Refusal(f"no probe renders as a model output ({skipped[0].reason})")
    fresh = [r for r in renderings if not r.probe.name.startswith("after_tool_result")]
    if not any(r.probe.turn.get("content") for r in fresh):
        reasons = {s.reason for s in skipped if s.probe.name.startswith("plain")}
        raise Refusal(f"no answer renders as a model output ({'; '.join(sorted(reasons))})")
    generation = {r.probe.name: _generation_prompt(chat_template, r, now) for r in renderings}
    layout = read_layout(renderings, generation, chat_template.special_tokens.get("eos_token"))
    evidence += layout.evidence
    calls = read_calls(renderings, layout.turns, _lead_starts(renderings, layout), layout.end_tokens, target)
    if calls is not None:
        evidence += calls.evidence
    elif not any(r.probe.turn.get("tool_calls") for r in renderings):
        evidence.append("tool calls: not written by the chat template (no tool_calls field)")
    return _template(layout, calls), list(layout.warnings)


def _generation_prompt(chat_template: ChatTemplate, rendering: Rendering, now: datetime) -> str:
    """What the template appends for `add_generation_prompt` after the probe's history ("" if nothing)."""
    probe = rendering.probe
    without = chat_template.render(
        probe.history, tools=probe.tool_list, add_generation_prompt=False, now=now, **probe.kwargs
    )
    return rendering.prompt[len(without) :] if rendering.prompt.startswith(without) else ""


def _lead_starts(renderings: list[Rendering], layout: Layout) -> dict[str, int]:
    """Where a turn's tool calls may start: after the content or reasoning written before them."""
    starts = {}
    close = layout.reasoning[1] if layout.reasoning else None
    for r in renderings:
        turn = layout.turns[r.probe.name]
        calls = r.probe.turn.get("tool_calls") or []
        first_call = turn.find(calls[0]["function"]["name"]) if calls else len(turn)
        ends = []
        for key in ("content", "reasoning_content"):
            value = r.probe.turn.get(key)
            if not (isinstance(value, str) and value and value in turn):
                continue
            end = turn.find(value) + len(value)
            rest = turn[end:]
            if key == "reasoning_content" and close and rest.lstrip().startswith(close):
                end += len(rest) - len(rest.lstrip()) + len(close)
            if end <= first_call:
                ends.append(end)
        starts[r.probe.name] = max(ends, default=0)
    return starts


def _template(layout: Layout, calls: Any) -> dict[str, Any]:
    anchors = layout.anchors
    template: dict[str, Any] = {
        "defaults": {"role": "assistant"},
        "start_anchor": anchors[0] if len(anchors) == 1 else anchors,
        "fields": {},
    }
    fields = template["fields"]
    if layout.reasoning is not None:
        opened, closed = layout.reasoning
        fields["reasoning_content"] = (
            {"open": opened, "close": closed} if opened else {"open_pattern": "^", "close": closed}
        )
    if calls is not None:
        fields["tool_calls"] = calls.field
    closes = list(dict.fromkeys([*layout.end_tokens, *layout.swallowed, *(calls.swallowed if calls else [])]))
    if layout.content_open is not None:
        content: dict[str, Any] = {"open": layout.content_open}
        if layout.end_tokens:
            content["close"] = layout.end_tokens[0] if len(layout.end_tokens) == 1 else layout.end_tokens
    elif not closes:
        content = {}
    elif calls is not None or layout.swallowed:
        # \s* in front: whitespace between regions then opens no implicit segment (quirk Q1)
        content = {"close_pattern": r"\s*(?:" + "|".join(re.escape(c) for c in closes) + ")"}
    else:
        content = {"close": closes[0] if len(closes) == 1 else closes}
    fields["content"] = content
    return template


def _conflated(finding: Any, template: dict[str, Any]) -> str | None:
    """A finding no response template can avoid: the chat template writes one field's value with another
    field's delimiters (gpt-oss writes the content of a turn with tool calls as analysis)."""
    if finding.cause != "wrong-field":
        return None
    value = finding.parsed if isinstance(finding.parsed, str) else finding.expected
    if not isinstance(value, str) or not value:
        return None
    for name, spec in template["fields"].items():
        opener = spec.get("open")
        if name == finding.field and value == finding.expected:
            continue
        if (
            isinstance(opener, str)
            and opener
            and re.search(re.escape(opener) + r"\s*" + re.escape(value), finding.output)
        ):
            return (
                f"{finding.probe}: the chat template writes the value {value!r} as {name} (after {opener!r}), "
                "so no response template can give it back as the message has it"
            )
    return None
