"""Kernels of the error quantiles: a batch's errors, and pinball totals over a sorted run."""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add
from .keys import bits_of, key_of


@kernel
def error_values(y, p, absolute, out):
    """``y - p`` (its absolute value if ``absolute``) into ``out``; ``(status, row)``: 1 a
    ``y`` not finite, 2 a ``p``, 3 a difference past float64's range at ``row``, else 0."""
    for i in range(y.shape[0]):
        if not (y[i] - y[i] == 0.0):
            return 1, i
        if not (p[i] - p[i] == 0.0):
            return 2, i
        r = y[i] - p[i]
        if not (r - r == 0.0):
            return 3, i
        out[i] = abs(r) if absolute else r
    return 0, -1


@kernel
def pinball_total(values, masses, at, alpha):
    """``sum m loss(v - at)`` over values ``v`` of masses ``m``, the pinball loss of level
    ``alpha`` (``alpha d`` where ``d >= 0``, else ``(alpha - 1) d``), compensated."""
    s = c = 0.0
    rows = values.shape[0]
    for start in range(0, rows, BLOCK):
        stop = rows if rows < start + BLOCK else start + BLOCK
        b = 0.0
        for i in range(start, stop):
            m = masses[i]
            d = values[i] - at
            loss = m * (alpha * d if d >= 0.0 else (alpha - 1.0) * d)
            b += 0.0 if m == 0 else loss  # no mass adds 0, even where d overflows
        s, c = add(s, c, b)
    return s + c if s - s == 0.0 else s  # an infinite total leaves a NaN error term


@kernel
def cumulative_walk(masses, before, targets, k, found, reached):
    """Walk the cumulative mass from ``before`` over ``masses`` (added one by one, as a
    running sum over the rows in sorted order adds them); for each of the sorted
    ``targets`` from the ``k``-th on that it reaches, write the first entry where it
    is reached into ``found`` and the cumulative mass there into ``reached``.
    Returns the cumulative mass at the end and the first target not reached."""
    c = before
    for j in range(masses.shape[0]):
        c = c + masses[j]  # targets are positive: first reached where some mass is
        while k < targets.shape[0] and targets[k] <= c:
            found[k] = j
            reached[k] = c
            k += 1
    return c, k


@kernel
def next_with_mass(masses, start, step):
    """The first entry from ``start`` on (``step`` -1: back) holding some mass, or -1."""
    j = start
    while 0 <= j < masses.shape[0]:
        if masses[j] != 0:
            return j
        j += step
    return -1


@kernel
def bucket_edges(bits, drop, top):
    """Replace float64 ``bits`` by those of their bucket's lowest value (``top``: its
    highest): buckets of keys equal but for their ``drop`` low bits, ranges of
    ``2**drop`` consecutive floats, of relative width below ``2**(drop - 52)``."""
    low = (np.uint64(1) << np.uint64(drop)) - np.uint64(1)
    for i in range(bits.shape[0]):
        k = key_of(bits[i])
        bits[i] = bits_of(k | low if top else k & ~low)
