"""Binary confusion counts: the one definition of a row's cell, and its folds.

:func:`cells` decides a row's (tp, fp, fn, tn) cell for every binary kernel:
the accumulator's folds below and :func:`binary_terms`, the row terms of the
sliced and bootstrap folds. A fold checks the batch in the same pass and
writes the state only if it is valid; status 0 folded, 1 a label not 0/1, 2 a
prediction not 0/1 (or a non-finite score).

State: ``counts`` (``int64[4]``, unweighted), ``wsums`` and ``wsq``
(``float64[4, 2]`` pairs of the weights and squared weights), ``rows``
(``int64[1]``). Rows go into four running sums, not a histogram (which would
serialise on one bin's store); label and score folds, weighted or not, are
separate kernels so a first call compiles only its own.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, kernel, named
from .compensated import BLOCK, add, fold

__all__ = ["cells", "cell", "count_labels", "sum_labels", "count_scores", "sum_scores", "binary_terms"]


@inline
def cells(w, y1, p1):
    """A row's weight ``w`` in each of the (tp, fp, fn, tn) cells, from whether its
    label and its prediction are positive: ``w`` in its own cell, 0 in the
    others (exactly: the factors are 0 or 1). The one place the four cells
    are told apart; its sums over rows vectorize (no branch)."""
    wy = w * y1
    wn = w - wy
    return wy * p1, wn * p1, wy - wy * p1, wn - wn * p1


@inline
def cell(y1, p1):
    """The index of a row's cell, 0 to 3, read off :func:`cells`."""
    t0, t1, t2, t3 = cells(1, y1, p1)
    return t1 + 2 * t2 + 3 * t3


@inline
def _commit(wsums, s0, c0, s1, c1, s2, c2, s3, c3):
    """Fold a batch's four compensated cell totals into the state's pairs."""
    fold(wsums, np.intp(0), s0, c0)
    fold(wsums, np.intp(1), s1, c1)
    fold(wsums, np.intp(2), s2, c2)
    fold(wsums, np.intp(3), s3, c3)


@kernel
def count_labels(y, p, rows, counts):
    """Unweighted 0/1 labels and predictions into ``counts``; status as above."""
    n = y.shape[0]
    n0 = n1 = n2 = n3 = 0
    bad_y = False
    bad_p = False
    for i in range(n):
        yi = y[i]
        pi = p[i]
        y1 = yi == 1
        p1 = pi == 1
        bad_y |= not (y1 or yi == 0)
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


@kernel
def count_scores(y, s, threshold, rows, counts):
    """Unweighted labels and scores cut at ``threshold`` into ``counts``."""
    n = y.shape[0]
    n0 = n1 = n2 = n3 = 0
    bad_y = False
    bad_p = False
    for i in range(n):
        yi = y[i]
        si = s[i]
        y1 = yi == 1
        bad_y |= not (y1 or yi == 0)
        bad_p |= not (si - si == 0.0)  # NaN or +-inf
        t0, t1, t2, t3 = cells(1, y1, si >= threshold)
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


def _weighted_fold(scores: bool):
    """The weighted fold of 0/1 predictions or of scores cut at a threshold (the
    flag a constant of the closure: each kernel compiles its own loop)."""

    def fold_weighted(y, p, threshold, w, rows, wsums, wsq):
        n = y.shape[0]
        # compensated pairs of the weights in each cell, in locals until validated
        s0 = c0 = s1 = c1 = s2 = c2 = s3 = c3 = 0.0
        q0 = d0 = q1 = d1 = q2 = d2 = q3 = d3 = 0.0
        for start in range(0, n, BLOCK):
            stop = n if n < start + BLOCK else start + BLOCK
            b0 = b1 = b2 = b3 = 0.0
            e0 = e1 = e2 = e3 = 0.0
            for i in range(start, stop):
                yi = y[i]
                pi = p[i]
                y1 = yi == 1
                if not (y1 or yi == 0):
                    return 1
                if scores:
                    if not (pi - pi == 0.0):
                        return 2
                    p1 = pi >= threshold
                else:
                    p1 = pi == 1
                    if not (p1 or pi == 0):
                        return 2
                wi = w[i]
                t0, t1, t2, t3 = cells(wi, y1, p1)
                b0 += t0
                b1 += t1
                b2 += t2
                b3 += t3
                e0 += t0 * wi  # the cell's weight is 0 or wi: its square
                e1 += t1 * wi
                e2 += t2 * wi
                e3 += t3 * wi
            s0, c0 = add(s0, c0, b0)
            s1, c1 = add(s1, c1, b1)
            s2, c2 = add(s2, c2, b2)
            s3, c3 = add(s3, c3, b3)
            q0, d0 = add(q0, d0, e0)
            q1, d1 = add(q1, d1, e1)
            q2, d2 = add(q2, d2, e2)
            q3, d3 = add(q3, d3, e3)
        _commit(wsums, s0, c0, s1, c1, s2, c2, s3, c3)
        _commit(wsq, q0, d0, q1, d1, q2, d2, q3, d3)
        rows[0] += n
        return 0

    return fold_weighted


#: ``sum_labels(y, p, threshold, w, rows, wsums, wsq)`` (``threshold`` unread)
sum_labels = kernel(
    named(
        _weighted_fold(False),
        "sum_labels",
        """\
Weighted 0/1 labels and predictions into ``wsums`` (and the squared weights
into ``wsq``); status as above.""",
    )
)

#: ``sum_scores(y, s, threshold, w, rows, wsums, wsq)``
sum_scores = kernel(
    named(
        _weighted_fold(True),
        "sum_scores",
        """\
Weighted labels and scores cut at ``threshold`` into ``wsums`` (and the
squared weights into ``wsq``); status as above.""",
    )
)


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
