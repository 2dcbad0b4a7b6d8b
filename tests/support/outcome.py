"""What a call did, as data that compares: its value, or the exception it raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.oracles import is_exception_of


def outcome(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple:
    """("ok", value) or ("raise", exception type, message): what `call(*args, **kwargs)` did."""
    try:
        return ("ok", call(*args, **kwargs))
    except Exception as error:
        return ("raise", type(error), str(error))


def same_outcome(ours: tuple, theirs: tuple) -> bool:
    """The same value, compared by repr (key order and types count, and NaN equals itself), or the same
    message from an exception of the oracle's type or a subclass of it (a worker's `RemoteType` too)."""
    if ours[0] != theirs[0]:
        return False
    if ours[0] == "ok":
        return repr(ours[1]) == repr(theirs[1])
    return is_exception_of(ours[1], theirs[1]) and ours[2] == theirs[2]
