"""The exact AUC and average precision of rows cut into score ranges (:mod:`streammetrics.dask`).

Every positive of a higher range outranks every negative of a lower one, so ``U = sum_r U_r + sum_{r < r'} n_neg_r
n_pos_r'``, and the precision at a score counts the masses of the ranges above: no place holds more than one range.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..._kernels.pairs import u2_float_carry
from ..._kernels.totals import running_pairs
from ..._protocol.errors import in_context
from ..._protocol.result import Result, safe
from .accumulator import RankAUC
from .points import NO_PAIRS, u2_counts
from .sorting import merge_runs

_TINY = 1 << 1074  # 2**-1074, the least positive float, is 1 / _TINY


class RangeResult(Result):
    """``auc``, ``average_precision``, ``n_pos``, ``n_neg``, ``auc_lower``, ``auc_upper``, ``n``; ``meta`` the cuts."""

    __slots__ = ()
    title = "Ranking"
    counts = ("n_pos", "n_neg")


def folded(acc, arrays, weighted: bool, where: str, offset: int = 0):
    """``acc`` updated with ``arrays`` (the weights last when ``weighted``); errors name ``where`` and the row
    ``offset`` rows on."""
    *arrays, w = arrays if weighted else (*arrays, None)
    try:
        acc.update(*arrays, sample_weight=w)
    except (ValueError, TypeError) as exc:
        raise in_context(exc, where, offset) from None
    return acc


def route_rows(cuts, lo: int, hi: int, where: str, arrays, weighted: bool, offset: int = 0):
    """``(info, run_lo, ..., run_{hi-1})`` of one part's rows (:func:`folded`): ``info = (rows, masses)`` with every
    range's masses, the runs of ranges ``lo .. hi-1`` (range ``r``: ``cuts[r - 1] <= s < cuts[r]``).
    """
    acc = folded(RankAUC(), arrays, weighted, where, offset)
    scores, ab = run_of(acc, weighted)
    bounds = np.concatenate(([0], np.searchsorted(scores, cuts, side="left"), [scores.shape[0]]))
    masses = np.zeros((cuts.shape[0] + 1, 2), np.float64 if weighted else np.int64)
    for r in range(masses.shape[0]):
        part = ab[:, bounds[r] : bounds[r + 1]]
        if weighted:
            pairs = np.zeros(4)
            running_pairs(np.ascontiguousarray(part, np.float64), pairs, False, 1, NO_PAIRS)
            masses[r] = (pairs[0] + pairs[1], pairs[2] + pairs[3])
        else:
            masses[r] = part.sum(axis=1)
    runs = [(scores[a:b].copy(), ab[:, a:b].copy()) for a, b in zip(bounds[lo:hi], bounds[lo + 1 : hi + 1])]
    return ((acc.n, masses), *runs)


def run_of(acc: RankAUC, weighted: bool):
    """``(scores, masses)``: the exact state of ``acc``, its distinct scores and their positive and negative masses."""
    st = acc.state_dict()
    return st["lo"], st["weights" if weighted else "counts"]


def merge_pieces(*runs):
    """One run of several runs of one range (merged in pairs)."""
    runs = list(runs)
    while len(runs) > 1:
        runs = [merge_runs(*runs[i : i + 2]) if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)]
    return runs[0]


def _running(values, weighted: bool, reverse: bool = False) -> list:
    """``out[r]``: the sum of ``values[:r]`` (``reverse``: of ``values[r:]``), in one pass: exact integers for counts,
    for weights correctly rounded as ``math.fsum`` (finite weights summed as integers in units of ``2**-1074``).
    """
    seq = list(values[::-1] if reverse else values)
    if not weighted:
        out = list(itertools.accumulate((int(v) for v in seq), initial=0))
    elif all(map(math.isfinite, seq)):
        out = [s / _TINY for s in itertools.accumulate((_fixed(v) for v in seq), initial=0)]
    else:  # an infinite or NaN weight: nothing to round
        out = list(itertools.accumulate(map(float, seq), initial=0.0))
    return out[::-1] if reverse else out


def _fixed(v) -> int:
    """``v`` (finite) as an integer number of ``2**-1074``."""
    n, d = float(v).as_integer_ratio()
    return n * (_TINY // d)


def range_totals(weighted: bool, *infos):
    """Rows, per-range masses and each range's masses above it, from every part."""
    stacked = np.stack([m for _, m in infos])
    add = math.fsum if weighted else (lambda xs: sum(int(x) for x in xs))
    masses = [[add(stacked[:, r, c]) for c in range(2)] for r in range(stacked.shape[1])]
    tails = [_running([m[c] for m in masses], weighted, reverse=True) for c in range(2)]
    above = [[tails[0][r + 1], tails[1][r + 1]] for r in range(len(masses))]
    return {"rows": sum(n for n, _ in infos), "masses": masses, "total": [tails[0][0], tails[1][0]], "above": above}


def range_stats(totals, r: int, weighted: bool, run):
    """``(2U, AP share, distinct)`` of range ``r``: ``2U`` exact for counts, ``2U / (P N)`` compensated with weights;
    the share ``sum_k pos_k TP_k / (TP_k + FP_k)`` over the range's scores.
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
    below = _running([n_r for _, n_r in masses], weighted)  # every positive outranks every negative of a lower range
    if weighted:
        terms = [u for u, _, _ in stats]
        auc = 0.0
        if P > 0 and N > 0:
            terms += [2.0 * (p_r / P) * (below[r] / N) for r, (p_r, _) in enumerate(masses)]
            auc = min(max(math.fsum(terms) / 2.0, 0.0), 1.0)
    else:
        u2 = sum(u for u, _, _ in stats) + sum(2 * p_r * below[r] for r, (p_r, _) in enumerate(masses))
        auc = u2 / (2 * safe(P * N))
    ap = max(0.0, math.fsum(s for _, s, _ in stats) / P) if P > 0 else 0.0
    return auc, ap


def range_result(totals: dict, weighted: bool, stats: list, **meta) -> RangeResult:
    """The exact AUC and average precision of the ranges' ``totals`` and ``stats`` (each ``(2U, share, distinct)``)."""
    auc, ap = combine(totals, weighted, stats)
    (P, N), n = totals["total"], totals["rows"]
    values = {"auc": auc, "average_precision": ap, "n_pos": P, "n_neg": N, "auc_lower": auc, "auc_upper": auc, "n": n}
    meta = {"weighted": weighted, **meta, "distinct": [d for _, _, d in stats]}
    return RangeResult("AUCScores", values, meta)


def check_cuts(cuts) -> np.ndarray:
    """``cuts`` as a float64 vector of finite, strictly increasing scores (``-0.0`` as ``0.0``)."""
    try:
        arr = np.asarray(cuts, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"cuts must be a 1-D array of real numbers, got {type(cuts).__name__}") from None
    if arr.ndim != 1:
        raise ValueError(f"cuts must be a 1-D array of scores, got shape {arr.shape}")
    for bad, what in ((~np.isfinite(arr), "finite"), (np.diff(arr, prepend=-np.inf) <= 0, "strictly increasing")):
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"cuts[{i}] = {float(arr[i])!r}: cut points must be {what}")
    return arr + 0.0
