"""Kernels of the confidence intervals: the beta distribution and DeLong's variance.

* :func:`beta_cdf` is the regularized incomplete beta function
  ``I_x(a, b)``, evaluated by its continued fraction (modified Lentz), on the
  side of ``x`` where the fraction converges quickly (``x < (a + 1) / (a + b + 2)``,
  else through ``I_x(a, b) = 1 - I_{1-x}(b, a)``);
* :func:`beta_quantile` inverts it by bisection on ``[0, 1]`` down to
  adjacent floats (the CDF is monotone, so bisection cannot fail), as the
  Clopper-Pearson interval needs;
* :func:`delong_sums` gives the placement values' sums of squares of
  DeLong et al. (1988) from the points of a rank state, in O(points);
  :func:`class_squares` the sums of squared weights per class that turn
  them into a variance for weighted rows.

Relative accuracy of ``beta_cdf`` is about 1e-14 for ``a, b`` up to 1e4 and
degrades slowly with size (the log-beta front factor is a difference of
``lgamma`` values of magnitude ``a ln a``): about 1e-9 at ``a + b = 1e9``.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add, fold

__all__ = ["beta_cdf", "beta_quantile", "delong_sums", "delong_sums_about", "class_squares"]

_TINY = 1e-300
_EPS = 1e-16


@kernel
def _beta_fraction(x, a, b):
    """The continued fraction of ``I_x(a, b)`` (without its front factor)."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    limit = 200 + 20 * np.int64(math.sqrt(b if b > a else a))
    for m in range(1, limit + 1):
        m2 = 2.0 * m
        # even step
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        h *= d * c
        # odd step
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


@kernel
def beta_cdf(x, a, b):
    """The regularized incomplete beta ``I_x(a, b)`` for ``a, b > 0``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (a * math.log(x) + b * math.log1p(-x)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


@kernel
def beta_quantile(q, a, b):
    """The ``x`` in [0, 1] with ``I_x(a, b) = q``, by bisection to adjacent floats."""
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    lo = 0.0
    hi = 1.0
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@kernel
def class_squares(y, w, pairs):
    """Add the squared weights of the positives (``y == 1``) and of the others into
    rows 0 and 1 of the compensated ``(2, 2)`` pairs."""
    n = y.shape[0]
    sp = cp = sn = cn = 0.0
    for start in range(0, n, BLOCK):
        stop = n if n < start + BLOCK else start + BLOCK
        bp = bn = 0.0
        for i in range(start, stop):
            q = w[i] * w[i]
            if y[i] == 1:
                bp += q
            else:
                bn += q
        sp, cp = add(sp, cp, bp)
        sn, cn = add(sn, cn, bn)
    fold(pairs, np.intp(0), sp, cp)
    fold(pairs, np.intp(1), sn, cn)


@kernel
def delong_sums(ab):
    """``(theta, P, N, ss_pos, ss_neg)`` of the points ``ab`` (scores increasing).

    ``ab[0, k]`` and ``ab[1, k]`` are the positive and negative mass at the
    k-th distinct score (counts, or sums of weights), ``P`` and ``N`` their
    totals. The placement values of the rows at score ``k`` are

    * a positive's: ``V10_k = (negative mass below + ab[1, k] / 2) / N``,
    * a negative's: ``V01_k = (positive mass above + ab[0, k] / 2) / P``,

    ``theta = sum_k ab[0, k] V10_k / P`` is the AUC, and the centred sums of
    squares are ``ss_pos = sum_k ab[0, k] (V10_k - theta)**2`` and
    ``ss_neg = sum_k ab[1, k] (V01_k - theta)**2``; DeLong's variance of
    unweighted rows is ``ss_pos / (P (P - 1)) + ss_neg / (N (N - 1))``.
    Without a positive or a negative, ``theta`` is 0 and the sums of squares
    are 0.

    Two passes: the totals, then every placement value. The squares are
    summed about a centre ``c`` and corrected by the exact identity
    ``sum a (V - theta)**2 = sum a (V - c)**2 - P (theta - c)**2``; with ``c``
    the AUC (:func:`delong_sums_about`; 1/2 here) the correction is at
    rounding level and no digits cancel. Sums are blockwise (naive inside
    blocks of ``BLOCK`` points, one compensated step per block) and the
    running masses a compensated base plus a naive offset inside the block.
    """
    return delong_sums_about(ab, 0.5)


@kernel
def delong_sums_about(ab, centre):
    """:func:`delong_sums` with the squares taken about ``centre`` first (the
    AUC when known: then the final correction is at rounding level)."""
    m = ab.shape[1]
    sp = cp = sn = cn = 0.0
    for start in range(0, m, BLOCK):
        stop = m if m < start + BLOCK else start + BLOCK
        bp = bn = 0.0
        for k in range(start, stop):
            bp += float(ab[0, k])
            bn += float(ab[1, k])
        sp, cp = add(sp, cp, bp)
        sn, cn = add(sn, cn, bn)
    P = sp + cp
    N = sn + cn
    if not (P > 0.0 and N > 0.0):
        return 0.0, P, N, 0.0, 0.0
    below_s = below_c = 0.0  # negative mass below the block
    above_s, above_c = sp, cp  # positive mass at or above the block
    t_s = t_c = 0.0  # sum a (V10 - c)
    u_s = u_c = 0.0  # sum b (V01 - c)
    q_s = q_c = 0.0  # sum a (V10 - c)**2
    r_s = r_c = 0.0  # sum b (V01 - c)**2
    for start in range(0, m, BLOCK):
        stop = m if m < start + BLOCK else start + BLOCK
        base_below = below_s + below_c
        base_above = above_s + above_c
        local_b = local_a = 0.0
        bt = bu = bq = br = 0.0
        for k in range(start, stop):
            a = float(ab[0, k])
            b = float(ab[1, k])
            v10 = ((base_below + local_b) + 0.5 * b) / N
            v01 = ((base_above - local_a) - 0.5 * a) / P
            d10 = v10 - centre
            d01 = v01 - centre
            bt += a * d10
            bu += b * d01
            bq += a * (d10 * d10)
            br += b * (d01 * d01)
            local_b += b
            local_a += a
        below_s, below_c = add(below_s, below_c, local_b)
        above_s, above_c = add(above_s, above_c, -local_a)
        t_s, t_c = add(t_s, t_c, bt)
        u_s, u_c = add(u_s, u_c, bu)
        q_s, q_c = add(q_s, q_c, bq)
        r_s, r_c = add(r_s, r_c, br)
    shift_pos = (t_s + t_c) / P  # theta - centre, from the positives' placements
    shift_neg = (u_s + u_c) / N  # the same from the negatives' (equal but for rounding)
    theta = centre + shift_pos
    ss_pos = (q_s + q_c) - P * shift_pos * shift_pos
    ss_pos = 0.0 if 0.0 > ss_pos else ss_pos
    ss_neg = (r_s + r_c) - N * shift_neg * shift_neg
    ss_neg = 0.0 if 0.0 > ss_neg else ss_neg
    return theta, P, N, ss_pos, ss_neg
