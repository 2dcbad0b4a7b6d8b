"""The CLI's own error: a usage problem, printed as one line with exit code 2."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["UsageError", "template_errors"]


class UsageError(Exception):
    """A user-facing failure (bad arguments, an invalid template): one line, exit code 2."""


@contextlib.contextmanager
def template_errors(name: str) -> Iterator[None]:
    """Turn a template that cannot be compiled into one `UsageError` line naming its source."""
    from respc._compile import CompileError
    from respc.spec import TemplateError

    try:
        yield
    except (TemplateError, CompileError) as error:
        raise UsageError(f"{name}: {error}".splitlines()[0]) from error
