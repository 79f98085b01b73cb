"""The silhouette of a clustering, with bounded memory.

Two forms of the same score:

* :func:`silhouettes` / :func:`silhouette` are the specification's formulas over
  an ``n x n`` dissimilarity matrix ``d`` and an ``n x K`` one-hot membership
  matrix ``m``;
* :func:`silhouette_samples` / :func:`silhouette_score` take the points
  themselves (``n x d`` features, or a precomputed ``n x n`` matrix) and integer
  labels, and never hold an ``n x n`` array: distances are formed one
  ``block x block`` tile at a time per thread and folded straight into
  per-point, per-cluster sums (:mod:`.silhouette_sums`, which also says how
  the working memory is kept under ``memory_budget``).

The two conventions
-------------------
``convention="seed"`` (the default) is the specification's: a point's mean
distance to its own cluster divides by ``|C|`` and includes its zero distance to
itself. ``convention="sklearn"`` divides by ``|C| - 1`` and gives 0 to a point
alone in its cluster, as :func:`sklearn.metrics.silhouette_samples` does.
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

# the blockwise pieces, which streammetrics.dask reads from this module
from .silhouette_sums import Plan, blas_for, chunk_stats, distance_row_sums, from_sums, pair_sums  # noqa: F401

__all__ = [
    "MEMORY_BUDGET",
    "silhouettes",
    "silhouette",
    "silhouette_samples",
    "silhouette_score",
]

# --------------------------------------------------------------------------
# the specification's form


def silhouettes(d, m) -> np.ndarray:
    r"""The silhouette of every point, from distances and a one-hot membership.

    With cluster sizes :math:`|C_k| = \sum_j m_{jk}` and
    :math:`\operatorname{safe}(x) = x + [x = 0]`,

    .. math::

        D_{ik} = \frac{\sum_j d_{ij} m_{jk}}{\operatorname{safe}(|C_k|)}, \quad
        a_i = \sum_k m_{ik} D_{ik}, \quad
        b_i = \min_k \bigl(D_{ik} + 10^{300} m_{ik}\bigr), \quad
        s_i = \frac{b_i - a_i}{\operatorname{safe}(\max(a_i, b_i))} .

    Parameters
    ----------
    d : array-like, shape (n, n)
        Pairwise dissimilarities; any finite values. Read in blocks of rows, so
        a :class:`numpy.memmap` works and no other ``n x n`` array is made.
    m : array-like, shape (n, K)
        One-hot cluster membership: 0/1 values (bool, int or float), exactly one
        1 per row.

    Returns
    -------
    numpy.ndarray, shape (n,)
        :math:`s_i`, in [-1, 1] for non-negative distances.

    Raises
    ------
    ValueError
        On shapes that do not match, a non-finite ``d``, an ``m`` that is not
        one-hot (the first offending row is named), or fewer than two non-empty
        clusters.
    TypeError
        On non-numeric input.

    Notes
    -----
    This is the specification's convention: :math:`a_i` divides by
    :math:`|C|` and includes the point's own (zero) distance, so values read
    higher than scikit-learn's, which divides by :math:`|C| - 1`; see
    :func:`silhouette_samples` with ``convention="sklearn"`` for those. An empty
    column of ``m`` has mean distance 0 by the guard, so it is taken as every
    point's nearest other cluster.

    Examples
    --------
    Four points on a line at 0, 1, 5 and 6, clustered as {0, 1} and {5, 6}:

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
    r"""The mean silhouette :math:`\frac{1}{n} \sum_i s_i` of :func:`silhouettes`.

    Parameters
    ----------
    d : array-like, shape (n, n)
        Pairwise dissimilarities (finite).
    m : array-like, shape (n, K)
        One-hot cluster membership.

    Returns
    -------
    float

    Notes
    -----
    The specification's convention (own-cluster mean over :math:`|C|`, self
    included): compare these scores with each other, not with scikit-learn's.

    Examples
    --------
    >>> d = [[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 1], [6, 5, 1, 0]]
    >>> m = [[1, 0], [1, 0], [0, 1], [0, 1]]
    >>> round(silhouette(d, m), 6)
    0.89899
    """
    return float(np.mean(silhouettes(d, m)))


# --------------------------------------------------------------------------
# the features form


def _check_square(src: Rows) -> None:
    if src.shape[0] != src.shape[1]:
        raise ValueError(
            "with metric='precomputed', X must be a square n x n distance matrix, "
            f"got shape {src.shape}"
        )


def _samples(X, labels, convention, metric, block_size, memory_budget):
    conv = check_convention(convention)
    code = check_metric(metric)
    budget = budget_of(memory_budget)
    block = check_positive_int(block_size, "block_size")
    src = Rows(X, "X", budget)
    n = src.shape[0]
    if code == PRECOMPUTED:
        _check_square(src)
        lab, sizes = cluster_labels(labels, n, "X")
        return distance_silhouettes(src, lab, sizes, conv, block, budget, precomputed=True)
    lab, sizes = cluster_labels(labels, n, "X")
    src.rescale()
    return feature_silhouettes(src, lab, sizes, code, conv, block, budget)


def silhouette_samples(X, labels, *, convention="seed", metric="euclidean", block_size=None,
                       memory_budget=None) -> np.ndarray:
    """The silhouette of every point, from the points, in bounded memory.

    For point ``i`` in cluster ``C``, ``a`` is its mean distance to ``C``, ``b``
    its smallest mean distance to another cluster, and
    ``s = (b - a) / max(a, b)`` (0 when both are 0).

    Parameters
    ----------
    X : array-like, shape (n, d), or (n, n) with ``metric="precomputed"``
        The points. A :class:`numpy.memmap` or any array-like with ``shape``,
        ``dtype`` and row slicing (HDF5, Zarr) that exceeds half the memory
        budget is read in row panels, never whole.
    labels : array-like of int, shape (n,)
        Cluster of each point: any integers (floats holding integers are
        accepted); at least two distinct values.
    convention : {"seed", "sklearn"}, default "seed"
        ``"seed"`` divides a point's summed distance to its own cluster by
        ``|C|``, its own zero distance included (the specification);
        ``"sklearn"`` divides by ``|C| - 1`` and gives 0 to a point alone in its
        cluster, which matches :func:`sklearn.metrics.silhouette_samples`.
    metric : {"euclidean", "sqeuclidean", "manhattan", "cosine", "precomputed"}
        The distance (``"l2"``, ``"l1"`` and ``"cityblock"`` are accepted as
        aliases). With ``"precomputed"`` ``X`` holds the distances: non-negative,
        finite, zero on the diagonal.
    block_size : int, optional
        Side of the distance tiles each thread computes (for ``"precomputed"``:
        rows per panel). By default the largest tile up to 256 whose per-thread
        buffers fit in a quarter of the memory budget, and small enough to give
        every thread four blocks of rows. The result does not depend on it
        beyond rounding.
    memory_budget : int, optional
        Bytes of working memory beyond the input; default
        :data:`MEMORY_BUDGET` (64 MiB).

    Returns
    -------
    numpy.ndarray of float64, shape (n,)

    Raises
    ------
    ValueError
        On fewer than two clusters, NaN or infinity in ``X`` (the first one is
        named by row and column), mismatched lengths, a non-square or invalid
        precomputed matrix, an unknown ``convention`` or ``metric``, or a
        ``block_size`` below 1.
    TypeError
        On non-numeric ``X`` or ``labels``.

    Notes
    -----
    Where the default differs from scikit-learn: scikit-learn's ``a`` divides
    by ``|C| - 1`` and leaves out the point itself, and sets the silhouette of a
    singleton to 0. The seed convention's ``a`` is smaller by the factor
    ``(|C| - 1) / |C|``, so its silhouettes are higher (much higher for small
    clusters; a singleton scores 1). Pass ``convention="sklearn"`` to
    reproduce scikit-learn's numbers (to about 1e-12).

    The distances are summed from the coordinate differences, feature by
    feature, in tiles of ``block_size`` points on a side: never an ``n x n``
    array.

    Examples
    --------
    Points at 0, 1, 5 and 6 in two clusters:

    >>> X = [[0.0], [1.0], [5.0], [6.0]]
    >>> labels = [7, 7, 3, 3]
    >>> silhouette_samples(X, labels).round(6)
    array([0.909091, 0.888889, 0.888889, 0.909091])
    >>> silhouette_samples(X, labels, convention="sklearn").round(6)
    array([0.818182, 0.777778, 0.777778, 0.818182])
    """
    return _samples(X, labels, convention, metric, block_size, memory_budget)


def _random_permutation(random_state, n: int) -> np.ndarray:
    """``permutation(n)`` drawn as scikit-learn's ``check_random_state`` would."""
    if random_state is None:
        return np.random.permutation(n)  # numpy's global random state
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        return np.random.RandomState(random_state).permutation(n)
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state.permutation(n)
    raise ValueError(
        "random_state must be None, an int, a numpy RandomState or Generator, "
        f"got {random_state!r}"
    )


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
        rows = src.take(idx[s0:s0 + step])
        sub[s0:s0 + step] = rows[:, idx] if precomputed else rows
    return sub, lab[idx]


def silhouette_score(X, labels, *, convention="seed", metric="euclidean", block_size=None,
                     sample_size=None, random_state=None, memory_budget=None) -> float:
    """The mean silhouette of a clustering, from the points, in bounded memory.

    The mean of :func:`silhouette_samples` (see there for ``X``, ``labels``,
    ``convention``, ``metric``, ``block_size`` and ``memory_budget``).

    Parameters
    ----------
    sample_size : int, optional
        Score a random subset of this many points (drawn as scikit-learn draws
        it, so the same ``random_state`` picks the same points); the subset is
        held in memory.
    random_state : None, int, numpy.random.RandomState or Generator
        Seeds the subset; ``None`` uses numpy's global random state.

    Returns
    -------
    float

    Notes
    -----
    With the default ``convention="seed"`` the score is the specification's and
    is higher than scikit-learn's, most visibly for small clusters; use
    ``convention="sklearn"`` to match :func:`sklearn.metrics.silhouette_score`.

    Examples
    --------
    >>> X = [[0.0], [1.0], [5.0], [6.0]]
    >>> round(silhouette_score(X, [0, 0, 1, 1]), 6)
    0.89899
    >>> round(silhouette_score(X, [0, 0, 1, 1], convention="sklearn"), 6)
    0.79798
    """
    check_convention(convention)
    code = check_metric(metric)
    if sample_size is not None:
        sample_size = check_positive_int(sample_size, "sample_size")
        X, labels = _subsample(X, labels, sample_size, random_state, code == PRECOMPUTED, budget_of(memory_budget))
    s = _samples(X, labels, convention, metric, block_size, memory_budget)
    return float(np.mean(s))
