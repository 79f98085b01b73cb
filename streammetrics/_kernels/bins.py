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
from .keys import ZERO, bits_of, key_of

__all__ = ["points_as_items", "few_scores", "bin_keys", "bin_keys_weighted", "merge_items", "sweep", "compact"]

_ONE = np.uint64(1)


@kernel
def points_as_items(scores, ab):
    """Items of a run: points whose own pairs are all ties (known, one half each)."""
    m = scores.shape[0]
    cw = np.zeros((2, m), np.float64)
    for i in range(m):
        cw[0, i] = float(ab[0, i]) * float(ab[1, i])
    return scores, scores.copy(), ab, cw


@kernel
def few_scores(kp, kn, cap):
    """Whether sorted keys ``kp`` and ``kn`` hold at most ``cap`` distinct keys together.

    Counts each part first (predictable passes) and walks both only when that
    does not settle it.
    """
    dp = 0
    for i in range(kp.shape[0]):
        dp += i == 0 or kp[i] != kp[i - 1]
    dn = 0
    for i in range(kn.shape[0]):
        dn += i == 0 or kn[i] != kn[i - 1]
    if dp + dn <= cap:
        return True
    if dp > cap or dn > cap:
        return False
    common = 0
    i = 0
    j = 0
    while i < kp.shape[0] and j < kn.shape[0]:
        a = kp[i]
        b = kn[j]
        if a < b:
            i += 1
        elif b < a:
            j += 1
        else:
            common += 1
            while i < kp.shape[0] and kp[i] == a:
                i += 1
            while j < kn.shape[0] and kn[j] == a:
                j += 1
    return dp + dn - common <= cap


@kernel
def _part_mass(pre, a, b, weighted):
    """Mass of rows ``a:b`` of one class: a count, or from inclusive prefix sums."""
    if not weighted:
        return float(b - a)
    if b == a:
        return 0.0
    return pre[b - 1] - (pre[a - 1] if a > 0 else 0.0)


@kernel
def _group_cells(kp, kn, pre_p, pre_n, weighted, budget, mass_cap, cuts, limit, bounds):
    """Group sorted rows along the dyadic cells of their keys (see :func:`bin_keys`):
    the largest cells within the limits that hold no rows on both sides of a key of
    ``cuts``. Writes the groups' row ranges ``(pos start, pos end, neg start, neg
    end)`` into the columns of ``bounds`` while it has room; returns how many, or -1
    as soon as there are more than ``limit``."""
    room = bounds.shape[1]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    st = np.empty((4, 140), np.int64)
    st_l = np.empty(140, np.int64)
    st_k = np.empty(140, np.uint64)
    g = 0
    i = 0
    j = 0
    c = 0
    while i < n1 or j < n0:
        # the next segment: rows below the first cut above the smallest row
        if j >= n0 or (i < n1 and kp[i] < kn[j]):
            first = kp[i]
        else:
            first = kn[j]
        while c < cuts.shape[0] and cuts[c] <= first:
            c += 1
        ap = i
        an = j
        if c < cuts.shape[0]:
            edge = cuts[c]
            while i < n1 and kp[i] < edge:
                i += 1
            while j < n0 and kn[j] < edge:
                j += 1
        else:
            i = n1
            j = n0
        # the nearest rows outside the segment: a cell holding one of them
        # holds rows on both sides of a cut and is split further
        has_below = ap > 0 or an > 0
        below = ZERO
        if ap > 0:
            below = kp[ap - 1]
        if an > 0 and kn[an - 1] > below:
            below = kn[an - 1]
        has_above = i < n1 or j < n0
        above = ZERO
        if i < n1:
            above = kp[i]
        if j < n0 and (i >= n1 or kn[j] < above):
            above = kn[j]
        # dyadic cells within the segment, from the smallest one holding it
        if ap == i:
            last = kn[j - 1]
        elif an == j:
            last = kp[i - 1]
        else:
            last = max(kp[i - 1], kn[j - 1])
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
            if a1 == b1 and a0 == b0:
                continue
            if a1 == b1:
                lo_k = kn[a0]
                hi_k = kn[b0 - 1]
            elif a0 == b0:
                lo_k = kp[a1]
                hi_k = kp[b1 - 1]
            else:
                lo_k = min(kp[a1], kn[a0])
                hi_k = max(kp[b1 - 1], kn[b0 - 1])
            emit = lo_k == hi_k  # a single score
            if not emit:
                lev_c = st_l[depth]
                base_c = st_k[depth]
                clean = not has_below or below < base_c
                if has_above:
                    clean &= lev_c < 64 and above - base_c >= (_ONE << np.uint64(lev_c))
                if clean:
                    p = _part_mass(pre_p, a1, b1, weighted)
                    q = _part_mass(pre_n, a0, b0, weighted)
                    emit = not (p * q > budget or p + q > mass_cap)
            if emit:
                if g < room:
                    bounds[0, g] = a1
                    bounds[1, g] = b1
                    bounds[2, g] = a0
                    bounds[3, g] = b0
                g += 1
                if g > limit:
                    return -1
                continue
            half = st_l[depth] - 1
            base = st_k[depth]
            mid = base + (_ONE << np.uint64(half))
            c1 = a1 + np.searchsorted(kp[a1:b1], mid)
            c0 = a0 + np.searchsorted(kn[a0:b0], mid)
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
    return g


@kernel
def _group_items(kp, vp, kn, vn, weighted, bounds, g, ab):
    """The items of the groups ``bounds[:, :g]``, their masses written into ``ab``."""
    lo = np.empty(g, np.uint64)
    hi = np.empty(g, np.uint64)
    cw = np.zeros((2, g), np.float64)
    for t in range(g):
        ap = bounds[0, t]
        bp = bounds[1, t]
        an = bounds[2, t]
        bn = bounds[3, t]
        if ap == bp:
            first = kn[an]
            last = kn[bn - 1]
        elif an == bn:
            first = kp[ap]
            last = kp[bp - 1]
        else:
            first = min(kp[ap], kn[an])
            last = max(kp[bp - 1], kn[bn - 1])
        lo[t] = bits_of(first)
        hi[t] = bits_of(last)
        # the group's own 2U: sum over positives of 2 * negatives below + equal
        below = 0.0
        k2 = 0.0
        sp = 0.0
        j = an
        i = ap
        while i < bp:
            k = kp[i]
            c = 0.0
            while i < bp and kp[i] == k:
                c += vp[i] if weighted else 1.0
                i += 1
            while j < bn and kn[j] < k:
                below += vn[j] if weighted else 1.0
                j += 1
            e = j
            eq = 0.0
            while e < bn and kn[e] == k:
                eq += vn[e] if weighted else 1.0
                e += 1
            k2 += c * (2.0 * below + eq)
            sp += c
        if weighted:
            sn = 0.0
            for r in range(an, bn):
                sn += vn[r]
            ab[0, t] = sp
            ab[1, t] = sn
        else:
            ab[0, t] = bp - ap
            ab[1, t] = bn - an
        cw[0, t] = k2
    return lo.view(np.float64), hi.view(np.float64), cw


@kernel
def bin_keys(kp, kn, budget, mass_cap, cuts, limit):
    """Items of sorted positive keys ``kp`` and negative keys ``kn`` (counts).

    A dyadic cell of the keys becomes one item when it holds a single score, or its
    ``pos * neg`` mass is at most ``budget`` and its ``pos + neg`` mass at most
    ``mass_cap``; no group straddles a key of ``cuts`` (the caller's bins' lower
    edges and one past their upper edges). The order of every pair inside a group
    is known (``cw[1]`` is 0). Linear in the rows, and nothing the size of the rows
    is allocated. Returns ``(g, lo, hi, ab, cw)``, or ``g = -1`` and empty arrays
    past ``limit`` items."""
    none = np.zeros(0, np.float64)
    g = _group_cells(kp, kn, none, none, False, budget, mass_cap, cuts, limit,
                     np.empty((4, 0), np.int64))
    if g < 0:
        return -1, none, none, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float64)
    bounds = np.empty((4, g), np.int64)
    _group_cells(kp, kn, none, none, False, budget, mass_cap, cuts, limit, bounds)
    ab = np.empty((2, g), np.int64)
    lo, hi, cw = _group_items(kp, none, kn, none, False, bounds, g, ab)
    return g, lo, hi, ab, cw


@kernel
def bin_keys_weighted(kp, vp, kn, vn, pre_p, pre_n, budget, mass_cap, cuts, limit):
    """Like :func:`bin_keys` with the rows' weights ``vp``, ``vn``.

    ``pre_p`` and ``pre_n`` are the inclusive prefix sums of the weights; they
    serve only to choose the cells, every mass of an item is summed anew.
    """
    g = _group_cells(kp, kn, pre_p, pre_n, True, budget, mass_cap, cuts, limit,
                     np.empty((4, 0), np.int64))
    none = np.zeros(0, np.float64)
    if g < 0:
        return -1, none, none, np.zeros((2, 0), np.float64), np.zeros((2, 0), np.float64)
    bounds = np.empty((4, g), np.int64)
    _group_cells(kp, kn, pre_p, pre_n, True, budget, mass_cap, cuts, limit, bounds)
    ab = np.empty((2, g), np.float64)
    lo, hi, cw = _group_items(kp, vp, kn, vn, True, bounds, g, ab)
    return g, lo, hi, ab, cw


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
def _heap_push(heap, size, idx, key):
    pos = size
    heap[pos] = idx
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[heap[parent]] <= key[heap[pos]]:
            break
        t = heap[parent]
        heap[parent] = heap[pos]
        heap[pos] = t
        pos = parent
    return size + 1


@kernel
def _heap_pop(heap, size, key):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and key[heap[left + 1]] < key[heap[left]]:
            child = left + 1
        if key[heap[pos]] <= key[heap[child]]:
            break
        t = heap[child]
        heap[child] = heap[pos]
        heap[pos] = t
        pos = child
    return top, size


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
        while size > 0 and hi[heap[0]] < edge:
            x, size = _heap_pop(heap, size, hi)
            below_p += ab[0, x]
            below_n += ab[1, x]
        p = float(ab[0, j])
        q = float(ab[1, j])
        k2 += cw[0, j] + 2.0 * p * float(below_n)
        unknown += cw[1, j] + p * float(seen_n - below_n) + q * float(seen_p - below_p)
        size = _heap_push(heap, size, j, hi)
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
def _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g):
    """Write the bin of items ``members[:k]`` as output ``g``."""
    first = members[0]
    top = hi[first]
    sp = ab[0, first]
    sn = ab[1, first]
    for t in range(1, k):
        i = members[t]
        top = max(top, hi[i])
        sp += ab[0, i]
        sn += ab[1, i]
    out_lo[g] = lo[first]
    out_hi[g] = top
    out_ab[0, g] = sp
    out_ab[1, g] = sn
    if k == 1:
        out_cw[0, g] = cw[0, first]
        out_cw[1, g] = cw[1, first]
    else:
        k2, unknown = _sweep(lo, hi, ab, cw, members, k, heap)
        out_cw[0, g] = k2
        out_cw[1, g] = unknown


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
        if count == 1 or stuck == count or not (p * q > budget or p + q > mass_cap):
            k = 0
            for i in range(a, b):
                if not taken[i]:
                    members[k] = i
                    k += 1
            _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g)
            g += 1
            continue
        if stuck:
            k = 0
            for i in range(a, b):
                if not taken[i] and level[i] >= lev:
                    members[k] = i
                    k += 1
                    taken[i] = True
            _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g)
            g += 1
        half = lev - 1
        mid = base + (_ONE << np.uint64(half))
        c = a + np.searchsorted(klo[a:b], mid)
        st_a[depth] = c
        st_b[depth] = b
        st_l[depth] = half
        st_k[depth] = mid
        st_a[depth + 1] = a
        st_b[depth + 1] = c
        st_l[depth + 1] = half
        st_k[depth + 1] = base
        depth += 2
    ab_out = np.empty((2, g), ab.dtype)
    cw_out = np.empty((2, g), np.float64)
    for r in range(2):
        for i in range(g):
            ab_out[r, i] = out_ab[r, i]
            cw_out[r, i] = out_cw[r, i]
    return out_lo[:g].copy(), out_hi[:g].copy(), ab_out, cw_out
