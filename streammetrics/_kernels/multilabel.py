"""Multilabel counts: per-label confusion cells and per-row set sizes.

A batch is an ``n x L`` 0/1 matrix ``Y`` and an ``n x L`` 0/1 matrix ``P`` or
score matrix ``S`` cut at a threshold (``S >= t`` positive). The 0/1 matrices
are checked before the kernels run (:func:`~streammetrics._protocol.inputs.first_not01_matrix`);
the scores here (status 2 for a non-finite score, state untouched).

State, for ``L`` labels: ``counts`` (``int64[L, 4]``, unweighted ``tp, fp, fn,
tn``); ``wsum`` (``float64[4 L, 2]`` pairs of weighted cells ``4 j + c``);
``rows`` (``int64[3]``: unweighted exact matches, unweighted wrong cells,
weighted rows); ``sums`` (``float64[7, 2]`` pairs: the weighted sums of each
row's precision, recall, F1 and Jaccard of its label sets, then over weighted
rows the total weight, the exact matches' weight and the weighted wrong cells).
Terms are summed in blocks of :data:`~.compensated.BLOCK` rows, each block
added with one compensated step.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel, named
from .binary import cell
from .compensated import BLOCK, add, fold

__all__ = [
    "first_nonfinite_matrix",
    "fold_labels",
    "fold_labels_weighted",
    "fold_scores",
    "fold_scores_weighted",
    "label_terms",
]


@kernel
def first_nonfinite_matrix(m):
    """Flat index of the first NaN or infinite cell of a ``float64`` matrix, else -1."""
    n, k = m.shape
    for i in range(n):
        for j in range(k):
            v = m[i, j]
            if not (v - v == 0.0):
                return i * k + j
    return -1


def _folder(scored: bool, weighted: bool):
    """The fold of 0/1 predictions or of scores, weighted or not: the flags are
    constants of the closure, so each kernel compiles only its own branches
    (the closure is the kernel itself, as in :mod:`.calibration`)."""

    def update(Y, P, S, t, w, n, counts, wsum, rows, sums, local, wblock, wpairs):
        """Fold rows of a checked 0/1 matrix ``Y`` (``uint8`` or ``int8``) and either
        a checked 0/1 prediction matrix ``P`` (``S`` an empty ``float64[0, 0]``) or,
        for the ``fold_scores`` kernels, scores ``S`` (``float64``) cut at ``S >= t``
        (``P`` a ``uint8[1, L]`` scratch row, overwritten with each row's
        predictions); ``w`` the weights (empty: unweighted). Returns the status of
        the module docstring.

        The caller gives zeroed scratch for ``L`` labels: ``local`` ``int64[L, 4]``,
        ``wblock`` ``float64[4 L + 7]`` and ``wpairs`` ``float64[4 L + 7, 2]``
        (allocating it here would cost the first call a compile of its own)."""
        if scored and first_nonfinite_matrix(S) >= 0:
            return 2
        nrows, L = Y.shape
        # ``wblock``: the block sums of the weighted cells, then of the seven row sums
        # (``wpairs`` their compensated pairs)
        o = 4 * L
        exact = 0
        wrong_cells = 0
        for start in range(0, nrows, BLOCK):
            stop = nrows if nrows < start + BLOCK else start + BLOCK
            for i in range(start, stop):
                inter = 0
                ny = 0
                npred = 0
                wi = w[i] if weighted else 1.0
                if scored:
                    # the row's predictions first, into the scratch row ``P[0]``:
                    # a loop of compares alone vectorizes
                    for j in range(L):
                        P[0, j] = S[i, j] >= t
                r = 0 if scored else i
                for j in range(L):
                    y = np.int64(Y[i, j])
                    p = np.int64(P[r, j])
                    c = 3 - y - 2 * p  # the cell of binary.cells, spelled out: it keeps this loop fast
                    if weighted:
                        wblock[4 * j + c] += wi
                    else:
                        local[j, c] += 1
                    inter += y * p
                    ny += y
                    npred += p
                union = ny + npred - inter
                wrong = union - inter
                if npred > 0:
                    wblock[o + 0] += wi * (inter / npred)
                if ny > 0:
                    wblock[o + 1] += wi * (inter / ny)
                if ny + npred > 0:
                    wblock[o + 2] += wi * (2.0 * inter / (ny + npred))
                if union > 0:
                    wblock[o + 3] += wi * (inter / union)
                if weighted:
                    wblock[o + 4] += wi
                    if wrong == 0:
                        wblock[o + 5] += wi
                    wblock[o + 6] += wi * wrong
                else:
                    if wrong == 0:
                        exact += 1
                    wrong_cells += wrong
            for r in range(7):
                s, cc = add(wpairs[o + r, 0], wpairs[o + r, 1], wblock[o + r])
                wpairs[o + r, 0] = s
                wpairs[o + r, 1] = cc
                wblock[o + r] = 0.0
            if weighted:
                for r in range(4 * L):
                    s, cc = add(wpairs[r, 0], wpairs[r, 1], wblock[r])
                    wpairs[r, 0] = s
                    wpairs[r, 1] = cc
                    wblock[r] = 0.0
        # the batch is counted: write the state
        for r in range(7):
            fold(sums, r, wpairs[o + r, 0], wpairs[o + r, 1])
        if weighted:
            for r in range(4 * L):
                fold(wsum, r, wpairs[r, 0], wpairs[r, 1])
            rows[2] += nrows
        else:
            for j in range(L):
                for c in range(4):
                    counts[j, c] += local[j, c]
            rows[0] += exact
            rows[1] += wrong_cells
        n[0] += nrows
        return 0

    return update


#: ``fold_*(Y, P, S, t, w, n, counts, wsum, rows, sums, local, wblock, wpairs)``
fold_labels, fold_labels_weighted, fold_scores, fold_scores_weighted = (
    kernel(named(_folder(scored, weighted), f"fold_{'scores' if scored else 'labels'}{'_weighted' * weighted}"))
    for scored in (False, True)
    for weighted in (False, True)
)


@kernel
def label_terms(Y, P, S, t, lo, slots, values, col, base):
    """The row terms of rows ``lo, lo + 1, ...`` of ``Y`` and the 0/1 ``P`` (or, when
    ``S`` has rows, the scores ``S`` cut at ``S >= t``), in columns
    ``col .. col + L + 4`` (``L`` labels; slots from ``base``): 1 into slot 0
    for a row whose sets are equal or slot 1 for one that is not; its
    precision, recall, F1 and Jaccard (as the folds sum them) into slots 2 to
    5; 1 into the cell of each label, slot ``6 + 4 j + c`` (``c``: tp, fp, fn,
    tn). Status 1 for a value of ``Y`` that is not 0/1, 2 for one of ``P``
    (or a score that is not finite)."""
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
            slots[i, col + 5 + j] = base + 6 + 4 * j + cell(y, p)
            values[i, col + 5 + j] = 1.0
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
    return 0
