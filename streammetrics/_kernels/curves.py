"""Average precision straight from a rank state's sorted points.

The curves of :mod:`streammetrics.metrics.ranking.curves` build the whole
precision-recall curve with numpy (a reversed copy of the scores, two
cumulative sums, their casts, the precision and recall arrays reversed and
extended) before average precision sums one product per point. For the
average precision alone, :func:`ap_terms` writes those products in one pass
over the points, each one computed by the same operations in the same order
as there, so the sum (``numpy.sum`` of the terms, pairwise as before) is the
same to the last bit.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = ["ap_terms"]


@kernel
def ap_terms(ab, out):
    """The terms ``(R[k+1] - R[k]) * P[k]`` of average precision into ``out``.

    ``ab[0, i]``, ``ab[1, i]`` are the positive and negative mass at the
    ``i``-th distinct score, scores increasing (int64 counts or float64
    weights). ``P`` and ``R`` are the precision and recall in increasing order
    of threshold with the final point ``(1, 0)`` appended, as
    ``precision_recall_curve`` gives them: ``k = 0`` is the lowest score. The
    cumulative masses run from the highest score down, as ``numpy.cumsum``
    of the reversed rows adds them, and are cast to float64 after summing.
    """
    n = ab.shape[1]
    if n == 0:
        return
    total = ab[0, 0] - ab[0, 0]  # zero of the rows' type
    for i in range(n - 1, -1, -1):
        total += ab[0, i]
    t_all = np.float64(total)
    denom = t_all + (1.0 if t_all == 0.0 else 0.0)  # safe(x) = x + [x == 0]
    tp = ab[0, 0] - ab[0, 0]
    fp = ab[1, 0] - ab[1, 0]
    prev_recall = 0.0  # recall above the highest score: the appended point
    # the curve in decreasing order of threshold is the points from the top;
    # out[k] belongs to point k (increasing), so fill from the top down
    for i in range(n - 1, -1, -1):
        tp += ab[0, i]
        fp += ab[1, i]
        tps = np.float64(tp)
        ps = tps + np.float64(fp)
        precision = tps / ps if ps != 0.0 else 0.0
        recall = tps / denom
        out[i] = (prev_recall - recall) * precision
        prev_recall = recall
