"""Silhouette kernels: per-point, per-cluster sums of distances, tile by tile.

The silhouette of point ``i`` needs, for every cluster ``k``, the sum of the
distances from ``i`` to the members of ``k``: an ``n x K`` table built from
``n x n`` distances. The kernels here never hold more than one
``block x block`` tile of distances per thread, in a buffer of its own (made
by the caller with :func:`tile_buffers`, indexed by ``numba.get_thread_id()``):
a tile is computed from the coordinates (their differences summed over the
features in order, or for the cosine distance their products), then added into
the caller's ``sums`` at the cluster labels (``sums[i, labels[j]] += g[i, j]``).

:func:`row_sums` gives the driver of one metric: the rows of a panel are cut
into blocks of ``block`` rows, the threads take the blocks one at a time as
they become free, and each walks its block across all the columns, which may
come from another panel of the input (as reading a memmap panel by panel
needs). A row receives its contributions in the order of the columns, so the
result does not depend on the number of threads.

:func:`distance_sums` does the same for a precomputed distance matrix, checking
the entries in the same pass, and :func:`silhouette_from_sums` turns the sums
into silhouettes under either convention.
"""

from __future__ import annotations

import math
import threading

import numba
import numpy as np

from ._jit import Dual, inline_ir, kernel, named, parallel_kernel

__all__ = [
    "EUCLIDEAN",
    "SQEUCLIDEAN",
    "MANHATTAN",
    "COSINE",
    "SEED",
    "SKLEARN",
    "OWN_CLUSTER_PENALTY",
    "rows_sq_norms",
    "row_sums",
    "tile_buffers",
    "distance_sums",
    "silhouette_from_sums",
]

#: Metric codes understood by the feature kernels.
EUCLIDEAN = 0
SQEUCLIDEAN = 1
MANHATTAN = 2
COSINE = 3

#: Convention codes understood by :func:`silhouette_from_sums`.
SEED = 0
SKLEARN = 1

#: The specification's ``10^300 m_ik``: added to a point's own cluster so that
#: the minimum over clusters picks the nearest *other* one.
OWN_CLUSTER_PENALTY = 1e300

#: Cosine distances below this (a few units of rounding in ``1 - x.y / (|x||y|)``)
#: are those of parallel vectors, and are taken as 0.
COSINE_FLOOR = 16 * 2.0**-52


@kernel
def rows_sq_norms(X, out):
    """``out[i] = sum_k X[i, k]**2``; return the flat index of the first
    NaN or infinity of ``X`` (row-major), or -1 when all are finite."""
    n, d = X.shape
    for i in range(n):
        s = 0.0
        ok = True
        for k in range(d):
            v = X[i, k]
            ok &= (v - v) == 0.0  # false for NaN and +-inf
            s += v * v
        if not ok:
            for k in range(d):
                v = X[i, k]
                if not ((v - v) == 0.0):
                    return i * d + k
        out[i] = s
    return -1


@inline_ir
def _cosine_from_dots(g, m, nc, i0, j0, invI, invJ, shift):
    """Turn the dot products in ``g[:m, :nc]`` into cosine distances
    ``1 - x.y / (|x||y|)`` clipped to [0, 2]; a zero vector has ``inv = 0``
    (similarity 0, distance 1), and a point is at distance 0 from itself
    (``shift`` maps a row index to the columns' numbering). A distance below
    :data:`COSINE_FLOOR` is the rounding of parallel vectors and counts as 0."""
    for ii in range(m):
        a = invI[i0 + ii]
        row = g[ii]
        for jj in range(nc):
            v = 1.0 - row[jj] * a * invJ[j0 + jj]
            row[jj] = 0.0 if v < COSINE_FLOOR else min(v, 2.0)
        jj = i0 + ii + shift - j0
        if 0 <= jj < nc:
            row[jj] = 0.0


def _tile(metric: int):
    """The tile of one metric: ``metric`` is a constant of the closure, so Numba
    prunes the other metrics' branches before typing, and a first use compiles
    the loop of its own metric only."""

    def tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift):
        d = XI.shape[1]
        for jj in range(nc):
            for k in range(d):
                yt[k, jj] = XJ[j0 + jj, k]
        for ii in range(m):
            i = i0 + ii
            row = g[ii]
            for jj in range(nc):
                row[jj] = 0.0
            if metric == MANHATTAN:
                for k in range(d):
                    x = XI[i, k]
                    yr = yt[k]
                    for jj in range(nc):
                        row[jj] += abs(x - yr[jj])
            elif metric == COSINE:
                for k in range(d):
                    x = XI[i, k]
                    yr = yt[k]
                    for jj in range(nc):
                        row[jj] += x * yr[jj]
            else:
                for k in range(d):
                    x = XI[i, k]
                    yr = yt[k]
                    for jj in range(nc):
                        t = x - yr[jj]
                        row[jj] += t * t
                if metric == EUCLIDEAN:
                    for jj in range(nc):
                        row[jj] = math.sqrt(row[jj])
        if metric == COSINE:
            _cosine_from_dots(g, m, nc, i0, j0, auxI, auxJ, shift)

    return tile


@kernel
def _scatter(g, m, nc, lab, j0, sums, i0):
    """``sums[i0 + ii, lab[j0 + jj]] += g[ii, jj]`` over ``g[:m, :nc]``, columns
    in increasing order."""
    for ii in range(m):
        s = sums[i0 + ii]
        row = g[ii]
        for jj in range(nc):
            s[lab[j0 + jj]] += row[jj]


def tile_buffers(threads: int, block: int, d: int):
    """``(tiles, scratch)``: the per-thread buffers a :func:`row_sums` driver takes,
    made by the caller (an allocation inside a kernel compiles on its first
    use): ``block x block`` tiles and a ``d x block`` scratch for the transposed
    columns, so that the innermost loop runs over contiguous columns.
    ``threads`` is 1 for the serial twin, else ``numba.get_num_threads()``."""
    return np.empty((threads, block, block)), np.empty((threads, d, block))


_TILES = {metric: kernel(named(_tile(metric), f"_{name}_tile"))
          for metric, name in ((EUCLIDEAN, "euclidean"), (SQEUCLIDEAN, "sqeuclidean"), (MANHATTAN, "manhattan"),
                               (COSINE, "cosine"))}


def _driver(parallel: bool, metric: int):
    """The driver of one metric, for the parallel twin (``prange``, a
    thread-indexed tile each) or the serial one. ``parallel`` and the tile are
    constants of the closure: the serial twin references no threading call (so
    Numba can cache it), and each compiles the tile of its metric alone."""
    prange = numba.prange if parallel else range
    tile = _TILES[metric]

    def row_sums(XI, XJ, shift, auxI, auxJ, labJ, block, tiles, scratch, sums):
        nI = XI.shape[0]
        nJ = XJ.shape[0]
        nblk = (nI + block - 1) // block
        previous = numba.set_parallel_chunksize(1) if parallel else 0  # blocks handed out one by one
        for bi in prange(nblk):
            t = numba.get_thread_id() if parallel else 0
            i0 = bi * block
            m = min(nI, i0 + block) - i0
            for j0 in range(0, nJ, block):
                nc = min(nJ, j0 + block) - j0
                g = tiles[t]
                tile(g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
                _scatter(g, m, nc, labJ, j0, sums, i0)
        if parallel:
            numba.set_parallel_chunksize(previous)

    return row_sums


_ROW_SUMS_DOC = """``(XI, XJ, shift, auxI, auxJ, labJ, block, tiles, scratch, sums)``: add to
``sums[i, k]`` the distances from ``XI[i]`` to the rows ``XJ[j]`` with
``labJ[j] == k``, tile by tile in the buffers of :func:`tile_buffers`.

``aux`` holds the squared norms of the rows (the inverse norms for cosine);
``shift`` is the global index of ``XI[0]`` minus that of ``XJ[0]``.
"""

_ROW_SUMS: dict = {}
_ROW_SUMS_LOCK = threading.Lock()


def row_sums(metric: int) -> Dual:
    """The :class:`Dual` driver of ``metric``: made on first request (a first use
    compiles the driver of the one metric it needs), the same object after."""
    with _ROW_SUMS_LOCK:
        dual = _ROW_SUMS.get(metric)
        if dual is None:
            dual = Dual(kernel(_driver(False, metric)), parallel_kernel(_driver(True, metric)))
            dual.__doc__ = _ROW_SUMS_DOC
            _ROW_SUMS[metric] = dual
        return dual


def _distance_sums_of(prange):
    def distance_sums(D, off, lab, lowest, diag_tol, sums, bad):
        """Add each row of the distance rows ``D`` (rows ``off..off+m`` of an
        ``n x n`` matrix) into ``sums`` by the columns' labels, checking the entries.

        An entry is valid when it is finite and ``>= lowest``; when ``diag_tol`` is
        not negative, a diagonal entry must also satisfy ``|d_ii| <= diag_tol``.
        ``bad[i]`` is set to 1 for a row holding an invalid entry (its sums are then
        meaningless); the caller locates the entry.
        """
        m, n = D.shape
        ngroups = (m + 3) // 4
        for gi in prange(ngroups):
            a = 4 * gi
            b = min(m, a + 4)
            for i in range(a, b):
                row = D[i]
                nbad = 0
                for j in range(n):
                    v = row[j]
                    nbad += not ((v >= lowest) & (v < np.inf))
                j = off + i
                if diag_tol >= 0.0 and j < n and not (abs(row[j]) <= diag_tol):
                    nbad += 1
                bad[i] = nbad > 0
            _scatter(D[a:b], b - a, n, lab, 0, sums, a)

    return distance_sums


distance_sums = Dual(kernel(_distance_sums_of(range)), parallel_kernel(_distance_sums_of(numba.prange)))


@kernel
def silhouette_from_sums(sums, lab, sizes, convention, out):
    """Silhouettes of the rows of ``sums`` (``m x K`` per-cluster distance sums).

    ``lab[i]`` is row ``i``'s cluster and ``sizes[k] = |C_k|`` (empty clusters
    allowed). With the :data:`SEED` convention these are the specification's
    formulas literally: ``D_ik = sums_ik / safe(|C_k|)``, ``a_i = D_i,own``,
    ``b_i = min_k (D_ik + 1e300 [k = own])`` and
    ``s_i = (b_i - a_i) / safe(max(a_i, b_i))``. With :data:`SKLEARN`, ``a_i``
    divides by ``|C_own| - 1`` instead, the own cluster is left out of the
    minimum, and a point alone in its cluster gets 0.
    """
    m, K = sums.shape
    for i in range(m):
        own = lab[i]
        c = sizes[own]
        if convention == SEED:
            a = sums[i, own] / (c + (c == 0))
            penalty = OWN_CLUSTER_PENALTY
        else:
            if c <= 1:
                out[i] = 0.0
                continue
            a = sums[i, own] / (c - 1)
            penalty = np.inf
        b = np.inf
        for k in range(K):
            ck = sizes[k]
            dk = sums[i, k] / (ck + (ck == 0))
            if k == own:
                dk += penalty
            b = min(b, dk)
        top = max(a, b)
        out[i] = (b - a) / (top + (top == 0.0))
