"""Reliability tables: per-bin weights, predicted and observed totals.

A table has ``B`` uniform bins over [0, 1] with the edges ``edges`` (``B + 1``
values, ``numpy.linspace(0, 1, B + 1)``). A probability ``p`` falls in bin
``b`` when ``edges[b] < p <= edges[b + 1]``, and 0 in bin 0: the bins of
``sklearn.calibration.calibration_curve(strategy="uniform")``. Each bin holds
its row count (``int64``) and three compensated pairs (see
:mod:`.compensated`): the total weight, the weighted total of the
probabilities and the weighted total of the outcomes. Within a block of rows
each bin's terms are summed plainly, and each block total is added to the
bin's pair with one compensated step.

The kernels check the whole batch before they write anything and return a
status: 0 folded in, 1 a bad label, 2 a bad probability (or row).
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel, named
from .compensated import BLOCK, fold

__all__ = [
    "calibration_update",
    "calibration_update_weighted",
    "class_calibration_update",
    "class_calibration_update_weighted",
    "calibration_terms",
    "bin_of",
]


@inline
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


@inline
def _add_row(b, wi, p, o, counts, local):
    """One row into bin ``b``: its count, and plain sums in ``local`` (3, bins)."""
    counts[b] += 1
    local[0, b] += wi
    local[1, b] += wi * p
    local[2, b] += wi * o


@inline
def _fold_local(local, weight, predicted, observed):
    """Fold the block's plain sums into the state's pairs, and clear them."""
    for b in range(local.shape[1]):
        if local[0, b] != 0.0 or local[1, b] != 0.0 or local[2, b] != 0.0:
            fold(weight, b, local[0, b], 0.0)
            fold(predicted, b, local[1, b], 0.0)
            fold(observed, b, local[2, b], 0.0)
            local[0, b] = 0.0
            local[1, b] = 0.0
            local[2, b] = 0.0


@inline
def _tally_row(b, p, o, tally, local):
    """One unweighted row into bin ``b``: its count and its 0/1 outcome ``o`` into
    ``tally`` (``int64[2, bins]``), its probability into ``local[1, b]``."""
    tally[0, b] += 1
    tally[1, b] += o
    local[1, b] += p


@inline
def _fold_tally(tally, local, counts, weight, predicted, observed):
    """Fold the block's unweighted counts and sums into the state, and clear them.

    The values :func:`_fold_local` folds for rows of weight 1 (a sum of ones
    is exact), counted in integers: a row then updates two integer cells and
    one float cell, not one integer and three floats."""
    for b in range(tally.shape[1]):
        c = tally[0, b]
        if c != 0:
            counts[b] += c
            fold(weight, b, float(c), 0.0)
            fold(predicted, b, local[1, b], 0.0)
            fold(observed, b, float(tally[1, b]), 0.0)
            tally[0, b] = 0
            tally[1, b] = 0
            local[1, b] = 0.0


def _binary_updater(weighted: bool):
    """The binary table's fold, of weighted rows or not: the flag is a constant
    of the closure, so each kernel compiles only its own loop. The closure is
    the kernel itself: a kernel calling it as a copied helper spent a tenth of
    its compile copying the helper's IR."""

    def update(y, p, w, edges, n, counts, weight, predicted, observed, local, tally):
        """Fold 0/1 labels ``y`` and probabilities ``p``, weighted by ``w`` (the
        ``_weighted`` kernel) or not (``w`` empty).

        ``local`` (``float64[3, bins]``) and ``tally`` (``int64[2, bins]``) are
        zeroed scratch, left zeroed (the kernel allocates nothing: an allocation
        inside costs its compile more than the rest of the loop)."""
        rows = y.shape[0]
        for i in range(rows):
            yi = y[i]
            if not (yi == 0 or yi == 1):
                return 1
            pi = p[i]
            if not (pi >= 0.0 and pi <= 1.0):
                return 2
        nb = counts.shape[0]
        # rows are summed plainly per bin over a block, then each bin's block
        # total is added to its pair with one compensated step
        block = 4 * nb if 4 * nb > BLOCK else BLOCK
        for start in range(0, rows, block):
            for i in range(start, rows if rows < start + block else start + block):
                pi = p[i]
                b = bin_of(pi, edges)
                if weighted:
                    _add_row(b, w[i], pi, 1.0 if y[i] == 1 else 0.0, counts, local)
                else:
                    _tally_row(b, pi, np.int64(y[i] == 1), tally, local)
            if weighted:
                _fold_local(local, weight, predicted, observed)
            else:
                _fold_tally(tally, local, counts, weight, predicted, observed)
        n[0] += rows
        return 0

    return update


#: ``calibration_update[_weighted](y, p, w, edges, n, counts, weight, predicted, observed, local, tally)``
calibration_update, calibration_update_weighted = (
    kernel(named(_binary_updater(weighted), "calibration_update" + "_weighted" * weighted))
    for weighted in (False, True)
)


def _class_updater(weighted: bool):
    """The class tables' fold, of weighted rows or not (as :func:`_binary_updater`)."""

    def update(y, m, k, tolerance, w, edges, n, top, per_class, top_local, class_local, top_tally, class_tally):
        """Fold class codes ``y`` and an ``(rows, k)`` probability matrix ``m``,
        weighted by ``w`` (the ``_weighted`` kernel) or not (``w`` empty).

        ``top`` is the table of the top label (confidence ``max_j m[i, j]``, the
        first column reaching it as the predicted class, outcome whether it is
        ``y[i]``); ``per_class`` the tables of every class ``j`` (probability
        ``m[i, j]``, outcome ``y[i] == j``), bins of class ``j`` in rows
        ``j * B .. (j + 1) * B - 1``. Each is ``(counts, weight, predicted,
        observed)``. Status 1 for a code outside ``0..k-1``, 2 for an entry
        outside [0, 1] or a row whose sum is more than ``tolerance`` from 1.
        ``top_local`` (``float64[3, B]``), ``class_local`` (``float64[3, k B]``),
        ``top_tally`` (``int64[2, B]``) and ``class_tally`` (``int64[2, k B]``)
        are zeroed scratch, left zeroed, as in :func:`calibration_update`."""
        rows = y.shape[0]
        nb = edges.shape[0] - 1
        for i in range(rows):
            yi = y[i]
            if not (yi >= 0 and yi < k):
                return 1
            total = 0.0
            for j in range(k):
                v = m[i, j]
                if not (v >= 0.0 and v <= 1.0):
                    return 2
                total += v
            if abs(total - 1.0) > tolerance:
                return 2
        tc, tw, tp, to = top
        cc, cw, cp, co = per_class
        block = 4 * nb if 4 * nb > BLOCK else BLOCK
        for start in range(0, rows, block):
            for i in range(start, rows if rows < start + block else start + block):
                wi = w[i] if weighted else 1.0
                yi = y[i]
                best = 0
                for j in range(k):
                    v = m[i, j]
                    if v > m[i, best]:
                        best = j
                    c = j * nb + bin_of(v, edges)
                    if weighted:
                        _add_row(c, wi, v, 1.0 if yi == j else 0.0, cc, class_local)
                    else:
                        _tally_row(c, v, np.int64(yi == j), class_tally, class_local)
                conf = m[i, best]
                b = bin_of(conf, edges)
                if weighted:
                    _add_row(b, wi, conf, 1.0 if yi == best else 0.0, tc, top_local)
                else:
                    _tally_row(b, conf, np.int64(yi == best), top_tally, top_local)
            if weighted:
                _fold_local(top_local, tw, tp, to)
                _fold_local(class_local, cw, cp, co)
            else:
                _fold_tally(top_tally, top_local, tc, tw, tp, to)
                _fold_tally(class_tally, class_local, cc, cw, cp, co)
        n[0] += rows
        return 0

    return update


#: ``class_calibration_update[_weighted](y, m, k, tolerance, w, edges, n, top, per_class, top_local,
#: class_local, top_tally, class_tally)``
class_calibration_update, class_calibration_update_weighted = (
    kernel(named(_class_updater(weighted), "class_calibration_update" + "_weighted" * weighted))
    for weighted in (False, True)
)


@kernel
def calibration_terms(y, p, edges, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...`` (columns ``col .. col + 2``): with
    ``B`` bins and ``b`` the row's bin, 1 into slot ``base + b`` (the bin's
    weight and rows), ``p`` into ``base + B + b`` (its predicted total) and
    the outcome into ``base + 2 B + b`` (its observed total), as
    :func:`calibration_update` sums them; its status."""
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
