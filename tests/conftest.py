"""Shared helpers: run respc and transformers 5.23.0 side by side and record comparable traces."""

from __future__ import annotations

import json
import logging
import random
import signal
from pathlib import Path
from typing import Any

import pytest

import respc

FIXTURES = Path(__file__).parent / "fixtures"
TEMPLATES = {
    p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "templates").glob("*.json"))
}
SAMPLES = {
    p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "samples").glob("*.json"))
}

logging.getLogger("transformers").setLevel(logging.ERROR)


class OracleTimeout(BaseException):
    """The oracle did not return in time (it hangs on some templates: quirk Q5).

    A BaseException, so that a parser's own `except Exception` (transformers catches content-parser
    errors) cannot swallow the alarm and leave the hang running with no deadline left."""


def _alarm(signum: int, frame: Any) -> None:
    raise OracleTimeout()


def _run(calls: list, deadline: float | None) -> list:
    """Run each zero-argument call in order, recording ("ok", value) or ("raise", type, message)."""
    out = []
    old = signal.signal(signal.SIGALRM, _alarm) if deadline else None
    try:
        for call in calls:
            if deadline:
                signal.setitimer(signal.ITIMER_REAL, deadline)
            try:
                out.append(("ok", call()))
            except OracleTimeout:
                raise
            except Exception as error:
                out.append(("raise", type(error), str(error)))
            finally:
                if deadline:
                    signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        if old is not None:
            signal.signal(signal.SIGALRM, old)
    return out


def stream_trace(make_parser: Any, chunks: list[str], deadline: float | None = None) -> list:
    """The trace of a whole stream: construction (with initial events), each feed, finalize (twice)."""
    holder: dict[str, Any] = {}

    def construct() -> list:
        holder["parser"] = make_parser()
        return holder["parser"].initial_events

    steps = _run([construct], deadline)
    if steps[0][0] != "ok":
        return steps
    parser = holder["parser"]
    calls = [lambda c=c: parser.feed(c) for c in chunks] + [parser.finalize, parser.finalize]
    return steps + _run(calls, deadline)


def oracle_stream(template: Any, prefix: str | None, chunks: list[str], tools: Any = None) -> list:
    from transformers.utils.chat_parsing import ResponseParser

    return stream_trace(lambda: ResponseParser(template, prefix, tools=tools), chunks, deadline=10)


def respc_stream(template: Any, prefix: str | None, chunks: list[str], tools: Any = None) -> list:
    return stream_trace(lambda: respc.ResponseParser(template, prefix, tools=tools), chunks)


def oracle_parse(template: Any, text: str, prefix: str | None, tools: Any = None) -> list:
    from transformers.utils.chat_parsing import parse_response

    return _run([lambda: parse_response(text, template, prefix=prefix, tools=tools)], 10)


def respc_parse(template: Any, text: str, prefix: str | None, tools: Any = None) -> list:
    return _run([lambda: respc.parse_response(text, template, prefix=prefix, tools=tools)], None)


def _same_trace(ours: list, theirs: list) -> bool:
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if a[0] != b[0]:
            return False
        if a[0] == "ok" and a[1] != b[1] and repr(a[1]) != repr(b[1]):  # repr: NaN values compare unequal
            return False
        if a[0] == "raise" and not (issubclass(a[1], b[1]) and a[2] == b[2]):
            return False
    return True


def assert_same(ours: list, theirs: list, template: Any, context: str) -> None:
    """Fail with both traces and the generated source when respc and the oracle disagree."""
    if _same_trace(ours, theirs):
        return
    try:
        source = respc.generate_source(template)
    except Exception as error:
        source = f"<no source: {error!r}>"
    pytest.fail(
        f"respc differs from transformers 5.23.0 ({context})\n"
        f"respc:  {ours!r}\noracle: {theirs!r}\n--- generated module ---\n{source}",
        pytrace=False,
    )


def chunkings(text: str, seed: int = 0, random_splits: int = 3) -> list[list[str]]:
    """Whole, one character at a time, fixed steps, and random splits of `text`."""
    out = [[text], list(text)]
    for step in (2, 3, 7):
        out.append([text[i : i + step] for i in range(0, len(text), step)])
    rng = random.Random(seed)
    for _ in range(random_splits):
        cuts = (
            sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 8))))
            if len(text) > 1
            else []
        )
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])])
    return out
