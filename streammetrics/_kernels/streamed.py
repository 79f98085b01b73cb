"""Threshold scans of a rank state read chunk by chunk, from the highest score down.

A state too large for memory is read as consecutive *chunks* ``(scores, ab)``
of its merged run: each chunk's scores increase, and the chunks come from the
highest scores down (see :mod:`streammetrics.metrics.ranking.streamed`). Each
kernel below walks one chunk from its last entry to its first and carries its
running state between chunks in small arrays, so that the chunks together
give what the one-pass kernels of :mod:`.operating` and :mod:`.curves` give
over the whole run: the same candidates in the same order (``+inf`` first,
then every distinct score from the top), the same operations on the same
numbers. ``cum`` holds the mass at or above the current candidate (``cum[0]``
positives, ``cum[1]`` negatives), of the dtype of ``ab``: int64 counts are
exact. Each scan returns whether it is done (the rest of the run cannot
change its answer), so the caller stops reading.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add
from .operating import _beats, _past, _safe, _score, _trapezoid, exact_area

__all__ = ["ap_carry", "counts_from", "target_scan", "best_scan", "area_scan",
           "area_scan_exact", "delong_masses_carry", "delong_masses_end", "delong_carry", "delong_end",
           "bottom_carry", "weighted_cells", "cells_from", "cells_target", "cells_best", "cells_area"]


@kernel
def ap_carry(ab, denom, cum, acc):
    """Add the terms of average precision of one chunk into ``acc``.

    ``acc`` is ``(sum, error, previous recall)``: the terms ``(R_prev - R) *
    P`` of :func:`streammetrics._kernels.curves.ap_terms`, each computed as
    there, summed with compensation (``sum + error`` is their total, minus
    the average precision). ``denom`` is ``safe(total positive mass)``.
    """
    s = acc[0]
    c = acc[1]
    prev_recall = acc[2]
    for i in range(ab.shape[1] - 1, -1, -1):
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
        tps = float(cum[0])
        ps = tps + float(cum[1])
        precision = tps / ps if ps != 0.0 else 0.0
        recall = tps / denom
        s, c = add(s, c, (prev_recall - recall) * precision)
        prev_recall = recall
    acc[0] = s
    acc[1] = c
    acc[2] = prev_recall


@kernel
def counts_from(scores, ab, t, cum):
    """Add the masses of the chunk's scores ``>= t`` into ``cum``; done once a
    score below ``t`` is met."""
    for i in range(scores.shape[0] - 1, -1, -1):
        if not scores[i] >= t:
            return True
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
    return False


@kernel
def target_scan(scores, ab, code, value, total_p, total_n, cum, hit, at):
    """One chunk of the search of ``OperatingPoints.threshold_for`` (codes of
    :data:`streammetrics._kernels.operating.SEARCH_CODES`, 0 to 3).

    ``hit[0]`` is 1 once a candidate is kept, whose score is ``at[0]`` and
    masses ``hit[1]``, ``hit[2]`` (the caller starts with the ``+inf``
    candidate kept or not). ``recall``: the first candidate from the top with
    ``tp / P >= value`` (done there); ``fpr``, ``specificity``: the last one
    with ``fp / N <= value`` or ``tn / (tn + fp) >= value`` (done at the first
    that fails); ``precision``: the last one with ``tp / (tp + fp) >= value``
    (every candidate is read), and ``at[1]`` the highest precision seen.
    """
    sp = float(total_p) + (1 if total_p == 0 else 0)
    sn = float(total_n) + (1 if total_n == 0 else 0)
    for i in range(scores.shape[0] - 1, -1, -1):
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
        tp = float(cum[0])
        fp = float(cum[1])
        if code == 0:
            holds = tp / sp >= value
        elif code == 1:
            holds = fp / sn <= value
        elif code == 2:
            tn = float(total_n) - fp
            holds = tn / _safe(tn + fp) >= value
        else:
            v = tp / _safe(tp + fp)
            if v > at[1]:
                at[1] = v
            holds = v >= value
        if holds:
            hit[0] = 1
            hit[1] = cum[0]
            hit[2] = cum[1]
            at[0] = scores[i]
            if code == 0:
                return True
        elif code == 1 or code == 2:
            return True
    return False


@kernel
def best_scan(scores, ab, code, cost, total_p, total_n, cum, hit, best):
    """One chunk of :func:`streammetrics._kernels.operating.best_candidate`:
    ``best[0]`` the best value so far and ``best[1]`` its score, ``hit`` its
    masses (the caller starts with the ``+inf`` candidate's value)."""
    p = float(total_p)
    n = float(total_n)
    for i in range(scores.shape[0] - 1, -1, -1):
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
        tp = float(cum[0])
        fp = float(cum[1])
        v = _score(code, tp, fp, p - tp, n - fp, cost)
        if _beats(v, best[0]):
            best[0] = v
            best[1] = scores[i]
            hit[0] = cum[0]
            hit[1] = cum[1]


@kernel
def area_scan(ab, total_p, total_n, max_fpr, cum, acc):
    """One chunk of :func:`streammetrics._kernels.operating.partial_area`;
    ``acc`` is ``(area, x0, y0)``. Done at the point past ``max_fpr``."""
    sp = _safe(float(total_p))
    sn = _safe(float(total_n))
    area = acc[0]
    x0 = acc[1]
    y0 = acc[2]
    for i in range(ab.shape[1] - 1, -1, -1):
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
        x1 = float(cum[1]) / sn
        y1 = float(cum[0]) / sp
        area, past = _trapezoid(area, x0, y0, x1, y1, max_fpr)
        if past:
            acc[0] = area
            return True
        x0 = x1
        y0 = y1
    acc[0] = area
    acc[1] = x0
    acc[2] = y0
    return False


# ------------------------------------------------------------------ DeLong
# The sums of :func:`streammetrics._kernels.intervals.delong_sums_about` read
# in increasing order of score, chunk by chunk: its blocks of BLOCK points
# start at multiples of BLOCK of the whole run, so a block may span chunks;
# ``st`` carries the block's partial sums and its position ``st[-1]``.


@kernel
def area_scan_exact(ab, total_p, total_n, max_fpr, cum, acc):
    """One chunk of :func:`streammetrics._kernels.operating.partial_area_exact`
    (int64 counts; ``total_p``, ``total_n`` > 0, ``2 P N < 2**63``): ``acc``
    (int64) is ``(s2, x0, y0)``, the exact doubled area so far and the last
    candidate's false and true positives. ``(done, area)``: done at the point
    past ``max_fpr``; ``area`` is the area up to the end of the chunk, the
    answer once done or once every chunk is read."""
    s2 = acc[0]
    x0 = acc[1]
    y0 = acc[2]
    for i in range(ab.shape[1] - 1, -1, -1):
        cum[0] += ab[0, i]
        cum[1] += ab[1, i]
        x1 = cum[1]
        y1 = cum[0]
        if _past(x1, total_n, max_fpr):
            acc[0] = s2
            return True, exact_area(s2, x0, y0, x1, y1, True, total_p, total_n, max_fpr)
        s2 += (x1 - x0) * (y0 + y1)
        x0 = x1
        y0 = y1
    acc[0] = s2
    acc[1] = x0
    acc[2] = y0
    return False, exact_area(s2, x0, y0, x0, y0, False, total_p, total_n, max_fpr)


@kernel
def delong_masses_carry(ab, st):
    """The first pass: ``st`` is ``(sp, cp, sn, cn, bp, bn, j)``."""
    sp, cp, sn, cn, bp, bn = st[0], st[1], st[2], st[3], st[4], st[5]
    j = np.int64(st[6])
    for k in range(ab.shape[1]):
        bp += float(ab[0, k])
        bn += float(ab[1, k])
        j += 1
        if j == BLOCK:
            sp, cp = add(sp, cp, bp)
            sn, cn = add(sn, cn, bn)
            bp = bn = 0.0
            j = 0
    st[0], st[1], st[2], st[3], st[4], st[5], st[6] = sp, cp, sn, cn, bp, bn, j


@kernel
def delong_masses_end(st):
    """``(sp, cp, sn, cn)`` of the first pass, its last block added."""
    sp, cp, sn, cn = st[0], st[1], st[2], st[3]
    if st[6] > 0:
        sp, cp = add(sp, cp, st[4])
        sn, cn = add(sn, cn, st[5])
    return sp, cp, sn, cn


@kernel
def delong_carry(ab, P, N, centre, st):
    """The second pass. ``st`` holds the pairs ``below, above, t, u, q, r``
    (``st[0:12]``), the block's ``base_below, base_above, local_b, local_a,
    bt, bu, bq, br`` (``st[12:20]``) and its position ``st[20]``."""
    below_s, below_c, above_s, above_c = st[0], st[1], st[2], st[3]
    t_s, t_c, u_s, u_c, q_s, q_c, r_s, r_c = st[4], st[5], st[6], st[7], st[8], st[9], st[10], st[11]
    base_below, base_above, local_b, local_a = st[12], st[13], st[14], st[15]
    bt, bu, bq, br = st[16], st[17], st[18], st[19]
    j = np.int64(st[20])
    for k in range(ab.shape[1]):
        if j == 0:
            base_below = below_s + below_c
            base_above = above_s + above_c
            local_b = local_a = 0.0
            bt = bu = bq = br = 0.0
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
        j += 1
        if j == BLOCK:
            below_s, below_c = add(below_s, below_c, local_b)
            above_s, above_c = add(above_s, above_c, -local_a)
            t_s, t_c = add(t_s, t_c, bt)
            u_s, u_c = add(u_s, u_c, bu)
            q_s, q_c = add(q_s, q_c, bq)
            r_s, r_c = add(r_s, r_c, br)
            j = 0
    st[0], st[1], st[2], st[3] = below_s, below_c, above_s, above_c
    st[4], st[5], st[6], st[7], st[8], st[9], st[10], st[11] = t_s, t_c, u_s, u_c, q_s, q_c, r_s, r_c
    st[12], st[13], st[14], st[15] = base_below, base_above, local_b, local_a
    st[16], st[17], st[18], st[19] = bt, bu, bq, br
    st[20] = j


@kernel
def delong_end(P, N, centre, st):
    """``(theta, P, N, ss_pos, ss_neg)`` of the second pass, its last block added."""
    t_s, t_c, u_s, u_c, q_s, q_c, r_s, r_c = st[4], st[5], st[6], st[7], st[8], st[9], st[10], st[11]
    if st[20] > 0:
        t_s, t_c = add(t_s, t_c, st[16])
        u_s, u_c = add(u_s, u_c, st[17])
        q_s, q_c = add(q_s, q_c, st[18])
        r_s, r_c = add(r_s, r_c, st[19])
    shift_pos = (t_s + t_c) / P
    shift_neg = (u_s + u_c) / N
    theta = centre + shift_pos
    ss_pos = (q_s + q_c) - P * shift_pos * shift_pos
    ss_pos = 0.0 if 0.0 > ss_pos else ss_pos
    ss_neg = (r_s + r_c) - N * shift_neg * shift_neg
    ss_neg = 0.0 if 0.0 > ss_neg else ss_neg
    return theta, P, N, ss_pos, ss_neg


# ---------------------------------------------------------------- weights
# With weights, OperatingPoints takes the called mass of candidate ``k`` from
# compensated sums from the top and the mass not called from compensated sums
# from the bottom. A chunk's cells are rebuilt here to the bit: ``top`` carries
# the pairs ``(s, c)`` of each class from the chunks above, ``bottom`` the
# pairs of every point below the chunk (from a pass from the bottom up).


@kernel
def bottom_carry(ab, bottom):
    """Add a chunk's masses, lowest first, to the pairs ``bottom`` ``(s0, c0, s1, c1)``."""
    for r in range(2):
        s = bottom[2 * r]
        c = bottom[2 * r + 1]
        for i in range(ab.shape[1]):
            s, c = add(s, c, ab[r, i])
        bottom[2 * r] = s
        bottom[2 * r + 1] = c


@kernel
def weighted_cells(ab, top, bottom, called, rest):
    """``called[:, i]``: the mass at or above point ``i`` of the chunk, and
    ``rest[:, i]`` the mass below it, as ``running_sums`` gives them over the
    whole run; ``top`` is carried on (``bottom`` is read only)."""
    m = ab.shape[1]
    for r in range(2):
        s = top[2 * r]
        c = top[2 * r + 1]
        for i in range(m - 1, -1, -1):
            s, c = add(s, c, ab[r, i])
            called[r, i] = s + c
        top[2 * r] = s
        top[2 * r + 1] = c
        s = bottom[2 * r]
        c = bottom[2 * r + 1]
        for i in range(m):
            rest[r, i] = s + c
            s, c = add(s, c, ab[r, i])


@kernel
def cells_from(scores, called, rest, t, hit):
    """The lowest point of the chunk at or above ``t`` into ``hit`` ``(found, tp,
    fp, fn, tn)``; done once a score below ``t`` is met."""
    for i in range(scores.shape[0] - 1, -1, -1):
        if not scores[i] >= t:
            return True
        hit[0] = 1.0
        hit[1] = called[0, i]
        hit[2] = called[1, i]
        hit[3] = rest[0, i]
        hit[4] = rest[1, i]
    return False


@kernel
def cells_target(scores, called, rest, code, value, total_p, total_n, hit, at):
    """:func:`target_scan` over a chunk's cells (``hit``: ``(found, tp, fp, fn, tn)``)."""
    sp = _safe(total_p)
    sn = _safe(total_n)
    for i in range(scores.shape[0] - 1, -1, -1):
        tp = called[0, i]
        fp = called[1, i]
        if code == 0:
            holds = tp / sp >= value
        elif code == 1:
            holds = fp / sn <= value
        elif code == 2:
            tn = rest[1, i]
            holds = tn / _safe(tn + fp) >= value
        else:
            v = tp / _safe(tp + fp)
            if v > at[1]:
                at[1] = v
            holds = v >= value
        if holds:
            hit[0] = 1.0
            hit[1] = tp
            hit[2] = fp
            hit[3] = rest[0, i]
            hit[4] = rest[1, i]
            at[0] = scores[i]
            if code == 0:
                return True
        elif code == 1 or code == 2:
            return True
    return False


@kernel
def cells_best(scores, called, rest, code, cost, hit, best):
    """:func:`best_scan` over a chunk's cells."""
    for i in range(scores.shape[0] - 1, -1, -1):
        v = _score(code, called[0, i], called[1, i], rest[0, i], rest[1, i], cost)
        if _beats(v, best[0]):
            best[0] = v
            best[1] = scores[i]
            hit[0] = 1.0
            hit[1] = called[0, i]
            hit[2] = called[1, i]
            hit[3] = rest[0, i]
            hit[4] = rest[1, i]


@kernel
def cells_area(called, total_p, total_n, max_fpr, acc):
    """:func:`area_scan` over a chunk's cells."""
    sp = _safe(total_p)
    sn = _safe(total_n)
    area = acc[0]
    x0 = acc[1]
    y0 = acc[2]
    for i in range(called.shape[1] - 1, -1, -1):
        x1 = called[1, i] / sn
        y1 = called[0, i] / sp
        area, past = _trapezoid(area, x0, y0, x1, y1, max_fpr)
        if past:
            acc[0] = area
            return True
        x0 = x1
        y0 = y1
    acc[0] = area
    acc[1] = x0
    acc[2] = y0
    return False
