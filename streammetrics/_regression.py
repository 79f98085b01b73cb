"""Regression errors: MSE, RMSE, MAE, MAPE and R²."""

from __future__ import annotations

import math

import numpy as np

from ._base import Accumulator
from ._kernels.regression import regression_merge, regression_update
from ._result import Result, safe
from ._validation import as_reals, as_weights, check_same_length, raise_nonfinite

__all__ = ["RegressionErrors", "regression_result"]


def _pair(s: float, c: float) -> float:
    return s + c if math.isfinite(s) else s


def regression_result(moments: np.ndarray, sums: np.ndarray, n: int) -> Result:
    """The guarded regression scores from the state (one formula path)."""
    total = _pair(float(moments[0]), float(moments[1]))
    if total == 0:
        raise ValueError("the sample weights sum to zero: the scores are undefined")
    sse = _pair(float(sums[0, 0]), float(sums[0, 1]))
    sae = _pair(float(sums[1, 0]), float(sums[1, 1]))
    sape = _pair(float(sums[2, 0]), float(sums[2, 1]))
    tss = max(_pair(float(moments[4]), float(moments[5])), 0.0)
    if not (math.isfinite(sse) and math.isfinite(tss)):
        raise ValueError(
            "the squared errors overflow float64 (|y| or |p| near 1e154 or larger); "
            "rescale y and p"
        )
    mse = sse / total
    return Result(
        "RegressionScores",
        {
            "n": n,
            "mse": mse,
            "rmse": math.sqrt(max(mse, 0.0)),
            "mae": sae / total,
            "mape": sape / total,
            "r2": 1.0 - sse / safe(tss),
        },
    )


class RegressionErrors(Accumulator):
    """Streaming MSE, RMSE, MAE, MAPE and R² of real-valued predictions.

    Notes
    -----
    The specification's guards, which differ from scikit-learn in two places:

    * MAPE floors ``|y|`` at 1e-12 (scikit-learn: at the float64 epsilon,
      2.2e-16), and is returned as a fraction (0.2 means 20 %).
    * R² divides by ``safe(T)``, T the total sum of squares of y about its mean:
      for constant y it is ``1 - SSE`` (scikit-learn returns 1.0 for a perfect
      fit and 0.0 otherwise).

    T is kept as a running (weighted) mean and M2 merged with Chan et al.'s
    formula, so y = 1e9 + noise loses no digits. Error totals are compensated.

    Examples
    --------
    >>> from streammetrics import RegressionErrors
    >>> acc = RegressionErrors().update([3, 5], [2.5, 5]).update([2, 7], [3, 8])
    >>> r = acc.finalize()
    >>> r.mse, r.rmse, r.mae
    (0.5625, 0.75, 0.625)
    >>> round(r.mape, 6), round(r.r2, 6)
    (0.202381, 0.847458)
    """

    _headline = ("rmse", "r2")

    def __init__(self):
        self._init_state()

    def _new_state(self):
        return {
            "n": np.zeros(1, np.int64),
            "moments": np.zeros(6, np.float64),
            "sums": np.zeros((3, 2), np.float64),
        }

    def _check_state(self, state):
        if state["moments"][0] < 0 or np.any(state["sums"][:, 0] < 0):
            raise ValueError("negative totals")

    def update(self, y, p, sample_weight=None):
        """Fold in observed values ``y`` and predictions ``p``; return ``self``.

        NaN or infinite values raise ``ValueError`` naming the argument and the
        first offending position, and leave the state unchanged.
        """
        y = as_reals(y, "y")
        p = as_reals(p, "p")
        n = check_same_length(y=y, p=p)
        w = as_weights(sample_weight, n)
        return self._fold_prepared(y, p, w)

    def _fold_prepared(self, y, p, w):
        """Fold arrays already converted as :meth:`update` converts them."""
        n = y.shape[0]
        if n == 0:
            return self
        st = self._state
        status = regression_update(y, p, w, st["moments"], st["sums"])
        if status:
            raise_nonfinite("y", y)
            raise_nonfinite("p", p)
            raise AssertionError(f"kernel status {status} without a bad value")
        st["n"][0] += n
        return self

    def _merge_state(self, other):
        self._state["n"] += other["n"]
        regression_merge(self._state["moments"], self._state["sums"], other["moments"], other["sums"])

    def _compute(self) -> Result:
        return regression_result(self._state["moments"], self._state["sums"], self.n)
