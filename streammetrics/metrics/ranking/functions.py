"""The one-shot ranking functions: the AUC of arrays, their curves and average precision."""

from __future__ import annotations

import numpy as np

from ..._kernels.keys import append_split
from ..._kernels.pairs import u2_sorted
from ..._protocol.errors import NoObservationsError
from ..._protocol.inputs import convert, raise_rejected
from ..._protocol.result import safe
from ..labels import positives
from .accumulator import RankAUC
from .points import INT64_LIMIT, auc_of_chunks
from .sorting import sort_classes, sorted_run

__all__ = ["auc", "roc_curve", "pr_curve", "average_precision", "partial_auc"]
__all__ += ["det_curve", "confusion_matrix_at_thresholds"]


def auc(y, s, *, sample_weight=None, pos_label=None) -> float:
    """Area under the ROC curve: ``U / safe(n_pos n_neg)`` with midranks (0 with a single class, where scikit-learn
    returns NaN). ``y``: 0/1 labels or the one-hot matrix ``g``; ``s``: finite scores; ``sample_weight`` counts
    each pair with the product of its rows' weights; ``pos_label``: the positive class of labels of any kind.

    >>> from streammetrics import auc
    >>> g = [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]]
    >>> s = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]
    >>> round(auc(g, s), 6)
    0.833333
    >>> auc([0, 0, 0, 1, 1, 1, 1], s) == auc(g, s) == 10 / 12
    True
    """
    inputs = RankAUC.inputs
    (y, s), w, n = convert(inputs, (positives(y, pos_label), s), sample_weight)
    if n == 0:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    weighted = w.shape[0] > 0
    keys, vals = np.empty(n, np.uint64), np.empty(n) if weighted else None
    status, n_pos, back = append_split(y, s.view(np.uint64), w if weighted else None, keys, vals, 0, n)
    if status:
        raise_rejected(inputs, (y, s))
    n_neg = n - back
    if not weighted and 2 * n_pos * n_neg < INT64_LIMIT:  # the pairs counted by one merge of the sorted classes
        sort_classes(keys, n_pos, back)
        return int(u2_sorted(keys[:n_pos], keys[back:])) / (2 * safe(n_pos * n_neg))
    run = sorted_run(keys, n_pos, back, vals)
    return auc_of_chunks(lambda: iter([run]), weighted)[0]


def _one_shot(y, s, sample_weight, pos_label=None) -> RankAUC:
    acc = RankAUC(pos_label=pos_label).update(y, s, sample_weight=sample_weight)
    if acc.n == 0:
        raise NoObservationsError("y and s are empty: the curve needs at least one observation")
    return acc


def roc_curve(y, s, *, sample_weight=None, pos_label=None):
    """ROC curve ``(fpr, tpr, thresholds)``: see :meth:`RankAUC.roc_curve` (``pos_label``: see :class:`RankAUC`).

    >>> from streammetrics import roc_curve
    >>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr, tpr
    (array([0. , 0. , 0.5, 0.5, 1. ]), array([0. , 0.5, 0.5, 1. , 1. ]))
    """
    return _one_shot(y, s, sample_weight, pos_label).roc_curve()


def pr_curve(y, s, *, sample_weight=None, pos_label=None):
    """Precision-recall curve ``(precision, recall, thresholds)``: see :meth:`RankAUC.pr_curve`.

    >>> from streammetrics import pr_curve
    >>> precision, recall, thresholds = pr_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> precision
    array([0.5 , 0.666..., 0.5 , 1. , 1. ])
    """
    return _one_shot(y, s, sample_weight, pos_label).pr_curve()


def average_precision(y, s, *, sample_weight=None, pos_label=None) -> float:
    """Average precision ``sum_k (R_k - R_{k-1}) P_k`` (scikit-learn's; 0 with no positive).

    >>> from streammetrics import average_precision
    >>> round(average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 6)
    0.833333
    """
    return _one_shot(y, s, sample_weight, pos_label).average_precision()


def partial_auc(y, s, max_fpr, *, mcclish: bool = False, sample_weight=None, pos_label=None) -> float:
    """Area under the ROC curve up to ``max_fpr``: see :meth:`RankAUC.partial_auc`.

    >>> from streammetrics import partial_auc
    >>> partial_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.5)
    0.25
    """
    return _one_shot(y, s, sample_weight, pos_label).partial_auc(max_fpr, mcclish=mcclish)


def det_curve(y, s, *, pos_label=None, sample_weight=None, drop_intermediate: bool = False):
    """Detection error tradeoff curve ``(fpr, fnr, thresholds)``: see :meth:`RankAUC.det_curve`. ``pos_label``: the
    positive class of labels other than 0/1 (strings or any hashable values).

    >>> from streammetrics import det_curve
    >>> fpr, fnr, thresholds = det_curve(["ham", "ham", "spam", "spam"], [0.1, 0.4, 0.35, 0.8], pos_label="spam")
    >>> fpr, fnr
    (array([0.5, 0.5, 0. ]), array([0. , 0.5, 0.5]))
    """
    return _one_shot(y, s, sample_weight, pos_label).det_curve(drop_intermediate=drop_intermediate)


def confusion_matrix_at_thresholds(y, s, *, pos_label=None, sample_weight=None):
    """``(tns, fps, fns, tps, thresholds)`` at every distinct score: see
    :meth:`RankAUC.confusion_matrix_at_thresholds`.

    >>> from streammetrics import confusion_matrix_at_thresholds
    >>> tns, fps, fns, tps, thresholds = confusion_matrix_at_thresholds([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> tps, thresholds
    (array([1., 1., 2., 2.]), array([0.8 , 0.4 , 0.35, 0.1 ]))
    """
    return _one_shot(y, s, sample_weight, pos_label).confusion_matrix_at_thresholds()
