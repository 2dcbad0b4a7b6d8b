"""The regex syntax the analyses read: what Python's parser and the `regex` module read alike."""

from __future__ import annotations

import re
import warnings
from typing import Any

try:  # Python's own regex parser gives the structure of the pattern
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

__all__ = ["MAXREPEAT", "is_plain", "parse", "plain_items"]

MAXREPEAT = sre_parse.MAXREPEAT
_BAD_ESCAPE = re.compile(r"\\[pPXNmMGKLhHvV]")  # escapes only the `regex` module knows, or reads otherwise
_ESCAPED = re.compile(r"\\.", re.DOTALL)
_BAD_SYNTAX = re.compile(
    r"\(\?(?!:|P<|P=|=|!|<=|<!|>|#)"  # inline flags, conditionals, branch reset... (lookarounds are shared)
    r"|\{(?![0-9]*,?[0-9]*\})"  # fuzzy matching and other non-repeat braces
    r"|\[\[|\[:|&&|\|\||--|~~"  # nested sets, POSIX classes, set operations
)


def neutralise_escapes(pattern: str) -> str:
    """`pattern` with every escape replaced by `x`, so structural checks see `\\{` as the character."""
    return _ESCAPED.sub("x", pattern)


def is_plain(pattern: str) -> bool:
    """Whether `pattern` is written only in syntax that Python's regex parser and the `regex` module
    read alike (escapes are neutralised before the structural checks)."""
    return not (_BAD_ESCAPE.search(pattern) or _BAD_SYNTAX.search(neutralise_escapes(pattern)))


def parse(pattern: str) -> Any:
    """Python's parse tree of `pattern` (DOTALL), without the FutureWarnings it gives for `regex`-module
    syntax such as `[[:alpha:]]` (those patterns are the `regex` module's to read; ours is only an
    analysis). Raises `re.error` and friends for what Python cannot parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return sre_parse.parse(pattern, re.DOTALL)


def plain_items(pattern: str) -> Any:
    """`parse(pattern)` for a pattern in the plain syntax (`is_plain`); None for any other, or one that
    Python cannot parse (the analyses then know nothing of it)."""
    if not is_plain(pattern):
        return None
    try:
        return parse(pattern)
    except Exception:
        return None
