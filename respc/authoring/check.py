"""`respc check`: does a response template parse back what its chat template writes?

Every probe (`respc.authoring.probes`) is rendered with the chat template: the generation prompt is the
parser's `prefix`, the assistant turn after it the model output. The output is parsed with the response
template, whole and streamed a character at a time, with the probe's tools (as a server passes them), and
the message compared with the turn. Each mismatch is one `Finding`, with its cause where one can be named
(`respc.authoring.causes`); probes the chat template cannot render are skipped, not failed.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from respc.authoring.causes import ABSENT, Cause, Context, diagnose, diagnose_error, diagnose_stream
from respc.authoring.probes import Probe, Rendering, Skipped, probes_for, render_probe
from respc.authoring.rendering import REASONING_KEYS, ChatTemplate

__all__ = ["Finding", "Report", "check", "compare", "same_value"]

KNOWN_KEYS = ("role", *REASONING_KEYS, "content", "tool_calls")


@dataclass(frozen=True)
class Finding:
    """One way the parse differs from the message: the probe, the message field (`content`,
    `tool_calls[0].function.arguments.city`, `message` when the parser raised), the rendered output, the
    expected and parsed values (`ABSENT` when the key is missing), the cause (an id, see
    `respc.authoring.causes`; None when it cannot be named), why, and the fix where one is known."""

    probe: str
    field: str
    output: str
    expected: Any
    parsed: Any
    cause: str | None
    explanation: str
    fix: str | None = None
    streamed: bool = False  # seen only when the output is streamed a character at a time

    def to_json(self) -> dict[str, Any]:
        """The finding as JSON data; `expected` / `parsed` are left out when the key is absent."""
        data: dict[str, Any] = {"probe": self.probe, "field": self.field, "output": self.output}
        if self.expected is not ABSENT:
            data["expected"] = self.expected
        if self.parsed is not ABSENT:
            data["parsed"] = self.parsed
        data |= {
            "cause": self.cause,
            "explanation": self.explanation,
            "fix": self.fix,
            "streamed": self.streamed,
        }
        return data


@dataclass(frozen=True)
class Report:
    """What `check` found: the probes checked and skipped (with the reason) and the findings."""

    chat_template: str
    response_template: str
    target: str
    checked: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    findings: tuple[Finding, ...]

    @property
    def clean(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "chat_template": self.chat_template,
            "response_template": self.response_template,
            "target": self.target,
            "checked": list(self.checked),
            "skipped": [{"probe": probe, "reason": reason} for probe, reason in self.skipped],
            "findings": [finding.to_json() for finding in self.findings],
        }

    def text(self) -> str:
        """The report for people: one block per finding, then the skipped probes and a summary line."""
        lines = []
        for f in self.findings:
            how = " (streamed)" if f.streamed else ""
            lines.append(f"{f.probe}: {f.field}{how}: {f.cause or 'cause unknown'}")
            lines.append(f"  output:   {f.output!r}")
            lines.append(f"  expected: {_shown(f.expected)}")
            lines.append(f"  parsed:   {_shown(f.parsed)}")
            lines.append(f"  why:      {f.explanation}")
            if f.fix:
                lines.append(f"  fix:      {f.fix}")
        for probe, reason in self.skipped:
            lines.append(f"{probe}: skipped: {reason}")
        verdict = "clean" if self.clean else f"{len(self.findings)} finding(s)"
        lines.append(
            f"{self.response_template} against {self.chat_template} (transformers {self.target}): "
            f"{len(self.checked)} probe(s) checked, {len(self.skipped)} skipped, {verdict}"
        )
        return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


def check(
    chat_template: ChatTemplate,
    response_template: Any,
    *,
    target: str | None = None,
    name: str = "the response template",
    probes: list[Probe] | None = None,
    now: datetime | None = None,
) -> Report:
    """Check `response_template` (a template dict, or a compiled or preset module) against `chat_template`
    on `probes` (default: every probe, with each reasoning switch the template reads on and off). `now`
    fixes the time a template may print; `target` is the transformers release to parse as."""
    from respc._compile import compile_template
    from respc.runtime.targets import get_target
    from respc.spec import load_template

    template = (
        response_template.TEMPLATE if isinstance(response_template, types.ModuleType) else response_template
    )
    release = get_target(target).name
    spec = load_template(template, release)
    module = compile_template(template, target=release)
    now = now or datetime.now()
    checked, skipped, findings = [], [], []
    for probe in probes if probes is not None else probes_for(chat_template):
        rendering = render_probe(chat_template, probe, now)
        if isinstance(rendering, Skipped):
            skipped.append((probe.name, rendering.reason))
            continue
        checked.append(probe.name)
        findings += _check_one(module, spec, rendering)
    return Report(chat_template.where, name, release, tuple(checked), tuple(skipped), tuple(findings))


def _run(module: types.ModuleType, rendering: Rendering, chunks: list[str]) -> tuple[Any, list, Any]:
    """(message, events, None), or (None, events so far, the exception)."""
    events: list = []
    try:
        parser = module.ResponseParser(rendering.prompt, tools=rendering.probe.tool_list)
        events += parser.initial_events
        for chunk in chunks:
            events += parser.feed(chunk)
        message, tail = parser.finalize()
        return message, events + tail, None
    except Exception as error:  # what a content parser or transform raises is the finding
        return None, events, error


def _finding(
    rendering: Rendering, field: str, expected: Any, parsed: Any, cause: Cause | None, streamed: bool = False
) -> Finding:
    if cause is None:
        why = "the stream differs from the whole text" if streamed else "no cause named"
        return Finding(
            rendering.probe.name, field, rendering.output, expected, parsed, None, why, None, streamed
        )
    return Finding(
        rendering.probe.name,
        field,
        rendering.output,
        expected,
        parsed,
        cause.id,
        cause.explanation,
        cause.fix,
        streamed,
    )


def _check_one(module: types.ModuleType, spec: Any, rendering: Rendering) -> list[Finding]:
    expected = rendering.expected
    message, events, error = _run(module, rendering, [rendering.output])
    closes = tuple((e["field"], e["value"]) for e in events if e.get("type") == "region_close")
    context = Context(spec, rendering.output, closes, expected)
    if error is not None:
        return [_finding(rendering, "message", expected, _raised(error), diagnose_error(error, context))]
    found = [
        _finding(rendering, field, want, got, diagnose(field, want, got, context))
        for field, want, got in compare(expected, message)
    ]
    streamed, _, stream_error = _run(module, rendering, list(rendering.output))
    if stream_error is not None:
        cause = diagnose_error(stream_error, context)
        return [*found, _finding(rendering, "message", message, _raised(stream_error), cause, streamed=True)]
    for field, whole, part in compare(message, streamed, strict_role=False):
        found.append(
            _finding(
                rendering, field, whole, part, diagnose_stream(field, whole, part, context), streamed=True
            )
        )
    return found


def _raised(error: BaseException) -> str:
    message = str(error)
    return f"{type(error).__name__}: {message.splitlines()[0] if message else ''}".rstrip(": ")


def same_value(a: Any, b: Any) -> bool:
    """Equal as JSON values of the same types: 2 is not 2.0, True is not 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def compare(
    expected: dict[str, Any], parsed: dict[str, Any], *, strict_role: bool = True
) -> list[tuple[str, Any, Any]]:
    """The fields where `parsed` differs from `expected`, as (field, expected, parsed); absent keys are
    `ABSENT`. Reasoning may be parsed under any of `REASONING_KEYS`; tool calls are compared call by call
    and argument by argument."""
    out: list[tuple[str, Any, Any]] = []
    if strict_role and parsed.get("role") != "assistant":
        out.append(("role", "assistant", parsed.get("role", ABSENT)))
    elif not strict_role and not same_value(expected.get("role", ABSENT), parsed.get("role", ABSENT)):
        out.append(("role", expected.get("role", ABSENT), parsed.get("role", ABSENT)))
    key = next((k for k in REASONING_KEYS if k in parsed), "reasoning_content")
    want = next((expected[k] for k in REASONING_KEYS if k in expected), ABSENT)
    if not same_value(want, parsed.get(key, ABSENT)):
        out.append((key, want, parsed.get(key, ABSENT)))
    if not same_value(expected.get("content", ABSENT), parsed.get("content", ABSENT)):
        out.append(("content", expected.get("content", ABSENT), parsed.get("content", ABSENT)))
    out += _compare_calls(expected.get("tool_calls", ABSENT), parsed.get("tool_calls", ABSENT))
    for extra in parsed:
        if extra not in KNOWN_KEYS:
            out.append((extra, expected.get(extra, ABSENT), parsed[extra]))
    return out


def _compare_calls(expected: Any, parsed: Any) -> list[tuple[str, Any, Any]]:
    if same_value(expected, parsed):
        return []
    if not (isinstance(expected, list) and isinstance(parsed, list) and len(expected) == len(parsed)):
        return [("tool_calls", expected, parsed)]
    out: list[tuple[str, Any, Any]] = []
    for i, (want, got) in enumerate(zip(expected, parsed)):
        where = f"tool_calls[{i}]"
        if not (isinstance(got, dict) and isinstance(got.get("function"), dict)):
            out.append((where, want, got))
            continue
        if got.get("type") != "function":
            out.append((f"{where}.type", "function", got.get("type", ABSENT)))
        function, wanted = got["function"], want["function"]
        if not same_value(wanted["name"], function.get("name", ABSENT)):
            out.append((f"{where}.function.name", wanted["name"], function.get("name", ABSENT)))
        arguments = function.get("arguments", ABSENT)
        if not isinstance(arguments, dict):
            out.append((f"{where}.function.arguments", wanted["arguments"], arguments))
            continue
        for key in [*wanted["arguments"], *(k for k in arguments if k not in wanted["arguments"])]:
            a, b = wanted["arguments"].get(key, ABSENT), arguments.get(key, ABSENT)
            if not same_value(a, b):
                out.append((f"{where}.function.arguments.{key}", a, b))
    return out
