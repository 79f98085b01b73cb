"""Calibration: can the probabilities be trusted? Reliability tables, ECE and
the Murphy decomposition of the Brier score, streamed and mergeable.

Both accumulators keep, for ``B`` uniform bins over [0, 1], each bin's row
count, total weight, and weighted totals of the predicted probabilities and
of the outcomes; every figure is computed from those at ``finalize``.
Equal-mass bins are :class:`~streammetrics.QuantileCalibration`'s.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import calibration as KC
from .._kernels import compensated
from .._kernels.row_sums import sum_terms
from .._protocol.base import Accumulator
from .._protocol.inputs import ROW_SUM_TOLERANCE, ClassProbabilities, Probabilities
from .._protocol.result import safe
from .._protocol.state import Field
from .._protocol.terms import RowTerms, add_pairs
from .calibration_quantile import QuantileCalibration
from .labels import BinaryLabels, PositiveLabel, positive_label
from .multiclass import class_inputs, class_settings
from .rates import one_shot
from .reliability import MAX_BINS, CalibrationResult, calibration_table, check_n_bins

__all__ = ["Calibration", "ClassCalibration", "CalibrationResult", "calibration_table", "expected_calibration_error"]


def _table_fields(prefix: str, size: str):
    return (
        Field(f"{prefix}counts", np.int64, (size,), doc="rows in each bin"),
        Field(f"{prefix}weight", np.float64, (size, 2), merge="pairs", doc="each bin's total weight"),
        Field(f"{prefix}predicted", np.float64, (size, 2), merge="pairs", doc="each bin's weighted total of p"),
        Field(f"{prefix}observed", np.float64, (size, 2), merge="pairs", doc="each bin's weighted total of outcomes"),
    )


def _table(state, prefix=""):
    return tuple(state[f"{prefix}{k}"] for k in ("counts", "weight", "predicted", "observed"))


def _check_table(state, prefix="", rows_per_row=1):
    """A table a real stream could give: per bin, 0 <= predicted, observed <= weight,
    and the predicted total inside the bin's edges times its weight."""
    counts, weight, predicted, observed = (compensated.values(a) if a.ndim == 2 else a for a in _table(state, prefix))
    slack = 1e-9 * weight + 1e-300
    if np.any(predicted > weight + slack) or np.any(observed > weight + slack):
        raise ValueError(f"entries '{prefix}predicted'/'{prefix}observed' exceed the bin's weight")
    if np.any((counts == 0) & (weight != 0)):
        raise ValueError(f"entry '{prefix}weight' holds weight in a bin with no row")
    bins = counts.shape[0] // max(rows_per_row, 1)  # a class table: one run of bins per class
    if bins:
        edges = np.linspace(0.0, 1.0, bins + 1)
        b = np.arange(counts.shape[0]) % bins
        held = weight > 0
        with np.errstate(over="ignore", invalid="ignore"):
            mean = np.where(held, predicted / np.where(held, weight, 1.0), 0.0)
        # (the bin's probabilities lie in its edges; their weighted mean does too, to rounding)
        outside = held & ((mean < edges[b] - 1e-9) | (mean > edges[b + 1] + 1e-9))
        if np.any(outside):
            k = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"entry '{prefix}predicted': bin {k} holds a mean probability of "
                f"{mean[k]:.6g}, outside its edges [{edges[b[k]]:.6g}, {edges[b[k] + 1]:.6g}]"
            )
    if int(counts.sum()) != int(state["n"][0]) * rows_per_row:
        raise ValueError(f"entry '{prefix}counts' does not add up to the rows folded in")


class _Reliability(Accumulator):
    """What both calibration accumulators share: uniform bins, and the table of
    their top (or only) probability."""

    _fixed_settings = True  # copies share the settings
    _totals_unchecked = True  # its weighted folds do not check that their totals stay finite

    def _set_bins(self, n_bins) -> None:
        self.n_bins = check_n_bins(n_bins)
        self._edges = np.linspace(0.0, 1.0, self.n_bins + 1)

    def _fold_tables(self, terms, args, w, width: int, prefixes) -> int:
        """Fold the rows of ``args`` into the tables named by ``prefixes`` through
        the terms kernel ``terms`` (each table's weights, predicted and observed
        totals its slots in turn); the status."""
        st = self._arrays
        tables = [_table(st, prefix) for prefix in prefixes]
        pairs = np.concatenate([a for table in tables for a in table[1:]])  # written only if valid
        counts = np.zeros(pairs.shape[0], np.int64)
        status = sum_terms(terms, args, w, width, counts, pairs, block=KC.block_of(self.n_bins))
        if status:
            return status
        at = 0
        for table in tables:
            size = table[0].shape[0]
            table[0][:] += counts[at : at + size]
            for a in table[1:]:
                a[:] = pairs[at : at + size]
                at += size
        st["n"][0] += args[0].shape[0]
        return 0

    def _top_table(self) -> tuple[dict, bool]:
        """The figures of the top table, and whether weights were seen."""
        counts, *pairs = _table(self._arrays)
        weighted = bool(np.any(compensated.values(self._arrays["weight"]) != counts))
        return calibration_table(counts, *(compensated.values(a) for a in pairs), self._edges), weighted


class Calibration(_Reliability):
    """Streaming calibration of binary probabilities: a reliability table over
    ``n_bins`` uniform bins, the expected and maximum calibration errors and the
    Murphy decomposition of the Brier score.

    ``update(y, p)`` takes 0/1 labels and probabilities of the positive class
    in [0, 1] (a vector, or scikit-learn's n x 2 ``predict_proba`` matrix,
    whose second column is read); ``p`` falls in bin ``b`` when ``b/B < p <= (b+1)/B`` (0 in the
    first bin): the bins of ``sklearn.calibration.calibration_curve(y, p,
    n_bins=B, strategy="uniform")``. (torchmetrics closes its bins on the left
    instead, so a probability exactly on an edge may fall one bin apart.)

    Parameters
    ----------
    n_bins : int
        ``B``, from 1 to 100,000 (15 by default).
    pos_label : hashable, optional
        The positive class of labels of any kind (else 0/1 labels).
    strategy : {"uniform", "quantile"}
        ``"quantile"``: equal-mass bins, whose edges are the percentiles of
        all the probabilities; the object made is then a
        :class:`QuantileCalibration` (exact, in memory O(distinct
        probabilities), spilling past ``max_memory`` to ``spill_dir``, and
        taking no weights: see it).

    Returns (``finalize()``)
    ------------------------
    bin_count : int64 array (B,)
        Rows in each bin, the empty bins included (as 0).
    bin_weight : float array (B,)
        Each bin's total weight (its row count without weights).
    mean_predicted, fraction_positive : float arrays (B,)
        Each bin's weighted mean probability and weighted fraction of
        positives; 0 in a bin with no row (the guard ``safe``), where
        ``calibration_curve`` drops the bin.
    bin_edges : float array (B + 1,)
        ``numpy.linspace(0, 1, B + 1)``, the edges of ``calibration_curve``:
        with some bin counts an edge is an ulp below ``k / B`` (6 bins:
        ``5/6``), and a probability of exactly ``k / B`` then falls in the
        bin above it, as it does in scikit-learn.
    ece : float
        Expected calibration error ``sum_b (W_b / W) |o_b - p_b|`` (L1).
    mce : float
        Maximum calibration error ``max_b |o_b - p_b|`` over bins with rows.
    rmsce : float
        Root-mean-square calibration error ``sqrt(sum_b (W_b / W) (o_b - p_b)**2)``.
    reliability, resolution, uncertainty : float
        Murphy's terms: ``sum_b (W_b / W)(p_b - o_b)**2``,
        ``sum_b (W_b / W)(o_b - o)**2`` and ``o (1 - o)``, ``o`` the overall
        positive fraction.
    binned_brier : float
        ``reliability - resolution + uncertainty``.
    n : int
        Rows folded in.

    Notes
    -----
    The counts and totals are exact (compensated sums); what the binning
    approximates is the calibration function itself: ``ece``, ``mce`` and
    ``rmsce`` compare each bin's mean probability with its positive
    fraction, so they depend on ``n_bins`` (fewer bins hide miscalibration
    inside a bin, more bins add noise). The decomposition
    ``binned_brier = reliability - resolution + uncertainty`` holds exactly
    for the *binned* forecasts, every probability replaced by its bin's mean
    probability; the Brier score of the raw probabilities
    (:class:`ProbabilityScores`) differs from it by the within-bin variance
    and covariance terms (Stephenson et al. 2008).

    Examples
    --------
    >>> from streammetrics import Calibration
    >>> acc = Calibration(n_bins=2).update([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.7])
    >>> r = acc.finalize()
    >>> r.bin_count, r.mean_predicted, r.fraction_positive
    (array([2, 2]), array([0.25, 0.65]), array([0., 1.]))
    >>> round(r.ece, 6), round(r.mce, 6)
    (0.3, 0.35)
    """

    inputs = (BinaryLabels("y", "pass pos_label=, or use ClassCalibration"), Probabilities("p", predict_proba=True))
    fields = (Field("n", np.int64, (1,)), *_table_fields("", "n_bins"))
    headline = ("ece", "mce")

    def __new__(cls, n_bins: int = 15, *, pos_label=None, strategy="uniform", **quantile):
        if strategy == "quantile" and cls is Calibration:
            return QuantileCalibration(n_bins, pos_label=pos_label, **quantile)
        return super().__new__(cls)

    def __init__(self, n_bins: int = 15, *, pos_label=None, strategy="uniform"):
        if strategy != "uniform":
            raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
        self._set_bins(n_bins)
        self.pos_label = positive_label(pos_label)
        if self.pos_label is not None:
            self.inputs = (PositiveLabel("y", self.pos_label), self.inputs[1])
        self._init_state()

    def _settings(self):
        return {"n_bins": self.n_bins} | ({} if self.pos_label is None else {"pos_label": self.pos_label})

    def _check_state(self, state):
        _check_table(state)

    def _fold(self, arrays, w):
        return self._fold_tables(KC.calibration_terms, (*arrays, self._edges), w, 3, ("",))

    def row_terms(self) -> RowTerms:
        """Each row adds 1, its probability and its outcome to its bin's totals
        (``3 B`` slots: the weights, then the predicted and observed totals)."""
        return RowTerms(3 * self.n_bins, 3, self._terms, rows=self.n_bins)

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        return KC.calibration_terms(y, p, self._edges, lo, slots, values, col, base)

    def _add_sums(self, sums, st):
        B = self.n_bins
        st["n"][:, 0] += sums.rows
        st["counts"] += sums.ints[:, :B]
        for j, name in enumerate(("weight", "predicted", "observed")):
            add_pairs(st[name], sums.pairs[:, j * B : (j + 1) * B])

    def _compute(self) -> CalibrationResult:
        values, weighted = self._top_table()
        return CalibrationResult(
            "CalibrationScores", {**values, "n": self.n}, {"n_bins": self.n_bins, "weighted": weighted}
        )


class ClassCalibration(_Reliability):
    """Streaming calibration of multiclass probabilities: the top label's
    reliability table, and every class's.

    ``update(y, P)`` takes classes ``0..K-1`` (or ``labels``) and an n x K
    probability matrix (rows summing to 1 within 1e-3), binned as
    :class:`Calibration` bins.

    * **Top label** (the confidence calibration of Guo et al. 2017, what
      torchmetrics' ``MulticlassCalibrationError`` measures): each row's
      highest probability (the first column reaching it is the predicted
      class) against whether that class is the true one. The result's
      ``bin_*``, ``mean_predicted``, ``fraction_positive``, ``ece``,
      ``mce``, ``rmsce`` and the Brier decomposition are this table's.
    * **Class-wise** (Kull et al. 2019): for every class ``k``, ``P[:, k]``
      against ``y == k``. ``class_ece`` (K,) holds each class's ECE and
      ``classwise_ece`` their mean.

    Parameters
    ----------
    n_classes : int, optional
        K (or give ``labels``).
    n_bins : int
        Bins of each table (15 by default).
    labels : sequence of hashable, optional
        The class labels in column order.

    Notes
    -----
    Each class's table is exact and approximates as :class:`Calibration`'s
    does (see its notes): the scores depend on ``n_bins``.

    Examples
    --------
    >>> from streammetrics import ClassCalibration
    >>> acc = ClassCalibration(labels=["cat", "dog"], n_bins=2)
    >>> r = acc.update(["cat", "dog", "dog"], [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]).finalize()
    >>> r.bin_count, round(r.ece, 6)  # confidence 0.7 on average, 2 of 3 right
    (array([0, 3]), 0.033333)
    >>> r.class_ece.round(6)
    array([0.233333, 0.233333])
    """

    headline = ("ece", "classwise_ece")

    def __init__(self, n_classes: int | None = None, n_bins: int = 15, labels=None):
        self.n_classes, self.labels = class_settings("ClassCalibration", n_classes, labels)
        self._set_bins(n_bins)
        if self.n_classes * self.n_bins > 10 * MAX_BINS:
            raise ValueError(f"n_classes x n_bins = {self.n_classes * self.n_bins:,} bins; at most {10 * MAX_BINS:,}")
        self._class_bins = self.n_classes * self.n_bins
        self.inputs = (*class_inputs(self.n_classes, self.labels, ("y",)), ClassProbabilities("p", self.n_classes))
        self._init_state()

    argument_names = ("y", "p")
    fields = (Field("n", np.int64, (1,)), *_table_fields("", "n_bins"), *_table_fields("class_", "_class_bins"))

    def _settings(self):
        out = {"n_classes": self.n_classes, "n_bins": self.n_bins}
        return out | ({} if self.labels is None else {"labels": self.labels})

    def _check_state(self, state):
        _check_table(state)
        _check_table(state, "class_", self.n_classes)
        # every row adds one entry to each class's table, of the same weight
        k, nb = self.n_classes, self.n_bins
        per_class = state["class_counts"].reshape(k, nb).sum(axis=1)
        n = int(state["n"][0])
        if np.any(per_class != n):
            j = int(np.flatnonzero(per_class != n)[0])
            raise ValueError(
                f"entry 'class_counts': class {j}'s table counts {int(per_class[j])} rows, not the {n} folded in"
            )
        total = float(np.sum(compensated.values(state["weight"])))
        weights = compensated.values(state["class_weight"]).reshape(k, nb).sum(axis=1)
        if np.any(np.abs(weights - total) > 1e-9 * total):
            j = int(np.flatnonzero(np.abs(weights - total) > 1e-9 * total)[0])
            raise ValueError(
                f"entry 'class_weight': class {j}'s table weighs {weights[j]:.6g}, not the rows' total {total:.6g}"
            )

    def _fold(self, arrays, w):
        args = (*arrays, self.n_classes, ROW_SUM_TOLERANCE, self._edges)
        return self._fold_tables(KC.class_calibration_terms, args, w, 3 * (self.n_classes + 1), ("", "class_"))

    def _compute(self) -> CalibrationResult:
        values, weighted = self._top_table()
        k, nb = self.n_classes, self.n_bins
        cw, cp, co = (compensated.values(a).reshape(k, nb) for a in _table(self._arrays, "class_")[1:])
        total = math.fsum(cw[0].tolist())
        gap = np.abs(co / safe(cw) - cp / safe(cw))
        class_ece = np.array([math.fsum((cw[j] * gap[j]).tolist()) for j in range(k)]) / safe(total)
        values.update(class_ece=class_ece, classwise_ece=float(class_ece.mean()), n=self.n)
        meta = {"labels": self.labels, "n_bins": nb, "what": "top label", "weighted": weighted}
        return CalibrationResult("ClassCalibrationScores", values, meta)


# ------------------------------------------------------------------ one-shot
def expected_calibration_error(
    y, p, *, n_bins: int = 15, sample_weight=None, pos_label=None, strategy="uniform"
) -> float:
    """Expected calibration error of binary probabilities over ``n_bins`` uniform bins
    (``strategy="quantile"``: equal-mass bins, without weights).

    ``sum_b (W_b / W) |o_b - p_b|``: see :class:`Calibration` (whose
    ``finalize()`` also gives the table, ``mce``, ``rmsce`` and the Brier
    decomposition; ``pos_label``: the positive class of labels of any kind).

    >>> from streammetrics import expected_calibration_error
    >>> round(expected_calibration_error([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.7], n_bins=2), 6)
    0.3
    """
    acc = Calibration(n_bins, pos_label=pos_label, strategy=strategy)
    return one_shot(acc, y, p, sample_weight=sample_weight).finalize().ece
