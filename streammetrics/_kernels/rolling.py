"""The window of a rolling linear accumulator: its rows' terms in a ring, and their sums.

A row's terms (:mod:`streammetrics._protocol.terms`: ``width`` slots and
values) are kept in a ring of the window's rows with the row's weight and its
group (0: came without weights, 1: with); the ring's slots and values are flat
(``width`` entries a row, row after row). The window's sums per group are kept
as the state of :class:`~streammetrics._protocol.terms.Sums`: ``ints`` (each
slot's terms counted, exact; the counted slots' are the rows' counts),
``pairs`` (``w v`` per slot) and ``second`` (``w v**2`` or ``w**2 v**2``),
compensated; a row entering adds its terms, a row leaving subtracts them.
Subtracting leaves the error of every step in the compensation term, so after
``window`` rows have left the float sums are recomputed from the ring: their
error stays that of ``2 window`` compensated steps.

``meta`` is ``int64[3]``: the ring's oldest row, the rows held, and the rows
that left since the float sums were last recomputed.
"""

from __future__ import annotations

from ._jit import kernel
from .compensated import fold

__all__ = ["push_terms"]


@kernel
def push_terms(
    slots, values, w, flags, powers, summed, ring_s, ring_v, ring_w, ring_g, meta, ints, rows, pairs, second
):
    """Push ``m`` rows, at most the window's size (``slots``, ``values``: their
    terms, flat; weights ``w``, or empty for rows without; ``flags[i]``: the
    row's group, 1 if it came with a weight, or empty when ``w`` tells it) into
    the ring (``ring_s``, ``ring_v`` flat, ``ring_w``, ``ring_g`` a slot a
    row), the oldest rows leaving once it is full; ``summed[g]``: whether group
    ``g``'s float sums are kept.

    One loop serves the rows leaving, the new rows' copy and the rows entering
    (or, when the sums are made afresh, the whole window), each over at most
    two runs of ring slots: written once, it compiles in about half the time of
    helpers called per run, and the flat arrays need no reshaping (which
    compiles too)."""
    size, cap = powers.shape[0], ring_g.shape[0]
    width = max(1, ring_s.shape[0] // cap)
    m = slots.shape[0] // width
    head, held = meta[0], meta[1]
    k = max(0, held + m - cap)  # the oldest rows leave
    meta[2] += k
    due = meta[2] >= cap  # a window of rows left since the float sums were made
    # the sums afresh from the ring: every row leaves, or one has and float sums are held
    afresh = k == held or (due and (summed[0] > 0 or rows[1] > 0 or w.shape[0] > 0))
    start = (head + held) % cap  # the first new row's slot
    group = 1 if w.shape[0] else 0
    squared = second.shape[0] > 0
    for phase in range(3):  # the rows leaving, the new rows into the ring, the rows entering
        first, count, sign, step = head, k, -1.0, -1
        if phase == 0 and afresh:
            continue
        if phase > 0:
            first, count, sign, step = start, m, 1.0, 1
        if phase == 2 and (afresh or due):
            meta[2] = 0
            for g in range(pairs.shape[0]):
                for s in range(size):
                    pairs[g, s, 0], pairs[g, s, 1] = 0.0, 0.0
                    if squared:
                        second[g, s, 0], second[g, s, 1] = 0.0, 0.0
                    if afresh:
                        ints[g, s] = 0
                if afresh:
                    rows[g] = 0
            if afresh:
                first, count = (head + k) % cap, held - k + m
        weighted = 0
        for part in range(2):  # the ring slots first .. first + count - 1, in at most two runs
            lo = first if part == 0 else 0
            hi = min(first + count, cap) if part == 0 else first + count - cap
            if phase == 1:
                shift = lo - (0 if part == 0 else cap - first)  # slot j holds new row j - shift
                for e in range(lo * width, hi * width):
                    ring_s[e] = slots[e - shift * width]
                    ring_v[e] = values[e - shift * width]
                for j in range(lo, hi):
                    ring_w[j] = w[j - shift] if group else 1.0
                    ring_g[j] = flags[j - shift] if flags.shape[0] else group
                continue
            for j in range(lo, hi):
                g = ring_g[j]
                weighted += g
                for t in range(width):
                    ints[g, ring_s[j * width + t]] += step
            if summed[0] or weighted:
                for j in range(lo, hi):
                    g = ring_g[j]
                    if summed[g]:
                        wj = ring_w[j]
                        for t in range(width):
                            s, v = ring_s[j * width + t], ring_v[j * width + t]
                            fold(pairs[g], s, sign * (v * wj), 0.0)
                            if squared and powers[s]:
                                fold(second[g], s, sign * ((v * v) * (wj if powers[s] == 1 else wj * wj)), 0.0)
        if phase != 1:
            rows[0] += step * (count - weighted)
            rows[1] += step * weighted
    meta[0], meta[1] = (head + k) % cap, held - k + m
