"""Multiclass confusion counts, into the fields of :class:`~streammetrics.MulticlassConfusion`.

A batch is checked first by a vectorised pass and counted only when valid.
Status 0 folded, 1 a class of ``y`` outside ``0..k-1``, 2 one of ``p``.
"""

from __future__ import annotations

from ._jit import inline_ir, kernel
from .compensated import add

__all__ = ["count_classes", "sum_classes", "confusion_bounds", "class_terms"]


@inline_ir
def confusion_bounds(y, p, k):
    """Status of a batch: 0 if every ``y`` and ``p`` lies in ``0..k-1``."""
    bad_y = False
    bad_p = False
    for i in range(y.shape[0]):  # (no branch: the loop vectorizes)
        bad_y |= (y[i] < 0) | (y[i] >= k)
        bad_p |= (p[i] < 0) | (p[i] >= k)
    if bad_y:
        return 1
    if bad_p:
        return 2
    return 0


@kernel
def count_classes(y, p, k, n, counts):
    """Fold unweighted class indices into ``counts``; the status of the module docstring."""
    status = confusion_bounds(y, p, k)
    if status:
        return status
    for i in range(y.shape[0]):
        counts[y[i], p[i]] += 1
    n[0] += y.shape[0]
    return 0


@kernel
def sum_classes(y, p, w, k, n, wsum, seen):
    """Fold weighted class indices into ``wsum`` and ``seen``; the status as above."""
    status = confusion_bounds(y, p, k)
    if status:
        return status
    for i in range(y.shape[0]):
        c = y[i] * k + p[i]
        t, cc = add(wsum[c, 0], wsum[c, 1], w[i])
        wsum[c, 0] = t
        wsum[c, 1] = cc
        seen[0, y[i]] += 1
        seen[1, p[i]] += 1
    n[0] += y.shape[0]
    return 0


@kernel
def class_terms(y, p, k, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...``: 1 into the row's cell (slot
    ``base + y k + p``) and into the counts of its classes in ``y`` (slot
    ``base + k k + y``) and in ``p`` (``base + k k + k + p``); the status above."""
    m = slots.shape[0]
    status = confusion_bounds(y[lo : lo + m], p[lo : lo + m], k)
    if status:
        return status
    for i in range(m):
        yi = y[lo + i]
        pi = p[lo + i]
        slots[i, col] = base + yi * k + pi
        slots[i, col + 1] = base + k * k + yi
        slots[i, col + 2] = base + k * k + k + pi
        for t in range(3):
            values[i, col + t] = 1.0
    return 0
