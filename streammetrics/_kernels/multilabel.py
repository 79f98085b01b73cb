"""Multilabel row terms: per-label confusion cells and per-row set scores.

A batch is an ``n x L`` 0/1 matrix ``Y`` and an ``n x L`` 0/1 matrix ``P`` or
score matrix ``S`` cut at a threshold (``S >= t`` positive); the terms of a
row (:func:`label_terms`) are folded by :func:`~.row_sums.sum_terms` into the
fields :class:`~streammetrics.MultilabelConfusion` declares.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .binary import cell
from .checks import first_nonfinite

__all__ = ["first_nonfinite_matrix", "label_terms"]


def first_nonfinite_matrix(m):
    """Flat index of the first NaN or infinite cell of a ``float64`` matrix, else -1."""
    return first_nonfinite(m.reshape(-1))


@kernel
def label_terms(Y, P, S, t, b2, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...`` of ``Y`` and the 0/1 ``P`` (or, when
    ``S`` has rows, the scores ``S`` cut at ``S >= t``), in columns
    ``col .. col + L + 8 + B`` (``L`` labels, ``B`` squared betas ``b2``;
    slots from ``base``): 1 into slot 0
    for a row whose sets are equal or slot 1 for one that is not; its
    precision, recall, F1 and Jaccard into slots 2 to 5 (0 where a set is
    empty); 1 into slot 6 (its weight); its wrong cells into slot 7; 1 into
    the cell of each label, slot ``8 + 4 j + c`` (``c``: tp, fp, fn, tn); 1
    into slot ``8 + 4 L`` for a row whose sets are both empty, else into
    ``9 + 4 L``; its F-beta at ``b2[m]``, ``(1 + b2) |Y & P| / (b2 |Y| +
    |P|)`` (0 where both sets are empty), into slot ``10 + 4 L + m``.
    Status 1 for a value of ``Y`` that is not 0/1, 2 for one of ``P`` (or a
    score that is not finite)."""
    L = Y.shape[1]
    scored = S.shape[0] > 0
    for i in range(slots.shape[0]):
        r = lo + i
        inter = 0
        ny = 0
        npred = 0
        for j in range(L):
            y = np.int64(Y[r, j])
            if scored:
                v = S[r, j]
                if not (v - v == 0.0):
                    return 2
                p = np.int64(v >= t)
            else:
                p = np.int64(P[r, j])
            if not (y == 0 or y == 1):
                return 1
            if not (p == 0 or p == 1):
                return 2
            slots[i, col + 7 + j] = base + 8 + 4 * j + cell(y, p)
            values[i, col + 7 + j] = 1.0
            inter += y * p
            ny += y
            npred += p
        union = ny + npred - inter
        slots[i, col] = base + (0 if union == inter else 1)
        values[i, col] = 1.0
        for k in range(4):
            slots[i, col + 1 + k] = base + 2 + k
        values[i, col + 1] = inter / npred if npred > 0 else 0.0
        values[i, col + 2] = inter / ny if ny > 0 else 0.0
        values[i, col + 3] = 2.0 * inter / (ny + npred) if ny + npred > 0 else 0.0
        values[i, col + 4] = inter / union if union > 0 else 0.0
        slots[i, col + 5] = base + 6
        values[i, col + 5] = 1.0
        slots[i, col + 6] = base + 7
        values[i, col + 6] = union - inter
        slots[i, col + 7 + L] = base + (8 if union == 0 else 9) + 4 * L
        values[i, col + 7 + L] = 1.0
        for m in range(b2.shape[0]):
            slots[i, col + 8 + L + m] = base + 10 + 4 * L + m
            values[i, col + 8 + L + m] = (1.0 + b2[m]) * inter / (b2[m] * ny + npred) if union > 0 else 0.0
    return 0
