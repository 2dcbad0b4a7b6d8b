"""The response template a served model gets, compiled once per process: the engine-free half of the
serving integrations (`respc.integrations.vllm`).

The template is, in order: the one `RESPC_TEMPLATE` names (a shipped preset's name, or a JSON file holding
a template or a `tokenizer_config.json`), else the served tokenizer's own `response_template`, else the
preset `respc.detect` finds for the model (its directory's chat template, repository id or
`model_type`; or the tokenizer's loaded chat template). `RESPC_TARGET` names the transformers release
to parse as (default: the newest supported). A template that cannot be found or compiled raises
`ServingTemplateError`, one line saying why and what to set.

A server that does not parse a field (no reasoning parser, or a request without tools) gets the
template without it, so the field's text stays in the content, delimiters and all, where the template
has an implicit content field: what engines do with text their parsers were not asked to parse.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._hash import template_hash
from respc.runtime.targets import get_target
from respc.serving import REASONING_FIELDS

__all__ = ["TARGET_ENV", "TEMPLATE_ENV", "ServedTemplate", "ServingTemplateError", "served_template"]

TEMPLATE_ENV = "RESPC_TEMPLATE"
TARGET_ENV = "RESPC_TARGET"
TOOL_FIELD = "tool_calls"


class ServingTemplateError(ValueError):
    """No usable response template for the served model; the message says what to set."""


@dataclass(frozen=True)
class ServedTemplate:
    """A served model's template, where it came from, and its compiled parsers."""

    template: dict
    origin: str  # for logs and errors: "preset qwen3 (chat template markers ...)", "RESPC_TEMPLATE=..."
    target: str  # the transformers release it parses as
    preset: str | None  # the shipped preset, whose precompiled module serves the whole template

    @property
    def reasoning_fields(self) -> tuple[str, ...]:
        return tuple(name for name in self.template["fields"] if name in REASONING_FIELDS)

    @property
    def has_tools(self) -> bool:
        return TOOL_FIELD in self.template["fields"]

    def module(self, *, reasoning: bool = True, tools: bool = True) -> types.ModuleType:
        """The compiled parser; a field left out (`reasoning=False`, `tools=False`) stays text."""
        dropped = frozenset(
            (() if reasoning else self.reasoning_fields)
            + (() if tools or not self.has_tools else (TOOL_FIELD,))
        )
        return _module(self, dropped)


def served_template(tokenizer: Any, *, environ: dict | None = None) -> ServedTemplate:
    """The template for the model `tokenizer` belongs to (a transformers-style tokenizer: its
    `response_template` or `init_kwargs`, `name_or_path`, `chat_template`), compiled; see the module."""
    environ = os.environ if environ is None else environ
    target = environ.get(TARGET_ENV) or None
    try:
        target = get_target(target).name
    except ValueError as error:
        raise ServingTemplateError(f"{TARGET_ENV}={target}: {error}") from None
    chosen = environ.get(TEMPLATE_ENV)
    if chosen:
        template, origin, preset = _chosen(chosen)
    else:
        template, origin, preset = _found(tokenizer)
    return _compiled(json.dumps(template, sort_keys=True), origin, target, preset)


def _chosen(value: str) -> tuple[dict, str, str | None]:
    from respc._io import InputError, read_json
    from respc.registry import load_preset, presets

    path = Path(value)
    if value in presets():
        return load_preset(value).TEMPLATE, f"{TEMPLATE_ENV}={value} (preset)", value
    if not path.is_file():
        raise ServingTemplateError(
            f"{TEMPLATE_ENV}={value}: neither a shipped preset ({', '.join(presets())}) nor a template file"
        )
    try:
        data = read_json(path, expect=dict)
    except InputError as error:
        raise ServingTemplateError(f"{TEMPLATE_ENV}: {error}") from None
    if "fields" not in data:
        if not isinstance(data.get("response_template"), dict):
            raise ServingTemplateError(
                f"{TEMPLATE_ENV}={value}: holds neither a response template nor a 'response_template' key"
            )
        data = data["response_template"]
    return data, f"{TEMPLATE_ENV}={value}", None


def _tokenizer_template(tokenizer: Any) -> Any:
    template = getattr(tokenizer, "response_template", None)
    if template is None:
        template = (getattr(tokenizer, "init_kwargs", None) or {}).get("response_template")
    return template


def _found(tokenizer: Any) -> tuple[dict, str, str | None]:
    from respc.model import detect, detection_sources
    from respc.registry import PresetNotFound, load_preset

    template = _tokenizer_template(tokenizer)
    if template is not None:
        if not isinstance(template, dict):
            raise ServingTemplateError(
                f"the tokenizer's response_template is a {type(template).__name__}, not a JSON object; "
                f"set {TEMPLATE_ENV} to a preset name or a template file"
            )
        return template, "the tokenizer's response_template", None
    tried = []
    for source in detection_sources(tokenizer):
        try:
            found = detect(source)
        except PresetNotFound as error:  # AmbiguousPreset too: the next source may settle it
            tried.append(str(error).split(": no shipped preset matches")[0] + f": {_reason(error)}")
            continue
        except (OSError, ValueError) as error:
            tried.append(f"{_shown(source)}: {error}")
            continue
        if found.preset is None:  # a directory whose tokenizer_config.json has a response_template
            from respc.model import model_template

            return model_template(source)[0], f"{source}/tokenizer_config.json", None
        evidence = ", ".join(found.evidence)
        return (
            load_preset(found.preset).TEMPLATE,
            f"preset {found.preset} ({found.by}: {evidence})",
            found.preset,
        )
    name = getattr(tokenizer, "name_or_path", None) or "the served model"
    raise ServingTemplateError(
        f"{name}: no response_template in its tokenizer and no shipped preset detected "
        f"({'; '.join(tried) or 'nothing to detect from'}); set {TEMPLATE_ENV} to a preset name or a "
        "template file"
    )


def _reason(error: Exception) -> str:
    message = str(error)
    return message.split(": no shipped preset matches ", 1)[-1].split("; name one with")[0]


def _shown(source: Any) -> str:
    text = str(source)
    return "its chat template" if "{%" in text or "{{" in text else text


@functools.cache
def _compiled(template_json: str, origin: str, target: str, preset: str | None) -> ServedTemplate:
    served = ServedTemplate(json.loads(template_json), origin, target, preset)
    served.module()  # compile (or load) now, so a bad template fails at start-up
    return served


_MODULES: dict[tuple[str, str, frozenset], types.ModuleType] = {}


def _module(served: ServedTemplate, dropped: frozenset) -> types.ModuleType:
    key = (template_hash(served.template), served.target, dropped)
    module = _MODULES.get(key)
    if module is None:
        module = _MODULES[key] = _build(served, dropped)
    return module


def _build(served: ServedTemplate, dropped: frozenset) -> types.ModuleType:
    from respc._compile import cache_dir, compile_template
    from respc.registry import load_preset

    try:
        if served.preset is not None and not dropped:
            return load_preset(served.preset, served.target)
        template = copy.deepcopy(served.template)
        for name in dropped:
            del template["fields"][name]
            (template.get("defaults") or {}).pop(name, None)
        return compile_template(template, target=served.target, cache=cache_dir())
    except ValueError as error:  # respc.TemplateError and the runtime's refusals
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ServingTemplateError(
            f"{served.origin}: cannot compile the template: {first}; set {TEMPLATE_ENV} to a preset name "
            "or a fixed template file"
        ) from error
