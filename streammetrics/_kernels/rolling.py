"""The window of a rolling linear accumulator: its rows' terms in a ring, and their sums.

A row's terms (:mod:`streammetrics._protocol.terms`: ``width`` slots and
values) are kept in a ring of the window's rows with the row's weight and its
group (0: came without weights, 1: with). The window's sums per group are kept
as the state of :class:`~streammetrics._protocol.terms.Sums`: ``ints`` (each
slot's terms counted, exact; the counted slots' are the rows' counts),
``pairs`` (``w v`` per slot) and ``second`` (``w v**2`` or ``w**2 v**2``),
compensated; a row entering adds its terms, a row leaving subtracts them.
Subtracting leaves the error of every step in the compensation term, so after
``window`` rows have left the float sums are recomputed from the ring: their
error stays that of ``2 window`` compensated steps. Rows leave and enter as at
most two runs of consecutive ring slots.

``meta`` is ``int64[3]``: the ring's oldest row, the rows held, and the rows
that left since the float sums were last recomputed.
"""

from __future__ import annotations

from ._jit import inline, kernel
from .compensated import fold

__all__ = ["push_terms"]


@inline
def _run(ring_s, ring_v, ring_w, ring_g, lo, hi, sign, powers, summed, ints, rows, pairs, second):
    """Add (``sign`` 1.0) or subtract (-1.0: a float, so that both share one
    compiled helper) the terms of ring rows ``lo .. hi - 1`` from the sums."""
    size, width = powers.shape[0], ring_s.shape[1]
    step = 1 if sign > 0 else -1
    tally = ints.reshape(ints.size)
    weighted = 0
    for j in range(lo, hi):
        g = ring_g[j]
        weighted += g
        for t in range(width):
            tally[g * size + ring_s[j, t]] += step
    if summed[0] or weighted:
        squared = second.shape[0] > 0
        for j in range(lo, hi):
            g = ring_g[j]
            if summed[g]:
                w = ring_w[j]
                for t in range(width):
                    s, v = ring_s[j, t], ring_v[j, t]
                    fold(pairs[g], s, sign * (v * w), 0.0)
                    if squared and powers[s]:
                        fold(second[g], s, sign * ((v * v) * (w if powers[s] == 1 else w * w)), 0.0)
    rows[0] += step * (hi - lo - weighted)
    rows[1] += step * weighted


@inline
def _span(ring_s, ring_v, ring_w, ring_g, start, k, sign, powers, summed, ints, rows, pairs, second):
    """:func:`_run` over ``k`` rows of the ring from slot ``start`` on (wrapping round its end)."""
    end = min(start + k, ring_s.shape[0])
    # (end - end: a 0 Numba does not type as a literal, so both calls share one compiled helper)
    _run(ring_s, ring_v, ring_w, ring_g, start, end, sign, powers, summed, ints, rows, pairs, second)
    _run(ring_s, ring_v, ring_w, ring_g, end - end, start + k - end, sign, powers, summed, ints, rows, pairs, second)


@inline
def _copy(slots, values, w, flags, ring_s, ring_v, ring_w, ring_g, at, lo, hi):
    """Write rows ``lo .. hi - 1`` into the ring from slot ``at`` on (flat loops:
    a loop per row over its terms costs more)."""
    width = slots.shape[1]
    src_s, src_v = slots.reshape(slots.size), values.reshape(values.size)
    dst_s, dst_v = ring_s.reshape(ring_s.size), ring_v.reshape(ring_v.size)
    shift = (at - lo) * width
    for e in range(lo * width, hi * width):
        dst_s[shift + e] = src_s[e]
        dst_v[shift + e] = src_v[e]
    group = 1 if w.shape[0] else 0
    for i in range(lo, hi):
        ring_w[at - lo + i] = w[i] if group else 1.0
        ring_g[at - lo + i] = flags[i] if flags.shape[0] else group


@kernel
def push_terms(
    slots, values, w, flags, powers, summed, ring_s, ring_v, ring_w, ring_g, meta, ints, rows, pairs, second
):
    """Push ``m`` rows, at most the window's size (``slots``, ``values``:
    ``[m, width]``; weights ``w``, or empty for rows without; ``flags[i]``: the
    row's group, 1 if it came with a weight, or empty when ``w`` tells it) into
    the ring, the oldest rows leaving once it is full; ``summed[g]``: whether
    group ``g``'s float sums are kept."""
    cap, m = ring_s.shape[0], slots.shape[0]
    head, held = meta[0], meta[1]
    k = max(0, held + m - cap)  # the oldest rows leave
    if k == held:  # all of them: the sums start afresh
        ints[:] = 0
        rows[:] = 0
        pairs[:] = 0.0
        second[:] = 0.0
        meta[2] = 0
    else:
        _span(ring_s, ring_v, ring_w, ring_g, head, k, -1.0, powers, summed, ints, rows, pairs, second)
        meta[2] += k
    head = (head + k) % cap
    start = (head + held - k) % cap
    # (m - m: a 0 that is no literal, as in _span)
    _copy(slots, values, w, flags, ring_s, ring_v, ring_w, ring_g, start, m - m, min(m, cap - start))
    _copy(slots, values, w, flags, ring_s, ring_v, ring_w, ring_g, m - m, min(m, cap - start), m)
    _span(ring_s, ring_v, ring_w, ring_g, start, m, 1.0, powers, summed, ints, rows, pairs, second)
    meta[0], meta[1] = head, held - k + m
    if meta[2] >= cap:  # the sums afresh from the ring, oldest row first, where float sums are held
        meta[2] = 0
        pairs[:] = 0.0
        second[:] = 0.0
        if rows[1] or (rows[0] and summed[0]):
            ints[:] = 0
            rows[:] = 0
            _span(ring_s, ring_v, ring_w, ring_g, head, meta[1], 1.0, powers, summed, ints, rows, pairs, second)
