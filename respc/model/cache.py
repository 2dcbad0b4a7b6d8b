"""The on-disk cache of compiled parser modules, keyed by template hash, respc build and target.

Loading a warm cache needs neither the compiler extra nor transformers nor torch.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import types
from pathlib import Path
from typing import Any

from respc._hash import template_hash
from respc._io import write_atomic
from respc._version import __version__
from respc.runtime.targets import get_target

__all__ = ["CACHE_ENV", "cache_dir", "cached_module", "template_key"]

logger = logging.getLogger("respc")

CACHE_ENV = "RESPC_CACHE_DIR"
_CACHED: dict[str, types.ModuleType] = {}  # by cache file path
_CACHED_LOCK = threading.Lock()


def template_key(template: Any) -> str:
    """The name of `template`'s cached module: `respc.compiler.template_hash`, without the compiler."""
    return template_hash(template)


def cache_dir() -> Path:
    """Where compiled modules are cached: `$RESPC_CACHE_DIR`, else `~/.cache/respc`."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "respc"


@functools.lru_cache(maxsize=1)
def _build_id() -> str:
    """respc's version and a digest of the compiler, so a changed compiler never serves stale modules."""
    root = Path(__file__).parent.parent / "compiler"
    digest = hashlib.sha256()
    for source in sorted([*root.rglob("*.py"), *root.rglob("*.jinja")]):
        digest.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{__version__}-{digest.hexdigest()[:16]}"


def cached_module(
    template: Any, *, cache: str | os.PathLike | None = None, target: str | None = None
) -> types.ModuleType:
    """The compiled parser module of `template`, from the disk cache or compiled once and stored there.

    Files are written atomically (temporary file, then rename), so concurrent processes at worst compile
    the same deterministic source twice. A damaged file, or one another user could have written, is
    rebuilt. An unwritable cache only costs the compile on the next run.
    """
    key = template_key(template)
    release = get_target(target).name
    directory = Path(cache) if cache is not None else cache_dir()
    path = directory / _build_id() / f"{key}-{release}.py"
    with _CACHED_LOCK:
        module = _CACHED.get(str(path))
        if module is None:
            module = _load_or_compile(template, key, path, release)
            _CACHED[str(path)] = module
    return module


def _load_or_compile(template: Any, key: str, path: Path, release: str) -> types.ModuleType:
    if path.is_file():
        try:
            return _load_cached(key, path, release)
        except Exception as error:  # any damage at all means: compile again
            logger.warning("respc: rebuilding cached parser %s: %s", path, error)
    from respc.compiler import generate_source

    source = generate_source(
        template, name="tokenizer_config.json", regenerate="respc compile MODEL_DIR", target=release
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, source, private=True)
    except OSError as error:
        logger.warning("respc: cannot write the parser cache %s: %s", path, error)
    return _exec_module(source, key, str(path))


def _load_cached(key: str, path: Path, release: str) -> types.ModuleType:
    info = path.stat()
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        raise PermissionError("owned or writable by another user")
    source = path.read_text(encoding="utf-8")
    if f"\n# template-sha256: {key}\n" not in source[:1000]:
        raise ValueError("header does not name this template")
    module = _exec_module(source, key, str(path))
    if (
        template_key(module.TEMPLATE) != key
        or module.TRANSFORMERS_TARGET != release
        or not callable(getattr(module, "parse_response", None))
        or not callable(getattr(module, "ResponseParser", None))
    ):
        raise ValueError("module does not hold this template's parser for this target")
    return module


def _exec_module(source: str, key: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(f"respc_cached_{key[:12]}")
    module.__file__ = filename  # tracebacks through the parser show the cached file's lines
    exec(compile(source, filename, "exec"), module.__dict__)
    return module
