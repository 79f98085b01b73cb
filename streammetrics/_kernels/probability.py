"""The terms of log loss and Brier: 1, a row's loss and its Brier score, then
the row's class as one 1 among zeros (the class totals of the null model of D²).

The accumulators fold them with :func:`~.row_sums.sum_rows`. Status 0
folded, 1 a bad label, 2 a probability outside [0, 1] (or a row of class
probabilities not summing to 1).
"""

from __future__ import annotations

import math

from ._jit import kernel

__all__ = ["probability_terms", "class_probability_terms", "LOG_FLOOR"]

#: The specification floors both p and 1 - p at 1e-12 before the logarithm.
LOG_FLOOR = 1e-12


@kernel
def probability_terms(y, p, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...``: 1, the log loss, the squared
    error, ``1 - y`` and ``y`` (slots ``base .. base + 4``, columns
    ``col .. col + 4``); its status."""
    for i in range(slots.shape[0]):
        yi = y[lo + i]
        pi = p[lo + i]
        y1 = yi == 1
        if not (y1 or yi == 0):
            return 1
        if not (pi >= 0.0 and pi <= 1.0):
            return 2
        q = pi if y1 else 1.0 - pi
        d = pi - y1
        for t in range(5):
            slots[i, col + t] = base + t
        values[i, col] = 1.0
        values[i, col + 1] = -math.log(LOG_FLOOR if LOG_FLOOR > q else q)
        values[i, col + 2] = d * d
        values[i, col + 3] = 1.0 - y1
        values[i, col + 4] = 1.0 * y1
    return 0


@kernel
def class_probability_terms(y, m, k, tolerance, lo, slots, values, col, base):
    """The row terms of class codes ``y`` and probability rows ``m``: 1, the log
    loss ``-ln(max(m[i, y_i], 1e-12))`` and Brier's multiclass score
    ``sum_j (m[i, j] - [j == y_i])**2`` (slots ``base .. base + 2``), then 1
    into the slot of the row's class, ``base + 3 + y_i``; status 1 for a code outside
    ``0..k-1``, 2 for an entry outside [0, 1] or a row whose sum is more than
    ``tolerance`` from 1."""
    for i in range(slots.shape[0]):
        yi = y[lo + i]
        if yi < 0 or yi >= k:
            return 1
        total = 0.0
        sq = 0.0
        for j in range(k):
            v = m[lo + i, j]
            if not (v >= 0.0 and v <= 1.0):
                return 2
            total += v
            sq += v * v
        if abs(total - 1.0) > tolerance:
            return 2
        picked = m[lo + i, yi]
        for t in range(3):
            slots[i, col + t] = base + t
        slots[i, col + 3] = base + 3 + yi
        values[i, col] = 1.0
        values[i, col + 1] = -math.log(LOG_FLOOR if LOG_FLOOR > picked else picked)
        values[i, col + 2] = sq - 2.0 * picked + 1.0
        values[i, col + 3] = 1.0
    return 0
