"""The template hash that names cached modules and heads every generated module.

Kept out of `respc.compiler` (whose modules import jinja2 and black), with the literal writer it uses
(`respc._literal`), so that hashing any template and loading a parser from a warm cache need only the
runtime.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["template_hash"]


_JSON_ATOMS = (str, int, float, bool, type(None))


def _plain_json(value: Any) -> bool:
    """Whether JSON spells `value` unambiguously: exact dicts with str keys, lists and JSON atoms. (JSON
    writes `{1: x}` as `{"1": x}` and a tuple as a list, and such templates parse differently.)"""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _plain_json(item) for key, item in value.items())
    if kind is list:
        return all(_plain_json(item) for item in value)
    return kind in _JSON_ATOMS


def template_hash(template: Any) -> str:
    """sha256 of the template's canonical JSON (key order kept: field order is meaningful).

    Templates holding other data (given through the Python API) are hashed from their Python literal,
    tagged so that no JSON text can collide with it; it names in-memory and on-disk caches, so two
    templates that parse differently must never share it.
    """
    if _plain_json(template):
        canonical = json.dumps(template, ensure_ascii=True, separators=(",", ":"), allow_nan=True)
    else:
        from respc._literal import LiteralError, py_literal  # only Python-literal templates need it

        try:
            canonical = "py:" + py_literal(template)
        except LiteralError:  # not even a literal: such a template is refused when compiled
            canonical = "repr:" + repr(template)
    return hashlib.sha256(canonical.encode("ascii", "backslashreplace")).hexdigest()
