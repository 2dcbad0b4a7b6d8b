"""Where templates come from: a SOURCE argument (`load_source`) and a model directory (`model_template`),
and writing a template back into a tokenizer config (`write_response_template`)."""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any

from respc._io import InputError, decode_json, read_json, read_stdin, read_text, write_atomic

__all__ = ["ResponseTemplateNotFound", "load_source", "model_template", "write_response_template"]


class ResponseTemplateNotFound(LookupError):
    """A model directory has no `response_template` and no shipped preset matches it."""


def model_template(path: str | os.PathLike) -> tuple[Any, types.ModuleType | None]:
    """The response template of a model directory and, when it is a shipped preset's, that preset's module.

    `tokenizer_config.json`'s `response_template` wins; a null or missing one falls back to the preset
    `respc.detect` finds (chat template, then `model_type`, then repository id). Nothing found raises
    `ResponseTemplateNotFound` naming every step tried; two presets matching equally well
    `respc.registry.AmbiguousPreset`; a path that is not a directory, or a file in it that cannot be
    read, `respc.InputError`.
    """
    from respc.model.detect import detect
    from respc.registry import AmbiguousPreset, PresetNotFound, UnsupportedFormat, load_preset

    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: not a model directory")
    try:
        found = detect(path)
    except AmbiguousPreset:
        raise
    except UnsupportedFormat as error:
        raise ResponseTemplateNotFound(
            f"{path}: tokenizer_config.json has no response_template, and {error}"
        ) from None
    except PresetNotFound as error:
        steps = "; ".join(getattr(error, "passed_over", ())[1:])  # [0]: no response_template
        raise ResponseTemplateNotFound(
            f"{path}: tokenizer_config.json has no response_template, and no shipped preset matches it "
            f"({steps}); add one with respc.model.write_response_template, or name a preset"
        ) from None
    except ModuleNotFoundError as error:
        if error.name != "respc.generated._registry":
            raise
        raise ResponseTemplateNotFound(
            f"{path}: tokenizer_config.json has no response_template, and this respc ships no presets"
        ) from None
    if found.preset is None:
        template = read_json(path / "tokenizer_config.json", expect=dict)["response_template"]
        return template, None
    preset = load_preset(found.preset)
    return preset.TEMPLATE, preset


def load_source(source: str) -> tuple[Any, str]:
    """The response template a SOURCE argument names, and the name to show for it.

    SOURCE is a template `.json`, a `tokenizer_config.json` (its `response_template` key), a model
    directory (its template, else the preset for its model type), or `-` for standard input. The shown
    name is never an absolute path, so generated headers do not depend on where the command ran.
    Unreadable input raises `respc.InputError`; a directory without a template `ResponseTemplateNotFound`.
    """
    if source == "-":
        return _unwrap(decode_json(read_stdin(), "<stdin>"), Path("<stdin>")), "<stdin>"
    path = Path(source)
    if path.is_dir():
        template, preset = model_template(path)
        if preset is not None:
            return template, f"{preset.__name__.rpartition('.')[2]} preset (for {path.name})"
        config = path / "tokenizer_config.json"
        return template, config.name if path.is_absolute() else config.as_posix()
    name = path.name if path.is_absolute() else path.as_posix()
    return _unwrap(decode_json(read_text(path), str(path)), path), name


def _unwrap(data: Any, path: Path) -> Any:
    """A tokenizer config's `response_template`, or the data itself when it is a bare template."""
    if isinstance(data, dict) and "fields" not in data:
        if "response_template" in data:
            if data["response_template"] is None:
                raise InputError(f"{path}: 'response_template' is null")
            return data["response_template"]
        if path.name == "tokenizer_config.json" or "tokenizer_class" in data:
            raise InputError(f"{path}: has no 'response_template' key")
    return data


def write_response_template(path: str | os.PathLike, template: Any) -> Path:
    """Set `response_template` in a `tokenizer_config.json` (or a model directory's), atomically.

    Every other key keeps its value and position, and the file keeps its permissions. The template is
    validated first so a model is never left with one that fails to load.
    """
    from respc.spec import load_template

    load_template(template)
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer_config.json"
    config = read_json(path, missing={}, expect=dict)
    config["response_template"] = template
    write_atomic(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return path
