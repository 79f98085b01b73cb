"""Compensated running totals of a rank state's masses, and DeLong's sums: each kernel continues from a carry, so a
run read in blocks gives the bits of a run read at once.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add


@kernel
def running_pairs(ab, pairs, down, every, out):
    """Compensated running sums ``[s0, c0, s1, c1]`` of each class's masses, continued from ``pairs``: upward,
    ``out[t]`` once the entries before ``t * every`` are in; with ``down`` downward, once those from ``t * every``
    on are in (the last row: boundary ``m``). ``out`` may be empty.
    """
    m = ab.shape[1]
    rows = out.shape[0]
    for r in range(2):
        s = pairs[2 * r]
        c = pairs[2 * r + 1]
        if rows:
            t = rows - 1 if down else 0
            out[t, 2 * r] = s
            out[t, 2 * r + 1] = c
        for step in range(m):
            i = m - 1 - step if down else step
            s, c = add(s, c, ab[r, i])
            at = i if down else i + 1
            if rows and (at % every == 0 or at == m):
                t = at // every if at % every == 0 else rows - 1
                out[t, 2 * r] = s
                out[t, 2 * r + 1] = c
        pairs[2 * r] = s
        pairs[2 * r + 1] = c


@kernel
def block_counts(ab, every, out):
    """Per block of ``every`` entries: positives, negatives and the block's own ``2U`` into ``out[:, j]``."""
    for j in range(out.shape[1]):
        p = 0
        q = 0
        u2 = 0
        for i in range(j * every, min(ab.shape[1], (j + 1) * every)):
            a = ab[0, i]
            b = ab[1, i]
            u2 += a * (2 * q + b)
            p += a
            q += b
        out[0, j] = p
        out[1, j] = q
        out[2, j] = u2


# DeLong's sums (DeLong, DeLong and Clarke-Pearson 1988), placements ``V10_k = (negative mass below + b_k / 2) / N``
# and ``V01_k = (positive mass above + a_k / 2) / P``: naive inside blocks of BLOCK points, compensated between blocks;
# ``st`` carries a block across the chunks a run is read in.


@kernel
def delong_masses(ab, st, end):
    """First pass: ``st = (sp, cp, sn, cn, bp, bn, j)``; with ``end`` returns ``(P, N)``."""
    sp, cp, sn, cn, bp, bn = st[0], st[1], st[2], st[3], st[4], st[5]
    j = np.int64(st[6])
    for k in range(ab.shape[1]):
        bp += float(ab[0, k])
        bn += float(ab[1, k])
        j += 1
        if j == BLOCK or (end and k == ab.shape[1] - 1):
            sp, cp = add(sp, cp, bp)
            sn, cn = add(sn, cn, bn)
            bp = bn = 0.0
            j = 0
    st[0], st[1], st[2], st[3], st[4], st[5], st[6] = sp, cp, sn, cn, bp, bn, j
    return sp + cp, sn + cn


@kernel
def delong_sums(ab, P, N, centre, st, end):
    """The second pass, squares about ``centre`` (the AUC); ``st``: the pairs ``below, above, t, u, q, r`` (``above``
    starts at the positive mass), the block's ``base_below, base_above, local_b, local_a, bt, bu, bq, br`` and its
    position. Returns ``(theta, ss_pos, ss_neg)``, the AUC and ``sum_k a_k (V10_k - theta)**2``, ``sum_k b_k (V01_k -
    theta)**2`` (final with ``end``)."""
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
        d10 = ((base_below + local_b) + 0.5 * b) / N - centre
        d01 = ((base_above - local_a) - 0.5 * a) / P - centre
        bt += a * d10
        bu += b * d01
        bq += a * (d10 * d10)
        br += b * (d01 * d01)
        local_b += b
        local_a += a
        j += 1
        if j == BLOCK or (end and k == ab.shape[1] - 1):
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
    shift_pos = (t_s + t_c) / P  # theta - centre, from the positives' placements
    shift_neg = (u_s + u_c) / N  # the same from the negatives' (equal but for rounding)
    ss_pos = (q_s + q_c) - P * shift_pos * shift_pos
    ss_neg = (r_s + r_c) - N * shift_neg * shift_neg
    return centre + shift_pos, max(ss_pos, 0.0), max(ss_neg, 0.0)
