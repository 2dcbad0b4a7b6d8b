"""Instructions per round of each preset's short samples, streamed in 4-character chunks (or one BPE token a
feed, as `preset_speed.py` splits them: `--chunks token`) with a new parser per response, counted by valgrind: the A/B of a change too small for timings to tell (1-3%, where the
ratios of `preset_speed.py` move by 5-10% from run to run on a busy machine).

    python benchmarks/preset_instructions.py [PRESET ...] [--root DIR] [--chunks token] [--stream]   # needs valgrind

`--stream` wraps each parser in a `respc.serving.DeltaStream`, as a server streams a request. `--root` counts the respc found there instead (a `git worktree` of the commit to compare with). A round
runs 10 and 60 times over, and the difference over 50 is the marginal count per round, free of start-up,
import and first-use costs. The hash seed is fixed, so that the same code gives nearly the same figure:
within about 1% for a few presets (objects hashed by their address still vary from run to run), so a
change is told by many presets moving, or by one moving more than that.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SAMPLES_DIR = Path(__file__).parent.parent / "tests" / "fixtures" / "presets"
LOW, HIGH = 10, 60


def _run(root: str, preset: str, rounds: int, chunking: str, stream: bool) -> None:
    """The workload itself, in the process valgrind counts."""
    sys.path.insert(0, root)
    sys.path.insert(1, str(Path(__file__).parent))
    from preset_speed import bpe_chunks, run_requests

    from respc.registry import load_preset

    parser_class = load_preset(preset).ResponseParser
    parser_class.warm_up()
    cases = json.loads((SAMPLES_DIR / f"{preset}.json").read_text(encoding="utf-8"))
    work = [(case.get("prefix") or "", case["text"]) for case in cases]
    if chunking == "token":
        # One BPE token a feed, as `preset_speed.py` splits them (trained on these samples alone; the
        # training, the same at every count of rounds, drops out of the difference).
        split = bpe_chunks([text for _, text in work])
        work = [(prefix, split(text)) for prefix, text in work]
    else:
        work = [(prefix, [text[i : i + 4] for i in range(0, len(text), 4)]) for prefix, text in work]
    for _ in range(rounds):
        run_requests(parser_class, work, stream, errors="keep")


def _count(root: str, preset: str, rounds: int, chunking: str, stream: bool) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable]
    command += [__file__, "run", root, preset, str(rounds), chunking, "stream" if stream else "parser"]
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def main() -> None:
    if sys.argv[1:2] == ["run"]:
        root, preset, rounds, chunking, side = sys.argv[2:7]
        _run(root, preset, int(rounds), chunking, side == "stream")
        return
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("presets", nargs="*", help="presets to count (default: every one with samples)")
    options.add_argument("--root", default=str(Path(__file__).parent.parent), help="where respc is")
    options.add_argument(
        "--chunks", choices=("4", "token"), default="4", help="4-character chunks (default) or BPE tokens"
    )
    options.add_argument("--stream", action="store_true", help="through a DeltaStream, as a server streams")
    args = options.parse_args()
    presets = args.presets or sorted(path.stem for path in SAMPLES_DIR.glob("*.json"))
    root = str(Path(args.root).resolve())
    for preset in presets:
        counts = [_count(root, preset, rounds, args.chunks, args.stream) for rounds in (HIGH, LOW)]
        per_round = (counts[0] - counts[1]) // (HIGH - LOW)
        row = {"preset": preset, "root": root, "chunks": args.chunks, "stream": args.stream}
        row["instructions_per_round"] = per_round
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
