"""Bins of a bounded rank state: items, their grouping and their pair masses.

*Items* ``(lo, hi, ab, cw)``: a score range (a point when ``lo == hi``), its
positive and negative mass, and ``cw[0]`` twice the concordance known among its
own pairs (ties one half), ``cw[1]`` the mass of its pairs whose order is
unknown. Items are sorted by ``(lo, hi)``; overlapping items' pairs are unknown.
Rows and items are grouped along the dyadic cells of their keys (:mod:`.keys`:
halves, quarters, ... of the key space), so two cells are nested or disjoint.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .keys import TOP, ZERO, bits_of, key_of

__all__ = ["points_as_items", "group_keys", "merge_items", "sweep", "compact"]

_ONE = np.uint64(1)


def points_as_items(scores, ab):
    """Items of a run: points whose own pairs are all ties (known, one half each)."""
    cw = np.zeros((2, scores.shape[0]))
    cw[0] = ab[0].astype(np.float64) * ab[1]
    return scores, scores.copy(), ab, cw


@kernel
def _first_at_least(keys, a, b, x):
    """The first index of ``keys[a:b]`` (increasing) holding a key of at least ``x``, else ``b``."""
    while a < b:
        mid = (a + b) >> 1
        if keys[mid] < x:
            a = mid + 1
        else:
            b = mid
    return a


@kernel
def group_keys(kp, vp, kn, vn, pre_p, pre_n, weighted, budget, mass_cap, cuts):
    """Items of sorted positive keys ``kp`` and negative keys ``kn`` (weights ``vp``,
    ``vn`` and their inclusive prefix sums ``pre_p``, ``pre_n`` when ``weighted``).

    The keys are cut at the keys of ``cuts`` (the caller's bins' lower edges and
    one past their upper edges) and each piece grouped along the dyadic cells of
    its keys: a cell becomes one item when it holds a single score, or it holds
    no row of another piece and its ``pos * neg`` mass is at most ``budget`` and
    its ``pos + neg`` mass at most ``mass_cap`` (the prefix sums serve only to
    choose the cells; an item's masses are summed anew). The order of every pair
    inside an item is known (``cw[1]`` is 0). Returns ``(edges, ab, cw)``: the bits
    of each item's lowest and highest score, and ``ab`` float64 (whole numbers
    without weights).
    Nothing the size of the rows is allocated."""
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    room = 256
    edges = np.empty((2, room), np.uint64)  # the bits of each item's lowest and highest score
    ab = np.empty((2, room), np.float64)
    cw = np.zeros((2, room), np.float64)
    # explicit DFS stack of cells: row ranges (pos start, pos end, neg start, neg end), level, first key
    st = np.empty((4, 140), np.int64)
    st_l = np.empty(140, np.int64)
    st_k = np.empty(140, np.uint64)
    g = 0
    i = np.int64(0)  # not literals: one compiled _first_at_least
    j = np.int64(0)
    c = 0
    while i < n1 or j < n0:
        # the next piece: rows below the first cut above the smallest row
        first = kp[i] if j >= n0 or (i < n1 and kp[i] < kn[j]) else kn[j]
        while c < cuts.shape[0] and cuts[c] <= first:
            c += 1
        ap = i
        an = j
        i = n1 if c == cuts.shape[0] else _first_at_least(kp, i, n1, cuts[c])
        j = n0 if c == cuts.shape[0] else _first_at_least(kn, j, n0, cuts[c])
        # the nearest rows outside the piece: a cell holding one of them is split further
        below = max(kp[ap - 1] if ap > 0 else ZERO, kn[an - 1] if an > 0 else ZERO)
        above = min(kp[i] if i < n1 else TOP, kn[j] if j < n0 else TOP)
        last = max(kp[i - 1] if i > ap else ZERO, kn[j - 1] if j > an else ZERO)
        lev = _bit_length(first ^ last)
        st[0, 0] = ap
        st[1, 0] = i
        st[2, 0] = an
        st[3, 0] = j
        st_l[0] = lev
        st_k[0] = ZERO if lev == 64 else (first >> np.uint64(lev)) << np.uint64(lev)
        depth = 1
        while depth > 0:
            depth -= 1
            a1 = st[0, depth]
            b1 = st[1, depth]
            a0 = st[2, depth]
            b0 = st[3, depth]
            lev = st_l[depth]
            base = st_k[depth]
            if a1 == b1 and a0 == b0:
                continue
            lo_k = min(kp[a1] if a1 < b1 else TOP, kn[a0] if a0 < b0 else TOP)
            hi_k = max(kp[b1 - 1] if a1 < b1 else ZERO, kn[b0 - 1] if a0 < b0 else ZERO)
            emit = lo_k == hi_k  # a single score
            if not emit and (ap + an == 0 or below < base) and (
                    (i == n1 and j == n0) or (lev < 64 and above - base >= (_ONE << np.uint64(lev)))):
                p = float(b1 - a1)
                q = float(b0 - a0)
                if weighted:
                    p = (pre_p[b1 - 1] - (pre_p[a1 - 1] if a1 > 0 else 0.0)) if b1 > a1 else 0.0
                    q = (pre_n[b0 - 1] - (pre_n[a0 - 1] if a0 > 0 else 0.0)) if b0 > a0 else 0.0
                emit = not (p * q > budget or p + q > mass_cap)
            if not emit:
                half = lev - 1
                mid = base + (_ONE << np.uint64(half))
                c1 = _first_at_least(kp, a1, b1, mid)
                c0 = _first_at_least(kn, a0, b0, mid)
                # the upper half first on the stack, so the lower one is emitted first
                st[0, depth] = c1
                st[1, depth] = b1
                st[2, depth] = c0
                st[3, depth] = b0
                st_l[depth] = half
                st_k[depth] = mid
                st[0, depth + 1] = a1
                st[1, depth + 1] = c1
                st[2, depth + 1] = a0
                st[3, depth + 1] = c0
                st_l[depth + 1] = half
                st_k[depth + 1] = base
                depth += 2
                continue
            if g == room:  # more items than room: twice the room
                room *= 2
                edges, ab, cw = _grown(edges, room), _grown(ab, room), _grown(cw, room)
            edges[0, g] = bits_of(lo_k)
            edges[1, g] = bits_of(hi_k)
            # the group's own 2U: sum over positives of their mass times 2 * negatives below + equal
            below_n = 0.0
            k2 = 0.0
            sp = 0.0
            r = a0
            t = a1
            while t < b1:
                k = kp[t]
                w = 0.0
                while t < b1 and kp[t] == k:
                    w += vp[t] if weighted else 1.0
                    t += 1
                while r < b0 and kn[r] < k:
                    below_n += vn[r] if weighted else 1.0
                    r += 1
                e = r
                eq = 0.0
                while e < b0 and kn[e] == k:
                    eq += vn[e] if weighted else 1.0
                    e += 1
                k2 += w * (2.0 * below_n + eq)
                sp += w
            sn = float(b0 - a0)
            if weighted:
                sn = 0.0
                for r in range(a0, b0):
                    sn += vn[r]
            ab[0, g] = sp
            ab[1, g] = sn
            cw[0, g] = k2
            cw[1, g] = 0.0
            g += 1
    return edges[:, :g].copy(), ab[:, :g].copy(), cw[:, :g].copy()


@kernel
def _grown(x, room):
    """``x`` (``2 x m``) in the first columns of a ``2 x room`` array."""
    out = np.zeros((2, room), x.dtype)
    for r in range(2):
        for i in range(x.shape[1]):  # a loop, not a slice assignment: nothing to shape-check
            out[r, i] = x[r, i]
    return out


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
        if j >= m2:
            take = 1
        elif i >= m1:
            take = 2
        elif lo1[i] < lo2[j] or (lo1[i] == lo2[j] and hi1[i] < hi2[j]):
            take = 1
        elif lo2[j] < lo1[i] or (lo1[i] == lo2[j] and hi2[j] < hi1[i]):
            take = 2
        elif lo1[i] == hi1[i]:
            take = 3  # the same point in both
        else:
            take = 1  # two bins with the same range: keep both
        if take == 1:
            lo[m] = lo1[i]
            hi[m] = hi1[i]
            ab[0, m] = ab1[0, i]
            ab[1, m] = ab1[1, i]
            cw[0, m] = cw1[0, i]
            cw[1, m] = cw1[1, i]
            i += 1
        elif take == 2:
            lo[m] = lo2[j]
            hi[m] = hi2[j]
            ab[0, m] = ab2[0, j]
            ab[1, m] = ab2[1, j]
            cw[0, m] = cw2[0, j]
            cw[1, m] = cw2[1, j]
            j += 1
        else:
            p = ab1[0, i] + ab2[0, j]
            q = ab1[1, i] + ab2[1, j]
            lo[m] = lo1[i]
            hi[m] = hi1[i]
            ab[0, m] = p
            ab[1, m] = q
            cw[0, m] = float(p) * float(q)
            cw[1, m] = 0.0
            i += 1
            j += 1
        m += 1
    if m == cap:
        return lo, hi, ab, cw
    ab_out = np.empty((2, m), ab1.dtype)
    cw_out = np.empty((2, m), np.float64)
    for r in range(2):
        for i in range(m):  # a loop, not a slice assignment: nothing to shape-check
            ab_out[r, i] = ab[r, i]
            cw_out[r, i] = cw[r, i]
    return lo[:m].copy(), hi[:m].copy(), ab_out, cw_out


@kernel
def _sweep(lo, hi, ab, cw, idx, k, heap):
    """``(k2, unknown)`` of the items ``idx[:k]`` (sorted by ``(lo, hi)``): twice the
    known concordance (their own ``cw[0]``, plus ``pos(Y) neg(X)`` for every X
    entirely below Y) and the mass of pairs of unknown order (their own ``cw[1]``,
    plus ``pos(X) neg(Y) + pos(Y) neg(X)`` for every two overlapping items);
    ``heap`` is int64 scratch of ``k``."""
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
    return k2, max(unknown, 0.0)


@kernel
def sweep(lo, hi, ab, cw):
    """``(k2, unknown)`` of all the items: see :func:`_sweep`."""
    m = lo.shape[0]
    return _sweep(lo, hi, ab, cw, np.arange(m), m, np.empty(m, np.int64))


@kernel
def _bit_length(x):
    n = 0
    for s in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(s):
            x >>= np.uint64(s)
            n += s
    if x:
        n += 1
    return n


@kernel
def compact(lo, hi, ab, cw, budget, mass_cap):
    """Group items sorted by ``(lo, hi)`` into bins along the dyadic cells of their keys.

    The items of a cell become one bin when its ``pos * neg`` mass is at most
    ``budget`` and its mass at most ``mass_cap``, or it holds one item. Items are
    never split: one whose own cell is the cell being split stays a bin of its own
    (several such become one) and the split goes on for the rest. Each bin keeps its
    tight range and, from :func:`_sweep`, its own pairs' known and unknown mass; the
    bins come out in cell order."""
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
    # explicit DFS stack of cells: (first item, end item, level, first key)
    st_a = np.empty(140, np.int64)
    st_b = np.empty(140, np.int64)
    st_l = np.empty(140, np.int64)
    st_k = np.empty(140, np.uint64)
    st_a[0] = 0
    st_b[0] = m
    st_l[0] = 64
    st_k[0] = ZERO
    depth = 1
    g = 0
    while depth > 0:
        depth -= 1
        a = st_a[depth]
        b = st_b[depth]
        lev = st_l[depth]
        base = st_k[depth]
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
        st_a[depth] = c
        st_b[depth] = b
        st_l[depth] = half
        st_k[depth] = mid
        st_a[depth + 1] = a
        st_b[depth + 1] = c
        st_l[depth + 1] = half
        st_k[depth + 1] = base
        depth += 2
    return out_lo[:g].copy(), out_hi[:g].copy(), out_ab[:, :g].copy(), out_cw[:, :g].copy()
