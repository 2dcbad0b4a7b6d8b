"""`respc.accelerate(tokenizer)`: transformers' `tokenizer.parse_response` and `get_response_parser` run
respc's compiled parser, so existing code (TRL's trainers call `tokenizer.parse_response(ids, prefix=...,
tools=...)` for every rollout) changes by one line.

The two methods are replaced on the instance only (its `__dict__`: the class and other tokenizers keep
transformers' own) by callables with transformers' signatures, checks, messages and order of work. They
read the tokenizer's `response_template` at each call, as transformers does, so a template assigned later
takes effect; the compiled module of the last template is kept while the template stays equal. Nothing
else changes: `save_pretrained` writes the same files, and the tokenizer pickles (the callables travel as
"accelerated, for this target" and compile again where they land, as in `datasets.map(num_proc=...)`
workers). Token ids are decoded as `tokenizer.decode` decodes them, through the tokenizer's `tokenizers`
backend directly where that gives the same text (`respc.runtime.tokenizer`).

Nothing here imports transformers: it is loaded already when a caller holds one of its tokenizers.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from respc.runtime.targets import DEFAULT_TARGET, get_target, installed_target
from respc.runtime.tokenizer import STREAM_PREFIX_NOT_SINGLE, load_tokenizer, parse_with_tokenizer

__all__ = ["Acceleration", "accelerate", "accelerated", "acceleration_of"]

# transformers 5.23.0 / 5.24.0, tokenization_utils_base.py, verbatim: callers match on them.
NO_TEMPLATE_PARSE = "This tokenizer does not have a `response_template` for parsing chat responses!"
NO_TEMPLATE_STREAM = (
    "This tokenizer does not have a `response_template` set; cannot create a response event stream."
)
_METHODS = ("parse_response", "get_response_parser")


class Acceleration:
    """What an accelerated tokenizer parses with: the target, and the preset `accelerate(detect=True)` chose
    for a tokenizer without a `response_template` (used while it has none)."""

    def __init__(self, target: str, preset: str | None = None, evidence: str = "") -> None:
        self.target = target
        self.preset = preset
        self.evidence = evidence
        # (a copy of the last template, its module): one tuple, so threads never pair the wrong two
        self._last: tuple[Any, types.ModuleType] | None = None

    def __getstate__(self) -> dict:
        return {"target": self.target, "preset": self.preset, "evidence": self.evidence}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def __repr__(self) -> str:
        preset = f", preset={self.preset!r}" if self.preset else ""
        return f"Acceleration(target={self.target!r}{preset})"

    def module(self, template: Any) -> types.ModuleType:
        """The compiled parser of `template` (None: the detected preset's)."""
        last = self._last
        if last is not None and last[0] == template:  # a dict compare: microseconds, hashing costs more
            return last[1]
        if template is None:
            from respc.registry import load_preset

            module = load_preset(self.preset, self.target)
        else:
            module = _module(template, self.target)
        self._last = (copy.deepcopy(template), module)
        return module


def _module(template: Any, target: str) -> types.ModuleType:
    """A shipped preset's module when `template` is the preset's, else compiled (cached on disk as well,
    so later processes, such as dataloader workers, load it without compiling)."""
    from respc._compile import cache_dir, compile_template
    from respc._hash import template_hash

    if target == DEFAULT_TARGET:  # the shipped modules' target; for another, compiling says what it lacks
        try:
            name = _presets_by_hash().get(template_hash(template))
        except (TypeError, ValueError, RecursionError):  # not JSON-like data: compiling says what is wrong
            name = None
        if name is not None:
            from respc.registry import load_preset

            return load_preset(name)
    return compile_template(template, target=target, cache=cache_dir())


@functools.cache
def _presets_by_hash() -> dict[str, str]:
    """The shipped presets by the hash of their template, read from each generated module's header line
    (importing them all would cost more than the lookup saves)."""
    import respc.generated

    found = {}
    for path in sorted(Path(respc.generated.__file__).parent.glob("*.py")):
        with path.open(encoding="utf-8") as lines:
            for line in (next(lines, ""), next(lines, "")):
                if line.startswith("# template-sha256: "):
                    found[line.split(":", 1)[1].strip()] = path.stem
    return found


class _Method:
    """One accelerated method of one tokenizer; pickles as (tokenizer, acceleration)."""

    __slots__ = ("acceleration", "decoder", "tokenizer")

    def __init__(self, tokenizer: Any, acceleration: Acceleration) -> None:
        self.tokenizer = tokenizer
        self.acceleration = acceleration
        self.decoder = load_tokenizer(tokenizer)

    def __reduce__(self) -> tuple:
        return type(self), (self.tokenizer, self.acceleration)

    def _template(self, given: Any, missing: str) -> Any:
        template = given if given is not None else getattr(self.tokenizer, "response_template", None)
        if template is None and self.acceleration.preset is None:
            raise AttributeError(missing)
        return template


class _ParseResponse(_Method):
    """transformers' `tokenizer.parse_response`, parsing with respc."""

    __slots__ = ()

    def __call__(
        self,
        response: Any,
        schema: dict | None = None,
        *,
        prefix: Any = None,
        tools: list[dict | Callable] | None = None,
    ) -> dict | list[dict]:
        template = self._template(schema, NO_TEMPLATE_PARSE)
        module = None

        def parse(text: str, *, prefix: str, tools: Any) -> dict:
            nonlocal module  # the template is checked where transformers checks it: at the first item
            if module is None:
                module = self.acceleration.module(template)
            return module.parse_response(text, prefix=prefix, tools=tools)

        return parse_with_tokenizer(parse, response, prefix=prefix, tools=tools, tokenizer=self.decoder)


class _GetResponseParser(_Method):
    """transformers' `tokenizer.get_response_parser`, returning respc's streaming parser."""

    __slots__ = ()

    def __call__(
        self,
        response_template: dict | None = None,
        *,
        prefix: Any = None,
        tools: list[dict | Callable] | None = None,
    ) -> Any:
        template = self._template(response_template, NO_TEMPLATE_STREAM)
        if prefix is not None and not isinstance(prefix, str):
            prefix = self.decoder.decode(prefix)
            if not isinstance(prefix, str):
                raise ValueError(STREAM_PREFIX_NOT_SINGLE)
        return self.acceleration.module(template).ResponseParser(prefix, tools=tools)


def _tokenizer_of(tokenizer_or_processor: Any) -> Any:
    """The tokenizer to patch: the object itself, or a processor's inner tokenizer (which its
    `parse_response` calls, and where TRL's `add_response_schema` sets the template)."""
    kinds = {kind.__name__ for kind in type(tokenizer_or_processor).__mro__}
    if "ProcessorMixin" in kinds:
        inner = getattr(tokenizer_or_processor, "tokenizer", None)
        if inner is None:
            raise TypeError(f"{type(tokenizer_or_processor).__name__} has no tokenizer to accelerate")
        return inner
    if "PreTrainedTokenizerBase" not in kinds:
        raise TypeError(
            f"respc.accelerate takes a transformers tokenizer or processor, not "
            f"{type(tokenizer_or_processor).__name__}"
        )
    return tokenizer_or_processor


def acceleration_of(tokenizer_or_processor: Any) -> Acceleration | None:
    """How the tokenizer is accelerated, or None when it parses with transformers."""
    method = _tokenizer_of(tokenizer_or_processor).__dict__.get("parse_response")
    return method.acceleration if isinstance(method, _Method) else None


def accelerate(
    tokenizer_or_processor: Any, enable: bool = True, *, target: str | None = None, detect: bool = False
) -> Any:
    """Make `tokenizer.parse_response` / `get_response_parser` parse with respc (`enable=False`: with
    transformers again); returns the object given, for chaining.

    `target` is the transformers release to parse as, by default the installed one's (5.24.x, 5.23.x; any
    other is refused). A tokenizer without a `response_template` is refused, unless `detect=True`: then the
    shipped preset respc detects for it (chat template, repository id) is used while it has none, and a
    `UserWarning` names the preset and the evidence.
    """
    tokenizer = _tokenizer_of(tokenizer_or_processor)
    if not enable:
        for name in _METHODS:
            if isinstance(tokenizer.__dict__.get(name), _Method):
                del tokenizer.__dict__[name]
        return tokenizer_or_processor
    release = installed_target() if target is None else get_target(target).name
    preset, evidence = None, ""
    if getattr(tokenizer, "response_template", None) is None:
        preset, evidence = _detected(tokenizer, detect)
        warnings.warn(
            f"respc.accelerate: {_name(tokenizer)} has no response_template; parsing with the preset "
            f"{preset} ({evidence})",
            UserWarning,
            stacklevel=2,
        )
    acceleration = Acceleration(release, preset, evidence)
    tokenizer.__dict__["parse_response"] = _ParseResponse(tokenizer, acceleration)
    tokenizer.__dict__["get_response_parser"] = _GetResponseParser(tokenizer, acceleration)
    return tokenizer_or_processor


@contextlib.contextmanager
def accelerated(
    tokenizer_or_processor: Any, *, target: str | None = None, detect: bool = False
) -> Iterator[Any]:
    """`accelerate` for the `with` block only; afterwards the tokenizer parses as it did before it."""
    tokenizer = _tokenizer_of(tokenizer_or_processor)
    before = {name: tokenizer.__dict__[name] for name in _METHODS if name in tokenizer.__dict__}
    accelerate(tokenizer_or_processor, target=target, detect=detect)
    try:
        yield tokenizer_or_processor
    finally:
        for name in _METHODS:
            tokenizer.__dict__.pop(name, None)
        tokenizer.__dict__.update(before)


def _name(tokenizer: Any) -> str:
    return getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__


def _detected(tokenizer: Any, detect: bool) -> tuple[str, str]:
    """The preset for a tokenizer without a template, and the evidence; without `detect`, a refusal."""
    from respc.model import ResponseTemplateNotFound, tokenizer_detection

    if not detect:
        raise ResponseTemplateNotFound(
            f"{_name(tokenizer)} has no response_template: set one first (TRL: add_response_schema), or "
            "pass detect=True to parse with the shipped preset respc detects for it"
        )
    found = tokenizer_detection(tokenizer)
    return found.preset, f"{found.by}: {', '.join(found.evidence)}"
