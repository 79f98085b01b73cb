"""Sparse contingency tables of two labelings, and the expected mutual information.

A contingency table is kept as three ``int64`` arrays of equal length ``m``:
the true label, the predicted label and the count of every (true, pred) pair
that occurred, sorted by (true, pred) with no repeats. Labels are arbitrary
``int64`` values (negative, huge, far apart); nothing is ever sized by them.

* :func:`batch_table` gives the sorted table of one batch: a dense histogram
  when both labelings span a short range (labels ``0..k-1``), otherwise
  :func:`pair_table`, an open-addressing hash table (linear probing,
  multiplicative hashing) in memory proportional to the distinct pairs,
  followed by a sort of those pairs only;
* :func:`merge_tables` merges two sorted tables like two sorted runs, adding
  the counts of equal pairs, so merging is exact and order-free;
* :func:`run_sums`, :func:`group_ids` and :func:`group_sums` give the
  marginals;
* :func:`expected_mutual_info` is the expected mutual information of two
  random labelings with the table's marginals (the AMI correction).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, kernel
from .compensated import add
from .sort import argsort_int64

__all__ = [
    "batch_table",
    "pair_table",
    "merge_tables",
    "run_sums",
    "group_ids",
    "group_sums",
    "expected_mutual_info",
]

_MUL_A = np.uint64(0x9E3779B97F4A7C15)
_MUL_B = np.uint64(0xC2B2AE3D27D4EB4F)
_SHIFT = np.uint64(29)


@inline
def _slot(a, b, shift):
    h = (np.uint64(a) * _MUL_A) ^ (np.uint64(b) * _MUL_B)
    h ^= h >> _SHIFT
    h *= _MUL_A
    return np.int64(h >> shift)


@kernel
def _grow(ky, kp, cnt, bits):
    """Rehash a table into one twice the size; return the new arrays."""
    cap = ky.shape[0] * 2
    bits += 1
    shift = np.uint64(64 - bits)
    mask = cap - 1
    ny = np.empty(cap, np.int64)
    np_ = np.empty(cap, np.int64)
    nc = np.zeros(cap, np.int64)
    for s in range(ky.shape[0]):
        c = cnt[s]
        if c:
            t = _slot(ky[s], kp[s], shift)
            while nc[t]:
                t = (t + 1) & mask
            ny[t] = ky[s]
            np_[t] = kp[s]
            nc[t] = c
    return ny, np_, nc, bits


@kernel
def pair_table(y, p):
    """The distinct ``(y[i], p[i])`` pairs and their counts, in no given order.

    Returns ``(true, pred, counts)``, three ``int64`` arrays of the distinct
    pairs. The table starts small and doubles at half load, so the common case
    (few clusters) stays in the first-level cache.
    """
    n = y.shape[0]
    bits = 6
    ky = np.empty(1 << bits, np.int64)
    kp = np.empty(1 << bits, np.int64)
    cnt = np.zeros(1 << bits, np.int64)
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    used = 0
    for i in range(n):
        a = y[i]
        b = p[i]
        s = _slot(a, b, shift)
        while True:
            c = cnt[s]
            if c == 0:
                ky[s] = a
                kp[s] = b
                cnt[s] = 1
                used += 1
                if 2 * used > mask + 1:
                    ky, kp, cnt, bits = _grow(ky, kp, cnt, bits)
                    mask = (1 << bits) - 1
                    shift = np.uint64(64 - bits)
                break
            if ky[s] == a and kp[s] == b:
                cnt[s] = c + 1
                break
            s = (s + 1) & mask
    out_y = np.empty(used, np.int64)
    out_p = np.empty(used, np.int64)
    out_c = np.empty(used, np.int64)
    j = 0
    for s in range(cnt.shape[0]):
        if cnt[s]:
            out_y[j] = ky[s]
            out_p[j] = kp[s]
            out_c[j] = cnt[s]
            j += 1
    return out_y, out_p, out_c


@kernel
def merge_tables(ay, ap, ac, by, bp, bc):
    """Merge two tables sorted by (true, pred); counts of equal pairs add."""
    na = ay.shape[0]
    nb = by.shape[0]
    oy = np.empty(na + nb, np.int64)
    op = np.empty(na + nb, np.int64)
    oc = np.empty(na + nb, np.int64)
    i = 0
    j = 0
    k = 0
    while i < na and j < nb:
        if ay[i] < by[j] or (ay[i] == by[j] and ap[i] < bp[j]):
            oy[k] = ay[i]
            op[k] = ap[i]
            oc[k] = ac[i]
            i += 1
        elif ay[i] == by[j] and ap[i] == bp[j]:
            oy[k] = ay[i]
            op[k] = ap[i]
            oc[k] = ac[i] + bc[j]
            i += 1
            j += 1
        else:
            oy[k] = by[j]
            op[k] = bp[j]
            oc[k] = bc[j]
            j += 1
        k += 1
    while i < na:
        oy[k] = ay[i]
        op[k] = ap[i]
        oc[k] = ac[i]
        i += 1
        k += 1
    while j < nb:
        oy[k] = by[j]
        op[k] = bp[j]
        oc[k] = bc[j]
        j += 1
        k += 1
    return oy[:k].copy(), op[:k].copy(), oc[:k].copy()


@kernel
def run_sums(labels, counts):
    """Sums of ``counts`` over runs of equal values of the sorted ``labels``."""
    m = labels.shape[0]
    out = np.empty(m, np.int64)
    k = -1
    for i in range(m):
        if i == 0 or labels[i] != labels[i - 1]:
            k += 1
            out[k] = 0
        out[k] += counts[i]
    return out[: k + 1].copy()


@kernel
def _span(x):
    """``(min, max, max - min)``, the span as an unsigned (it may exceed 2**63)."""
    lo = x[0]
    hi = x[0]
    for i in range(x.shape[0]):
        v = x[i]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi, np.uint64(hi) - np.uint64(lo)


def group_ids(x):
    """Dense ids ``0..g-1`` of the values of ``x`` (``int64``), in increasing value order.

    Returns ``(ids, g)``. A direct-address table serves values within a short
    span; anything else is sorted. (A plain function choosing between two
    kernels, so a first call compiles only the one it needs.)
    """
    m = x.shape[0]
    if m == 0:
        return np.empty(0, np.int64), 0
    lo, hi, span = _span(x)
    if span < np.uint64(2 * m + 4096):
        return _group_ids_direct(x, lo, int(span))
    return _group_ids_sorted(x)


@kernel
def _group_ids_direct(x, lo, span):
    m = x.shape[0]
    ids = np.empty(m, np.int64)
    table = np.full(span + 1, -1, np.int64)
    for i in range(m):
        table[x[i] - lo] = 0
    g = 0
    for t in range(table.shape[0]):
        if table[t] == 0:
            table[t] = g
            g += 1
    for i in range(m):
        ids[i] = table[x[i] - lo]
    return ids, g


@kernel
def _group_ids_sorted(x):
    m = x.shape[0]
    ids = np.empty(m, np.int64)
    order = argsort_int64(x)
    g = -1
    for r in range(m):
        i = order[r]
        if r == 0 or x[i] != x[order[r - 1]]:
            g += 1
        ids[i] = g
    return ids, g + 1


@kernel
def group_sums(ids, g, counts):
    """Sums of ``counts`` for each of the ``g`` group ids."""
    out = np.zeros(g, np.int64)
    for i in range(ids.shape[0]):
        out[ids[i]] += counts[i]
    return out


@kernel
def _dense_count(y, p, ylo, plo, ncol, h):
    for i in range(y.shape[0]):
        h[(y[i] - ylo) * ncol + (p[i] - plo)] += 1


@kernel
def _dense_table(y, p, ylo, plo, nrow, ncol, h):
    """The table of a batch counted in the zeroed histogram ``h`` of ``nrow * ncol`` cells."""
    _dense_count(y, p, ylo, plo, ncol, h)
    return _dense_extract(h, ylo, plo, ncol)


@kernel
def _dense_extract(h, ylo, plo, ncol):
    m = 0
    for c in range(h.shape[0]):
        if h[c]:
            m += 1
    oy = np.empty(m, np.int64)
    op = np.empty(m, np.int64)
    oc = np.empty(m, np.int64)
    j = 0
    for c in range(h.shape[0]):
        if h[c]:
            oy[j] = ylo + c // ncol
            op[j] = plo + c % ncol
            oc[j] = h[c]
            j += 1
    return oy, op, oc


def batch_table(y, p):
    """The contingency table of one batch, sorted by (true, pred).

    Labels within a short span (the usual ``0..k-1``) are counted in a dense
    histogram (``int32`` cells below 2**31 rows), whose cells come out already
    in order; anything else goes through :func:`pair_table` and a sort of the
    distinct pairs only. (A plain function choosing among kernels, so a first
    call compiles only what it needs.)
    """
    n = y.shape[0]
    if n == 0:
        e = np.empty(0, np.int64)
        return e, e.copy(), e.copy()
    ylo, _, yspan = _span(y)
    plo, _, pspan = _span(p)
    limit = 4.0 * n + 4096.0
    cells = (float(yspan) + 1.0) * (float(pspan) + 1.0)
    if cells <= limit:
        nrow, ncol = int(yspan) + 1, int(pspan) + 1
        h = np.zeros(nrow * ncol, np.int32 if n < 2**31 - 1 else np.int64)
        return _dense_table(y, p, ylo, plo, nrow, ncol, h)
    return _sparse_table(y, p)


@kernel
def _sparse_table(y, p):
    ty, tp, tc = pair_table(y, p)
    gy, _ = _group_ids_sorted(ty)
    gp, ncol = _group_ids_sorted(tp)
    key = gy * ncol + gp  # < m**2 <= n**2: no overflow below 3e9 rows
    order = argsort_int64(key)
    return ty[order], tp[order], tc[order]


#: Relative weight below which the walk away from the mode stops. The
#: hypergeometric weights fall faster than geometrically past that point, so
#: the neglected mass is below ~1e-24 of the total.
_TAIL = 1e-24


@inline
def _term(k, fn, fab):
    """``(k / n) log(k n / (a b))``, the log taken as ``log1p`` of the relative
    gap (exact while ``k n`` and ``a b`` stay below 2**53), so terms near the
    mean, where the logarithm is small, keep their digits."""
    return (k / fn) * math.log1p((k * fn - fab) / fab)


@kernel
def _cell(a, b, n):
    """E[(x/n) log(n x / (a b))] for x hypergeometric(n, a, b).

    The probabilities come from the ratio of successive terms, walking both
    ways from the mode and normalising by the total weight at the end: no
    factorial is evaluated, so nothing cancels, and only the terms within
    ~10 standard deviations of the mode are visited. The weighted terms are
    summed with compensation: they change sign at the mean and largely
    cancel.
    """
    lo = max(0, a + b - n)
    hi = min(a, b)
    fa = float(a)
    fb = float(b)
    fn = float(n)
    fab = fa * fb
    rest = fn - fa - fb  # n - a - b, may be negative
    start = int((fa + 1.0) * (fb + 1.0) / (fn + 2.0))
    start = min(max(start, lo), hi)
    w = 1.0
    wmax = 1.0
    total = 1.0
    s = 0.0
    c = 0.0
    if start > 0:
        s = _term(float(start), fn, fab)
    k = start
    while k < hi:
        fk = float(k)
        w *= (fa - fk) * (fb - fk) / ((fk + 1.0) * (rest + fk + 1.0))
        k += 1
        total += w
        s, c = add(s, c, w * _term(float(k), fn, fab))
        if w > wmax:
            wmax = w
        elif w < _TAIL * wmax:
            break
    w = 1.0
    k = start
    while k > lo:
        fk = float(k)
        w *= fk * (rest + fk) / ((fa - fk + 1.0) * (fb - fk + 1.0))
        k -= 1
        total += w
        if k > 0:
            s, c = add(s, c, w * _term(float(k), fn, fab))
        if w > wmax:
            wmax = w
        elif w < _TAIL * wmax:
            break
    return (s + c) / total


def expected_mutual_info(a, b, n):
    """Expected mutual information (nats) of labelings with marginals ``a``, ``b``.

    ``a`` and ``b`` are the ``int64`` class and cluster sizes (all positive,
    each summing to ``n``). This is scikit-learn's
    ``expected_mutual_information``: the sum over cells of the hypergeometric
    expectation of ``(n_ij / n) log(n n_ij / (a_i b_j))``. Cells depend only on
    ``(a_i, b_j)``, so each distinct pair of sizes is evaluated once and
    weighted by its multiplicity (the distinct sizes are found by numpy).
    Worst case ``O(R C max(n_ij range))``; typically
    ``O(distinct sizes^2 * sqrt(size))``.
    """
    if a.shape[0] <= 1 or b.shape[0] <= 1:
        return 0.0  # a labeling with zero entropy
    va, ma = np.unique(a, return_counts=True)
    vb, mb = np.unique(b, return_counts=True)
    return float(_emi(va.astype(np.int64), ma.astype(np.float64),
                      vb.astype(np.int64), mb.astype(np.float64), n))


@kernel
def _emi(va, ma, vb, mb, n):
    s = 0.0
    c = 0.0
    for i in range(va.shape[0]):
        for j in range(vb.shape[0]):
            term = ma[i] * mb[j] * _cell(va[i], vb[j], n)
            s, c = add(s, c, term)
    return s + c
