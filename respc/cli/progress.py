"""Progress on long work: a bar on a terminal, a plain line now and then otherwise, nothing when short."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts `step()`s of a run of `total` items (None: unknown) and shows it on `stream`.

    On a terminal a bar (or a count) is redrawn at most ten times a second once the run is at least
    `minimum` items long; elsewhere a line is printed every `every` items, so logs stay readable.
    """

    def __init__(
        self,
        total: int | None,
        *,
        unit: str = "records",
        minimum: int = 1000,
        every: int = 10_000,
        stream: TextIO | None = None,
    ) -> None:
        self.total, self.unit, self.every = total, unit, every
        self.stream = stream if stream is not None else sys.stderr
        self.done, self.started, self.shown = 0, time.monotonic(), 0.0
        self.bar = self.stream.isatty() and (total is None or total >= minimum)

    def step(self, label: str = "") -> None:
        """One item done (`label` names what comes next, shown beside the bar)."""
        self.advance(1, label)

    def advance(self, count: int, label: str = "") -> None:
        """`count` more items done."""
        before = self.done
        self.done += count
        if self.bar:
            now = time.monotonic()
            if now - self.shown >= 0.1 or self.done == self.total:
                self.shown = now
                self._draw(now, label)
        elif self.every and self.done // self.every > before // self.every:
            print(f"respc: {self.done} {self.unit}", file=self.stream, flush=True)

    def _draw(self, now: float, label: str) -> None:
        rate = self.done / max(now - self.started, 1e-9)
        if self.total:
            filled = int(30 * self.done / self.total)
            text = f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
        else:
            text = f"{self.done} {self.unit}"
        text += f" {rate:,.0f} {self.unit}/s" if not label else f" {label}"
        print(f"\rrespc: {text:<70}", end="", file=self.stream, flush=True)

    def end(self) -> None:
        """Finish the bar's line (nothing if no bar was drawn)."""
        if self.bar and self.done:
            print(f"\r{' ' * 80}\r", end="", file=self.stream, flush=True)
