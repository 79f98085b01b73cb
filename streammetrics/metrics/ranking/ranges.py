"""The exact AUC and average precision of rows cut into score ranges.

The scores are cut into ranges by value; each range's rows make a run of its
own (:class:`RankAUC` sorts them), and the runs of one range from many places
merge into one (:func:`merge_pieces`). A range then gives its positives
``n_pos_r``, negatives ``n_neg_r`` and the Mann-Whitney ``U_r`` of its own
pairs, and, every positive of a higher range outranking every negative of a
lower one,

    ``U = sum_r U_r + sum_{r < r'} n_neg_r n_pos_r'``

(:func:`combine`). The average precision ``sum_k (R_k - R_{k-1}) P_k`` splits
the same way: the precision at a score of range ``r`` counts the positives and
negatives above the range, known from the ranges' masses. So no place ever
holds more than one range's distinct scores (:mod:`streammetrics.dask`).
"""

from __future__ import annotations

import math

import numpy as np

from ..._kernels.pairs import u2_float_carry
from ..._kernels.totals import running_pairs
from ..._protocol.errors import in_context
from ..._protocol.result import Result, safe
from .accumulator import RankAUC
from .points import u2_counts
from .sorting import merge_runs

__all__ = ["RangeResult", "route_rows", "merge_pieces", "range_totals", "range_stats", "combine"]

_NO_PAIRS = np.zeros((0, 4))


class RangeResult(Result):
    """The exact AUC and average precision of rows cut into score ranges.

    Fields: ``auc``, ``average_precision``, ``n_pos``, ``n_neg`` (sums of
    weights once weights were seen), ``auc_lower`` and ``auc_upper`` (equal to
    ``auc``: the value is exact) and ``n`` (rows, zero-weight rows included).
    ``meta`` holds ``cuts`` (the cut points used), ``ranges``, ``distinct``
    (distinct scores per range: the largest is the most any one task held),
    ``passes`` and ``weighted``.
    """

    __slots__ = ()
    title = "Ranking"
    counts = ("n_pos", "n_neg")


def route_rows(cuts, lo: int, hi: int, where: str, arrays, w):
    """One part's rows, checked and cut by score range (``ranges[r]`` holds the
    scores ``cuts[r - 1] <= s < cuts[r]``).

    Returns ``(info, run_lo, ..., run_{hi-1})``: ``info`` is ``(rows, masses)``
    with ``masses[r]`` the positive and negative mass of range ``r`` (every
    range, for the average precision's totals), and ``run_r`` the run of the
    part's scores in range ``r`` (ranges ``lo .. hi-1`` only). A bad value
    raises its error with ``where`` (the part) in front.
    """
    acc = RankAUC()
    try:
        acc.update(*arrays, sample_weight=w)
    except (ValueError, TypeError) as exc:
        raise in_context(exc, where) from None
    st = acc.state_dict()
    weighted = bool(st["weighted"][0])
    scores, ab = st["lo"], st["weights" if weighted else "counts"]
    bounds = np.concatenate(([0], np.searchsorted(scores, cuts, side="left"), [scores.shape[0]]))
    masses = np.zeros((cuts.shape[0] + 1, 2), np.float64 if weighted else np.int64)
    for r in range(masses.shape[0]):
        part = ab[:, bounds[r] : bounds[r + 1]]
        if weighted:
            pairs = np.zeros(4)
            running_pairs(np.ascontiguousarray(part, np.float64), pairs, False, 1, _NO_PAIRS)
            masses[r] = (pairs[0] + pairs[1], pairs[2] + pairs[3])
        else:
            masses[r] = part.sum(axis=1)
    runs = [(scores[a:b].copy(), ab[:, a:b].copy()) for a, b in zip(bounds[lo:hi], bounds[lo + 1 : hi + 1])]
    return ((acc.n, masses), *runs)


def merge_pieces(*runs):
    """One run of several runs of one range (merged in pairs)."""
    runs = list(runs)
    while len(runs) > 1:
        runs = [merge_runs(*runs[i : i + 2]) if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)]
    return runs[0]


def range_totals(weighted: bool, *infos):
    """Rows, per-range masses and each range's masses above it, from every part."""
    rows = sum(n for n, _ in infos)
    stacked = np.stack([m for _, m in infos])
    R = stacked.shape[1]
    add = math.fsum if weighted else (lambda xs: sum(int(x) for x in xs))
    masses = [[add(stacked[:, r, c]) for c in range(2)] for r in range(R)]
    total = [add(m[c] for m in masses) for c in range(2)]
    above = [[add(m[c] for m in masses[r + 1 :]) for c in range(2)] for r in range(R)]
    return {"rows": rows, "masses": masses, "total": total, "above": above}


def range_stats(totals, r: int, weighted: bool, run):
    """``(2U or 2U / (P N), the AP's share, distinct scores)`` of range ``r``.

    Without weights ``2U`` of the range's own pairs is an exact Python int; with
    weights it is the compensated float of ``2U / (P N)``, ``P`` and ``N`` the
    totals over every range. The AP's share is ``sum_k pos_k TP_k / (TP_k +
    FP_k)``, ``TP_k``, ``FP_k`` the masses at or above the range's ``k``-th score.
    """
    _, ab = run
    p_r, n_r = totals["masses"][r]
    P, N = totals["total"]
    if weighted:
        carry = np.zeros(4)
        if P > 0 and N > 0:
            u2_float_carry(np.ascontiguousarray(ab, np.float64), 1.0 / P, 1.0 / N, carry)
        u = float(carry[2] + carry[3])
    else:
        u = u2_counts(ab, int(p_r), int(n_r))
    tp_above, fp_above = totals["above"][r]
    pos = ab[0, ::-1].astype(np.float64)
    tps = float(tp_above) + np.cumsum(pos)
    fps = float(fp_above) + np.cumsum(ab[1, ::-1].astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = float(np.sum(np.where(pos > 0, pos * (tps / (tps + fps)), 0.0)))
    return u, share, int(ab.shape[1])


def combine(totals, weighted: bool, stats):
    """``(auc, average_precision)`` of every range's statistics and the cross terms."""
    P, N = totals["total"]
    masses = totals["masses"]
    if weighted:
        terms = [u for u, _, _ in stats]
        auc = 0.0
        if P > 0 and N > 0:
            parts = []
            for p_r, n_r in masses:  # every positive outranks every negative of a lower range
                terms.append(2.0 * (p_r / P) * (math.fsum(parts) / N))
                parts.append(n_r)
            auc = min(max(math.fsum(terms) / 2.0, 0.0), 1.0)
    else:
        u2 = sum(u for u, _, _ in stats)
        below = 0
        for p_r, n_r in masses:
            u2 += 2 * p_r * below
            below += n_r
        auc = u2 / (2 * safe(P * N))
    ap = max(0.0, math.fsum(s for _, s, _ in stats) / P) if P > 0 else 0.0
    return auc, ap
