"""`respc presets`: the shipped parsers and the models they cover, as a table that fits a terminal."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    """Add `presets` to the `respc` subcommands."""
    command = commands.add_parser("presets", help="list the shipped parsers and the models they cover")
    command.set_defaults(run=run)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def run(args: argparse.Namespace) -> int:
    from respc.registry import preset_info, presets

    rows = [("preset", "families", "model types", "special tokens")]
    for name in presets():
        info = preset_info(name)
        types = _shorten(", ".join(info["model_types"]) or "-", 40)
        rows.append((name, _shorten(info["families"], 56), types, "keep" if info["special_tokens"] else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 0
