"""Reliability tables: per-bin weights, predicted and observed totals.

A table has ``B`` uniform bins over [0, 1] with the edges ``edges`` (``B + 1``
values, ``numpy.linspace(0, 1, B + 1)``). A probability ``p`` falls in bin
``b`` when ``edges[b] < p <= edges[b + 1]``, and 0 in bin 0: the bins of
``sklearn.calibration.calibration_curve(strategy="uniform")``. Each bin holds
its row count and compensated pairs of its total weight, predicted and
observed totals, folded from the terms kernels by :func:`~.row_sums.sum_terms`
(blocks of :func:`block_of` rows); their status: 0 folded in, 1 a bad label,
2 a bad probability (or row). :func:`bin_run` bins a sorted run of distinct probabilities into a table
of equal-mass bins (``strategy="quantile"``, whose edges come from the run).
"""

from __future__ import annotations

import numpy as np

from ._jit import inline_ir, kernel
from .compensated import BLOCK, fold

__all__ = ["calibration_terms", "class_calibration_terms", "bin_of", "bin_run", "block_of"]


def block_of(bins: int) -> int:
    """Rows summed plainly per block before each bin's totals take one
    compensated step: at least four a bin."""
    return max(4 * bins, BLOCK)


@inline_ir
def bin_of(p, edges):
    """The bin of ``p`` in [0, 1] (module docstring)."""
    nb = edges.shape[0] - 1
    b = np.int64(p * nb)
    if b > nb - 1:
        b = nb - 1
    while b > 0 and p <= edges[b]:
        b -= 1
    while b < nb - 1 and p > edges[b + 1]:
        b += 1
    return b


@kernel
def calibration_terms(y, p, edges, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...`` (columns ``col .. col + 2``): with
    ``B`` bins and ``b`` the row's bin, 1 into slot ``base + b`` (the bin's
    weight and rows), ``p`` into ``base + B + b`` (its predicted total) and
    the outcome into ``base + 2 B + b`` (its observed total); its status."""
    nb = edges.shape[0] - 1
    for i in range(slots.shape[0]):
        yi = y[lo + i]
        pi = p[lo + i]
        if not (yi == 0 or yi == 1):
            return 1
        if not (pi >= 0.0 and pi <= 1.0):
            return 2
        b = bin_of(pi, edges)
        slots[i, col] = base + b
        slots[i, col + 1] = base + nb + b
        slots[i, col + 2] = base + 2 * nb + b
        values[i, col] = 1.0
        values[i, col + 1] = pi
        values[i, col + 2] = 1.0 if yi == 1 else 0.0
    return 0


@kernel
def class_calibration_terms(y, m, k, tolerance, edges, lo, slots, values, col, base):
    """The row terms of class codes ``y`` and an ``(rows, k)`` probability matrix
    ``m`` (``3 (k + 1)`` columns from ``col``): the table of the top label
    (confidence ``max_j m[i, j]``, the first column reaching it the predicted
    class, outcome whether it is ``y[i]``) as :func:`calibration_terms` lays
    out its ``B`` bins, then the tables of every class ``j`` (probability
    ``m[i, j]``, outcome ``y[i] == j``), class ``j``'s bins in rows
    ``j B .. (j + 1) B - 1`` of the ``k B`` weights from slot ``base + 3 B``,
    then the ``k B`` predicted and the ``k B`` observed totals. Status 1 for a
    code outside ``0..k-1``, 2 for an entry outside [0, 1] or a row whose sum
    is more than ``tolerance`` from 1."""
    nb = edges.shape[0] - 1
    cells = k * nb
    for i in range(slots.shape[0]):
        r = lo + i
        yi = y[r]
        if not (yi >= 0 and yi < k):
            return 1
        total = 0.0
        best = 0
        for j in range(k):
            v = m[r, j]
            if not (v >= 0.0 and v <= 1.0):
                return 2
            total += v
            if v > m[r, best]:
                best = j
        if abs(total - 1.0) > tolerance:
            return 2
        for j in range(-1, k):
            v = m[r, best] if j < 0 else m[r, j]
            at = base if j < 0 else base + 3 * nb + j * nb
            step = nb if j < 0 else cells
            c = col + 3 * (j + 1)
            b = bin_of(v, edges)
            slots[i, c] = at + b
            slots[i, c + 1] = at + step + b
            slots[i, c + 2] = at + 2 * step + b
            values[i, c] = 1.0
            values[i, c + 1] = v
            values[i, c + 2] = 1.0 if yi == (best if j < 0 else j) else 0.0
    return 0


@kernel
def bin_run(values, masses, inner, counts, positives, predicted):
    """Fold a chunk of a sorted run into a table of equal-mass bins: ``values``
    increasing, ``masses[0, i]`` and ``masses[1, i]`` the positives and
    negatives at ``values[i]``. A value falls in bin ``b``, the number of the
    sorted ``inner`` edges below it (``numpy.searchsorted(inner, v)``, as
    ``calibration_curve`` bins); the bin's rows go into ``counts[b]``, its
    positives into ``positives[b]`` and ``v`` times its rows into the
    compensated pair ``predicted[b]``."""
    b = 0
    for i in range(values.shape[0]):
        v = values[i]
        while b < inner.shape[0] and v > inner[b]:
            b += 1
        pos = np.int64(masses[0, i])
        rows = pos + np.int64(masses[1, i])
        counts[b] += rows
        positives[b] += pos
        fold(predicted, b, v * np.float64(rows), 0.0)
