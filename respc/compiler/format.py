"""Format generated source with black (the only module that imports black) and verify it.

black is pinned in pyproject.toml and configured here, never from the user's project, so the same
template gives the same bytes everywhere.
"""

from __future__ import annotations

import ast
from typing import Any

import black

from respc._literal import LiteralError, eval_literal, same_value

__all__ = ["SourceError", "format_source", "verify_source"]

_MODE = black.Mode(
    target_versions={black.TargetVersion.PY310},
    line_length=110,
    string_normalization=True,
    magic_trailing_comma=True,
)


class SourceError(RuntimeError):
    """Generated source that does not parse, compile or carry its template intact: a respc bug."""


def format_source(source: str) -> str:
    """black-format `source` with respc's fixed settings."""
    return black.format_str(source, mode=_MODE)


def verify_source(source: str, template: Any, filename: str = "<respc>") -> Any:
    """Parse and compile `source`, check its `TEMPLATE` equals `template`; returns the code object."""
    try:
        tree = ast.parse(source, filename)
        code = compile(tree, filename, "exec")
    except SyntaxError as error:
        raise SourceError(f"generated source does not compile: {error}") from error
    except MemoryError as error:  # Python's parser can give up on deeply nested literals this way
        raise SourceError(f"generated source does not compile: {type(error).__name__} {error}") from error
    assigned = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["TEMPLATE"]
    ]
    try:
        inlined = eval_literal(assigned[0]) if len(assigned) == 1 else None
    except LiteralError as error:
        raise SourceError(f"generated TEMPLATE is not a plain literal: {error}") from error
    if len(assigned) != 1 or not same_value(inlined, template):
        raise SourceError("generated TEMPLATE does not equal the template it was compiled from")
    return code
