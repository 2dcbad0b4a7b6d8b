"""`respc presets`: the shipped parsers and the models they cover, as a table that fits a terminal;
`respc presets NAME` everything the index records for one; `--detect PATH` which one PATH gets and why."""

from __future__ import annotations

import argparse
import itertools
import os
import textwrap
from pathlib import Path
from typing import Any

from respc._io import InputError
from respc.cli.errors import UsageError

__all__ = ["register", "run"]

WIDTH = 140  # the table's widest line


def register(commands: Any) -> None:
    """Add `presets` to the `respc` subcommands."""
    command = commands.add_parser(
        "presets",
        help="list the shipped parsers, the model families they cover, and which one a model gets",
        description="Without arguments: one line per preset (families, repository-id patterns, model "
        "types). NAME: everything the index records for that preset. --detect PATH: the preset a model "
        "directory, tokenizer_config.json, .jinja chat template or repository id gets, and the evidence.",
    )
    command.add_argument("name", nargs="?", metavar="NAME", help="show one preset in full")
    command.add_argument(
        "--detect",
        metavar="PATH",
        help="model directory, tokenizer_config.json, chat template file, or a Hub repository id",
    )
    command.set_defaults(run=run)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def run(args: argparse.Namespace) -> int:
    from respc.registry import presets

    if args.detect is not None:
        if args.name is not None:
            raise UsageError("give NAME or --detect PATH, not both")
        print(_detect(args.detect))
        return 0
    if args.name is not None:
        print(_describe(args.name.strip().lower()))
        return 0
    head = ("preset", "families", "repo-id patterns", "model types")
    rows = []
    for name in presets():
        info = _info(name)
        patterns = " ".join([*info["derived_repo_patterns"], *info["repo_patterns"]]) or "-"
        rows.append((name, info["families"], patterns, " ".join(info["model_types"]) or "-"))
    first = max(len(row[0]) for row in [head, *rows])
    widths = [first, 50, 38, WIDTH - first - 50 - 38 - 6]
    for row in [head, *rows]:
        cells = [_wrap(cell, width) for cell, width in zip(row, widths)]
        if len(cells[1]) > 2:  # families: two lines at most; `respc presets NAME` has the rest
            cells[1] = [cells[1][0], _shorten(" ".join(cells[1][1:]), widths[1])]
        for line in itertools.zip_longest(*cells, fillvalue=""):
            print("  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip())
    print(f"\n{len(rows)} presets; `respc presets NAME` shows one in full, `--detect PATH` chooses")
    return 0


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or ["-"]


def _info(name: str) -> dict[str, Any]:
    from respc.registry import preset_info

    return preset_info(name)


def _describe(name: str) -> str:
    info = _info(name)
    detect = info["detect"]
    markers = " | ".join(" + ".join(repr(m) for m in group) for group in detect["any_of"])
    rows = [
        ("families", info["families"]),
        ("model types", ", ".join(info["model_types"]) or "-"),
        ("repository ids", ", ".join(info["repo_ids"]) or "-"),
        ("repo-id patterns", ", ".join(info["repo_patterns"]) or "-"),
        ("derived (outrank)", ", ".join(info["derived_repo_patterns"]) or "-"),
        ("chat template", f"{markers} (rank {detect['rank']})"),
        ("unless it has", ", ".join(repr(m) for m in detect["none_of"]) or "-"),
        ("end tokens", ", ".join(info["end_tokens"])),
        ("special tokens", "keep (decode with skip_special_tokens=False)" if info["special_tokens"] else "-"),
        ("prefill", info["prefill"].replace("\n", "\\n") or "-"),
        ("needs transformers", f"{info['min_target']} or newer"),
        ("confirmed by", info["confirmed"]),
        ("notes", info["notes"]),
    ]
    return "\n".join([name, *(f"  {key + ':':20}{value}" for key, value in rows)])


def _detect(source: str) -> str:
    from respc.model import detect
    from respc.registry import match_model

    if Path(source).exists() or "{%" in source or "{{" in source:
        return detect(source).explain()
    if not source.strip() or source.startswith(("/", ".", "~")) or os.sep + os.sep in source:
        raise InputError(f"{source or repr(source)}: no such file or directory")
    match = match_model(source)  # not a path: a repository id, model type or preset name
    shown = ", ".join(repr(e) for e in match.evidence)
    return f"preset {match.preset}\n  by {match.by}: {shown}"
