"""Top-k accuracy: is the true class among the ``k`` highest scores of its row?

The true class ``t`` is ranked ``r = #{j : s_j > s_t} + #{j > t : s_j == s_t}``
(ties as ``sklearn.metrics.top_k_accuracy_score`` documents them); the row is
a hit when ``r < k``, counted in one pass, no sort. State: ``hits`` (int64)
and ``sums`` (``float64[2, 2]`` pairs: hit weight, total weight). Status 0
folded, 1 a bad class, 2 a non-finite score (state untouched).
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel
from .compensated import BLOCK, add, fold

__all__ = ["top_k_update", "top_k_terms"]


@inline
def _rank(scores, i, t):
    """The rank of class ``t`` in row ``i`` (module docstring) and whether the
    row's scores are all finite."""
    v = scores[i, t]
    rank = 0
    finite = True
    for j in range(scores.shape[1]):
        s = scores[i, j]
        finite &= s - s == 0.0
        rank += (s > v) | ((s == v) & (j > t))
    return rank, finite


@kernel
def top_k_update(y, scores, k, w, n, hits, sums):
    """Fold one batch (``scores`` an ``(rows, K)`` matrix); return the status."""
    rows, kk = scores.shape
    weighted = w.shape[0] > 0
    h = 0
    hs = hc = ts = tc = 0.0
    for start in range(0, rows, BLOCK):
        stop = rows if rows < start + BLOCK else start + BLOCK
        bh = bt = 0.0
        for i in range(start, stop):
            t = y[i]
            if t < 0 or t >= kk:
                return 1
            rank, finite = _rank(scores, i, t)
            if not finite:
                return 2
            hit = rank < k
            h += hit
            if weighted:
                wi = w[i]
                bt += wi
                if hit:
                    bh += wi
            elif hit:
                bh += 1.0
        if not weighted:
            bt = float(stop - start)
        hs, hc = add(hs, hc, bh)
        ts, tc = add(ts, tc, bt)
    fold(sums, np.intp(0), hs, hc)
    fold(sums, np.intp(1), ts, tc)
    hits[0] += h
    n[0] += rows
    return 0


@kernel
def top_k_terms(y, scores, k, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...``: 1 into slot ``base`` (the row)
    and 1 into ``base + 1`` for a hit, ``base + 2`` for a miss; the status of
    :func:`top_k_update`."""
    kk = scores.shape[1]
    for i in range(slots.shape[0]):
        t = y[lo + i]
        if t < 0 or t >= kk:
            return 1
        rank, finite = _rank(scores, lo + i, t)
        if not finite:
            return 2
        slots[i, col] = base
        slots[i, col + 1] = base + (1 if rank < k else 2)
        values[i, col] = 1.0
        values[i, col + 1] = 1.0
    return 0
