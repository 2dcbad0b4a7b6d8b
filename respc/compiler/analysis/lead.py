"""Lead-run delimiters: a run of one character class, then the rest (`\\s*<tool_call>`).

A match of such a pattern is a maximal run of the class ending where the rest matches, so the parser
can search for the rest (which the `regex` module finds by its literal start) and walk back over the
run, instead of trying the run at every position.
"""

from __future__ import annotations

import regex

from respc.compiler.analysis.guards import split_branches
from respc.compiler.analysis.starts import first_chars
from respc.compiler.analysis.syntax import MAXREPEAT, is_plain, parse, plain_items
from respc.runtime.scan import RUN_CLASSES

__all__ = ["LEADS", "branch_lead", "literal_run", "split_lead"]

# (pattern prefix, regex class of one run character): the leading runs many delimiters start with.
LEADS = ((r"\s*", r"\s"), (r"\n*", r"\n"), (r"[ \t]*", r"[ \t]"), (" *", " "))
assert {run_class for _, run_class in LEADS} == set(RUN_CLASSES)


def split_lead(pattern: str) -> tuple[str, str] | None:
    """`(run class, rest)` when `pattern` is a run of one character class followed by `rest`.

    That only holds when `rest` cannot start with a run character, which is checked on its literal first
    characters, and when the run is not the start of one branch of a top-level alternation.
    """
    for prefix, run_class in LEADS:
        if not pattern.startswith(prefix) or len(pattern) == len(prefix):
            continue
        rest = pattern[len(prefix) :]
        if rest[0] in "*+?{" or not is_plain(pattern):
            return None
        try:
            items = parse(pattern)
        except Exception:
            return None
        if len(items) < 2 or str(items[0][0]) != "MAX_REPEAT":
            return None  # a top-level alternation: the run belongs to its first branch only
        if _lazy_repeat_that_may_fail(items.data[1:]):
            # The `regex` module's partial search reports a partial match where the run has matched and
            # a lazy repeat of the rest then fails (`\n*[ab]*?>>` on "\n<"), which a search for the rest
            # alone does not: such a pattern is searched whole, as upstream does.
            return None
        first = first_chars(rest)
        # Only single characters (possibly escaped; `\\d`-style categories are not) can be checked here.
        if not first or not all(
            len(item) == 1 or (len(item) == 2 and not item[1].isalnum()) for item in first
        ):
            return None
        run = regex.compile(run_class)
        if any(run.fullmatch(item[-1]) for item in first):
            return None
        return run_class, rest
    return None


def branch_lead(pattern: str) -> tuple[str, str] | None:
    """`(run class, rest)` when `pattern` is an alternation whose branches each start with a run of one
    class (`split_lead`) or with no run character at all (`\\s*;x|<e>`): `rest` is the alternation of the
    branches past their runs (`;x|<e>`). A match then starts with a run of the class (perhaps empty) and
    a character `rest` starts with, as for `split_lead`, which is what the fast modes need to know (mode
    lead holds a chunk's trailing run back); the scan still searches the whole pattern. None otherwise,
    and for a pattern `split_lead` splits."""
    branches = split_branches(pattern)
    if branches is None or len(branches) < 2 or not is_plain(pattern):
        return None
    classes, rests = set(), []
    for branch in branches:
        split = split_lead(branch)
        if split is None:
            rests.append(branch)
        else:
            classes.add(split[0])
            rests.append(split[1])
    if len(classes) != 1:
        return None
    (run_class,) = classes
    rest = "|".join(rests)
    first = first_chars(rest)
    if not first or not all(len(item) == 1 or (len(item) == 2 and not item[1].isalnum()) for item in first):
        return None
    run = regex.compile(run_class)
    if any(run.fullmatch(item[-1]) for item in first):
        return None
    return run_class, rest


def _lazy_repeat_that_may_fail(items: list) -> bool:
    """Whether the parse `items` hold a lazy repeat of anything but `.` (which never fails to match a
    character, so its partial matches are real), at any depth."""
    for op, av in items:
        if str(op) == "MIN_REPEAT" and not (len(av[2]) == 1 and str(av[2][0][0]) == "ANY"):
            return True
        for part in av if isinstance(av, (list, tuple)) else ():
            if hasattr(part, "data") and _lazy_repeat_that_may_fail(part.data):
                return True
            if isinstance(part, list) and any(
                hasattr(branch, "data") and _lazy_repeat_that_may_fail(branch.data) for branch in part
            ):
                return True
    return False


def literal_run(pattern: str) -> tuple[str, str | None] | None:
    """`(literal, run class or None)` when `pattern` is a literal, then perhaps a greedy run of one of the
    LEADS classes that ends it (`<\\|tool_call_end\\|>\\s*`); None otherwise.

    Its leftmost match from any position is then the first occurrence of the literal, with the longest
    run after it: an end-of-stream scan that has found the literal (its `prefix`) needs no regex search.
    Nothing else qualifies: no groups (a match's captures come from the regex), classes or alternations.
    """
    items = plain_items(pattern)
    if items is None:
        return None
    items = list(items)
    trail = None
    if items and str(items[-1][0]) == "MAX_REPEAT":
        low, high, body = items[-1][1]
        for _, run_class in LEADS:
            if low == 0 and high == MAXREPEAT and list(body) == list(parse(run_class)):
                trail = run_class
                items.pop()
                break
        else:
            return None
    if not items or any(str(op) != "LITERAL" for op, _ in items):
        return None
    return "".join(chr(av) for _, av in items), trail
