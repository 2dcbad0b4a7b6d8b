"""Render a `ParserPlan` to Python source with Jinja2 (the only module that imports jinja2).

Templates receive the finished plan and decide nothing; template data reaches the source only
through the `py` filter (checked Python literals) and the `comment` filter (single-line reprs).
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path
from typing import Any

import jinja2

from respc.compiler.literal import py_literal
from respc.compiler.plan import ParserPlan

__all__ = ["render_module", "template_hash"]

_COMMENT_LIMIT = 400
_LINE = 108


def template_hash(template: Any) -> str:
    """sha256 of the template's canonical JSON (key order kept: field order is meaningful)."""
    try:
        canonical = json.dumps(template, ensure_ascii=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        canonical = py_literal(template)  # tuples and other non-JSON data given through the Python API
    return hashlib.sha256(canonical.encode("ascii", "backslashreplace")).hexdigest()


def _comment(text: Any, indent: int = 0) -> str:
    """Comment text wrapped to the line length; continuation lines get `indent` spaces and `# `."""
    text = str(text)
    if len(text) > _COMMENT_LIMIT:
        text = text[: _COMMENT_LIMIT - 3] + "..."
    # Comment text is built from reprs, which never hold a line break; refuse rather than trust it.
    if not text.isprintable():
        raise ValueError(f"comment text holds an unprintable character: {text!r}")
    lines = textwrap.wrap(text, width=_LINE - indent - 2, break_long_words=True, break_on_hyphens=False)
    return ("\n" + " " * indent + "# ").join(lines)


def _docstring(text: str) -> str:
    """A triple-quoted docstring when that is safe, else a plain string literal."""
    body = "\n\n".join(textwrap.fill(part, _LINE, break_on_hyphens=False) for part in text.split("\n\n"))
    if '"""' not in body and not body.endswith('"') and all(c.isprintable() or c == "\n" for c in body):
        return '"""' + body.replace("\\", "\\\\") + '\n"""'
    return py_literal(text)


_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(__file__).with_name("templates"))),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters["py"] = py_literal
_ENV.filters["comment"] = _comment


def render_module(plan: ParserPlan, *, version: str, regenerate: str) -> str:
    """The generated module's source, before formatting."""
    return _ENV.get_template("module.py.jinja").render(
        plan=plan,
        version=version,
        template_hash=template_hash(plan.template),
        regenerate=regenerate,
        docstring=_docstring(plan.description),
    )
