"""The silhouette of a clustering, with bounded memory.

Two forms of the same score:

* :func:`silhouettes` / :func:`silhouette` are the specification's formulas over
  an ``n x n`` dissimilarity matrix ``d`` and an ``n x K`` one-hot membership
  matrix ``m``;
* :func:`silhouette_samples` / :func:`silhouette_score` take the points
  themselves (``n x d`` features, or a precomputed ``n x n`` matrix) and integer
  labels, and never hold an ``n x n`` array: distances are formed one
  ``block x block`` tile at a time per thread (see
  :mod:`streammetrics._kernels.silhouette`) and folded straight into per-point,
  per-cluster sums. When the points are in memory, each distance is computed
  once and counted for both of its points.

Memory
------
Working memory beyond the input is kept under a budget, :data:`MEMORY_BUDGET`
(64 MiB) unless ``memory_budget`` says otherwise. A quarter of it goes to the
per-thread tiles (``threads * block * (block + d)`` float64 values; this is what
picks ``block_size`` when it is not given), an eighth to the per-cluster sums of
the rows in flight (``rows * K`` values), and half to the row panels read from
the input when it is not already an in-memory float64 array (a
:class:`numpy.memmap`, an HDF5 or Zarr dataset, another dtype). Such inputs are
read panel by panel, as many times as there are row panels, and never converted
whole. Beyond the budget there are a few length-``n`` vectors (labels, norms, the
result).

The two conventions
-------------------
``convention="seed"`` (the default) is the specification's: a point's mean
distance to its own cluster divides by ``|C|`` and includes its zero distance to
itself. ``convention="sklearn"`` divides by ``|C| - 1`` and gives 0 to a point
alone in its cluster, as :func:`sklearn.metrics.silhouette_samples` does.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import threading
import warnings

import numba
import numpy as np

from .._kernels.silhouette import (
    COSINE,
    EUCLIDEAN,
    MANHATTAN,
    SEED,
    SKLEARN,
    SQEUCLIDEAN,
    distance_sums,
    rows_sq_norms,
    silhouette_from_sums,
    sum_drivers,
    tile_buffers,
)
from .._protocol.errors import BadShapeError, BadValueError
from .._protocol.validation import as_1d, to_numpy

__all__ = [
    "MEMORY_BUDGET",
    "silhouettes",
    "silhouette",
    "silhouette_samples",
    "silhouette_score",
]

#: Default bound, in bytes, on the working memory beyond the input (64 MiB).
MEMORY_BUDGET = 64 * 2**20

#: Tiles are at most this many rows (and columns) on a side: 256 x 256 float64
#: (512 KiB) stays in a core's L2 cache while it is turned into distances.
_MAX_BLOCK = 256

_PRECOMPUTED = -1
_METRICS = {
    "euclidean": EUCLIDEAN,
    "sqeuclidean": SQEUCLIDEAN,
    "manhattan": MANHATTAN,
    "cosine": COSINE,
    "precomputed": _PRECOMPUTED,
}
_ALIASES = {"l2": "euclidean", "l1": "manhattan", "cityblock": "manhattan"}
_CONVENTIONS = {"seed": SEED, "sklearn": SKLEARN}

#: Tolerance on the diagonal of a precomputed distance matrix (scikit-learn's).
_DIAGONAL_TOL = 100 * np.finfo(np.float64).eps

#: parallel kernels may not be launched from two threads of one process at once
#: under every Numba threading layer (workqueue forbids it, aborting the
#: process); each uses every core anyway, so calls from several threads take turns
PARALLEL_LOCK = threading.Lock()


def _turn(dual, kernel):
    """The lock to hold while ``kernel`` (a twin of ``dual``) runs: the parallel
    twin's turn, or nothing for the serial one."""
    return PARALLEL_LOCK if kernel is dual.parallel else contextlib.nullcontext()


def _buffers(dual, kernel, blas: bool, block: int, d: int):
    """The per-thread tile buffers for ``kernel``, a twin of ``dual``: one
    thread's for the serial twin, every thread's for the parallel one."""
    threads = numba.get_num_threads() if kernel is dual.parallel else 1
    return tile_buffers(blas, threads, block, d)


def _diagonal_tolerance(dtype) -> float:
    """How far from 0 a precomputed matrix's diagonal may be: 100 ulps of 1 in
    its own float type (a float32 matrix rounds at 1e-7, as scikit-learn allows)."""
    dtype = np.dtype(dtype)
    return 100 * float(np.finfo(dtype).eps) if dtype.kind == "f" else _DIAGONAL_TOL

#: Which tiles to use: None picks (see :func:`_use_blas`), True forces BLAS
#: (when available), False the exact differences.
_USE_BLAS = None

#: Measured on an AMD EPYC (Zen 4) with OpenBLAS: the BLAS tiles are level with
#: the direct ones at d = 16, 1.3x faster at d = 32, 1.5x at 64 and 1.7x at 128.
_BLAS_MIN_FEATURES = 32

#: The BLAS path recomputes the squared distances that cancel (see
#: :data:`streammetrics._kernels.silhouette.EXACT_BELOW`); when the spread of
#: the points is below this fraction of their mean squared norm (data far from
#: the origin), most would be, and the direct path is faster.
_BLAS_MIN_SPREAD = 0.05


# --------------------------------------------------------------------------
# arguments


def _check_convention(convention) -> int:
    if isinstance(convention, str) and convention in _CONVENTIONS:
        return _CONVENTIONS[convention]
    raise ValueError(f"convention must be 'seed' or 'sklearn', got {convention!r}")


def _check_metric(metric) -> int:
    if isinstance(metric, str):
        key = _ALIASES.get(metric, metric)
        if key in _METRICS:
            return _METRICS[key]
    valid = ", ".join(repr(m) for m in _METRICS)
    aliases = ", ".join(f"{a!r} for {m!r}" for a, m in _ALIASES.items())
    raise ValueError(f"metric must be one of {valid} (or {aliases}), got {metric!r}")


def _check_positive_int(value, name: str, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _budget(memory_budget) -> int:
    if memory_budget is None:
        return MEMORY_BUDGET
    return _check_positive_int(memory_budget, "memory_budget", allow_none=False)


def _bad_entry(name: str, i: int, j: int, value, problem: str) -> BadValueError:
    """``X[3, 1] = nan: values must be finite``: a bad entry of a matrix."""
    return BadValueError(name, (i, j), value, problem)


def _as_array(x, name: str) -> np.ndarray:
    """An in-memory array-like as a plain numpy array (no copy when possible)."""
    return np.asarray(to_numpy(x, name, "a 2-D array"))  # np.matrix & co as ndarray


def _check_numeric(dtype: np.dtype, name: str) -> None:
    if dtype.kind not in "biuf":
        if dtype.kind == "c":
            raise TypeError(f"{name} must be real, got complex dtype {dtype}")
        raise TypeError(f"{name} must hold numbers, got dtype {dtype}")


class _Rows:
    """Row panels of a 2-D input, as float64 C-contiguous arrays.

    An in-memory float64 C-contiguous array is used as it is (``whole``); a small
    input of another kind is converted once. Anything else (a memmap larger than
    half the budget, an HDF5/Zarr dataset, a large array of another dtype) is
    read and converted one panel of rows at a time, never whole.
    """

    def __init__(self, X, name: str, budget: int):
        self.name = name
        lazy = isinstance(X, np.memmap) or (
            not isinstance(X, np.ndarray)
            and hasattr(X, "shape")
            and hasattr(X, "dtype")
            and hasattr(X, "__getitem__")
        )
        if not lazy:
            X = _as_array(X, name)
        shape = tuple(X.shape)
        if len(shape) != 2:
            raise BadShapeError(f"{name} must be a 2-D array, got shape {shape}", name)
        self.shape = shape
        n, d = shape
        if n == 0:
            raise BadShapeError(f"{name} is empty: it has no rows", name)
        if d == 0:
            raise BadShapeError(f"{name} has no columns", name)
        self._X = X
        dtype = X.dtype if isinstance(X, np.ndarray) else self._raw(0, 1).dtype
        _check_numeric(np.dtype(dtype), name)
        #: the dtype the values came in (a float32 matrix rounds as float32)
        self.dtype = np.dtype(dtype)
        self.whole = None
        if isinstance(X, np.ndarray) and not lazy and X.dtype == np.float64 and X.flags.c_contiguous:
            self.whole = X
        elif n * d * 8 <= budget // 2:
            self.whole = self.read(0, n)

    def _raw(self, i0: int, i1: int) -> np.ndarray:
        block = self._X[i0:i1]
        if getattr(block, "requires_grad", False) and hasattr(block, "detach"):
            block = block.detach()
        block = np.asarray(block)
        _check_numeric(block.dtype, self.name)
        return block

    def rescale(self) -> None:
        """Scale coordinates held whole by a power of two (exactly) when their
        squares would overflow or underflow float64 (|x| beyond about 1e120 or
        below 1e-120): every silhouette is the same for any scale of the points,
        and the squared norms and distance sums then stay finite and nonzero."""
        if self.whole is None or self.whole.size == 0:
            return
        top = max(abs(float(self.whole.max())), abs(float(self.whole.min())))
        if top == 0.0 or _SCALE_LOW <= top <= _SCALE_HIGH:
            return
        self.whole = np.ldexp(self.whole, -math.frexp(top)[1])

    def read(self, i0: int, i1: int) -> np.ndarray:
        """Rows ``i0:i1`` as a float64 C-contiguous array."""
        if self.whole is not None:
            return self.whole[i0:i1]
        # a copy, even of a float64 memmap: the panel is then ordinary writable
        # memory, which keeps the kernels to one compiled specialization
        return np.array(self._raw(i0, i1), dtype=np.float64, order="C", copy=True)


def _cluster_labels(labels, n: int, rows_of: str):
    """Labels mapped to ``0..K-1`` (int64) and the cluster sizes."""
    arr = as_1d(labels, "labels")
    if arr.shape[0] != n:
        raise BadShapeError(f"{rows_of} has {n} rows but labels has {arr.shape[0]} entries", rows_of, "labels")
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            raise BadValueError("labels", int(bad[0]), arr[int(bad[0])], "labels must be integers")
    uniques, inverse = np.unique(arr, return_inverse=True)
    if uniques.size < 2:
        raise ValueError(
            "the silhouette needs at least two non-empty clusters, but every label "
            f"is {uniques[0].item()!r}"
        )
    lab = np.ascontiguousarray(inverse.reshape(-1), dtype=np.int64)
    sizes = np.bincount(lab, minlength=uniques.size).astype(np.int64)
    return lab, sizes


# --------------------------------------------------------------------------
# BLAS: available, and single-threaded while the kernels call it


@functools.lru_cache(maxsize=None)
def _blas_controller():
    """A threadpoolctl controller over the loaded BLAS libraries, or None when
    SciPy (whose BLAS Numba's ``np.dot`` calls) or threadpoolctl is missing."""
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (loads the BLAS Numba calls)
        import threadpoolctl
    except ImportError:
        return None
    with warnings.catch_warnings():
        # threadpoolctl warns about the mix of OpenMP runtimes it finds loaded:
        # a remark on the environment, not on this call
        warnings.simplefilter("ignore", RuntimeWarning)
        return threadpoolctl.ThreadpoolController()


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter = None


@contextlib.contextmanager
def _single_threaded_blas():
    """Keep BLAS on one thread while any caller is inside: each kernel thread
    runs its own products, and BLAS threads on top of them would compete."""
    global _blas_users, _blas_limiter
    with _blas_lock:
        if _blas_users == 0:
            _blas_limiter = _blas_controller().limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


# --------------------------------------------------------------------------
# sizes


def _auto_block(n: int, d: int, threads: int, budget: int) -> int:
    """The tile side: at most :data:`_MAX_BLOCK`, halved until the tiles of all
    threads fit in a quarter of the budget, and small enough that there are
    four blocks of rows per thread to share out."""
    b = _MAX_BLOCK
    while b > 8 and threads * b * (b + d) * 8 > budget // 4:
        b //= 2
    return max(1, min(b, -(-n // (4 * threads))))


def _use_blas(metric: int, d: int, sq: np.ndarray, mean: np.ndarray) -> bool:
    """Whether to form the tiles with BLAS: only for the metrics built on dot
    products, when SciPy and threadpoolctl are there, and (unless forced by
    :data:`_USE_BLAS`) where it measured faster: enough features, and for the
    Euclidean metrics, points not crowded far from the origin."""
    if metric == MANHATTAN or _USE_BLAS is False or _blas_controller() is None:
        return False
    if _USE_BLAS:
        return True
    if d < _BLAS_MIN_FEATURES:
        return False
    if metric == COSINE:
        return True
    mean_sq = float(np.mean(sq))
    spread = mean_sq - float(mean @ mean)  # total variance of the coordinates
    return spread > _BLAS_MIN_SPREAD * mean_sq


def _rows_per_panel(limit_bytes: int, row_bytes: int, multiple: int) -> int:
    """Rows that fit in ``limit_bytes``, as a positive multiple of ``multiple``."""
    rows = max(1, limit_bytes // max(1, row_bytes))
    return max(multiple, rows // multiple * multiple)


# --------------------------------------------------------------------------
# the two engines


def _aux_of(sq: np.ndarray, metric: int) -> np.ndarray:
    """What the feature kernels read per point: the squared norm, or for cosine
    the inverse norm (0 for a zero vector)."""
    if metric != COSINE:
        return sq
    aux = np.zeros_like(sq)
    nonzero = sq > 0
    aux[nonzero] = 1.0 / np.sqrt(sq[nonzero])
    return aux


def _feature_silhouettes(src: _Rows, lab, sizes, metric: int, convention: int, block, budget: int):
    n, d = src.shape
    K = sizes.shape[0]
    threads = numba.get_num_threads()
    # a tile larger than the data would only allocate (n x n at the most)
    b = min(block, n) if block is not None else _auto_block(n, d, threads, budget)
    rows = _rows_per_panel(budget // 8, 8 * K, b)
    if src.whole is None:
        rows = min(rows, _rows_per_panel(budget // 4, 8 * d, b))

    # one pass: finiteness, squared norms, column sums
    sq = np.empty(n)
    column_sums = np.zeros(d)
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        XI = src.read(i0, i1)
        k = rows_sq_norms(XI, sq[i0:i1])
        if k >= 0:
            i, j = divmod(k, d)
            raise _bad_entry(src.name, i0 + i, j, XI[i, j], "values must be finite")
        column_sums += XI.sum(axis=0)
    aux = _aux_of(sq, metric)

    use_blas = _use_blas(metric, d, sq, column_sums / n)
    out = np.empty(n)
    with _single_threaded_blas() if use_blas else contextlib.nullcontext():
        if src.whole is not None and rows >= n:
            # everything in memory: compute each distance once, for both points
            sums = np.zeros((n, K))
            both = sum_drivers(use_blas, metric)[1]
            kernel = both.pick(n * n * d / 2)
            tiles, scratch = _buffers(both, kernel, use_blas, b, d)
            with _turn(both, kernel):
                kernel(src.whole, aux, lab, b, tiles, scratch, sums)
            silhouette_from_sums(sums, lab, sizes, convention, out)
            return out
        dual = sum_drivers(use_blas, metric)[0]
        sums_of = dual.pick(n * n * d)
        turn = _turn(dual, sums_of)
        tiles, scratch = _buffers(dual, sums_of, use_blas, b, d)
        for i0 in range(0, n, rows):
            i1 = min(i0 + rows, n)
            XI = src.read(i0, i1)
            sums = np.zeros((i1 - i0, K))
            if src.whole is not None:
                with turn:
                    sums_of(XI, src.whole, i0, aux[i0:i1], aux, lab, b, tiles, scratch, sums)
            else:
                for j0 in range(0, n, rows):
                    j1 = min(j0 + rows, n)
                    XJ = XI if j0 == i0 else src.read(j0, j1)
                    with turn:
                        sums_of(XI, XJ, i0 - j0, aux[i0:i1], aux[j0:j1], lab[j0:j1], b, tiles, scratch,
                                sums)
            silhouette_from_sums(sums, lab[i0:i1], sizes, convention, out[i0:i1])
    return out


def _distance_silhouettes(src: _Rows, lab, sizes, convention: int, block, budget: int,
                          precomputed: bool):
    """Silhouettes from the rows of an ``n x n`` dissimilarity matrix.

    ``precomputed`` (``metric="precomputed"``) asks for non-negative entries and
    a zero diagonal; otherwise (the specification's ``silhouettes``) any finite
    dissimilarity is accepted.
    """
    n = src.shape[0]
    K = sizes.shape[0]
    if block is not None:
        rows = min(block, n)
    else:
        rows = _rows_per_panel(budget // 8, 8 * K, 1)
        if src.whole is None:
            rows = min(rows, _rows_per_panel(budget // 2, 8 * n, 1))
    lowest = 0.0 if precomputed else -np.inf
    diag_tol = _diagonal_tolerance(src.dtype) if precomputed else -1.0
    out = np.empty(n)
    sums_of = distance_sums.pick(n * n)
    turn = _turn(distance_sums, sums_of)
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        DI = src.read(i0, i1)
        sums = np.zeros((i1 - i0, K))
        bad = np.zeros(i1 - i0, dtype=np.uint8)
        with turn:
            sums_of(DI, i0, lab, lowest, diag_tol, sums, bad)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _locate_bad_distance(src.name, DI[i], i0 + i, precomputed, diag_tol)
        silhouette_from_sums(sums, lab[i0:i1], sizes, convention, out[i0:i1])
    return out


def _locate_bad_distance(name: str, row: np.ndarray, i: int, precomputed: bool,
                         diag_tol: float = _DIAGONAL_TOL) -> ValueError:
    with np.errstate(invalid="ignore"):
        nonfinite = ~np.isfinite(row)
        negative = (row < 0) if precomputed else np.zeros(row.shape, dtype=bool)
    offdiag = np.zeros(row.shape, dtype=bool)
    if precomputed and not abs(row[i]) <= diag_tol:
        offdiag[i] = True
    j = int(np.flatnonzero(nonfinite | negative | offdiag)[0])
    if nonfinite[j]:
        problem = "distances must be finite"
    elif negative[j]:
        problem = "distances must be non-negative"
    else:
        problem = "a point's distance to itself must be 0 (the diagonal must be zero)"
    return _bad_entry(name, i, j, row[j], problem)


# --------------------------------------------------------------------------
# the specification's form


def _membership_labels(m, n: int):
    """Cluster index of every row of a one-hot membership matrix, and sizes."""
    arr = _as_array(m, "m")
    _check_numeric(arr.dtype, "m")
    if arr.ndim != 2:
        raise BadShapeError(f"m must be a 2-D one-hot membership matrix (n x K), got shape {arr.shape}", "m")
    if arr.shape[0] != n:
        raise BadShapeError(f"d has {n} rows but m has {arr.shape[0]}", "d", "m")
    if arr.shape[1] == 0:
        raise BadShapeError("m has no columns (no clusters)", "m")
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(((arr != 0) & (arr != 1)).ravel())
    if bad.size:
        i, k = divmod(int(bad[0]), arr.shape[1])
        raise _bad_entry("m", i, k, arr[i, k], "membership must be 0 or 1")
    ones = np.count_nonzero(arr, axis=1)
    bad = np.flatnonzero(ones != 1)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"m[{i}] holds {int(ones[i])} ones: each row of m must be one-hot "
            "(exactly one 1)"
        )
    lab = np.ascontiguousarray(np.argmax(arr, axis=1), dtype=np.int64)
    sizes = np.bincount(lab, minlength=arr.shape[1]).astype(np.int64)
    nonempty = np.flatnonzero(sizes)
    if nonempty.size < 2:
        raise ValueError(
            "the silhouette needs at least two non-empty clusters, but only column "
            f"{int(nonempty[0])} of m has members"
        )
    return lab, sizes


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
    src = _Rows(d, "d", MEMORY_BUDGET)
    n, n2 = src.shape
    if n != n2:
        raise BadShapeError(f"d must be a square n x n matrix, got shape {src.shape}", "d")
    lab, sizes = _membership_labels(m, n)
    return _distance_silhouettes(src, lab, sizes, SEED, None, MEMORY_BUDGET, precomputed=False)


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


def _check_square(src: _Rows) -> None:
    if src.shape[0] != src.shape[1]:
        raise ValueError(
            "with metric='precomputed', X must be a square n x n distance matrix, "
            f"got shape {src.shape}"
        )


#: coordinates whose largest magnitude lies outside these are rescaled (exactly)
_SCALE_HIGH = 2.0**400
_SCALE_LOW = 2.0**-400


def _samples(X, labels, convention, metric, block_size, memory_budget):
    conv = _check_convention(convention)
    code = _check_metric(metric)
    budget = _budget(memory_budget)
    block = _check_positive_int(block_size, "block_size")
    src = _Rows(X, "X", budget)
    n, d = src.shape
    if code == _PRECOMPUTED:
        _check_square(src)
        lab, sizes = _cluster_labels(labels, n, "X")
        return _distance_silhouettes(src, lab, sizes, conv, block, budget, precomputed=True)
    lab, sizes = _cluster_labels(labels, n, "X")
    src.rescale()
    return _feature_silhouettes(src, lab, sizes, code, conv, block, budget)


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

    With 32 features or more, Euclidean and cosine tiles use a BLAS matrix
    product when SciPy and threadpoolctl are installed (BLAS is held to one
    thread while the kernels run, each thread doing its own products); a
    squared distance that loses too many digits to cancellation is recomputed
    from the differences. Otherwise the distances are summed from the
    coordinate differences.

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
        rng = np.random.mtrand._rand
    elif isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, bool):
        rng = np.random.RandomState(random_state)
    elif isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        rng = random_state
    else:
        raise ValueError(
            "random_state must be None, an int, a numpy RandomState or Generator, "
            f"got {random_state!r}"
        )
    return rng.permutation(n)


def _subsample(X, labels, sample_size: int, random_state, precomputed: bool, budget: int):
    """A random subset of ``sample_size`` points (rows; rows and columns of a
    precomputed matrix), read in panels."""
    src = _Rows(X, "X", budget)
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
    step = _rows_per_panel(budget // 4, 8 * src.shape[1], 1)
    for s0 in range(0, sample_size, step):
        rows = np.asarray(src._X[idx[s0:s0 + step]])
        _check_numeric(rows.dtype, "X")
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
    _check_convention(convention)
    code = _check_metric(metric)
    if sample_size is not None:
        sample_size = _check_positive_int(sample_size, "sample_size")
        X, labels = _subsample(X, labels, sample_size, random_state,
                               code == _PRECOMPUTED, _budget(memory_budget))
    s = _samples(X, labels, convention, metric, block_size, memory_budget)
    return float(np.mean(s))


# ------------------------------------------------------------------------------
# blockwise pieces, for engines that hold the rows in chunks (streammetrics.dask)
#
# The silhouette of rows held in chunks is a sum over pairs of chunks: chunk i's
# per-cluster distance sums are the sums of its pieces against every chunk j,
# and its silhouettes follow from them. An engine schedules these pieces; the
# numerics stay here.


#: the metric code of a precomputed dissimilarity matrix
PRECOMPUTED = _PRECOMPUTED


class Plan:
    """Checked settings of a blockwise silhouette: ``convention``, ``metric`` and
    ``block_size`` codes, as :func:`silhouette_samples` takes them."""

    __slots__ = ("convention", "metric", "block_size")

    def __init__(self, convention="seed", metric="euclidean", block_size=None):
        self.convention = _check_convention(convention)
        self.metric = _check_metric(metric)
        self.block_size = _check_positive_int(block_size, "block_size")

    @property
    def precomputed(self) -> bool:
        return self.metric == _PRECOMPUTED

    def block_for(self, rows: int, d: int) -> int:
        """The tile size for chunks of at most ``rows`` rows of ``d`` features."""
        if self.block_size is not None:
            return min(self.block_size, rows)
        return _auto_block(rows, d, numba.get_num_threads(), _budget(None))


def cluster_labels(labels, n: int, rows_of: str = "X"):
    """``(codes, sizes)``: the labels of ``n`` rows as cluster codes 0..K-1, and the sizes."""
    return _cluster_labels(labels, n, rows_of)


def chunk_stats(XI, offset: int, metric: int):
    """``(aux, sq_sum, column_sums, rows)`` of one chunk of points starting at row ``offset``.

    ``aux`` are the squared norms (inverse norms for cosine) the pair sums
    read; NaN or infinity raises ``BadValueError`` naming its row and column.
    """
    XI = np.ascontiguousarray(XI, dtype=np.float64)
    sq = np.empty(XI.shape[0])
    k = rows_sq_norms(XI, sq)
    if k >= 0:
        i, j = divmod(k, XI.shape[1])
        raise _bad_entry("X", offset + i, j, XI[i, j], "values must be finite")
    return _aux_of(sq, metric), sq.sum(), XI.sum(axis=0), XI.shape[0]


def blas_for(metric: int, d: int, stats) -> bool:
    """Whether the pair sums use BLAS tiles, from every chunk's :func:`chunk_stats`."""
    n = sum(st[3] for st in stats)
    sq_sum = sum(st[1] for st in stats)
    col = np.sum([st[2] for st in stats], axis=0)
    # the choice reads only the mean of the squared norms and the mean point
    return _use_blas(metric, d, np.array([sq_sum / n]), col / n)


def pair_sums(XI, XJ, shift: int, aux_i, aux_j, labels_j, metric: int, block: int, k: int,
              use_blas: bool) -> np.ndarray:
    """``(rows of XI, k)`` sums of the distances of XI's points to each cluster's points in XJ.

    ``shift`` is XI's first row minus XJ's (it finds the diagonal).
    """
    XI = np.ascontiguousarray(XI, dtype=np.float64)
    XJ = np.ascontiguousarray(XJ, dtype=np.float64)
    sums = np.zeros((XI.shape[0], k))
    dual = sum_drivers(use_blas, metric)[0]
    kernel = dual.pick(XI.shape[0] * XJ.shape[0] * XI.shape[1])
    tiles, scratch = _buffers(dual, kernel, use_blas, block, XI.shape[1])
    with _turn(dual, kernel), (_single_threaded_blas() if use_blas else contextlib.nullcontext()):
        kernel(XI, XJ, shift, aux_i, aux_j, labels_j, block, tiles, scratch, sums)
    return sums


def distance_row_sums(DI, offset: int, labels, k: int) -> np.ndarray:
    """Per-cluster sums of rows ``offset..`` of a precomputed dissimilarity matrix."""
    tol = _diagonal_tolerance(np.asarray(DI).dtype)
    DI = np.ascontiguousarray(DI, dtype=np.float64)
    sums = np.zeros((DI.shape[0], k))
    bad = np.zeros(DI.shape[0], dtype=np.uint8)
    kernel = distance_sums.pick(DI.size)
    with _turn(distance_sums, kernel):
        kernel(DI, offset, labels, 0.0, tol, sums, bad)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _locate_bad_distance("X", DI[i], offset + i, True, tol)
    return sums


def from_sums(sums, labels_i, sizes, convention: int) -> np.ndarray:
    """The silhouettes of a chunk's points from their per-cluster distance sums."""
    out = np.empty(sums.shape[0])
    silhouette_from_sums(sums, labels_i, sizes, convention, out)
    return out
