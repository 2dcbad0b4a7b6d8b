"""The one door into the compiler: every part of respc outside `respc.compiler` compiles through here.

Imports nothing of `respc.compiler` until a template is compiled, so importing respc stays light. It
holds the one module loader and the one cache of compiled modules: in memory by target and template
hash, and, when a caller names a directory (`for_model` does), on disk as well, where a warm cache loads
without the compiler extra.
"""

from __future__ import annotations

import _thread  # threading.Lock is _thread.allocate_lock; threading itself costs ~1.5 ms to import
import os
import types

from respc.runtime.targets import get_target

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

__all__ = [
    "CACHE_ENV",
    "CompileError",
    "cache_dir",
    "compile_template",
    "explain",
    "generate_source",
    "load_module",
    "regen",
]

CACHE_ENV = "RESPC_CACHE_DIR"
_MEMORY: dict[str, types.ModuleType] = {}  # by "<target>-<template hash>"
_LOCK = _thread.allocate_lock()


class CompileError(RuntimeError):
    """A template the target accepts but respc cannot write as Python source (values nested deeper
    than Python's parser takes, about 200 levels)."""


def generate_source(
    template: Any, *, name: str | None = None, target: str | None = None, regenerate: str | None = None
) -> str:
    """The source of the parser module for `template` (what `respc compile` writes), parsing as the
    `target` release of transformers (`SUPPORTED_TARGETS`; default: the newest). `name` is the source
    the header names; `regenerate`, the command it gives for rebuilding the module."""
    from respc.compiler import SourceError
    from respc.compiler import generate_source as generate

    try:
        return generate(template, name=name, regenerate=regenerate, target=target)
    except (SourceError, RecursionError, MemoryError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CompileError(f"cannot compile: template values are nested too deeply ({reason})") from error


def compile_template(
    template: Any, *, target: str | None = None, cache: str | os.PathLike | None = None
) -> types.ModuleType:
    """The parser module for `template` and `target`, compiled once per process. With `cache` (a
    directory), also kept on disk there, where later processes load it without compiling."""
    from respc._hash import template_hash  # here: it imports json and typing, which parsers do not need

    release = get_target(target).name
    digest = template_hash(template)
    key = f"{release}-{digest}"
    entry = _MEMORY.get(key)
    if entry is None or cache is not None:
        with _LOCK:  # one compile per template even when many threads ask at once
            entry = _MEMORY.get(key)
            if entry is None:
                entry = _MEMORY[key] = _compile(template, digest, release, cache)
            elif cache is not None:
                from respc import _disk_cache

                _disk_cache.keep(_disk_cache.path_for(cache, digest, release), entry[1])
    return entry[0]


def _compile(
    template: Any, digest: str, release: str, cache: str | os.PathLike | None
) -> tuple[types.ModuleType, str]:
    """The module and its source: from the disk cache when `cache` holds it, else compiled (and stored
    there). The source names the template by its hash, so memory and disk hold the same bytes."""
    path = None
    if cache is not None:
        from respc import _disk_cache

        path = _disk_cache.path_for(cache, digest, release)
        found = _disk_cache.load(path, digest, release, load_module)
        if found is not None:
            return found
    name = f"<template {digest[:12]}>"
    source = generate_source(template, name=name, target=release, regenerate="respc compile SOURCE")
    if path is None:
        return load_module(source, f"<respc-generated-{release}-{digest[:12]}>"), source
    _disk_cache.store(path, source)
    return load_module(source, str(path)), source


def cache_dir() -> Path:
    """The default on-disk cache of compiled modules: `$RESPC_CACHE_DIR`, else `~/.cache/respc`."""
    from pathlib import Path

    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "respc"


def load_module(source: str, filename: str) -> types.ModuleType:
    """Execute generated `source` as a fresh module; tracebacks through it show `filename`'s lines."""
    if filename.startswith("<"):
        import linecache  # here: it imports tokenize, which `import respc` should not pay for

        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    stem = filename.strip("<>").rsplit("/", 1)[-1].removesuffix(".py").removeprefix("respc-generated-")
    module = types.ModuleType("respc_generated_" + "".join(c if c.isalnum() else "_" for c in stem[:17]))
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def explain(template: Any, *, name: str, target: str | None = None) -> str:
    """The delimiter table, field table and state plan of `template`, as `respc explain` prints them."""
    from respc.compiler import load_template, plan_parser
    from respc.compiler.explain import explain as explain_plan

    return explain_plan(plan_parser(load_template(template, target), name))


def regen(
    *, check: bool, readme: Path | None = None, progress: Callable[[str], None] | None = None
) -> tuple[list, bool, Path]:
    """Rebuild (or, with `check`, compare) respc/generated/ from respc/presets/, and the preset table of
    `readme`: the files that drifted, whether the table did, and the package directory worked on."""
    from respc.compiler.regen import PACKAGE, expected_outputs, update_readme
    from respc.compiler.regen import regen as rebuild

    if readme is not None:
        update_readme(readme, check=True)  # an unreadable file, or one without markers, stops us here
    drift = rebuild(check=check, outputs=expected_outputs(progress=progress))
    readme_stale = update_readme(readme, check=check) if readme is not None else False
    return drift, readme_stale, PACKAGE
