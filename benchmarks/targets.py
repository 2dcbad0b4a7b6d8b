"""The speed targets, defined once: the README's targets table shows them, `check_targets.py` enforces them.

Each ratio that `test_targets.py` records (a median of paired rounds) has a bound per kind of workload:
"literal" templates delimit every region with literals, "regex" ones have at least one regex
delimiter, "content" is a content parser timed on its own. Ratios marked as aims are reported, never
enforced.
"""

from __future__ import annotations

KIND = {
    "smollm": "literal",
    "qwen3_5": "regex",
    "gpt_oss": "regex",
    "gemma4": "regex",
    "python-call-list": "content",
}

# ratio name -> (comparison, {template kind: bound}, enforced)
TARGETS: dict[str, tuple[str, dict[str, float], bool]] = {
    "stream 10k speed-up": (">=", {"literal": 8.0, "regex": 4.0}, True),
    "parse 10k speed-up": (">=", {"literal": 8.0, "regex": 4.0}, True),
    "stream µs/chunk 1M ÷ 10k": ("<=", {"literal": 1.3, "regex": 1.3}, True),
    "stream 10k respc ÷ floor": ("<=", {"literal": 2.0, "regex": 2.0}, False),
    "parse 10k respc ÷ floor": ("<=", {"literal": 2.0, "regex": 2.0}, False),
    "content parser speed-up": (">=", {"content": 3.0}, True),
}


def applies(name: str, shape: str) -> bool:
    """Whether the ratio `name` has a bound for the workload `shape`."""
    return KIND[shape] in TARGETS[name][1]


def describe(name: str) -> str:
    """The target as the README's header cell says it: "≥ 8x literal, ≥ 4x regex", "aim ≤ 2"."""
    comparison, bounds, enforced = TARGETS[name]
    sign = "≥" if comparison == ">=" else "≤"
    unit = "x" if "speed-up" in name else ""
    if len(set(bounds.values())) == 1:
        text = f"{sign} {next(iter(bounds.values())):g}{unit}"
    else:
        text = ", ".join(f"{sign} {bound:g}{unit} {kind}" for kind, bound in bounds.items())
    return text if enforced else f"aim {text}"


def verdict(name: str, shape: str, value: float, tolerance: float) -> tuple[float, bool]:
    """(the bound for `shape`, whether `value` is within `tolerance` of meeting it)."""
    comparison, bounds, _ = TARGETS[name]
    bound = bounds[KIND[shape]]
    if comparison == ">=":
        return bound, value >= bound * (1 - tolerance)
    return bound, value <= bound * (1 + tolerance)
