"""Certified bounds on the average precision of binned rank items.

Items ``[lo, hi]`` sorted by ``(lo, hi)`` with masses ``ab``; ``AP = (1 / P) sum_g pos_g TP_g / (TP_g + FP_g)`` over
groups of tied scores from the top. Items whose ranges overlap or touch chain into blocks, each above every lower block
whatever the order inside; with ``p``, ``n`` a block's masses and ``J``, ``K`` those above it, only its own share
depends on that order, so the bounds of the sum are the sums of the blocks' bounds:

* upper: every positive first, ``p (J + p) / (J + p + K)``;
* lower, counts: every negative first, ``p - c (H(J + c + p) - H(J + c))`` with ``c = K + n`` (``H`` harmonic);
* lower, weights: the infimum ``p - c log(1 + p / (J + c))``.

Harmonic differences are summed term by term above 1/256, else from the asymptotic series (next term below 1.4e-17
added); the caller widens the sums by a relative 1e-9 and an absolute 1e-12.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

_DIRECT = 256.0  # terms 1/(m + i) of a harmonic difference are summed one by one below this m + i


@kernel
def harmonic_gap(m, p):
    """An upper estimate of ``sum_{i=1..p} 1 / (m + i)`` within a few ulps plus 1.4e-17."""
    s = 0.0
    i = 1.0
    while i <= p and m + i < _DIRECT:
        s += 1.0 / (m + i)
        i += 1.0
    if i <= p:
        # sum_{j=i..p} 1/(m + j) = H(b) - H(a), a = m + i - 1 >= 255, b = m + p:
        # H(x) = log x + gamma + 1/(2x) - 1/(12x^2) + 1/(120x^4) - e, 0 < e < 1/(252x^6)
        a = m + i - 1.0
        b = m + p
        ia = 1.0 / a
        ib = 1.0 / b
        a2 = ia * ia
        b2 = ib * ib
        s += (
            math.log1p((b - a) * ia)
            + 0.5 * (ib - ia)
            - (b2 - a2) / 12.0
            + (b2 * b2 - a2 * a2) / 120.0
            + a2 * a2 * a2 / 252.0
        )
    return s


@kernel
def average_precision_sums(lo, hi, ab, weighted):
    """``(lower, upper, total_pos, exact)``: ``lower / P <= AP <= upper / P`` before widening; ``exact`` when every
    block holding positives is one point. ``weighted``: the integral bound, else the harmonic one.
    """
    m = lo.shape[0]
    bp = np.empty(m, np.float64)
    bn = np.empty(m, np.float64)
    point = np.empty(m, np.bool_)
    g = 0
    top = -np.inf
    for i in range(m):
        p = float(ab[0, i])
        q = float(ab[1, i])
        if g > 0 and lo[i] <= top:  # overlaps or touches the block so far
            bp[g - 1] += p
            bn[g - 1] += q
            point[g - 1] = False
            if hi[i] > top:
                top = hi[i]
        else:
            bp[g] = p
            bn[g] = q
            point[g] = lo[i] == hi[i]
            top = hi[i]
            g += 1
    lower = 0.0
    upper = 0.0
    total = 0.0
    exact = True
    J = 0.0
    K = 0.0
    for t in range(g - 1, -1, -1):
        p = bp[t]
        q = bn[t]
        if p > 0.0:
            if point[t]:
                share = p * ((J + p) / (J + p + K + q))
                lower += share
                upper += share
            else:
                exact = False
                upper += p * ((J + p) / (J + p + K))
                c = K + q
                if c > 0.0:
                    if weighted:
                        lower += p - c * math.log1p(p / (J + c))
                    else:
                        lower += p - c * harmonic_gap(J + c, p)
                else:
                    lower += p
            total += p
        J += p
        K += q
    return max(lower, 0.0), upper, total, exact
