"""Binary confusion counts: the one definition of a row's cell, and its folds.

:func:`cells` decides a row's (tp, fp, fn, tn) cell for every binary kernel:
the unweighted folds below and :func:`binary_terms` (the row terms of the
weighted, sliced and bootstrap folds). A fold checks the batch in the same
pass and writes only a valid one; status 0 folded, 1 a label not 0/1, 2 a
prediction not 0/1 (or a non-finite score). Unweighted rows go into four
running sums, not a histogram (which would serialise on one bin's store).
"""

from __future__ import annotations

import math

from ._jit import inline, kernel, named

__all__ = ["cells", "cell", "count_labels", "count_scores", "binary_terms"]


@inline
def cells(w, y1, p1):
    """A row's weight ``w`` in each of the (tp, fp, fn, tn) cells from whether its
    label and prediction are positive: ``w`` in its own cell, exactly 0 in the
    others. No branch: its sums over rows vectorize."""
    wy = w * y1
    wn = w - wy
    return wy * p1, wn * p1, wy - wy * p1, wn - wn * p1


@inline
def cell(y1, p1):
    """The index of a row's cell, 0 to 3, read off :func:`cells`."""
    t0, t1, t2, t3 = cells(1, y1, p1)
    return t1 + 2 * t2 + 3 * t3


def _counter(scores: bool):
    """The unweighted fold of 0/1 predictions or of scores cut at a threshold (the
    flag a constant of the closure: each kernel compiles its own loop)."""

    def count(y, p, threshold, rows, counts):
        n = y.shape[0]
        n0 = n1 = n2 = n3 = 0
        bad_y = False
        bad_p = False
        for i in range(n):
            yi = y[i]
            pi = p[i]
            y1 = yi == 1
            bad_y |= not (y1 or yi == 0)
            if scores:
                p1 = pi >= threshold
                bad_p |= not (pi - pi == 0.0)  # NaN or +-inf
            else:
                p1 = pi == 1
                bad_p |= not (p1 or pi == 0)
            t0, t1, t2, t3 = cells(1, y1, p1)
            n0 += t0
            n1 += t1
            n2 += t2
            n3 += t3
        if bad_y:
            return 1
        if bad_p:
            return 2
        counts[0] += n0
        counts[1] += n1
        counts[2] += n2
        counts[3] += n3
        rows[0] += n
        return 0

    return count


#: ``count_labels(y, p, threshold, rows, counts)`` (``threshold`` unread): unweighted
#: 0/1 labels and predictions into ``counts``; status as above
count_labels = kernel(named(_counter(False), "count_labels"))
#: ``count_scores(y, s, threshold, rows, counts)``: unweighted labels and scores cut
#: at ``threshold`` into ``counts``
count_scores = kernel(named(_counter(True), "count_scores"))


@kernel
def binary_terms(y, p, threshold, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...`` (one a row: its cell, slot
    ``base + cell``, value 1, in column ``col``); ``threshold`` NaN: ``p`` holds
    0/1 predictions, else scores cut at ``p >= threshold``. Status as above
    (the terms are written whatever it is: the caller drops them)."""
    labels = math.isnan(threshold)
    m = slots.shape[0]
    yb, pb = y[lo : lo + m], p[lo : lo + m]
    bad_y = False
    bad_p = False
    for i in range(m):
        yi = yb[i]
        pi = pb[i]
        y1 = yi == 1
        bad_y |= not (y1 or yi == 0)
        if labels:
            p1 = pi == 1
            bad_p |= not (p1 or pi == 0)
        else:
            p1 = pi >= threshold
            bad_p |= not (pi - pi == 0.0)  # NaN or +-inf
        slots[i, col] = base + cell(y1, p1)
        values[i, col] = 1.0
    if bad_y:
        return 1
    if bad_p:
        return 2
    return 0
