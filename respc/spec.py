"""Load and validate a response template into frozen dataclasses.

The checks, their order and their messages are those of `load_response_template` in the targeted
transformers release (they differ only in the content parsers each knows), so respc accepts exactly the
templates the oracle accepts; every error is a `TemplateError` (a `ValueError`) or, where the oracle
raises `TypeError`, a `TemplateTypeError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

from respc.runtime.targets import Target, get_target
from respc.runtime.transform import find_mixed_placeholder

__all__ = [
    "Anchor",
    "Field",
    "Spec",
    "TemplateError",
    "TemplateTypeError",
    "TemplateWarning",
    "load_template",
]

TOP_LEVEL_KEYS = frozenset({"version", "defaults", "fields", "start_anchor", "start_anchor_pattern"})
FIELD_KEYS = frozenset(
    {
        "open",
        "open_pattern",
        "close",
        "close_pattern",
        "content",
        "content_args",
        "repeats",
        "join",
        "optional",
        "transform",
        "transform_each",
    }
)


class TemplateError(ValueError):
    """An invalid response template; the message names the field and key at fault."""


class TemplateWarning(UserWarning):
    """A template that compiles but deserves a look (a delimiter that may backtrack exponentially)."""


class TemplateTypeError(TemplateError, TypeError):
    """An invalid template value where transformers raises `TypeError` (an unhashable content name...)."""


@dataclass(frozen=True)
class Anchor:
    """A delimiter: literal strings (deduplicated, first-seen order) or one regex source."""

    key: str  # the template key it came from: open, close_pattern, start_anchor, ...
    literals: tuple[str, ...] | None
    pattern: str  # the regex the oracle compiles: the escaped alternation for literals
    can_extend: bool  # one literal is a strict prefix of another, so a match at the edge may grow
    groups: tuple[str, ...]  # named groups, sorted

    @property
    def is_literal(self) -> bool:
        return self.literals is not None


@dataclass(frozen=True)
class Field:
    name: Any
    open: Anchor | None
    close: Anchor | None
    content: str
    content_args: Any
    repeats: bool
    join: str | None
    optional: bool
    transform: Any
    transform_each: bool


@dataclass(frozen=True)
class Spec:
    target: Target  # the transformers release whose semantics the parser follows
    template: Any  # the template as given, for TEMPLATE
    defaults: dict
    fields: tuple[Field, ...]
    implicit: Field | None
    start_anchor: Anchor


def _anchor(scope: str, source: dict, literal_key: str, pattern_key: str) -> Anchor | None:
    if literal_key in source and pattern_key in source:
        raise TemplateError(f"{scope}: cannot specify both '{literal_key}' and '{pattern_key}'")
    if literal_key in source:
        raw = source[literal_key]
        if isinstance(raw, str):
            literals = [raw]
        elif isinstance(raw, list):
            if not raw:
                raise TemplateError(f"{scope}: '{literal_key}' list must contain at least one literal")
            if not all(isinstance(item, str) for item in raw):
                raise TemplateError(f"{scope}: '{literal_key}' list must contain only strings")
            literals = list(dict.fromkeys(raw))
        else:
            raise TemplateError(
                f"{scope}: '{literal_key}' must be a string or list of strings, got {type(raw).__name__}"
            )
        if any(literal == "" for literal in literals):
            raise TemplateError(f"{scope}: '{literal_key}' literals cannot be empty strings")
        # Longest first, so the alternation prefers the longer literal at the same position.
        ordered = sorted(literals, key=len, reverse=True)
        can_extend = any(a != b and a.startswith(b) for a in literals for b in literals)
        pattern = "|".join(regex.escape(literal) for literal in ordered)
        return Anchor(literal_key, tuple(literals), pattern, can_extend, ())
    if pattern_key in source:
        raw = source[pattern_key]
        if not isinstance(raw, str):
            raise TemplateTypeError(f"{scope}: '{pattern_key}' must be a string, got {type(raw).__name__}")
        try:
            compiled = regex.compile(raw, regex.DOTALL)
        except regex.error as error:
            raise TemplateError(f"{scope}: invalid {pattern_key} regex: {error}") from error
        return Anchor(pattern_key, None, raw, False, tuple(sorted(compiled.groupindex)))
    return None


def _check_shape(template: Any) -> None:
    if not isinstance(template, dict):
        raise TemplateError(f"response_template must be a dict, got {type(template).__name__}")
    version = template.get("version", 1)
    if version != 1:
        raise TemplateError(f"Unsupported response_template version: {version}")
    unknown = set(template) - TOP_LEVEL_KEYS
    if unknown:
        raise TemplateError(f"Unknown keys in response_template: {sorted(unknown)}")
    if not isinstance(template.get("defaults", {}), dict):
        raise TemplateError("response_template.defaults must be a dict")
    fields = template.get("fields", {})
    if not isinstance(fields, dict) or not fields:
        raise TemplateError("response_template.fields must be a non-empty dict")


def _field(name: Any, raw: Any, target: Target) -> Field:
    scope = f"Field '{name}'"
    if not isinstance(raw, dict):
        raise TemplateError(f"{scope} must be a dict")
    unknown = set(raw) - FIELD_KEYS
    if unknown:
        raise TemplateError(f"{scope}: unknown keys {sorted(unknown)}")
    content = raw.get("content", "text")
    try:
        known = content in target.parser_names
    except TypeError as error:
        raise TemplateTypeError(
            f"{scope}: 'content' must be a parser name, got {type(content).__name__}"
        ) from error
    if not known:
        raise TemplateError(
            f"{scope}: unknown content parser '{content}'. Available: {sorted(target.content_parsers)}"
        )
    open_anchor = _anchor(scope, raw, "open", "open_pattern")
    close_anchor = _anchor(scope, raw, "close", "close_pattern")
    join = raw.get("join")
    if join is not None and not isinstance(join, str):
        raise TemplateError(f"{scope}: 'join' must be a string, got {type(join).__name__}")
    if join is not None and not raw.get("repeats", False):
        raise TemplateError(f"{scope}: 'join' requires 'repeats': true")
    transform = raw.get("transform")
    transform_each = raw.get("transform_each", False)
    if not isinstance(transform_each, bool):
        raise TemplateError(f"{scope}: transform_each must be a bool, got {type(transform_each).__name__}")
    if transform_each and transform is None:
        raise TemplateError(f"{scope}: transform_each is set but no transform was provided")
    if transform is not None:
        mixed = find_mixed_placeholder(transform)
        if mixed is not None:
            raise TemplateError(
                f"{scope}: transform string {mixed!r} mixes a {{placeholder}} with literal text. "
                'Use either a whole-string placeholder (e.g. "{content}") or a plain literal; '
                "string interpolation is not supported."
            )
    else:
        groups = sorted(
            {*(open_anchor.groups if open_anchor else ()), *(close_anchor.groups if close_anchor else ())}
        )
        if groups:
            raise TemplateError(
                f"{scope}: open_pattern/close_pattern declares named group(s) {groups}, but the field has no "
                "'transform'. Named captures are only surfaced through a 'transform' template (where they "
                "appear alongside 'content'). Either add a 'transform' that uses the captures, or remove the "
                "named groups from the pattern."
            )
    return Field(
        name=name,
        open=open_anchor,
        close=close_anchor,
        content=content,
        content_args=raw.get("content_args", {}),
        repeats=bool(raw.get("repeats", False)),
        join=join,
        optional=bool(raw.get("optional", True)),
        transform=transform,
        transform_each=transform_each,
    )


def load_template(template: Any, target: str | Target | None = None) -> Spec:
    """Validate `template` as the `target` release of transformers does (default: the newest supported)
    and return its `Spec`; raises `TemplateError`, or `respc.runtime.targets.UnknownTarget`."""
    target = get_target(target)
    _check_shape(template)
    fields = tuple(_field(name, raw, target) for name, raw in template["fields"].items())
    implicit = [field for field in fields if field.open is None]
    if len(implicit) > 1:
        raise TemplateError(
            "At most one field may omit 'open'/'open_pattern' (that field becomes the implicit-open / leftover "
            f"sink). Found: {', '.join(field.name for field in implicit)}"
        )
    start_anchor = _anchor("response_template", template, "start_anchor", "start_anchor_pattern")
    if start_anchor is None:
        raise TemplateError("response_template must define 'start_anchor' or 'start_anchor_pattern'.")
    return Spec(
        target=target,
        template=template,
        defaults=template.get("defaults", {}),
        fields=fields,
        implicit=implicit[0] if implicit else None,
        start_anchor=start_anchor,
    )
