"""The rows of a batch folded slice by slice, for templates whose slices are
accumulators of their own: sorted by slice once (a counting sort), each
slice's segment folded into its accumulator."""

from __future__ import annotations

import numpy as np

from .._kernels import grouped as G
from .._protocol.inputs import Batch


def fold_by_slice(tb: Batch, keys, glob: np.ndarray, slice_acc) -> None:
    """Fold the rows of ``tb`` into their slices' accumulators, ``slice_acc(g)``
    for the slice ids ``glob`` of the batch's ``keys``, sorted by slice once."""
    if glob.shape[0] == 1:
        slice_acc(int(glob[0])).fold(tb)
        return
    columns = list(tb.arrays) + ([tb.weights] if tb.weighted else [])
    plain = [c.ndim == 1 and c.dtype.kind in "biuf" and c.shape[0] == tb.n for c in columns]
    bounds = np.zeros(glob.shape[0] + 1, np.int64)
    local = keys.codes
    np.cumsum(np.bincount(local, minlength=glob.shape[0]), out=bounds[1:])
    codes = np.ascontiguousarray(local, np.int64)
    starts = bounds[:-1]
    order = None

    def by_slice(a):
        """``a``'s rows sorted by slice, stably (a counting sort)."""
        nonlocal order
        if a.ndim == 1 and a.dtype.kind in "biuf" and a.shape[0] == codes.shape[0]:
            out = np.empty_like(a)
            G.group_scatter(a, codes, starts, out)
            return out
        if order is None:
            order = G.group_order(codes, starts)
        return a[order]

    if len(columns) >= 2 and plain[0] and plain[1]:  # the usual (y, p): both in one pass
        a, b = columns[0], columns[1]
        out_a, out_b = np.empty_like(a), np.empty_like(b)
        G.group_scatter2(a, b, codes, starts, out_a, out_b)
        columns[:2] = [out_a, out_b]
        columns[2:] = [by_slice(c) for c in columns[2:]]
    else:
        columns = [by_slice(c) for c in columns]
    _fold_segments(tb, columns[: len(tb.arrays)], columns[-1] if tb.weighted else tb.weights, bounds, glob, slice_acc)


def _fold_segments(tb: Batch, arrays: list, w, bounds, glob, slice_acc) -> None:
    """Fold rows ``bounds[j]:bounds[j + 1]`` of ``arrays`` (sorted by slice) into
    slice ``glob[j]``'s accumulator."""
    for j, g in enumerate(glob.tolist()):
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        part = Batch(tb.inputs, [a[lo:hi] for a in arrays], w[lo:hi] if tb.weighted else w, hi - lo)
        slice_acc(g).fold(part)
