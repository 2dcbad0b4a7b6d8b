"""Every shipped preset against the transformers release of its target, on the preset's own samples.

    python benchmarks/preset_speed.py [PRESET ...] [--rounds N]   # prints one JSON line per preset

Issue #31's measurement: the responses users parse are mostly one chat turn or tool call long, where a
parser's construction, its prefix pass, region opens and closes and finalize weigh most. For each preset
the workloads are its realistic samples (tests/fixtures/presets/NAME.json, each with its prompt as
prefix) and the same samples grown to 500 and 2,000 characters (prose inserted into their longest text
region, so their shape stays the model's); each is streamed with a new parser per response in
4-character chunks and in one BPE token per feed (a byte-level BPE trained on the preset's samples,
as a model's tokenizer would split them), and parsed whole. Every figure is a median over rounds of
paired timings (transformers, then respc, alternating order) of all of a workload's responses: the
ratio transformers ÷ respc.

The transformers that is importable decides the target: 5.24.0 in the test environment; run with the
5.23.0 oracle folder first on PYTHONPATH (benchmarks/test_presets.py does) for the 5.23 rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
SAMPLES_DIR = ROOT / "tests" / "fixtures" / "presets"
LENGTHS = ("short", 500, 2_000)
WORKLOADS = ("stream-4", "stream-token", "parse")
FILLER = (
    "Let me go through this step by step and check each part of the request before answering so that "
    "nothing is missed and the result is easy to follow for the user who asked about it today "
)


def release() -> str:
    """The target the importable transformers defines ("5.24" for 5.24.0)."""
    import transformers

    return ".".join(transformers.__version__.split(".")[:2])


def samples(preset: str) -> list[dict]:
    return json.loads((SAMPLES_DIR / f"{preset}.json").read_text(encoding="utf-8"))


def presets() -> list[str]:
    return sorted(path.stem for path in SAMPLES_DIR.glob("*.json"))


def _grow(text: str, message: dict, size: int) -> str:
    """`text` grown to about `size` characters by prose inserted at a word boundary inside the longest
    text the message holds (its reasoning, content, or a string argument of a tool call), or, for a
    message with none, in front of the text."""
    if len(text) >= size:
        return text
    values: list[str] = [v for k, v in message.items() if isinstance(v, str) and k != "role"]
    for call in message.get("tool_calls") or ():
        arguments = (call.get("function") or call).get("arguments")
        if isinstance(arguments, dict):
            values += [v for v in arguments.values() if isinstance(v, str)]
    at = 0
    for value in sorted(values, key=len, reverse=True):
        start = text.find(value) if len(value) > 1 else -1
        if start >= 0:
            space = value.find(" ")
            at = start + (space + 1 if space > 0 else len(value) // 2)
            break
    need = size - len(text)
    filler = (FILLER * (need // len(FILLER) + 1))[:need]
    return text[:at] + filler + text[at:]


def bpe_chunks(texts: list[str]) -> Callable[[str], list[str]]:
    """A chunker splitting text as a byte-level BPE trained on `texts` tokenizes it: one piece a token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)

    def chunks(text: str) -> list[str]:
        ends = sorted({end for _, end in tokenizer.encode(text).offsets} | {len(text)})
        pieces, start = [], 0
        for end in ends:
            if end > start:
                pieces.append(text[start:end])
                start = end
        assert "".join(pieces) == text
        return pieces

    return chunks


@cache
def cases(preset: str) -> dict[Any, list[tuple[str, str]]]:
    """(prefix, text) per length: the samples as shipped, and grown to 500 and 2,000 characters."""
    import respc

    module = respc.load_preset(preset, release())
    shipped = [(s.get("prefix") or "", s["text"]) for s in samples(preset)]
    out: dict[Any, list[tuple[str, str]]] = {"short": shipped}
    for size in LENGTHS[1:]:
        out[size] = [(p, _grow(t, _message(module, t, p), size)) for p, t in shipped]
    return out


def run_requests(parser_class: Any, work: list[tuple[str, list[str]]], stream: bool, **options: Any) -> None:
    """Each response of `work` (a prompt and its chunks) through a new parser made with `options`, and a
    `respc.serving.DeltaStream` over it when `stream`, as a server streams a request."""
    from respc.serving import DeltaStream, DeltaStreamError

    for prefix, chunks in work:
        parser = parser_class(prefix, **options)
        if not stream:
            for chunk in chunks:
                parser.feed(chunk)
            parser.finalize()
            continue
        deltas = DeltaStream(parser)
        try:
            for chunk in chunks:
                deltas.feed(chunk)
            deltas.finish()
        except DeltaStreamError:  # (a sample of a malformed call)
            pass


def _message(module: Any, text: str, prefix: str) -> dict:
    """The parsed message, or {} for a sample that fails to parse (a malformed call, on purpose)."""
    try:
        return module.parse_response(text, prefix=prefix)
    except Exception:
        return {}


def _outcome(run: Callable[[], Any]) -> Any:
    """What a call returns or raises, as something comparable (the samples include malformed calls)."""
    try:
        return run()
    except Exception as error:
        return type(error).__name__, str(error)


def _timed(run: Callable[[], Any], repeat: int) -> float:
    """Seconds per run, with the cyclic garbage collector off while timing, as `timeit` does: a full
    collection of the benchmark process's heap landing in one side's few runs of a 2,000-character
    workload halved that cell's ratio in some runs (the garbage is collected between timings)."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(repeat):
            run()
        return (time.perf_counter() - start) / repeat
    finally:
        gc.enable()


def _stream(make: Callable[[str], Any], streams: list[tuple[str, list[str]]]) -> list:
    """Each stream fed as a server feeds one: `parser.feed(chunk)` looked up per chunk (a `feed` bound
    once also takes the fast modes, through one call more)."""
    out = []
    for prefix, chunks in streams:
        parser = make(prefix)
        events: list = []

        def run(parser: Any = parser, chunks: list[str] = chunks, events: list = events) -> Any:
            for chunk in chunks:
                events.append(parser.feed(chunk))
            return parser.finalize()

        out.append((events, _outcome(run)))
    return out


def runs(preset: str) -> dict[tuple[str, Any], tuple[Callable[[], Any], Callable[[], Any]]]:
    """(workload, length) -> (respc's run, transformers' run), checked to give the same results."""
    from transformers.utils.chat_parsing import ResponseParser, parse_response

    import respc

    module = respc.load_preset(preset, release())
    template = module.TEMPLATE
    by_length = cases(preset)
    tokens = bpe_chunks([t for pairs in by_length.values() for _, t in pairs])
    out = {}
    for length, pairs in by_length.items():
        four = [(p, [t[i : i + 4] for i in range(0, len(t), 4)]) for p, t in pairs]
        bpe = [(p, tokens(t)) for p, t in pairs]
        for workload, streams in (("stream-4", four), ("stream-token", bpe)):
            ours = lambda s=streams: _stream(module.ResponseParser, s)  # noqa: E731
            theirs = lambda s=streams: _stream(lambda p: ResponseParser(template, p), s)  # noqa: E731
            out[workload, length] = (ours, theirs)
        ours = lambda c=pairs: [  # noqa: E731
            _outcome(lambda: module.parse_response(t, prefix=p)) for p, t in c
        ]
        theirs = lambda c=pairs: [  # noqa: E731
            _outcome(lambda: parse_response(t, template, prefix=p)) for p, t in c
        ]
        out["parse", length] = (ours, theirs)
    for key, (ours, theirs) in out.items():
        if ours() != theirs():
            raise AssertionError(f"{preset} {key}: respc and transformers {release()} differ")
    return out


def measure(preset: str, rounds: int = 9, budget: float = 0.02) -> dict[str, Any]:
    """Median ratios transformers ÷ respc, by "workload length", for `preset`; each round times each
    side over about `budget` seconds."""
    ratios: dict[str, float] = {}
    for (workload, length), (ours, theirs) in runs(preset).items():
        once = max(_timed(ours, 1), 1e-6)
        repeat = max(1, int(budget / once))
        theirs_repeat = max(1, repeat // 4)
        found = []
        for i in range(rounds):
            if i % 2:
                other, mine = _timed(theirs, theirs_repeat), _timed(ours, repeat)
            else:
                mine, other = _timed(ours, repeat), _timed(theirs, theirs_repeat)
            found.append(other / mine)
        ratios[f"{workload} {length}"] = round(statistics.median(found), 2)
    return {"preset": preset, "target": release(), "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help="presets to measure (default: every one)")
    parser.add_argument("--rounds", type=int, default=9, help="paired rounds per workload (default: 9)")
    parser.add_argument("--check-only", action="store_true", help="check the workloads agree; time nothing")
    args = parser.parse_args()
    for preset in args.presets or presets():
        if args.check_only:
            runs(preset)
            print(json.dumps({"preset": preset, "target": release(), "checked": True}))
        else:
            print(json.dumps(measure(preset, args.rounds)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
