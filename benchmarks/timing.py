"""What the benchmarks share: driving a parser over chunks, the floors (the bare work the API requires),
and paired timing (both sides back to back in each round, so that the machine's drift cancels)."""

from __future__ import annotations

import json
import statistics
import time

ROUNDS = 21


def run_stream(make_parser, chunks: list[str]) -> dict:
    parser = make_parser()
    for chunk in chunks:
        parser.feed(chunk)
    return parser.finalize()[0]


def floor_stream(chunks: list[str]) -> list:
    """Iterate the chunks and build the one event per chunk that the API must return."""
    out = None
    for chunk in chunks:
        out = [{"type": "region_chunk", "field": "content", "text": chunk, "dirty": False}]
    return out


def floor_parse(text: str, opener: str, closer: str) -> object:
    """One `str.find` pass for the tool call, plus `json.loads` of it (for JSON tool bodies)."""
    start = text.find(opener)
    end = text.find(closer, start)
    body = text[start + len(opener) : end]
    try:
        return json.loads(body)
    except ValueError:
        return body


def timed(run, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - start) / repeat


def record_pairs(
    benchmark, name: str, ours, other, *, repeat: tuple[int, int], rounds: int = ROUNDS, scale: float = 1.0
) -> None:
    """Record `rounds` ratios other/ours (times `scale`), each from one back-to-back timing of both."""
    ratios: list[float] = []

    def one_round() -> None:
        if len(ratios) % 2:
            theirs, mine = timed(other, repeat[1]), timed(ours, repeat[0])
        else:
            mine, theirs = timed(ours, repeat[0]), timed(other, repeat[1])
        ratios.append(theirs / mine * scale)

    benchmark.group = "targets: paired ratios (time of one round; see extra_info)"
    benchmark.pedantic(one_round, rounds=rounds, iterations=1)
    benchmark.extra_info.update(
        workload="paired", ratio=name, ratios=ratios, median=statistics.median(ratios)
    )
