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
    bounds = np.zeros(glob.shape[0] + 1, np.int64)
    codes = np.ascontiguousarray(keys.codes, np.int64)
    np.cumsum(np.bincount(codes, minlength=glob.shape[0]), out=bounds[1:])
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
            order = by_slice(np.arange(codes.shape[0], dtype=np.int64))
        return a[order]

    grouped = Batch(
        tb.inputs, [by_slice(a) for a in tb.arrays], by_slice(tb.weights) if tb.weighted else tb.weights, tb.n
    )
    for j, g in enumerate(glob.tolist()):
        slice_acc(g).fold(grouped.rows(slice(int(bounds[j]), int(bounds[j + 1]))))
