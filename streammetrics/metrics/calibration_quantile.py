"""Calibration over equal-mass bins, exact: every distinct probability kept once with its
positives and negatives, in the sorted runs of the exact rank state."""

from __future__ import annotations

import numpy as np

from .._kernels import calibration as KC
from .._kernels import checks as C
from .._kernels import compensated
from .._protocol.inputs import Probabilities
from .._protocol.state import Field, count_total
from .labels import BinaryLabels, PositiveLabel, positive_label
from .ranking.held import SortedRuns
from .ranking.saved import run_entries
from .reliability import CalibrationResult, calibration_table, check_n_bins

__all__ = ["QuantileCalibration", "percentile_edges"]


def percentile_edges(n_bins: int, n: int, order_statistic) -> np.ndarray:
    """``numpy.percentile(p, numpy.linspace(0, 1, n_bins + 1) * 100)`` of ``n`` sorted
    values, ``order_statistic(ranks)`` giving the values at 0-based ``ranks``: numpy's
    linear method, operation for operation (index ``(n - 1) q``, ``a + (b - a) g``,
    or ``b - (b - a)(1 - g)`` where ``g >= 0.5``), so the edges are its to the bit."""
    q = np.true_divide(np.linspace(0, 1, n_bins + 1) * 100, 100)
    virtual = (n - 1) * q
    below = np.floor(virtual)
    above = virtual >= n - 1  # numpy takes the last value there
    prev = np.where(above, n - 1, below).astype(np.int64)
    gamma = virtual - np.where(above, -1, below).astype(np.int64)
    a = order_statistic(prev)
    b = order_statistic(np.where(above, n - 1, prev + 1))
    diff = b - a
    out = a + diff * gamma
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), out)


class QuantileCalibration(SortedRuns):
    """Streaming calibration of binary probabilities over ``n_bins`` equal-mass bins,
    exact: ``Calibration(n_bins, strategy="quantile")``.

    The bin edges are the percentiles of all the probabilities
    (``numpy.percentile(p, numpy.linspace(0, 100, B + 1))``, linear
    interpolation), and ``p`` falls in bin ``b`` when ``edges[b] < p <=
    edges[b + 1]`` (the lowest edge in bin 0, the highest in bin ``B - 1``):
    the bins of ``sklearn.calibration.calibration_curve(y, p, n_bins=B,
    strategy="quantile")``. Edges depend on every row, so they are computed at
    ``finalize`` from the whole state: every distinct probability is kept once
    with its count of positives and negatives, in the sorted runs of
    :class:`~streammetrics.RankAUC`'s exact state. Merging adds the counts
    exactly, so any batching, sharding and merge order gives the same edges
    (to the bit: numpy's interpolation, repeated on the same order
    statistics), the same counts, and per-bin probability totals summed with
    compensation (equal to a row-by-row sum to about 1e-15).

    Memory: O(distinct probabilities), 24 bytes each (16 once spilled). Past a
    quarter of ``max_memory`` the sorted runs spill to temporary files in
    ``spill_dir``; ``finalize`` then reads the merged run from its file twice
    (the edges, then the bins), in chunks, and stays exact.

    Parameters
    ----------
    n_bins : int
        ``B``, from 1 to 100,000 (15 by default).
    pos_label : hashable, optional
        The positive class of labels of any kind (else 0/1 labels).
    max_memory, spill_dir
        As :class:`~streammetrics.RankAUC`'s: a budget in bytes (or ``"1GB"``).

    ``update(y, p)`` takes no ``sample_weight`` (``calibration_curve`` takes
    none, and equal-mass edges of weighted rows have no agreed definition):
    a weighted batch is refused with ``NoWeightsError``.

    Returns (``finalize()``)
    ------------------------
    :class:`Calibration`'s fields on these bins: ``bin_edges`` (the ``B + 1``
    percentiles; equal edges leave a bin empty), ``bin_count``,
    ``bin_weight`` (the counts), ``mean_predicted`` and ``fraction_positive``
    (0 in an empty bin; ``calibration_curve`` returns the non-empty bins'
    ``fraction_positive`` and ``mean_predicted``), ``ece``, ``mce``,
    ``rmsce``, the Brier decomposition over these bins, and ``n``.

    Examples
    --------
    >>> from streammetrics import Calibration
    >>> acc = Calibration(n_bins=2, strategy="quantile")
    >>> acc.update([0, 0, 1], [0.1, 0.2, 0.6]).update([1], [0.9])
    QuantileCalibration(n_bins=2): n=4 ece=0.2 mce=0.25
    >>> r = acc.finalize()
    >>> r.bin_edges.tolist(), r.bin_count.tolist()
    ([0.1, 0.4, 0.9], [2, 2])
    >>> r.mean_predicted.round(6).tolist(), r.fraction_positive.tolist(), round(r.ece, 6)
    ([0.15, 0.75], [0.0, 1.0], 0.2)
    """

    inputs = (BinaryLabels("y", "pass pos_label=, or use ClassCalibration"), Probabilities("p", predict_proba=True))
    takes_weights = False
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom", doc="always 0: counts only"),
        Field("lo", np.float64, (None,), merge="custom", doc="distinct probabilities, increasing"),
        Field("counts", np.int64, (2, None), merge="custom", doc="positives, negatives at each"),
        Field("weights", np.float64, (2, None), merge="custom", doc="always empty"),
    )
    headline = ("ece", "mce")

    def __init__(self, n_bins: int = 15, *, pos_label=None, max_memory=None, spill_dir=None):
        self.n_bins = check_n_bins(n_bins)
        self.pos_label = positive_label(pos_label)
        if self.pos_label is not None:
            self.inputs = (PositiveLabel("y", self.pos_label), self.inputs[1])
        self._init_runs(max_memory, spill_dir)

    def _settings(self):
        out = {"n_bins": self.n_bins} | ({} if self.pos_label is None else {"pos_label": self.pos_label})
        return out | self._budget()

    # ------------------------------------------------------------------ state
    def _check_state(self, state):
        n, lo, weighted, _, ab = run_entries(state)
        if weighted:
            raise ValueError("entry 'weighted' must be 0: this state holds counts only")
        if not np.all((lo >= 0) & (lo <= 1)) or np.any(np.diff(lo) <= 0):
            raise ValueError("entry 'lo': the probabilities are not in [0, 1] and strictly increasing")
        if np.any(ab < 0) or np.any(ab[0] + ab[1] == 0) or np.any(ab > n) or count_total(ab) != n:
            raise ValueError("entry 'counts': a negative or empty entry, or counts not adding up to the observations")

    def _fold(self, arrays, w):
        y, p = arrays
        if C.first_outside01(p) >= 0:
            return 2
        status = self._append(y, p, w)
        if not status:
            self._n += y.shape[0]
        return status

    # ------------------------------------------------------------------ result
    def _order_statistics(self, ranks):
        """The probabilities at the 0-based ``ranks`` of all the rows, sorted."""
        out, before = np.empty(ranks.shape[0]), 0
        for values, ab in self._chunks():
            cum = before + np.cumsum(ab[0].astype(np.int64) + ab[1])
            here = (ranks >= before) & (ranks < cum[-1])
            out[here] = values[np.searchsorted(cum, ranks[here], side="right")]
            before = int(cum[-1])
        return out

    def _compute(self) -> CalibrationResult:
        B = self.n_bins
        edges = percentile_edges(B, self._n, self._order_statistics)
        counts, positives, predicted = np.zeros(B, np.int64), np.zeros(B, np.int64), np.zeros((B, 2))
        inner = np.ascontiguousarray(edges[1:-1])
        for values, ab in self._chunks():
            KC.bin_run(values, ab, inner, counts, positives, predicted)
        weight = counts.astype(np.float64)
        values = calibration_table(counts, weight, compensated.values(predicted), positives.astype(np.float64), edges)
        meta = {"n_bins": B, "strategy": "quantile", "weighted": False}
        return CalibrationResult("CalibrationScores", {**values, "n": self._n}, meta)
