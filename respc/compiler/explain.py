"""`respc explain`: the plan as text, for template authors and reviewers."""

from __future__ import annotations

from respc.compiler.plan import ParserPlan, describe_anchor

__all__ = ["explain"]


def explain(plan: ParserPlan) -> str:
    """The delimiter table, the field table and the state plan of `plan`."""
    lines = [f"Template {plan.source_name}", "", "Delimiters:"]
    rows = [("field", "kind", "scan", "delimiter")]
    rows += [(repr(d.field), d.kind, d.method, d.text) for d in plan.delimiters]
    rows.append(
        (
            "(prefix)",
            "anchor",
            "literal" if plan.start_anchor.is_literal else "pattern",
            describe_anchor(plan.start_anchor),
        )
    )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines += [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows
    ]
    lines += ["", "Fields:"]
    for f in plan.fields:
        mode = f"join {f.join!r}" if f.join is not None else ("repeats" if f.repeats else "last wins")
        extras = [f.content, mode, "required" if not f.optional else "optional"]
        if f.transform is not None:
            extras.append("transform_each" if f.transform_each else "transform")
        if f.close_captures:
            extras.append("close captures")
        lines.append(f"  {f.name!r}: " + ", ".join(extras))
    lines += ["", "States (watch sets in tie-break order):"]
    for s in plan.states:
        fast = "yes" if s.starts is not None else "no (regex delimiters)"
        lines.append(f"  {s.function}: {s.comment}")
        lines.append(f"    skip-scan fast path: {fast}" + (", dirty chunks" if s.dirty else ""))
    context = (
        "all consumed text (a pattern looks behind)"
        if plan.context is None
        else f"{plan.context} character(s)"
    )
    lines += ["", f"Target: transformers {plan.target.name}"]
    lines += [f"Context kept before the scan position: {context}"]
    lines += [f"Warning: {warning}" for warning in plan.warnings]
    lines.append("")
    return "\n".join(lines)
