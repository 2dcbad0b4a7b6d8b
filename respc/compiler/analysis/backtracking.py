"""Regex shapes that may backtrack exponentially: warned about at compile time, never refused."""

from __future__ import annotations

from typing import Any

from respc.compiler.analysis.starts import Unknown, first_chars_of, item_kind, overlap, sequence
from respc.compiler.analysis.syntax import MAXREPEAT, parse

__all__ = ["backtracking_risk"]


def _unwrap(items: Any) -> Any:
    """The items inside groups that hold nothing else: `((a|b))` -> `a|b`."""
    while len(items) == 1 and str(items[0][0]) == "SUBPATTERN":
        items = items[0][1][3]
    return items


def _overlapping_branches(items: Any) -> bool:
    """Whether `items` is (a group around) an alternation two of whose branches can start alike, so
    that a repeat of it can split one text into iterations in many ways (`(?:a|aa)+`, `(?:\\s|\\n)*`)."""
    items = _unwrap(items)
    if len(items) != 1 or str(items[0][0]) != "BRANCH":
        return False
    starts = []
    for branch in items[0][1][1]:
        first = first_chars_of(branch)
        if first is not None:
            starts.append(frozenset(item_kind(item) for item in first))
    return any(overlap(a, b) for i, a in enumerate(starts) for b in starts[i + 1 :])


def _ambiguous_end(items: Any) -> bool:
    """Whether an iteration of `items` can end in an optional part that could also start the next
    iteration: `(?:a|aa)+`, which Python's parser reads as `(?:a(?:|a))+`, or `(?:aa?)+`."""
    items = _unwrap(items)
    start = first_chars_of(items)
    if not start:
        return False
    start_kinds = frozenset(item_kind(item) for item in start)
    for index in range(len(items) - 1, -1, -1):
        op, av = items[index]
        op = str(op)
        if op in ("MAX_REPEAT", "MIN_REPEAT") and av[0] == 0:
            bodies = [av[2]]
        elif op == "BRANCH" and any(not branch for branch in av[1]):
            bodies = [branch for branch in av[1] if branch]
        else:
            bodies = []
        try:
            for body in bodies:
                first, _ = sequence(body)
                if first and overlap(frozenset(item_kind(item) for item in first), start_kinds):
                    return True
            _, nullable = sequence([items[index]])
        except (Unknown, RecursionError):
            return False
        if not nullable:
            return False  # a required part ends every iteration: nothing optional can run into the next
    return False


def backtracking_risk(pattern: str) -> str | None:
    """Why `pattern` may backtrack exponentially, or None.

    Heuristic and conservative in what it names: nested unbounded repeats such as `(a+)+` or
    `(?:\\s*x?)*`, and repeats that can split one text into iterations in many ways. Patterns Python's
    parser cannot read are skipped.
    """
    try:
        tree = parse(pattern)
    except Exception:  # regex-module-only syntax: nothing to say
        return None

    def walk(items: Any, inside_repeat: bool) -> str | None:
        for op, av in items:
            op = str(op)
            if op in ("MAX_REPEAT", "MIN_REPEAT"):
                if inside_repeat and av[1] == MAXREPEAT:
                    return "a repeated group contains another unbounded repeat"
                if av[1] == MAXREPEAT and (_overlapping_branches(av[2]) or _ambiguous_end(av[2])):
                    return "a repeated group can split the same text into iterations in many ways"
                found = walk(av[2], inside_repeat or av[1] > 1)
            elif op == "SUBPATTERN":
                found = walk(av[3], inside_repeat)
            elif op == "BRANCH":
                found = next((r for r in (walk(b, inside_repeat) for b in av[1]) if r), None)
            elif op in ("ASSERT", "ASSERT_NOT"):
                found = walk(av[1], inside_repeat)
            else:
                found = None  # atomic groups do not backtrack into themselves; atoms have nothing inside
            if found:
                return found
        return None

    return walk(tree, False)
