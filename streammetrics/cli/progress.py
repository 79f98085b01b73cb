"""The progress bar on stderr: tqdm when it is installed, else a plain line."""

from __future__ import annotations

import math
import sys
import time

__all__ = ["Progress", "progress_enabled"]


def _human(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


class _SimpleBar:
    """A minimal progress line for when tqdm is not installed."""

    def __init__(self, total, unit, stream):
        self.total, self.unit, self.stream = total, unit, stream
        self.n = 0
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.width = 0

    def update(self, k):
        self.n += k
        now = time.perf_counter()
        if now - self.last < 0.2:
            return
        self.last = now
        rate = self.n / max(now - self.t0, 1e-9)
        text = f"{_human(self.n)} {self.unit}  {_human(rate)} {self.unit}/s"
        if self.total:
            left = (self.total - self.n) / rate if rate > 0 else float("inf")
            eta = f"{int(left // 60)}:{int(left % 60):02d}" if math.isfinite(left) else "?"
            text = f"{100 * self.n / self.total:5.1f}%  {text}  ETA {eta}"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def close(self):
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


class _NoBar:
    def update(self, k):
        pass

    def close(self):
        pass


class Progress:
    """One bar over every shard: rows when the row counts are known, else bytes.

    Parameters
    ----------
    sources : list of streammetrics.io.Source
        The files to be read; their ``unit`` and ``total`` size the bar.
    enabled : bool
        Whether to show a bar at all.
    stream : file, optional
        Where the bar is drawn (default: ``sys.stderr``).
    """

    def __init__(self, sources, enabled: bool, stream=None):
        stream = stream or sys.stderr
        units = {s.unit for s in sources}
        self.unit = units.pop() if len(units) == 1 else "rows"
        totals = [s.total for s in sources] if self.unit != "rows" or all(
            s.total_rows is not None for s in sources) else [None]
        total = None if any(t is None for t in totals) else sum(totals)
        self._bar = _NoBar()
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self._bar = _SimpleBar(total, self.unit, stream)
            return
        if self.unit == "bytes":
            self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                             file=stream, dynamic_ncols=True, smoothing=0.1, leave=False)
        else:
            self._bar = tqdm(total=total, unit=" rows", unit_scale=True, file=stream,
                             dynamic_ncols=True, smoothing=0.1, leave=False)

    def advance(self, k: int) -> None:
        """Move the bar on by ``k`` units."""
        if k > 0:
            self._bar.update(k)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


def progress_enabled(choice: str) -> bool:
    """Whether ``--progress choice`` shows a bar: ``auto`` when stderr is a terminal."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
