"""Per-class rates and their averages, and the checks of the settings they take.

The binary and the multiclass scores share these: F-beta's ``b``, the
``average=`` and ``zero_division=`` keywords of the one-shot functions, and a
score threshold.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._protocol.errors import NoObservationsError
from .._protocol.result import safe


def one_shot(acc, *arrays, sample_weight=None):
    """``acc`` updated with one batch (a one-shot function's); ``NoObservationsError`` if it holds no row."""
    acc.update(*arrays, sample_weight=sample_weight)
    if acc.n == 0:
        names = " and ".join(i.name for i in acc.inputs)
        raise NoObservationsError(f"{names} are empty: the scores need at least one observation")
    return acc


def check_beta(b, name: str = "b") -> float:
    """``b`` as a float > 0, or ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(b).__name__}")
    b = float(b)
    if not (b > 0 and math.isfinite(b)):
        raise ValueError(f"{name} must be a finite number > 0, got {b!r}")
    return b


def check_threshold(threshold):
    """A score threshold as a finite float (``None`` stays)."""
    if threshold is None:
        return None
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise TypeError(f"threshold must be a real number or None, got {type(threshold).__name__}")
    threshold = float(threshold)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    return threshold


def plain(v):
    """A numpy scalar as the Python scalar it holds (so settings stay JSON)."""
    return v.item() if isinstance(v, np.generic) else v


#: the values of ``average=``: scikit-learn's, ``None`` giving per-class arrays
AVERAGES = ("binary", "micro", "macro", "weighted", None)


def check_average(average, allow_binary: bool = True):
    """``average`` checked: one of :data:`AVERAGES` (``TypeError``/``ValueError``)."""
    allowed = AVERAGES if allow_binary else AVERAGES[1:]
    if average is not None and not isinstance(average, str):
        raise TypeError(f"average must be a string or None, got {type(average).__name__}")
    if average not in allowed:
        names = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"average must be one of {names}; got {average!r}")
    return average


def check_zero_division(zero_division) -> float:
    """``zero_division`` as the float 0.0, 1.0 or NaN (``TypeError``/``ValueError``)."""
    if isinstance(zero_division, (bool, np.bool_)) or not isinstance(zero_division, numbers.Real):
        raise TypeError(f"zero_division must be 0, 1 or np.nan, got {type(zero_division).__name__}")
    v = float(zero_division)
    if not (v in (0.0, 1.0) or math.isnan(v)):
        raise ValueError(f"zero_division must be 0, 1 or np.nan, got {zero_division!r}")
    return v


def _divide(num, den, zero_division: float) -> np.ndarray:
    """``num / den``, with ``zero_division`` where ``den`` is 0."""
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.full(np.broadcast(num, den).shape, zero_division, np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def class_rates(tp, called, support, beta: float = 1.0, zero_division: float = 0.0):
    """Per-class ``(precision, recall, fbeta)`` of hits, predicted and true totals.

    With ``zero_division=0`` these are the specification's guarded formulas
    (F from the guarded precision and recall, exactly as ``f1``). Otherwise a
    rate with a zero denominator takes the value ``zero_division`` and F is
    scikit-learn's ``(1 + b²) TP / (b² (TP + FN) + (TP + FP))``, which is
    ``zero_division`` only when a class is neither in the truth nor predicted.
    """
    precision = _divide(tp, called, zero_division)
    recall = _divide(tp, support, zero_division)
    b2 = beta * beta
    if zero_division == 0:
        f = (1 + b2) * precision * recall / safe(b2 * precision + recall)
    else:
        f = _divide(
            (1 + b2) * np.asarray(tp, np.float64),
            b2 * np.asarray(support, np.float64) + np.asarray(called, np.float64),
            zero_division,
        )
    return precision, recall, f


def _mean(x: np.ndarray, weights=None) -> float:
    """The (weighted) mean of ``x`` leaving NaN out (NaN if all are); all-zero
    weights count every value alike."""
    keep = ~np.isnan(x)
    if not keep.any():
        return math.nan
    x = x[keep]
    if weights is not None:
        w = np.asarray(weights, np.float64)[keep]
        if w.sum() > 0:
            return float(np.dot(w, x) / w.sum())
    return float(np.mean(x))


def averaged_rates(matrix: np.ndarray, present: np.ndarray, beta=1.0, average="macro", zero_division=0.0):
    """``(precision, recall, fbeta)`` of a confusion matrix under ``average``.

    ``"macro"`` averages over the ``present`` classes, ``"weighted"`` weights
    them by support, ``"micro"`` pools the counts first and ``None`` gives
    the per-class arrays. A rate equal to NaN (``zero_division=np.nan``) is
    left out of an average.
    """
    tp = np.diagonal(matrix).astype(np.float64)
    support = matrix.sum(axis=1).astype(np.float64)
    called = matrix.sum(axis=0).astype(np.float64)
    if average == "micro":
        return tuple(float(v) for v in class_rates(tp.sum(), called.sum(), support.sum(), beta, zero_division))
    rates = class_rates(tp, called, support, beta, zero_division)
    if average is None:
        return rates
    if average == "macro":
        return tuple(_mean(r[present]) for r in rates)
    return tuple(_mean(r, support) for r in rates)


def check_jaccard_zero_division(zero_division) -> float:
    """``zero_division`` of the Jaccard index: 0, 1, or ``"warn"`` (read as 0), as scikit-learn takes."""
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0
    if isinstance(zero_division, (bool, np.bool_)) or not isinstance(zero_division, numbers.Real):
        raise TypeError(f"zero_division must be 0, 1 or 'warn', got {type(zero_division).__name__}")
    if float(zero_division) not in (0.0, 1.0):
        raise ValueError(f"zero_division must be 0, 1 or 'warn', got {zero_division!r}")
    return float(zero_division)


def jaccard_average(tp, fp, fn, average, zero_division: float = 0.0):
    """The Jaccard index ``TP / (TP + FP + FN)`` per class (``average=None``; ``zero_division`` where a class is
    neither true nor predicted) or averaged: ``"micro"`` pools the counts, ``"macro"`` is the plain mean and
    ``"weighted"`` weights by support (a plain mean when no class has any)."""
    tp, fp, fn = (np.asarray(a, np.float64) for a in (tp, fp, fn))
    if average == "micro":
        return float(_divide(tp.sum(), tp.sum() + fp.sum() + fn.sum(), zero_division))
    per = _divide(tp, tp + fp + fn, zero_division)
    if average is None:
        return per
    support = tp + fn
    if average == "weighted" and support.sum() > 0:
        return float(np.dot(per, support) / support.sum())
    return float(np.mean(per))


def fbeta_average(tp, fp, fn, beta: float, average, zero_division: float = 0.0):
    """F-beta of per-label counts (multilabel), per label (``average=None``) or averaged as :func:`averaged_rates`
    averages a confusion matrix's (``"macro"`` over every label)."""
    tp, fp, fn = (np.asarray(a, np.float64) for a in (tp, fp, fn))
    if average == "micro":
        return float(class_rates(tp.sum(), tp.sum() + fp.sum(), tp.sum() + fn.sum(), beta, zero_division)[2])
    f = class_rates(tp, tp + fp, tp + fn, beta, zero_division)[2]
    if average is None:
        return f
    return _mean(f, tp + fn if average == "weighted" else None)
