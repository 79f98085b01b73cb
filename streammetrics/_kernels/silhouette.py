"""Silhouette kernels: per-point, per-cluster sums of distances, tile by tile.

The silhouette of point ``i`` needs, for every cluster ``k``, the sum of the
distances from ``i`` to the members of ``k``: an ``n x K`` table built from
``n x n`` distances. The kernels here never hold more than one
``block x block`` tile of distances per thread, in a buffer of its own (indexed
by ``numba.get_thread_id()``, made by the caller with :func:`tile_buffers`): a
tile is computed, then added into the caller's ``sums`` at the cluster labels
(``sums[i, labels[j]] += g[i, j]``).

Two drivers walk the tiles (:func:`sum_drivers` gives both, for one way of
computing a tile and one metric):

* ``row_sums``: the rows of a panel are cut into blocks of
  ``block`` rows, the threads take the blocks one at a time as they become free
  (``prange`` with a chunk size of 1, so that a thread slowed down by other work
  on a shared machine does not hold the others up), and each walks its block
  across all the columns. Rows and columns may come from different panels of
  the input, which is what reading a memmap panel by panel needs.
* ``symmetric_sums``: when all the points are in memory, each distance is
  computed once and added to both of its points, which halves the work. The
  pairs of blocks are visited in rounds of disjoint pairs (a round-robin
  tournament), so no two threads ever write the same rows.

Either way a row receives its contributions in an order fixed by the blocks
alone, so the result does not depend on the number of threads.

Two ways to compute a tile:

* the BLAS tiles form the Gram tile ``X_I @ X_J.T``
  (``np.dot`` inside the kernel; the caller must keep BLAS single-threaded while
  it runs, or the BLAS threads fight the kernel's) and turn it into distances:
  ``|x|^2 + |y|^2 - 2 x.y`` for the Euclidean metrics and ``1 - x.y / (|x||y|)``
  for the cosine distance. The first form cancels catastrophically for
  near-duplicate points, so any squared distance that comes out below
  :data:`EXACT_BELOW` times ``|x|^2 + |y|^2`` is recomputed exactly from the
  coordinate differences. What passes the test keeps a relative error of the
  order of ``sqrt(d) * eps / EXACT_BELOW`` (about 1e-12 at d = 64). Data far from
  the origin compared with its spread fails the test often and runs at the speed
  of the exact path.
* the direct tiles loop over the coordinates themselves (exact
  differences, summed over features in order), vectorised across the columns
  of the tile. They serve the Manhattan distance, and every metric when BLAS is
  not available.

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
    "EXACT_BELOW",
    "OWN_CLUSTER_PENALTY",
    "rows_sq_norms",
    "sum_drivers",
    "tile_buffers",
    "pair_of_round",
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

#: A squared distance from the Gram trick below this fraction of
#: ``|x|^2 + |y|^2`` is recomputed from the coordinate differences.
EXACT_BELOW = 1e-3

#: The specification's ``10^300 m_ik``: added to a point's own cluster so that
#: the minimum over clusters picks the nearest *other* one.
OWN_CLUSTER_PENALTY = 1e300


# --------------------------------------------------------------------------
# one pass over the rows: squared norms and the finiteness check


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


# --------------------------------------------------------------------------
# tiles


@kernel
def _exact_sq(XI, i, XJ, j):
    """Squared Euclidean distance of two rows, from the differences."""
    s = 0.0
    for k in range(XI.shape[1]):
        t = XI[i, k] - XJ[j, k]
        s += t * t
    return s


@inline_ir
def _zero_diagonal(g, m, nc, r0, j0):
    """Set ``g[ii, jj] = 0`` where the row's global index ``r0 + ii`` equals the
    column's ``j0 + jj`` (both counted in the columns' numbering)."""
    for ii in range(m):
        jj = r0 + ii - j0
        if 0 <= jj < nc:
            g[ii, jj] = 0.0


#: Cosine distances below this (a few units of rounding in ``1 - x.y / (|x||y|)``)
#: are those of parallel vectors, and are taken as 0.
COSINE_FLOOR = 16 * 2.0**-52


@inline_ir
def _cosine_from_dots(g, m, nc, i0, j0, invI, invJ, shift):
    """Turn the dot products in ``g[:m, :nc]`` into cosine distances
    ``1 - x.y / (|x||y|)`` clipped to [0, 2]; a zero vector has ``inv = 0``
    (similarity 0, distance 1), and a point is at distance 0 from itself. A
    distance below :data:`COSINE_FLOOR` is the rounding of parallel vectors and
    counts as 0."""
    for ii in range(m):
        a = invI[i0 + ii]
        row = g[ii]
        for jj in range(nc):
            v = 1.0 - row[jj] * a * invJ[j0 + jj]
            row[jj] = 0.0 if v < COSINE_FLOOR else (2.0 if 2.0 < v else v)
    _zero_diagonal(g, m, nc, i0 + shift, j0)


@kernel
def _gram_to_distances(metric, g, XI, i0, XJ, j0, auxI, auxJ, shift):
    """Turn the Gram tile ``g = XI[i0:i0+m] @ XJ[j0:j0+nc].T`` into distances in
    place. ``aux`` holds the squared norms (Euclidean metrics) or the inverse
    norms (cosine); ``shift`` maps a row index to the columns' numbering."""
    m, nc = g.shape
    if metric == COSINE:
        _cosine_from_dots(g, m, nc, i0, j0, auxI, auxJ, shift)
        return
    for ii in range(m):
        i = i0 + ii
        xx = auxI[i]
        row = g[ii]
        small = 0
        for jj in range(nc):
            yy = auxJ[j0 + jj]
            s = (xx + yy) - 2.0 * row[jj]
            row[jj] = s
            small += not (s > EXACT_BELOW * (xx + yy))  # NaN counts as small
        if small:
            for jj in range(nc):
                if not (row[jj] > EXACT_BELOW * (xx + auxJ[j0 + jj])):
                    row[jj] = _exact_sq(XI, i, XJ, j0 + jj)
        if metric == EUCLIDEAN:
            for jj in range(nc):
                row[jj] = math.sqrt(row[jj])


def _direct_tile(metric: int):
    """The direct tile of one metric: ``metric`` is a constant of the closure,
    so Numba prunes the other metrics' branches before typing (an argument,
    even a literal one, would have all four typed and lowered)."""

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


_DIRECT_DOC = """Fill ``g[:m, :nc]`` with the {name} distances between rows ``XI[i0:i0+m]``
and ``XJ[j0:j0+nc]``, summing over features in order. ``yt`` (at least
``d x nc``) is scratch for the transposed column rows, so that the innermost
loop runs over contiguous columns; ``g`` and ``yt`` may be larger than the
tile (a thread's whole buffers), their rows are used from the start."""


def _direct_kernel(metric: int, name: str):
    return kernel(named(_direct_tile(metric), f"_direct_{name}", _DIRECT_DOC.format(name=name)))


_direct_euclidean = _direct_kernel(EUCLIDEAN, "euclidean")
_direct_sqeuclidean = _direct_kernel(SQEUCLIDEAN, "sqeuclidean")
_direct_manhattan = _direct_kernel(MANHATTAN, "manhattan")
_direct_cosine = _direct_kernel(COSINE, "cosine")


@kernel
def _blas_tile(metric, g, XI, i0, XJ, j0, auxI, auxJ, shift):
    """Fill the tile ``g`` (``m x nc``, exactly) from the Gram product
    ``XI[i0:i0+m] @ XJ[j0:j0+nc].T`` (BLAS)."""
    m, nc = g.shape
    np.dot(XI[i0:i0 + m], XJ[j0:j0 + nc].T, g)
    _gram_to_distances(metric, g, XI, i0, XJ, j0, auxI, auxJ, shift)


@kernel
def _scatter(g, m, nc, lab, j0, sums, i0):
    """``sums[i0 + ii, lab[j0 + jj]] += g[ii, jj]`` over ``g[:m, :nc]``, columns
    in increasing order.

    Four rows go together: consecutive columns often share a label, and four
    independent chains of additions keep the adder busy where one would wait
    on the previous sum.
    """
    ii = 0
    while ii + 4 <= m:
        s0 = sums[i0 + ii]
        s1 = sums[i0 + ii + 1]
        s2 = sums[i0 + ii + 2]
        s3 = sums[i0 + ii + 3]
        g0 = g[ii]
        g1 = g[ii + 1]
        g2 = g[ii + 2]
        g3 = g[ii + 3]
        for jj in range(nc):
            k = lab[j0 + jj]
            s0[k] += g0[jj]
            s1[k] += g1[jj]
            s2[k] += g2[jj]
            s3[k] += g3[jj]
        ii += 4
    while ii < m:
        s0 = sums[i0 + ii]
        g0 = g[ii]
        for jj in range(nc):
            s0[lab[j0 + jj]] += g0[jj]
        ii += 1


@inline_ir
def _scatter_columns(g, m, nc, lab, i0, sums, j0):
    """``sums[j0 + jj, lab[i0 + ii]] += g[ii, jj]`` over ``g[:m, :nc]``, rows in
    increasing order: the transposed tile, for the columns' points."""
    for ii in range(m):
        k = lab[i0 + ii]
        row = g[ii]
        for jj in range(nc):
            sums[j0 + jj, k] += row[jj]


@inline_ir
def pair_of_round(r, p, players):
    """The ``p``-th pair of blocks in round ``r`` of a round-robin tournament of
    ``players`` (even) blocks, by the circle method: over rounds
    ``0..players-2`` every pair of distinct blocks meets exactly once, and the
    pairs of one round are disjoint."""
    if p == 0:
        return players - 1, r
    ring = players - 1
    return (r + p) % ring, (r - p + ring) % ring


@inline_ir
def _tile_into(blas, metric, tiles, scratch, t, m, nc, XI, i0, XJ, j0, auxI, auxJ, shift):
    """Compute the ``m x nc`` tile of rows ``XI[i0:]`` against ``XJ[j0:]`` in
    thread ``t``'s buffers and return it (its first ``m`` rows and ``nc``
    columns hold the tile). Called with ``blas`` and ``metric`` constants of a
    driver's closure, so the tile kernels of the other ways are pruned: a BLAS
    tile is a reshaped view of exactly ``m x nc``; a direct tile is the
    thread's whole ``block x block`` buffer (no view to compile)."""
    if blas:
        g = tiles[t, : m * nc].reshape((m, nc))
        _blas_tile(metric, g, XI, i0, XJ, j0, auxI, auxJ, shift)
    else:
        g = tiles[t]
        if metric == MANHATTAN:
            _direct_manhattan(g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
        elif metric == COSINE:
            _direct_cosine(g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
        elif metric == SQEUCLIDEAN:
            _direct_sqeuclidean(g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
        else:
            _direct_euclidean(g, m, nc, XI, i0, XJ, j0, scratch[t], auxI, auxJ, shift)
    return g


def tile_buffers(blas: bool, threads: int, block: int, d: int):
    """``(tiles, scratch)``: the per-thread buffers the drivers of :func:`sum_drivers`
    take, made by the caller (an allocation inside a kernel compiles on its
    first use). BLAS tiles are flat, for a view of exactly ``m x nc``; direct
    tiles are ``block x block`` with a ``d x block`` scratch for the
    transposed columns. ``threads`` is 1 for a serial twin, else
    ``numba.get_num_threads()``."""
    if blas:
        return np.empty((threads, block * block)), np.empty((threads, 0, 0))
    return np.empty((threads, block, block)), np.empty((threads, d, block))


def _drivers(blas: bool, parallel: bool, metric: int):
    """The two drivers of the BLAS or the direct tiles of one metric, for the
    parallel twin (``prange``, a thread-indexed tile each) or the serial one.

    ``blas``, ``parallel`` and ``metric`` are constants of the closure, so
    Numba prunes the branches not taken: the serial twin references no
    threading call (and can be cached: its closure holds only plain values),
    and a driver compiles the tile kernel of its own metric and way alone.
    The per-thread buffers come from :func:`tile_buffers`.
    """
    prange = numba.prange if parallel else range

    def row_sums(XI, XJ, shift, auxI, auxJ, labJ, block, tiles, scratch, sums):
        nI = XI.shape[0]
        nJ = XJ.shape[0]
        nblk = (nI + block - 1) // block
        previous = numba.set_parallel_chunksize(1) if parallel else 0  # blocks handed out one by one
        for bi in prange(nblk):
            t = numba.get_thread_id() if parallel else 0
            i0 = bi * block
            m = (nI if nI < i0 + block else i0 + block) - i0
            for j0 in range(0, nJ, block):
                nc = (nJ if nJ < j0 + block else j0 + block) - j0
                g = _tile_into(blas, metric, tiles, scratch, t, m, nc, XI, i0, XJ, j0, auxI, auxJ, shift)
                _scatter(g, m, nc, labJ, j0, sums, i0)
        if parallel:
            numba.set_parallel_chunksize(previous)

    def symmetric_sums(X, aux, lab, block, tiles, scratch, sums):
        n = X.shape[0]
        nblk = (n + block - 1) // block
        previous = numba.set_parallel_chunksize(1) if parallel else 0
        # round -1: the tiles on the diagonal, whole; then every other pair of
        # blocks once, in rounds of disjoint pairs (one call site of the tile:
        # the driver compiles it once)
        players = nblk + (nblk & 1)  # an odd count gets a bye
        for r in range(-1, players - 1):
            tiles_now = nblk if r < 0 else players // 2
            for p in prange(tiles_now):
                if r < 0:
                    bi = bj = np.int64(p)  # (the parallel index may be unsigned)
                else:
                    bi, bj = pair_of_round(r, p, players)
                if bi < nblk and bj < nblk:
                    t = numba.get_thread_id() if parallel else 0
                    i0 = bi * block
                    j0 = bj * block
                    m = (n if n < i0 + block else i0 + block) - i0
                    nc = (n if n < j0 + block else j0 + block) - j0
                    g = _tile_into(blas, metric, tiles, scratch, t, m, nc, X, i0, X, j0, aux, aux, 0)
                    _scatter(g, m, nc, lab, j0, sums, i0)
                    if bi != bj:
                        _scatter_columns(g, m, nc, lab, i0, sums, j0)
        if parallel:
            numba.set_parallel_chunksize(previous)

    return row_sums, symmetric_sums



_ROW_SUMS_DOC = """``(XI, XJ, shift, auxI, auxJ, labJ, block, tiles, scratch, sums)``: add to ``sums[i, k]`` the distances from ``XI[i]`` to the rows ``XJ[j]``
with ``labJ[j] == k``{how}.

``aux`` holds the squared norms of the rows (the inverse norms for cosine);
``shift`` is the global index of ``XI[0]`` minus that of ``XJ[0]``.{extra}
"""
_SYMMETRIC_DOC = """``(X, aux, lab, block, tiles, scratch, sums)``: add to ``sums[i, k]`` the distances from ``X[i]`` to every ``X[j]`` with
``lab[j] == k``, computing each distance once{how}.

Each off-diagonal tile adds its rows into the sums of its row block and its
columns into those of its column block. For that, the pairs of blocks are
visited in rounds of disjoint pairs (:func:`pair_of_round`), one parallel loop
per round: no two threads ever touch the same rows, and the order in which a
row receives its contributions depends on the blocks only, never on the
threads.{extra}
"""
_BLAS_HOW = " (each tile from a BLAS matrix product)"
_BLAS_EXTRA = """

The metric is :data:`EUCLIDEAN`, :data:`SQEUCLIDEAN` or :data:`COSINE`. Call it
with BLAS limited to one thread: every kernel thread runs its own products."""
_DIRECT_HOW = " (each tile from the coordinate differences, summed in order)"
_DIRECT_EXTRA = """

The metric is any of :data:`EUCLIDEAN`, :data:`SQEUCLIDEAN`, :data:`MANHATTAN`
and :data:`COSINE`; no BLAS needed."""

_SUM_DRIVERS: dict = {}
_SUM_DRIVERS_LOCK = threading.Lock()


def sum_drivers(blas: bool, metric: int) -> tuple[Dual, Dual]:
    """``(row_sums, symmetric_sums)``, each a :class:`Dual`, of the BLAS or the
    direct tiles of ``metric``: made on first request (a first use compiles
    the drivers of the one metric it needs), the same objects after."""
    key = (bool(blas), int(metric))
    with _SUM_DRIVERS_LOCK:
        pair = _SUM_DRIVERS.get(key)
        if pair is None:
            serial = [kernel(f) for f in _drivers(key[0], False, key[1])]
            parallel = [parallel_kernel(f) for f in _drivers(key[0], True, key[1])]
            pair = tuple(Dual(s_, p_) for s_, p_ in zip(serial, parallel))
            how, extra = (_BLAS_HOW, _BLAS_EXTRA) if key[0] else (_DIRECT_HOW, _DIRECT_EXTRA)
            pair[0].__doc__ = _ROW_SUMS_DOC.format(how=how, extra=extra)
            pair[1].__doc__ = _SYMMETRIC_DOC.format(how=how, extra=extra)
            _SUM_DRIVERS[key] = pair
        return pair


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
            b = m if m < a + 4 else a + 4
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

# --------------------------------------------------------------------------
# from sums to silhouettes


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
            if dk < b:
                b = dk
        top = b if b > a else a
        out[i] = (b - a) / (top + (top == 0.0))
