"""Render a `ParserPlan` to Python source with Jinja2 (the only module that imports jinja2).

Templates receive the finished plan and decide nothing; template data reaches the source only
through the `py` filter (checked Python literals) and the `comment` filter (single-line reprs).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from respc._hash import template_hash
from respc._literal import py_literal
from respc.compiler.plan import ParserPlan
from respc.runtime import CONTRACT

__all__ = ["render_module"]

_COMMENT_LIMIT = 400
_CODING = re.compile(r"coding([:=])")
_LINE = 108


def _comment(text: Any, indent: int = 0) -> str:
    """Comment text wrapped to the line length; continuation lines get `indent` spaces and `# `."""
    text = str(text)
    if not text.isprintable():  # a line break would end the comment: show such text as its repr
        text = repr(text)
    # On the first two lines, "coding: x" would be a PEP 263 declaration and change how Python decodes
    # the whole module (a source named "coding=utf-7" could smuggle code): never let template text say it.
    text = _CODING.sub(r"coding \1", text)
    if len(text) > _COMMENT_LIMIT:
        text = text[: _COMMENT_LIMIT - 3] + "..."
    lines = textwrap.wrap(text, width=_LINE - indent - 2, break_long_words=True, break_on_hyphens=False)
    return ("\n" + " " * indent + "# ").join(lines)


def _docstring(text: str) -> str:
    """A raw triple-quoted docstring when that round-trips, else a plain string literal."""
    body = "\n\n".join(textwrap.fill(part, _LINE, break_on_hyphens=False) for part in text.split("\n\n"))
    return _raw_literal(body + "\n", quote='"""') or py_literal(text)


def _raw_literal(text: str, quote: str) -> str | None:
    """`text` as a raw string literal if one spells it exactly, else None."""
    if quote in text or (quote[0] * 3) in text or text.endswith("\\") or quote[0] == text[-1:]:
        return None
    if not all(c.isprintable() or (c == "\n" and len(quote) == 3) for c in text):
        return None
    candidate = f"r{quote}{text}{quote}"
    try:
        node = ast.parse(candidate, mode="eval").body
    except SyntaxError:
        return None
    return candidate if isinstance(node, ast.Constant) and node.value == text else None


def _pattern(text: str) -> str:
    """A regex as a raw string literal when one spells it exactly (readable), else its repr."""
    return _raw_literal(text, '"') or _raw_literal(text, "'") or py_literal(text)


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
_ENV.filters["pattern"] = _pattern


def render_module(plan: ParserPlan, *, version: str, regenerate: str) -> str:
    """The generated module's source, before formatting."""
    context = {"plan": plan, "spell": _speller(plan), "contract": CONTRACT}
    # The code first: the constants part writes a derived constant (a length, a rare character) only
    # where the code names it.
    body = "\n\n".join(
        _ENV.get_template(f"parts/{part}.py.jinja").render(context) for part in ("scans", "values", "parser")
    )
    return _ENV.get_template("module.py.jinja").render(
        context,
        version=version,
        template_hash=template_hash(plan.template),
        regenerate=regenerate,
        docstring=_docstring(plan.description),
        used=frozenset(_NAME.findall(body)),
        body=body,
    )


_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _speller(plan: ParserPlan) -> Callable[..., str]:
    """`spell(texts, own=None)`: a tuple of delimiter texts as Python source that names each text (or the
    whole tuple) by the module constant holding it, where one does, so a literal is written once. With
    `own` (a delimiter, in the constants part), only its own prefix, written just before it."""
    names: dict[Any, str] = {}
    for d in plan.delimiters:
        if d.const not in plan.used_delimiters:
            continue
        if d.method == "literal":
            names.setdefault(d.literals[0], d.const)
        elif d.method == "literals":
            names.setdefault(d.literals, d.const)
        elif d.const in plan.prefixed or d.const in plan.stream_prefixed:
            names.setdefault(d.prefix, d.prefix_const)
    for state in plan.states:
        if state.end_shape == "literals":
            names.setdefault(state.table_literals, state.table + "_LITERALS")

    def spell(texts: tuple[str, ...], own: Any = None) -> str:
        known = names
        if own is not None:
            prefixed = own.const in plan.prefixed or own.const in plan.stream_prefixed
            known = {own.prefix: own.prefix_const} if prefixed else {}
        if not texts or texts in known:
            return known.get(texts, "()")
        return "(" + ", ".join(known.get(text) or py_literal(text) for text in texts) + ",)"

    return spell
