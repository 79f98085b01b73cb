"""Multilabel counts: per-label confusion cells and per-row set sizes.

A batch is an ``n x L`` 0/1 matrix ``Y`` (``uint8`` or ``int8``) and either an
``n x L`` 0/1 matrix ``P`` (``uint8`` or ``int8``) or an ``n x L`` score matrix ``S`` (``float64``)
cut at a threshold (``S >= t`` is a positive). The kernels check the whole
batch first and write the state only when every value is valid. Status codes:

* ``0``: the batch was folded in;
* ``1``: a cell of ``Y`` is not 0 or 1;
* ``2``: a cell of ``P`` is not 0 or 1, or a score of ``S`` is not finite.

State layout, for ``L`` labels:

* ``counts``: ``int64[L, 4]``, unweighted rows' ``tp, fp, fn, tn`` per label;
* ``wsum``: ``float64[4 L, 2]``, compensated pairs (see :mod:`.compensated`) of
  the weights of weighted rows, cell ``4 j + c`` (``c`` as in ``counts``);
* ``rows``: ``int64[3]``: unweighted rows that match exactly, unweighted
  wrong cells, and rows that came with weights;
* ``sums``: ``float64[7, 2]`` compensated pairs: the sums over rows of the
  row's precision ``|Y & P| / |P|``, recall ``|Y & P| / |Y|``, F1
  ``2 |Y & P| / (|Y| + |P|)`` and Jaccard ``|Y & P| / |Y | P|`` (each 0 when
  its denominator is 0), times the row's weight (1 without weights); then,
  over weighted rows only, the total weight, the weight of exact matches and
  the weighted wrong cells.

A zero-length ``w`` means "unweighted". Within a batch, terms are summed
naively in blocks of :data:`~.compensated.BLOCK` rows and each block's sum is
added with one compensated step.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add, fold

__all__ = ["first_not01_matrix", "first_nonfinite_matrix", "fold_labels", "fold_scores"]


@kernel
def first_not01_matrix(m):
    """Flat index of the first cell of a ``uint8``/``int8`` matrix that is not 0 or 1, else -1."""
    n, k = m.shape
    for i in range(n):
        for j in range(k):
            v = m[i, j]
            if v != 0 and v != 1:
                return i * k + j
    return -1


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


@kernel
def _any_not01(m):
    acc = 0
    n, k = m.shape
    for i in range(n):
        for j in range(k):
            acc |= m[i, j]
    # a value other than 0 and 1 sets a bit above the lowest (a negative int8
    # sets them all); check cell by cell only then
    if acc < 0 or acc > 1:
        return first_not01_matrix(m) >= 0
    return False


@kernel
def _fold(Y, P, S, t, scored, w, n, counts, wsum, rows, sums):
    nrows, L = Y.shape
    weighted = w.shape[0] > 0
    local = np.zeros((L, 4), np.int64)
    wblock = np.zeros(4 * L, np.float64)
    wpairs = np.zeros((4 * L, 2), np.float64)
    block = np.zeros(7, np.float64)
    pairs = np.zeros((7, 2), np.float64)
    exact = 0
    wrong_cells = 0
    for start in range(0, nrows, BLOCK):
        stop = min(start + BLOCK, nrows)
        for i in range(start, stop):
            inter = 0
            ny = 0
            npred = 0
            wi = w[i] if weighted else 1.0
            for j in range(L):
                y = np.int64(Y[i, j])
                if scored:
                    p = np.int64(1) if S[i, j] >= t else np.int64(0)
                else:
                    p = np.int64(P[i, j])
                c = 3 - y - 2 * p
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
                block[0] += wi * (inter / npred)
            if ny > 0:
                block[1] += wi * (inter / ny)
            if ny + npred > 0:
                block[2] += wi * (2.0 * inter / (ny + npred))
            if union > 0:
                block[3] += wi * (inter / union)
            if weighted:
                block[4] += wi
                if wrong == 0:
                    block[5] += wi
                block[6] += wi * wrong
            else:
                if wrong == 0:
                    exact += 1
                wrong_cells += wrong
        for r in range(7):
            s, cc = add(pairs[r, 0], pairs[r, 1], block[r])
            pairs[r, 0] = s
            pairs[r, 1] = cc
            block[r] = 0.0
        if weighted:
            for r in range(4 * L):
                s, cc = add(wpairs[r, 0], wpairs[r, 1], wblock[r])
                wpairs[r, 0] = s
                wpairs[r, 1] = cc
                wblock[r] = 0.0
    # the batch is counted: write the state
    for r in range(7):
        fold(sums, r, pairs[r, 0], pairs[r, 1])
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


@kernel
def fold_labels(Y, P, w, n, counts, wsum, rows, sums):
    """Fold a 0/1 matrix ``Y`` and a 0/1 prediction matrix ``P`` (``uint8`` or ``int8``);
    the status of the module docstring."""
    if _any_not01(Y):
        return 1
    if _any_not01(P):
        return 2
    _fold(Y, P, np.zeros((0, 0)), 0.0, False, w, n, counts, wsum, rows, sums)
    return 0


@kernel
def fold_scores(Y, S, t, w, n, counts, wsum, rows, sums):
    """Fold a 0/1 matrix ``Y`` (``uint8`` or ``int8``) and scores ``S`` (``float64``) cut at
    ``S >= t``; the status of the module docstring."""
    if _any_not01(Y):
        return 1
    if first_nonfinite_matrix(S) >= 0:
        return 2
    _fold(Y, np.zeros((0, 0), np.uint8), S, t, True, w, n, counts, wsum, rows, sums)
    return 0
