"""Exact weighted quantiles of errors, on the sorted runs of the exact rank state."""

from __future__ import annotations

import numbers

import numpy as np

from .._kernels.quantiles import bucket_edges, cumulative_walk, error_values, next_with_mass, pinball_total
from .._protocol.inputs import Finite
from .._protocol.result import Result
from .._protocol.state import Field, count_total
from .._protocol.validation import check_choice, check_count
from .deviance import d2_of
from .losses import check_alpha
from .ranking.held import SortedRuns
from .ranking.saved import run_entries

__all__ = ["ErrorQuantiles", "run_quantiles"]

ERRORS, TRUTHS = 0, 1  # the rows of a run's masses
_EPS = float(np.finfo(np.float64).eps)
_TINY = float(np.nextafter(0.0, 1.0))
_NONE, _NO_INDEX = np.zeros(0), np.zeros(0, np.int64)


def run_quantiles(chunks, row: int, qs):
    """scikit-learn's weighted quantiles (``_weighted_percentile(..., average=True)``, and
    ``np.median`` without weights) of the values of a sorted run read in ``chunks``
    ``(values, masses)`` (read twice), with the masses of ``row``, at levels ``qs``.

    With ``W`` the total mass and ``t = q W`` (the smallest positive float for
    ``q = 0``), the quantile is the first value whose cumulative mass ``C``
    reaches ``t``; where ``C - t`` is at most the float64 epsilon, it is the
    mean of that value and the next one (the inverted CDF, averaged). Returns
    the quantiles and the two values each was formed from (equal where it is
    one value).
    """
    total = _zero(chunks, row)
    for _, ab in chunks:
        total, _ = cumulative_walk(ab[row], total, _NONE, 0, _NO_INDEX, _NONE)
    targets = np.array([(float(q) * 100) / 100 * float(total) or _TINY for q in qs])
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    found, reached = np.empty(len(qs), np.int64), np.empty(len(qs))
    low, high = np.full(len(qs), np.nan), np.full(len(qs), np.nan)
    waiting, before, k, last = [], _zero(chunks, row), 0, np.nan
    for values, ab in chunks:
        masses = ab[row]
        first = next_with_mass(masses, 0, 1)
        if first < 0:
            continue
        high[waiting] = values[first]  # their value was the last of a chunk: the next one is here
        waiting = []
        start = k
        before, k = cumulative_walk(masses, before, ordered, k, found, reached)
        for s in range(start, k):
            i, j = order[s], found[s]
            low[i] = high[i] = values[j]
            if reached[s] - ordered[s] <= _EPS:
                nxt = next_with_mass(masses, j + 1, 1)
                if nxt >= 0:
                    high[i] = values[nxt]
                else:
                    waiting.append(i)
        last = values[next_with_mass(masses, masses.shape[0] - 1, -1)]
    low[order[k:]] = high[order[k:]] = last  # past the total by rounding: the largest value
    out = np.where(low == high, low, (low + high) / 2)
    return out, low, high


def _zero(chunks, row):
    """The zero of the masses' type (counts add as integers)."""
    for _, ab in chunks:
        return ab.dtype.type(0)
    return np.int64(0)


class QuantileResult(Result):
    __slots__ = ()
    title = "Error quantiles"
    counts = ("weight",)


class ErrorQuantiles(SortedRuns):
    """Exact weighted quantiles of regression errors, streamed and mergeable.

    ``update(y, p)`` takes finite truths and predictions. Every distinct error
    (and, with ``truth=True``, every distinct truth) is kept once with its
    count or weight, in the sorted runs of :class:`~streammetrics.RankAUC`'s
    exact state: the state grows with the distinct values, merges exactly, and
    past ``max_memory`` spills its runs to temporary files, read back in
    chunks (the results stay exact).

    Parameters
    ----------
    error : {"absolute", "signed"}, default "absolute"
        The quantiles of ``|y - p|`` (the median absolute error) or of ``y - p``.
    truth : bool, default False
        Keep the truths too, for the D² scores (their baseline is the quantile
        of ``y`` itself); each row then adds two values.
    max_memory, spill_dir
        As :class:`~streammetrics.RankAUC`'s: a budget in bytes (or ``"1GB"``)
        past a quarter of which sorted runs spill to files in ``spill_dir``.
    significant_bits : int, optional
        The binned mode: each error is kept as the range of floats that share
        its sign, exponent and first ``significant_bits`` bits of mantissa (a
        bin of relative width below ``2**-significant_bits``, 1 to 52), so the
        state holds at most ``2**significant_bits`` bins per power of two,
        whatever the rows; quantiles come with certified bounds. ``None`` (the
        default): exact. Takes no ``truth`` (the D² scores are exact only).

    Returns (``finalize()``)
    ------------------------
    median : float
        The median of the errors (with ``error="absolute"``, scikit-learn's
        ``median_absolute_error``); binned, the middle of its bounds.
    median_lower, median_upper : float
        Bounds certain to hold the exact median (equal to it while exact).
    d2_absolute_error : float
        With ``truth=True``: scikit-learn's ``d2_absolute_error_score``,
        ``1 - sum w |y - p| / sum w |y - median(y)|``.
    n : int
        Rows folded in (rows of weight 0 included).
    weight : float
        The total weight.

    :meth:`quantile` gives any quantile (:meth:`quantile_bounds` its bounds),
    :meth:`d2_pinball` D² of the pinball loss (``error="signed"``, ``truth=True``).

    Notes
    -----
    Quantiles follow scikit-learn (``_weighted_percentile(average=True)``, which
    is ``np.median`` without weights): see :func:`run_quantiles`. The weight a
    value holds is the sum of the weights of its rows, summed before the
    cumulative one: with weights whose sums round (not integers or dyadic
    fractions), a level that falls within rounding of a step may pick the
    neighbouring value where scikit-learn's row-by-row sum does not. Where
    the baseline's loss is zero, D² is 1.0 for a perfect fit and 0.0
    otherwise (scikit-learn's ``force_finite``; it returns NaN below two rows).

    Examples
    --------
    >>> from streammetrics import ErrorQuantiles
    >>> acc = ErrorQuantiles(truth=True).update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> r = acc.finalize()
    >>> r.median, round(r.d2_absolute_error, 6)
    (0.5, 0.764706)
    >>> acc.quantile([0.25, 0.9]).tolist()
    [0.25, 1.0]
    >>> s = ErrorQuantiles("signed", truth=True).update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(s.d2_pinball(alpha=0.9), 6)
    0.636364
    >>> b = ErrorQuantiles(significant_bits=4).update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8.1])
    >>> [round(float(v), 6) for v in b.quantile_bounds(0.9)]
    [1.0625, 1.125]
    """

    inputs = (Finite("y"), Finite("p"))
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lo", np.float64, (None,), merge="custom", nonneg=False, doc="distinct values, increasing"),
        Field("counts", np.int64, (2, None), merge="custom", doc="errors, truths at each value (no weights)"),
        Field("weights", np.float64, (2, None), merge="custom", doc="their weights"),
    )
    headline = ("median",)

    def __init__(
        self, error: str = "absolute", *, truth: bool = False, max_memory=None, spill_dir=None, significant_bits=None
    ):
        check_choice("error", error, ("absolute", "signed"))
        if not isinstance(truth, (bool, np.bool_)):
            raise TypeError(f"truth must be True or False, got {type(truth).__name__}")
        self.error, self.truth = error, bool(truth)
        self.significant_bits = None if significant_bits is None else check_count(significant_bits, "significant_bits")
        if self.significant_bits is not None and (self.significant_bits > 52 or self.truth):
            raise ValueError("significant_bits must be at most 52, and takes no truth (the D² scores are exact only)")
        self._init_runs(max_memory, spill_dir)

    def _settings(self):
        out = {"error": self.error, "truth": self.truth}
        if self.significant_bits is not None:
            out["significant_bits"] = self.significant_bits
        return out | self._budget()

    # ------------------------------------------------------------------ state
    def _check_state(self, state):
        n, lo, weighted, name, ab = run_entries(state, 2 if self.truth else 1)
        if not np.all(np.isfinite(lo)) or np.any(np.diff(lo) <= 0):
            raise ValueError("the values are not finite and strictly increasing")
        if not np.all(np.isfinite(ab)) or np.any(ab < 0) or np.any(ab[0] + ab[1] <= 0):
            raise ValueError(f"entry {name!r} holds a negative, infinite or empty mass")
        if self.error == "absolute" and np.any((lo < 0) & (ab[ERRORS] > 0)):
            raise ValueError("a negative absolute error")
        if not self.truth and np.any(ab[TRUTHS] != 0):
            raise ValueError("truths in a state that keeps none")
        if self.significant_bits is not None and not np.array_equal(self._edges(lo.copy(), False), lo):
            raise ValueError(f"a value is not the lowest of its bin of {self.significant_bits} significant bits")
        if not weighted and (count_total(ab[ERRORS]) != n or count_total(ab[TRUTHS]) != (n if self.truth else 0)):
            raise ValueError("the counts do not add up to the observation count")

    def _fold(self, arrays, w):
        y, p = arrays
        n = y.shape[0]
        values = np.empty(2 * n if self.truth else n)
        status, bad = error_values(y, p, self.error == "absolute", values)
        if status == 3:
            raise ValueError(
                f"y[{bad}] - p[{bad}] = {float(y[bad])!r} - {float(p[bad])!r} overflows float64: nothing was "
                "folded in; rescale y and p"
            )
        if status:
            return status
        labels = np.ones(values.shape[0], np.bool_)
        if self.significant_bits is not None:
            self._edges(values, False)
        if self.truth:
            values[n:] = y
            labels[n:] = False
            w = np.concatenate((w, w)) if w.shape[0] else w
        if self._strategy.weighted and not w.shape[0]:
            w = np.ones(values.shape[0])
        status = self._append(labels, values, w)
        if not status:
            self._n += n
        return status

    def _edges(self, values, top: bool):
        """``values`` (float64, changed in place) made their bins' lowest (``top``: highest) values."""
        bucket_edges(values.view(np.uint64), 52 - self.significant_bits, top)
        return values

    # ------------------------------------------------------------------ queries
    def _totals(self, chunks, row: int) -> float:
        total = float(sum((ab[row].sum() for _, ab in chunks), 0))
        if not 0 < total < np.inf:
            raise ValueError(f"the sample weights sum to {total}: the quantiles are undefined")
        return total

    def quantile(self, q):
        """The quantile(s) of the errors at level(s) ``q`` in [0, 1] (a float, or an array for a
        sequence); binned (``significant_bits``), the middle of :meth:`quantile_bounds`.

        >>> ErrorQuantiles("signed").update([1, 2, 3, 4], [0, 0, 0, 0]).quantile([0, 0.5, 1]).tolist()
        [1.0, 2.5, 4.0]
        """
        lower, upper, exact = self._quantiles(q)
        out = exact if self.significant_bits is None else np.where(lower == upper, lower, lower / 2 + upper / 2)
        return float(out[0]) if isinstance(q, numbers.Real) else out

    def quantile_bounds(self, q):
        """``(lower, upper)``: bounds certain to hold the exact quantile(s) at level(s) ``q``
        (both the quantile while exact); floats, or arrays for a sequence."""
        lower, upper, _ = self._quantiles(q)
        if isinstance(q, numbers.Real):
            return float(lower[0]), float(upper[0])
        return lower, upper

    def _quantiles(self, q):
        """The lower and upper bounds and the quantiles of the values kept, at levels ``q``."""
        levels = [check_alpha(v) for v in np.atleast_1d(np.asarray(q, dtype=object)).tolist()]
        with self._guard:
            chunks = self._chunk_source()
            self._totals(chunks, ERRORS)
            out, low, high = run_quantiles(chunks, ERRORS, levels)
        if self.significant_bits is None:
            return out, out, out
        # the exact quantile averages two values where the bins' does (their bins are
        # low's and high's), or two of low's bin, which only a mass below the float64
        # epsilon between them allows: with weights, low's bin bounds it from below
        top, averaged = self._edges(low.copy(), True), low != high
        with np.errstate(over="ignore"):  # an infinite upper bound still holds
            upper = np.where(averaged, (top + self._edges(high, True)) / 2, top)
        return (low if self._strategy.weighted else out), upper, out

    def _chunk_source(self):
        """The chunks of the run, read anew (from the file once spilled) at each pass."""
        return _Reread(self._chunks)

    def d2_pinball(self, alpha: float = 0.5) -> float:
        """scikit-learn's ``d2_pinball_score``: one less the pinball loss of level ``alpha`` of
        the predictions over that of the ``alpha`` quantile of ``y`` predicted everywhere
        (needs ``error="signed"`` and ``truth=True``; ``alpha = 0.5`` also ``error="absolute"``)."""
        alpha = check_alpha(alpha)
        if not self.truth or (self.error == "absolute" and alpha != 0.5):
            raise ValueError("D² of the pinball loss needs ErrorQuantiles(error='signed', truth=True)")
        with self._guard:
            chunks = self._chunk_source()
            self._totals(chunks, TRUTHS)
            (at,), _, _ = run_quantiles(chunks, TRUTHS, [alpha])
            num = den = 0.0
            for values, ab in chunks:
                num += pinball_total(values, ab[ERRORS], 0.0, alpha)
                den += pinball_total(values, ab[TRUTHS], at, alpha)
        return d2_of(num, den)

    def _compute(self) -> Result:
        lower, upper = self.quantile_bounds(0.5)
        chunks = self._chunk_source()
        values = {"median": self.quantile(0.5), "median_lower": lower, "median_upper": upper}
        values |= {"n": self._n, "weight": self._totals(chunks, ERRORS)}
        if self.truth:
            values["d2_absolute_error"] = self.d2_pinball(0.5)
        return QuantileResult("ErrorQuantiles", values, {"weighted": self._strategy.weighted, "error": self.error})


class _Reread:
    """Chunks read anew from their source at each iteration (a spilled run's file)."""

    def __init__(self, source):
        self.source = source

    def __iter__(self):
        return iter(self.source())
