"""The regex syntax the analyses read: what Python's parser and the `regex` module read alike."""

from __future__ import annotations

import re
import warnings
from typing import Any

try:  # Python's own regex parser gives the structure of the pattern
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

__all__ = ["MAXREPEAT", "is_plain", "parse", "plain_items", "python_syntax"]

MAXREPEAT = sre_parse.MAXREPEAT
_BAD_ESCAPE = re.compile(r"\\[pPXNmMGKLhHvV]")  # escapes only the `regex` module knows, or reads otherwise
_ESCAPED = re.compile(r"\\.", re.DOTALL)
_NAMED_GROUP = re.compile(r"\(\?<[^\W\d]\w*>")
_BAD_SYNTAX = re.compile(
    r"\(\?(?!:|P<|P=|=|!|<=|<!|>|#)"  # inline flags, conditionals, branch reset... (lookarounds are shared)
    r"|\{(?![0-9]*,?[0-9]*\})"  # fuzzy matching and other non-repeat braces
    r"|\[\[|\[:|&&|\|\||--|~~"  # nested sets, POSIX classes, set operations
)


def python_syntax(pattern: str) -> str:
    """`pattern` with the `regex` module's spelling of a named group, `(?<name>...)`, written as Python's
    `(?P<name>...)` (outside character classes): both read the group alike, and only Python's parser
    needs telling. (`(?<=` and `(?<!` are lookbehinds in both, and are left alone.)"""
    if "(?<" not in pattern:
        return pattern
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            out.append(char)
            i += 1
            # a `]` right after `[` or `[^` is a member, not the end of the class
            for lead in ("^", "]"):
                if pattern.startswith(lead, i):
                    out.append(lead)
                    i += 1
            continue
        elif _NAMED_GROUP.match(pattern, i):
            out.append("(?P<")
            i += 3
            continue
        out.append(char)
        i += 1
    return "".join(out)


def neutralise_escapes(pattern: str) -> str:
    """`pattern` with every escape replaced by `x`, so structural checks see `\\{` as the character."""
    return _ESCAPED.sub("x", pattern)


def is_plain(pattern: str) -> bool:
    """Whether `pattern` is written only in syntax that Python's regex parser and the `regex` module
    read alike (escapes are neutralised before the structural checks)."""
    return not (_BAD_ESCAPE.search(pattern) or _BAD_SYNTAX.search(neutralise_escapes(python_syntax(pattern))))


def parse(pattern: str) -> Any:
    """Python's parse tree of `pattern` (DOTALL), without the FutureWarnings it gives for `regex`-module
    syntax such as `[[:alpha:]]` (those patterns are the `regex` module's to read; ours is only an
    analysis). Raises `re.error` and friends for what Python cannot parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return sre_parse.parse(python_syntax(pattern), re.DOTALL)


def plain_items(pattern: str) -> Any:
    """`parse(pattern)` for a pattern in the plain syntax (`is_plain`); None for any other, or one that
    Python cannot parse (the analyses then know nothing of it)."""
    if not is_plain(pattern):
        return None
    try:
        return parse(pattern)
    except Exception:
        return None
