"""The shipped presets: find the parser module for a model (runtime only, no compiler needed)."""

from __future__ import annotations

import importlib
import types

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PresetNotFound", "load_preset", "preset_for", "preset_info", "presets"]


class PresetNotFound(LookupError):
    """No shipped preset matches the name, model type or repository id."""


def _registry() -> dict[str, dict[str, Any]]:
    from respc.generated._registry import PRESETS

    return PRESETS


def presets() -> list[str]:
    """The names of the shipped presets, sorted."""
    return sorted(_registry())


def preset_info(name: str) -> dict[str, Any]:
    """What the index records for a preset: model types, repository ids, special tokens, prefill..."""
    registry = _registry()
    if name not in registry:
        raise PresetNotFound(_not_found(f"no preset named {name!r}", name))
    return registry[name]


def load_preset(name: str, target: str | None = None) -> types.ModuleType:
    """The generated parser module of the preset `name`.

    The shipped modules parse as the newest supported transformers release; another `target` compiles
    the preset's template for that release (once, in memory; needs the compiler extra).
    """
    preset_info(name)
    module = importlib.import_module(f"respc.generated.{name}")
    if target is None or target == module.TRANSFORMERS_TARGET:
        return module
    from respc._compile import compile_template

    return compile_template(module.TEMPLATE, target=target)


def preset_for(model: str, target: str | None = None) -> types.ModuleType:
    """The preset for a Hub repository id or a `model_type`: exact id, then id ignoring case, then type.

    A model type that several presets list (`glm4_moe` covers GLM-4.5 and GLM-4.7) goes to the preset
    named after it, else to the first by name: pass the repository id to be exact. `target` as for
    `load_preset`.
    """
    registry = _registry()
    for match in (lambda ids, m: m in ids, lambda ids, m: m.lower() in {i.lower() for i in ids}):
        for name, info in sorted(registry.items()):
            if match(info["repo_ids"], model):
                return load_preset(name, target)
    model_type = model.lower()
    if model_type in registry and model_type in registry[model_type]["model_types"]:
        return load_preset(
            model_type, target
        )  # a model type several presets share goes to the one named after it
    for name, info in sorted(registry.items()):
        if model_type in info["model_types"]:
            return load_preset(name, target)
    if model in registry:
        return load_preset(model, target)
    raise PresetNotFound(_not_found(f"no preset for {model!r}", model))


def _not_found(message: str, wanted: str) -> str:
    import difflib

    registry = _registry()
    candidates = {name: name for name in registry}
    for name, info in registry.items():
        candidates.update({key: name for key in [*info["repo_ids"], *info["model_types"]]})
    close = difflib.get_close_matches(wanted, list(candidates), n=5, cutoff=0.4)
    names = sorted(dict.fromkeys(candidates[c] for c in close))
    hint = f"; closest presets: {', '.join(names)}" if names else ""
    return f"{message}{hint}. Shipped presets: {', '.join(sorted(registry))}"
