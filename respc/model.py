"""A model directory in, a parser bound to its tokenizer out: `respc.for_model(path)`.

The parser is the template's own compiled module when `tokenizer_config.json` has a `response_template`
(compiled once, then loaded from an on-disk cache keyed by the template hash), else the shipped preset
for `config.json`'s `model_type`, as transformers' serving falls back by model type. Loading a warm cache
needs neither the compiler extra nor transformers nor torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import secrets
import stat
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._hash import template_hash
from respc._version import __version__
from respc.runtime.tokenizer import (
    TokenDecoder,
    TokenStreamParser,
    load_tokenizer,
    parse_with_tokenizer,
    response_parser_with_tokenizer,
)

__all__ = [
    "CACHE_ENV",
    "ModelParser",
    "ResponseTemplateNotFound",
    "cache_dir",
    "cached_module",
    "for_model",
    "model_template",
    "template_key",
    "write_response_template",
]

logger = logging.getLogger("respc")

CACHE_ENV = "RESPC_CACHE_DIR"
_CACHED: dict[str, types.ModuleType] = {}  # by cache file path
_CACHED_LOCK = threading.Lock()


class ResponseTemplateNotFound(LookupError):
    """A model directory has no `response_template` and no shipped preset matches its `model_type`."""


@dataclass(frozen=True)
class ModelParser:
    """A compiled parser bound to a model's tokenizer, with the tokenizer methods' names and behaviour."""

    path: Path
    module: types.ModuleType  # the generated module: TEMPLATE, parse_response, ResponseParser
    tokenizer: TokenDecoder
    origin: str  # "tokenizer_config.json" or "preset <name>"

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


def for_model(path: str | os.PathLike, *, cache: str | os.PathLike | None = None) -> ModelParser:
    """The parser for the model directory `path`: its tokenizer.json, its template or its preset.

    `cache` overrides the compiled-module cache directory (see `cache_dir`).
    """
    path = Path(path)
    template, preset = model_template(path)
    module = preset if preset is not None else cached_module(template, cache=cache)
    origin = f"preset {preset.__name__.rpartition('.')[2]}" if preset is not None else "tokenizer_config.json"
    return ModelParser(path, module, load_tokenizer(path), origin)


def model_template(path: str | os.PathLike) -> tuple[Any, types.ModuleType | None]:
    """The response template of a model directory and, when it is a shipped preset's, that preset's module.

    `tokenizer_config.json`'s `response_template` wins; a null or missing one falls back to the preset
    for `config.json`'s `model_type`. Anything else raises `ResponseTemplateNotFound`.
    """
    path = Path(path)
    if not path.is_dir():
        raise NotADirectoryError(f"{path}: not a model directory")
    template = _read_json(path / "tokenizer_config.json").get("response_template")
    if template is not None:
        return template, None
    model_type = _read_json(path / "config.json").get("model_type")
    if not isinstance(model_type, str):
        reason = "config.json gives no model_type to find a preset by"
    else:
        preset, reason = _preset(model_type)
        if preset is not None:
            return preset.TEMPLATE, preset
    raise ResponseTemplateNotFound(
        f"{path}: tokenizer_config.json has no response_template, and {reason}; "
        "add one with respc.model.write_response_template"
    )


def _preset(model_type: str) -> tuple[types.ModuleType | None, str]:
    from respc.registry import PresetNotFound, preset_for

    try:
        return preset_for(model_type), ""
    except PresetNotFound as error:
        return None, str(error)
    except ModuleNotFoundError as error:
        if error.name != "respc.generated._registry":
            raise
        return None, "this respc ships no presets"


def _read_json(path: Path) -> dict:
    """A JSON object file, or {} when the file does not exist."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as error:  # a directory, no permission...
        raise ValueError(f"{path}: cannot read: {error.strerror or error}") from error
    except RecursionError as error:
        raise ValueError(f"{path}: not valid JSON: nested too deeply") from error
    except ValueError as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


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
    root = Path(__file__).parent / "compiler"
    digest = hashlib.sha256()
    for source in sorted([*root.rglob("*.py"), *root.rglob("*.jinja")]):
        digest.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return f"{__version__}-{digest.hexdigest()[:16]}"


def cached_module(template: Any, *, cache: str | os.PathLike | None = None) -> types.ModuleType:
    """The compiled parser module of `template`, from the disk cache or compiled once and stored there.

    Files are written atomically (temporary file, then rename), so concurrent processes at worst compile
    the same deterministic source twice. A damaged file, or one another user could have written, is
    rebuilt. An unwritable cache only costs the compile on the next run.
    """
    key = template_key(template)
    directory = Path(cache) if cache is not None else cache_dir()
    path = directory / _build_id() / f"{key}.py"
    with _CACHED_LOCK:
        module = _CACHED.get(str(path))
        if module is None:
            module = _load_or_compile(template, key, path)
            _CACHED[str(path)] = module
    return module


def _load_or_compile(template: Any, key: str, path: Path) -> types.ModuleType:
    if path.is_file():
        try:
            return _load_cached(template, key, path)
        except Exception as error:  # any damage at all means: compile again
            logger.warning("respc: rebuilding cached parser %s: %s", path, error)
    from respc.compiler import generate_source

    source = generate_source(template, name="tokenizer_config.json", regenerate="respc compile MODEL_DIR")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_atomic(path, source, private=True)
    except OSError as error:
        logger.warning("respc: cannot write the parser cache %s: %s", path, error)
    return _exec_module(source, key, str(path))


def _load_cached(template: Any, key: str, path: Path) -> types.ModuleType:
    info = path.stat()
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        raise PermissionError("owned or writable by another user")
    source = path.read_text(encoding="utf-8")
    if f"\n# template-sha256: {key}\n" not in source[:1000]:
        raise ValueError("header does not name this template")
    module = _exec_module(source, key, str(path))
    if template_key(module.TEMPLATE) != key or not callable(module.ResponseParser):
        raise ValueError("module does not hold this template's parser")
    return module


def _exec_module(source: str, key: str, filename: str) -> types.ModuleType:
    module = types.ModuleType(f"respc_cached_{key[:12]}")
    module.__file__ = filename  # tracebacks through the parser show the cached file's lines
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def _write_atomic(path: Path, text: str, *, private: bool = False) -> None:
    """Write through a temporary file in the same directory, then rename over `path`.

    The file keeps the permissions of the one it replaces; a new one gets the umask's (0600 if `private`).
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        if not private and path.exists():
            os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_response_template(path: str | os.PathLike, template: Any) -> Path:
    """Set `response_template` in a `tokenizer_config.json` (or a model directory's), atomically.

    Every other key keeps its value and position, and the file keeps its permissions. The template is
    validated first (needs the compiler extra) so a model is never left with one that fails to load.
    """
    from respc.compiler import load_template

    load_template(template)
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer_config.json"
    config = _read_json(path)
    config["response_template"] = template
    _write_atomic(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return path
