"""Where a stream's time goes, by kind of feed, respc beside transformers: which feeds keep a preset's
streaming ratio down (issue #31's short responses).

    python benchmarks/feed_categories.py [PRESET ...] [--length short|500|2000] [--rounds N]
    python benchmarks/feed_categories.py [PRESET ...] --slowest 30 [--chunks token]

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

`--slowest N` lists instead, over all the presets named, the N feeds furthest from 4x: the median of
respc's time for that feed less a quarter of transformers' (in a stream, so a feed's cold caches count),
with its category, the text before it and the chunk, for the feeds where respc takes at least 0.8 of
transformers' time. A feed far above transformers' own time is most often a path that falls back to the
general pass where a fast mode could answer (how issue #31's stop 52 found six of them). `--chunks token`
feeds one BPE token at a time, as `preset_speed.py` splits them.
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

from preset_speed import bpe_chunks, cases, presets

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


def _per_feed(make: Any, work: list, rounds: int) -> dict[tuple[int, int], float]:
    """The median time of each feed (stream, feed) over `rounds` rounds, in stream."""
    clock = time.perf_counter
    times: dict[tuple[int, int], list[float]] = collections.defaultdict(list)
    gc.disable()
    try:
        for _ in range(rounds):
            for at, (prefix, chunks) in enumerate(work):
                parser = make(prefix)
                for index, chunk in enumerate(chunks):
                    start = clock()
                    try:
                        parser.feed(chunk)
                    except Exception:
                        pass
                    times[(at, index)].append(clock() - start)
    finally:
        gc.enable()
    return {key: sorted(spent)[len(spent) // 2] for key, spent in times.items()}


def slowest(names: list[str], chunking: str, rounds: int, count: int) -> list[tuple]:
    """`--slowest`'s rows: (deficit µs, preset, stream, feed, category, respc µs, transformers µs, the text
    before the chunk, the chunk), furthest from 4x first."""
    from transformers.utils.chat_parsing import ResponseParser

    import respc

    rows = []
    for preset in names:
        module = respc.load_preset(preset)
        samples = cases(preset)["short"]
        if chunking == "token":
            split = bpe_chunks([text for _, text in samples])
            work = [(prefix, split(text)) for prefix, text in samples]
        else:
            work = [(prefix, [text[i : i + 4] for i in range(0, len(text), 4)]) for prefix, text in samples]
        kinds = _categories(module, work)
        ours = _per_feed(lambda prefix: module.ResponseParser(prefix, errors="keep"), work, rounds)
        theirs = _per_feed(lambda prefix: ResponseParser(module.TEMPLATE, prefix), work, rounds)
        for (at, index), spent in ours.items():
            if spent >= 0.8 * theirs[(at, index)]:
                before = "".join(work[at][1][max(0, index - 3) : index])[-12:]
                other = theirs[(at, index)]
                deficit = (spent - other / 4) * 1e6
                kind, chunk = kinds[at][index], work[at][1][index]
                rows.append((deficit, preset, at, index, kind, spent * 1e6, other * 1e6, before, chunk))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("presets", nargs="*", help="presets to measure (default: every one)")
    options.add_argument("--length", default="short", choices=("short", "500", "2000"))
    options.add_argument("--rounds", type=int, default=40, help="rounds over the samples (default: 40)")
    options.add_argument("--slowest", type=int, metavar="N", help="list the N feeds furthest from 4x instead")
    options.add_argument("--chunks", default="4", choices=("4", "token"), help="with --slowest: the chunking")
    args = options.parse_args()
    if args.slowest:
        for deficit, preset, at, index, kind, ours, theirs, before, chunk in slowest(
            args.presets or presets(), args.chunks, min(args.rounds, 25), args.slowest
        ):
            print(
                f"{deficit:6.2f} {preset:16} s{at:02d} f{index:3d} {kind:10} respc {ours:5.2f} µs"
                f" transformers {theirs:5.2f} µs {before!r:16} {chunk!r}"
            )
        return
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
