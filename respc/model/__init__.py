"""Models on disk: where a model's parser comes from, and `respc.for_model(path)`, which binds it to the
model's tokenizer.

The parser is the template's own compiled module when `tokenizer_config.json` has a `response_template`
(compiled once, then loaded from an on-disk cache keyed by the template hash: `respc._compile`), else the
shipped preset `respc.detect` finds from the chat template, `model_type` or repository id (`detect.py`).
Loading a warm cache needs neither the compiler extra nor transformers nor torch.
"""

from __future__ import annotations

import contextlib
import os
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._compile import CACHE_ENV, cache_dir, compile_template
from respc._io import InputError
from respc.model.detect import Detection, chat_templates, detect
from respc.model.sources import (
    ResponseTemplateNotFound,
    load_source,
    model_template,
    write_response_template,
)
from respc.runtime.tokenizer import (
    TokenDecoder,
    TokenStreamParser,
    load_tokenizer,
    parse_with_tokenizer,
    response_parser_with_tokenizer,
)


class _NoTokenizer(TokenDecoder):
    """A model directory without a usable tokenizer.json: text parses, token ids raise `problem`."""

    def __init__(self, problem: Exception) -> None:
        self.problem = problem

    def decode_one(self, ids: list[int]) -> str:
        raise type(self.problem)(f"{self.problem} (token ids need it; text does not)")


def _model_tokenizer(path: Path) -> TokenDecoder:
    """The directory's tokenizer, or, when it has no tokenizer.json (or the `tokenizers` package is
    missing), one that fails only when asked to decode ids."""
    try:
        return load_tokenizer(path)
    except (FileNotFoundError, ImportError) as error:
        return _NoTokenizer(error)


__all__ = [
    "CACHE_ENV",
    "Detection",
    "ModelParser",
    "ResponseTemplateNotFound",
    "cache_dir",
    "chat_templates",
    "detect",
    "detection_sources",
    "for_model",
    "for_tokenizer",
    "load_source",
    "model_template",
    "tokenizer_detection",
    "write_response_template",
]


@dataclass(frozen=True)
class ModelParser:
    """A compiled parser bound to a model's tokenizer, with the tokenizer methods' names and behaviour."""

    path: Path
    module: types.ModuleType  # the generated module: TEMPLATE, parse_response, ResponseParser
    tokenizer: TokenDecoder
    origin: str  # "tokenizer_config.json", "preset <name>" or "inferred from <chat template file>"
    evidence: tuple[str, ...] = ()  # for an inferred template: what it was read from, and its warnings

    @property
    def response_template(self) -> Any:
        return self.module.TEMPLATE

    def parse_response(
        self, response: Any, *, prefix: Any = None, tools: list | None = None
    ) -> dict | list[dict]:
        """`tokenizer.parse_response`: text, ids, batches or arrays in; a dict, or a list for a batch."""
        return parse_with_tokenizer(
            self.module.parse_response, response, prefix=prefix, tools=tools, tokenizer=self.tokenizer
        )

    def get_response_parser(self, *, prefix: Any = None, tools: list | None = None) -> TokenStreamParser:
        """`tokenizer.get_response_parser`: a streaming parser that also takes ids (`feed_ids`)."""
        return response_parser_with_tokenizer(
            self.module.ResponseParser, prefix=prefix, tools=tools, tokenizer=self.tokenizer
        )


def for_model(
    path: str | os.PathLike,
    *,
    cache: str | os.PathLike | None = None,
    target: str | None = None,
    preset: str | None = None,
    infer: bool = False,
) -> ModelParser:
    """The parser for the model directory `path` (or a repository id in the local Hugging Face cache:
    `respc.model.hub`; never downloaded), bound to its tokenizer.json (needed for token ids only: without
    one, text parses and ids raise `FileNotFoundError`).

    The parser is the shipped preset named `preset` when given (it replaces detection, the directory's
    own `response_template` included: use it to settle a `respc.AmbiguousPreset` or a model no preset
    is detected for), else the directory's own `response_template`, else the preset `respc.detect`
    finds (chat template, repository id, `model_type`), else, with `infer=True`, the template
    `respc infer` derives from the chat template (needs the authoring extra; `origin` and `evidence`
    say so; a refusal raises `ResponseTemplateNotFound` with its reason).
    `cache` overrides the compiled-module cache directory (see `cache_dir`); `target` is the
    transformers release to parse as (default: the newest supported).
    """
    from respc.registry import load_preset

    path = _model_path(path)
    if preset is not None:
        if not path.is_dir():
            from respc._io import InputError

            raise InputError(f"{path}: not a model directory")
        return ModelParser(path, load_preset(preset, target), _model_tokenizer(path), f"preset {preset}")
    try:
        template, module = model_template(path)
    except ResponseTemplateNotFound as error:
        if not infer:
            raise
        return _inferred(path, str(error), cache=cache, target=target)
    if module is not None:
        name = module.__name__.rpartition(".")[2]
        return ModelParser(path, load_preset(name, target), _model_tokenizer(path), f"preset {name}")
    module = compile_template(template, target=target, cache=cache_dir() if cache is None else cache)
    return ModelParser(path, module, _model_tokenizer(path), "tokenizer_config.json")


def _model_path(path: str | os.PathLike) -> Path:
    """A model directory as given, or the cached snapshot of a repository id that is not a directory."""
    from respc.model import hub

    if isinstance(path, str) and not Path(path).exists() and hub.is_repo_id(path):
        return hub.snapshot(path)
    return Path(path)


def for_tokenizer(
    tokenizer: Any,
    *,
    target: str | None = None,
    preset: str | None = None,
    cache: str | os.PathLike | None = None,
) -> ModelParser:
    """The parser for a loaded transformers tokenizer (or a processor's), bound to it: decoding ids as its
    `decode` does. The parser is the preset named `preset` when given, else the tokenizer's
    `response_template` (as it is now), else the shipped preset respc detects for it (directory or cached
    repository, chat template; `origin` says which and why). `target` defaults to the installed
    transformers' release (`respc.runtime.targets.installed_target`).
    """
    from respc.registry import load_preset
    from respc.runtime.targets import installed_target

    if "ProcessorMixin" in {kind.__name__ for kind in type(tokenizer).__mro__}:
        tokenizer = tokenizer.tokenizer
    target = installed_target() if target is None else target
    path = Path(getattr(tokenizer, "name_or_path", "") or ".")
    decoder = load_tokenizer(tokenizer)
    if preset is not None:
        return ModelParser(path, load_preset(preset, target), decoder, f"preset {preset}")
    template = getattr(tokenizer, "response_template", None)
    if template is not None:
        module = compile_template(template, target=target, cache=cache_dir() if cache is None else cache)
        return ModelParser(path, module, decoder, "the tokenizer's response_template")
    found = tokenizer_detection(tokenizer)
    evidence = ", ".join(found.evidence)
    origin = f"preset {found.preset} ({found.by}: {evidence})"
    return ModelParser(path, load_preset(found.preset, target), decoder, origin, found.evidence)


def detection_sources(tokenizer: Any) -> list[Any]:
    """What detection can read of a loaded tokenizer, in order: its model directory, else the local Hugging
    Face cache's snapshot of its repository id (never downloaded), then its loaded chat template."""
    from respc.model import hub

    sources: list[Any] = []
    name = getattr(tokenizer, "name_or_path", None)
    if isinstance(name, str) and name:
        if Path(name).is_dir():
            sources.append(Path(name))
        elif hub.is_repo_id(name):
            with contextlib.suppress(InputError):  # not cached: the chat template may still tell
                sources.append(hub.snapshot(name))
    chat_template = getattr(tokenizer, "chat_template", None)
    if isinstance(chat_template, dict):
        chat_template = "\n".join(text for text in chat_template.values() if isinstance(text, str))
    if isinstance(chat_template, str) and chat_template:
        sources.append(chat_template)
    return sources


def tokenizer_detection(tokenizer: Any) -> Detection:
    """The shipped preset for a loaded tokenizer that has no `response_template`, detected from its model
    directory (or its repository's cached snapshot), else from its loaded chat template; a tokenizer none
    matches raises `ResponseTemplateNotFound`, one line naming what was tried."""
    from respc.registry import PresetNotFound

    name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
    tried = []
    for source in detection_sources(tokenizer):
        try:
            found = detect(source)
        except (PresetNotFound, InputError) as error:
            tried.append(str(error))
            continue
        if (
            found.preset is not None
        ):  # else the directory's own template, which this tokenizer no longer holds
            return found
    raise ResponseTemplateNotFound(
        f"{name}: no response_template, and no shipped preset detected "
        f"({'; '.join(tried) or 'no model directory, cached repository or chat template to detect from'})"
    )


def _inferred(path: Path, not_found: str, *, cache: Any, target: str | None) -> ModelParser:
    """`for_model`'s last step: the response template inferred from the model's chat template."""
    from respc.authoring import NoChatTemplate, infer, load_chat_template

    try:
        chat_template = load_chat_template(path)
    except NoChatTemplate:
        raise ResponseTemplateNotFound(
            f"{not_found}; and there is no chat template to infer one from"
        ) from None
    result = infer(chat_template, target=target)
    if result.template is None:
        nearest = f" (nearest preset: {result.nearest})" if result.nearest else ""
        raise ResponseTemplateNotFound(f"{not_found}; and inference refused: {result.refused}{nearest}")
    module = compile_template(result.template, target=target, cache=cache_dir() if cache is None else cache)
    where = Path(chat_template.where).name
    evidence = (*result.evidence, *(f"warning: {w}" for w in result.warnings))
    return ModelParser(path, module, _model_tokenizer(path), f"inferred from {where} (respc infer)", evidence)
