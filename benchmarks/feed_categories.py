"""Where a stream's time goes, by kind of feed, respc beside transformers: which feeds keep a preset's
streaming ratio down (issue #31's short responses).

    python benchmarks/feed_categories.py [PRESET ...] [--length short|500|2000] [--rounds N]

Each preset's samples (as `preset_speed.py` builds them for that length) are streamed in 4-character
chunks, a new parser per response. Every feed is put in a category by what respc's parser did with it:
`fast` (a fast mode routed it and stayed), `enter-held` (it started holding a delimiter's prefix), `held`
(a held prefix grew, or was let go, without an event other than a chunk), `commit` (a region opened or
closed), `other`; construction is `init` and `finalize` is `final`. Both parsers are timed feed by feed
over the same streams (`perf_counter` around each call, its own cost subtracted), and each row gives, per
category, respc's share of its own time and transformers' time over respc's. A category's ratio times
its share, summed, is the preset's ratio: the categories with a large share and a low ratio are where
the work is. Timings of single feeds are noisy (5-10% between runs); read the shares and ratios, not
the last digit.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from preset_speed import cases, presets

_FAST_MODES = ("plain", "lead", "bare", "discard")
_HELD_MODES = ("held", "pending")


def _categories(module: Any, work: list[tuple[str, list[str]]]) -> list[list[str]]:
    """The category of each feed of each stream, by what respc's parser did with it."""
    out = []
    for prefix, chunks in work:
        parser = module.ResponseParser(prefix, errors="keep")
        row = []
        for chunk in chunks:
            before = parser.feed_mode
            try:
                events = parser.feed(chunk)
            except Exception:
                events = [{"type": "error"}]
            after = parser.feed_mode
            if any(event["type"] != "region_chunk" for event in events):
                row.append("commit")
            elif before in _FAST_MODES and after == before:
                row.append("fast")
            elif after in _HELD_MODES and before not in _HELD_MODES:
                row.append("enter-held")
            elif before in _HELD_MODES:
                row.append("held")
            else:
                row.append("other")
        out.append(row)
    return out


def _time(make: Any, work: list, kinds: list[list[str]], rounds: int) -> collections.Counter:
    clock = time.perf_counter
    own = min(-clock() + clock() for _ in range(1000))  # (the clock's own cost, left to right)
    spent: collections.Counter = collections.Counter()
    gc.disable()
    try:
        for done in range(rounds + 3):
            if done == 3:
                spent.clear()  # (three rounds to warm up)
            for (prefix, chunks), row in zip(work, kinds):
                start = clock()
                parser = make(prefix)
                spent["init"] += clock() - start - own
                for chunk, kind in zip(chunks, row):
                    start = clock()
                    try:
                        parser.feed(chunk)
                    except Exception:
                        pass  # (a malformed sample raises in both)
                    spent[kind] += clock() - start - own
                start = clock()
                try:
                    parser.finalize()
                except Exception:
                    pass
                spent["final"] += clock() - start - own
    finally:
        gc.enable()
    return spent


def measure(preset: str, length: Any, rounds: int) -> dict[str, Any]:
    from transformers.utils.chat_parsing import ResponseParser

    import respc

    module = respc.load_preset(preset)
    work = [
        (prefix, [text[i : i + 4] for i in range(0, len(text), 4)]) for prefix, text in cases(preset)[length]
    ]
    kinds = _categories(module, work)
    ours = _time(lambda prefix: module.ResponseParser(prefix, errors="keep"), work, kinds, rounds)
    theirs = _time(lambda prefix: ResponseParser(module.TEMPLATE, prefix), work, kinds, rounds)
    total = sum(ours.values())
    return {
        "preset": preset,
        "length": length,
        "ratio": round(sum(theirs.values()) / total, 2),
        "share": {kind: round(spent / total, 3) for kind, spent in sorted(ours.items())},
        "ratios": {kind: round(theirs[kind] / spent, 2) for kind, spent in sorted(ours.items()) if spent > 0},
    }


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("presets", nargs="*", help="presets to measure (default: every one)")
    options.add_argument("--length", default="short", choices=("short", "500", "2000"))
    options.add_argument("--rounds", type=int, default=40, help="rounds over the samples (default: 40)")
    args = options.parse_args()
    length = args.length if args.length == "short" else int(args.length)
    shares: collections.Counter = collections.Counter()
    weighted: collections.Counter = collections.Counter()
    names = args.presets or presets()
    for preset in names:
        row = measure(preset, length, args.rounds)
        cells = " ".join(
            f"{kind} {100 * share:.0f}%/{row['ratios'].get(kind, 0):.1f}x"
            for kind, share in row["share"].items()
        )
        print(f"{preset:16} {row['ratio']:5.2f}x  {cells}", flush=True)
        for kind, share in row["share"].items():
            shares[kind] += share / len(names)
            weighted[kind] += share * row["ratios"].get(kind, 0) / len(names)
    mean = " ".join(
        f"{kind} {100 * share:.0f}%/{weighted[kind] / share:.1f}x" for kind, share in sorted(shares.items())
    )
    print(f"{'mean':16} {'':6} {mean}")


if __name__ == "__main__":
    main()
