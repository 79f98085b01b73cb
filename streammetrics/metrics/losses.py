"""Mean regression losses of a row's own terms: the squared log error and the pinball loss."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._kernels import compensated
from .._kernels.regression import loss_terms
from .._kernels.row_sums import sum_rows
from .._protocol.base import Accumulator
from .._protocol.inputs import Finite
from .._protocol.result import Result
from .._protocol.state import Field
from .._protocol.terms import RowTerms, add_pairs
from .deviance import Bounded

__all__ = ["SquaredLogError", "PinballLoss", "check_alpha"]

#: the largest float64 below -1's successor: ``v >= LOG_LOW`` is ``v > -1``
LOG_LOW = float(np.nextafter(-1.0, 0.0))
_NO_ALPHAS = np.zeros(0)


class AboveMinusOne(Bounded):
    """Finite reals above -1, where ``log1p`` is finite."""

    def __init__(self, name: str):
        super().__init__(name, LOG_LOW, 0.0)

    def problem(self, arr, i):
        if not np.isfinite(arr[i]):
            return "values must be finite"
        return f"the squared log error needs {self.name} > -1"


class LossResult(Result):
    __slots__ = ()
    title = "Losses"
    counts = ("weight",)


def check_alpha(alpha) -> float:
    """A quantile level in [0, 1], as scikit-learn takes it."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number in [0, 1], got {type(alpha).__name__}")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return float(alpha)


class _MeanLoss(Accumulator):
    """A state of the weight and ``k`` weighted loss totals, the row terms of :func:`loss_terms`."""

    _fixed_settings = True  # copies share the settings
    fields = (
        Field("n", np.int64, (1,)),
        Field("sums", np.float64, ("n_terms", 2), merge="pairs", doc="weight, then the w loss totals"),
    )
    _log = False
    _alphas = _NO_ALPHAS

    def _check_state(self, state):
        if int(state["n"][0]) == 0 and np.any(state["sums"]):
            raise ValueError("the totals are not zero but there are no observations")

    def _operands(self, y, p):
        """The arrays whose differences the losses take."""
        if not self._log:
            return y, p
        with np.errstate(divide="ignore", invalid="ignore"):  # -1 and below: refused by the kernel
            return np.log1p(y), np.log1p(p)

    def _fold(self, arrays, w):
        y, p = arrays
        k = self.n_terms
        status, part = sum_rows(loss_terms, (*self._operands(y, p), self._alphas, self._log, k), w, k)
        if status:
            return status
        merged = self._arrays["sums"].copy()
        add_pairs(merged, part)
        if not np.isfinite(merged).all():
            raise ValueError("the loss totals of this batch overflow float64: nothing was folded in")
        self._arrays["sums"][:] = merged
        self._arrays["n"][0] += y.shape[0]
        return 0

    def row_terms(self) -> RowTerms:
        """Each row adds 1 and its losses."""
        return RowTerms(self.n_terms, self.n_terms, self._terms, rows=1)

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        a, b = self._operands(y[lo : lo + slots.shape[0]], p[lo : lo + slots.shape[0]])
        return loss_terms(a, b, self._alphas, self._log, self.n_terms, 0, slots, values, col, base)

    def _add_sums(self, sums, st):
        st["n"][:, 0] += sums.rows
        add_pairs(st["sums"], sums.pairs)

    def _means(self):
        totals = compensated.values(self._arrays["sums"])
        weight = float(totals[0])
        if weight == 0:
            raise ValueError("the sample weights sum to zero: the loss is undefined")
        return weight, [float(v) / weight for v in totals[1:]]


class SquaredLogError(_MeanLoss):
    """Streaming mean squared logarithmic error and its root, scikit-learn's
    ``mean_squared_log_error`` and ``root_mean_squared_log_error``.

    ``update(y, p)`` takes finite truths and predictions above -1 (a value at
    or below -1 is a ``ValueError`` naming its position).

    Returns (``finalize()``)
    ------------------------
    msle : float
        The weighted mean of ``(log1p(y) - log1p(p))**2``.
    rmsle : float
        Its square root.
    n : int
        Rows folded in.
    weight : float
        The total weight (the row count without weights).

    Examples
    --------
    >>> from streammetrics import SquaredLogError
    >>> r = SquaredLogError().update([3, 5], [2.5, 5]).update([2.5, 7], [4, 8]).finalize()
    >>> round(r.msle, 6), round(r.rmsle, 6)
    (0.03973, 0.199324)
    >>> SquaredLogError().update([0.5, -1.0], [1, 2])
    Traceback (most recent call last):
    ...
    streammetrics.BadValueError: y[1] = -1.0: the squared log error needs y > -1
    """

    inputs = (AboveMinusOne("y"), AboveMinusOne("p"))
    headline = ("rmsle",)
    n_terms = 2
    _log = True

    def __init__(self):
        self._init_state()

    def _compute(self) -> Result:
        weight, (msle,) = self._means()
        values = {"msle": msle, "rmsle": math.sqrt(msle), "n": self.n, "weight": weight}
        return LossResult("SquaredLogError", values, {"weighted": weight != self.n})


class PinballLoss(_MeanLoss):
    """Streaming mean pinball (quantile) loss at one or several levels, scikit-learn's
    ``mean_pinball_loss``.

    ``update(y, p)`` takes finite truths and predictions. A row of error
    ``r = y - p`` loses ``alpha r`` where ``r >= 0``, else ``(alpha - 1) r``.

    Parameters
    ----------
    alpha : float or sequence of floats, default 0.5
        The levels, in [0, 1]; several share one state (and one pass).

    Returns (``finalize()``)
    ------------------------
    pinball : float or numpy.ndarray
        The weighted mean loss at ``alpha`` (an array, one per level, for a
        sequence of levels).
    n : int
        Rows folded in.
    weight : float
        The total weight.

    Examples
    --------
    >>> from streammetrics import PinballLoss
    >>> r = PinballLoss(alpha=[0.1, 0.5, 0.9]).update([1, 2, 3], [2, 2, 1]).finalize()
    >>> [round(float(v), 6) for v in r.pinball]
    [0.366667, 0.5, 0.633333]
    >>> PinballLoss(alpha=0.9).update([1, 2, 3], [2, 2, 1]).finalize().pinball
    0.6333333333333333
    """

    inputs = (Finite("y"), Finite("p"))
    headline = ("pinball",)

    def __init__(self, alpha=0.5):
        self.many = not isinstance(alpha, numbers.Real)
        levels = tuple(check_alpha(a) for a in np.atleast_1d(np.asarray(alpha, dtype=object)).tolist())
        if not levels:
            raise ValueError("alpha must hold at least one level")
        self.alpha = list(levels) if self.many else levels[0]
        self._alphas = np.asarray(levels, np.float64)
        self.n_terms = 1 + len(levels)
        self._init_state()

    def _settings(self):
        return {"alpha": self.alpha}

    def _compute(self) -> Result:
        weight, losses = self._means()
        pinball = np.asarray(losses) if self.many else losses[0]
        values = {"pinball": pinball, "n": self.n, "weight": weight}
        return LossResult("PinballLoss", values, {"weighted": weight != self.n})
