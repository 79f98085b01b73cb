"""An order-statistics tree over a window's scores: the Mann-Whitney U of the last rows.

The window's rows sit in a ring (class ``c``: 0 positive, 1 negative; score,
weight, whether it came with a weight, and the node of its score). Each
distinct score is a node of a treap kept in arrays: ``key``, ``f`` (``[node,
4]``: the node's positive and negative mass, and its subtree's), ``kid``
(left, right; node 0 is the empty tree, of mass 0) and ``cnt`` (the window's
rows at the node). A node's priority is a hash of its index, so the tree is
balanced in expectation whatever the order of the scores: a row enters or
leaves in one descent, ``O(log N)``, which also gives the opposite class's
mass below and above its score, hence its change to

    ``2U = sum over (positive, negative) pairs of w+ w- (2 [s+ > s-] + [s+ == s-])``

(midranks: ties count half). A node whose rows all left stays until the tree
is rebuilt from the ring, in order (``O(N)``, no sort): when the node arrays
are full, and, once weighted rows were seen, after each window of rows left
(the float masses then drift by the rounding of their additions and
subtractions, and a rebuild sums them afresh) or when the last weighted row
left (masses of rows without weights are integers, exact in float64).

``meta`` (``int64[8]``): root, nodes used, live nodes, the ring's oldest row,
rows held, rows that left since the last rebuild, weighted rows held, and
whether weighted rows entered since the last rebuild. ``u2`` and ``tot``
(positive, negative mass) are compensated pairs.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline_ir, kernel
from .compensated import add

__all__ = ["push_rows", "rebuild", "window_run"]

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


@inline_ir
def _prio(i):
    """A node's priority: SplitMix64 of its index."""
    z = np.uint64(i) * _M1
    z = (z ^ (z >> np.uint64(30))) * _M2
    z = (z ^ (z >> np.uint64(27))) * _M3
    return z ^ (z >> np.uint64(31))


@inline_ir
def _add2(pair, k, x):
    t, c = add(pair[k, 0], pair[k, 1], x)
    pair[k, 0] = t
    pair[k, 1] = c


@inline_ir
def _resum(f, kid, x):
    a, b = kid[x, 0], kid[x, 1]
    f[x, 2] = f[x, 0] + f[a, 2] + f[b, 2]
    f[x, 3] = f[x, 1] + f[a, 3] + f[b, 3]


@inline_ir
def _descend(c, s, w, key, f, kid, root, path):
    """Walk from the root to ``s``'s node, adding ``w`` to the subtree masses of
    class ``c`` on the way: ``(node or 0, depth, the opposite class's mass
    below s, above s, at s)``; the nodes passed in ``path``."""
    o = 1 - c
    x = root
    d = 0
    below = 0.0
    above = 0.0
    while x != 0:
        if d == path.shape[0]:
            raise RuntimeError("order-statistics tree deeper than its path buffer")
        path[d] = x
        d += 1
        f[x, 2 + c] += w
        k = key[x]
        if s < k:
            above += f[x, o] + f[kid[x, 1], 2 + o]
            x = kid[x, 0]
        elif s > k:
            below += f[x, o] + f[kid[x, 0], 2 + o]
            x = kid[x, 1]
        else:
            return x, d, below + f[kid[x, 0], 2 + o], above + f[kid[x, 1], 2 + o], f[x, o]
    return 0, d, below, above, 0.0


@inline_ir
def _insert(c, s, w, key, f, kid, cnt, meta, path):
    """Add one row; returns its node and its pairs' weight (``2 below + at`` for
    a positive, ``2 above + at`` for a negative)."""
    x, d, below, above, at = _descend(c, s, w, key, f, kid, meta[0], path)
    gain = 2.0 * below + at if c == 0 else 2.0 * above + at
    if x != 0:
        f[x, c] += w
        if cnt[x] == 0:
            meta[2] += 1
        cnt[x] += 1
        return x, gain
    z = meta[1] + 1
    meta[1] = z
    meta[2] += 1
    key[z] = s
    f[z, 0] = f[z, 1] = f[z, 2] = f[z, 3] = 0.0
    f[z, c] = w
    f[z, 2 + c] = w
    kid[z, 0] = kid[z, 1] = 0
    cnt[z] = 1
    if d == 0:
        meta[0] = z
        return z, gain
    p = path[d - 1]
    kid[p, 0 if s < key[p] else 1] = z
    pz = _prio(z)
    while d > 0:
        p = path[d - 1]
        if _prio(p) >= pz:
            break
        if kid[p, 0] == z:  # rotate z above p
            kid[p, 0] = kid[z, 1]
            kid[z, 1] = p
        else:
            kid[p, 1] = kid[z, 0]
            kid[z, 0] = p
        _resum(f, kid, p)
        _resum(f, kid, z)
        d -= 1
        if d == 0:
            meta[0] = z
        else:
            g = path[d - 1]
            kid[g, 0 if kid[g, 0] == p else 1] = z
    return z, gain


@inline_ir
def _remove(c, s, w, key, f, kid, cnt, meta, path):
    """Take one row out of its node (which stays, maybe empty); its pairs' weight."""
    x, _, below, above, at = _descend(c, s, -w, key, f, kid, meta[0], path)
    f[x, c] -= w
    cnt[x] -= 1
    if cnt[x] == 0:
        meta[2] -= 1
    return 2.0 * below + at if c == 0 else 2.0 * above + at


@kernel
def push_rows(cls, s, w, flags, key, f, kid, cnt, ring_c, ring_s, ring_w, ring_t, ring_x, meta, u2, tot, path):
    """Push rows (class ``cls``: 0 positive, 1 negative; scores ``s``; weights
    ``w``, empty for rows without weights; ``flags``: which rows came with weights,
    empty for all of them) into the window, the oldest rows
    leaving once the ring is full. Returns the rows pushed: fewer when the
    node arrays are full of live nodes (the caller grows them and pushes the
    rest)."""
    cap = ring_c.shape[0]
    weighted = w.shape[0] > 0
    flagged = flags.shape[0] > 0
    for i in range(cls.shape[0]):
        if meta[4] == cap:
            j = meta[3]
            c, wj = ring_c[j], ring_w[j]
            gain = _remove(c, ring_s[j], wj, key, f, kid, cnt, meta, path)
            _add2(u2, 0, -wj * gain)
            _add2(tot, c, -wj)
            meta[3] = j + 1 if j + 1 < cap else 0
            meta[4] -= 1
            meta[5] += 1
            meta[6] -= ring_t[j]
            if meta[7] and (meta[6] == 0 or meta[5] >= cap):
                rebuild(key, f, kid, cnt, ring_c, ring_w, ring_x, meta, u2, tot)
        if meta[1] + 1 >= key.shape[0]:
            if 2 * meta[2] + 2 > key.shape[0]:
                return i
            rebuild(key, f, kid, cnt, ring_c, ring_w, ring_x, meta, u2, tot)
        c = cls[i]
        wi = w[i] if weighted else 1.0
        ti = (flags[i] if flagged else 1) if weighted else 0
        x, gain = _insert(c, s[i], wi, key, f, kid, cnt, meta, path)
        _add2(u2, 0, wi * gain)
        _add2(tot, c, wi)
        j = meta[3] + meta[4]
        j = j - cap if j >= cap else j
        ring_c[j], ring_s[j], ring_w[j], ring_x[j] = c, s[i], wi, x
        ring_t[j] = ti
        meta[4] += 1
        if ti:
            meta[6] += 1
            meta[7] = 1
    return cls.shape[0]


@kernel
def rebuild(key, f, kid, cnt, ring_c, ring_w, ring_x, meta, u2, tot):
    """Rebuild the tree of the window's live scores, in order, with every mass,
    ``u2`` and ``tot`` summed afresh from the ring."""
    order = np.empty(meta[2], np.int64)
    stack = np.empty(meta[1] + 1, np.int64)
    top, k, x = 0, 0, meta[0]
    while top > 0 or x != 0:  # in-order walk, live nodes kept
        while x != 0:
            stack[top] = x
            top += 1
            x = kid[x, 0]
        top -= 1
        x = stack[top]
        if cnt[x] > 0:
            order[k] = x
            k += 1
        x = kid[x, 1]
    new = np.zeros(meta[1] + 1, np.int64)
    for i in range(k):
        new[order[i]] = i + 1
    keys = key[order[:k]]
    key[1 : k + 1] = keys
    f[: k + 1] = 0.0
    cnt[: k + 1] = 0
    cap = ring_c.shape[0]
    for r in range(meta[4]):
        j = meta[3] + r
        j = j - cap if j >= cap else j
        x = new[ring_x[j]]
        ring_x[j] = x
        f[x, ring_c[j]] += ring_w[j]
        cnt[x] += 1
    # the Cartesian tree of the priorities over nodes 1..k (in key order): a
    # node leaves the stack after all its descendants, its sums then complete
    top = 0
    for i in range(1, k + 1):
        pi = _prio(i)
        last = 0
        while top > 0 and _prio(stack[top - 1]) < pi:
            top -= 1
            last = stack[top]
            _resum(f, kid, last)
        kid[i, 0] = last
        kid[i, 1] = 0
        if top > 0:
            kid[stack[top - 1], 1] = i
        stack[top] = i
        top += 1
    root = 0
    while top > 0:
        top -= 1
        root = stack[top]
        _resum(f, kid, root)
    meta[0] = root
    meta[1] = k
    meta[2] = k
    meta[5] = 0
    meta[7] = 0
    u2[:] = 0.0
    tot[:] = 0.0
    neg = np.zeros((1, 2))
    for i in range(1, k + 1):
        _add2(u2, 0, f[i, 0] * (2.0 * (neg[0, 0] + neg[0, 1]) + f[i, 1]))
        _add2(neg, 0, f[i, 1])
        _add2(tot, 0, f[i, 0])
        _add2(tot, 1, f[i, 1])


@kernel
def window_run(key, f, kid, cnt, root, live):
    """``(scores, ab)``: the window's distinct scores, ascending, and each one's
    positive and negative mass (``[2, m]``)."""
    scores = np.empty(live)
    ab = np.empty((2, live))
    stack = np.empty(key.shape[0], np.int64)
    top, k, x = 0, 0, root
    while top > 0 or x != 0:
        while x != 0:
            stack[top] = x
            top += 1
            x = kid[x, 0]
        top -= 1
        x = stack[top]
        if cnt[x] > 0:
            scores[k] = key[x]
            ab[0, k] = f[x, 0]
            ab[1, k] = f[x, 1]
            k += 1
        x = kid[x, 1]
    return scores, ab
