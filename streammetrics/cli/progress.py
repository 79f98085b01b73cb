"""The progress bar on stderr (tqdm, of the ``io`` extra; without it, a line per file).

The bar names the file being read. Lines written with :func:`write_line`
while a bar is drawn appear above it instead of breaking it.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager

__all__ = ["Progress", "write_line"]

#: the bars being drawn, the latest last
_DRAWN: list = []


def write_line(line: str) -> None:
    """Write ``line`` on stderr, above the progress bar if one is drawn."""
    if _DRAWN:
        _DRAWN[-1](line, file=sys.stderr)
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _enabled(choice) -> bool:
    """Whether ``--progress choice`` shows a bar: ``auto`` when stderr is a terminal."""
    if choice != "auto":
        return choice == "always"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress(AbstractContextManager):
    """One bar over every shard of ``sources`` (sized by their ``unit`` and ``total``): rows when
    the row counts are known, else bytes; shown as ``choice`` (``--progress``) says. It names the
    file being read (:meth:`start`), moves on as its chunks are read (:meth:`update`) and is
    removed on leaving (a context manager)."""

    def __init__(self, sources, choice):
        units = {s.unit for s in sources}
        self.unit = units.pop() if len(units) == 1 else "rows"
        totals = [s.total if self.unit == s.unit else None for s in sources]
        total = None if None in totals else sum(totals)
        self._source = None
        self._seen = 0
        self._bar = self._write = None
        if not _enabled(choice):
            return
        try:
            from tqdm import tqdm
        except ImportError:  # a line per file
            self._write = print
        else:
            scale = {"unit": " rows", "unit_scale": True}
            if self.unit == "bytes":
                scale = {"unit": "B", "unit_scale": True, "unit_divisor": 1024}
            self._bar = tqdm(total=total, file=sys.stderr, dynamic_ncols=True, smoothing=0.1, leave=False, **scale)
            self._write = tqdm.write
        _DRAWN.append(self._write)

    def start(self, source) -> None:
        """Show that ``source`` is being read now: the bar names its file."""
        self._source, self._seen = source, 0
        if self._bar is not None:
            self._bar.set_description_str(os.path.basename(source.path))
        elif self._write is not None:
            write_line(f"reading {os.path.basename(source.path)}")

    def update(self, chunk) -> None:
        """Move the bar on to ``chunk.done`` of the current source (by the chunk's rows, for
        a source measured in bytes on a bar of rows)."""
        self._move_to(chunk.done if self._source.unit == self.unit else self._seen + len(chunk.y))

    def complete(self) -> None:
        """The current source has been read to its end: move the bar to its end."""
        src = self._source
        if src is not None and src.unit == self.unit and src.total is not None:
            self._move_to(src.total)

    def _move_to(self, done: int) -> None:
        if done > self._seen and self._bar is not None:
            self._bar.update(done - self._seen)
        self._seen = done

    def close(self) -> None:
        """Remove the bar (again, harmlessly)."""
        if self._write in _DRAWN:
            _DRAWN.remove(self._write)
        if self._bar is not None:
            self._bar.close()

    def __exit__(self, *exc) -> None:
        self.close()
