"""Tweedie deviances: the mean deviance and D², scikit-learn's definitions."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._kernels import compensated
from .._kernels.deviance import FINITE, TINY, first_below, tweedie_terms
from .._kernels.row_sums import sum_rows
from .._protocol.base import Accumulator
from .._protocol.errors import BadValueError, NoObservationsError
from .._protocol.inputs import Finite
from .._protocol.result import Result
from .._protocol.state import Field
from .._protocol.terms import RowTerms, add_pairs

__all__ = [
    "TweedieDeviance",
    "mean_tweedie_deviance",
    "mean_poisson_deviance",
    "mean_gamma_deviance",
    "d2_tweedie_score",
]

#: D(y, ybar) below this share of the totals it is formed from is rounding: 0
NULL_FLOOR = 1e-12


def d2_of(numerator: float, denominator: float) -> float:
    """scikit-learn's fraction of deviance explained, made finite as its ``force_finite``:
    1.0 for a perfect fit, 0.0 where only the baseline is."""
    if numerator == 0:
        return 1.0
    return 0.0 if denominator == 0 else 1.0 - numerator / denominator


class DevianceResult(Result):
    __slots__ = ()
    title = "Deviance"
    counts = ("weight",)


def _power(power) -> tuple[float, int]:
    """The checked power and its kind (the kernel's formula)."""
    if isinstance(power, (bool, np.bool_)) or not isinstance(power, numbers.Real):
        raise TypeError(f"power must be a real number, got {type(power).__name__}")
    power = float(power)
    if not math.isfinite(power) or 0.0 < power < 1.0:
        raise ValueError(f"power must be <= 0 or >= 1 (the Tweedie distributions), got {power!r}")
    return power, {0.0: 0, 1.0: 1, 2.0: 2}.get(power, 3)


def _bounds(power: float) -> tuple[float, float]:
    """The lower bounds of ``y`` and ``p`` (the kernels' domains) for ``power``,
    scikit-learn's: any ``y`` up to power 0 (positive ``p`` below it), ``y >= 0``
    from 1 to 2, ``y > 0`` from 2 on; ``p > 0`` but for power 0."""
    if power == 0.0:
        return FINITE, FINITE
    return (FINITE if power < 1.0 else 0.0 if power < 2.0 else TINY), TINY


class Bounded(Finite):
    """Finite reals of the domain a Tweedie power needs (``v >= 0``, ``v > 0``,
    or any). A batch checked for it serves consumers of finite reals, and of
    a bound it meets."""

    def __init__(self, name: str, lo: float, power: float):
        super().__init__(name)
        self.lo, self.power = lo, power
        self.domain = ("at least", lo)

    def covers(self, need) -> bool:
        return need.domain == ("finite",) or (need.domain[:1] == ("at least",) and self.lo >= need.domain[1])

    def first_bad(self, arr):
        return first_below(arr, self.lo)

    def problem(self, arr, i):
        if not np.isfinite(arr[i]):
            return "values must be finite"
        sign = ">" if self.lo == TINY else ">="
        return f"the Tweedie deviance of power {self.power:g} needs {self.name} {sign} 0"


def _deviance_at_1(y: float, power: float, kind: int) -> float:
    """``d(y, 1)`` as the kernels form it, for the weighted mean ``y`` of the
    truths: a power below 0 takes its power even where ``y < 0`` (NaN for a
    fractional power, as in scikit-learn)."""
    y = np.float64(y)
    with np.errstate(all="ignore"):
        if kind == 0:
            d = (y - 1.0) * (y - 1.0)
        elif kind == 1:
            d = 2.0 * ((0.0 if y == 0 else y * np.log(y)) - y + 1.0)
        elif kind == 2:
            d = 2.0 * (np.log(1.0 / y) + y - 1.0)
        else:
            d = 2.0 * (
                np.power(y, 2.0 - power) / ((1.0 - power) * (2.0 - power)) - y / (1.0 - power) + 1.0 / (2.0 - power)
            )
    return float(d)


def _slope(y: float, power: float) -> float:
    """``y`` times the derivative of ``d(y, 1)`` in ``y``, ``2 y (y**(1 - power) - 1) / (1 - power)``
    (``2 y log y`` at power 1): how much a rounding of ``y`` moves it."""
    if y == 0:
        return 0.0
    with np.errstate(all="ignore"):
        slope = 2 * np.log(y) if power == 1 else 2 * (np.power(y, 1 - power) - 1) / (1 - power)
    return abs(y * float(slope))


def deviance_result(sums: np.ndarray, ysum: np.ndarray, n: int, power: float, kind: int) -> Result:
    """``mean_deviance`` and ``d2`` from the compensated totals (one formula path)."""
    weight, dev, null1 = (float(v) for v in compensated.values(sums))
    if weight == 0:
        raise ValueError("the sample weights sum to zero: the deviance is undefined")
    ybar = float(compensated.values(ysum)[0]) / weight
    # sum w d(y, ybar) = sum w d(y, 1) - weight d(ybar, 1): both sides carry rounding of
    # their size (and of ybar's), below which a difference is no spread of y at all
    null = null1 - weight * _deviance_at_1(ybar, power, kind)
    if null <= NULL_FLOOR * (null1 + weight * _slope(ybar, power)):
        d2 = 1.0 if dev == 0 else 0.0  # constant y: scikit-learn's R² rule
    else:
        d2 = 1.0 - dev / null  # NaN where ybar**(2 - power) is (power < 0, ybar < 0)
    values = {"mean_deviance": dev / weight, "d2": d2, "n": n, "weight": weight}
    # weights seen: the total weight is not the row count (weights of 1 are no weights)
    return DevianceResult("TweedieDeviance", values, {"weighted": weight != n, "power": power})


class TweedieDeviance(Accumulator):
    """Streaming mean Tweedie deviance and D² (fraction of deviance explained).

    ``update(y, p)`` takes real truths and predictions in the power's domain,
    scikit-learn's (``mean_tweedie_deviance``): any finite ``y`` and ``p`` at
    power 0 (the normal: the squared error); ``y >= 0``, ``p > 0`` from power 1
    (Poisson) to below 2 (compound Poisson); ``y > 0``, ``p > 0`` from 2 on
    (2 Gamma, 3 inverse Gaussian); any ``y``, ``p > 0`` below 0. Powers
    between 0 and 1 have no distribution and are refused.

    Parameters
    ----------
    power : float, default 0
        The Tweedie power.

    Returns (``finalize()``)
    ------------------------
    mean_deviance : float
        The weighted mean of the unit deviances ``d(y, p)``.
    d2 : float
        scikit-learn's ``d2_tweedie_score``: ``1 - D(y, p) / D(y, ybar)``, the
        deviance of the predictions over that of the weighted mean ``ybar``
        of ``y`` predicted everywhere (at power 0, R²).
    n : int
        Rows folded in.
    weight : float
        The total weight (the row count without weights).

    Notes
    -----
    Each row's deviance is scikit-learn's formula in its order of operations
    (a rounding below 0 counts 0), and the totals are compensated sums. The
    state is four sums, of ``w``, ``w y``, ``w d(y, p)`` and ``w d(y, 1)``:
    ``D(y, ybar) = sum w d(y, 1) - (sum w) d(ybar, 1)``, the deviance's
    decomposition about the constant 1, so the state folds and merges as sums
    (and ``Sliced``/``Bootstrap`` fold it as declared row terms). That
    difference loses the digits of the ratio of ``sum w d(y, 1)`` to
    ``D(y, ybar)``: about 3 for ``y`` of mean 100 and spread 3 at power 0
    (``RegressionErrors``'s R², which keeps Chan's moments, loses none).

    Where ``D(y, ybar)`` is 0 (constant ``y``, or a single row; within
    rounding: below 1e-12 of the totals it is formed from), ``d2`` follows
    the rule scikit-learn documents for R² (``r2_score``, to which D² at power
    0 corresponds): 1.0 for a perfect fit, 0.0 otherwise. scikit-learn's
    ``d2_tweedie_score`` itself divides by zero there, and returns NaN for a
    single row; the specification's ``r2`` gives ``1 - SSE / safe(T)`` instead.
    At a power below 0 with a negative ``ybar``, ``d2`` is NaN where
    ``ybar**(2 - power)`` is, as in scikit-learn.

    Examples
    --------
    >>> from streammetrics import TweedieDeviance
    >>> acc = TweedieDeviance(power=1).update([0.5, 1], [1, 1]).update([2.5, 7], [5, 3.5])
    >>> r = acc.finalize()
    >>> round(r.mean_deviance, 6), round(r.d2, 6)
    (1.136294, 0.487915)
    >>> TweedieDeviance(power=2).update([1, 2], [1, 2]).finalize().d2
    1.0
    """

    _fixed_settings = True  # copies share the settings

    argument_names = ("y", "p")
    fields = (
        Field("n", np.int64, (1,)),
        Field("sums", np.float64, (3, 2), merge="pairs", doc="weight, w d(y, p), w d(y, 1) totals"),
        Field("ysum", np.float64, (1, 2), merge="pairs", nonneg=False, doc="w y total"),
    )
    headline = ("mean_deviance", "d2")

    def __init__(self, power: float = 0.0):
        self.power, self._kind = _power(power)
        self._lo = _bounds(self.power)
        self.inputs = tuple(Finite(a) if lo == FINITE else Bounded(a, lo, self.power) for a, lo in zip("yp", self._lo))
        self._init_state()

    def _settings(self):
        return {"power": self.power}

    def _check_state(self, state):
        if int(state["n"][0]) == 0 and (np.any(state["sums"]) or np.any(state["ysum"])):
            raise ValueError("the totals are not zero but there are no observations")

    def _fold(self, arrays, w):
        st = self._arrays
        status, pairs = sum_rows(tweedie_terms[self._kind], (*arrays, self.power, *self._lo), w, 4)
        if status:
            return status
        sums, ysum = st["sums"].copy(), st["ysum"].copy()
        add_pairs(sums, pairs[[0, 2, 3]])
        add_pairs(ysum, pairs[1:2])
        if not (np.isfinite(sums).all() and np.isfinite(ysum).all()):
            raise ValueError(
                f"the deviance totals of this batch overflow float64 (y or p too large, or too close to 0 "
                f"for power {self.power:g}, or weights near 1e308): nothing was folded in"
            )
        st["sums"][:], st["ysum"][:] = sums, ysum
        st["n"][0] += arrays[0].shape[0]
        return 0

    def row_terms(self) -> RowTerms:
        """Each row adds 1, ``y``, ``d(y, p)`` and ``d(y, 1)``."""
        return RowTerms(4, 4, self._terms, rows=1)

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        return tweedie_terms[self._kind](y, p, self.power, *self._lo, lo, slots, values, col, base)

    def _add_sums(self, sums, st):
        st["n"][:, 0] += sums.rows
        add_pairs(st["sums"], sums.pairs[:, [0, 2, 3]])
        add_pairs(st["ysum"], sums.pairs[:, 1:2])

    def _compute(self) -> Result:
        st = self._arrays
        return deviance_result(st["sums"], st["ysum"], self.n, self.power, self._kind)


# ------------------------------------------------------------------ one-shot
_NAMES = {"y": "y_true", "p": "y_pred"}


def fed(acc, y, p, sample_weight, output=None):
    """``acc`` updated with ``(y, p)``, not empty; a bad value named as the caller named it
    (and its ``output``, a column of 2-D targets)."""
    try:
        acc.update(y, p, sample_weight=sample_weight)
    except BadValueError as e:
        name = _NAMES.get(e.argument, e.argument)
        index = e.index if output is None else (e.index, output)
        raise BadValueError(name, index, e.value, e.problem.replace(f" {e.argument} ", f" {name} ")) from None
    if acc.n == 0:
        raise NoObservationsError("y_true and y_pred are empty: the score needs at least one observation")
    return acc


def _once(y_true, y_pred, sample_weight, power) -> Result:
    return fed(TweedieDeviance(power), y_true, y_pred, sample_weight).finalize()


def mean_tweedie_deviance(y_true, y_pred, *, sample_weight=None, power=0) -> float:
    """Mean Tweedie deviance of the power ``power`` (see :class:`TweedieDeviance`),
    scikit-learn's ``mean_tweedie_deviance``.

    >>> from streammetrics import mean_tweedie_deviance
    >>> mean_tweedie_deviance([0.5, 1, 2.5, 7], [1, 1, 5, 3.5], power=0)
    4.6875
    >>> round(mean_tweedie_deviance([0.5, 1, 2.5, 7], [1, 1, 5, 3.5], power=1.5), 6)
    0.598594
    >>> mean_tweedie_deviance([1, 2], [1, -1], power=1)
    Traceback (most recent call last):
    ...
    streammetrics.BadValueError: y_pred[1] = -1.0: the Tweedie deviance of power 1 needs y_pred > 0
    """
    return _once(y_true, y_pred, sample_weight, power).mean_deviance


def mean_poisson_deviance(y_true, y_pred, *, sample_weight=None) -> float:
    """Mean Poisson deviance, ``mean_tweedie_deviance`` of power 1 (``y >= 0``, ``p > 0``).

    >>> from streammetrics import mean_poisson_deviance
    >>> round(mean_poisson_deviance([0.5, 1, 2.5, 7], [1, 1, 5, 3.5]), 6)
    1.136294
    """
    return _once(y_true, y_pred, sample_weight, 1).mean_deviance


def mean_gamma_deviance(y_true, y_pred, *, sample_weight=None) -> float:
    """Mean Gamma deviance, ``mean_tweedie_deviance`` of power 2 (``y > 0``, ``p > 0``).

    >>> from streammetrics import mean_gamma_deviance
    >>> round(mean_gamma_deviance([0.5, 1, 2.5, 7], [1, 1, 5, 3.5]), 6)
    0.346574
    """
    return _once(y_true, y_pred, sample_weight, 2).mean_deviance


def d2_tweedie_score(y_true, y_pred, *, sample_weight=None, power=0) -> float:
    """D², the fraction of Tweedie deviance explained, scikit-learn's
    ``d2_tweedie_score``: ``1 - D(y, p) / D(y, ybar)``. Constant ``y`` (a
    single row too) gives 1.0 for a perfect fit, else 0.0 (see
    :class:`TweedieDeviance`; scikit-learn divides by zero, or gives NaN).

    >>> from streammetrics import d2_tweedie_score
    >>> round(d2_tweedie_score([0.5, 1, 2.5, 7], [1, 1, 5, 3.5], power=2), 6)
    0.630784
    >>> d2_tweedie_score([3, 3, 3], [3, 3, 2])
    0.0
    """
    return _once(y_true, y_pred, sample_weight, power).d2
