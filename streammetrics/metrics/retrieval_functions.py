"""One-shot ranking scores of a query x item matrix, with scikit-learn's names.

Each row of ``y_true`` (graded relevance, non-negative) and ``y_score`` is one
query; its items are ranked by score, highest first. The scores are those of
:class:`~streammetrics.RetrievalScores` (whose docstring gives the
conventions), for a matrix at once.
"""

from __future__ import annotations

import numpy as np

from .._kernels.retrieval import PER_K, query_values
from .._kernels.retrieval_labels import label_ranking_rows
from .._protocol.errors import BadShapeError, BadValueError, NoObservationsError
from .._protocol.validation import as_float64, as_numbers, as_weights, to_numpy

__all__ = [
    "coverage_error",
    "dcg_score",
    "label_ranking_average_precision_score",
    "label_ranking_loss",
    "map_at_k",
    "mrr_score",
    "ndcg_score",
    "precision_at_k",
    "recall_at_k",
]


def _matrix(x, name: str, nonneg: bool) -> np.ndarray:
    arr = as_float64(as_numbers(to_numpy(x, name, "an n_queries x n_items matrix"), name))
    if arr.ndim != 2:
        raise BadShapeError(f"{name} must be an n_queries x n_items matrix, got shape {arr.shape}", name)
    problem = "relevance must be finite and non-negative" if nonneg else "scores must be finite"
    _refuse(name, arr, ~np.isfinite(arr) | ((arr < 0) if nonneg else False), problem)
    return arr


def _refuse(name: str, arr, bad, problem: str) -> None:
    """Raise ``problem`` at the first entry of the matrix ``arr`` that is ``bad``, if any."""
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise BadValueError(name, (i, j), arr[i, j], problem)


def _pair(y_true, y_score, sample_weight, nonneg=True):
    t, s = _matrix(y_true, "y_true", nonneg), _matrix(y_score, "y_score", False)
    if t.shape != s.shape:
        raise BadShapeError(f"y_true has shape {t.shape} but y_score has shape {s.shape}", "y_true", "y_score")
    if t.shape[0] == 0:
        raise NoObservationsError("y_true and y_score hold no query: the score needs at least one")
    w = as_weights(sample_weight, t.shape[0]) if sample_weight is not None else None
    return t, s, w


def _cut(k, n_items: int) -> int:
    if k is None:
        return max(n_items, 1)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    return int(k)


def _per_query(t, s, k, *, exp_gain=False, tie_avg=False, log_base=2.0) -> np.ndarray:
    """The kernel's values of every row of the matrices (one query a row)."""
    nq, m = t.shape
    ks = np.array([_cut(k, m)], np.int64)
    out = np.empty((nq, len(PER_K) + 3), np.float64)
    starts = np.arange(nq, dtype=np.int64) * m
    rel, score = t.reshape(-1), np.ascontiguousarray(s).reshape(-1)
    query_values(starts, starts + m, rel, score, np.zeros(0), ks, exp_gain, tie_avg, log_base, out)
    if not np.isfinite(out).all():
        raise ValueError("y_true holds relevances so large that a DCG passes float64's range")
    return out


def _mean(values, w) -> float:
    return float(np.average(values, weights=w)) if w is not None else float(np.mean(values))


def _score(name, y_true, y_score, k, sample_weight, **options) -> float:
    t, s, w = _pair(y_true, y_score, sample_weight)
    return _mean(_per_query(t, s, k, **options)[:, PER_K.index(name)], w)


def dcg_score(y_true, y_score, *, k=None, log_base=2, sample_weight=None, ignore_ties=False) -> float:
    """Mean discounted cumulative gain of the top ``k`` items of each query
    (gain the relevance, discount ``1 / log_base(1 + rank)``), as
    scikit-learn's ``dcg_score``: tied scores share their gains unless
    ``ignore_ties``. With ``ignore_ties`` tied items rank least relevant first
    (scikit-learn's order among ties is unspecified).

    >>> from streammetrics import dcg_score
    >>> round(dcg_score([[3, 2, 0, 1]], [[0.9, 0.8, 0.1, 0.4]], k=2), 6)
    4.26186
    """
    base = float(log_base)
    if not base > 1:
        raise ValueError(f"log_base must be a number above 1, got {log_base!r}")
    return _score("dcg", y_true, y_score, k, sample_weight, tie_avg=not ignore_ties, log_base=base)


def ndcg_score(y_true, y_score, *, k=None, sample_weight=None, ignore_ties=False) -> float:
    """Mean normalised DCG@k: each query's DCG over that of its ideal ranking
    (0 for a query with no relevant item), as scikit-learn's ``ndcg_score``.

    >>> from streammetrics import ndcg_score
    >>> round(ndcg_score([[3, 2, 0, 1]], [[0.9, 0.1, 0.8, 0.4]]), 6)
    0.915893
    >>> round(ndcg_score([[1, 0, 0]], [[0.5, 0.5, 0.1]]), 6)  # the tie shares the gain
    0.815465
    """
    return _score("ndcg", y_true, y_score, k, sample_weight, tie_avg=not ignore_ties)


def mrr_score(y_true, y_score, *, k=None, sample_weight=None) -> float:
    """Mean reciprocal rank of each query's first relevant item (0 past ``k``
    or with none); among tied scores the less relevant item ranks first.

    >>> from streammetrics import mrr_score
    >>> mrr_score([[0, 1, 0], [1, 0, 0]], [[0.9, 0.8, 0.1], [0.9, 0.3, 0.2]])
    0.75
    """
    return _score("mrr", y_true, y_score, k, sample_weight)


def map_at_k(y_true, y_score, k=None, *, sample_weight=None) -> float:
    """Mean average precision at ``k``: per query, the precision at each
    relevant item in the top ``k``, summed and divided by the query's number
    of relevant items (ranx's and trec_eval's ``map@k``).

    >>> from streammetrics import map_at_k
    >>> map_at_k([[1, 0, 1, 0]], [[0.9, 0.8, 0.7, 0.1]], k=3)
    0.8333333333333333
    """
    return _score("map", y_true, y_score, k, sample_weight)


def precision_at_k(y_true, y_score, k=None, *, sample_weight=None) -> float:
    """Mean share of relevant items among each query's top ``k`` (divided by
    ``k`` even where a query has fewer items, as trec_eval).

    >>> from streammetrics import precision_at_k
    >>> precision_at_k([[1, 0, 1, 0]], [[0.9, 0.8, 0.7, 0.1]], k=2)
    0.5
    """
    return _score("precision", y_true, y_score, k, sample_weight)


def recall_at_k(y_true, y_score, k=None, *, sample_weight=None) -> float:
    """Mean share of each query's relevant items found in its top ``k`` (0 for
    a query with none).

    >>> from streammetrics import recall_at_k
    >>> recall_at_k([[1, 0, 1, 0]], [[0.9, 0.8, 0.7, 0.1]], k=2)
    0.5
    """
    return _score("recall", y_true, y_score, k, sample_weight)


def _label_score(column: int, y_true, y_score, sample_weight) -> float:
    """The mean of the kernel's ``column`` (0 LRAP, 1 coverage, 2 ranking loss) over the rows."""
    t, s, w = _pair(y_true, y_score, sample_weight)
    _refuse("y_true", t, (t != 0) & (t != 1), "labels must be 0 or 1")
    out = np.empty((t.shape[0], 3), np.float64)
    label_ranking_rows(t, np.ascontiguousarray(s), out)
    return _mean(out[:, column], w)


def label_ranking_average_precision_score(y_true, y_score, *, sample_weight=None) -> float:
    """Label ranking average precision, as scikit-learn's: per row, the mean
    over its true labels of the share of true labels among those scored at
    least as high; a row with no true label, or only true labels, scores 1.

    >>> from streammetrics import label_ranking_average_precision_score
    >>> round(label_ranking_average_precision_score([[1, 0, 0], [0, 0, 1]], [[0.75, 0.5, 1], [1, 0.2, 0.1]]), 6)
    0.416667
    """
    return _label_score(0, y_true, y_score, sample_weight)


def coverage_error(y_true, y_score, *, sample_weight=None) -> float:
    """Coverage error, as scikit-learn's: per row, how many labels score at
    least as high as its lowest-scored true label (0 with no true label).

    >>> from streammetrics import coverage_error
    >>> coverage_error([[1, 0, 0], [0, 1, 1]], [[1, 0, 0], [0, 1, 1]])
    1.5
    """
    return _label_score(1, y_true, y_score, sample_weight)


def label_ranking_loss(y_true, y_score, *, sample_weight=None) -> float:
    """Label ranking loss, as scikit-learn's: per row, the share of (true,
    false) label pairs where the false label scores at least as high (0 for
    a row with no true or no false label).

    >>> from streammetrics import label_ranking_loss
    >>> label_ranking_loss([[0, 1, 1], [1, 0, 1]], [[0.7, 0.6, 0.3], [0.5, 0.2, 0.3]])
    0.5
    """
    return _label_score(2, y_true, y_score, sample_weight)
