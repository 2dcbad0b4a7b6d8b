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
    from respc.compiler import SourceError, TemplateError

    try:
        yield
    except TemplateError as error:
        raise UsageError(f"{name}: {error}".splitlines()[0]) from error
    except (SourceError, RecursionError, MemoryError) as error:
        # transformers accepts values nested deeper than Python source can spell (about 200 levels)
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(
            f"{name}: cannot compile: template values are nested too deeply ({reason})"
        ) from error
