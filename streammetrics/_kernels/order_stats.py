"""Order statistics of a window's scores: the Mann-Whitney U of the last rows.

The window's rows sit in a ring (class ``c``: 0 positive, 1 negative; score,
weight, whether it came with a weight). Its scores are held in two sorted
levels: the *base* (distinct scores, each one's mass and row count per class)
and the *pending* entries (a row that entered, with its mass, or one that
left, with its mass and count negated; equal scores repeat). Each level keeps
the prefix sums of its masses per class, so the mass of a class below, at and
above a score is two binary searches per level.

A batch's ``k`` leaving rows ``L`` and ``m`` entering rows ``N`` change

    ``2U = sum over (positive, negative) pairs of w+ w- (2 [s+ > s-] + [s+ == s-])``

(midranks: ties count half) by ``- C(L, window) + 2U(L) + C(N, rest) + 2U(N)``,
``C(X, S)`` each row of ``X``'s pairs with ``S`` (its searches) and ``2U(X)``
the pairs inside ``X`` (``X`` sorted). ``L`` and ``N`` are then merged into the
pending entries, and the pending entries into the base once there are more
than ``sqrt(window * m)`` of them: per row, ``O(log window)`` searches and
``O(sqrt(window / m))`` sequential merge work, amortized. Merging into the base
sums every mass and ``2U`` afresh (compensated), so their rounding does not
build up; masses of rows without weights are integers, exact in float64, and
once no row of the window came with a weight the base takes its counts as
its masses.

``meta`` (``int64[6]``): the ring's oldest row, rows held, base entries,
pending entries, weighted rows held, whether a weighted row entered since the
base was last made of counts (masses then are integers: their sums are
exact, uncompensated). ``u2`` and ``tot`` (positive, negative mass) are
compensated pairs.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel
from .compensated import add, fold

__all__ = ["push_rows", "merge_base", "leaving"]


@inline
def _first(keys, n, s, start):
    """The first entry of ``keys[:n]`` from ``start`` on that is not below ``s``,
    every entry before ``start`` being below (the first above ``s``: not below
    ``np.nextafter(s, np.inf)``): galloping from ``start``, so that ascending
    queries cost ``O(log gap)``."""
    lo, hi, step = start, start, 1
    while hi < n and keys[hi] < s:
        lo = hi + 1
        hi += step
        step <<= 1
    hi = min(hi, n)
    while lo < hi:
        h = (lo + hi) >> 1
        if keys[h] < s:
            lo = h + 1
        else:
            hi = h
    return lo


@inline
def _pairs_at(c, lo, hi, cum, n):
    """A row of class ``c`` whose score spans entries ``lo .. hi - 1`` of a level:
    its pairs' weight with the level (``2 below + at`` of the negatives for a
    positive, ``2 above + at`` of the positives for a negative)."""
    o = 1 - c
    at = cum[o, hi] - cum[o, lo]
    if c == 0:
        return 2.0 * cum[o, lo] + at
    return 2.0 * (cum[o, n] - cum[o, hi]) + at


@inline
def _inner_u2(cls, s, w, order):
    """``2U`` of the pairs inside rows taken in ``order`` (ascending scores), compensated."""
    u, ue, neg, ne = 0.0, 0.0, 0.0, 0.0
    i, m = 0, order.shape[0]
    while i < m:
        j = i
        p = q = 0.0
        while j < m and s[order[j]] == s[order[i]]:
            r = order[j]
            if cls[r] == 0:
                p += w[r]
            else:
                q += w[r]
            j += 1
        u, ue = add(u, ue, p * (2.0 * (neg + ne) + q))
        neg, ne = add(neg, ne, q)
        i = j
    return u + ue


@inline
def _add_masses(tot, cls, w, sign):
    """Add each class's mass of rows ``cls, w`` (times ``sign``) to ``tot``."""
    p = q = 0.0
    for r in range(cls.shape[0]):
        if cls[r] == 0:
            p += w[r]
        else:
            q += w[r]
    for c in range(2):  # (a loop: literal rows would compile a helper each)
        fold(tot, c, sign * (p if c == 0 else q), 0.0)


@inline
def _prefix(mass, cum, n, exact):
    """``cum[c, i]``: the mass of class ``c`` in entries ``0 .. i - 1``: compensated,
    or (``exact``: integer masses, exact in float64) plain."""
    for c in range(2):
        s = 0.0
        e = 0.0
        cum[c, 0] = 0.0
        for i in range(n):
            if exact:
                s += mass[c, i]
            else:
                s, e = add(s, e, mass[c, i])
            cum[c, i + 1] = s + e


@kernel
def merge_base(bkey, bmass, bcnt, bcum, pkey, pmass, pcnt, pcum, tkey, tmass, tcnt, meta, u2, tot):
    """Merge the base and the pending entries into ``t*`` (scores summed, entries
    of no row dropped; as many entries as the base holds at most, the window's
    distinct scores), which the caller then takes as the base (the old base its
    scratch), with their prefix masses in ``bcum`` and ``2U`` and the class
    totals summed afresh."""
    nb, npend = meta[2], meta[3]
    i = j = k = 0
    exact = meta[4] == 0  # no weighted row: the masses are the counts
    while i < nb or j < npend:
        s = pkey[j] if j < npend else np.inf
        while i < nb and bkey[i] < s:  # base entries below the next pending one: as they are
            if k == tkey.shape[0]:
                raise ValueError("more distinct scores than the window's rows")
            c0, c1 = bcnt[0, i], bcnt[1, i]
            tkey[k], tcnt[0, k], tcnt[1, k] = bkey[i], c0, c1
            if exact:
                tmass[0, k], tmass[1, k] = float(c0), float(c1)
            else:
                tmass[0, k], tmass[1, k] = bmass[0, i], bmass[1, i]
            i += 1
            k += 1
        if j == npend:
            break
        m0 = e0 = m1 = e1 = 0.0  # (compensated: a score's rows that left cancel exactly)
        c0 = c1 = 0
        while i < nb and bkey[i] == s:
            if not exact:
                m0, e0 = add(m0, e0, bmass[0, i])
                m1, e1 = add(m1, e1, bmass[1, i])
            c0 += bcnt[0, i]
            c1 += bcnt[1, i]
            i += 1
        while j < npend and pkey[j] == s:
            if not exact:
                m0, e0 = add(m0, e0, pmass[0, j])
                m1, e1 = add(m1, e1, pmass[1, j])
            c0 += pcnt[0, j]
            c1 += pcnt[1, j]
            j += 1
        m0 += e0
        m1 += e1
        if c0 + c1 == 0:
            continue
        if k == tkey.shape[0]:  # (cannot happen while the levels hold the window's rows)
            raise ValueError("more distinct scores than the window's rows")
        tkey[k] = s
        tmass[0, k] = float(c0) if exact else (m0 if c0 else 0.0)
        tmass[1, k] = float(c1) if exact else (m1 if c1 else 0.0)
        tcnt[0, k] = c0
        tcnt[1, k] = c1
        k += 1
    _prefix(tmass, bcum, k, exact)
    meta[2] = k
    meta[3] = 0
    if exact:
        meta[5] = 0
    u, ue = 0.0, 0.0
    for i in range(k):
        if exact:  # (integers below 2**53: exact)
            u += tmass[0, i] * (2.0 * bcum[1, i] + tmass[1, i])
        else:
            u, ue = add(u, ue, tmass[0, i] * (2.0 * bcum[1, i] + tmass[1, i]))
    u2[0, 0], u2[0, 1] = u, ue
    tot[0, 0], tot[0, 1], tot[1, 0], tot[1, 1] = bcum[0, k], 0.0, bcum[1, k], 0.0


@inline
def _into_pending(cls, s, w, order, sign, pkey, pmass, pcnt, pcum, meta):
    """Merge rows taken in ``order`` (ascending) into the pending entries, their
    masses and counts times ``sign`` (1.0 or -1.0: a float, so that both
    calls share one compiled helper): in place, from the last entry down (the
    entries have room), an entry before a row of the same score."""
    i, j = meta[3] - 1, order.shape[0] - 1
    k = meta[3] + order.shape[0]
    meta[3] = k
    while j >= 0:  # (once the rows are placed, the entries below are where they were)
        k -= 1
        if i >= 0 and pkey[i] > s[order[j]]:
            pkey[k] = pkey[i]
            pmass[0, k], pmass[1, k] = pmass[0, i], pmass[1, i]
            pcnt[0, k], pcnt[1, k] = pcnt[0, i], pcnt[1, i]
            i -= 1
        else:
            r = order[j]
            c = cls[r]
            pkey[k] = s[r]
            pmass[0, k] = pmass[1, k] = 0.0
            pcnt[0, k] = pcnt[1, k] = 0
            pmass[c, k] = sign * w[r]
            pcnt[c, k] = 1 if sign > 0 else -1
            j -= 1
    _prefix(pmass, pcum, meta[3], meta[5] == 0)


@inline
def _pairs(cls, s, w, order, bkey, bcum, pkey, pcum, meta):
    """The pairs' weight of rows ``cls, s, w`` (taken in ``order``, ascending) with
    the window's rows, compensated."""
    u, ue = 0.0, 0.0
    nb, npend = meta[2], meta[3]
    at_b = at_p = nb - nb  # where the last search ended in the base and in the pending entries
    for t in range(order.shape[0]):
        r = order[t]
        c, x = cls[r], s[r]
        g = 0.0
        if nb:  # the base's scores are distinct: the entry at x, if any, is the one found
            at_b = _first(bkey, nb, x, at_b)
            g += _pairs_at(c, at_b, at_b + (at_b < nb and bkey[at_b] == x), bcum, nb)
        if npend:  # pending entries repeat scores
            at_p = _first(pkey, npend, x, at_p)
            g += _pairs_at(c, at_p, _first(pkey, npend, np.nextafter(x, np.inf), at_p), pcum, npend)
        u, ue = add(u, ue, w[r] * g)
    return u + ue


def leaving(ring_s, meta, m: int) -> np.ndarray:
    """The scores of the rows that pushing ``m`` rows makes leave, oldest first:
    empty when none or all of them leave (the window then starts afresh)."""
    window, start, held = ring_s.shape[0], int(meta[0]), int(meta[1])
    k = max(0, held + m - window)
    if k == held:
        return ring_s[:0]
    if start + k <= window:
        return ring_s[start : start + k]
    return np.concatenate((ring_s[start:], ring_s[: start + k - window]))


@kernel
def push_rows(cls, s, w, flags, order, gone, ring_c, ring_s, ring_w, ring_t, bkey, bmass, bcnt, bcum, pkey, pmass, pcnt,
              pcum, meta, u2, tot):  # fmt: skip
    """Push ``m`` rows, at most the window's size (class ``cls``: 0 positive, 1
    negative; scores ``s``; weights ``w``, 1 for rows without; ``flags``: which
    came with one; ``order``: the rows by ascending score) into the window, the
    oldest rows leaving once it is full (``gone``: the leaving rows by ascending
    score, as :func:`leaving` tells, when some but not all rows leave; else
    empty). The base holds ``window`` entries, the pending entries twice as
    many; the caller merges the pending entries into the base
    (:func:`merge_base`) first when the batch's would not fit, and after past
    ``sqrt(window * m)`` of them. (The orders come from ``np.argsort``: numpy
    sorts several times faster than a sort compiled here; and calling
    ``merge_base`` from here would compile it at the first push, needed or
    not.)"""
    cap = ring_c.shape[0]
    m = cls.shape[0]
    k = max(0, meta[1] + m - cap)
    if k and k == meta[1]:  # every row leaves: the window starts afresh
        meta[0] = (meta[0] + k) % cap
        meta[1] = meta[2] = meta[3] = meta[4] = meta[5] = 0
        u2[:] = 0.0
        tot[:] = 0.0
        k = 0
    if gone.shape[0] != k or order.shape[0] != m:
        raise ValueError("order and gone must order the entering and the leaving rows")
    if meta[3] + k + m > pkey.shape[0]:
        raise ValueError("no room for the batch's pending entries: merge them into the base first")
    if k:  # the oldest rows leave
        lc = np.empty(k, np.int8)
        ls = np.empty(k)
        lw = np.empty(k)
        for r in range(k):
            j = meta[0] + r
            j = j - cap if j >= cap else j
            lc[r], ls[r], lw[r] = ring_c[j], ring_s[j], ring_w[j]
            meta[4] -= ring_t[j]
        _add_masses(tot, lc, lw, -1.0)
        fold(u2, 0, _inner_u2(lc, ls, lw, gone) - _pairs(lc, ls, lw, gone, bkey, bcum, pkey, pcum, meta), 0.0)
        meta[0] = (meta[0] + k) % cap
        meta[1] -= k
        _into_pending(lc, ls, lw, gone, -1.0, pkey, pmass, pcnt, pcum, meta)
    fold(u2, 0, _inner_u2(cls, s, w, order) + _pairs(cls, s, w, order, bkey, bcum, pkey, pcum, meta), 0.0)
    for r in range(m):
        j = meta[0] + meta[1] + r
        j = j - cap if j >= cap else j
        ring_c[j], ring_s[j], ring_w[j], ring_t[j] = cls[r], s[r], w[r], flags[r]
        if flags[r]:
            meta[4] += 1
            meta[5] = 1
    meta[1] += m
    _add_masses(tot, cls, w, 1.0)
    _into_pending(cls, s, w, order, 1.0, pkey, pmass, pcnt, pcum, meta)
