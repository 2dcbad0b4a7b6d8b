"""respc: an ahead-of-time compiler for Hugging Face response templates.

`generate_source` and `compile_template` need the `compiler` extra; the drop-in `parse_response` and
`ResponseParser` compile on first use (cached by template hash). Nothing here imports
`respc.compiler` until one of those is called, so importing a generated module stays light.
"""

from __future__ import annotations

import _thread  # threading.Lock is _thread.allocate_lock; threading itself costs ~1.5 ms to import
import functools
import types

from respc._version import __version__
from respc.registry import PresetNotFound, load_preset, preset_for, presets

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "DeltaStream",
    "DeltaStreamError",
    "InputError",
    "OutputError",
    "PresetNotFound",
    "ResponseParser",
    "ResponseTemplateNotFound",
    "TemplateError",
    "__version__",
    "compile_template",
    "for_model",
    "generate_source",
    "load_preset",
    "parse_response",
    "preset_for",
    "presets",
]

_CACHE: dict[str, types.ModuleType] = {}
_CACHE_LOCK = _thread.allocate_lock()


def __getattr__(name: str) -> Any:
    # Imported on first use, so `import respc` (and every generated module) stays light.
    if name in ("TemplateError", "TemplateTypeError", "TemplateWarning"):
        from respc.compiler import spec

        return getattr(spec, name)
    if name in ("for_model", "ResponseTemplateNotFound"):
        from respc import model

        return getattr(model, name)
    if name in ("DeltaStream", "DeltaStreamError"):
        from respc import serving

        return getattr(serving, name)
    if name in ("InputError", "OutputError"):
        from respc import _io

        return getattr(_io, name)
    raise AttributeError(f"module 'respc' has no attribute {name!r}")


def generate_source(template: Any, *, name: str | None = None) -> str:
    """The source of the parser module for `template` (what `respc compile` writes)."""
    from respc.compiler import generate_source as generate

    return generate(template, name=name)


def compile_template(template: Any) -> types.ModuleType:
    """The parser module for `template`, compiled in memory once per template and cached."""
    from respc.compiler import template_hash

    key = template_hash(template)
    module = _CACHE.get(key)
    if module is not None:
        return module
    with _CACHE_LOCK:  # one compile per template even when many threads ask at once
        module = _CACHE.get(key)
        if module is None:
            module = _load_source(generate_source(template, name=f"<respc {key[:12]}>"), key)
            _CACHE[key] = module
    return module


def _load_source(source: str, key: str) -> types.ModuleType:
    import linecache  # here: it imports tokenize, which `import respc` should not pay for

    filename = f"<respc-generated-{key[:12]}>"
    # Registered so tracebacks through generated code show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"respc_generated_{key[:12]}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def _compiled(template: Any) -> types.ModuleType:
    if isinstance(template, types.ModuleType):
        return template
    return compile_template(template)


def parse_response(
    text: str,
    response_template: Any,
    *,
    prefix: str | None = None,
    tools: list[dict | Callable] | None = None,
    errors: str = "strict",
    tokenizer: Any = None,
) -> Any:
    """Drop-in for `transformers.utils.chat_parsing.parse_response`; respc's own additions:
    `errors="keep"`, and `tokenizer=` for token ids, batches and arrays as `tokenizer.parse_response`."""
    module = _compiled(response_template)
    return module.parse_response(text, prefix=prefix, tools=tools, errors=errors, tokenizer=tokenizer)


def ResponseParser(  # noqa: N802 - a factory standing in for transformers' class of the same name
    response_template: Any,
    prefix: str | None = None,
    *,
    tools: list[dict | Callable] | None = None,
    errors: str = "strict",
    tokenizer: Any = None,
) -> Any:
    """Drop-in for `transformers.utils.chat_parsing.ResponseParser`; respc's own additions:
    `errors="keep"`, and `tokenizer=`, which adds `feed_ids(ids)` and accepts an id `prefix`."""
    parser_class = _compiled(response_template).ResponseParser
    if tokenizer is None:
        return parser_class(prefix, tools=tools, errors=errors)
    from respc.runtime.tokenizer import response_parser_with_tokenizer

    return response_parser_with_tokenizer(
        functools.partial(parser_class, errors=errors), prefix=prefix, tools=tools, tokenizer=tokenizer
    )
