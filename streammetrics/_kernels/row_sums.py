"""The fold of an accumulator whose every row adds one value to each of its totals.

Such a class (log loss and Brier, the Tweedie deviance, the mean losses) has a
terms kernel that writes each row's values, the one the wrappers read
(:mod:`streammetrics._protocol.terms`); its own fold is that kernel and
:func:`sum_columns`, summed as a hand-written fold sums them: plainly within
blocks of :data:`~.compensated.BLOCK` rows counted from the batch's first, each
block added with one compensated step. The totals are those of one pass, bit
for bit, however the batch is cut into chunks of :data:`CHUNK` rows.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add

__all__ = ["sum_columns", "sum_rows", "CHUNK"]

#: rows whose terms are formed at a time (a multiple of BLOCK)
CHUNK = 64 * BLOCK


@kernel
def sum_columns(values, w, second, pairs):
    """Add the columns of ``values`` (``float64[m, K]``), row ``i`` weighted by
    ``w[i]`` (``w`` empty: 1), into the compensated pairs ``pairs``
    (``float64[K + S, 2]``): row ``t < K`` takes ``w v[:, t]``, row ``K + j`` the
    second moment of column ``second[j, 0]`` of power ``second[j, 1]`` (1 sums
    ``w v**2``, 2 sums ``w**2 v**2``)."""
    m, k = values.shape
    weighted = w.shape[0] > 0
    for start in range(0, m, BLOCK):
        stop = m if m < start + BLOCK else start + BLOCK
        for r in range(pairs.shape[0]):
            t = r if r < k else second[r - k, 0]
            power = 0 if r < k else second[r - k, 1]
            b = 0.0
            for i in range(start, stop):
                v = values[i, t]
                if power:
                    v *= v
                if weighted:
                    v *= w[i] if power < 2 else w[i] * w[i]
                b += v
            s, c = add(pairs[r, 0], pairs[r, 1], b)
            pairs[r, 0] = s
            pairs[r, 1] = c


def sum_rows(terms, args, w: np.ndarray, width: int, second=()):
    """``(status, pairs)``: the totals of the rows of ``args`` (``args[0]`` has a
    value per row), each adding the
    ``width`` values that the terms kernel ``terms(*args, lo, slots, values, col,
    base)`` writes, weighted by ``w`` (empty: none);
    ``second`` the ``(column, power)`` of each second moment wanted
    (:func:`sum_columns`). A status other than 0 stops at the chunk it is met in."""
    rows = args[0].shape[0]
    second = np.asarray(second, np.int64).reshape(-1, 2)
    pairs = np.zeros((width + second.shape[0], 2))
    m = min(rows, CHUNK)
    slots, values = np.empty((m, width), np.int32), np.empty((m, width))
    for lo in range(0, rows, CHUNK):
        hi = min(rows, lo + CHUNK)
        status = terms(*args, lo, slots[: hi - lo], values[: hi - lo], 0, 0)
        if status:
            return status, pairs
        sum_columns(values[: hi - lo], w[lo:hi] if w.shape[0] else w, second, pairs)
    return 0, pairs
