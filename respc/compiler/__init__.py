"""Build-time half of respc: template -> Spec -> ParserPlan -> source -> formatted, verified source.

Needs the `compiler` extra (jinja2, black). Generated modules never import this package.
"""

from __future__ import annotations

import warnings
from typing import Any

from respc._hash import template_hash
from respc._literal import LiteralError
from respc._version import __version__
from respc.compiler.format import SourceError, format_source, verify_source
from respc.compiler.plan import ParserPlan, plan_parser
from respc.compiler.render import render_module
from respc.runtime.targets import Target
from respc.spec import Spec, TemplateError, TemplateTypeError, TemplateWarning, load_template

__all__ = [
    "ParserPlan",
    "SourceError",
    "Spec",
    "TemplateError",
    "TemplateTypeError",
    "TemplateWarning",
    "generate_source",
    "load_template",
    "plan_parser",
    "template_hash",
]


def generate_source(
    template: Any,
    *,
    name: str | None = None,
    regenerate: str | None = None,
    target: str | Target | None = None,
) -> str:
    """The formatted, verified source of the parser module for `template`, parsing as the `target`
    release of transformers (default: the newest supported).

    `name` is the source shown in the provenance header (a file name, never an absolute path);
    `regenerate` is the command the header gives for rebuilding the module.
    """
    source_name = name or "<template>"
    spec = load_template(template, target)
    plan = plan_parser(spec, source_name)
    for message in plan.warnings:
        warnings.warn(f"{source_name}: {message}", TemplateWarning, stacklevel=2)
    try:
        raw = render_module(
            plan, version=__version__, regenerate=regenerate or f"respc compile {source_name}"
        )
    except LiteralError as error:
        raise TemplateError(str(error)) from error
    source = format_source(raw)
    verify_source(source, template, f"<respc {source_name!r}>")
    return source
