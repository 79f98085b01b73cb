"""Kernels of the range-partitioned exact AUC (:mod:`streammetrics.dask`).

A *run* is ``(scores, ab)``: distinct float64 scores in increasing order and
the positive (``ab[0]``) and negative (``ab[1]``) mass at each, ``int64``
counts without weights and ``float64`` weights with them. Scores compare as
floats, so ``-0.0`` and ``0.0`` are one score. The caller allocates the
outputs with numpy (room for every input entry) and trims them to the length
a kernel returns.
"""

from __future__ import annotations

from ._jit import kernel
from .compensated import add

__all__ = ["run_of_counts", "run_of_weights", "ap_terms", "range_masses"]


@kernel
def run_of_counts(sp, sn, scores, ab):
    """The run of sorted positive scores ``sp`` and sorted negative scores
    ``sn`` (one count each), written into ``scores``, ``ab``; its length."""
    n1 = sp.shape[0]
    n0 = sn.shape[0]
    i = 0
    j = 0
    m = 0
    while i < n1 or j < n0:
        if j >= n0 or (i < n1 and sp[i] <= sn[j]):
            v = sp[i]
        else:
            v = sn[j]
        c1 = 0
        while i < n1 and sp[i] == v:
            i += 1
            c1 += 1
        c0 = 0
        while j < n0 and sn[j] == v:
            j += 1
            c0 += 1
        scores[m] = v
        ab[0, m] = c1
        ab[1, m] = c0
        m += 1
    return m


@kernel
def run_of_weights(sp, vp, sn, vn, scores, ab):
    """Like :func:`run_of_counts`, each score carrying its weight ``vp``/``vn``
    (a score's masses are added with compensation)."""
    n1 = sp.shape[0]
    n0 = sn.shape[0]
    i = 0
    j = 0
    m = 0
    while i < n1 or j < n0:
        if j >= n0 or (i < n1 and sp[i] <= sn[j]):
            v = sp[i]
        else:
            v = sn[j]
        s1 = 0.0
        e1 = 0.0
        while i < n1 and sp[i] == v:
            s1, e1 = add(s1, e1, vp[i])
            i += 1
        s0 = 0.0
        e0 = 0.0
        while j < n0 and sn[j] == v:
            s0, e0 = add(s0, e0, vn[j])
            j += 1
        scores[m] = v
        ab[0, m] = s1 + e1
        ab[1, m] = s0 + e0
        m += 1
    return m


@kernel
def ap_terms(ab, tp_above, fp_above):
    """``sum_k pos_k * TP_k / (TP_k + FP_k)`` over a run, compensated, as the
    pair ``(sum, error)``.

    ``TP_k`` and ``FP_k`` are the positive and negative mass at scores at or
    above the run's ``k``-th score: the run's own from the top down to ``k``,
    plus ``tp_above`` and ``fp_above`` from the scores above the run. Divided
    by the total positive mass this is the average precision's share of the
    run (``sum_k (R_k - R_{k-1}) P_k``). Masses are read as float64, exact
    for counts below ``2**53``.
    """
    tp = float(tp_above)
    fp = float(fp_above)
    s = 0.0
    c = 0.0
    for k in range(ab.shape[1] - 1, -1, -1):
        p = float(ab[0, k])
        tp += p
        fp += float(ab[1, k])
        if p > 0.0:
            s, c = add(s, c, p * (tp / (tp + fp)))
    return s, c


@kernel
def range_masses(ranges, pos, w, out):
    """Add each row's weight ``w[i]`` into ``out[ranges[i], 0 if pos[i] else 1]``,
    an ``(R, 2, 2)`` array of compensated pairs ``(sum, error)``."""
    for i in range(ranges.shape[0]):
        r = ranges[i]
        c = 0 if pos[i] else 1
        t, e = add(out[r, c, 0], out[r, c, 1], w[i])
        out[r, c, 0] = t
        out[r, c, 1] = e
