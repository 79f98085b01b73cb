"""Clustering agreement scores from the sparse contingency table of two labelings.

The table (the count of every (true, pred) pair) is the sufficient statistic:
shards merge exactly by adding cells. Definitions and degenerate cases are
scikit-learn's; pair counts are exact Python integers (``n**2`` overflows
``int64`` past about 55 000 rows), entropies are in nats.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from .._kernels.contingency import batch_table, expected_mutual_info, marginal, merge_tables
from .._protocol.base import Accumulator
from .._protocol.errors import NoObservationsError
from .._protocol.inputs import ClusterLabels
from .._protocol.result import Result
from .._protocol.runs import RunStack
from .._protocol.state import Field, count_total
from .._protocol.validation import check_choice

__all__ = [
    "ClusterContingency",
    "AVERAGE_METHODS",
    "adjusted_rand_score",
    "adjusted_mutual_info_score",
    "normalized_mutual_info_score",
    "mutual_info_score",
    "homogeneity_completeness_v_measure",
    "homogeneity_score",
    "completeness_score",
    "v_measure_score",
    "fowlkes_mallows_score",
    "rand_score",
]

#: The normalisations of NMI and AMI: how the two entropies are averaged.
_MEANS = {
    "arithmetic": lambda u, v: (u + v) / 2,
    "geometric": lambda u, v: float(np.sqrt(u * v)),
    "min": min,
    "max": max,
}
AVERAGE_METHODS = tuple(_MEANS)

_EPS = float(np.finfo(np.float64).eps)
_INT64_MAX = np.iinfo(np.int64).max
# sqrt(2**63 - 1): below this many rows every sum of squared counts fits int64
_SQUARES_FIT_INT64 = 3_037_000_499


def _check_average_method(average_method) -> str:
    return check_choice("average_method", average_method, AVERAGE_METHODS)


def _sum_sq(x: np.ndarray, n: int) -> int:
    """Exact sum of squares of non-negative counts summing to ``n``."""
    if n < _SQUARES_FIT_INT64:
        return int(np.dot(x, x))
    return sum(v * v for v in x.tolist())


def _entropy(sizes: np.ndarray, n: int) -> float:
    """Entropy (nats) of a labeling with these cluster sizes, as scikit-learn."""
    if sizes.shape[0] <= 1:
        return 0.0
    pi = sizes.astype(np.float64)
    return float(-np.sum((pi / n) * (np.log(pi) - math.log(n))))


class _Table:
    """The marginals and pair counts of a contingency table, computed on demand."""

    def __init__(self, true, pred, counts, n: int, average_method: str = "arithmetic"):
        self.counts = counts
        self.n = n
        self.average_method = average_method
        self.row_id, self.a = marginal(true, counts)  # (in increasing label order, as the table's rows run)
        self.col_id, self.b = marginal(pred, counts)
        self.n_classes, self.n_clusters = int(self.a.shape[0]), int(self.b.shape[0])

    # ---------------------------------------------------------- pair counts
    @cached_property
    def squares(self):
        """The exact sums of squares of the cells, the classes' and the clusters' sizes."""
        return _sum_sq(self.counts, self.n), _sum_sq(self.a, self.n), _sum_sq(self.b, self.n)

    def pairs(self):
        """scikit-learn's pair confusion matrix ``(tn, fp, fn, tp)``, exact ints."""
        n = self.n
        sq, sa, sb = self.squares
        fp, fn = sb - sq, sa - sq
        return n * n - fp - fn - sq, fp, fn, sq - n

    def ari(self) -> float:
        tn, fp, fn, tp = self.pairs()
        if fn == 0 and fp == 0:
            return 1.0
        return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))

    def rand_index(self) -> float:
        tn, fp, fn, tp = self.pairs()
        numerator = tn + tp
        denominator = tn + fp + fn + tp
        if numerator == denominator or denominator == 0:
            return 1.0
        return float(numerator / denominator)

    def fowlkes_mallows(self) -> float:
        tk, qk, pk = (v - self.n for v in self.squares)
        if tk == 0:
            return 0.0
        return float(math.sqrt(float(tk) / float(pk)) * math.sqrt(float(tk) / float(qk)))

    # ---------------------------------------------------- information scores
    @cached_property
    def entropies(self):
        return _entropy(self.a, self.n), _entropy(self.b, self.n)

    @cached_property
    def mi(self) -> float:
        if self.n_classes == 1 or self.n_clusters == 1:
            return 0.0
        nz = self.counts.astype(np.float64)
        log_n = math.log(self.n)
        nm = nz / self.n
        outer = self.a[self.row_id].astype(np.float64) * self.b[self.col_id]
        log_outer = -np.log(outer) + 2 * log_n
        terms = nm * (np.log(nz) - log_n) + nm * log_outer
        terms = np.where(np.abs(terms) < _EPS, 0.0, terms)
        return float(max(np.sum(terms), 0.0))

    def homogeneity_completeness_v(self, beta: float = 1.0):
        h_true, h_pred = self.entropies
        homogeneity = self.mi / h_true if h_true else 1.0
        completeness = self.mi / h_pred if h_pred else 1.0
        if homogeneity + completeness == 0.0:
            v = 0.0
        else:
            v = (1 + beta) * homogeneity * completeness / (beta * homogeneity + completeness)
        return float(homogeneity), float(completeness), float(v)

    def nmi(self) -> float:
        if self.n_classes == 1 and self.n_clusters == 1:
            return 1.0
        if self.mi == 0:
            return 0.0
        return float(self.mi / _MEANS[self.average_method](*self.entropies))

    def ami(self) -> float:
        if self.n_classes == 1 and self.n_clusters == 1:
            return 1.0
        if self.n_classes == 1 or self.n_clusters == 1:
            return 0.0
        alone = self.n_classes == self.n or self.n_clusters == self.n
        # every point alone in one labeling: any labelings with these marginals share the
        # mutual information, the other's entropy, so the expectation is the MI itself
        # (exactly, not to rounding), and no normaliser is below it
        emi = self.mi if alone else float(expected_mutual_info(self.a, self.b, self.n))
        normalizer = _MEANS[self.average_method](*self.entropies)
        # the expectation can exceed the normaliser by rounding on a perfect
        # match: keep the sign, avoid 0/0 (as scikit-learn)
        denominator = normalizer - emi
        if alone:
            denominator = max(denominator, _EPS)
        denominator = min(denominator, -_EPS) if denominator < 0 else max(denominator, _EPS)
        numerator = self.mi - emi
        numerator = min(numerator, -_EPS) if numerator < 0 else max(numerator, _EPS)
        return float(numerator / denominator)


class ClusterResult(Result):
    __slots__ = ()
    title = "Agreement"


class ClusterContingency(Accumulator):
    """Streaming contingency table of two labelings and their agreement scores.

    ``update(labels_true, labels_pred)`` takes any integer labels (never used
    as indices); the state grows with the distinct (true, pred) pairs, not with
    ``n``. ``average_method`` ({"arithmetic", "geometric", "min", "max"}) is how
    ``nmi`` and ``ami`` average the two entropies. ``finalize()`` gives ``ari``,
    ``ami``, ``nmi``, ``mi``, ``homogeneity``, ``completeness``, ``v_measure``,
    ``fowlkes_mallows``, ``rand_index``, ``n``, ``n_classes`` and
    ``n_clusters``, with scikit-learn's degenerate cases; no observation at all
    is a ``ValueError``, and sample weights are refused (``TypeError``).

    Examples
    --------
    Two shards of the labelings of six points, merged:

    >>> from streammetrics import ClusterContingency
    >>> a = ClusterContingency().update([0, 0, 0], [0, 0, 1])
    >>> b = ClusterContingency().update([1, 1, 1], [1, 2, 2])
    >>> r = (a + b).finalize()
    >>> round(r.ari, 4), round(r.ami, 4), round(r.v_measure, 4)
    (0.2424, 0.2988, 0.5158)
    >>> r.n, r.n_classes, r.n_clusters
    (6, 2, 3)
    """

    inputs = (ClusterLabels("labels_true"), ClusterLabels("labels_pred"))
    takes_weights = False
    fields = (
        Field("n", np.int64, (1,)),
        Field("true", np.int64, (None,), merge="custom", nonneg=False),
        Field("pred", np.int64, (None,), merge="custom", nonneg=False),
        Field("counts", np.int64, (None,), merge="custom", rows=True),
    )
    headline = ("ari", "nmi")

    def __init__(self, average_method: str = "arithmetic"):
        self.average_method = _check_average_method(average_method)
        self._n = 0
        # sorted tables, merged log-structured: many small updates on a table
        # of C cells cost O(batch log) each instead of O(C)
        self._tables = RunStack(_merge, _cells)

    def _settings(self):
        return {"average_method": self.average_method}

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far."""
        return self._n

    def _fold(self, arrays, w):
        y, p = arrays
        self._tables.push(batch_table(y, p))
        self._n += y.shape[0]
        return 0

    # ------------------------------------------------------------------- state
    def _table_arrays(self):
        merged = self._tables.merged()
        if merged is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return merged

    @property
    def _state(self):
        t, p, c = self._table_arrays()
        return {"n": np.array([self._n], np.int64), "true": t, "pred": p, "counts": c}

    def _load(self, state):
        self._n = int(state["n"][0])
        self._tables = RunStack(_merge, _cells)
        if state["counts"].shape[0]:
            self._tables.push((state["true"], state["pred"], state["counts"]))

    def _merge_state(self, other):
        if other["counts"].shape[0]:
            self._tables.push((other["true"], other["pred"], other["counts"]))
        self._n += int(other["n"][0])

    def _check_state(self, state):
        t, p, c = state["true"], state["pred"], state["counts"]
        if not (t.shape == p.shape == c.shape):
            raise ValueError("the table entries must be 1-D arrays of one length")
        if c.size and c.min() <= 0:
            raise ValueError("table counts must be positive")
        if count_total(c) != int(state["n"][0]):
            raise ValueError("table counts do not add up to the observation count")
        ordered = (t[1:] > t[:-1]) | ((t[1:] == t[:-1]) & (p[1:] > p[:-1]))
        if not np.all(ordered):
            raise ValueError("the table is not sorted by (true, pred) without repeats")

    # ---------------------------------------------------------------- results
    def table(self):
        """The non-zero cells: ``(labels_true, labels_pred, counts)`` copies, sorted."""
        with self._guard:
            return tuple(a.copy() for a in self._table_arrays())

    def _compute(self) -> Result:
        t = _Table(*self._table_arrays(), self._n, self.average_method)
        h, c, v = t.homogeneity_completeness_v()
        values = dict(n=t.n, n_classes=t.n_classes, n_clusters=t.n_clusters, ari=t.ari(), ami=t.ami(), nmi=t.nmi())
        values.update(mi=t.mi, homogeneity=h, completeness=c, v_measure=v, fowlkes_mallows=t.fowlkes_mallows())
        values["rand_index"] = t.rand_index()
        return ClusterResult("ClusterScores", values)


def _merge(a, b):
    return merge_tables(*a, *b)


def _cells(table) -> int:
    return table[2].shape[0]


# ------------------------------------------------------------------ one-shot
def _one_shot(labels_true, labels_pred, average_method="arithmetic") -> _Table:
    acc = ClusterContingency(average_method).update(labels_true, labels_pred)
    if acc.n == 0:
        raise NoObservationsError("labels_true and labels_pred are empty: the score needs at least one observation")
    return _Table(*acc.table(), acc.n, average_method)


def adjusted_rand_score(labels_true, labels_pred) -> float:
    """Adjusted Rand index: the Rand index corrected for chance (scikit-learn's).

    >>> from streammetrics import adjusted_rand_score
    >>> adjusted_rand_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    0.24...
    """
    return _one_shot(labels_true, labels_pred).ari()


def adjusted_mutual_info_score(labels_true, labels_pred, *, average_method="arithmetic") -> float:
    """Adjusted mutual information: MI corrected for chance (scikit-learn's).

    ``(MI - E[MI]) / (mean(H_true, H_pred) - E[MI])``, the mean chosen by
    ``average_method`` (scikit-learn before 0.22 used "max").

    >>> from streammetrics import adjusted_mutual_info_score
    >>> adjusted_mutual_info_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    0.29879...
    """
    return _one_shot(labels_true, labels_pred, _check_average_method(average_method)).ami()


def normalized_mutual_info_score(labels_true, labels_pred, *, average_method="arithmetic") -> float:
    """Normalized mutual information: ``MI / mean(H_true, H_pred)``.

    >>> from streammetrics import normalized_mutual_info_score
    >>> normalized_mutual_info_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    0.51...
    """
    return _one_shot(labels_true, labels_pred, _check_average_method(average_method)).nmi()


def mutual_info_score(labels_true, labels_pred) -> float:
    """Mutual information of two labelings, in nats.

    >>> from streammetrics import mutual_info_score
    >>> mutual_info_score([0, 1, 1, 0, 1, 0], [0, 1, 0, 0, 1, 1])
    0.0566...
    """
    return _one_shot(labels_true, labels_pred).mi


def homogeneity_completeness_v_measure(labels_true, labels_pred, *, beta=1.0):
    """``(homogeneity, completeness, v_measure)`` in one pass.

    The V-measure is their weighted harmonic mean (``beta`` > 1 weights
    completeness more).

    >>> from streammetrics import homogeneity_completeness_v_measure
    >>> homogeneity_completeness_v_measure([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    (0.66..., 0.42..., 0.51...)
    """
    beta = float(beta)
    if not beta >= 0 or not math.isfinite(beta):
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
    return _one_shot(labels_true, labels_pred).homogeneity_completeness_v(beta)


def homogeneity_score(labels_true, labels_pred) -> float:
    """Homogeneity: 1 when every cluster holds members of a single class.

    >>> from streammetrics import homogeneity_score
    >>> homogeneity_score([0, 0, 1, 1], [0, 0, 1, 2])
    1.0
    """
    return homogeneity_completeness_v_measure(labels_true, labels_pred)[0]


def completeness_score(labels_true, labels_pred) -> float:
    """Completeness: 1 when all members of a class share one cluster.

    >>> from streammetrics import completeness_score
    >>> completeness_score([0, 0, 1, 2], [0, 0, 1, 1])
    1.0
    """
    return homogeneity_completeness_v_measure(labels_true, labels_pred)[1]


def v_measure_score(labels_true, labels_pred, *, beta=1.0) -> float:
    """V-measure: the harmonic mean of homogeneity and completeness.

    >>> from streammetrics import v_measure_score
    >>> v_measure_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    0.51...
    """
    return homogeneity_completeness_v_measure(labels_true, labels_pred, beta=beta)[2]


def fowlkes_mallows_score(labels_true, labels_pred) -> float:
    """Fowlkes-Mallows index: geometric mean of pairwise precision and recall.

    >>> from streammetrics import fowlkes_mallows_score
    >>> fowlkes_mallows_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    0.4714...
    """
    return _one_shot(labels_true, labels_pred).fowlkes_mallows()


def rand_score(labels_true, labels_pred) -> float:
    """Rand index: the share of point pairs on which both labelings agree.

    >>> from streammetrics import rand_score
    >>> rand_score([0, 0, 1, 2], [0, 0, 1, 1])
    0.83...
    """
    return _one_shot(labels_true, labels_pred).rand_index()
