"""`respc.detect`: which shipped preset a model gets, and the evidence for it.

A model directory is read in the order `for_model` uses, strongest evidence first: its own
`response_template` (no preset needed), then its chat template's markers (the way llama.cpp and mlx-lm
choose a tool-call format), then the repository id it came from (`_name_or_path`, or the Hugging Face
cache path), then `config.json`'s `model_type`, else the directory's own name. The chat template comes
first because the others mislead for real checkpoints: Qwen3-Coder reports `qwen3_moe`, Hermes 2 Pro
`mistral` and DeepSeek-R1-Distill `qwen2`, while each template names its real format. A repository id
comes before the model type because one type spans formats (`mistral3`: Mistral Small 3.1 writes v7
calls, 3.2 v11 calls; `deepseek_v3`: V3 and R1; `llama`: Llama 3 and Hermes 3) while an id names one
model. Two presets matching one piece of evidence equally well
raise `respc.registry.AmbiguousPreset`; a chat template showing a format no preset expresses raises
`UnsupportedFormat` (it never falls through to a near miss); a step that finds nothing passes to the
next, and the `Detection` records why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._io import InputError, read_json, read_text
from respc.registry import (
    AmbiguousPreset,
    Match,
    UnsupportedFormat,
    match_chat_template,
    match_model_type,
    match_repo_id,
)

__all__ = ["Detection", "chat_templates", "detect"]

CHAT_TEMPLATE_FILE = "chat_template.jinja"  # transformers' names (utils/__init__.py)
CHAT_TEMPLATE_DIR = "additional_chat_templates"
PROCESSOR_TEMPLATE_FILE = "chat_template.json"  # a multimodal processor's template


@dataclass(frozen=True)
class Detection:
    """The preset a source gets and why.

    `preset` is None when the model has its own `response_template`. `by` is the step that decided:
    "response_template", "chat template", "model_type", "repo id" or "directory name"; `evidence` what
    matched there (the chat-template markers found; the type; the id and its family pattern); `where`
    the file it was read from; `passed_over` the earlier steps that found nothing, with the reason.
    """

    preset: str | None
    by: str
    evidence: tuple[str, ...]
    where: str
    passed_over: tuple[str, ...] = ()

    def explain(self) -> str:
        """A few lines for people: the choice, the evidence, and what was passed over."""
        if self.preset is None:
            lines = [f"own response_template ({self.where}): compiled as is, no preset needed"]
        else:
            shown = ", ".join(repr(e) for e in self.evidence)
            lines = [f"preset {self.preset}", f"  by {self.by} ({self.where}): {shown}"]
        lines += [f"  passed over {step}" for step in self.passed_over]
        return "\n".join(lines)


def detect(source: str | os.PathLike) -> Detection:
    """The preset for `source` and the evidence: a model directory, a `tokenizer_config.json` (or
    another JSON file with a `chat_template`), a `.jinja` chat template file, or the text of a chat
    template (a string holding `{%` or `{{`).

    Raises `respc.registry.PresetNotFound` when nothing matches (the message lists every step tried),
    `AmbiguousPreset` (a `PresetNotFound`) when two presets match equally well, and `respc.InputError`
    for an unreadable file.
    """
    if isinstance(source, str) and _is_template_text(source):
        return _detect_in_template("<chat template>", [source], passed_over=[], finish=True)
    path = Path(source)
    if path.is_dir():
        return _detect_in_directory(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory (nor a chat template: no '{{%' or '{{{{')")
    if path.suffix == ".jinja":
        return _detect_in_template(str(path), [read_text(path)], passed_over=[], finish=True)
    config = read_json(path, expect=dict)
    if config.get("response_template") is not None:
        return Detection(None, "response_template", (), str(path))
    passed: list[str] = [f"response_template ({path.name}): none"]
    texts = _config_templates(config, path)
    if not texts:
        passed.append(f"chat template ({path.name}): none")
    found = _detect_in_template(str(path), texts, passed, finish=False) if texts else None
    if found is not None:
        return found
    repo_id = config.get("name_or_path") or config.get("_name_or_path")
    found = _by_repo_id(repo_id, "repo id", f"{path.name} name_or_path", passed)
    if found is not None:
        return found
    raise _not_found(str(path), passed)


def chat_templates(directory: str | os.PathLike) -> tuple[str, list[str]]:
    """The chat templates of a model directory, as transformers loads them, and the file they came from.

    Separate files (`chat_template.jinja`, `additional_chat_templates/*.jinja`) take priority over
    `tokenizer_config.json`'s `chat_template` (a string, or a list of named templates); a processor's
    `chat_template.json` comes last. Every named template is returned: the tool-use one is usually the
    one that shows the call format.
    """
    directory = Path(directory)
    files = [directory / CHAT_TEMPLATE_FILE] if (directory / CHAT_TEMPLATE_FILE).is_file() else []
    if (directory / CHAT_TEMPLATE_DIR).is_dir():
        files += sorted((directory / CHAT_TEMPLATE_DIR).glob("*.jinja"))
    if files:
        shown = CHAT_TEMPLATE_FILE if files[0].name == CHAT_TEMPLATE_FILE else f"{CHAT_TEMPLATE_DIR}/"
        return shown, [read_text(f) for f in files]
    for name in ("tokenizer_config.json", PROCESSOR_TEMPLATE_FILE):
        config = read_json(directory / name, missing={}, expect=dict)
        texts = _config_templates(config, directory / name)
        if texts:
            return name, texts
    return "", []


def _is_template_text(source: str) -> bool:
    return "{%" in source or "{{" in source


def _config_templates(config: dict[str, Any], path: Path) -> list[str]:
    """The `chat_template` of a JSON config: a string, or transformers' list of `{name, template}`."""
    value = config.get("chat_template")
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(
        isinstance(t, dict) and isinstance(t.get("template"), str) for t in value
    ):
        return [t["template"] for t in value]
    raise InputError(
        f'{path}: \'chat_template\' must be a string or a list of {{"name", "template"}} objects, '
        f"not {type(value).__name__}"
    )


def _detect_in_template(
    where: str, texts: list[str], passed_over: list[str], *, finish: bool
) -> Detection | None:
    try:
        match = match_chat_template("\n".join(texts))
    except AmbiguousPreset as error:
        raise AmbiguousPreset(f"{where}: {error}", error.candidates) from None
    except UnsupportedFormat as error:
        raise UnsupportedFormat(f"{where}: {error}") from None
    if match is not None:
        return _detection(match, where, passed_over)
    passed_over.append(f"chat template ({where}): no preset's markers found")
    if finish:
        raise _not_found(where, passed_over)
    return None


def _detect_in_directory(path: Path) -> Detection:
    config = read_json(path / "tokenizer_config.json", missing={}, expect=dict)
    if config.get("response_template") is not None:
        return Detection(None, "response_template", (), "tokenizer_config.json")
    passed: list[str] = ["response_template (tokenizer_config.json): none"]
    where, texts = chat_templates(path)
    if texts:
        found = _detect_in_template(where, texts, passed, finish=False)
        if found is not None:
            return found
    else:
        passed.append("chat template: none (no chat_template.jinja, tokenizer_config.json chat_template)")
    model_config = read_json(path / "config.json", missing={}, expect=dict)
    repo_id, where = _repo_id(path, model_config, config)
    found = _by_repo_id(repo_id, "repo id", where, passed)
    if found is not None:
        return found
    model_type = model_config.get("model_type")
    ambiguous = None
    if not isinstance(model_type, str):
        passed.append("model_type: config.json gives none")
    else:
        try:
            match = match_model_type(model_type)
        except AmbiguousPreset as error:
            ambiguous, match = error, None
            passed.append(f"model_type (config.json): {error}")
        if match is not None:
            return _detection(match, "config.json", passed)
        if ambiguous is None:
            passed.append(f"model_type (config.json): no preset lists {model_type!r}")
    found = _by_repo_id(path.resolve().name, "directory name", str(path), passed)
    if found is not None:
        return found
    if ambiguous is not None:
        raise AmbiguousPreset(f"{path}: {ambiguous}", ambiguous.candidates)
    raise _not_found(str(path), passed)


def _repo_id(path: Path, model_config: dict, tokenizer_config: dict) -> tuple[Any, str]:
    """The repository id a directory was saved from, and where it was read: `config.json`'s
    `_name_or_path`, `tokenizer_config.json`'s `name_or_path` (transformers 5 drops both when saving),
    else a Hugging Face cache path (`models--ORG--NAME/snapshots/HASH`)."""
    for value, where in (
        (model_config.get("_name_or_path"), "config.json _name_or_path"),
        (tokenizer_config.get("name_or_path"), "tokenizer_config.json name_or_path"),
    ):
        if isinstance(value, str) and value.strip():
            return value, where
    for part in reversed(path.resolve().parts):
        if part.startswith("models--") and "--" in part[len("models--") :]:
            return part[len("models--") :].replace("--", "/", 1), "the Hugging Face cache path"
    return None, "config.json _name_or_path"


def _by_repo_id(repo_id: Any, by: str, where: str, passed_over: list[str]) -> Detection | None:
    if not isinstance(repo_id, str) or not repo_id.strip():
        passed_over.append(f"{by}: {where} gives none")
        return None
    try:
        match = match_repo_id(repo_id)
    except AmbiguousPreset as error:
        raise AmbiguousPreset(f"{where}: {error}", error.candidates) from None
    if match is None:
        passed_over.append(f"{by} ({where}): no family pattern matches {repo_id!r}")
        return None
    return Detection(match.preset, by, match.evidence, where, tuple(passed_over))


def _detection(match: Match, where: str, passed_over: list[str]) -> Detection:
    return Detection(match.preset, match.by, match.evidence, where, tuple(passed_over))


def _not_found(where: str, passed_over: list[str]) -> LookupError:
    from respc.registry import PresetNotFound

    steps = "; ".join(passed_over)
    error = PresetNotFound(
        f"{where}: no shipped preset matches ({steps}); name one with --preset / respc.load_preset, "
        "or add a response_template (respc.model.write_response_template)"
    )
    error.passed_over = tuple(passed_over)  # for callers that word it their own way (model_template)
    return error
