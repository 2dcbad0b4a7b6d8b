"""Where a chat template comes from: a model directory, a `.jinja` file or a JSON config, read as
transformers' `AutoTokenizer.from_pretrained` reads them, with the special tokens it renders with."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from respc._io import InputError, read_json, read_text
from respc.authoring.rendering import ChatTemplate

__all__ = ["NoChatTemplate", "load_chat_template", "special_tokens"]

# transformers' file names (utils/__init__.py) and its named special tokens (SPECIAL_TOKENS_ATTRIBUTES)
CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
PROCESSOR_TEMPLATE_FILE = "chat_template.json"
NAMED_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class NoChatTemplate(LookupError):
    """A model directory or config holds no chat template."""


def load_chat_template(source: str | os.PathLike) -> ChatTemplate:
    """The chat template of `source`: a model directory (`chat_template.jinja` and
    `additional_chat_templates/`, else `tokenizer_config.json`'s `chat_template`, else a processor's
    `chat_template.json`), a `.jinja` file, or a JSON config holding `chat_template`. Special tokens come
    from the directory's (or the config's own) `tokenizer_config.json`; a `.jinja` file has none.

    Raises `respc.InputError` for an unreadable file and `NoChatTemplate` when there is no template.
    """
    path = Path(source)
    if path.is_dir():
        return _from_directory(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.suffix == ".jinja":
        return ChatTemplate(read_text(path), {}, str(path))
    config = read_json(path, expect=dict)
    template = _config_template(config, path)
    if template is None:
        raise NoChatTemplate(f"{path}: has no 'chat_template'")
    return ChatTemplate(template, special_tokens(config), str(path))


def _from_directory(path: Path) -> ChatTemplate:
    config = read_json(path / "tokenizer_config.json", missing={}, expect=dict)
    legacy = path / "special_tokens_map.json"
    tokens = special_tokens(config, read_json(legacy, expect=dict) if legacy.is_file() else None)
    named: dict[str, str] = {}
    if (path / CHAT_TEMPLATE_FILE).is_file():
        named["default"] = read_text(path / CHAT_TEMPLATE_FILE)
    if (path / CHAT_TEMPLATE_DIR).is_dir():
        named |= {f.stem: read_text(f) for f in sorted((path / CHAT_TEMPLATE_DIR).glob("*.jinja"))}
    if named:  # separate files take priority over the config's entry, as transformers loads them
        where = path / (CHAT_TEMPLATE_FILE if "default" in named else CHAT_TEMPLATE_DIR)
        template: Any = named["default"] if list(named) == ["default"] else named
        return ChatTemplate(template, tokens, str(where))
    for name in ("tokenizer_config.json", PROCESSOR_TEMPLATE_FILE):
        template = _config_template(read_json(path / name, missing={}, expect=dict), path / name)
        if template is not None:
            return ChatTemplate(template, tokens, str(path / name))
    raise NoChatTemplate(
        f"{path}: no chat template ({CHAT_TEMPLATE_FILE}, {CHAT_TEMPLATE_DIR}/, tokenizer_config.json's "
        f"chat_template or {PROCESSOR_TEMPLATE_FILE})"
    )


def _config_template(config: dict[str, Any], path: Path) -> str | dict[str, str] | None:
    """A config's `chat_template`: a string, or transformers' list of `{"name", "template"}` (a dict)."""
    value = config.get("chat_template")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("template"), str)
        for t in value
    ):
        return {t["name"]: t["template"] for t in value}
    raise InputError(
        f'{path}: \'chat_template\' must be a string or a list of {{"name", "template"}} objects, '
        f"not {type(value).__name__}"
    )


def special_tokens(config: dict[str, Any], legacy_map: dict[str, Any] | None = None) -> dict[str, str]:
    """`tokenizer.special_tokens_map` of a tokenizer loaded from `config` (a `tokenizer_config.json`):
    the named tokens (`bos_token`, `eos_token`, ...) and the model-specific ones (other `*_token` keys, an
    `extra_special_tokens` object, `model_specific_special_tokens`), each a string or an `AddedToken`
    object. `legacy_map` is `special_tokens_map.json`, which transformers reads only when the config has
    no `added_tokens_decoder`. A tokenizer class's own defaults (for a token the config leaves out) are
    not known here.
    """
    init = dict(config)
    if "additional_special_tokens" in init and not init.get("extra_special_tokens"):
        init["extra_special_tokens"] = init.pop("additional_special_tokens")
    model_specific = {
        key: init.pop(key)
        for key in list(init)
        if key not in NAMED_TOKENS and key.endswith("_token") and isinstance(init[key], str)
    }
    if isinstance(init.get("extra_special_tokens"), dict):
        model_specific.update(init.pop("extra_special_tokens"))
    if model_specific:
        init["model_specific_special_tokens"] = model_specific
    if "added_tokens_decoder" not in init and legacy_map is not None:
        for key, value in legacy_map.items():
            if isinstance(value, dict) and key != "extra_special_tokens":
                value = _content(value)
            init[key] = value
        if isinstance(init.get("extra_special_tokens"), dict):
            init.setdefault("model_specific_special_tokens", {}).update(init.pop("extra_special_tokens"))
    init = _added_tokens(init)

    tokens: dict[str, str] = {}
    for key in NAMED_TOKENS:
        value = init.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InputError(f"tokenizer_config.json: '{key}' must be a string or an AddedToken object")
        tokens[key] = value
    extra = init.get("extra_special_tokens")
    auto = {
        key: value
        for key, value in init.items()
        if key not in NAMED_TOKENS and key.endswith("_token") and isinstance(value, str)
    }
    explicit = init.get("model_specific_special_tokens") or {}
    for group in (extra if isinstance(extra, dict) else {}, {**auto, **explicit}):
        for key, value in group.items():
            if not isinstance(value, str):
                raise InputError(
                    f"tokenizer_config.json: special token '{key}' must be a string or an AddedToken"
                )
            tokens[key] = value
    return tokens


def _content(token: dict[str, Any]) -> Any:
    return token.get("content", token)


def _added_tokens(value: Any) -> Any:
    """transformers' `convert_added_tokens`: `{"__type": "AddedToken", "content": ...}` objects, at any
    depth, become their text."""
    if isinstance(value, dict) and value.get("__type") == "AddedToken":
        return value.get("content")
    if isinstance(value, (list, tuple)):
        return [_added_tokens(item) for item in value]
    if isinstance(value, dict):
        return {key: _added_tokens(item) for key, item in value.items()}
    return value
