"""Log-loss and Brier totals of 0/1 labels against predicted probabilities.

State: ``sums`` (``float64[3, 2]`` pairs: total weight, log-loss total, Brier
total; ``w`` empty: unweighted) and ``squares`` (the second moments of the
intervals: ``w loss²``, ``w (p - y)⁴``, ``w²``). Status 0 folded, 1 a bad
label, 2 a probability outside [0, 1] (state untouched).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel, named
from .compensated import BLOCK, add, fold

__all__ = [
    "probability_moments",
    "probability_moments_weighted",
    "class_probability_update",
    "probability_terms",
    "class_probability_terms",
    "LOG_FLOOR",
]

#: The specification floors both p and 1 - p at 1e-12 before the logarithm.
LOG_FLOOR = 1e-12


def _moments_folder(weighted: bool):
    """The fold of the totals and second moments, of weighted rows or not: the
    flag is a constant of the closure, so each kernel compiles its own loop
    only (as the calibration folds)."""

    def fold_moments(y, p, w, n, sums, squares):
        rows = y.shape[0]
        sw = cw = sl = cl = sb = cb = 0.0
        sl2 = cl2 = sb2 = cb2 = sq = cq = 0.0
        for start in range(0, rows, BLOCK):
            stop = rows if rows < start + BLOCK else start + BLOCK
            bw = bl = bb = 0.0
            bl2 = bb2 = bq = 0.0
            for i in range(start, stop):
                yi = y[i]
                pi = p[i]
                y1 = yi == 1
                if not (y1 or yi == 0):
                    return 1
                if not (pi >= 0.0 and pi <= 1.0):
                    return 2
                q = pi if y1 else 1.0 - pi  # probability given to the outcome
                loss = -math.log(LOG_FLOOR if LOG_FLOOR > q else q)
                d = pi - y1
                d2 = d * d
                if weighted:
                    wi = w[i]
                    bw += wi
                    bl += wi * loss
                    bb += wi * d2
                    bl2 += wi * (loss * loss)
                    bb2 += wi * (d2 * d2)
                    bq += wi * wi
                else:
                    bl += loss
                    bb += d2
                    bl2 += loss * loss
                    bb2 += d2 * d2
            if not weighted:
                bw = float(stop - start)
                bq = bw
            sw, cw = add(sw, cw, bw)
            sl, cl = add(sl, cl, bl)
            sb, cb = add(sb, cb, bb)
            sl2, cl2 = add(sl2, cl2, bl2)
            sb2, cb2 = add(sb2, cb2, bb2)
            sq, cq = add(sq, cq, bq)
        fold(sums, np.intp(0), sw, cw)
        fold(sums, np.intp(1), sl, cl)
        fold(sums, np.intp(2), sb, cb)
        fold(squares, np.intp(0), sl2, cl2)
        fold(squares, np.intp(1), sb2, cb2)
        fold(squares, np.intp(2), sq, cq)
        n[0] += y.shape[0]
        return 0

    return fold_moments


#: ``probability_moments(y, p, w, n, sums, squares)``
probability_moments = kernel(
    named(
        _moments_folder(False),
        "probability_moments",
        """\
Fold unweighted 0/1 labels ``y`` and probabilities ``p`` (``w`` is ignored,
pass it empty) into ``sums`` and the second moments into ``squares``
(``float64[3, 2]`` pairs): the totals of ``w * loss**2``, ``w * (p - y)**4``
and ``w**2``, which the intervals of the means need. Returns the status code
(module docstring).""",
    )
)

probability_moments_weighted = kernel(
    named(
        _moments_folder(True), "probability_moments_weighted", ":func:`probability_moments` of rows weighted by ``w``."
    )
)


@kernel
def class_probability_update(y, m, k, tolerance, w, n, sums):
    """Fold class codes ``y`` and an ``(rows, k)`` probability matrix ``m``.

    ``sums`` as for :func:`probability_moments`: the total weight, the total of
    ``-ln(max(m[i, y_i], 1e-12))`` and the total of Brier's multiclass score
    ``sum_j (m[i, j] - [j == y_i])**2``. Status 0 when folded in, 1 for a code
    outside ``0..k-1``, 2 for an entry outside [0, 1] or a row whose sum is
    more than ``tolerance`` away from 1.
    """
    rows = y.shape[0]
    weighted = w.shape[0] > 0
    sw = cw = sl = cl = sb = cb = 0.0
    for start in range(0, rows, BLOCK):
        stop = rows if rows < start + BLOCK else start + BLOCK
        bw = bl = bb = 0.0
        for i in range(start, stop):
            yi = y[i]
            if yi < 0 or yi >= k:
                return 1
            total = 0.0
            sq = 0.0
            for j in range(k):
                v = m[i, j]
                if not (v >= 0.0 and v <= 1.0):
                    return 2
                total += v
                sq += v * v
            if abs(total - 1.0) > tolerance:
                return 2
            picked = m[i, yi]
            loss = -math.log(LOG_FLOOR if LOG_FLOOR > picked else picked)
            brier = sq - 2.0 * picked + 1.0
            if weighted:
                wi = w[i]
                bw += wi
                bl += wi * loss
                bb += wi * brier
            else:
                bl += loss
                bb += brier
        if not weighted:
            bw = float(stop - start)
        sw, cw = add(sw, cw, bw)
        sl, cl = add(sl, cl, bl)
        sb, cb = add(sb, cb, bb)
    fold(sums, np.intp(0), sw, cw)
    fold(sums, np.intp(1), sl, cl)
    fold(sums, np.intp(2), sb, cb)
    n[0] += rows
    return 0


@kernel
def probability_terms(y, p, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...``: 1, the log loss and the squared
    error (slots ``base .. base + 2``, columns ``col .. col + 2``), as
    :func:`probability_moments` sums them; its status."""
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
        for t in range(3):
            slots[i, col + t] = base + t
        values[i, col] = 1.0
        values[i, col + 1] = -math.log(LOG_FLOOR if LOG_FLOOR > q else q)
        values[i, col + 2] = d * d
    return 0


@kernel
def class_probability_terms(y, m, k, tolerance, lo, slots, values, col, base):
    """The row terms of class codes ``y`` and probability rows ``m``: 1, the log
    loss and Brier's multiclass score, as :func:`class_probability_update`
    sums them; its status."""
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
        values[i, col] = 1.0
        values[i, col + 1] = -math.log(LOG_FLOOR if LOG_FLOOR > picked else picked)
        values[i, col + 2] = sq - 2.0 * picked + 1.0
    return 0
