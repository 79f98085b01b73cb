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

from ._jit import inline, kernel
from .compensated import add

__all__ = ["running_sums", "precision_reach", "best_candidate", "partial_area", "SCORE_CODES"]

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


@kernel
def best_candidate(called, rest, total_p, total_n, code, cost):
    """``(k, value)``: the first candidate with the highest score ``code`` (see
    :data:`SCORE_CODES`), or with the lowest total ``cost`` (``[[tn, fp], [fn, tp]]``);
    scores within a relative :data:`TIE` of each other count as equal."""
    best_k = 0
    best = -math.inf
    for k in range(called.shape[1]):
        tp, fp, fn, tn = _cells(called, rest, k, total_p, total_n)
        if code == 6:
            v = -(cost[0, 0] * tn + cost[0, 1] * fp + cost[1, 0] * fn + cost[1, 1] * tp)
        else:
            precision = tp / _safe(tp + fp)
            recall = tp / _safe(tp + fn)
            specificity = tn / _safe(tn + fp)
            if code == 0:
                v = 2.0 * precision * recall / _safe(precision + recall)
            elif code == 1:
                under = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
                v = (tp * tn - fp * fn) / math.sqrt(_safe(max(under, 0.0)))
            elif code == 2:
                v = recall + specificity - 1.0
            elif code == 3:
                v = (recall + specificity) / 2.0
            elif code == 4:
                v = (tp + tn) / _safe(tp + fp + fn + tn)
            else:
                v = tp / _safe(tp + fp + fn)
        # values equal to 1e-12 are ties (the same rational score rounded two
        # ways): the first, the highest threshold, is kept
        if k == 0 or v > best + TIE * abs(best):
            best = v
            best_k = k
    return best_k, (-best if code == 6 else best)


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
        if x1 > max_fpr:
            if x0 < max_fpr:
                y_cut = y0 + (y1 - y0) * (max_fpr - x0) / (x1 - x0)
                area += (max_fpr - x0) * (y0 + y_cut) / 2.0
            return area
        area += (x1 - x0) * (y0 + y1) / 2.0
        x0 = x1
        y0 = y1
    return area
