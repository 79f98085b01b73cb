"""The silhouette's per-cluster distance sums, in bounded memory.

The checks of the arguments, the input read in panels of rows (:class:`Rows`),
the labels as codes, and the sums of every point's distances to each cluster
(:mod:`streammetrics._kernels.silhouette`) turned into silhouettes. Never
anything ``n x n``.

Working memory beyond the input stays under a budget (:data:`MEMORY_BUDGET`
unless the caller says otherwise): a quarter for the per-thread tiles (this
picks the tile side), an eighth for the sums of the rows in flight, and half for
row panels of an input that is not an in-memory float64 array (a memmap, an
HDF5 or Zarr dataset, another dtype), read panel by panel, never converted whole.

The blockwise pieces at the end (:class:`Plan`, :func:`chunk_stats`,
:func:`pair_sums`, :func:`distance_row_sums`, :func:`from_sums`) serve an engine
that holds the rows in chunks (:mod:`streammetrics.dask`).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import threading

import numba
import numpy as np

from .._kernels import silhouette as KS
from .._protocol.errors import BadShapeError, BadValueError
from .._protocol.validation import as_1d, as_numbers, to_numpy

#: Convention codes: the specification's, and scikit-learn's
SEED, SKLEARN = 0, 1

#: The specification's ``10^300 m_ik``: added to a point's own cluster so that
#: the minimum over clusters picks the nearest *other* one.
OWN_CLUSTER_PENALTY = 1e300

#: Default bound, in bytes, on the working memory beyond the input (64 MiB).
MEMORY_BUDGET = 64 * 2**20

#: Tiles are at most this many rows (and columns) on a side: 256 x 256 float64
#: (512 KiB) stays in a core's L2 cache while it is turned into distances.
_MAX_BLOCK = 256

#: the metric code of a precomputed dissimilarity matrix
PRECOMPUTED = -1
_METRICS = {name: code for code, name in enumerate(KS.METRIC_NAMES)} | {"precomputed": PRECOMPUTED}
_ALIASES = {"l2": "euclidean", "l1": "manhattan", "cityblock": "manhattan"}
_CONVENTIONS = {"seed": SEED, "sklearn": SKLEARN}
_TWO_CLUSTERS = "the silhouette needs at least two non-empty clusters"

#: coordinates whose largest magnitude lies outside these are rescaled (exactly)
_SCALE_HIGH = 2.0**400
_SCALE_LOW = 2.0**-400

#: parallel kernels may not be launched from two threads of one process at once
#: under every Numba threading layer (workqueue forbids it, aborting the
#: process); each uses every core anyway, so calls from several threads take turns
PARALLEL_LOCK = threading.Lock()


def check_convention(convention) -> int:
    if isinstance(convention, str) and convention in _CONVENTIONS:
        return _CONVENTIONS[convention]
    raise ValueError(f"convention must be 'seed' or 'sklearn', got {convention!r}")


def check_metric(metric) -> int:
    if isinstance(metric, str):
        key = _ALIASES.get(metric, metric)
        if key in _METRICS:
            return _METRICS[key]
    valid = ", ".join(repr(m) for m in _METRICS)
    aliases = ", ".join(f"{a!r} for {m!r}" for a, m in _ALIASES.items())
    raise ValueError(f"metric must be one of {valid} (or {aliases}), got {metric!r}")


def check_positive_int(value, name: str):
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def budget_of(memory_budget) -> int:
    """The working memory in bytes: ``memory_budget``, or :data:`MEMORY_BUDGET`."""
    return check_positive_int(memory_budget, "memory_budget") or MEMORY_BUDGET


def _check_numeric(dtype: np.dtype, name: str) -> None:
    if dtype.kind not in "biuf":
        if dtype.kind == "c":
            raise TypeError(f"{name} must be real, got complex dtype {dtype}")
        raise TypeError(f"{name} must hold numbers, got dtype {dtype}")


def _diagonal_tolerance(dtype) -> float:
    """How far from 0 a precomputed matrix's diagonal may be: 100 ulps of 1 in
    its own float type (a float32 matrix rounds at 1e-7, as scikit-learn allows)."""
    dtype = np.dtype(dtype)
    return 100 * float(np.finfo(dtype if dtype.kind == "f" else np.float64).eps)


class Rows:
    """Row panels of a 2-D input as float64 C-contiguous arrays: an in-memory
    float64 array as it is (``whole``), a small input of another kind converted
    once, anything else (a large memmap, HDF5/Zarr dataset or array of another
    dtype) converted one panel of rows at a time."""

    def __init__(self, X, name: str, budget: int):
        self.name = name
        lazy = isinstance(X, np.memmap) or (
            not isinstance(X, np.ndarray) and all(hasattr(X, a) for a in ("shape", "dtype", "__getitem__"))
        )
        if not lazy:
            X = as_numbers(np.asarray(to_numpy(X, name, "a 2-D array")), name)  # np.matrix & co as ndarray
        shape = tuple(X.shape)
        if len(shape) != 2:
            raise BadShapeError(f"{name} must be a 2-D array, got shape {shape}", name)
        self.shape = shape
        n, d = shape
        if n == 0:
            raise BadShapeError(f"{name} is empty: it has no rows", name)
        if d == 0:
            raise BadShapeError(f"{name} has no columns", name)
        self.source = X
        dtype = X.dtype if isinstance(X, np.ndarray) else self.take(slice(0, 1)).dtype
        _check_numeric(np.dtype(dtype), name)
        #: the dtype the values came in (a float32 matrix rounds as float32)
        self.dtype = np.dtype(dtype)
        self.whole = None
        if isinstance(X, np.ndarray) and not lazy and X.dtype == np.float64 and X.flags.c_contiguous:
            self.whole = X
        elif n * d * 8 <= budget // 2:
            self.whole = self.read(0, n)

    def take(self, rows) -> np.ndarray:
        """The rows ``rows`` (a slice or sorted indices) of the input, as they are stored."""
        block = self.source[rows]
        if getattr(block, "requires_grad", False) and hasattr(block, "detach"):
            block = block.detach()
        block = np.asarray(block)
        _check_numeric(block.dtype, self.name)
        return block

    def rescale(self) -> None:
        """Scale coordinates held whole by a power of two (exactly) when their
        squares would overflow or underflow float64: silhouettes do not depend on
        the scale, and the norms and sums then stay finite and nonzero."""
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
        return np.array(self.take(slice(i0, i1)), dtype=np.float64, order="C", copy=True)


def cluster_labels(labels, n: int, rows_of: str = "X"):
    """``(codes, sizes)``: the labels of ``n`` rows as cluster codes 0..K-1 (int64),
    and the cluster sizes."""
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
        raise ValueError(f"{_TWO_CLUSTERS}, but every label is {uniques[0].item()!r}")
    lab = np.ascontiguousarray(inverse.reshape(-1), dtype=np.int64)
    sizes = np.bincount(lab, minlength=uniques.size).astype(np.int64)
    return lab, sizes


def membership_labels(m, n: int):
    """Cluster index of every row of a one-hot membership matrix, and sizes."""
    arr = as_numbers(np.asarray(to_numpy(m, "m", "a 2-D array")), "m")
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
        raise BadValueError("m", (i, k), arr[i, k], "membership must be 0 or 1")
    ones = np.count_nonzero(arr, axis=1)
    bad = np.flatnonzero(ones != 1)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"m[{i}] holds {int(ones[i])} ones: each row of m must be one-hot (exactly one 1)")
    lab = np.ascontiguousarray(np.argmax(arr, axis=1), dtype=np.int64)
    sizes = np.bincount(lab, minlength=arr.shape[1]).astype(np.int64)
    nonempty = np.flatnonzero(sizes)
    if nonempty.size < 2:
        raise ValueError(f"{_TWO_CLUSTERS}, but only column {int(nonempty[0])} of m has members")
    return lab, sizes


def _auto_block(n: int, d: int, threads: int, budget: int) -> int:
    """The tile side: at most :data:`_MAX_BLOCK`, halved until every thread's tiles
    fit in a quarter of the budget, and at least four blocks of rows per thread."""
    b = _MAX_BLOCK
    while b > 8 and threads * b * (b + d) * 8 > budget // 4:
        b //= 2
    return max(1, min(b, -(-n // (4 * threads))))


def rows_per_panel(limit_bytes: int, row_bytes: int, multiple: int) -> int:
    """Rows that fit in ``limit_bytes``, as a positive multiple of ``multiple``."""
    rows = max(1, limit_bytes // max(1, row_bytes))
    return max(multiple, rows // multiple * multiple)


def _twin(dual, work: float):
    """``(kernel, turn, threads)``: the twin of ``dual`` for ``work``, the lock to
    hold while it runs (none for the serial twin) and the threads it uses."""
    kernel = dual.pick(work)
    if kernel is dual.parallel:
        return kernel, PARALLEL_LOCK, numba.get_num_threads()
    return kernel, contextlib.nullcontext(), 1


def _aux_of(sq: np.ndarray, metric: int) -> np.ndarray:
    """What the feature kernels read per point: the squared norm, or for cosine
    the inverse norm (0 for a zero vector)."""
    if metric != KS.COSINE:
        return sq
    aux = np.zeros_like(sq)
    nonzero = sq > 0
    aux[nonzero] = 1.0 / np.sqrt(sq[nonzero])
    return aux


# --------------------------------------------------------------------------
# the two engines


def feature_silhouettes(src: Rows, lab, sizes, metric: int, convention: int, block, budget: int):
    """Silhouettes of the points ``src`` under ``metric``, panel by panel of rows."""
    n, d = src.shape
    K = sizes.shape[0]
    # a tile larger than the data would only allocate (n x n at the most)
    b = min(block, n) if block is not None else _auto_block(n, d, numba.get_num_threads(), budget)
    rows = rows_per_panel(budget // 8, 8 * K, b)
    if src.whole is None:
        rows = min(rows, rows_per_panel(budget // 4, 8 * d, b))

    # one pass: finiteness and squared norms
    aux = np.concatenate([chunk_stats(src.read(i0, i0 + rows), i0, metric)[0] for i0 in range(0, n, rows)])

    out = np.empty(n)
    row_sums, symmetric_sums = KS.sum_drivers(metric)
    if src.whole is not None and rows >= n:  # all in memory: each distance once, for both points
        sums = np.zeros((n, K))
        kernel, turn, threads = _twin(symmetric_sums, n * n * d / 2)
        with turn:
            kernel(src.whole, aux, lab, b, *KS.tile_buffers(threads, b, d), sums)
        return from_sums(sums, lab, sizes, convention)
    kernel, turn, threads = _twin(row_sums, n * n * d)
    tiles, scratch = KS.tile_buffers(threads, b, d)
    for i0 in range(0, n, rows):
        i1 = min(i0 + rows, n)
        XI = src.read(i0, i1)
        sums = np.zeros((i1 - i0, K))
        for j0 in range(0, n, rows):
            j1 = min(j0 + rows, n)
            XJ = XI if j0 == i0 else src.read(j0, j1)
            with turn:
                kernel(XI, XJ, i0 - j0, aux[i0:i1], aux[j0:j1], lab[j0:j1], b, tiles, scratch, sums)
        out[i0:i1] = from_sums(sums, lab[i0:i1], sizes, convention)
    return out


def distance_silhouettes(src: Rows, lab, sizes, convention: int, block, budget: int, precomputed: bool):
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
        rows = rows_per_panel(budget // 8, 8 * K, 1)
        if src.whole is None:
            rows = min(rows, rows_per_panel(budget // 2, 8 * n, 1))
    diag_tol = _diagonal_tolerance(src.dtype) if precomputed else -1.0
    out = np.empty(n)
    for i0 in range(0, n, rows):
        DI = src.read(i0, min(i0 + rows, n))
        sums = _distance_sums(src.name, DI, i0, lab, K, precomputed, diag_tol, n * n)
        out[i0 : i0 + DI.shape[0]] = from_sums(sums, lab[i0 : i0 + DI.shape[0]], sizes, convention)
    return out


def _distance_sums(name, DI, offset, labels, k, precomputed, diag_tol, work) -> np.ndarray:
    """Per-cluster sums of the rows ``offset..`` of a dissimilarity matrix, its
    entries checked (non-negative with a zero diagonal when ``precomputed``);
    ``work`` picks the kernel's twin."""
    sums = np.zeros((DI.shape[0], k))
    bad = np.zeros(DI.shape[0], dtype=np.uint8)
    kernel, turn, _ = _twin(KS.distance_sums, work)
    with turn:
        kernel(DI, offset, labels, 0.0 if precomputed else -np.inf, diag_tol, sums, bad)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _locate_bad_distance(name, DI[i], offset + i, precomputed, diag_tol)
    return sums


def _locate_bad_distance(name: str, row: np.ndarray, i: int, precomputed: bool, diag_tol: float) -> ValueError:
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(row) | (precomputed & (row < 0))
    if precomputed:
        bad[i] |= not abs(row[i]) <= diag_tol
    j = int(np.flatnonzero(bad)[0])
    if not np.isfinite(row[j]):
        problem = "distances must be finite"
    elif row[j] < 0:
        problem = "distances must be non-negative"
    else:
        problem = "a point's distance to itself must be 0 (the diagonal must be zero)"
    return BadValueError(name, (i, j), row[j], problem)


# ------------------------------------------------------------------------------
# blockwise pieces, for engines that hold the rows in chunks (streammetrics.dask)


class Plan:
    """Checked settings of a blockwise silhouette: ``convention``, ``metric`` and
    ``block_size`` codes, as :func:`~.silhouette.silhouette_samples` takes them."""

    __slots__ = ("convention", "metric", "block_size")

    def __init__(self, convention="seed", metric="euclidean", block_size=None):
        self.convention = check_convention(convention)
        self.metric = check_metric(metric)
        self.block_size = check_positive_int(block_size, "block_size")

    @property
    def precomputed(self) -> bool:
        return self.metric == PRECOMPUTED

    def block_for(self, rows: int, d: int) -> int:
        """The tile size for chunks of at most ``rows`` rows of ``d`` features."""
        if self.block_size is not None:
            return min(self.block_size, rows)
        return _auto_block(rows, d, numba.get_num_threads(), MEMORY_BUDGET)


def chunk_stats(XI, offset: int, metric: int):
    """``(aux, sq_sum, column_sums, rows)`` of one chunk of points starting at row ``offset``.

    ``aux`` are the squared norms (inverse norms for cosine) the pair sums
    read; NaN or infinity raises ``BadValueError`` naming its row and column.
    """
    XI = np.ascontiguousarray(XI, dtype=np.float64)
    sq = np.empty(XI.shape[0])
    k = KS.rows_sq_norms(XI, sq)
    if k >= 0:
        i, j = divmod(k, XI.shape[1])
        raise BadValueError("X", (offset + i, j), XI[i, j], "values must be finite")
    return _aux_of(sq, metric), sq.sum(), XI.sum(axis=0), XI.shape[0]


def pair_sums(XI, XJ, shift: int, aux_i, aux_j, labels_j, metric: int, block: int, k: int) -> np.ndarray:
    """``(rows of XI, k)`` sums of the distances of XI's points to each cluster's points in XJ.

    ``shift`` is XI's first row minus XJ's (it finds the diagonal).
    """
    XI = np.ascontiguousarray(XI, dtype=np.float64)
    XJ = np.ascontiguousarray(XJ, dtype=np.float64)
    sums = np.zeros((XI.shape[0], k))
    kernel, turn, threads = _twin(KS.sum_drivers(metric)[0], XI.shape[0] * XJ.shape[0] * XI.shape[1])
    with turn:
        kernel(XI, XJ, shift, aux_i, aux_j, labels_j, block, *KS.tile_buffers(threads, block, XI.shape[1]), sums)
    return sums


def distance_row_sums(DI, offset: int, labels, k: int) -> np.ndarray:
    """Per-cluster sums of rows ``offset..`` of a precomputed dissimilarity matrix."""
    tol = _diagonal_tolerance(np.asarray(DI).dtype)
    DI = np.ascontiguousarray(DI, dtype=np.float64)
    return _distance_sums("X", DI, offset, labels, k, True, tol, DI.size)


def from_sums(sums, lab, sizes, convention: int) -> np.ndarray:
    """The silhouettes of points from their per-cluster distance sums (``m x K``),
    ``lab`` their clusters and ``sizes[k] = |C_k|``. :data:`SEED` is the
    specification's formulas literally (``a`` over ``safe(|C_own|)``, the own
    cluster penalised by ``10^300`` in the minimum); :data:`SKLEARN` divides ``a``
    by ``|C_own| - 1``, leaves the own cluster out, and gives a point alone in
    its cluster 0."""
    rows = np.arange(sums.shape[0])
    own = sizes[lab]
    D = sums / (sizes + (sizes == 0))
    if convention == SEED:
        a = D[rows, lab]
        D[rows, lab] += OWN_CLUSTER_PENALTY
    else:
        a = sums[rows, lab] / np.maximum(own - 1, 1)
        D[rows, lab] = np.inf
    b = D.min(axis=1)
    top = np.maximum(a, b)
    s = (b - a) / (top + (top == 0.0))
    if convention == SKLEARN:
        s[own <= 1] = 0.0
    return s
