"""The on-disk layer of the compiled-module cache (`respc._compile.compile_template(..., cache=DIR)`).

Files are keyed by template hash and target under a directory named for respc's build, so a changed
compiler never serves stale modules. Loading a warm cache needs neither the compiler extra nor
transformers nor torch.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import types
from collections.abc import Callable
from pathlib import Path

from respc._hash import template_hash
from respc._io import write_atomic
from respc._version import __version__

__all__ = ["load", "path_for", "store"]

logger = logging.getLogger("respc")


@functools.lru_cache(maxsize=1)
def _build_id() -> str:
    """respc's version and a digest of the compiler, so a changed compiler never serves stale modules."""
    root = Path(__file__).parent / "compiler"
    digest = hashlib.sha256()
    for source in sorted([*root.rglob("*.py"), *root.rglob("*.jinja")]):
        digest.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{__version__}-{digest.hexdigest()[:16]}"


def path_for(cache: str | os.PathLike, key: str, release: str) -> Path:
    """Where the module of the template hashed `key`, for `release`, is kept under `cache`."""
    return Path(cache) / _build_id() / f"{key}-{release}.py"


def load(
    path: Path, key: str, release: str, load_module: Callable[[str, str], types.ModuleType]
) -> tuple[types.ModuleType, str] | None:
    """The cached module at `path` and its source, or None when there is none. A damaged file, or one
    another user could have written, counts as none (with a warning), so it is compiled and written
    again."""
    if not path.is_file():
        return None
    try:
        info = path.stat()
        if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
            raise PermissionError("owned or writable by another user")
        source = path.read_text(encoding="utf-8")
        if f"\n# template-sha256: {key}\n" not in source[:1000]:
            raise ValueError("header does not name this template")
        module = load_module(source, str(path))
        if (
            template_hash(module.TEMPLATE) != key
            or module.TRANSFORMERS_TARGET != release
            or not callable(getattr(module, "parse_response", None))
            or not callable(getattr(module, "ResponseParser", None))
        ):
            raise ValueError("module does not hold this template's parser for this target")
    except Exception as error:  # any damage at all means: compile again
        logger.warning("respc: rebuilding cached parser %s: %s", path, error)
        return None
    return module, source


def keep(path: Path, source: str) -> None:
    """Store `source` at `path` unless a file is there already."""
    if not path.is_file():
        store(path, source)


def store(path: Path, source: str) -> None:
    """Write `source` at `path` atomically (concurrent processes at worst write the same deterministic
    source twice); an unwritable cache only costs the compile on the next run."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, source, private=True)
    except OSError as error:
        logger.warning("respc: cannot write the parser cache %s: %s", path, error)
