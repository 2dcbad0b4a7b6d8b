"""respc: an ahead-of-time compiler for Hugging Face response templates.

`generate_source` and `compile_template` need the `compiler` extra; the drop-in `parse_response` and
`ResponseParser` compile on first use (cached by template hash). Nothing here imports
`respc.compiler` until one of those is called, so importing a generated module stays light.
"""

from __future__ import annotations

import functools
import types

from respc._compile import compile_template, generate_source
from respc._version import __version__
from respc.registry import AmbiguousPreset, PresetNotFound, load_preset, preset_for, presets
from respc.runtime.targets import DEFAULT_TARGET, SUPPORTED_TARGETS, UnknownTarget, get_target

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "DEFAULT_TARGET",
    "SUPPORTED_TARGETS",
    "AmbiguousPreset",
    "DeltaStream",
    "DeltaStreamError",
    "Detection",
    "InputError",
    "OutputError",
    "PresetNotFound",
    "ResponseParser",
    "ResponseTemplateNotFound",
    "TemplateError",
    "UnknownTarget",
    "__version__",
    "accelerate",
    "accelerated",
    "compile_template",
    "detect",
    "for_model",
    "for_tokenizer",
    "generate_source",
    "load_preset",
    "parse_response",
    "preset_for",
    "presets",
]


def __getattr__(name: str) -> Any:
    # Imported on first use, so `import respc` (and every generated module) stays light.
    if name in ("TemplateError", "TemplateTypeError", "TemplateWarning"):
        from respc import spec

        return getattr(spec, name)
    if name in ("for_model", "for_tokenizer", "detect", "Detection", "ResponseTemplateNotFound"):
        from respc import model

        return getattr(model, name)
    if name in ("accelerate", "accelerated"):
        from respc.integrations import transformers

        return getattr(transformers, name)
    if name in ("DeltaStream", "DeltaStreamError"):
        from respc import serving

        return getattr(serving, name)
    if name in ("InputError", "OutputError"):
        from respc import _io

        return getattr(_io, name)
    raise AttributeError(f"module 'respc' has no attribute {name!r}")


def _compiled(template: Any, target: str | None) -> types.ModuleType:
    if not isinstance(template, types.ModuleType):
        return compile_template(template, target=target)
    if target is not None and get_target(target).name != template.TRANSFORMERS_TARGET:
        raise ValueError(
            f"{template.__name__} was compiled for transformers {template.TRANSFORMERS_TARGET}, not {target}"
        )
    return template


def parse_response(
    text: str,
    response_template: Any,
    *,
    prefix: str | None = None,
    tools: list[dict | Callable] | None = None,
    errors: str = "strict",
    tokenizer: Any = None,
    target: str | None = None,
) -> Any:
    """Drop-in for `transformers.utils.chat_parsing.parse_response`; respc's own additions:
    `errors="keep"`, `tokenizer=` for token ids, batches and arrays as `tokenizer.parse_response`, and
    `target=`, the transformers release to parse as (default: the newest supported)."""
    module = _compiled(response_template, target)
    return module.parse_response(text, prefix=prefix, tools=tools, errors=errors, tokenizer=tokenizer)


def ResponseParser(  # noqa: N802 - a factory standing in for transformers' class of the same name
    response_template: Any,
    prefix: str | None = None,
    *,
    tools: list[dict | Callable] | None = None,
    errors: str = "strict",
    tokenizer: Any = None,
    target: str | None = None,
) -> Any:
    """Drop-in for `transformers.utils.chat_parsing.ResponseParser`; respc's own additions:
    `errors="keep"`, `tokenizer=` (adds `feed_ids(ids)`, accepts an id `prefix`) and `target=`."""
    parser_class = _compiled(response_template, target).ResponseParser
    if tokenizer is None:
        return parser_class(prefix, tools=tools, errors=errors)
    from respc.runtime.tokenizer import response_parser_with_tokenizer

    return response_parser_with_tokenizer(
        functools.partial(parser_class, errors=errors), prefix=prefix, tools=tools, tokenizer=tokenizer
    )
