"""Template data as Python source: the only way template text reaches a generated module.

`py_literal` writes a value as a Python expression built from `repr` of its atoms, and
`eval_literal` reads such an expression back without executing anything; `render` checks that every
inlined value round-trips through both, so no template string can become code.
"""

from __future__ import annotations

import ast
import math
from typing import Any

__all__ = ["LiteralError", "eval_literal", "py_literal", "same_value"]

_NON_FINITE = {"inf": 'float("inf")', "-inf": '-float("inf")', "nan": 'float("nan")'}


class LiteralError(ValueError):
    """A value that cannot be written as a Python literal (only JSON-like data can)."""


def py_literal(value: Any, where: str = "template") -> str:
    """Python source for `value`; `where` names its position for the error message."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str:
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else _NON_FINITE[repr(value)]
    if kind is list:
        return "[" + ", ".join(py_literal(item, f"{where}[{i}]") for i, item in enumerate(value)) + "]"
    if kind is tuple:
        items = [py_literal(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if kind is dict:
        pairs = (
            f"{py_literal(key, f'{where} key')}: {py_literal(item, f'{where}[{key!r}]')}"
            for key, item in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    raise LiteralError(f"{where}: a {kind.__name__} value cannot be inlined (only JSON-like data can)")


def eval_literal(node: ast.AST) -> Any:
    """Evaluate an expression written by `py_literal`; anything else raises `LiteralError`."""
    if isinstance(node, ast.Constant) and type(node.value) in (str, int, float, bool, type(None)):
        return node.value
    if isinstance(node, ast.List):
        return [eval_literal(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(eval_literal(item) for item in node.elts)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {eval_literal(key): eval_literal(item) for key, item in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = eval_literal(node.operand)
        if type(operand) in (int, float):
            return -operand
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in ("inf", "nan")
    ):
        return float(node.args[0].value)
    raise LiteralError(f"not a respc literal: {ast.dump(node)[:80]}")


def same_value(a: Any, b: Any) -> bool:
    """Deep equality that also tells `1` from `True` and `1.0`, lists from tuples, and NaN equals NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is float and a != a:
        return b != b
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    return a == b
