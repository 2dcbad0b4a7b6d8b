"""The template hash that names cached modules and heads every generated module.

Kept out of `respc.compiler` (whose modules import jinja2 and black) so that loading a parser from a
warm cache imports neither.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["template_hash"]


def template_hash(template: Any) -> str:
    """sha256 of the template's canonical JSON (key order kept: field order is meaningful)."""
    try:
        canonical = json.dumps(template, ensure_ascii=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        # Tuples and other non-JSON data given through the Python API: only then is the compiler needed.
        from respc.compiler.literal import py_literal

        canonical = py_literal(template)
    return hashlib.sha256(canonical.encode("ascii", "backslashreplace")).hexdigest()
