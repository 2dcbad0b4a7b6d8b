"""respc and transformers side by side, for each target: traces of both and their comparison.

`oracle_*` run the transformers release of `target` (see tests/support/oracles.py: 5.24.0 in process, 5.23.0 in
a worker process); `respc_*` run respc compiled for the same target. The default target is respc's
(the newest supported release).
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

import respc
from respc.runtime.targets import DEFAULT_TARGET, SUPPORTED_TARGETS
from support.oracles import OracleTimeout, is_exception_of, oracle, run_calls, stream_trace

__all__ = [
    "DEFAULT_TARGET",
    "FIXTURES",
    "SAMPLES",
    "SUPPORTED_TARGETS",
    "TEMPLATES",
    "OracleTimeout",
    "assert_same",
    "assert_streams_agree",
    "chunkings",
    "oracle_parse",
    "oracle_stream",
    "respc_parse",
    "respc_stream",
    "stream_trace",
]

FIXTURES = Path(__file__).parents[1] / "fixtures"
TEMPLATES = {
    p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "templates").glob("*.json"))
}
SAMPLES = {
    p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((FIXTURES / "samples").glob("*.json"))
}

logging.getLogger("transformers").setLevel(logging.ERROR)


def oracle_stream(
    template: Any, prefix: str | None, chunks: list[str], tools: Any = None, target: str = DEFAULT_TARGET
) -> list:
    return oracle(target).request("stream", (template, prefix, chunks, tools))


def respc_stream(
    template: Any, prefix: str | None, chunks: list[str], tools: Any = None, target: str = DEFAULT_TARGET
) -> list:
    return stream_trace(lambda: respc.ResponseParser(template, prefix, tools=tools, target=target), chunks)


def oracle_parse(
    template: Any, text: str, prefix: str | None, tools: Any = None, target: str = DEFAULT_TARGET
) -> list:
    return oracle(target).request("parse", (template, text, prefix, tools))


def respc_parse(
    template: Any, text: str, prefix: str | None, tools: Any = None, target: str = DEFAULT_TARGET
) -> list:
    return run_calls(
        [lambda: respc.parse_response(text, template, prefix=prefix, tools=tools, target=target)], None
    )


def _same_trace(ours: list, theirs: list) -> bool:
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if a[0] != b[0]:
            return False
        if a[0] == "ok" and a[1] != b[1] and repr(a[1]) != repr(b[1]):  # repr: NaN values compare unequal
            return False
        if a[0] == "raise" and not (is_exception_of(a[1], b[1]) and a[2] == b[2]):
            return False
    return True


def assert_same(ours: list, theirs: list, template: Any, context: str, target: str = DEFAULT_TARGET) -> None:
    """Fail with both traces and the generated source when respc and the oracle disagree."""
    if _same_trace(ours, theirs):
        return
    try:
        source = respc.generate_source(template, target=target)
    except Exception as error:
        source = f"<no source: {error!r}>"
    pytest.fail(
        f"respc differs from transformers {target} ({context})\n"
        f"respc:  {ours!r}\noracle: {theirs!r}\n--- generated module ---\n{source}",
        pytrace=False,
    )


def assert_streams_agree(
    template: Any, prefix: str, chunks: list[str], tails: Any = ([],), target: str = DEFAULT_TARGET
) -> None:
    """`chunks` and then each of `tails` (lists of chunks), streamed by respc and by the oracle: the same
    traces (a fast path's test, with what may come after the chunk it takes)."""
    for tail in tails:
        stream = [*chunks, *tail]
        assert_same(
            respc_stream(template, prefix, stream, target=target),
            oracle_stream(template, prefix, stream, target=target),
            template,
            repr(stream),
            target,
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


def spy(parser: Any, *names: str) -> list[str]:
    """The names of the object's methods `names` called from now on, in order (each wrapped on the
    instance): a fast path's test that the general mode, or a pass, did not run."""
    calls: list[str] = []
    for name in names:
        method = getattr(parser, name)
        setattr(parser, name, lambda *args, n=name, m=method, **kwargs: calls.append(n) or m(*args, **kwargs))
    return calls
