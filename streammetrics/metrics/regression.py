"""Regression errors: MSE, RMSE, MAE, MAPE, R², explained variance and max error."""

from __future__ import annotations

import math

import numpy as np

from .._kernels import compensated
from .._kernels.checks import first_nonfinite
from .._kernels.regression import merge_moments, regression_moments
from .._protocol.base import Accumulator
from .._protocol.errors import NoObservationsError
from .._protocol.inputs import Finite
from .._protocol.result import RenderContext, Result, safe
from .._protocol.state import Field
from .deviance import d2_of
from .probability import check_second_moments, mean_interval

__all__ = ["RegressionErrors", "regression_result", "mse", "rmse", "mae", "mape", "r2"]


class RegressionResult(Result):
    __slots__ = ()
    title = "Errors"

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        if ctx.sample is None:
            return []
        from ..report import plots

        y, p = ctx.sample
        return [plots.regression(np.asarray(y, float), np.asarray(p, float), self, folder, self.n)]


def regression_result(moments: np.ndarray, sums: np.ndarray, n: int, rmoments=None, top=None) -> Result:
    """The guarded regression scores from the state (one formula path); given the
    error's moments ``rmoments`` and largest error ``top``, explained variance and
    max error too."""
    total = float(compensated.value(moments[0], moments[1]))
    if total == 0:
        raise ValueError("the sample weights sum to zero: the scores are undefined")
    sse, sae, sape = (float(v) for v in compensated.values(sums))
    tss = max(float(compensated.value(moments[4], moments[5])), 0.0)
    if not (math.isfinite(sse) and math.isfinite(tss)):
        raise ValueError("the squared errors overflow float64 (|y| or |p| near 1e154 or larger); rescale y and p")
    mse_ = sse / total
    values = {"n": n, "mse": mse_, "rmse": math.sqrt(max(mse_, 0.0)), "mae": sae / total, "mape": sape / total}
    values["r2"] = 1.0 - sse / safe(tss)
    # the error's spread: absent from a state saved before its moments were kept (their weight total 0)
    if rmoments is not None and float(compensated.value(rmoments[0], rmoments[1])) == total:
        m2 = max(float(compensated.value(rmoments[4], rmoments[5])), 0.0)
        values.update(explained_variance=d2_of(m2, tss), max_error=float(top[0]))
    # weights seen: the total weight is not the row count (weights of 1 are no weights)
    return RegressionResult("RegressionScores", values, {"weighted": total != n})


OVERFLOW_MESSAGE = (
    "the totals of {what} would overflow float64 (|y| or |p| near 1e154, or sample "
    "weights near 1e308): nothing was folded in; rescale y and p (or the weights)"
)


class RegressionErrors(Accumulator):
    """Streaming MSE, RMSE, MAE, MAPE and R² of real-valued predictions.

    ``update(y, p)`` takes finite real truths and predictions.

    Parameters
    ----------
    spread : bool, default False
        Also give ``explained_variance`` and ``max_error`` (the state keeps
        what they need either way, so states of either setting merge).

    Returns (``finalize()``)
    ------------------------
    mse, rmse, mae : float
        Mean squared error, its root, mean absolute error.
    mape : float
        Mean absolute percentage error, as a fraction.
    r2 : float
        Coefficient of determination.
    explained_variance : float
        With ``spread=True``: scikit-learn's ``explained_variance_score``: one less the variance of
        the error ``y - p`` over that of ``y`` (1.0 for a constant error, 0.0
        when only ``y`` is constant, as scikit-learn's ``force_finite``).
    max_error : float
        With ``spread=True``: the largest ``|y - p|`` over the rows of nonzero weight.
    n : int
        Rows folded in.
    mse_ci_lower, mse_ci_upper, rmse_ci_lower, ..., mape_ci_upper : float
        With ``finalize(ci=level)`` only: normal intervals ``mean -/+ z s /
        sqrt(n)`` of MSE, MAE and MAPE (``s`` the standard deviation of the
        per-row terms, ``n`` Kish's effective size with weights), clipped at
        0; RMSE's is the root of MSE's; R² has none. A state saved before the
        second moments were kept refuses ``ci``.

    Notes
    -----
    The specification's guards, which differ from scikit-learn in two places:

    * MAPE floors ``|y|`` at 1e-12 (scikit-learn: at the float64 epsilon,
      2.2e-16), and is returned as a fraction (0.2 means 20 %).
    * R² divides by ``safe(T)``, T the total sum of squares of y about its mean:
      for constant y it is ``1 - SSE`` (scikit-learn returns 1.0 for a perfect
      fit and 0.0 otherwise).


    Examples
    --------
    >>> from streammetrics import RegressionErrors
    >>> acc = RegressionErrors().update([3, 5], [2.5, 5]).update([2, 7], [3, 8])
    >>> r = acc.finalize()
    >>> r.mse, r.rmse, r.mae
    (0.5625, 0.75, 0.625)
    >>> round(r.mape, 6), round(r.r2, 6)
    (0.202381, 0.847458)
    >>> r = acc.finalize(ci=0.9)  # mean -/+ 1.645 s / 2 of |r| = 0.5, 0, 1, 1
    >>> round(r.mae_ci_lower, 6), round(r.mae_ci_upper, 6)
    (0.231293, 1.018707)
    >>> r = RegressionErrors(spread=True).update([3, 5, 2, 7], [2.5, 5, 3, 8]).finalize()
    >>> round(r.explained_variance, 6), r.max_error
    (0.885593, 1.0)
    """

    _fixed_settings = True  # copies share the settings

    inputs = (Finite("y"), Finite("p"))
    fields = (
        Field("n", np.int64, (1,)),
        # weight pair, mean as shift + offset, M2 pair: merged by Chan et al.
        Field("moments", np.float64, (6,), merge="custom", nonneg=False),
        Field("sums", np.float64, (3, 2), merge="pairs", doc="squared, absolute, percentage errors"),
        Field("squares", np.float64, (3, 2), merge="pairs", optional=True, doc="w r⁴, w ape², w² totals"),
        Field("squares_rows", np.int64, (1,), optional=True, doc="rows counted in squares"),
        # as moments, of the error y - p: all 0 in a state saved before they were kept
        Field("rmoments", np.float64, (6,), merge="custom", nonneg=False, optional=True),
        Field("top", np.float64, (1,), merge="max", optional=True, doc="largest |y - p|"),
    )
    headline = ("rmse", "r2")
    intervals = True

    def __init__(self, spread: bool = False):
        if not isinstance(spread, (bool, np.bool_)):
            raise TypeError(f"spread must be True or False, got {type(spread).__name__}")
        self.spread = bool(spread)
        self._init_state()

    def _settings(self):
        return {"spread": True} if self.spread else {}

    def _check_compatible(self, other) -> None:
        # spread picks result fields, never what the state holds
        if type(other) is type(self):
            return
        super()._check_compatible(other)

    @staticmethod
    def _faults(st) -> dict:
        """What a load refuses in each of many stacked states: message -> mask, in
        the order they are told."""
        g, m, rm = st["n"].shape[0], st["moments"], st["rmoments"]
        total = m[:, 0] + m[:, 1]
        v = compensated.values(st["sums"])
        sse, sae = v[:, 0], v[:, 1]
        with np.errstate(over="ignore", invalid="ignore"):  # as Python floats: inf, quietly
            squared_sae, bound = sae * sae, total * sse * (1 + 1e-9) + 1e-300
        return {
            "negative totals": (total < 0) | (m[:, 4] + m[:, 5] < 0),
            "entry 'moments' holds a compensated pair whose error term is not small beside its sum": (
                (np.abs(m[:, 1]) > 2.0**-12 * np.abs(m[:, 0])) | (np.abs(m[:, 5]) > 2.0**-12 * np.abs(m[:, 4]))
            ),
            "the totals are not zero but there are no observations": (st["n"][:, 0] == 0)
            & ((total != 0) | (st["sums"].reshape(g, -1) != 0).any(axis=1) | (m != 0).any(axis=1)),
            "entry 'sums': the absolute errors are too large for the squared errors and the weight total": (
                squared_sae > bound
            ),
            "more rows counted in 'squares' than observations": st["squares_rows"][:, 0] > st["n"][:, 0],
            "entry 'rmoments' holds another weight total than 'moments', or a negative sum of squares": (
                ((rm[:, 0] != m[:, 0]) | (rm[:, 1] != m[:, 1])) & ((rm[:, 0] != 0) | (rm[:, 1] != 0))
            )
            | (rm[:, 4] + rm[:, 5] < 0),
            "entry 'top' is not finite": ~np.isfinite(st["top"][:, 0]),
        }

    def _check_state(self, state):
        for message, bad in self._faults({k: v[np.newaxis] for k, v in state.items()}).items():
            if bad[0]:
                raise ValueError(message)

    @classmethod
    def _screen_states(cls, st):
        return np.logical_or.reduce(list(cls._faults(st).values()))

    def _fold(self, arrays, w):
        y, p = arrays
        st = self._arrays
        names = ("moments", "sums", "squares", "n", "rmoments", "top")
        before = [st[k].copy() for k in names]
        status = regression_moments(y, p, w, *(st[k] for k in ("n", "moments", "sums", "squares", "rmoments", "top")))
        if status:
            return status
        if any(first_nonfinite(st[k].reshape(-1)) >= 0 for k in ("moments", "sums", "rmoments")):
            for k, old in zip(names, before):
                st[k][:] = old
            raise ValueError(OVERFLOW_MESSAGE.format(what="this batch"))
        if first_nonfinite(st["squares"].reshape(-1)) < 0:
            st["squares_rows"][0] += y.shape[0]
        else:  # the second moments alone overflow (|r| near 1e77): no intervals
            st["squares"][:] = before[2]
        return 0

    def _merged_moments(self, other):
        """The moments, sums and error moments of this state merged with ``other``'s
        (new arrays), or ``ValueError`` where they overflow. A side saved before
        the error moments were kept (weight 0 beside a nonzero total) has none."""
        st = self._arrays
        moments, sums, rmoments = st["moments"].copy(), st["sums"].copy(), st["rmoments"].copy()
        merge_moments(moments, other["moments"])
        merge_moments(rmoments, other["rmoments"])
        compensated.merge(sums, other["sums"])
        if not all(np.all(np.isfinite(a)) for a in (moments, sums, rmoments)):
            raise ValueError(OVERFLOW_MESSAGE.format(what="the merged state"))
        if (rmoments[0], rmoments[1]) != (moments[0], moments[1]):
            rmoments[:] = 0.0
        return moments, sums, rmoments

    def _merge_check(self, other):
        self._merged_moments(other.state_dict())

    def _merge_state(self, other):
        st = self._arrays
        st["moments"], st["sums"], st["rmoments"] = self._merged_moments(other)
        st["top"] = np.maximum(st["top"], other["top"])
        st["n"] += other["n"]
        st["squares_rows"] += other["squares_rows"]
        squares = st["squares"].copy()
        compensated.merge(squares, other["squares"])
        if np.all(np.isfinite(squares)):
            st["squares"] = squares
        else:  # the second moments alone overflow: the merged state gives no intervals
            st["squares_rows"][0] = 0
            st["squares"] = np.zeros_like(squares)

    def _compute(self, ci=None) -> Result:
        st = self._arrays
        spread = (st["rmoments"], st["top"]) if self.spread else ()
        r = regression_result(st["moments"], st["sums"], self.n, *spread)
        if ci is None:
            return r
        check_second_moments(st)
        total = float(compensated.value(st["moments"][0], st["moments"][1]))
        sse, sae, sape = (float(v) for v in compensated.values(st["sums"]))
        s4, sape2, wsq = (float(v) for v in compensated.values(st["squares"]))
        found = {
            "mse": mean_interval(total, sse, s4, wsq, ci),
            "mae": mean_interval(total, sae, sse, wsq, ci),
            "mape": mean_interval(total, sape, sape2, wsq, ci),
        }
        found["rmse"] = tuple(math.sqrt(b) for b in found["mse"])
        out = {}
        for k, v in r.items():
            out[k] = v
            if k in found:
                out[f"{k}_ci_lower"], out[f"{k}_ci_upper"] = (float(b) for b in found[k])
        return RegressionResult(r.kind, out, {"ci": ci, "weighted": r.weighted})


# ------------------------------------------------------------------ one-shot
def _once(y, p, sample_weight) -> Result:
    acc = RegressionErrors().update(y, p, sample_weight=sample_weight)
    if acc.n == 0:
        raise NoObservationsError("y and p are empty: the score needs at least one observation")
    return acc.finalize()


def mse(y, p, *, sample_weight=None) -> float:
    """Mean squared error ``mean((y - p)²)``.

    >>> mse([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.5625
    """
    return _once(y, p, sample_weight).mse


def rmse(y, p, *, sample_weight=None) -> float:
    """Root mean squared error ``sqrt(max(mse, 0))``.

    >>> rmse([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.75
    """
    return _once(y, p, sample_weight).rmse


def mae(y, p, *, sample_weight=None) -> float:
    """Mean absolute error ``mean(|y - p|)``.

    >>> mae([3, 5, 2, 7], [2.5, 5, 3, 8])
    0.625
    """
    return _once(y, p, sample_weight).mae


def mape(y, p, *, sample_weight=None) -> float:
    """Mean absolute percentage error as a fraction, ``|y|`` floored at 1e-12.

    scikit-learn floors at the float64 epsilon (2.2e-16) instead; the two
    differ only when some ``|y|`` is below 1e-12.

    >>> round(mape([3, 5, 2, 7], [2.5, 5, 3, 8]), 6)
    0.202381
    """
    return _once(y, p, sample_weight).mape


def r2(y, p, *, sample_weight=None) -> float:
    """Coefficient of determination ``1 - SSE / safe(T)``, T the total sum of squares.

    For constant ``y`` (T = 0) this is ``1 - SSE``; scikit-learn returns 1.0
    for a perfect fit and 0.0 otherwise.

    >>> round(r2([3, 5, 2, 7], [2.5, 5, 3, 8]), 6)
    0.847458
    """
    return _once(y, p, sample_weight).r2
