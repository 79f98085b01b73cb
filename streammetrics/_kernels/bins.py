"""Bins of a bounded rank state. *Items* ``(lo, hi, ab, cw)`` sorted by ``(lo, hi)``: a score range, its masses,
``cw[0]`` twice the concordance known among its own pairs and ``cw[1]`` the mass of its pairs of unknown order;
grouped along the dyadic cells of their keys, so two cells are nested or disjoint.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel
from .keys import TOP, ZERO, bits_of, key_of

_ONE = np.uint64(1)


def points_as_items(scores, ab):
    """Items of a run: points whose own pairs are all ties (known, one half each)."""
    cw = np.zeros((2, scores.shape[0]))
    with np.errstate(over="ignore"):  # weights near 1e308: infinite, refused by the result
        cw[0] = ab[0].astype(np.float64) * ab[1]
    return scores, scores.copy(), ab, cw


@inline
def _first_at_least(keys, a, b, x):
    """The first index of ``keys[a:b]`` (increasing) holding a key of at least ``x``, else ``b``."""
    while a < b:
        mid = (a + b) >> 1
        if keys[mid] < x:
            a = mid + 1
        else:
            b = mid
    return a


@inline
def _bit_length(x):
    n = 0
    for s in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(s):
            x >>= np.uint64(s)
            n += s
    if x:
        n += 1
    return n


@inline
def _group_sums(kp, vp, kn, vn, i, bp, an, bn):
    """``(positive mass, negative mass, own 2U)`` of the group of rows ``i:bp`` of ``kp`` and ``an:bn`` of ``kn``."""
    below = 0.0
    k2 = 0.0
    sp = 0.0
    j = an
    while i < bp:
        k = kp[i]
        c = 0.0
        while i < bp and kp[i] == k:
            c += 1.0 if vp is None else vp[i]
            i += 1
        while j < bn and kn[j] < k:
            below += 1.0 if vn is None else vn[j]
            j += 1
        e = j
        eq = 0.0
        while e < bn and kn[e] == k:
            eq += 1.0 if vn is None else vn[e]
            e += 1
        k2 += c * (2.0 * below + eq)
        sp += c
    sn = float(bn - an)
    if vn is not None:
        sn = 0.0
        for r in range(an, bn):
            sn += vn[r]
    return sp, sn, k2


@inline
def _ends(kp, i1, j1, kn, i0, j0):
    """The lowest and highest key of the sorted ``kp[i1:j1]`` and ``kn[i0:j0]``; ``(TOP, ZERO)`` when both are empty."""
    lo = TOP
    hi = ZERO
    if i1 < j1:
        lo = kp[i1]
        hi = kp[j1 - 1]
    if i0 < j0:
        if kn[i0] < lo:
            lo = kn[i0]
        if kn[j0 - 1] > hi:
            hi = kn[j0 - 1]
    return lo, hi


@kernel
def group_rows(kp, vp, kn, vn, pre_p, pre_n, budget, mass_cap, cuts, bits, sums, cells, bases):
    """Write the groups of sorted keys ``kp``, ``kn`` as items: each one's score range as float64 bits into ``bits``
    (rows lo, hi), its masses and own ``2U`` into ``sums``; returns their number, or -1 when they do not fit.

    Pieces cut at ``cuts`` are split along dyadic cells, largest first, down to a single score or a cell clear of
    other pieces within ``budget`` (``pos * neg``) and ``mass_cap`` (``pos + neg``). The rows weigh ``vp``, ``vn``,
    with inclusive prefix sums ``pre_p``, ``pre_n`` (all ``None``: one each, a compiled loop of its own). ``cells``
    (int64, 5 x 132) and ``bases`` (uint64, 132) are scratch: a depth-first stack of cells (rows of ``kp``, rows of
    ``kn``, level) and each one's first key.
    """
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    g = 0
    start = np.int64(0)  # not a literal: one compiled _first_at_least and _ends
    a1 = a0 = start
    for c in range(cuts.shape[0] + 1):
        last_piece = c == cuts.shape[0]
        b1 = n1 if last_piece else _first_at_least(kp, a1, n1, cuts[c])
        b0 = n0 if last_piece else _first_at_least(kn, a0, n0, cuts[c])
        if a1 == b1 and a0 == b0:
            continue
        # the piece's nearest rows outside it: a cell holding one of them is split further
        below = _ends(kp, start, a1, kn, start, a0)[1]
        above = _ends(kp, b1, n1, kn, b0, n0)[0]
        none_below = a1 == 0 and a0 == 0
        none_above = b1 == n1 and b0 == n0
        first, last = _ends(kp, a1, b1, kn, a0, b0)
        lev = _bit_length(first ^ last)
        cells[0, 0], cells[1, 0], cells[2, 0], cells[3, 0], cells[4, 0] = a1, b1, a0, b0, lev
        bases[0] = ZERO if lev == 64 else (first >> np.uint64(lev)) << np.uint64(lev)
        depth = 1
        while depth > 0:
            depth -= 1
            i1, j1, i0, j0, lev = cells[0, depth], cells[1, depth], cells[2, depth], cells[3, depth], cells[4, depth]
            base = bases[depth]
            lo_k, hi_k = _ends(kp, i1, j1, kn, i0, j0)
            clean = (none_below or below < base) and (
                none_above or (lev < 64 and above - base >= _ONE << np.uint64(lev))
            )
            if pre_p is not None:
                p = pre_p[j1 - 1] - (pre_p[i1 - 1] if i1 > 0 else 0.0) if i1 < j1 else 0.0
                q = pre_n[j0 - 1] - (pre_n[i0 - 1] if i0 > 0 else 0.0) if i0 < j0 else 0.0
            else:
                p = float(j1 - i1)
                q = float(j0 - i0)
            if lo_k == hi_k or (clean and not (p * q > budget or p + q > mass_cap)):
                if g == bits.shape[1]:
                    return -1
                bits[0, g] = bits_of(lo_k)
                bits[1, g] = bits_of(hi_k)
                sums[0, g], sums[1, g], sums[2, g] = _group_sums(kp, vp, kn, vn, i1, j1, i0, j0)
                g += 1
                continue
            mid = base + (_ONE << np.uint64(lev - 1))  # both halves a level down, the lower one first
            c1 = _first_at_least(kp, i1, j1, mid)
            c0 = _first_at_least(kn, i0, j0, mid)
            for x1, y1, x0, y0, at in ((c1, j1, c0, j0, mid), (i1, c1, i0, c0, base)):
                if x1 < y1 or x0 < y0:
                    cells[0, depth], cells[1, depth], cells[2, depth], cells[3, depth] = x1, y1, x0, y0
                    cells[4, depth] = lev - 1
                    bases[depth] = at
                    depth += 1
        a1 = b1
        a0 = b0
    return g


@kernel
def merge_items(lo1, hi1, ab1, cw1, lo2, hi2, ab2, cw2):
    """Merge two item lists sorted by ``(lo, hi)``; equal points become one."""
    m1 = lo1.shape[0]
    m2 = lo2.shape[0]
    cap = m1 + m2
    lo = np.empty(cap, np.float64)
    hi = np.empty(cap, np.float64)
    ab = np.empty((2, cap), ab1.dtype)
    cw = np.empty((2, cap), np.float64)
    i = 0
    j = 0
    m = 0
    while i < m1 or j < m2:
        first = j >= m2 or (i < m1 and (lo1[i] < lo2[j] or (lo1[i] == lo2[j] and hi1[i] <= hi2[j])))
        # the same point in both becomes one; two bins of the same range stay two
        both = first and j < m2 and lo1[i] == lo2[j] and hi1[i] == hi2[j] and lo1[i] == hi1[i]
        if first:
            lo[m] = lo1[i]
            hi[m] = hi1[i]
            for r in range(2):
                ab[r, m] = ab1[r, i]
                cw[r, m] = cw1[r, i]
            i += 1
        if both:
            for r in range(2):
                ab[r, m] += ab2[r, j]
            cw[0, m] = float(ab[0, m]) * float(ab[1, m])
            cw[1, m] = 0.0
            j += 1
        elif not first:
            lo[m] = lo2[j]
            hi[m] = hi2[j]
            for r in range(2):
                ab[r, m] = ab2[r, j]
                cw[r, m] = cw2[r, j]
            j += 1
        m += 1
    return lo[:m].copy(), hi[:m].copy(), ab[:, :m].copy(), cw[:, :m].copy()


@kernel
def _sweep(lo, hi, ab, cw, idx, k, heap):
    """``(k2, unknown)`` of the items ``idx[:k]``: twice the known concordance (own ``cw[0]`` plus ``pos(Y) neg(X)``
    for X below Y) and the mass of pairs of unknown order (own ``cw[1]`` plus both products for overlapping
    items); ``heap`` is scratch.
    """
    zero = ab[0, idx[0]] * 0
    below_p = zero
    below_n = zero
    seen_p = zero
    seen_n = zero
    k2 = 0.0
    unknown = 0.0
    size = 0
    for t in range(k):
        j = idx[t]
        edge = lo[j]
        while size > 0 and hi[heap[0]] < edge:  # pop the items ending below: a min-heap by hi
            x = heap[0]
            below_p += ab[0, x]
            below_n += ab[1, x]
            size -= 1
            heap[0] = heap[size]
            pos = 0
            while 2 * pos + 1 < size:
                child = 2 * pos + 1
                if child + 1 < size and hi[heap[child + 1]] < hi[heap[child]]:
                    child += 1
                if hi[heap[pos]] <= hi[heap[child]]:
                    break
                heap[child], heap[pos] = heap[pos], heap[child]
                pos = child
        p = float(ab[0, j])
        q = float(ab[1, j])
        k2 += cw[0, j] + 2.0 * p * float(below_n)
        unknown += cw[1, j] + p * float(seen_n - below_n) + q * float(seen_p - below_p)
        pos = size
        heap[pos] = j
        size += 1
        while pos > 0 and hi[heap[(pos - 1) >> 1]] > hi[heap[pos]]:
            heap[(pos - 1) >> 1], heap[pos] = heap[pos], heap[(pos - 1) >> 1]
            pos = (pos - 1) >> 1
        seen_p += ab[0, j]
        seen_n += ab[1, j]
    return k2, 0.0 if unknown < 0.0 else unknown  # (not max(): one compile less)


def sweep(lo, hi, ab, cw):
    """``(k2, unknown)`` of all the items: see :func:`_sweep`."""
    m = lo.shape[0]
    return _sweep(lo, hi, ab, cw, np.arange(m), m, np.empty(m, np.int64))


@kernel
def compact(lo, hi, ab, cw, budget, mass_cap):
    """Group items into bins along the dyadic cells of their keys, never splitting an item."""
    m = lo.shape[0]
    klo = np.empty(m, np.uint64)
    level = np.empty(m, np.int64)
    blo = lo.view(np.uint64)
    bhi = hi.view(np.uint64)
    for i in range(m):
        a = key_of(blo[i])
        klo[i] = a
        level[i] = _bit_length(a ^ key_of(bhi[i]))
    taken = np.zeros(m, np.bool_)
    members = np.empty(m, np.int64)
    heap = np.empty(m, np.int64)
    out_lo = np.empty(m, np.float64)
    out_hi = np.empty(m, np.float64)
    out_ab = np.empty((2, m), ab.dtype)
    out_cw = np.empty((2, m), np.float64)
    # explicit DFS stack of cells: (first item, end item, level) and first key
    cells = np.empty((3, 140), np.int64)
    bases = np.empty(140, np.uint64)
    cells[0, 0], cells[1, 0], cells[2, 0] = 0, m, 64
    bases[0] = ZERO
    depth = 1
    g = 0
    while depth > 0:
        depth -= 1
        a, b, lev = cells[0, depth], cells[1, depth], cells[2, depth]
        base = bases[depth]
        p = 0.0
        q = 0.0
        count = 0
        stuck = 0
        for i in range(a, b):
            if not taken[i]:
                count += 1
                p += float(ab[0, i])
                q += float(ab[1, i])
                stuck += level[i] >= lev
        if count == 0:
            continue
        whole = count == 1 or stuck == count or not (p * q > budget or p + q > mass_cap)
        if whole or stuck:  # one bin of every item left, or of those whose own cell this is
            k = np.int64(0)  # not a literal: one compiled _sweep
            for i in range(a, b):
                if not taken[i] and (whole or level[i] >= lev):
                    members[k] = i
                    k += 1
                    taken[i] = True
            first = members[0]
            top = hi[first]
            sp = ab[0, first]
            sn = ab[1, first]
            for t in range(1, k):
                top = max(top, hi[members[t]])
                sp += ab[0, members[t]]
                sn += ab[1, members[t]]
            out_lo[g] = lo[first]
            out_hi[g] = top
            out_ab[0, g] = sp
            out_ab[1, g] = sn
            if k == 1:
                out_cw[0, g] = cw[0, first]
                out_cw[1, g] = cw[1, first]
            else:
                out_cw[0, g], out_cw[1, g] = _sweep(lo, hi, ab, cw, members, k, heap)
            g += 1
            if whole:
                continue
        half = lev - 1
        mid = base + (_ONE << np.uint64(half))
        c = _first_at_least(klo, a, b, mid)
        cells[0, depth], cells[1, depth], cells[2, depth] = c, b, half
        bases[depth] = mid
        cells[0, depth + 1], cells[1, depth + 1], cells[2, depth + 1] = a, c, half
        bases[depth + 1] = base
        depth += 2
    return out_lo[:g].copy(), out_hi[:g].copy(), out_ab[:, :g].copy(), out_cw[:, :g].copy()
