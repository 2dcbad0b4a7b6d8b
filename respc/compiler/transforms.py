"""Transforms written out as Python expressions, so a generated value function builds its value
directly instead of walking the transform at run time.

The expression reads two names, `content` (the parsed value) and `captures` (the open pattern's named
groups); placeholders the runtime would resolve with an error, or along a dotted path, call
`respc.runtime.transform.resolve_placeholder`, which fails exactly as `transform_value` does. Every
other value is written with `py_literal`, so template text reaches the source only as checked literals.
"""

from __future__ import annotations

import math
from typing import Any

from respc._literal import py_literal
from respc.runtime.transform import placeholder

__all__ = ["transform_expression"]

_TRANSFORM_NODES = 200  # larger or deeper transforms stay data, applied by the runtime
_TRANSFORM_DEPTH = 16


def transform_expression(transform: Any, each: bool = False) -> str | None:
    """`transform_value(transform, content, captures)` written out as one Python expression over the
    names `content` and `captures`, or None when the runtime should apply it (shared objects other than
    strings and numbers, or a transform too large to inline). With `each`, `transform_each`'s per-item
    application instead: an expression over `scope` (the item's keys over the captures), where every
    placeholder, `{content}` included, is a key of the scope.

    Whole-string placeholders become `content` or a capture lookup; every other value is written with
    `py_literal`, so template text still reaches the source only as checked literals.
    """
    budget = [_TRANSFORM_NODES]

    def source(value: Any, depth: int) -> str | None:
        budget[0] -= 1
        if budget[0] < 0 or depth > _TRANSFORM_DEPTH:
            return None
        kind = type(value)
        if kind is dict:
            items = []
            for key, item in value.items():
                written = source(item, depth + 1)
                if written is None or type(key) not in (str, int, float, bool, type(None)):
                    return None
                items.append(f"{py_literal(key)}: {written}")
            return "{" + ", ".join(items) + "}"
        if kind is list:
            written = [source(item, depth + 1) for item in value]
            return None if None in written else "[" + ", ".join(written) + "]"
        if kind is str:
            whole = placeholder().fullmatch(value)
            if whole is None:
                return py_literal(value)
            path = whole.group(1)
            if each:
                resolve = f"resolve_in({py_literal(path)}, scope)"
                if "." in path:
                    return resolve
                return f"(scope[{py_literal(path)}] if {py_literal(path)} in scope else {resolve})"
            if path == "content":
                return "content"
            resolve = f"resolve_placeholder({py_literal(path)}, captures, content)"
            if "." in path:
                return resolve
            return f"(captures[{py_literal(path)}] if {py_literal(path)} in captures else {resolve})"
        if kind in (int, bool, type(None)) or (kind is float and math.isfinite(value)):
            return py_literal(value)
        return None  # the runtime hands such values (NaN too) over as the very object the template holds

    return source(transform, 0)
