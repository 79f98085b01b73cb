"""Silhouette kernels: per-point, per-cluster sums of distances, tile by tile.

The silhouette of point ``i`` needs, for every cluster ``k``, the sum of the
distances from ``i`` to the members of ``k``: an ``n x K`` table built from
``n x n`` distances. The kernels here never hold more than one
``block x block`` tile of distances per thread, in a buffer of its own (made
by the caller with :func:`tile_buffers`, indexed by ``numba.get_thread_id()``):
a tile is computed from the coordinates (their differences summed over the
features in order, or for the cosine distance their products), then added into
the caller's ``sums`` at the cluster labels (``sums[i, labels[j]] += g[i, j]``).

Two drivers of one metric walk the tiles (:func:`sum_drivers` gives both):

* ``row_sums``: the rows of a panel are cut into blocks of ``block`` rows,
  the threads take the blocks one at a time as they become free, and each
  walks its block across all the columns, which may come from another panel
  of the input (as reading a memmap panel by panel needs). A row receives its
  contributions in the order of the columns.
* ``symmetric_sums``: when all the points and all their sums are in
  memory, each distance is computed once and added to both of its points,
  which halves the work. The pairs of blocks are visited in rounds of disjoint
  pairs (a round-robin tournament), so no two threads write the same rows, and
  a row receives its contributions in an order fixed by the blocks.

Either way the result does not depend on the number of threads.

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
    "sum_drivers",
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


@inline_ir
def _term(metric, x, y):
    """One feature's term of the distance of ``metric`` between ``x`` and ``y``."""
    if metric == MANHATTAN:
        return abs(x - y)
    if metric == COSINE:
        return x * y
    t = x - y
    return t * t


def _tile(metric: int):
    """The tile of one metric: ``metric`` is a constant of the closure, so Numba
    prunes the other metrics' branches before typing, and a first use compiles
    the loop of its own metric only.

    The columns are transposed into ``yt`` so that the loop over them runs over
    contiguous memory (vectorised), and each pass over a row adds four features
    held in registers: a quarter of the loads and stores of a pass per feature,
    the terms of every pair still added in the order of the features."""

    def tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift):
        d = XI.shape[1]
        d4 = d - d % 4
        for jj in range(nc):
            for k in range(d):
                yt[k, jj] = XJ[j0 + jj, k]
        for ii in range(m):
            x = XI[i0 + ii]
            row = g[ii]
            for jj in range(nc):
                row[jj] = 0.0
            for k0 in range(0, d4, 4):
                for jj in range(nc):
                    s = row[jj]
                    for k in range(k0, k0 + 4):
                        s += _term(metric, x[k], yt[k, jj])
                    row[jj] = s
            for k in range(d4, d):
                for jj in range(nc):
                    row[jj] += _term(metric, x[k], yt[k, jj])
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
    """``(tiles, scratch)``: the per-thread buffers the drivers take,
    made by the caller (an allocation inside a kernel compiles on its first
    use): ``block x block`` tiles and a ``d x block`` scratch for the transposed
    columns, so that the innermost loop runs over contiguous columns.
    ``threads`` is 1 for the serial twin, else ``numba.get_num_threads()``."""
    return np.empty((threads, block, block)), np.empty((threads, d, block))


_euclidean_tile, _sqeuclidean_tile, _manhattan_tile, _cosine_tile = (
    kernel(named(_tile(metric), f"_{name}_tile"))
    for metric, name in ((EUCLIDEAN, "euclidean"), (SQEUCLIDEAN, "sqeuclidean"), (MANHATTAN, "manhattan"),
                         (COSINE, "cosine")))


@inline_ir
def _tile_of(metric, g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift):
    """Run the tile of ``metric``, a constant of the calling driver's closure: the
    other metrics' branches are pruned. (A driver whose closure held the tile
    kernel itself would never load from Numba's cache: a kernel object hashes
    differently in every process.)"""
    if metric == MANHATTAN:
        _manhattan_tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift)
    elif metric == COSINE:
        _cosine_tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift)
    elif metric == SQEUCLIDEAN:
        _sqeuclidean_tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift)
    else:
        _euclidean_tile(g, m, nc, XI, i0, XJ, j0, yt, auxI, auxJ, shift)


@inline_ir
def _scatter_both(g, m, nc, lab, i0, j0, sums, both):
    """:func:`_scatter` of ``g[:m, :nc]`` into the rows ``i0..``, and when ``both``
    (a tile off the diagonal) its transpose into the rows ``j0..`` too:
    ``sums[j0 + jj, lab[i0 + ii]] += g[ii, jj]``, rows in increasing order."""
    for ii in range(m):
        s = sums[i0 + ii]
        k = lab[i0 + ii]
        row = g[ii]
        for jj in range(nc):
            v = row[jj]
            s[lab[j0 + jj]] += v
            if both:
                sums[j0 + jj, k] += v


def _drivers(parallel: bool, metric: int):
    """The two drivers of one metric, for the parallel twin (``prange``, a
    thread-indexed tile each) or the serial one. ``parallel`` and ``metric`` are
    constants of the closure: the serial twin references no threading call (so
    Numba can cache it), and each compiles the tile of its metric alone."""
    prange = numba.prange if parallel else range

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
                _tile_of(metric, g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
                _scatter(g, m, nc, labJ, j0, sums, i0)
        if parallel:
            numba.set_parallel_chunksize(previous)

    def symmetric_sums(X, aux, lab, block, tiles, scratch, sums):
        n = X.shape[0]
        nblk = (n + block - 1) // block
        players = nblk + (nblk & 1)  # an odd count gets a bye: the block numbered nblk
        ring = players - 1
        previous = numba.set_parallel_chunksize(1) if parallel else 0
        # round -1 holds the tiles on the diagonal; rounds 0..ring-1 pair the
        # blocks by the circle method, every two blocks meeting once, the pairs
        # of a round disjoint (one call site of the tile: it compiles once)
        for r in range(-1, ring):
            tiles_now = nblk if r < 0 else players // 2
            for p in prange(tiles_now):
                q = np.int64(p)  # (the parallel index may be unsigned)
                bi, bj = q, q
                if r >= 0:
                    bi, bj = (ring, r) if q == 0 else ((r + q) % ring, (r - q + ring) % ring)
                if bi < nblk and bj < nblk:
                    t = numba.get_thread_id() if parallel else 0
                    i0 = bi * block
                    j0 = bj * block
                    m = min(n, i0 + block) - i0
                    nc = min(n, j0 + block) - j0
                    g = tiles[t]
                    _tile_of(metric, g, m, nc, X, i0, X, j0, scratch[t], aux, aux, 0)
                    _scatter_both(g, m, nc, lab, i0, j0, sums, bi != bj)
        if parallel:
            numba.set_parallel_chunksize(previous)

    return row_sums, symmetric_sums


_ROW_SUMS_DOC = """``(XI, XJ, shift, auxI, auxJ, labJ, block, tiles, scratch, sums)``: add to
``sums[i, k]`` the distances from ``XI[i]`` to the rows ``XJ[j]`` with
``labJ[j] == k``, tile by tile in the buffers of :func:`tile_buffers`.

``aux`` holds the squared norms of the rows (the inverse norms for cosine);
``shift`` is the global index of ``XI[0]`` minus that of ``XJ[0]``.
"""

_SYMMETRIC_DOC = """``(X, aux, lab, block, tiles, scratch, sums)``: add to ``sums[i, k]`` the
distances from ``X[i]`` to every ``X[j]`` with ``lab[j] == k``, computing each
distance once, tile by tile in the buffers of :func:`tile_buffers`.
"""

_DRIVERS: dict = {}
_DRIVERS_LOCK = threading.Lock()


def sum_drivers(metric: int) -> tuple[Dual, Dual]:
    """``(row_sums, symmetric_sums)``, the :class:`Dual` drivers of ``metric``:
    made on first request (a first use compiles the one driver of the one metric
    it needs), the same objects after."""
    with _DRIVERS_LOCK:
        duals = _DRIVERS.get(metric)
        if duals is None:
            serial, parallel = _drivers(False, metric), _drivers(True, metric)
            duals = tuple(Dual(kernel(s_), parallel_kernel(p_)) for s_, p_ in zip(serial, parallel))
            duals[0].__doc__, duals[1].__doc__ = _ROW_SUMS_DOC, _SYMMETRIC_DOC
            _DRIVERS[metric] = duals
        return duals


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
