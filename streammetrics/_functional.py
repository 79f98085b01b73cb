"""One-shot functions of the specification for binary, probabilistic and
regression scores.

Every function reads its arguments as (truth, prediction) and takes
``sample_weight=None``. Each one folds its input into the matching accumulator
and reads the score from the same finalize path, so a function and its
accumulator can never disagree. Empty input raises ``ValueError``.
"""

from __future__ import annotations

from ._binary import _check_beta, _fbeta, binary_counts, binary_result
from ._probability import ProbabilityScores
from ._regression import RegressionErrors

__all__ = [
    "hits", "false_calls", "missed", "rejected", "called", "actual",
    "accuracy", "precision_score", "recall_score", "specificity", "f1", "fbeta",
    "matthews", "balanced_accuracy", "log_loss", "brier",
    "mse", "rmse", "mae", "mape", "r2",
]


def _scores(y, p, sample_weight):
    return binary_result(*binary_counts(y, p, sample_weight)[:4], n=0)


def _once(acc, y, p, sample_weight):
    acc.update(y, p, sample_weight=sample_weight)
    if acc.n == 0:
        raise ValueError("y and p are empty: the score needs at least one observation")
    return acc.finalize()


# ------------------------------------------------------------------- counts
def hits(y, p, *, sample_weight=None):
    """True positives: ``TP = sum_i y_i p_i``.

    ``y`` and ``p`` are hard 0/1 labels (bool, int, or float holding exactly
    0.0/1.0). Unweighted counts are ``int``; with ``sample_weight`` the weighted
    count is a ``float``.

    >>> hits([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    2
    """
    return binary_counts(y, p, sample_weight)[0]


def false_calls(y, p, *, sample_weight=None):
    """False positives: ``FP = sum_i (1 - y_i) p_i``.

    >>> false_calls([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return binary_counts(y, p, sample_weight)[1]


def missed(y, p, *, sample_weight=None):
    """False negatives: ``FN = sum_i y_i (1 - p_i)``.

    >>> missed([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return binary_counts(y, p, sample_weight)[2]


def rejected(y, p, *, sample_weight=None):
    """True negatives: ``TN = sum_i (1 - y_i)(1 - p_i)``.

    >>> rejected([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return binary_counts(y, p, sample_weight)[3]


def called(y, p, *, sample_weight=None):
    """Predicted positives: ``TP + FP = sum_i p_i``.

    >>> called([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    3
    """
    tp, fp, _, _, _ = binary_counts(y, p, sample_weight)
    return tp + fp


def actual(y, *, sample_weight=None):
    """Actual positives: ``sum_i y_i``.

    >>> actual([1, 1, 1, 0, 0])
    3
    """
    tp, _, fn, _, _ = binary_counts(y, y, sample_weight)
    return tp + fn


# -------------------------------------------------------------------- rates
def accuracy(y, p, *, sample_weight=None) -> float:
    """Share of observations predicted correctly: ``(TP + TN) / n``.

    >>> accuracy([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.75
    """
    return _scores(y, p, sample_weight).accuracy


def precision_score(y, p, *, sample_weight=None) -> float:
    """Precision ``TP / safe(TP + FP)``: 0 when nothing is predicted positive.

    Agrees with scikit-learn's ``precision_score(..., zero_division=0)``.

    >>> precision_score([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    >>> precision_score([1, 1, 1, 0], [0, 0, 0, 0])
    0.0
    """
    return _scores(y, p, sample_weight).precision


def recall_score(y, p, *, sample_weight=None) -> float:
    """Recall (sensitivity) ``TP / safe(TP + FN)``: 0 when there are no positives.

    Agrees with scikit-learn's ``recall_score(..., zero_division=0)``.

    >>> recall_score([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    """
    return _scores(y, p, sample_weight).recall


def specificity(y, p, *, sample_weight=None) -> float:
    """Specificity ``TN / safe(TN + FP)``: 0 when there are no negatives.

    >>> specificity([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.8
    """
    return _scores(y, p, sample_weight).specificity


def f1(y, p, *, sample_weight=None) -> float:
    """F1 ``2PR / safe(P + R)``: 0 when precision and recall are both 0.

    Agrees with scikit-learn's ``f1_score(..., zero_division=0)``.

    >>> f1([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    """
    return _scores(y, p, sample_weight).f1


def fbeta(y, p, b, *, sample_weight=None) -> float:
    """F-beta ``(1 + b²) P R / safe(b² P + R)``; ``b`` > 0 weights recall.

    Agrees with scikit-learn's ``fbeta_score(..., beta=b, zero_division=0)``.

    >>> fbeta([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0], 2)
    0.666...
    """
    b = _check_beta(b)
    r = _scores(y, p, sample_weight)
    return _fbeta(r.precision, r.recall, b)


def matthews(y, p, *, sample_weight=None) -> float:
    """Matthews correlation ``(TP TN - FP FN) / sqrt(safe(product of margins))``.

    A zero margin gives 0 (scikit-learn agrees). The product of the four
    margins is formed exactly, never in overflowing int64.

    >>> round(matthews([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0]), 6)
    0.466667
    """
    return _scores(y, p, sample_weight).mcc


def balanced_accuracy(y, p, *, sample_weight=None) -> float:
    """``(recall + specificity) / 2`` with the guarded rates.

    Differs from scikit-learn when one class is absent from ``y``: scikit-learn
    averages only the classes present, here the absent class's rate is a
    guarded 0.

    >>> balanced_accuracy([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.733...
    """
    return _scores(y, p, sample_weight).balanced_accuracy


# ---------------------------------------------------------- probabilistic
def log_loss(y, p, *, sample_weight=None) -> float:
    """Binary cross-entropy, probabilities floored at 1e-12 on both sides.

    ``-mean(y ln max(p, 1e-12) + (1 - y) ln max(1 - p, 1e-12))``. scikit-learn
    clips at the float64 epsilon instead, so the two differ only for
    probabilities within 1e-12 of 0 or 1.

    >>> round(log_loss([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]), 6)
    0.337539
    """
    return _once(ProbabilityScores(), y, p, sample_weight).log_loss


def brier(y, p, *, sample_weight=None) -> float:
    """Brier score ``mean((p - y)²)``.

    >>> brier([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4])
    0.0925
    """
    return _once(ProbabilityScores(), y, p, sample_weight).brier


# ---------------------------------------------------------------- regression
def mse(y, p, *, sample_weight=None) -> float:
    """Mean squared error ``mean((y - p)²)``.

    >>> mse([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.5625
    """
    return _once(RegressionErrors(), y, p, sample_weight).mse


def rmse(y, p, *, sample_weight=None) -> float:
    """Root mean squared error ``sqrt(max(mse, 0))``.

    >>> rmse([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.75
    """
    return _once(RegressionErrors(), y, p, sample_weight).rmse


def mae(y, p, *, sample_weight=None) -> float:
    """Mean absolute error ``mean(|y - p|)``.

    >>> mae([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.625
    """
    return _once(RegressionErrors(), y, p, sample_weight).mae


def mape(y, p, *, sample_weight=None) -> float:
    """Mean absolute percentage error as a fraction, ``|y|`` floored at 1e-12.

    scikit-learn floors at the float64 epsilon (2.2e-16) instead; the two
    differ only when some ``|y|`` is below 1e-12.

    >>> round(mape([3, 5, 2, 7], [2.5, 5, 3, 8]), 6)
    0.202381
    """
    return _once(RegressionErrors(), y, p, sample_weight).mape


def r2(y, p, *, sample_weight=None) -> float:
    """Coefficient of determination ``1 - SSE / safe(T)``, T the total sum of squares.

    For constant ``y`` (T = 0) this is ``1 - SSE``; scikit-learn returns 1.0
    for a perfect fit and 0.0 otherwise.

    >>> round(r2([3, 5, 2, 7], [2.5, 5, 3, 8]), 6)
    0.847458
    """
    return _once(RegressionErrors(), y, p, sample_weight).r2
