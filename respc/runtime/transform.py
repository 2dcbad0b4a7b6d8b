"""Transforms: reshape a parsed value with a template of whole-string `{placeholder}` paths.

Semantics follow transformers 5.23.0: only a string that is entirely one placeholder is substituted,
dict keys never are, an undefined root raises `KeyError` and a bad dotted path raises `ValueError`.
"""

from __future__ import annotations

from functools import lru_cache

TYPE_CHECKING = False  # typing costs ~5 ms to import: keep it off a generated module's import path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = [
    "apply_transform",
    "each_scope",
    "find_mixed_placeholder",
    "placeholder",
    "resolve_in",
    "resolve_placeholder",
    "transform_each",
    "transform_value",
]


@lru_cache(maxsize=1)
def placeholder() -> Any:
    """The `{path}` placeholder pattern, as upstream compiles it (with `regex`, imported on first use)."""
    import regex

    return regex.compile(r"\{(\w+(?:\.\w+)*)\}")


def find_mixed_placeholder(transform: Any) -> str | None:
    """The first string (dict values and list items, depth first) that mixes a placeholder with text."""
    if isinstance(transform, dict):
        children = transform.values()
    elif isinstance(transform, list):
        children = transform
    elif isinstance(transform, str):
        mixed = placeholder().search(transform) and not placeholder().fullmatch(transform)
        return transform if mixed else None
    else:
        return None
    for child in children:
        found = find_mixed_placeholder(child)
        if found is not None:
            return found
    return None


def _resolve(path: str, scope: dict) -> Any:
    root, *keys = path.split(".")
    if root not in scope:
        raise KeyError(f"transform placeholder '{{{path}}}' is not defined. Available: {sorted(scope)}")
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict):
            raise ValueError(
                f"transform placeholder '{{{path}}}' cannot index into {type(value).__name__} at '{key}'"
            )
        if key not in value:
            raise ValueError(
                f"transform placeholder '{{{path}}}' is missing key '{key}'. Available: {sorted(value)}"
            )
        value = value[key]
    return value


def apply_transform(transform: Any, scope: dict) -> Any:
    """Rebuild `transform` with each whole-string placeholder replaced by its value in `scope` (not copied)."""
    if isinstance(transform, dict):
        return {key: apply_transform(value, scope) for key, value in transform.items()}
    if isinstance(transform, list):
        return [apply_transform(value, scope) for value in transform]
    if not isinstance(transform, str):
        return transform
    whole = placeholder().fullmatch(transform)
    return _resolve(whole.group(1), scope) if whole else transform


def resolve_placeholder(path: str, captures: dict, content: Any) -> Any:
    """One placeholder of a transform compiled to an expression, resolved (and failing) exactly as
    `transform_value` would resolve it; generated code inlines the common cases and calls this for the
    rest."""
    return _resolve(path, {**captures, "content": content})


def resolve_in(path: str, scope: dict) -> Any:
    """One placeholder of a `transform_each` written out as an expression, resolved (and failing) in the
    item's scope exactly as `transform_each` would."""
    return _resolve(path, scope)


def each_scope(field: str, value: Any, captures: dict) -> Iterator[dict]:
    """The scope of each item of a parsed list for a `transform_each` written out in generated code: the
    item's keys over the captures. Checks come when `transform_each`'s do: the list first, then each
    item as it is reached (after the transform of the ones before it)."""
    if not isinstance(value, list):
        raise ValueError(
            f"Field '{field}': transform_each requires the parsed content to be a list, got {type(value).__name__}."
        )
    for item in value:
        if not isinstance(item, dict):
            raise ValueError(
                f"Field '{field}': transform_each requires each list element to be a dict, got {type(item).__name__}."
            )
        # (The scope is only read: without captures the item itself is one, no copy needed.)
        yield {**captures, **item} if captures else item


def transform_value(transform: Any, value: Any, captures: dict) -> Any:
    """Apply a field's transform to its parsed value; `content` shadows a capture of the same name."""
    return apply_transform(transform, {**captures, "content": value})


def transform_each(field: str, transform: Any, value: Any, captures: dict) -> list:
    """Apply a field's transform to every dict of a parsed list, each item's keys over the captures."""
    return [apply_transform(transform, scope) for scope in each_scope(field, value, captures)]
