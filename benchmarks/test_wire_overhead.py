"""What the wire formats add to a bare `DeltaStream` on the same stream (the aim: at most +30%).

    python -m pytest benchmarks/test_wire_overhead.py --benchmark-only --benchmark-json=.benchmarks/wire.json
    python benchmarks/render_table.py .benchmarks/wire.json --write   # the wire table of docs/serving.md

Each workload streams a 10k-character response in 4-character chunks through a `DeltaStream` (iterating
the deltas of every feed) and, side by side, through the same `DeltaStream` driven by a wire format
(iterating its events); a third pair compares the server-sent-event text with the bare stream's deltas
sent as `data:` lines. As in test_targets.py, every round times both sides back to back and the figure
is the median of the per-round ratios (`extra_info["median"]`), so that the machine's drift cancels.
"""

from __future__ import annotations

import json
import statistics

import pytest
from timing import timed
from workloads import SHAPES, chunks_of, response, template

import respc
from respc.serving import ChatCompletionsWire, DeltaStream, MessagesWire, ResponsesWire

FORMATS = {"chat": ChatCompletionsWire, "responses": ResponsesWire, "messages": MessagesWire}
ROUNDS = 15


def _deltas(make, chunks: list[str]) -> None:
    stream = DeltaStream(make())
    for chunk in chunks:
        for _ in stream.feed(chunk):
            pass
    stream.finish()


def _deltas_sse(make, chunks: list[str]) -> None:
    """The bare stream as a server would send it: each delta as a `data:` line."""
    stream = DeltaStream(make())
    for chunk in chunks:
        for delta in stream.feed(chunk):
            _ = f"data: {json.dumps(delta, ensure_ascii=False, separators=(',', ':'))}\n\n"
    stream.finish()


def _events(wire, make, chunks: list[str]) -> None:
    for _ in wire(model="m").events(DeltaStream(make()), chunks):
        pass


def _sse(wire, make, chunks: list[str]) -> None:
    for _ in wire(model="m").sse(DeltaStream(make()), chunks):
        pass


@pytest.mark.parametrize("output", ("events", "sse"))
@pytest.mark.parametrize("wire", sorted(FORMATS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_wire_overhead(benchmark, shape: str, wire: str, output: str) -> None:
    """The wire format's time over the bare `DeltaStream`'s, per round, back to back."""
    module = respc.compile_template(template(shape))
    make = lambda: module.ResponseParser("")  # noqa: E731
    chunks = chunks_of(response(shape, 10_000))
    bare, wired = (_deltas, _events) if output == "events" else (_deltas_sse, _sse)
    ratios: list[float] = []

    def one_round() -> None:
        ours = lambda: wired(FORMATS[wire], make, chunks)  # noqa: E731
        base = lambda: bare(make, chunks)  # noqa: E731
        if len(ratios) % 2:
            mine, theirs = timed(ours, 2), timed(base, 2)
        else:
            theirs, mine = timed(base, 2), timed(ours, 2)
        ratios.append(mine / theirs)

    benchmark.group = "wire formats: paired ratios over the bare DeltaStream (see extra_info)"
    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(
        workload="wire",
        shape=shape,
        wire=wire,
        output=output,
        ratios=ratios,
        median=statistics.median(ratios),
    )
