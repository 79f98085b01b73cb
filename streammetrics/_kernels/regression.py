"""Regression error totals and the running mean / squared deviations of y.

State (float64): ``moments[0:2]`` the pair of the total weight W;
``moments[2:4]`` the weighted mean of y as ``shift + offset`` (the shift the
first y seen, so the mean keeps its digits far from 0); ``moments[4:6]`` the
pair of M2 = sum w (y - mean)^2; ``sums`` pairs of sum w r^2, sum w |r| and
sum w |r| / max(|y|, 1e-12) (r = y - p); ``squares`` pairs of sum w r^4,
sum w (|r| / max(|y|, 1e-12))^2 and sum w^2, for the intervals;
``rmoments`` the same six moments as ``moments`` for the error r (explained
variance); ``top[0]`` the largest |r| (max error).

A batch's mean and M2 come from the corrected two-pass algorithm and merge
into the state by Chan et al.'s formula (never sum(y^2) - n mean^2). Status 0
folded, 1 a non-finite y, 2 a non-finite p; overflowing totals are caught by
the caller, which puts back a copy of the small state.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline_ir, kernel
from .compensated import BLOCK, add, fold

__all__ = ["regression_moments", "merge_moments", "MAPE_FLOOR", "loss_terms"]

#: The specification floors |y| at 1e-12 in MAPE's denominator.
MAPE_FLOOR = 1e-12


@inline_ir
def _merge_moments(m, wb_s, wb_c, shift_b, offset_b, m2b_s, m2b_c):
    wa = m[0] + m[1]
    wb = wb_s + wb_c
    t, c = add(m[0], m[1], wb_s)
    m[0] = t
    m[1] = c + wb_c
    w = m[0] + m[1]
    if wb == 0.0:
        return
    if wa == 0.0:
        m[2] = shift_b
        m[3] = offset_b
        m[4] = m2b_s
        m[5] = m2b_c
        return
    # difference of the two means: the shifts cancel exactly when close
    delta = (shift_b - m[2]) + (offset_b - m[3])
    m[3] = m[3] + delta * (wb / w)
    t, c = add(m[4], m[5], m2b_s)
    t, c = add(t, c, m2b_c)
    t, c = add(t, c, delta * delta * (wa * (wb / w)))  # wa * wb alone may overflow
    m[4] = t
    m[5] = c


@kernel
def regression_moments(y, p, w, n, moments, sums, squares, rmoments, top):
    """Fold one batch into ``moments``, ``rmoments``, ``top`` and ``sums``, the second moments of the error
    terms into ``squares`` (``float64[3, 2]`` pairs: the totals of ``w r**4``,
    ``w (|r| / max(|y|, 1e-12))**2`` and ``w**2``, which the intervals of the
    mean errors need; the mean of ``r**2`` is ``sums[0]``, the square of
    ``|r|``), and count its rows in ``n``; return the status code."""
    rows = y.shape[0]
    weighted = w.shape[0] > 0
    # pass 1: validation, total weight and weighted sum of y - shift
    shift = y[0]
    if not (shift - shift == 0.0):
        return 1
    rshift = y[0] - p[0]
    # compensated totals: w, w (y - shift), w (r - rshift); then of pass 2's block sums in their order
    tot = np.zeros((13, 2))
    for start in range(0, rows, BLOCK):
        stop = rows if rows < start + BLOCK else start + BLOCK
        bw = by = br = 0.0
        bad_y = False
        bad_p = False
        for i in range(start, stop):
            yi = y[i]
            pi = p[i]
            bad_y |= not (yi - yi == 0.0)
            bad_p |= not (pi - pi == 0.0)
            wi = w[i] if weighted else 1.0  # (times 1.0: the unweighted sums exactly)
            bw += wi
            by += wi * (yi - shift)
            br += wi * ((yi - pi) - rshift)
        if bad_y:
            return 1
        if bad_p:
            return 2
        blocks = (bw, by, br)
        for t in range(3):
            tot[t, 0], tot[t, 1] = add(tot[t, 0], tot[t, 1], blocks[t])
    wt = tot[0, 0] + tot[0, 1]
    mean = (tot[1, 0] + tot[1, 1]) / wt if wt > 0.0 else 0.0
    rmean = (tot[2, 0] + tot[2, 1]) / wt if wt > 0.0 else 0.0
    biggest = top[0]
    # pass 2: squared deviations and the error totals
    for start in range(0, rows, BLOCK):
        stop = rows if rows < start + BLOCK else start + BLOCK
        bd = bm = b2 = b1 = bp = 0.0
        b4 = ba = bq = be = bv = 0.0
        for i in range(start, stop):
            yi = y[i]
            d = (yi - shift) - mean
            r = yi - p[i]
            e = (r - rshift) - rmean
            ar = abs(r)
            ape = ar / (MAPE_FLOOR if MAPE_FLOOR > abs(yi) else abs(yi))
            r2 = r * r
            wi = w[i] if weighted else 1.0
            bd += wi * d
            bm += wi * (d * d)
            be += wi * e
            bv += wi * (e * e)
            b2 += wi * r2
            b1 += wi * ar
            bp += wi * ape
            b4 += wi * (r2 * r2)
            ba += wi * (ape * ape)
            bq += wi * wi
            if wi != 0.0 and ar > biggest:  # a row of weight 0 is not seen
                biggest = ar
        blocks = (bd, bm, be, bv, b2, b1, bp, b4, ba, bq)
        for t in range(10):
            tot[3 + t, 0], tot[3 + t, 1] = add(tot[3 + t, 0], tot[3 + t, 1], blocks[t])
    if wt > 0.0:
        for t in (4, 6):  # M2 of y and of the error, less their deviations' sum squared over wt
            corr = tot[t - 1, 0] + tot[t - 1, 1]
            tot[t, 0], tot[t, 1] = add(tot[t, 0], tot[t, 1], -corr * (corr / wt))  # corr * corr alone may overflow
            if tot[t, 0] + tot[t, 1] < 0.0:
                tot[t, 0], tot[t, 1] = 0.0, 0.0
    _merge_moments(rmoments, tot[0, 0], tot[0, 1], rshift, rmean, tot[6, 0], tot[6, 1])
    _merge_moments(moments, tot[0, 0], tot[0, 1], shift, mean, tot[4, 0], tot[4, 1])
    top[0] = biggest
    for t in range(3):
        fold(sums, t, tot[7 + t, 0], tot[7 + t, 1])
        fold(squares, t, tot[10 + t, 0], tot[10 + t, 1])
    n[0] += rows
    return 0


@kernel
def merge_moments(moments, other):
    """Fold the six moments ``other`` into ``moments`` (Chan et al. for M2)."""
    _merge_moments(moments, other[0], other[1], other[2], other[3], other[4], other[5])


# ------------------------------------------------------------------ squared log error and pinball loss
# A row of the squared log error adds its weight and ``(a - b)**2`` of ``a = log1p(y)``,
# ``b = log1p(p)`` (formed by NumPy's ``log1p`` at the edge, as scikit-learn forms
# them); a row of the pinball loss its weight and, per level ``alpha``, ``alpha r``
# where ``r = a - b >= 0`` (``a = y``, ``b = p``), else ``(alpha - 1) r``:
# scikit-learn's terms to the bit. Status 1 a non-finite ``a``, 2 a ``b``: nothing
# is written then.


@kernel
def loss_terms(a, b, alphas, log, k, lo, slots, values, col, base):
    """The ``k`` row terms of rows ``lo, lo + 1, ...`` (slots ``base ..``, columns
    ``col ..``): the weight, then the squared log error if ``log``, else one
    pinball loss per level of ``alphas``; the status."""
    for i in range(slots.shape[0]):
        ai = a[lo + i]
        bi = b[lo + i]
        if not (ai - ai == 0.0):
            return 1
        if not (bi - bi == 0.0):
            return 2
        d = ai - bi
        for t in range(k):
            slots[i, col + t] = base + t
        values[i, col] = 1.0
        if log:
            values[i, col + 1] = d * d
        else:
            for t in range(1, k):
                alpha = alphas[t - 1]
                values[i, col + t] = alpha * d if d >= 0.0 else (alpha - 1.0) * d
    return 0
