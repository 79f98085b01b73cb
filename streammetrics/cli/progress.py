"""The progress bar on stderr: tqdm when it is installed, else a plain line.

The bar names the file being read. Lines written with :func:`write_line`
while a bar is drawn appear above it instead of breaking it.
"""

from __future__ import annotations

import math
import os
import sys
import time

__all__ = ["Progress", "progress_enabled", "write_line"]

#: the bars being drawn, the latest last
_DRAWN: list = []


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
        self.name = ""
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.width = 0

    def update(self, k):
        self.n += k
        if time.perf_counter() - self.last >= 0.2:
            self._draw()

    def describe(self, name):
        self.name = name
        self._draw()

    def _draw(self):
        now = time.perf_counter()
        self.last = now
        rate = self.n / max(now - self.t0, 1e-9)
        text = f"{_human(self.n)} {self.unit}  {_human(rate)} {self.unit}/s"
        if self.total:
            left = (self.total - self.n) / rate if rate > 0 else float("inf")
            eta = f"{int(left // 60)}:{int(left % 60):02d}" if math.isfinite(left) else "?"
            text = f"{100 * self.n / self.total:5.1f}%  {text}  ETA {eta}"
        if self.name:
            text = f"{self.name}  {text}"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def write(self, line):
        self.close()
        self.stream.write(line + "\n")
        self._draw()

    def close(self):
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


class _TqdmBar:
    """A tqdm bar behind the interface of :class:`_SimpleBar`."""

    def __init__(self, total, unit, stream):
        from tqdm import tqdm

        self._tqdm = tqdm
        if unit == "bytes":
            scale = {"unit": "B", "unit_scale": True, "unit_divisor": 1024}
        else:
            scale = {"unit": " rows", "unit_scale": True}
        self.stream = stream
        self.bar = tqdm(total=total, file=stream, dynamic_ncols=True, smoothing=0.1,
                        leave=False, **scale)

    def update(self, k):
        self.bar.update(k)

    def describe(self, name):
        self.bar.set_description_str(name)

    def write(self, line):
        self._tqdm.write(line, file=self.stream)

    def close(self):
        self.bar.close()


class _NoBar:
    def update(self, k):
        pass

    def describe(self, name):
        pass

    def close(self):
        pass


def write_line(line: str) -> None:
    """Write ``line`` on stderr, above the progress bar if one is drawn."""
    if _DRAWN:
        _DRAWN[-1].write(line)
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Progress:
    """One bar over every shard: rows when the row counts are known, else bytes.

    The bar shows the name of the file being read (:meth:`start`) and moves on
    as its chunks are read (:meth:`update`). As a context manager, it is
    removed on leaving.

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
        self._source = None
        self._seen = 0
        self._bar = _NoBar()
        if not enabled:
            return
        try:
            self._bar = _TqdmBar(total, self.unit, stream)
        except ImportError:
            self._bar = _SimpleBar(total, self.unit, stream)
        _DRAWN.append(self._bar)

    def start(self, source) -> None:
        """Show that ``source`` is being read now: the bar names its file."""
        self._source, self._seen = source, 0
        self._bar.describe(os.path.basename(source.path))

    def update(self, chunk) -> None:
        """Move the bar on to the progress ``chunk.done`` of the current source.

        A source measured in bytes on a bar of rows (files of both kinds)
        moves it on by the chunk's rows.
        """
        done = chunk.done if self._source.unit == self.unit else self._seen + len(chunk.y)
        self.advance(done - self._seen)
        self._seen = done

    def complete(self) -> None:
        """The current source has been read to its end: move the bar to its end."""
        src = self._source
        if src is not None and src.unit == self.unit and src.total is not None:
            self.advance(src.total - self._seen)
            self._seen = src.total

    def advance(self, k: int) -> None:
        """Move the bar on by ``k`` units."""
        if k > 0:
            self._bar.update(k)

    def close(self) -> None:
        """Remove the bar (again, harmlessly)."""
        if self._bar in _DRAWN:
            _DRAWN.remove(self._bar)
        self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
