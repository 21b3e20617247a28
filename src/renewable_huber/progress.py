"""A dependency-free progress bar for the command line (writes to stderr)."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


class ProgressBar:
    """``with ProgressBar(total, "streaming") as bar: bar.advance(rows)``.

    Redraws at most ten times a second; shows a plain counter when the total
    is unknown, and draws nothing but the final line when not on a terminal.
    """

    def __init__(self, total: Optional[float], label: str, unit: str = "rows", stream: Optional[TextIO] = None) -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0.0
        self._started = time.perf_counter()
        self._last_draw = 0.0
        self._interactive = bool(getattr(self.stream, "isatty", lambda: False)())

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: object) -> None:
        self._draw(final=True)
        self.stream.write("\n")
        self.stream.flush()

    def advance(self, amount: float, note: str = "") -> None:
        self.done += amount
        self.note = note
        now = time.perf_counter()
        if self._interactive and now - self._last_draw >= 0.1:
            self._draw()
            self._last_draw = now

    def _draw(self, final: bool = False) -> None:
        elapsed = time.perf_counter() - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        note = getattr(self, "note", "")
        if self.total:
            fraction = min(self.done / self.total, 1.0)
            filled = int(round(30 * fraction))
            bar = "#" * filled + "-" * (30 - filled)
            text = f"{self.label} [{bar}] {fraction:6.1%} {self.done:,.0f}/{self.total:,.0f} {self.unit}"
        else:
            text = f"{self.label} {self.done:,.0f} {self.unit}"
        text += f"  {rate:,.0f} {self.unit}/s  {elapsed:5.1f}s {note}"
        prefix = "\r" if self._interactive else ""
        if self._interactive or final:
            self.stream.write(prefix + text.ljust(100))
            self.stream.flush()
