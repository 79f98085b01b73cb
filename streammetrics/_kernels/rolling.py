"""The window of a rolling linear accumulator: its rows' terms in a ring, and their sums.

A row's terms (:mod:`streammetrics._protocol.terms`: ``width`` slots and
values) are kept in a ring of the window's rows with the row's weight and its
group (0: came without weights, 1: with). The window's sums per group are kept
as the state of :class:`~streammetrics._protocol.terms.Sums`: ``ints`` (counts
of the counted slots, exact), ``pairs`` (``w v`` per slot) and ``second``
(``w v**2`` or ``w**2 v**2``), compensated; a row entering adds its terms, a
row leaving subtracts them. Subtracting leaves the error of every step in the
compensation term, so after ``window`` rows have left the sums are recomputed
from the ring: their error stays that of ``2 window`` compensated steps.

``meta`` is ``int64[3]``: the ring's oldest row, the rows held, and the rows
that left since the sums were last recomputed.
"""

from __future__ import annotations

from ._jit import inline_ir, kernel
from .compensated import fold

__all__ = ["push_terms", "recompute_sums"]


@inline_ir
def _apply(ring_s, ring_v, ring_w, ring_g, j, sign, counted, powers, summed, ints, rows, pairs, second):
    """Add (``sign`` 1) or subtract (-1) ring row ``j``'s terms from the sums."""
    g = ring_g[j]
    w = ring_w[j]
    rows[g] += sign
    sums = summed[g] != 0
    squared = second.shape[0] > 0
    for t in range(ring_s.shape[1]):
        s = ring_s[j, t]
        ints[g, s] += sign * counted[s]
        if sums:
            v = ring_v[j, t]
            fold(pairs[g], s, sign * (v * w), 0.0)
            if squared and powers[s]:
                fold(second[g], s, sign * ((v * v) * (w if powers[s] == 1 else w * w)), 0.0)


@kernel
def push_terms(
    slots, values, w, flags, counted, powers, summed, ring_s, ring_v, ring_w, ring_g, meta, ints, rows, pairs, second
):
    """Push rows (``slots``, ``values``: ``[m, width]``; weights ``w``, 1 for rows
    without; ``flags[i]``: the row's group, 1 if it came with a weight) into the
    ring, the oldest rows leaving once it is full; ``summed[g]``: whether group
    ``g``'s float sums are kept. Recomputes the float sums from the ring once
    a window of rows left since the last time."""
    cap = ring_s.shape[0]
    for i in range(slots.shape[0]):
        if meta[1] == cap:
            j = meta[0]
            _apply(ring_s, ring_v, ring_w, ring_g, j, -1, counted, powers, summed, ints, rows, pairs, second)
            meta[0] = j + 1 if j + 1 < cap else 0
            meta[1] -= 1
            meta[2] += 1
        j = meta[0] + meta[1]
        j = j - cap if j >= cap else j
        for t in range(slots.shape[1]):
            ring_s[j, t] = slots[i, t]
            ring_v[j, t] = values[i, t]
        ring_w[j] = w[i]
        ring_g[j] = flags[i]
        meta[1] += 1
        _apply(ring_s, ring_v, ring_w, ring_g, j, 1, counted, powers, summed, ints, rows, pairs, second)
    if meta[2] >= cap:
        recompute_sums(counted, powers, summed, ring_s, ring_v, ring_w, ring_g, meta, ints, rows, pairs, second)


@kernel
def recompute_sums(counted, powers, summed, ring_s, ring_v, ring_w, ring_g, meta, ints, rows, pairs, second):
    """The window's sums recomputed from the ring, oldest row first."""
    cap = ring_s.shape[0]
    ints[:] = 0
    rows[:] = 0
    pairs[:] = 0.0
    second[:] = 0.0
    for k in range(meta[1]):
        j = meta[0] + k
        j = j - cap if j >= cap else j
        _apply(ring_s, ring_v, ring_w, ring_g, j, 1, counted, powers, summed, ints, rows, pairs, second)
    meta[2] = 0
