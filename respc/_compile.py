"""Templates compiled in memory: `respc.compile_template`, cached by template hash and target.

Imports nothing of `respc.compiler` until a template is compiled, so importing respc stays light.
"""

from __future__ import annotations

import _thread  # threading.Lock is _thread.allocate_lock; threading itself costs ~1.5 ms to import
import types

from respc.runtime.targets import get_target

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["compile_template", "generate_source"]

_CACHE: dict[str, types.ModuleType] = {}
_CACHE_LOCK = _thread.allocate_lock()


def generate_source(template: Any, *, name: str | None = None, target: str | None = None) -> str:
    """The source of the parser module for `template` (what `respc compile` writes), parsing as the
    `target` release of transformers (`SUPPORTED_TARGETS`; default: the newest)."""
    from respc.compiler import generate_source as generate

    return generate(template, name=name, target=target)


def compile_template(template: Any, *, target: str | None = None) -> types.ModuleType:
    """The parser module for `template` and `target`, compiled in memory once and cached."""
    from respc._hash import template_hash

    release = get_target(target).name
    key = f"{release}-{template_hash(template)}"
    module = _CACHE.get(key)
    if module is not None:
        return module
    with _CACHE_LOCK:  # one compile per template even when many threads ask at once
        module = _CACHE.get(key)
        if module is None:
            source = generate_source(template, name=f"<respc {key[:17]}>", target=release)
            module = _CACHE[key] = _load_source(source, key)
    return module


def _load_source(source: str, key: str) -> types.ModuleType:
    import linecache  # here: it imports tokenize, which `import respc` should not pay for

    filename = f"<respc-generated-{key[:17]}>"
    # Registered so tracebacks through generated code show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"respc_generated_{key[:17].replace('.', '_').replace('-', '_')}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module
