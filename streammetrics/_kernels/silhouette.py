"""Silhouette kernels: per-point, per-cluster sums of distances, tile by tile.

The silhouette of point ``i`` needs, for every cluster ``k``, the sum of its
distances to the members of ``k``. The kernels never hold more than one
``block x block`` tile of distances per thread (buffers made by the caller with
:func:`tile_buffers`, indexed by ``numba.get_thread_id()``): a tile is computed
from the coordinates, then added into ``sums`` at the cluster labels. Every row
receives its contributions in an order fixed by the blocks alone, so the
result does not depend on the number of threads. :func:`distance_sums` does the
same for rows of a precomputed distance matrix, checking the entries.
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
    "METRIC_NAMES",
    "rows_sq_norms",
    "sum_drivers",
    "tile_buffers",
    "distance_sums",
]

#: Metric codes understood by the feature kernels.
EUCLIDEAN = 0
SQEUCLIDEAN = 1
MANHATTAN = 2
COSINE = 3
METRIC_NAMES = ("euclidean", "sqeuclidean", "manhattan", "cosine")  # by code

#: The symmetric driver's rounds pair at most this many groups of blocks: a
#: constant, so that the order of the additions does not depend on the thread count.
GROUPS = 16

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
def _term(metric, x, y):
    """One feature's term of the distance of ``metric`` between ``x`` and ``y``."""
    if metric == MANHATTAN:
        return abs(x - y)
    if metric == COSINE:
        return x * y
    t = x - y
    return t * t


def _tile(metric: int):
    """The tile of one metric, a constant of the closure: Numba prunes the other
    metrics' branches, so a first use compiles its own loop only.

    The distances from rows ``i0..i0+m`` of ``XI`` to rows ``j0..j0+nc`` of ``XJ``
    are formed two rows at a time in ``rows`` and added at once into ``sums[i0 +
    ii, labJ[j0 + jj]]``, and when ``both`` (an off-diagonal tile of one matrix)
    into ``sums[j0 + jj, labI[i0 + ii]]`` too. The columns are transposed into
    ``yt`` so that the loop over them runs over contiguous memory; a pass over
    the columns adds four features of two rows in registers (each column loaded
    once for both), every pair's terms still in feature order, and the two rows'
    sums are independent chains of additions, each row's in column order."""

    def tile(XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both):
        d = XI.shape[1]
        d4 = d - d % 4
        ra, rb = rows[0], rows[1]
        for jj in range(nc):
            for k in range(d):
                yt[k, jj] = XJ[j0 + jj, k]
        for ii in range(0, m, 2):
            ia, ib = i0 + ii, i0 + min(ii + 1, m - 1)
            xa, xb = XI[ia], XI[ib]
            for jj in range(nc):
                ra[jj] = 0.0
                rb[jj] = 0.0
            for k0 in range(0, d4, 4):
                for jj in range(nc):
                    sa, sb = ra[jj], rb[jj]
                    for k in range(k0, k0 + 4):
                        sa += _term(metric, xa[k], yt[k, jj])
                        sb += _term(metric, xb[k], yt[k, jj])
                    ra[jj], rb[jj] = sa, sb
            for k in range(d4, d):
                for jj in range(nc):
                    ra[jj] += _term(metric, xa[k], yt[k, jj])
                    rb[jj] += _term(metric, xb[k], yt[k, jj])
            for r in range(2):
                row = rows[r]
                i = ib if r else ia
                if metric == EUCLIDEAN:
                    for jj in range(nc):
                        row[jj] = math.sqrt(row[jj])
                elif metric == COSINE:  # 1 - x.y / (|x||y|) in [0, 2], a zero vector (inv = 0) at distance 1
                    for jj in range(nc):
                        v = 1.0 - row[jj] * auxI[i] * auxJ[j0 + jj]
                        row[jj] = 0.0 if v < COSINE_FLOOR else min(v, 2.0)
                    jj = i + shift - j0  # a point is at distance 0 from itself
                    if 0 <= jj < nc:
                        row[jj] = 0.0
            if ib == ia:  # an odd last row: its twin adds zeros
                for jj in range(nc):
                    rb[jj] = 0.0
            oa, ob = sums[ia], sums[ib]
            if both:
                ka, kb = labI[ia], labI[ib]
                for jj in range(nc):
                    k = labJ[j0 + jj]
                    oa[k] += ra[jj]
                    ob[k] += rb[jj]
                    sums[j0 + jj, ka] += ra[jj]
                    sums[j0 + jj, kb] += rb[jj]
            else:
                for jj in range(nc):
                    k = labJ[j0 + jj]
                    oa[k] += ra[jj]
                    ob[k] += rb[jj]

    return tile


def tile_buffers(threads: int, block: int, d: int):
    """``(rows, scratch)``: per thread, two rows of ``block`` distances and ``d x
    block`` transposed columns, made by the caller (an allocation inside a
    kernel compiles on its first use); ``threads`` is 1 for a serial twin."""
    return np.empty((threads, 2, block)), np.empty((threads, d, block))


_euclidean_tile, _sqeuclidean_tile, _manhattan_tile, _cosine_tile = (
    kernel(named(_tile(metric), f"_{name}_tile")) for metric, name in enumerate(METRIC_NAMES)
)


@inline_ir
def _tile_of(metric, XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both):
    """Run the tile of ``metric``, a constant of the caller's closure. (A driver
    whose closure held the tile kernel itself would never load from Numba's
    cache: a kernel object hashes differently in every process.)"""
    if metric == MANHATTAN:
        _manhattan_tile(XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both)
    elif metric == COSINE:
        _cosine_tile(XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both)
    elif metric == SQEUCLIDEAN:
        _sqeuclidean_tile(XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both)
    else:
        _euclidean_tile(XI, i0, m, XJ, j0, nc, yt, rows, auxI, auxJ, shift, labI, labJ, sums, both)


def _drivers(parallel: bool, metric: int):
    """The two drivers of one metric, parallel (``prange``) or serial; the serial
    twin references no threading call, so Numba can cache it."""
    prange = numba.prange if parallel else range

    def row_sums(XI, XJ, shift, auxI, auxJ, labJ, block, rows, scratch, sums):
        """Add to ``sums[i, k]`` the distances from ``XI[i]`` to the ``XJ[j]`` with
        ``labJ[j] == k``; ``aux`` are the squared norms (inverse norms for cosine),
        ``shift`` the index of ``XI[0]`` minus that of ``XJ[0]``. The threads take
        blocks of rows as they become free and walk each across the columns."""
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
                _tile_of(metric, XI, i0, m, XJ, j0, nc, scratch[t], rows[t], auxI, auxJ, shift, labJ, labJ, sums, False)
        if parallel:
            numba.set_parallel_chunksize(previous)

    def symmetric_sums(X, aux, lab, block, rows, scratch, sums):
        """Add to ``sums[i, k]`` the distances from ``X[i]`` to every ``X[j]`` with
        ``lab[j] == k``, each computed once for both points. The blocks are dealt
        into at most :data:`GROUPS` groups, and the pairs of groups go in rounds of
        disjoint pairs, so no two threads write the same rows (and few rounds
        wait for their slowest thread)."""
        n = X.shape[0]
        nblk = (n + block - 1) // block
        per = (nblk + GROUPS - 1) // GROUPS
        ngrp = (nblk + per - 1) // per
        players = ngrp + (ngrp & 1)  # an odd count gets a bye: the group numbered ngrp
        ring = players - 1
        previous = numba.set_parallel_chunksize(1) if parallel else 0
        # round -1 pairs each group with itself; rounds 0..ring-1 pair the groups
        # by the circle method, every two meeting once, the pairs of a round
        # disjoint (one call site of the tile: it compiles once)
        for r in range(-1, ring):
            tasks = ngrp if r < 0 else players // 2
            for p in prange(tasks):
                q = np.int64(p)  # (the parallel index may be unsigned)
                gi, gj = q, q
                if r >= 0:
                    gi, gj = (ring, r) if q == 0 else ((r + q) % ring, (r - q + ring) % ring)
                if gi < ngrp and gj < ngrp:
                    t = numba.get_thread_id() if parallel else 0
                    for bi in range(gi * per, min(nblk, gi * per + per)):
                        first = bi if gi == gj else gj * per
                        for bj in range(first, min(nblk, gj * per + per)):
                            i0, j0 = bi * block, bj * block
                            m, nc = min(n, i0 + block) - i0, min(n, j0 + block) - j0
                            tile, at = scratch[t], rows[t]
                            _tile_of(metric, X, i0, m, X, j0, nc, tile, at, aux, aux, 0, lab, lab, sums, bi != bj)
        if parallel:
            numba.set_parallel_chunksize(previous)

    return row_sums, symmetric_sums


_DRIVERS: dict = {}
_DRIVERS_LOCK = threading.Lock()


def sum_drivers(metric: int) -> tuple[Dual, Dual]:
    """``(row_sums, symmetric_sums)``, the :class:`Dual` drivers of ``metric``,
    made on first request."""
    with _DRIVERS_LOCK:
        duals = _DRIVERS.get(metric)
        if duals is None:
            serial, parallel = _drivers(False, metric), _drivers(True, metric)
            duals = tuple(Dual(kernel(s_), parallel_kernel(p_)) for s_, p_ in zip(serial, parallel))
            _DRIVERS[metric] = duals
        return duals


def _distance_sums_of(prange):
    def distance_sums(D, off, lab, lowest, diag_tol, sums, bad):
        """Add the rows ``off..`` of an ``n x n`` distance matrix into ``sums`` by
        the columns' labels; ``bad[i] = 1`` for a row holding an entry that is not
        finite and ``>= lowest``, or (``diag_tol >= 0``) a diagonal entry above
        ``diag_tol`` in magnitude."""
        m, n = D.shape
        for i in prange(m):
            row = D[i]
            own = sums[i]
            nbad = 0
            for j in range(n):
                v = row[j]
                nbad += not ((v >= lowest) & (v < np.inf))
                own[lab[j]] += v
            j = off + i
            if diag_tol >= 0.0 and j < n and not (abs(row[j]) <= diag_tol):
                nbad += 1
            bad[i] = nbad > 0

    return distance_sums


distance_sums = Dual(kernel(_distance_sums_of(range)), parallel_kernel(_distance_sums_of(numba.prange)))
