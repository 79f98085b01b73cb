"""Sparse contingency tables of two labelings, and the expected mutual information.

A table is three ``int64`` arrays of equal length: the true label, the
predicted label and the count of every (true, pred) pair that occurred, sorted
by (true, pred) without repeats. Labels are arbitrary ``int64`` values; nothing
is ever sized by them (a dense histogram serves labels of a short span, a sort
of the pairs anything else).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, kernel
from .compensated import add
from .grouped import key_range

__all__ = ["batch_table", "merge_tables", "marginal", "expected_mutual_info"]


@kernel
def merge_tables(ay, ap, ac, by, bp, bc):
    """Merge two tables sorted by (true, pred); counts of equal pairs add."""
    na = ay.shape[0]
    nb = by.shape[0]
    oy = np.empty(na + nb, np.int64)
    op = np.empty(na + nb, np.int64)
    oc = np.empty(na + nb, np.int64)
    i = j = k = 0
    while i < na or j < nb:
        if j == nb or (i < na and (ay[i] < by[j] or (ay[i] == by[j] and ap[i] <= bp[j]))):
            oy[k], op[k], oc[k] = ay[i], ap[i], ac[i]
            if j < nb and ay[i] == by[j] and ap[i] == bp[j]:
                oc[k] += bc[j]
                j += 1
            i += 1
        else:
            oy[k], op[k], oc[k] = by[j], bp[j], bc[j]
            j += 1
        k += 1
    return oy[:k].copy(), op[:k].copy(), oc[:k].copy()


def _span(x):
    """``(min, max - min)`` of a non-empty ``x`` (the span a Python int: it may exceed 2**63)."""
    lo, hi = key_range(x, 0, x.shape[0])
    return lo, int(hi) - int(lo)


def marginal(x, counts):
    """``(ids, sums)``: dense ids ``0..g-1`` of the labels ``x`` in increasing
    label order (``int64``), and the sum of ``counts`` over each label."""
    values, ids = np.unique(x, return_inverse=True)
    ids = ids.reshape(-1).astype(np.int64)
    sums = np.zeros(values.shape[0], np.int64)
    np.add.at(sums, ids, counts)
    return ids, sums


@kernel
def _count_cells(y, p, ylo, plo, ncol, cells):
    """Count the pairs in the zeroed histogram ``cells`` of ``ncol`` columns."""
    for i in range(y.shape[0]):
        cells[(y[i] - ylo) * ncol + (p[i] - plo)] += 1


def batch_table(y, p):
    """The contingency table of one batch, sorted by (true, pred): a dense
    histogram for labels of a short span, else a sort of the pairs."""
    n = y.shape[0]
    if n == 0:
        e = np.empty(0, np.int64)
        return e, e.copy(), e.copy()
    ylo, yspan = _span(y)
    plo, pspan = _span(p)
    if (float(yspan) + 1.0) * (float(pspan) + 1.0) <= 4.0 * n + 4096.0:
        ncol = pspan + 1
        cells = np.zeros((yspan + 1) * ncol, np.int32 if n < 2**31 - 1 else np.int64)
        _count_cells(y, p, ylo, plo, ncol, cells)
        nz = np.flatnonzero(cells)
        return ylo + nz // ncol, plo + nz % ncol, cells[nz].astype(np.int64)
    order = np.lexsort((p, y))
    y, p = y[order], p[order]
    starts = np.flatnonzero(np.concatenate([[True], (y[1:] != y[:-1]) | (p[1:] != p[:-1])]))
    return y[starts], p[starts], np.diff(np.append(starts, n))


#: Relative weight below which the walk away from the mode stops. The
#: hypergeometric weights fall faster than geometrically past that point, so
#: the neglected mass is below ~1e-24 of the total.
_TAIL = 1e-24
#: Half-width of the summed window, in standard deviations about the mean:
#: farther out every weight is below 1e-300 of the largest (so the tail
#: test above always stops the walk first; the window bounds its cost).
WIDTH = 40.0
#: Standard deviation above which a cell is taken from its moment expansion
#: instead of the walk (the walk would visit ~20 sd terms; the expansion's
#: neglected terms are then below 1e-16 relative, see :func:`_cell_moments`).
MOMENTS_SD = 16384.0
_SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitting constant


@inline
def _two_product(x, y):
    """``(p, e)`` with ``p + e == x * y`` exactly (Dekker; no FMA needed)."""
    p = x * y
    t = _SPLIT * x
    xh = t - (t - x)
    xl = x - xh
    t = _SPLIT * y
    yh = t - (t - y)
    yl = y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    return p, e


@inline
def _log1p_minus(u):
    """``log(1 + u) - u`` to full relative precision (a series near 0)."""
    if abs(u) < 0.01:
        s = 0.0
        for k in range(12, 1, -1):  # -u**2/2 + u**3/3 - ...: |u|**10 < 1e-20
            s = u * (s + (1.0 if k % 2 else -1.0) / k)
        return u * s
    return math.log1p(u) - u


@inline
def _term(k, fn, ab, ab_err):
    """``(k / n) (log(k n / (a b)) - (k n - a b) / (a b))``: the cell's term less
    its part linear in ``k`` (whose expectation is known exactly), so every
    term is <= 0 and nothing cancels in their sum. The relative gap
    ``(k n - a b) / (a b)`` is formed from exact products (exact while ``k``,
    ``n``, ``a`` and ``b`` are below 2**53), so terms near the mean keep
    their digits."""
    kn, kn_err = _two_product(k, fn)
    gap = ((kn - ab) + (kn_err - ab_err)) / ab
    return (k / fn) * _log1p_minus(gap)


@inline
def _cell_moments(fa, fb, fn):
    """E[(x/n) log(n x / (a b))] from the central moments of x, for large spreads.

    With ``mu = a b / n`` and ``x = mu (1 + u)``, ``(1 + u) log(1 + u) = u +
    u**2/2 - u**3/6 + u**4/12 - ...`` and ``E[u] = 0``, so the expectation is
    ``(mu / n) (m2 / (2 mu**2) - m3 / (6 mu**3) + m4 / (12 mu**4) - ...)`` with
    the hypergeometric's exact variance ``m2`` and third moment ``m3``, and
    ``m4 = 3 m2**2 (1 + O(1/m2))``. Each further term is smaller by a factor
    ``m2 / mu**2 <= 1 / mu``; used only when ``sqrt(m2) > MOMENTS_SD``, so
    ``mu > m2 > 2.6e8`` and what is left out is below 1e-16 relative.
    """
    mu = fa * fb / fn
    # every product pairs a's factor with b's: the same value for (b, a)
    m2 = mu * ((fn - fa) * (fn - fb) / (fn * (fn - 1.0)))
    m3 = m2 * ((fn - 2.0 * fa) * (fn - 2.0 * fb) / (fn * (fn - 2.0)))
    m4 = 3.0 * m2 * m2
    return (m2 / (2.0 * mu) - m3 / (6.0 * mu * mu) + m4 / (12.0 * mu * mu * mu)) / fn


@kernel
def _cell(a, b, n, width, moments_sd):
    """E[(x/n) log(n x / (a b))] for x hypergeometric(n, a, b).

    The probabilities come from the ratio of successive terms, walking both
    ways from the mode and normalising by the total weight at the end: no
    factorial is evaluated. With ``u = x / mu - 1`` (``mu = a b / n``), the
    term is ``(mu / n) (1 + u) log(1 + u)``; its part ``(x / n) u`` has the
    exact expectation ``var / (n mu)``, and the rest, ``(x / n) (log(1 + u) -
    u)``, is never positive, so the sum has no cancellation. The walk stops once a weight
    falls below ``_TAIL`` of the largest, and never leaves the window of
    ``width`` standard deviations about the mean (clipped to the support;
    ``width <= 0`` walks the whole support and sums every term): the cost is
    at most ``2 width sd + 3`` terms. Past ``moments_sd`` standard deviations
    the moment expansion (:func:`_cell_moments`) is exact to float64 and
    costs nothing.
    """
    lo = max(a + b - n, 0)
    hi = min(a, b)
    fa = float(a)
    fb = float(b)
    fn = float(n)
    mu = fa * fb / fn
    # var / mu, symmetric in (a, b) like every step below
    spread = float(n - a) * float(n - b) / (fn * max(1.0, fn - 1.0))
    sd = math.sqrt(mu * spread)
    full = width <= 0.0
    if not full and sd > moments_sd:
        return _cell_moments(fa, fb, fn)
    wlo = lo
    whi = hi
    if not full:
        wlo = max(math.floor(mu - width * sd) - 1, lo)
        whi = min(math.ceil(mu + width * sd) + 1, hi)
    ab, ab_err = _two_product(fa, fb)
    rest = n - a - b  # may be negative
    start = min(max(int((fa + 1.0) * (fb + 1.0) / (fn + 2.0)), wlo), whi)
    wmax = 1.0
    total = 1.0
    s = 0.0
    c = 0.0
    if start > 0:
        s = _term(float(start), fn, ab, ab_err)
    for step in (1, -1):  # from the mode up, then down
        w = 1.0
        k = start
        while k < whi if step > 0 else k > wlo:
            if step > 0:
                w *= float(a - k) * float(b - k) / (float(k + 1) * float(rest + k + 1))
            else:
                w *= float(k) * float(rest + k) / (float(a - k + 1) * float(b - k + 1))
            k += step
            total += w
            if k > 0:
                s, c = add(s, c, w * _term(float(k), fn, ab, ab_err))
            if w > wmax:
                wmax = w
            elif not full and w < _TAIL * wmax:
                break
    return (s + c) / total + spread / fn


def expected_mutual_info(a, b, n, width=WIDTH, moments_sd=MOMENTS_SD):
    """Expected mutual information (nats) of labelings with marginals ``a``, ``b``.

    ``a`` and ``b`` are the positive ``int64`` class and cluster sizes. Cells
    depend only on ``(a_i, b_j)``: each distinct pair of sizes is evaluated
    once (:func:`_cell`) and weighted by its multiplicity. ``width=0`` and
    ``moments_sd=inf`` sum every term of the support.
    """
    if a.shape[0] <= 1 or b.shape[0] <= 1:
        return 0.0  # a labeling with zero entropy
    va, ma = np.unique(a, return_counts=True)
    vb, mb = np.unique(b, return_counts=True)
    va, vb, ma, mb = va.astype(np.int64), vb.astype(np.int64), ma.astype(np.float64), mb.astype(np.float64)
    return float(_emi(va, ma, vb, mb, n, float(width), float(moments_sd)))


@kernel
def _emi(va, ma, vb, mb, n, width, moments_sd):
    s = 0.0
    c = 0.0
    for i in range(va.shape[0]):
        for j in range(vb.shape[0]):
            term = ma[i] * mb[j] * _cell(va[i], vb[j], n, width, moments_sd)
            s, c = add(s, c, term)
    return s + c
