"""Running totals of a rank state's masses, and the scans that answer threshold queries.

The points of a rank state are its distinct scores in increasing order with
the positive and negative mass at each (``ab[0]``, ``ab[1]``). Candidate
``k`` (``0 <= k <= m``) calls the ``k`` highest scores positive: ``called[:,
k]`` is their mass (true and false positives), and ``rest[:, k]`` the mass of
the others (false and true negatives). Integer counts are summed exactly;
float weights with compensated running sums, the rest summed from the bottom
on its own so that a small remainder keeps its relative precision. Every scan
is one pass without temporaries; the formulas are those of
:func:`streammetrics.metrics.binary.binary_result`.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, inline_ir, kernel, named
from .compensated import add
from .rank import _key

__all__ = ["running_sums", "precision_reach", "best_candidate", "partial_area", "SCORE_CODES",
           "SEARCH_CODES", "layer_blocks", "layer_counts", "layer_search", "layer_best",
           "layer_partial_area", "partial_area_exact", "exact_area", "EXACT_LIMIT",
           "layer_partial_exact", "u2_marked"]

#: the scores :func:`best_candidate` maximises (the last, "cost", it minimises)
SCORE_CODES = {"f1": 0, "mcc": 1, "youden": 2, "balanced_accuracy": 3, "accuracy": 4,
               "jaccard": 5, "cost": 6}


#: relative difference below which two scores are a tie
TIE = 1e-12


@kernel
def running_sums(ab, from_top, out):
    """Running totals of the ``(2, m)`` masses ``ab`` into ``out`` ``(2, m + 1)``.

    With ``from_top``, ``out[:, k]`` is the mass of the ``k`` highest scores
    (``out[:, 0] = 0``); otherwise the mass of the ``m - k`` lowest (so
    ``out[:, m] = 0``). Compensated for floats, exact for integers. ``out``
    must hold zeros (of the dtype of ``ab``).
    """
    m = ab.shape[1]
    for r in range(2):
        s = out[r, 0]
        c = s
        if from_top:
            out[r, 0] = s
            for k in range(m):
                s, c = add(s, c, ab[r, m - 1 - k])
                out[r, k + 1] = s + c
        else:
            out[r, m] = s
            for k in range(m - 1, -1, -1):
                s, c = add(s, c, ab[r, m - 1 - k])
                out[r, k] = s + c
    return out


@inline
def _safe(x):
    return x + 1.0 if x == 0.0 else x


@inline
def _cells(called, rest, k, total_p, total_n):
    tp = float(called[0, k])
    fp = float(called[1, k])
    if rest.shape[1]:
        return tp, fp, float(rest[0, k]), float(rest[1, k])
    return tp, fp, total_p - tp, total_n - fp


@kernel
def precision_reach(called, out):
    """``out[k]``: the highest precision at candidate ``k`` or any later one."""
    best = 0.0
    for k in range(called.shape[1] - 1, -1, -1):
        tp = float(called[0, k])
        v = tp / _safe(tp + float(called[1, k]))
        if v > best:
            best = v
        out[k] = best
    return out


def _score_of(code, tp, fp, fn, tn, cost):
    """Score ``code`` (see :data:`SCORE_CODES`) of the cells; for "cost", minus the total."""
    if code == 6:
        return -(cost[0, 0] * tn + cost[0, 1] * fp + cost[1, 0] * fn + cost[1, 1] * tp)
    precision = tp / _safe(tp + fp)
    recall = tp / _safe(tp + fn)
    specificity = tn / _safe(tn + fp)
    if code == 0:
        return 2.0 * precision * recall / _safe(precision + recall)
    if code == 1:
        under = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
        return (tp * tn - fp * fn) / math.sqrt(_safe(0.0 if 0.0 > under else under))
    if code == 2:
        return recall + specificity - 1.0
    if code == 3:
        return (recall + specificity) / 2.0
    if code == 4:
        return (tp + tn) / _safe(tp + fp + fn + tn)
    return tp / _safe(tp + fp + fn)


# The score twice: a function of its own for the scans given the code at run
# time, and copied into each scan of :func:`best_candidate`, whose code is a
# constant of its closure (the other scores' formulas pruned before typing).
_score = kernel(_score_of)
_score_copied = inline_ir(_score_of)


@inline
def _beats(v, best):
    """``v`` is better than ``best`` by more than a relative :data:`TIE`."""
    return v > best + TIE * abs(best)


def _best_scan(code: int):
    """The scan of :func:`best_candidate` for one score: ``code`` is a constant
    of the closure, so a first query compiles the formula of its own score
    only."""

    def best_of(called, rest, total_p, total_n, cost):
        best_k = 0
        best = -math.inf
        for k in range(called.shape[1]):
            tp, fp, fn, tn = _cells(called, rest, k, total_p, total_n)
            v = _score_copied(code, tp, fp, fn, tn, cost)
            # values equal to 1e-12 are ties (the same rational score rounded two
            # ways): the first, the highest threshold, is kept
            if k == 0 or _beats(v, best):
                best = v
                best_k = k
        return best_k, (-best if code == 6 else best)

    name = _SCORE_NAMES[code]
    return kernel(named(best_of, f"best_{name}", f":func:`best_candidate` of the score {name!r}."))


_SCORE_NAMES = {code: name for name, code in SCORE_CODES.items()}
_BEST_SCANS = {code: _best_scan(code) for code in SCORE_CODES.values()}


def best_candidate(called, rest, total_p, total_n, code, cost):
    """``(k, value)``: the first candidate with the highest score ``code`` (see
    :data:`SCORE_CODES`), or with the lowest total ``cost`` (``[[tn, fp], [fn, tp]]``);
    scores within a relative :data:`TIE` of each other count as equal. Runs the
    scan compiled for that score."""
    return _BEST_SCANS[code](called, rest, total_p, total_n, cost)


@inline
def _trapezoid(area, x0, y0, x1, y1, max_fpr):
    """``area`` with the ROC step from ``(x0, y0)`` to ``(x1, y1)`` added, cut at
    ``max_fpr``, and whether the step reaches past ``max_fpr`` (the walk ends)."""
    if x1 > max_fpr:
        if x0 < max_fpr:
            y_cut = y0 + (y1 - y0) * (max_fpr - x0) / (x1 - x0)
            area += (max_fpr - x0) * (y0 + y_cut) / 2.0
        return area, True
    return area + (x1 - x0) * (y0 + y1) / 2.0, False


@kernel
def partial_area(called, total_p, total_n, max_fpr):
    """Area under the ROC curve (linear between its points) for FPR up to ``max_fpr``."""
    sp = _safe(float(total_p))
    sn = _safe(float(total_n))
    area = 0.0
    x0 = 0.0
    y0 = 0.0
    for k in range(1, called.shape[1]):
        x1 = float(called[1, k]) / sn
        y1 = float(called[0, k]) / sp
        area, past = _trapezoid(area, x0, y0, x1, y1, max_fpr)
        if past:
            return area
        x0 = x1
        y0 = y1
    return area


# ----------------------------------------- the partial area in exact integers
# Without weights the doubled trapezoid of each step of the ROC curve in count
# units, ``d_fp * (tp_prev + tp_cur)``, is an integer: the steps within
# ``max_fpr`` are summed exactly in int64 (in any order: every path gives the
# same integer) and the sum is divided by ``2 P N`` once, after the one cut
# trapezoid, a float, is added. Needs ``2 P N < 2**63`` (the sum never
# exceeds it); the callers fall back to :func:`partial_area` otherwise.

#: the largest ``2 P N`` the exact partial area takes
EXACT_LIMIT = (1 << 63) - 1


@inline
def _past(fp, total_n, max_fpr):
    """Whether a candidate with ``fp`` false positives lies past ``max_fpr``
    (the test of :func:`partial_area`, ``total_n > 0``)."""
    return float(fp) / float(total_n) > max_fpr


@inline
def _cut_offset(max_fpr, total_n, x0):
    """``max_fpr * total_n - x0`` rounded once: the product is split into two
    floats whose sum is exact (Dekker's two-product, Veltkamp's split), so the
    subtraction of ``x0``, close to it, cancels nothing that was rounded."""
    a = max_fpr
    b = float(total_n)
    hi = a * b
    c = 134217729.0 * a  # 2**27 + 1
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = 134217729.0 * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return (hi - float(x0)) + lo


@inline
def exact_area(s2, x0, y0, x1, y1, cut, total_p, total_n, max_fpr):
    """The partial area from ``s2``, the exact doubled area (count units) of the
    steps down to the candidate with ``x0`` false and ``y0`` true positives,
    and, if ``cut``, the next candidate ``(x1, y1)``, past ``max_fpr``, whose
    step is cut there (linear between the two). One rounding of ``s2``
    (exact below ``2**53``), the cut trapezoid's (its width ``max_fpr * N - x0``
    rounded once, see :func:`_cut_offset`), and the division."""
    extra = 0.0
    if cut:
        dx = _cut_offset(max_fpr, total_n, x0)
        w = float(x1 - x0)
        if dx > 0.0:
            if dx > w:
                dx = w
            y_cut = float(y0) + float(y1 - y0) * (dx / w)
            extra = dx * (float(y0) + y_cut)
    return (float(s2) + extra) / float(2 * total_p * total_n)


@kernel
def partial_area_exact(called, total_p, total_n, max_fpr):
    """:func:`partial_area` of int64 running totals in exact integers (see
    :func:`exact_area`); ``total_p``, ``total_n`` > 0, ``2 P N < 2**63``."""
    s2 = 0
    x0 = 0
    y0 = 0
    for k in range(1, called.shape[1]):
        x1 = called[1, k]
        y1 = called[0, k]
        if _past(x1, total_n, max_fpr):
            return exact_area(s2, x0, y0, x1, y1, True, total_p, total_n, max_fpr)
        s2 += (x1 - x0) * (y0 + y1)
        x0 = x1
        y0 = y1
    return exact_area(s2, x0, y0, x0, y0, False, total_p, total_n, max_fpr)


# ------------------------------------------------- a run and sorted pending rows
# An unweighted exact state may hold its points in three sorted parts: one run
# (scores as float64 bits ``rb``, counts ``rab``) and the sorted keys of the
# pending positives ``kp`` and negatives ``kn`` (one row each, repeats
# allowed). The kernels below read the confusion counts of every threshold
# from the three parts as they are, without writing their merged run: the keys
# are cut into *blocks* at every ``step``-th key of each part, and the counts at
# each block's lowest key are summed once (:func:`layer_blocks`); a query then
# finds its block by bisection or skips whole blocks by bounds on its value,
# and walks the few keys of one block in merged order. The candidates, the
# counts and the formulas are those of the kernels above on the merged run.

_TOP = np.uint64(0xFFFFFFFFFFFFFFFF)
_NONE = np.uint64(0)  # below every key (a key is never 0: NaN is never stored)


@inline
def _lower_keys(a, lo, hi, key):
    """The first index in ``[lo, hi)`` of sorted keys ``a`` with ``a[i] >= key``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@inline
def _lower_run(rb, lo, hi, key):
    """:func:`_lower_keys` over the keys of the run's score bits ``rb``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _key(rb[mid]) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@inline
def _fill(rb, rab, kp, kn, ir, ip, jn, tpb, fpb, b, keys, tps, fps):
    """Write block ``b``'s candidates in increasing order, each key with the
    positives and negatives at or above it, into ``keys``, ``tps``, ``fps``
    (room for the block's keys); returns how many.

    One merge pass over the block's keys in the three parts: each step takes
    the lowest head and every head equal to it (as
    :func:`~streammetrics._kernels.rank.run_into` does, so that which part
    holds the lowest key costs no mispredicted branch); a key repeated in
    the pending rows takes more steps, added to one candidate.
    """
    r, r1 = ir[b], ir[b + 1]
    i, i1 = ip[b], ip[b + 1]
    j, j1 = jn[b], jn[b + 1]
    tp = tpb[b]
    fp = fpb[b]
    c = -1
    last = _NONE
    while r < r1 or i < i1 or j < j1:
        x = _key(rb[r]) if r < r1 else _TOP
        y = kp[i] if i < i1 else _TOP
        z = kn[j] if j < j1 else _TOP
        k = y if y < x else x
        k = z if z < k else k
        if k != last:
            c += 1
            keys[c] = k
            tps[c] = tp
            fps[c] = fp
            last = k
        pos = rab[0, r] if r < r1 else 0
        neg = rab[1, r] if r < r1 else 0
        in_run = x == k
        in_p = y == k
        in_n = z == k
        tp -= (pos if in_run else 0) + in_p
        fp -= (neg if in_run else 0) + in_n
        r += in_run
        i += in_p
        j += in_n
    return c + 1


@inline
def _scratch(width):
    """Room for the candidates of the largest block (``width[0]`` keys)."""
    w = 1 if 1 > width[0] else width[0]
    return np.empty(w, np.uint64), np.empty(w, np.int64), np.empty(w, np.int64)


@kernel
def layer_blocks(rb, rab, kp, kn, step):
    """The blocks of a run and sorted pending keys: ``(lows, ir, ip, jn, tp, fp, width)``.

    ``lows[q]`` (increasing) is the lowest key of block ``q``: every
    ``step``-th key of each part, without repeats. ``ir[q]``, ``ip[q]``,
    ``jn[q]`` are where block ``q`` starts in the run, ``kp`` and ``kn``,
    and ``tp[q]``, ``fp[q]`` the positives and negatives at or above
    ``lows[q]``; each has one more entry, the end (with counts 0).
    ``width[0]`` is the most keys a block holds. One pass over the run's
    counts; the keys are only searched.
    """
    mr = rb.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    na = (mr + step - 1) // step
    nb = (n1 + step - 1) // step
    nc = (n0 + step - 1) // step
    lows = np.empty(na + nb + nc, np.uint64)
    # where a block's lowest key is known to start a part (it is that part's
    # sample, and no repeat of it comes before), or -1
    at_r = np.empty(na + nb + nc, np.int64)
    at_p = np.empty(na + nb + nc, np.int64)
    at_n = np.empty(na + nb + nc, np.int64)
    a = 0
    b = 0
    c = 0
    q = 0
    while a < na or b < nb or c < nc:
        k = _TOP
        if a < na:
            k = _key(rb[a * step])
        if b < nb and kp[b * step] < k:
            k = kp[b * step]
        if c < nc and kn[c * step] < k:
            k = kn[c * step]
        if q == 0 or lows[q - 1] != k:
            lows[q] = k
            at_r[q] = -1
            at_p[q] = -1
            at_n[q] = -1
            q += 1
        if a < na and _key(rb[a * step]) == k:
            at_r[q - 1] = a * step  # the run's scores are distinct
            a += 1
        if b < nb and kp[b * step] == k:
            if b == 0 or kp[b * step - 1] < k:
                at_p[q - 1] = b * step
            b += 1
        if c < nc and kn[c * step] == k:
            if c == 0 or kn[c * step - 1] < k:
                at_n[q - 1] = c * step
            c += 1
    lows = lows[:q]
    ir = np.empty(q + 1, np.int64)
    ip = np.empty(q + 1, np.int64)
    jn = np.empty(q + 1, np.int64)
    below_p = np.empty(q + 1, np.int64)
    below_n = np.empty(q + 1, np.int64)
    # where a block starts in a part is known (its sample) or found by reading
    # the part on from the last block's start (streamed: a search per block
    # touches scattered memory); the run's counts are summed on the way
    r = 0
    i = 0
    j = 0
    s0 = 0
    s1 = 0
    for x in range(q):
        low = lows[x]
        if at_r[x] >= 0:
            end = at_r[x]
            for e in range(r, end):
                s0 += rab[0, e]
            for e in range(r, end):
                s1 += rab[1, e]
            r = end
        else:
            while r < mr and _key(rb[r]) < low:
                s0 += rab[0, r]
                s1 += rab[1, r]
                r += 1
        if at_p[x] >= 0:
            i = at_p[x]
        else:
            while i < n1 and kp[i] < low:
                i += 1
        if at_n[x] >= 0:
            j = at_n[x]
        else:
            while j < n0 and kn[j] < low:
                j += 1
        ir[x] = r
        ip[x] = i
        jn[x] = j
        below_p[x] = s0
        below_n[x] = s1
    for e in range(r, mr):
        s0 += rab[0, e]
    for e in range(r, mr):
        s1 += rab[1, e]
    ir[q] = mr
    ip[q] = n1
    jn[q] = n0
    below_p[q] = s0
    below_n[q] = s1
    tp = np.empty(q + 1, np.int64)
    fp = np.empty(q + 1, np.int64)
    for x in range(q + 1):
        tp[x] = (s0 - below_p[x]) + (n1 - ip[x])
        fp[x] = (s1 - below_n[x]) + (n0 - jn[x])
    width = np.zeros(1, np.int64)
    for x in range(q):
        span = (ir[x + 1] - ir[x]) + (ip[x + 1] - ip[x]) + (jn[x + 1] - jn[x])
        if span > width[0]:
            width[0] = span
    return lows, ir, ip, jn, tp, fp, width


@kernel
def layer_counts(rb, rab, kp, kn, lows, ir, ip, jn, tpb, fpb, width, key):
    """``(tp, fp)``: the positives and negatives with a key at or above ``key``."""
    q = _lower_keys(lows, 0, lows.shape[0], key)
    if q == 0:
        return tpb[0], fpb[0]
    b = q - 1  # lows[b] < key <= lows[q]: the block's keys at or above it, and all above
    tp = tpb[q]
    fp = fpb[q]
    r = _lower_run(rb, ir[b], ir[q], key)
    for x in range(r, ir[q]):
        tp += rab[0, x]
        fp += rab[1, x]
    tp += ip[q] - _lower_keys(kp, ip[b], ip[q], key)
    fp += jn[q] - _lower_keys(kn, jn[b], jn[q], key)
    return tp, fp


#: what :func:`layer_search` finds (the predicates of ``OperatingPoints.threshold_for``)
SEARCH_CODES = {"recall": 0, "fpr": 1, "specificity": 2, "precision": 3, "max_precision": 4}


@inline
def _holds(code, tp, fp, total_p, total_n, value):
    tp = float(tp)
    fp = float(fp)
    if code == 0:
        return tp / _safe(float(total_p)) >= value
    if code == 1:
        return fp / _safe(float(total_n)) <= value
    if code == 2:
        tn = float(total_n) - fp
        return tn / _safe(tn + fp) >= value
    return tp / _safe(tp + fp) >= value


@kernel
def layer_search(rb, rab, kp, kn, lows, ir, ip, jn, tpb, fpb, width, code, value):
    """``(status, key, tp, fp, best)`` of a target (:data:`SEARCH_CODES`).

    ``recall``: the highest candidate with ``tp / P >= value``; ``fpr`` and
    ``specificity``: the lowest with ``fp / N <= value`` or ``tn / N >=
    value``; ``precision``: the lowest with ``tp / (tp + fp) >= value``.
    ``status`` is 0 with the candidate's key (``_TOP`` for ``+inf``) and
    counts, or 1 when no candidate meets the target. ``max_precision``: the
    highest precision of any candidate, as ``best``.
    """
    nq = lows.shape[0]
    total_p = tpb[0]
    total_n = fpb[0]
    if code == 0:  # holds from the top down to some candidate
        if _holds(code, 0, 0, total_p, total_n, value):
            return 0, _TOP, 0, 0, 0.0
        if not _holds(code, tpb[0], fpb[0], total_p, total_n, value):
            return 1, _TOP, 0, 0, 0.0
        lo = 0
        hi = nq - 1
        while lo < hi:  # the last block whose lowest key holds
            mid = (lo + hi + 1) >> 1
            if _holds(code, tpb[mid], fpb[mid], total_p, total_n, value):
                lo = mid
            else:
                hi = mid - 1
        keys, tps, fps = _scratch(width)
        c = _fill(rb, rab, kp, kn, ir, ip, jn, tpb, fpb, lo, keys, tps, fps)
        x = 0  # the block's lowest key holds
        while x + 1 < c and _holds(code, tps[x + 1], fps[x + 1], total_p, total_n, value):
            x += 1
        return 0, keys[x], tps[x], fps[x], 0.0
    if code == 1 or code == 2:  # holds from the top down to some candidate, by fp
        if not _holds(code, 0, 0, total_p, total_n, value):
            return 1, _TOP, 0, 0, 0.0
        lo = 0
        hi = nq  # the sentinel (no row above the top) holds
        while lo < hi:  # the first block boundary that holds
            mid = (lo + hi) >> 1
            if _holds(code, tpb[mid], fpb[mid], total_p, total_n, value):
                hi = mid
            else:
                lo = mid + 1
        q = lo
        if q == 0:
            return 0, lows[0], tpb[0], fpb[0], 0.0
        keys, tps, fps = _scratch(width)
        c = _fill(rb, rab, kp, kn, ir, ip, jn, tpb, fpb, q - 1, keys, tps, fps)
        x = c  # the block's lowest key does not hold; the next boundary does
        while x > 0 and _holds(code, tps[x - 1], fps[x - 1], total_p, total_n, value):
            x -= 1
        if x == c:
            return 0, (lows[q] if q < nq else _TOP), tpb[q], fpb[q], 0.0
        return 0, keys[x], tps[x], fps[x], 0.0
    # precision: not monotone; a block is skipped when its bound cannot reach
    # the target (exact: counts are exact in float64, and rounding is monotone)
    best = 0.0  # the +inf candidate: no row called
    keys, tps, fps = _scratch(width)
    for b in range(nq):
        top_tp = float(tpb[b])
        bound = top_tp / _safe(top_tp + float(fpb[b + 1]))
        if code == 3 and bound < value:
            continue
        if code == 4 and bound <= best:
            continue
        c = _fill(rb, rab, kp, kn, ir, ip, jn, tpb, fpb, b, keys, tps, fps)
        for x in range(c):
            tp = float(tps[x])
            v = tp / _safe(tp + float(fps[x]))
            if code == 3 and v >= value:
                return 0, keys[x], tps[x], fps[x], v
            if v > best:
                best = v
    if code == 3:
        if 0.0 >= value:
            return 0, _TOP, 0, 0, 0.0
        return 1, _TOP, 0, 0, best
    return 0, _TOP, 0, 0, best


@inline
def _bound(code, tp_lo, tp_hi, fp_lo, fp_hi, total_p, total_n, cost):
    """An upper bound on score ``code`` as :func:`_score` computes it (rounding
    included) at every candidate with ``tp`` in ``[tp_lo, tp_hi]`` and ``fp`` in
    ``[fp_lo, fp_hi]``, no weights (``fn = P - tp``, ``tn = N - fp``)."""
    p = total_p
    n = total_n
    mag = 1.0  # the size of the terms the rounding errors scale with
    if code == 6:
        # minus the total cost is linear in tp and fp: largest at a corner
        fp_at = fp_hi if cost[0, 0] - cost[0, 1] >= 0.0 else fp_lo
        tp_at = tp_hi if cost[1, 0] - cost[1, 1] >= 0.0 else tp_lo
        v = -(cost[0, 0] * (n - fp_at) + cost[0, 1] * fp_at + cost[1, 0] * (p - tp_at)
              + cost[1, 1] * tp_at)
        mag += (abs(cost[0, 0]) * n + abs(cost[0, 1]) * fp_hi + abs(cost[1, 0]) * p
                + abs(cost[1, 1]) * tp_hi)
    elif code == 0:  # 2 tp / (tp + fp + P): rises with tp, falls with fp
        v = 2.0 * tp_hi / (tp_hi + fp_lo + p) if tp_hi > 0.0 else 0.0
    elif code == 1:  # (tp N - fp P) / sqrt(P N c (T - c)), c = tp + fp called
        top = tp_hi * n - fp_lo * p
        t = p + n
        lo = 1.0 if 1.0 > tp_lo + fp_lo else tp_lo + fp_lo
        hi = t - 1.0 if t - 1.0 < tp_hi + fp_hi else tp_hi + fp_hi
        v = 0.0  # the guard: no row or every row called, or a class absent
        if top > 0.0 and lo <= hi and p > 0.0 and n > 0.0:
            least = lo * (t - lo)  # c (T - c) is concave
            at_hi = hi * (t - hi)
            least = at_hi if at_hi < least else least
            v = top / math.sqrt(p * n * least)
        if p > 0.0 and n > 0.0:
            mag += (tp_hi * n + fp_hi * p) / math.sqrt(p * n * (1.0 if 1.0 > t - 1.0 else t - 1.0))
    elif code == 2:
        v = tp_hi / _safe(p) + (n - fp_lo) / _safe(n) - 1.0
    elif code == 3:
        v = (tp_hi / _safe(p) + (n - fp_lo) / _safe(n)) / 2.0
    elif code == 4:
        v = (tp_hi + n - fp_lo) / _safe(p + n)
    else:  # tp / (fp + P)
        v = tp_hi / _safe(fp_lo + p)
    return v + 1e-13 * (mag + abs(v))


#: candidates of a walked block bounded together by :func:`layer_best`
_GROUP = 16
#: blocks bounded together by :func:`layer_best`
_RUN = 16


@kernel
def layer_best(rb, rab, kp, kn, lows, ir, ip, jn, tpb, fpb, width, code, cost, prune):
    """``(status, key, tp, fp, value)``: the candidate :func:`best_candidate` picks
    (the first, from the top, that beats every earlier one by more than a
    relative :data:`TIE`), read from the blocks (key ``_TOP``: ``+inf``).

    A block whose bound does not beat the best so far holds no pick: skipped.
    With ``prune`` the blocks whose bound is below the best value at some
    blocks' lowest keys are skipped as well, though they may hold a candidate
    the scan would have picked in passing; the scan is then *unsure* until a
    candidate beats the bound of everything before it, which both scans pick,
    after which they agree. ``status`` 1: unsure at the end (scan again
    without ``prune``). Runs of :data:`_RUN` blocks are bounded first, and
    groups of :data:`_GROUP` candidates of a walked block, each skipped as a
    whole when its bound does not beat the best so far (or, pruning, a run is
    below that value): the same pick, fewer scores computed.
    """
    nq = lows.shape[0]
    p = float(tpb[0])
    n = float(fpb[0])
    best = _score(code, 0.0, 0.0, p, n, cost)  # the +inf candidate comes first
    key = _TOP
    at_tp = 0
    at_fp = 0
    floor = -math.inf
    if prune:
        # a value some candidate has: the best at every _RUN-th block's lowest key
        least = best
        for b in range(0, nq, _RUN):
            tp = float(tpb[b])
            fp = float(fpb[b])
            v = _score(code, tp, fp, p - tp, n - fp, cost)
            if v > least:
                least = v
        floor = least - 3.0 * TIE * abs(least)
    keys, tps, fps = _scratch(width)
    sure = True
    high = best  # unsure: a bound on every value before the current candidate
    below = nq  # the blocks from ``below`` up are passed by, in a run of blocks
    for b in range(nq - 1, -1, -1):
        if (nq - 1 - b) % _RUN == 0 and b >= _RUN - 1:
            # the next _RUN blocks bounded as one: passed by together when
            # each block's bound would have been
            lo = b - _RUN + 1
            bound = _bound(code, float(tpb[b + 1]), float(tpb[lo]), float(fpb[b + 1]),
                           float(fpb[lo]), p, n, cost)
            if sure and not _beats(bound, best):
                below = lo
            elif bound < floor:
                if sure:
                    sure = False
                    high = best
                high = bound if bound > high else high
                below = lo
        if b >= below:
            continue
        bound = _bound(code, float(tpb[b + 1]), float(tpb[b]), float(fpb[b + 1]),
                       float(fpb[b]), p, n, cost)
        if sure and not _beats(bound, best):
            continue
        if bound < floor or (not sure and not _beats(bound, high)):
            if sure:
                sure = False
                high = best
            high = bound if bound > high else high
            continue
        c = _fill(rb, rab, kp, kn, ir, ip, jn, tpb, fpb, b, keys, tps, fps)
        top = c - 1  # where the next group of candidates starts
        skip = c  # the candidates from ``skip`` up are passed by
        for x in range(c - 1, -1, -1):
            if x == top:
                top = x - _GROUP
                if sure and x >= _GROUP - 1:
                    # the group, bounded as a block is: passed by (as the
                    # scan would pass each) when its bound cannot beat
                    y = x - _GROUP + 1
                    if not _beats(_bound(code, float(tps[x]), float(tps[y]), float(fps[x]),
                                         float(fps[y]), p, n, cost), best):
                        skip = y
            if x >= skip:
                continue
            ftp = float(tps[x])
            ffp = float(fps[x])
            v = _score(code, ftp, ffp, p - ftp, n - ffp, cost)
            if sure:
                if _beats(v, best):
                    best = v
                    key = keys[x]
                    at_tp = tps[x]
                    at_fp = fps[x]
            elif _beats(v, high):
                sure = True
                best = v
                key = keys[x]
                at_tp = tps[x]
                at_fp = fps[x]
            elif v > high:
                high = v
    if not sure:
        return 1, _TOP, 0, 0, 0.0
    return 0, key, at_tp, at_fp, (-best if code == 6 else best)


@kernel
def layer_partial_area(rb, rab, kp, kn, lows, ir, ip, jn, tpb, fpb, width, max_fpr, saved, known):
    """``(area, known)``: :func:`partial_area` read from the blocks.

    The area is summed from the top in the order :func:`partial_area` sums
    it; ``saved[b]`` holds ``(area, x, y)`` as the sum enters block ``b``
    from above, for the blocks ``b >= known - 1`` (``known`` is ``nq`` when
    none is saved, as for a new state; the top block starts from zeros): a
    later query resumes from there, so that queries together walk the
    state's keys once. Returns the new ``known``.
    """
    nq = lows.shape[0]
    sp = _safe(float(tpb[0]))
    sn = _safe(float(fpb[0]))
    # the block where the cut falls: the highest whose lowest key is past max_fpr
    lo = 0
    hi = nq
    while lo < hi:  # the first boundary within max_fpr (the sentinel is)
        mid = (lo + hi) >> 1
        if float(fpb[mid]) / sn <= max_fpr:
            hi = mid
        else:
            lo = mid + 1
    stop = lo - 1  # -1: the whole curve lies within max_fpr
    if known == nq:
        saved[nq - 1, 0] = 0.0
        saved[nq - 1, 1] = 0.0
        saved[nq - 1, 2] = 0.0
        known = nq - 1
    # from the lowest block whose entry is saved (or the cut's block, if that is
    # saved), walk whole blocks down to the block of the cut
    b = stop if stop > known else known
    b = 0 if 0 > b else b
    area = saved[b, 0]
    x0 = saved[b, 1]
    y0 = saved[b, 2]
    while True:
        cut = b == stop
        # the block's keys from the top down, merged as :func:`_fill` merges
        # them; a candidate is summed once the next key differs from it (the
        # end of the block counts as a different key: keys are never 0)
        r, r0 = ir[b + 1], ir[b]
        i, i0 = ip[b + 1], ip[b]
        j, j0 = jn[b + 1], jn[b]
        tp = tpb[b + 1]
        fp = fpb[b + 1]
        last = _NONE
        while True:
            more = r > r0 or i > i0 or j > j0
            x = _key(rb[r - 1]) if r > r0 else _NONE
            y = kp[i - 1] if i > i0 else _NONE
            z = kn[j - 1] if j > j0 else _NONE
            k = y if y > x else x
            k = z if z > k else k
            if last != _NONE and k != last:  # the candidate ``last`` is complete
                x1 = float(fp) / sn
                y1 = float(tp) / sp
                area, past = _trapezoid(area, x0, y0, x1, y1, max_fpr)
                if past:
                    return area, known
                x0 = x1
                y0 = y1
            if not more:
                break
            last = k
            pos = rab[0, r - 1] if r > r0 else 0
            neg = rab[1, r - 1] if r > r0 else 0
            in_run = x == k
            in_p = y == k
            in_n = z == k
            tp += (pos if in_run else 0) + in_p
            fp += (neg if in_run else 0) + in_n
            r -= in_run
            i -= in_p
            j -= in_n
        if cut or b == 0:
            return area, known
        b -= 1
        if b < known:
            saved[b, 0] = area
            saved[b, 1] = x0
            saved[b, 2] = y0
            known = b


@inline
def _block_area2(rb, rab, kp, kn, ir, ip, jn, tpb, b):
    """The exact doubled area (count units) of block ``b``'s steps, from the
    candidate above it down to its lowest key: each key with ``p`` positives
    and ``q`` negatives adds ``q (2 tp_above + p)``. Integers, so the keys are
    merged from the top down without a float operation."""
    r, r0 = ir[b + 1], ir[b]
    i, i0 = ip[b + 1], ip[b]
    j, j0 = jn[b + 1], jn[b]
    above = tpb[b + 1]
    s2 = 0
    if i == i0 and j == j0:  # the run's entries alone: distinct keys, no merge
        for e in range(r - 1, r0 - 1, -1):
            p = rab[0, e]
            s2 += rab[1, e] * (2 * above + p)
            above += p
        return s2
    p = 0
    q = 0
    last = _NONE
    while r > r0 or i > i0 or j > j0:
        y = kp[i - 1] if i > i0 else _NONE
        z = kn[j - 1] if j > j0 else _NONE
        if r > r0:
            x = _key(rb[r - 1])
            ra = rab[0, r - 1]
            rn = rab[1, r - 1]
        else:
            x = _NONE
            ra = 0
            rn = 0
        k = y if y > x else x
        k = z if z > k else k
        if k != last:
            s2 += q * (2 * above + p)
            above += p
            p = 0
            q = 0
            last = k
        in_run = x == k
        in_p = y == k
        in_n = z == k
        p += ra * in_run + in_p
        q += rn * in_run + in_n
        r -= in_run
        i -= in_p
        j -= in_n
    return s2 + q * (2 * above + p)


@kernel
def layer_partial_exact(rb, rab, kp, kn, lows, ir, ip, jn, tpb, fpb, width, max_fpr, saved, known):
    """``(area, known)``: :func:`partial_area_exact` read from the blocks.

    ``saved[b]`` is the exact doubled area of the blocks above block ``b``,
    for the blocks ``b >= known`` (``known`` is ``nq`` when none is saved);
    the blocks above the cut are summed whole (:func:`_block_area2`) and
    saved, so that later queries add what is saved and walk one block: the
    block of the cut, candidate by candidate. ``2 P N < 2**63``, ``P, N > 0``.
    Returns the new ``known``.
    """
    nq = lows.shape[0]
    total_p = tpb[0]
    total_n = fpb[0]
    lo = 0
    hi = nq
    while lo < hi:  # the first boundary within max_fpr (the sentinel is)
        mid = (lo + hi) >> 1
        if not _past(fpb[mid], total_n, max_fpr):
            hi = mid
        else:
            lo = mid + 1
    stop = lo - 1  # the block of the cut; -1: the whole curve lies within max_fpr
    if known == nq:
        saved[nq - 1] = 0
        known = nq - 1
    b = known
    while b > stop and b > 0:  # whole blocks, down to the cut's
        saved[b - 1] = saved[b] + _block_area2(rb, rab, kp, kn, ir, ip, jn, tpb, b)
        b -= 1
    known = b
    if stop < 0:
        s2 = saved[0] + _block_area2(rb, rab, kp, kn, ir, ip, jn, tpb, 0)
        return exact_area(s2, total_n, total_p, total_n, total_p, False, total_p, total_n,
                          max_fpr), known
    s2 = saved[stop]
    # the cut's block, candidate by candidate from the top (merged as _fill
    # merges them); a candidate is complete once the next key differs
    b = stop
    r, r0 = ir[b + 1], ir[b]
    i, i0 = ip[b + 1], ip[b]
    j, j0 = jn[b + 1], jn[b]
    x0 = fpb[b + 1]
    y0 = tpb[b + 1]
    tp = y0
    fp = x0
    last = _NONE
    while True:
        more = r > r0 or i > i0 or j > j0
        x = _key(rb[r - 1]) if r > r0 else _NONE
        y = kp[i - 1] if i > i0 else _NONE
        z = kn[j - 1] if j > j0 else _NONE
        k = y if y > x else x
        k = z if z > k else k
        if last != _NONE and k != last:  # the candidate ``last`` is complete
            if _past(fp, total_n, max_fpr):
                return exact_area(s2, x0, y0, fp, tp, True, total_p, total_n, max_fpr), known
            s2 += (fp - x0) * (y0 + tp)
            x0 = fp
            y0 = tp
        if not more:
            break
        last = k
        pos = rab[0, r - 1] if r > r0 else 0
        neg = rab[1, r - 1] if r > r0 else 0
        in_run = x == k
        in_p = y == k
        in_n = z == k
        tp += (pos if in_run else 0) + in_p
        fp += (neg if in_run else 0) + in_n
        r -= in_run
        i -= in_p
        j -= in_n
    # not reached: the block's lowest key is past max_fpr
    return exact_area(s2, x0, y0, x0, y0, False, total_p, total_n, max_fpr), known


@kernel
def u2_marked(b1, ab1, kp, kn, every, keys, marks):
    """``(2U, n_pos, n_neg, count)``: :func:`~streammetrics._kernels.rank.u2_run_keys`
    of a run and sorted keys, which also marks block boundaries on its way up.

    At the first key and then at the first new key once ``every`` rows or
    entries were read since the last mark (each step reads at least one), ``marks[c]`` gets ``(r, i,
    j, seen, below, u2)`` (the key in ``keys[c]``): where that key starts in
    the run, ``kp`` and ``kn``, the positives and negatives below it, and
    ``2U`` of the rows below it. ``keys`` and ``marks`` have room for ``(m1
    + n1 + n0) // every + 2`` marks;
    ``count`` is how many were written. The same ``2U`` as ``u2_run_keys``
    (the caller guarantees ``2 n_pos n_neg < 2**63``).
    """
    m1 = b1.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    r = 0
    i = 0
    j = 0
    below = 0
    seen = 0
    p = 0
    q = 0
    u2 = 0
    last = _NONE
    count = 0
    mark = 0  # the next mark: at the first new key once r + i + j reaches it
    while r < m1 or i < n1 or j < n0:
        a = kp[i] if i < n1 else _TOP
        b = kn[j] if j < n0 else _TOP
        if r < m1:
            c = _key(b1[r])
            ra = ab1[0, r]
            rb = ab1[1, r]
        else:
            c = _TOP
            ra = 0
            rb = 0
        k = b if b < a else a
        k = c if c < k else k
        tr = c == k
        tp = a == k
        tn = b == k
        if k != last:
            u2 += p * (2 * below + q)
            below += q
            seen += p
            p = 0
            q = 0
            last = k
            if r + i + j >= mark:
                keys[count] = k
                marks[count, 0] = r
                marks[count, 1] = i
                marks[count, 2] = j
                marks[count, 3] = seen
                marks[count, 4] = below
                marks[count, 5] = u2
                count += 1
                mark = r + i + j + every
        p += ra * tr + tp
        q += rb * tr + tn
        r += tr
        i += tp
        j += tn
    return u2 + p * (2 * below + q), seen + p, below + q, count
