"""Certified bounds on the average precision of binned rank items.

Items are those of a bounded rank state (see :mod:`.rank`): score ranges
``[lo, hi]`` sorted by ``(lo, hi)`` (a point when ``lo == hi``) with their
positive and negative mass ``ab``. Average precision (scikit-learn's step
definition, tied rows called together) is

    ``AP = (1 / P) sum_g pos_g * TP_g / (TP_g + FP_g)``

over the groups ``g`` of tied scores from the highest down, ``TP_g`` and
``FP_g`` the positive and negative mass scoring at least ``g``'s score.

**Blocks.** Items whose closed ranges overlap (or touch) are chained into
*blocks*: the connected components of the ranges, found in one pass over the
items in ``(lo, hi)`` order. Two blocks are strictly apart, so every row of a
block scores above every row of a lower block, whatever the order of the rows
inside each block. A block that is one point item is known exactly; any other
block is treated as one bin whose rows may come in *any* weak order (a
superset of the orders its items allow, so the bounds below hold for every
order the items allow).

**Independence.** Let a block hold positive mass ``p`` and negative mass
``n``, with ``J`` positive and ``K`` negative mass in the blocks above it.
The precision of a positive row outside the block depends only on counts
that contain the whole block or none of it, so it does not depend on the
order inside the block; the block's own share of the sum is
``sum over its positive rows r of w_r TP_r / (TP_r + FP_r)``. The bounds of
the sum are the sums of the blocks' bounds.

**Upper bound.** ``t / (t + f)`` rises with ``t`` and falls with ``f``. Every
positive row of the block has ``TP_r <= J + p`` and ``FP_r >= K``, so its
precision is at most ``(J + p) / (J + p + K)``; all the block's positives
tied above its negatives reach it. The block's share is at most
``p (J + p) / (J + p + K)``, and this is attained.

**Lower bound, counts.** Number the block's positives 1..p from the top (ties
in any order). The group of the ``i``-th holds at least positives 1..i, so
``TP >= J + i``, and at most all the block's negatives, so ``FP <= K + n``.
Its precision is at least ``(J + i) / (J + i + K + n)``, attained by every
negative first and the positives at distinct scores below them. The share is
at least ``sum_{i=1..p} (J + i) / (J + i + c) = p - c (H(J + c + p) - H(J + c))``
with ``c = K + n`` and ``H`` the harmonic numbers.

**Lower bound, weights.** With weights, the block's positive mass may be any
number of rows of any weights: with the rows from the top, the ``r``-th has
``TP >= J + T_r`` where ``T_r`` is the block's positive mass down to and
including it, and the share is at least ``sum_r w_r f(T_r)`` with the rising
``f(x) = (J + x) / (J + x + c)``: a right Riemann sum, at least
``integral_0^p f = p - c log(1 + p / (J + c))`` (the infimum, over ever
finer rows).

**Rounding.** The harmonic differences are summed term by term while the
terms are above 1/256 and from the asymptotic series of ``H`` beyond (its
next term, below 1.4e-17, is added to the upper estimate the lower bound
uses); the caller widens the sums by a relative 1e-9 and an absolute 1e-12
to cover the float rounding of the masses and of these sums.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

__all__ = ["average_precision_sums", "harmonic_gap"]

#: terms 1/(m + i) of a harmonic difference are summed one by one below this m + i
_DIRECT = 256.0


@kernel
def harmonic_gap(m, p):
    """An upper estimate of ``sum_{i=1..p} 1 / (m + i)`` (``m >= 0``, ``p >= 0``
    whole numbers as floats), within a few ulps plus 1.4e-17 of the sum."""
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
        s += (math.log1p((b - a) * ia) + 0.5 * (ib - ia) - (b2 - a2) / 12.0
              + (b2 * b2 - a2 * a2) / 120.0 + a2 * a2 * a2 / 252.0)
    return s


@kernel
def average_precision_sums(lo, hi, ab, weighted):
    """``(lower, upper, total_pos, exact)`` for items sorted by ``(lo, hi)``:
    ``lower / P <= AP <= upper / P`` (before the caller's widening) with
    ``P = total_pos``; ``exact`` when every block holding positives is a single
    point (then the order inside the other blocks cannot change the AP, and
    the two sums are the point estimate's). ``weighted`` takes the weights' lower
    bound (an integral) instead of the counts' (a harmonic sum)."""
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
    return (0.0 if 0.0 > lower else lower), upper, total, exact
