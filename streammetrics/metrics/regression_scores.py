"""scikit-learn's regression scores under their names, one-shot, with ``multioutput=`` for 2-D targets.

Each output (column) is folded into its own accumulator
(:class:`~streammetrics.RegressionErrors`, :class:`~streammetrics.SquaredLogError`,
:class:`~streammetrics.PinballLoss`, :class:`~streammetrics.ErrorQuantiles`) and the
per-output scores are averaged as scikit-learn averages them: ``"raw_values"``
(an array, one per output), ``"uniform_average"``, ``"variance_weighted"``
(explained variance: by the variance of each output of ``y``) or an array of
weights, one per output.
"""

from __future__ import annotations

import numpy as np

from .._kernels import compensated
from .deviance import d2_of, fed
from .losses import PinballLoss, SquaredLogError, check_alpha
from .quantiles import ErrorQuantiles
from .regression import RegressionErrors

__all__ = [
    "explained_variance_score",
    "max_error",
    "mean_squared_log_error",
    "root_mean_squared_log_error",
    "mean_pinball_loss",
    "d2_pinball_score",
    "d2_absolute_error_score",
    "median_absolute_error",
]

_AVERAGES = ("raw_values", "uniform_average")


def _outputs(y_true, y_pred) -> list:
    """The ``(y, p)`` of each output: the arrays as given when 1-D, else their columns."""
    y, p = np.asarray(y_true), np.asarray(y_pred)
    if y.ndim < 2 and p.ndim < 2:
        return [(y_true, y_pred)]
    if y.ndim > 2 or p.ndim > 2:
        raise ValueError(f"y_true and y_pred must be 1-D or 2-D, got {y.ndim}-D and {p.ndim}-D")
    y, p = y.reshape(y.shape[0], -1), p.reshape(p.shape[0], -1)
    if y.shape[1] != p.shape[1]:
        raise ValueError(f"y_true and y_pred have different numbers of outputs ({y.shape[1]} != {p.shape[1]})")
    return [(y[:, j], p[:, j]) for j in range(y.shape[1])]


def _check_multioutput(multioutput, k: int, options=_AVERAGES):
    if isinstance(multioutput, str):
        if multioutput not in options:
            raise ValueError(f"multioutput must be one of {options} or an array of weights, got {multioutput!r}")
        return multioutput
    weights = np.asarray(multioutput, dtype=np.float64)
    if k == 1:
        raise ValueError("custom multioutput weights are useful only with several outputs")
    if weights.shape != (k,):
        raise ValueError(f"there must be as many multioutput weights ({weights.size}) as outputs ({k})")
    return weights


def _fitted(make, y_true, y_pred, sample_weight, multioutput, options=_AVERAGES) -> tuple[list, object]:
    """One accumulator per output, each fed its column, and the checked ``multioutput``."""
    outputs = _outputs(y_true, y_pred)
    multioutput = _check_multioutput(multioutput, len(outputs), options)
    several = len(outputs) > 1
    fitted = [fed(make(), y, p, sample_weight, j if several else None) for j, (y, p) in enumerate(outputs)]
    return fitted, multioutput


def _averaged(scores, multioutput, variances=None):
    scores = np.asarray(scores, dtype=np.float64)
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            return scores
        if multioutput == "variance_weighted" and np.any(variances != 0):
            return float(np.average(scores, weights=variances))
        return float(np.mean(scores))
    return float(np.average(scores, weights=multioutput))


def explained_variance_score(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", force_finite=True):
    """scikit-learn's ``explained_variance_score``: one less the variance of ``y - p``
    over that of ``y`` (weighted), from :class:`~streammetrics.RegressionErrors`.

    With ``force_finite`` (the default) a constant error gives 1.0 and a
    constant ``y`` with a varying error 0.0; without it, NaN or ``-inf`` as
    the ratio gives them.

    >>> from streammetrics import explained_variance_score
    >>> round(explained_variance_score([3, -0.5, 2, 7], [2.5, 0.0, 2, 8]), 6)
    0.957173
    >>> explained_variance_score([[0.5, 1], [-1, 1], [7, -6]], [[0, 2], [-1, 2], [8, -5]], multioutput="raw_values")
    array([0.96774194, 1.        ])
    """
    fitted, multioutput = _fitted(
        RegressionErrors, y_true, y_pred, sample_weight, multioutput, _AVERAGES + ("variance_weighted",)
    )  # the error's moments are in every state
    num, den = [], []
    for acc in fitted:
        st = acc.state_dict()
        weight = float(compensated.value(st["moments"][0], st["moments"][1]))
        if weight == 0:
            raise ValueError("the sample weights sum to zero: the explained variance is undefined")
        num.append(max(float(compensated.value(st["rmoments"][4], st["rmoments"][5])), 0.0) / weight)
        den.append(max(float(compensated.value(st["moments"][4], st["moments"][5])), 0.0) / weight)
    num, den = np.asarray(num), np.asarray(den)
    if force_finite:
        scores = [d2_of(a, b) for a, b in zip(num, den)]
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = 1.0 - num / den
    return _averaged(scores, multioutput, den)


def max_error(y_true, y_pred) -> float:
    """scikit-learn's ``max_error``: the largest ``|y - p|`` (one output only).

    >>> from streammetrics import max_error
    >>> max_error([3, 2, 7, 1], [4, 2, 7, 1])
    1.0
    """
    if len(_outputs(y_true, y_pred)) > 1:
        raise ValueError("max_error takes one output: y_true and y_pred must be 1-D")
    (acc,), _ = _fitted(lambda: RegressionErrors(spread=True), y_true, y_pred, None, "uniform_average")
    return acc.finalize().max_error


def _msle(y_true, y_pred, sample_weight, multioutput, root: bool):
    fitted, multioutput = _fitted(SquaredLogError, y_true, y_pred, sample_weight, multioutput)
    field = "rmsle" if root else "msle"
    return _averaged([getattr(acc.finalize(), field) for acc in fitted], multioutput)


def mean_squared_log_error(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average"):
    """scikit-learn's ``mean_squared_log_error``, the mean of ``(log1p(y) - log1p(p))**2``
    (see :class:`~streammetrics.SquaredLogError`); a value at or below -1 is a
    ``ValueError`` naming its position.

    >>> from streammetrics import mean_squared_log_error
    >>> round(mean_squared_log_error([3, 5, 2.5, 7], [2.5, 5, 4, 8]), 6)
    0.03973
    >>> mean_squared_log_error([3, -1], [2.5, 5])
    Traceback (most recent call last):
    ...
    streammetrics.BadValueError: y_true[1] = -1.0: the squared log error needs y_true > -1
    """
    return _msle(y_true, y_pred, sample_weight, multioutput, root=False)


def root_mean_squared_log_error(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average"):
    """scikit-learn's ``root_mean_squared_log_error``: the root of each output's
    mean squared log error, then averaged.

    >>> from streammetrics import root_mean_squared_log_error
    >>> round(root_mean_squared_log_error([3, 5, 2.5, 7], [2.5, 5, 4, 8]), 6)
    0.199324
    """
    return _msle(y_true, y_pred, sample_weight, multioutput, root=True)


def mean_pinball_loss(y_true, y_pred, *, sample_weight=None, alpha=0.5, multioutput="uniform_average"):
    """scikit-learn's ``mean_pinball_loss`` at the level ``alpha`` (see
    :class:`~streammetrics.PinballLoss`, which takes several levels at once).

    >>> from streammetrics import mean_pinball_loss
    >>> mean_pinball_loss([1, 2, 3], [0, 2, 3], alpha=0.1)
    0.03333333333333333
    """
    alpha = check_alpha(alpha)
    fitted, multioutput = _fitted(lambda: PinballLoss(alpha), y_true, y_pred, sample_weight, multioutput)
    return _averaged([acc.finalize().pinball for acc in fitted], multioutput)


def d2_pinball_score(y_true, y_pred, *, sample_weight=None, alpha=0.5, multioutput="uniform_average"):
    """scikit-learn's ``d2_pinball_score``: one less the pinball loss of the predictions
    over that of the exact weighted ``alpha`` quantile of ``y`` (see
    :class:`~streammetrics.ErrorQuantiles`). Where that baseline loses
    nothing, 1.0 for a perfect fit, else 0.0 (scikit-learn: also NaN below
    two rows).

    >>> from streammetrics import d2_pinball_score
    >>> round(d2_pinball_score([1, 2, 3], [1, 3, 3], alpha=0.9), 6)
    0.666667
    """
    alpha = check_alpha(alpha)
    fitted, multioutput = _fitted(
        lambda: ErrorQuantiles("signed", truth=True), y_true, y_pred, sample_weight, multioutput
    )
    return _averaged([acc.d2_pinball(alpha) for acc in fitted], multioutput)


def d2_absolute_error_score(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average"):
    """scikit-learn's ``d2_absolute_error_score``, ``d2_pinball_score`` at ``alpha=0.5``:
    one less the absolute error over that of the weighted median of ``y``.

    >>> from streammetrics import d2_absolute_error_score
    >>> round(d2_absolute_error_score([3, -0.5, 2, 7], [2.5, 0.0, 2, 8]), 6)
    0.764706
    """
    fitted, multioutput = _fitted(
        lambda: ErrorQuantiles("absolute", truth=True), y_true, y_pred, sample_weight, multioutput
    )
    return _averaged([acc.d2_pinball(0.5) for acc in fitted], multioutput)


def median_absolute_error(y_true, y_pred, *, multioutput="uniform_average", sample_weight=None):
    """scikit-learn's ``median_absolute_error``, exactly: the median of ``|y - p|``
    (``np.median`` without weights, scikit-learn's averaged weighted percentile
    with them; see :class:`~streammetrics.ErrorQuantiles`).

    >>> from streammetrics import median_absolute_error
    >>> median_absolute_error([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    0.5
    """
    fitted, multioutput = _fitted(ErrorQuantiles, y_true, y_pred, sample_weight, multioutput)
    return _averaged([acc.quantile(0.5) for acc in fitted], multioutput)
