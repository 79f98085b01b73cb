"""Sorted runs: built from sorted keys, merged in memory, and merged from records of files."""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel
from .keys import TOP, ZERO, bits_of, key_of


@kernel
def run_into(b1, ab1, kp, vp, kn, vn, bits, ab):
    """Merge the run ``(s1, ab1)`` (scores as bits ``b1``) with sorted keys ``kp``, ``kn`` of weights ``vp``, ``vn``
    (``None``: counts, a compiled loop of its own) into ``bits``, ``ab``; returns the length.
    """
    m1 = b1.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    r = 0
    i = 0
    j = 0
    m = -1
    last = ZERO
    while r < m1 or i < n1 or j < n0:
        a = kp[i] if i < n1 else TOP
        b = kn[j] if j < n0 else TOP
        c = key_of(b1[r]) if r < m1 else TOP
        k = a if a < b else b  # (not min(): its three-key form is a compile of its own)
        if c < k:
            k = c
        tr = c == k
        tp = a == k
        tn = b == k
        if m < 0 or k != last:
            m += 1
            bits[m] = bits_of(k)
            ab[0, m] = 0
            ab[1, m] = 0
            last = k
        if tr:
            ab[0, m] += ab1[0, r]
            ab[1, m] += ab1[1, r]
        if vp is None:  # no branch on the labels
            ab[0, m] += tp
            ab[1, m] += tn
        else:
            if tp:
                ab[0, m] += vp[i]
            if tn:
                ab[1, m] += vn[j]
        r += tr
        i += tp
        j += tn
    return m + 1


@kernel
def merge_into(s1, ab1, s2, ab2, s, ab):
    """Merge two runs into ``s``, ``ab``, adding the masses of shared scores; returns the length."""
    m1 = s1.shape[0]
    m2 = s2.shape[0]
    i = 0
    j = 0
    m = 0
    while i < m1 or j < m2:
        a = s1[i] if i < m1 else np.inf  # (scores are finite: a run used up reads as +inf)
        b = s2[j] if j < m2 else np.inf
        if a <= b:
            s[m] = a
            ab[0, m] = ab1[0, i]
            ab[1, m] = ab1[1, i]
            i += 1
            if a == b:
                ab[0, m] += ab2[0, j]
                ab[1, m] += ab2[1, j]
                j += 1
        else:
            s[m] = b
            ab[0, m] = ab2[0, j]
            ab[1, m] = ab2[1, j]
            j += 1
        m += 1
    return m


@inline
def _beats(head, rank, a, b):
    """Source ``a``'s head comes first: a lower score, or the same score and a lower index (used up: ``+inf``)."""
    x = head[a]
    y = head[b]
    return x < y or (x == y and rank[a] < rank[b])


@inline
def _next_head(sc, pos, ends, head, rank, i, leaves):
    """Advance source ``i`` past its head; read its next score, or mark it used up."""
    r = pos[i] + 1
    pos[i] = r
    if r < ends[i]:
        head[i] = sc[r, 0]
    else:
        head[i] = np.inf
        rank[i] = i + leaves


@inline
def _replay(tree, head, rank, w, leaves):
    """Replay source ``w`` from its leaf: losers stay, the winner goes up to ``tree[0]``."""
    n = (leaves + w) >> 1
    while n >= 1:
        t = tree[n]
        if _beats(head, rank, t, w):
            tree[n] = w
            w = t
        n >>= 1
    tree[0] = w


@kernel
def merge_records(sc, val, starts, ends, s, out):
    """Merge ``k`` sorted runs of records (rows ``starts[i]:ends[i]`` of ``sc``/``val``, views of the same ``(T, 3)``
    records) into ``s``, ``out`` by a tree of losers ordered by score then run, so a score's masses are added in
    the runs' order. Returns the merged length.
    """
    k = starts.shape[0]
    if k == 0:
        return 0
    leaves = 1
    while leaves < k:
        leaves *= 2
    pos = np.zeros(leaves, np.int64)
    head = np.full(leaves, np.inf)
    rank = np.arange(leaves, 2 * leaves)  # the padding leaves are used up from the start
    for i in range(k):
        pos[i] = starts[i]
        if starts[i] < ends[i]:
            head[i] = sc[starts[i], 0]
            rank[i] = i
    # the first tournament: winners bottom up, each node keeping its loser
    win = np.empty(2 * leaves, np.int64)
    tree = np.empty(leaves, np.int64)
    for i in range(leaves):
        win[leaves + i] = i
    for n in range(leaves - 1, 0, -1):
        a = win[2 * n]
        b = win[2 * n + 1]
        if _beats(head, rank, a, b):
            win[n] = a
            tree[n] = b
        else:
            win[n] = b
            tree[n] = a
    tree[0] = win[1] if leaves > 1 else 0
    m = 0
    while rank[tree[0]] < leaves:
        i = tree[0]
        r = pos[i]
        v = head[i]
        p = val[r, 1]
        q = val[r, 2]
        while True:  # take the winner, then every other run's entry of the same score
            _next_head(sc, pos, ends, head, rank, i, leaves)
            _replay(tree, head, rank, i, leaves)
            i = tree[0]
            if rank[i] >= leaves or head[i] != v:
                break
            r = pos[i]
            p = p + val[r, 1]
            q = q + val[r, 2]
        s[m] = v
        out[0, m] = p
        out[1, m] = q
        m += 1
    return m


@kernel
def records_cut(sc, a, b, bound):
    """The first row in ``a:b`` of records ``sc`` whose score is above ``bound``."""
    lo = a
    hi = b
    while lo < hi:
        mid = (lo + hi) >> 1
        x = sc[mid, 0]
        if x <= bound:
            lo = mid + 1
        else:
            hi = mid
    return lo
