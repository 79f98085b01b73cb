"""The silhouette of a clustering, with bounded memory.

:func:`silhouettes` / :func:`silhouette` are the specification's formulas over
an ``n x n`` dissimilarity matrix and a one-hot membership; :func:`silhouette_samples`
/ :func:`silhouette_score` take the points (or a precomputed matrix) and labels,
and never hold an ``n x n`` array (:mod:`.silhouette_sums`).

``convention="seed"`` (the default) is the specification's: a point's mean
distance to its own cluster divides by ``|C|`` and includes its zero distance
to itself. ``convention="sklearn"`` divides by ``|C| - 1`` and gives 0 to a
point alone in its cluster, as :func:`sklearn.metrics.silhouette_samples`.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._protocol.errors import BadShapeError
from .._protocol.validation import as_1d
from .silhouette_sums import (
    MEMORY_BUDGET,
    PRECOMPUTED,
    SEED,
    Rows,
    budget_of,
    check_convention,
    check_metric,
    check_positive_int,
    cluster_labels,
    distance_silhouettes,
    feature_silhouettes,
    membership_labels,
    rows_per_panel,
)

__all__ = ["MEMORY_BUDGET", "silhouettes", "silhouette", "silhouette_samples", "silhouette_score"]


def silhouettes(d, m) -> np.ndarray:
    """The silhouette of every point (the specification's ``silhouettes``) from an
    ``n x n`` matrix ``d`` of finite dissimilarities, read in panels of rows,
    and an ``n x K`` one-hot membership ``m``; at least two non-empty clusters.

    >>> d = [[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 1], [6, 5, 1, 0]]
    >>> m = [[1, 0], [1, 0], [0, 1], [0, 1]]
    >>> silhouettes(d, m).round(6)
    array([0.909091, 0.888889, 0.888889, 0.909091])
    """
    src = Rows(d, "d", MEMORY_BUDGET)
    n, n2 = src.shape
    if n != n2:
        raise BadShapeError(f"d must be a square n x n matrix, got shape {src.shape}", "d")
    lab, sizes = membership_labels(m, n)
    return distance_silhouettes(src, lab, sizes, SEED, None, MEMORY_BUDGET, precomputed=False)


def silhouette(d, m) -> float:
    """The mean of :func:`silhouettes` (the specification's ``silhouette``).

    >>> d = [[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 1], [6, 5, 1, 0]]
    >>> round(silhouette(d, [[1, 0], [1, 0], [0, 1], [0, 1]]), 6)
    0.89899
    """
    return float(np.mean(silhouettes(d, m)))


def _check_square(src: Rows) -> None:
    if src.shape[0] != src.shape[1]:
        raise ValueError(f"with metric='precomputed', X must be a square n x n distance matrix, got shape {src.shape}")


def silhouette_samples(
    X, labels, *, convention="seed", metric="euclidean", block_size=None, memory_budget=None
) -> np.ndarray:
    """The silhouette of every point, from the points, in bounded memory.

    ``X`` is ``n x d`` (or ``n x n`` non-negative distances with a zero diagonal
    for ``metric="precomputed"``); a memmap or any array-like with ``shape``,
    ``dtype`` and row slicing (HDF5, Zarr) larger than half the memory budget is
    read in panels of rows. ``labels`` are integers, at least two distinct.
    ``metric`` is "euclidean" ("l2"), "sqeuclidean", "manhattan" ("l1",
    "cityblock"), "cosine" or "precomputed". ``block_size`` is the side of the
    distance tiles (rows per panel for "precomputed"; by default at most 256 and
    within a quarter of the budget); it changes the result by rounding only.
    ``memory_budget`` bounds the working memory beyond the input, in bytes
    (default :data:`MEMORY_BUDGET`, 64 MiB). The default ``convention="seed"``
    gives higher values than scikit-learn (``a`` is smaller by ``(|C| - 1) /
    |C|``; a singleton scores 1); ``"sklearn"`` matches it to about 1e-12.

    >>> X = [[0.0], [1.0], [5.0], [6.0]]
    >>> silhouette_samples(X, [7, 7, 3, 3]).round(6)
    array([0.909091, 0.888889, 0.888889, 0.909091])
    >>> silhouette_samples(X, [7, 7, 3, 3], convention="sklearn").round(6)
    array([0.818182, 0.777778, 0.777778, 0.818182])
    """
    conv = check_convention(convention)
    code = check_metric(metric)
    budget = budget_of(memory_budget)
    block = check_positive_int(block_size, "block_size")
    src = Rows(X, "X", budget)
    if code == PRECOMPUTED:
        _check_square(src)
    lab, sizes = cluster_labels(labels, src.shape[0], "X")
    if code == PRECOMPUTED:
        return distance_silhouettes(src, lab, sizes, conv, block, budget, precomputed=True)
    src.rescale()
    return feature_silhouettes(src, lab, sizes, code, conv, block, budget)


def _random_permutation(random_state, n: int) -> np.ndarray:
    """``permutation(n)`` drawn as scikit-learn's ``check_random_state`` would."""
    if random_state is None:
        return np.random.permutation(n)  # numpy's global random state
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        return np.random.RandomState(random_state).permutation(n)
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state.permutation(n)
    raise ValueError(f"random_state must be None, an int, a numpy RandomState or Generator, got {random_state!r}")


def _subsample(X, labels, sample_size: int, random_state, precomputed: bool, budget: int):
    """A random subset of ``sample_size`` points (rows; rows and columns of a
    precomputed matrix), read in panels."""
    src = Rows(X, "X", budget)
    n = src.shape[0]
    if precomputed:
        _check_square(src)
    if sample_size > n:
        raise ValueError(f"sample_size must be at most the number of points ({n}), got {sample_size}")
    idx = np.sort(_random_permutation(random_state, n)[:sample_size])
    lab = as_1d(labels, "labels")
    if lab.shape[0] != n:
        raise BadShapeError(f"X has {n} rows but labels has {lab.shape[0]} entries", "X", "labels")
    if src.whole is not None:
        sub = src.whole[idx]
        return (sub[:, idx] if precomputed else sub), lab[idx]
    width = sample_size if precomputed else src.shape[1]
    sub = np.empty((sample_size, width))
    step = rows_per_panel(budget // 4, 8 * src.shape[1], 1)
    for s0 in range(0, sample_size, step):
        rows = src.take(idx[s0 : s0 + step])
        sub[s0 : s0 + step] = rows[:, idx] if precomputed else rows
    return sub, lab[idx]


def silhouette_score(
    X,
    labels,
    *,
    convention="seed",
    metric="euclidean",
    block_size=None,
    sample_size=None,
    random_state=None,
    memory_budget=None,
) -> float:
    """The mean of :func:`silhouette_samples` (see there for the arguments).

    ``sample_size`` scores a random subset of that many points, held in memory
    and drawn as scikit-learn draws it (the same ``random_state``, None, an int,
    a ``RandomState`` or a ``Generator``, picks the same points).

    >>> X = [[0.0], [1.0], [5.0], [6.0]]
    >>> round(silhouette_score(X, [0, 0, 1, 1]), 6), round(silhouette_score(X, [0, 0, 1, 1], convention="sklearn"), 6)
    (0.89899, 0.79798)
    """
    code = check_metric(metric)
    if sample_size is not None:
        sample_size = check_positive_int(sample_size, "sample_size")
        X, labels = _subsample(X, labels, sample_size, random_state, code == PRECOMPUTED, budget_of(memory_budget))
    s = silhouette_samples(
        X, labels, convention=convention, metric=metric, block_size=block_size, memory_budget=memory_budget
    )
    return float(np.mean(s))
