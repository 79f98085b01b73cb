"""Mann–Whitney ``2U = sum_i pos_i (2 * negatives below + neg_i)``: exact integers for counts (128-bit past
``2**63``), with weights a compensated sum scaled by ``1 / (n_pos n_neg)`` carried across chunks.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import add
from .keys import ZERO


@kernel
def u2_sorted(kp, kn):
    """``2U`` of sorted positive keys ``kp`` and negative keys ``kn`` in one merge (a one-shot AUC needs no run of
    distinct scores); needs ``2 * n_pos * n_neg < 2**63``."""
    m = kn.shape[0]
    i = 0
    below = 0
    u2 = 0
    while i < kp.shape[0]:
        x = kp[i]
        while below < m and kn[below] < x:
            below += 1
        tied = below
        while tied < m and kn[tied] == x:
            tied += 1
        same = i
        while same < kp.shape[0] and kp[same] == x:
            same += 1
        u2 += (same - i) * (below + tied)  # each positive: 2 * below + (tied - below)
        i = same
        below = tied
    return u2


@kernel
def _mul128(a, b):
    """The 128-bit product of two uint64 as ``(high, low)``."""
    mask = np.uint64(0xFFFFFFFF)
    half = np.uint64(32)
    a0 = a & mask
    a1 = a >> half
    b0 = b & mask
    b1 = b >> half
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> half) + (p01 & mask) + (p10 & mask)
    low = (p00 & mask) | (mid << half)
    high = p11 + (p01 >> half) + (p10 >> half) + (mid >> half)
    return high, low


@kernel
def u2_int128(ab):
    """``2U`` of int64 counts as a 128-bit ``(high, low)`` (``2 * cum + q`` fits a uint64)."""
    high = ZERO
    low = ZERO
    cum = ZERO
    two = np.uint64(2)
    for i in range(ab.shape[1]):
        p = np.uint64(ab[0, i])
        q = np.uint64(ab[1, i])
        th, tl = _mul128(p, two * cum + q)
        s = low + tl
        carry = np.uint64(1) if s < low else ZERO
        low = s
        high = high + th + carry
        cum += q
    return high, low


@kernel
def u2_float_carry(ab, scale_pos, scale_neg, carry):
    """``2U / (n_pos n_neg)`` of weights continued over chunks through ``carry = [cs, cc, us, uc]``."""
    cs = carry[0]
    cc = carry[1]
    us = carry[2]
    uc = carry[3]
    for i in range(ab.shape[1]):
        q = ab[1, i] * scale_neg
        us, uc = add(us, uc, (ab[0, i] * scale_pos) * (2.0 * (cs + cc) + q))
        cs, cc = add(cs, cc, q)
    carry[0] = cs
    carry[1] = cc
    carry[2] = us
    carry[3] = uc
