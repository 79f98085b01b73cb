"""Top-k accuracy: is the true class among the ``k`` highest scores of its row?

The true class ``t`` is ranked ``r = #{j : s_j > s_t} + #{j > t : s_j == s_t}``
(ties as ``sklearn.metrics.top_k_accuracy_score`` documents them); the row is
a hit when ``r < k``, counted in one pass, no sort; the row terms are folded
by :func:`~.row_sums.sum_terms`. Status 0 folded, 1 a bad class, 2 a
non-finite score (state untouched).
"""

from __future__ import annotations

from ._jit import inline, kernel

__all__ = ["top_k_terms"]


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
def top_k_terms(y, scores, k, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...``: 1 into slot ``base`` (the row)
    and 1 into ``base + 1`` for a hit, ``base + 2`` for a miss; the status of
    the module docstring."""
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
