"""What every module of the command shares: its name, defaults, errors, notes and row sample.

The other modules of :mod:`streammetrics.cli` import from here (and from
:mod:`.progress`), never the other way round.
"""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager

import numpy as np

from .progress import write_line

__all__ = ["PROG", "DEFAULT_BATCH_ROWS", "DEFAULT_MAX_BINS", "DEFAULT_MEMORY", "DEFAULT_MEMORY_BYTES", "DEMO_ROWS"]
__all__ += ["DEMO_SHARDS", "TASKS", "PROGRESS", "AUTO_LABELS", "CommandError", "note", "need_matplotlib"]
__all__ += ["Reservoir", "SAMPLE_SIZE", "failing"]

PROG = "streammetrics"
DEFAULT_BATCH_ROWS = 1 << 18
DEFAULT_MAX_BINS = None  # the AUC is exact, held in memory up to DEFAULT_MEMORY and spilled beyond
DEFAULT_MEMORY = "1GB"
DEFAULT_MEMORY_BYTES = 10**9
DEMO_ROWS = 5_000_000
DEMO_SHARDS = 5
TASKS = ("binary", "multiclass", "multilabel", "regression", "clustering", "ranking")
PROGRESS = ("auto", "always", "never")
#: ``--labels auto``: the labels are read from the files in a first pass
AUTO_LABELS = "auto"


class CommandError(Exception):
    """An error reported as ``streammetrics: error: <message>`` and exit status 1."""


@contextmanager
def failing(errors, prefix: str = ""):
    """The ``errors`` raised inside, raised again as a :class:`CommandError`: ``prefix`` and their message."""
    try:
        yield
    except errors as exc:
        raise CommandError(f"{prefix}{exc}") from None


def note(msg: str) -> None:
    """A line ``streammetrics: <msg>`` on stderr (above the progress bar, if one is drawn)."""
    write_line(f"{PROG}: {msg}")


def need_matplotlib() -> None:
    """Fail early, before any reading, when ``--plots`` cannot be honoured."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")


#: Pairs kept for the regression plots.
SAMPLE_SIZE = 20_000


class Reservoir:
    """A uniform sample of at most ``size`` (y, p) pairs from a stream (Algorithm R)."""

    def __init__(self, size: int = SAMPLE_SIZE, seed: int = 0):
        self.size = size
        self.seen = 0
        self.pairs = np.empty((size, 2), np.float64)  # (y, p) in each row
        self.rng = np.random.default_rng(seed)

    def add(self, y, p) -> None:
        """Offer the pairs ``(y[i], p[i])`` to the sample."""
        pairs = np.column_stack([np.asarray(a, dtype=np.float64).ravel() for a in (y, p)])
        n = pairs.shape[0]
        fill = max(0, min(self.size - self.seen, n))  # the rows that find the sample not yet full
        self.pairs[self.seen : self.seen + fill] = pairs[:fill]
        if fill < n:
            idx = np.arange(self.seen + fill, self.seen + n, dtype=np.int64)
            slot = self.rng.integers(0, idx + 1)
            keep = np.flatnonzero(slot < self.size)
            # later rows overwrite earlier ones in the same slot, as in sequential order
            self.pairs[slot[keep]] = pairs[fill:][keep]
        self.seen += n

    def sample(self):
        """``(y, p)``: copies of the pairs kept."""
        k = min(self.seen, self.size)
        return self.pairs[:k, 0].copy(), self.pairs[:k, 1].copy()
