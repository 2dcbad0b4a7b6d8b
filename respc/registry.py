"""The shipped presets: find the parser module for a model (runtime only, no compiler needed).

Three kinds of evidence name a preset, each recorded per preset in `respc/presets/index.json`:

- chat-template markers (`detect`): literal substrings of the model's Jinja chat template, the way
  llama.cpp and mlx-lm choose a tool-call format. A preset matches when every marker of one of its
  `any_of` groups is present and none of its `none_of` markers is; the highest `rank` wins.
- `model_types`: `config.json`'s `model_type`, as transformers' serving falls back.
- repository ids: the exact `repo_ids`, then family patterns (`repo_patterns`, and at a higher rank
  `derived_repo_patterns` for fine-tunes named after their base) matched against the id with its
  re-publisher organisation and quantisation suffixes removed (`normalise_repo_id`).

Two presets that match equally well raise `AmbiguousPreset`, never a silent pick.
"""

from __future__ import annotations

import functools
import importlib
import re
import types
from collections import namedtuple

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "AmbiguousPreset",
    "Match",
    "PresetNotFound",
    "TargetTooOld",
    "UnsupportedFormat",
    "load_preset",
    "match_chat_template",
    "match_model",
    "match_model_type",
    "match_repo_id",
    "normalise_repo_id",
    "preset_for",
    "preset_info",
    "preset_name",
    "presets",
]


class PresetNotFound(LookupError):
    """No shipped preset matches the name, model type, repository id or chat template."""


class AmbiguousPreset(PresetNotFound):
    """Several presets match equally well; `candidates` names them (best evidence first)."""

    def __init__(self, message: str, candidates: tuple[str, ...]) -> None:
        super().__init__(message)
        self.candidates = candidates


class UnsupportedFormat(PresetNotFound):
    """The chat template shows a format no preset can express (the index's `_not_expressible`)."""


class TargetTooOld(ValueError):
    """A preset needs a newer transformers target than the one asked for (its `min_target`)."""


class Match(namedtuple("Match", "preset by evidence rank", defaults=(0,))):
    """Why a preset was chosen: `by` ("repo id", "model_type", "name" or "chat template"), the evidence
    (the id, type or name; the family pattern; the chat-template markers found) and its rank."""

    __slots__ = ()


# The organisation is ignored: re-publishers (unsloth, mlx-community, lmstudio-community, bartowski,
# RedHatAI, ...) keep the upstream name, and fine-tuners name their model after the base it behaves like.
# bartowski and others prefix the upstream organisation: `bartowski/Qwen_Qwen3-8B-GGUF`.
_UPSTREAM_PREFIX = (
    r"(?:qwen|meta-llama|mistralai|deepseek-ai|google|openai|zai-org|thudm|ibm-granite|nvidia|moonshotai"
    r"|liquidai|allenai|microsoft|nousresearch|baidu|tencent|minimaxai|bytedance-seed|huggingfacetb"
    r"|coherelabs|cohereforai|ai21labs|stepfun-ai|meituan-longcat|internlm)_"
)
# Format and quantisation suffixes, stripped repeatedly (`-Instruct-4bit-DWQ` -> `-Instruct`).
# `-Instruct`, `-Thinking`, `-Coder`, `-Distill`, `-Base` carry meaning and stay.
_QUANT_SUFFIX = (
    r"[-_.](?:i1-gguf|gguf|mlx(?:-\d+bits?)?|\d+(?:\.\d+)?bits?|bnb-4bit|unsloth-bnb-4bit|unsloth|awq(?:-int4)?"
    r"|gptq(?:-int[348])?|int[348]|fp[48](?:-dynamic|-block|-static)?|fp16|bf16|nvfp4|mxfp4(?:-q8)?|dwq"
    r"|w[48]a(?:8|16)|quantized(?:\.w[48]a(?:8|16))?|(?:ud-)?i?q[1-8](?:_[a-z0-9]+)*|exl2|hf|dynamic|ov"
    r"|autoround)$"
)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _registry() -> dict[str, dict[str, Any]]:
    from respc.generated._registry import PRESETS

    return PRESETS


def presets() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(_registry())


def preset_name(name: str) -> str:
    """The shipped preset `name` means, the one resolver of every entry point (`--preset`,
    `load_preset`, `respc presets NAME`): a preset's name in any case, else a `model_type` or a Hub
    repository id (`match_model`). Else `PresetNotFound`, suggesting the closest names."""
    if not isinstance(name, str):
        raise TypeError(f"a preset name is a str, not {type(name).__name__}")
    registry = _registry()
    if name in registry:
        return name
    if name.strip().lower() in registry:
        return name.strip().lower()
    try:
        return match_model(name).preset
    except (AmbiguousPreset, UnsupportedFormat):
        raise  # (their message says why: two presets list the type, a known format respc lacks)
    except PresetNotFound:
        raise PresetNotFound(_not_found(f"no preset named {name!r}", name)) from None


def preset_info(name: str) -> dict[str, Any]:
    """What the index records for a preset (`preset_name` resolves `name`): families, model types,
    repository ids and patterns, chat-template markers, end tokens, special tokens, prefill, the
    minimum target..."""
    return _registry()[preset_name(name)]


def load_preset(name: str, target: str | None = None) -> types.ModuleType:
    """The generated parser module of the preset `name`.

    The shipped modules parse as the newest supported transformers release; another `target` compiles
    the preset's template for that release (once, in memory; needs the compiler extra). A preset that
    needs a newer release than `target` (its `min_target`) raises `TargetTooOld`.
    """
    name = preset_name(name)
    info = preset_info(name)
    module = importlib.import_module(f"respc.generated.{name}")
    if target is None or target == module.TRANSFORMERS_TARGET:
        return module
    from respc.runtime.targets import SUPPORTED_TARGETS, get_target

    release = get_target(target).name
    if SUPPORTED_TARGETS.index(release) < SUPPORTED_TARGETS.index(info["min_target"]):
        raise TargetTooOld(
            f"preset {name!r} needs transformers {info['min_target']} or newer, not {release}: "
            "its template uses what that release added"
        )
    from respc._compile import compile_template

    return compile_template(module.TEMPLATE, target=target)


def preset_for(model: str, target: str | None = None) -> types.ModuleType:
    """The preset for a Hub repository id, a `model_type` or a preset name (`match_model` decides).

    `target` as for `load_preset`.
    """
    return load_preset(match_model(model).preset, target)


def match_model(model: str) -> Match:
    """Which preset `model` names, and why: a `model_type` (`match_model_type`), else a preset name,
    else a repository id (`match_repo_id`: the exact ids the index lists, then family patterns)."""
    if not isinstance(model, str):
        raise TypeError(f"a repository id or model type is a str, not {type(model).__name__}")
    found = match_model_type(model)
    if found is None and model.strip().lower() in _registry():
        found = Match(model.strip().lower(), "name", (model,))
    if found is None:
        found = match_repo_id(model)
    if found is None:
        raise PresetNotFound(_not_found(f"no preset for {model!r}", model))
    return found


def match_model_type(model_type: str) -> Match | None:
    """The preset for a `config.json` `model_type`, or None.

    A type several presets list goes to the preset named after it (`deepseek_v3`); with none so named
    (`glm4_moe`: GLM-4.5 and GLM-4.7) it raises `AmbiguousPreset`: the repository id or the chat
    template decides.
    """
    wanted = model_type.strip().lower()
    owners = sorted(name for name, info in _registry().items() if wanted in info["model_types"])
    if len(owners) == 1 or wanted in owners:
        return Match(wanted if wanted in owners else owners[0], "model_type", (wanted,))
    if owners:
        raise AmbiguousPreset(
            f"model type {wanted!r} is listed by presets {', '.join(owners)}; "
            "pass the repository id or the preset name to choose",
            tuple(owners),
        )
    return None


def normalise_repo_id(repo_id: str) -> str:
    """The model name a repository id or local path stands for, lower-case, without its organisation,
    the upstream organisation a re-publisher prefixes, or quantisation and format suffixes:
    `bartowski/Qwen_Qwen3-8B-GGUF` -> `qwen3-8b`, `mlx-community/Qwen3-30B-A3B-4bit` -> `qwen3-30b-a3b`.
    """
    name = repo_id.strip().rstrip("/").replace("\\", "/").rpartition("/")[2].lower()
    name = _compiled(f"^{_UPSTREAM_PREFIX}").sub("", name)
    suffix = _compiled(_QUANT_SUFFIX)
    while True:
        shorter = suffix.sub("", name)
        if shorter == name or not shorter:
            return name
        name = shorter


def match_repo_id(repo_id: str) -> Match | None:
    """The preset for a repository id (or a local path named after one), or None: an id the index
    lists (ignoring case), else the preset whose family patterns match the normalised id best.

    Derived patterns (fine-tunes named after their base: `Hermes-3-Llama-3.1`, `DeepSeek-R1-Distill-Qwen`)
    outrank base patterns; two presets at the best rank raise `AmbiguousPreset`; a family known to be
    inexpressible (`DeepSeek-V3.2`, `Olmo-3`) raises `UnsupportedFormat` with the reason.
    """
    exact = repo_id.strip().lower()
    for preset, info in sorted(_registry().items()):
        if exact in (known.lower() for known in info["repo_ids"]):
            return Match(preset, "repo id", (repo_id,))
    return _family_match(repo_id)


def _family_match(repo_id: str) -> Match | None:
    """`match_repo_id` by family patterns only (the listed ids aside)."""
    name = normalise_repo_id(repo_id)
    for family, evidence in _unsupported().items():
        hit = next((p for p in evidence["repo_patterns"] if _compiled(p).search(name)), None)
        if hit is not None:
            raise _unsupported_error(f"repository id {repo_id!r}", family, (hit,))
    found: list[Match] = []
    for preset, info in sorted(_registry().items()):
        for rank, key in ((1, "derived_repo_patterns"), (0, "repo_patterns")):
            hit = next((p for p in info[key] if _compiled(p).search(name)), None)
            if hit is not None:
                found.append(Match(preset, "repo id", (repo_id, hit), rank))
                break
    return _best(found, f"repository id {repo_id!r} (read as {name!r})")


def match_chat_template(text: str) -> Match | None:
    """The preset whose chat-template markers `text` (a Jinja chat template) holds best, or None.

    Markers are compared as written and with escaped newlines decoded, so a template pasted from a JSON
    file matches too. Evidence is the group of markers found. A template showing a format no preset
    can express (DeepSeek's DSML, Llama 4's stock JSON template) raises `UnsupportedFormat` with the
    reason, rather than falling back to a near miss.
    """
    variants = (text, text.replace("\\n", "\n")) if "\\n" in text else (text,)
    for family, evidence in _unsupported().items():
        group = next((g for g in evidence["chat_template"] for v in variants if all(m in v for m in g)), None)
        if group is not None:
            raise _unsupported_error("the chat template", family, group)
    found: list[Match] = []
    for preset, info in sorted(_registry().items()):
        detect = info["detect"]
        for variant in variants:
            if any(marker in variant for marker in detect["none_of"]):
                continue
            group = next((g for g in detect["any_of"] if all(m in variant for m in g)), None)
            if group is not None:
                found.append(Match(preset, "chat template", tuple(group), detect["rank"]))
                break
    return _best(found, "the chat template")


def _unsupported() -> dict[str, dict[str, list]]:
    from respc.generated._registry import UNSUPPORTED

    return UNSUPPORTED


def _unsupported_error(what: str, family: str, evidence: tuple | list) -> UnsupportedFormat:
    from respc.generated._registry import NOT_EXPRESSIBLE

    shown = ", ".join(map(repr, evidence))
    return UnsupportedFormat(
        f"{what} shows {family} ({shown}), which no preset expresses: {NOT_EXPRESSIBLE[family]}"
    )


def _best(found: list[Match], what: str) -> Match | None:
    if not found:
        return None
    top = max(match.rank for match in found)
    best = [match for match in found if match.rank == top]
    if len(best) > 1:
        reasons = "; ".join(f"{m.preset} ({', '.join(map(repr, m.evidence))})" for m in best)
        raise AmbiguousPreset(
            f"{what} matches presets equally well: {reasons}; choose one by name "
            "(respc.load_preset, --preset) or write a response_template",
            tuple(m.preset for m in best),
        )
    return best[0]


def _not_found(message: str, wanted: str) -> str:
    """`message` and, on the same short line, the presets `wanted` most likely meant: those whose name
    it is part of (`llama`: llama3_json, llama3_pythonic, llama4) or that appear in it, else the closest
    by spelling among names, model types and repository ids."""
    import difflib

    registry = _registry()
    key = normalise_repo_id(wanted) if isinstance(wanted, str) else ""
    names = sorted(name for name in registry if key and (key in name or name in key))
    if not names:
        candidates = {name: name for name in registry}
        for name, info in registry.items():
            keys = [
                *info["repo_ids"],
                *(normalise_repo_id(i) for i in info["repo_ids"]),
                *info["model_types"],
            ]
            candidates.update({known.lower(): name for known in keys})
        close = difflib.get_close_matches(key, list(candidates), n=8, cutoff=0.6)
        names = list(dict.fromkeys(candidates[c] for c in close))
    hint = f"; did you mean {', '.join(names[:4])}?" if names else ""
    return f"{message}{hint} (`respc presets` lists all {len(registry)} with their models)"
