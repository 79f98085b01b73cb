"""A bounded uniform sample of the rows, for the plots that show rows."""

from __future__ import annotations

import numpy as np

__all__ = ["Reservoir", "SAMPLE_SIZE"]

#: Pairs kept for the regression plots.
SAMPLE_SIZE = 20_000


class Reservoir:
    """A uniform sample of at most ``size`` (y, p) pairs from a stream (Algorithm R)."""

    def __init__(self, size: int = SAMPLE_SIZE, seed: int = 0):
        self.size = size
        self.seen = 0
        self.y = np.empty(size, np.float64)
        self.p = np.empty(size, np.float64)
        self.rng = np.random.default_rng(seed)

    def add(self, y, p) -> None:
        """Offer the pairs ``(y[i], p[i])`` to the sample."""
        y = np.asarray(y, dtype=np.float64).ravel()
        p = np.asarray(p, dtype=np.float64).ravel()
        n = y.shape[0]
        if n == 0:
            return
        fill = max(0, min(self.size - self.seen, n))
        if fill:
            self.y[self.seen:self.seen + fill] = y[:fill]
            self.p[self.seen:self.seen + fill] = p[:fill]
        if fill < n:
            idx = np.arange(self.seen + fill, self.seen + n, dtype=np.int64)
            slot = self.rng.integers(0, idx + 1)
            keep = np.flatnonzero(slot < self.size)
            # later rows overwrite earlier ones in the same slot, as in sequential order
            self.y[slot[keep]] = y[fill:][keep]
            self.p[slot[keep]] = p[fill:][keep]
        self.seen += n

    def sample(self):
        """``(y, p)``: copies of the pairs kept."""
        k = min(self.seen, self.size)
        return self.y[:k].copy(), self.p[:k].copy()
