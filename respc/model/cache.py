"""Where templates come from: a SOURCE argument (`load_source`), a model directory (`model_template`),
and `respc.for_model(path)`, which binds a directory's parser to its tokenizer.

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
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from respc._hash import template_hash
from respc._io import InputError, decode_json, read_json, read_stdin, read_text, write_atomic
from respc._version import __version__
from respc.runtime.targets import get_target
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
    "load_source",
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


def for_model(
    path: str | os.PathLike, *, cache: str | os.PathLike | None = None, target: str | None = None
) -> ModelParser:
    """The parser for the model directory `path`: its tokenizer.json, its template or its preset.

    `cache` overrides the compiled-module cache directory (see `cache_dir`); `target` is the transformers
    release to parse as (default: the newest supported).
    """
    path = Path(path)
    template, preset = model_template(path)
    if preset is not None and target is not None:
        from respc.registry import load_preset

        preset = load_preset(preset.__name__.rpartition(".")[2], target)
    module = preset if preset is not None else cached_module(template, cache=cache, target=target)
    origin = f"preset {preset.__name__.rpartition('.')[2]}" if preset is not None else "tokenizer_config.json"
    return ModelParser(path, module, load_tokenizer(path), origin)


def model_template(path: str | os.PathLike) -> tuple[Any, types.ModuleType | None]:
    """The response template of a model directory and, when it is a shipped preset's, that preset's module.

    `tokenizer_config.json`'s `response_template` wins; a null or missing one falls back to the preset
    for `config.json`'s `model_type`. Anything else raises `ResponseTemplateNotFound`; a path that is not
    a directory, or a file in it that cannot be read, raises `respc.InputError`.
    """
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: not a model directory")
    template = read_json(path / "tokenizer_config.json", missing={}, expect=dict).get("response_template")
    if template is not None:
        return template, None
    model_type = read_json(path / "config.json", missing={}, expect=dict).get("model_type")
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
    config = read_json(path, missing={}, expect=dict)
    config["response_template"] = template
    write_atomic(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return path
