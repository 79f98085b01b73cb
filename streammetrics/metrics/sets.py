"""Set-wise scores of class labels, each one formula on a confusion state: the Jaccard index under every average, the
Hamming loss and the class likelihood ratios, with scikit-learn's names and keywords.

Binary and multiclass data are read through their labels (:func:`~.labels.label_matrix`, any hashable labels), the
multilabel ``n x L`` indicator matrices through :class:`~.multilabel.MultilabelConfusion`.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .labels import label_matrix, labels_as_array, two_label_counts
from .multilabel import MultilabelConfusion
from .rates import check_average, check_jaccard_zero_division, jaccard_average, one_shot

__all__ = ["jaccard_score", "hamming_loss", "class_likelihood_ratios", "UndefinedMetricWarning"]


class UndefinedMetricWarning(UserWarning):
    """A score whose denominator is zero was replaced (``class_likelihood_ratios``' ``replace_undefined_by``)."""


def _multilabel(y) -> bool:
    """Whether ``y`` is an ``n x L`` indicator matrix (``L >= 2``; a single column is a vector)."""
    return labels_as_array(y, "y").ndim == 2


def _multilabel_result(y, p, sample_weight):
    L = labels_as_array(y, "y").shape[1]
    return one_shot(MultilabelConfusion(L), y, p, sample_weight=sample_weight).finalize()


def _pick(labels, chosen, *arrays):
    """``arrays`` (per label) reindexed to the labels ``chosen`` (a label not in the data: zeros)."""
    if chosen is None:
        return arrays
    at = {v: i for i, v in enumerate(labels)}
    idx = np.array([at.get(v.item() if isinstance(v, np.generic) else v, -1) for v in chosen], np.int64)
    return tuple(np.where(idx >= 0, np.asarray(a, np.float64)[np.maximum(idx, 0)], 0.0) for a in arrays)


def jaccard_score(y, p, *, labels=None, pos_label=1, average="binary", sample_weight=None, zero_division=0):
    """Jaccard index ``TP / (TP + FP + FN)`` per class, averaged as scikit-learn's ``jaccard_score``.

    ``average``: ``"binary"`` (the class ``pos_label`` of two-label data), ``"micro"`` (counts pooled), ``"macro"``,
    ``"weighted"`` (by support), ``"samples"`` (the mean over rows, multilabel only) or ``None`` (per class, in sorted
    label order, or per column). ``y`` and ``p`` are labels of any kind, or ``n x L`` 0/1 indicator matrices
    (multilabel). ``labels``: the classes (or column indices) to score, in order. ``zero_division`` (0, 1, or
    ``"warn"`` read as 0 with no warning): the value of a class neither in the truth nor predicted.

    >>> from streammetrics import jaccard_score
    >>> jaccard_score([1, 1, 1, 0], [1, 0, 1, 1])
    0.5
    >>> jaccard_score(["cat", "dog", "dog", "bird"], ["cat", "dog", "bird", "bird"], average=None)
    array([0.5, 1. , 0.5])
    >>> jaccard_score([[1, 0, 1], [0, 1, 1]], [[1, 1, 1], [0, 1, 0]], average="samples")
    0.583...
    """
    if average != "samples":
        average = check_average(average)
    zd = check_jaccard_zero_division(zero_division)
    if _multilabel(y):
        if average == "binary":
            raise ValueError(
                "y is multilabel (an n x L matrix), but average='binary': pass average='micro', "
                "'macro', 'weighted', 'samples' or None"
            )
        r = _multilabel_result(y, p, sample_weight)
        if average == "samples":
            # the state's per-row sums give a row with no label true nor predicted 0 over every column
            if zd == 0 and labels is None:
                return float(r.samples_jaccard)
            return _samples_jaccard(y, p, sample_weight, labels, zd)
        tp, fp, fn = _pick(range(len(r.tp)), labels, r.tp, r.fp, r.fn)
    else:
        if average == "samples":
            raise ValueError("average='samples' is the mean over the rows of multilabel data: pass an n x L matrix")
        if average == "binary":
            tp, fp, fn, _ = two_label_counts(y, p, sample_weight, pos_label)
            return jaccard_average(tp, fp, fn, "micro", zd)
        names, m = label_matrix(y, p, sample_weight)
        hit = np.diagonal(m)
        tp, fp, fn = _pick(names, labels, hit, m.sum(axis=0) - hit, m.sum(axis=1) - hit)
    return jaccard_average(tp, fp, fn, average, zd)


def _samples_jaccard(y, p, sample_weight, labels, zd: float) -> float:
    """The mean over rows of each row's Jaccard index over the columns ``labels``."""
    Y = np.asarray(labels_as_array(y, "y"), np.float64)
    P = np.asarray(labels_as_array(p, "p"), np.float64)
    if labels is not None:
        cols = np.asarray(labels, np.int64)
        Y, P = Y[:, cols], P[:, cols]
    inter, union = (Y * P).sum(axis=1), np.maximum(Y, P).sum(axis=1)
    per = jaccard_average(inter, union - inter, 0.0, None, zd)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    return float(np.average(per, weights=w))


def hamming_loss(y, p, *, sample_weight=None) -> float:
    """The share of labels predicted wrong: ``1 - accuracy`` of binary or multiclass labels (any kind), the share of
    wrong cells of ``n x L`` indicator matrices (multilabel), weighted by ``sample_weight``.

    >>> from streammetrics import hamming_loss
    >>> hamming_loss([2, 2, 3, 4], [1, 2, 3, 4])
    0.25
    >>> hamming_loss([[0, 1], [1, 1]], [[0, 0], [0, 0]])
    0.75
    """
    if _multilabel(y):
        return float(_multilabel_result(y, p, sample_weight).hamming_loss)
    _, m = label_matrix(y, p, sample_weight)
    total = m.sum()
    if total == 0:
        raise ValueError("the sample weights sum to zero: every score is undefined")
    if m.dtype.kind in "iu":
        return (int(total) - int(np.trace(m))) / int(total)
    return float((total - np.trace(m)) / total)


def _undefined(replace_undefined_by):
    """``{"LR+": value, "LR-": value}`` of ``replace_undefined_by`` (``np.nan``, 1.0 or such a dict), checked."""
    if isinstance(replace_undefined_by, dict):
        pos, neg = replace_undefined_by.get("LR+"), replace_undefined_by.get("LR-")
        ok = set(replace_undefined_by) == {"LR+", "LR-"} and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (pos, neg)
        )
        if ok and (math.isnan(pos) or pos >= 1.0) and (math.isnan(neg) or 0.0 <= neg <= 1.0):
            return {"LR+": float(pos), "LR-": float(neg)}
        raise ValueError(
            "replace_undefined_by must be np.nan, 1.0 or {'LR+': value in [1, inf] or nan, 'LR-': value in [0, 1] "
            f"or nan}}; got {replace_undefined_by!r}"
        )
    if isinstance(replace_undefined_by, numbers.Real) and not isinstance(replace_undefined_by, bool):
        v = float(replace_undefined_by)
        if math.isnan(v) or v == 1.0:
            return {"LR+": v, "LR-": v}
    raise ValueError(f"replace_undefined_by must be np.nan, 1.0 or a dict; got {replace_undefined_by!r}")


def class_likelihood_ratios(y, p, *, labels=None, sample_weight=None, replace_undefined_by=np.nan):
    """``(LR+, LR-)``: ``LR+ = recall / (1 - specificity)`` and ``LR- = (1 - recall) / specificity`` of two-label
    data, as scikit-learn's ``class_likelihood_ratios``: the positive class is the greater label (or ``labels[1]``
    of ``labels=[negative, positive]``). A ratio whose denominator is zero is ``replace_undefined_by`` (``np.nan``
    by default, ``1.0``, or ``{"LR+": value, "LR-": value}``) with an :class:`UndefinedMetricWarning`: the one place
    this library returns NaN, as scikit-learn does, and never silently. With no row of the positive class both are
    ``replace_undefined_by`` (scikit-learn gives NaN then, whatever it says).

    >>> from streammetrics import class_likelihood_ratios
    >>> class_likelihood_ratios([0, 1, 0, 1, 0], [1, 1, 0, 0, 0])
    (1.5, 0.75)
    """
    replace = _undefined(replace_undefined_by)
    names, m = label_matrix(y, p, sample_weight)
    labels = names if labels is None else list(labels)
    if len(labels) != 2:
        raise ValueError(
            f"class_likelihood_ratios scores two-label data, got the labels {labels!r}: "
            "pass labels=[negative, positive]"
        )
    at = {v: i for i, v in enumerate(names)}
    idx = [at.get(v.item() if isinstance(v, np.generic) else v) for v in labels]
    cast = int if m.dtype.kind in "iu" else float
    (tn, fp), (fn, tp) = [[cast(m[i, j]) if i is not None and j is not None else 0 for j in idx] for i in idx]
    support_pos, support_neg = tp + fn, tn + fp
    if support_pos == 0:  # scikit-learn gives NaN here whatever replace_undefined_by says
        _warn("no row of the positive class is in y: both likelihood ratios are undefined")
        return replace["LR+"], replace["LR-"]
    if fp == 0:
        _warn("no false positive: LR+ = recall / (1 - specificity) is undefined")
        lr_pos = replace["LR+"]
    else:
        lr_pos = _quotient(tp * support_neg, fp * support_pos)
    if tn == 0:
        _warn("no true negative: LR- = (1 - recall) / specificity is undefined")
        lr_neg = replace["LR-"]
    else:
        lr_neg = _quotient(fn * support_neg, tn * support_pos)
    return lr_pos, lr_neg


def _quotient(num, den) -> float:
    return float(num / den) if den != 0 else math.nan


def _warn(what: str) -> None:
    warnings.warn(f"{what}: set to replace_undefined_by", UndefinedMetricWarning, stacklevel=3)
