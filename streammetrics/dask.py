"""Evaluate dask collections with any streammetrics accumulator.

Every accumulator is a small, mergeable, picklable state, so a dask partition
becomes one accumulator and a tree of merges gives exactly the single-process
answer: counts identical, sums equal to 1e-12 relative. Nothing here is a
scheduler of its own: the graph runs on whichever dask scheduler is active (the
threaded default, processes, or a ``distributed`` cluster).

Following dask's conventions, :func:`evaluate` is lazy and returns a
``dask.delayed.Delayed``; :func:`compute` is the eager convenience.
:func:`silhouette_samples` and :func:`silhouette_score` compute the silhouette
of a row-chunked dask array with one task per pair of row chunks, so no worker
ever holds more than two chunks and their per-cluster sums.

Requires the ``dask`` extra: ``pip install 'streammetrics[dask]'``.

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> import streammetrics as sm
>>> from streammetrics.dask import evaluate
>>> y = da.from_array(np.array([1, 0, 1, 1, 0, 0]), chunks=2)
>>> p = da.from_array(np.array([0.9, 0.2, 0.4, 0.7, 0.6, 0.1]), chunks=2)
>>> lazy = evaluate(sm.BinaryConfusion(threshold=0.5), y, p)
>>> acc = lazy.compute()          # the merged accumulator, not yet finalized
>>> acc
BinaryConfusion(threshold=0.5): n=6 accuracy=0.666667 f1=0.666667
"""

from __future__ import annotations

from typing import Any, Sequence

try:
    import dask
    import dask.array as _da
    from dask.delayed import Delayed
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "streammetrics.dask needs dask: pip install 'streammetrics[dask]'"
    ) from exc

import numpy as np

from ._protocol.base import Accumulator
from ._protocol.errors import in_context

__all__ = ["evaluate", "compute", "silhouette_samples", "silhouette_score"]


def _is_dask_array(x) -> bool:
    return isinstance(x, _da.Array)


def _is_dask_frame(x) -> bool:
    return hasattr(x, "npartitions") and hasattr(x, "to_delayed") and not _is_dask_array(x)


def _partitions(arrays: Sequence[Any]):
    """Split aligned dask collections into per-partition delayed pieces.

    Returns ``(pieces, offsets)``: ``pieces[i]`` is the list of delayed chunks
    of partition ``i`` (one per input), ``offsets[i]`` its first row (or None
    when the row counts are unknown, as for dask DataFrames).
    """
    if any(_is_dask_array(a) for a in arrays):
        converted = []
        for a in arrays:
            if _is_dask_frame(a):
                a = a.to_dask_array(lengths=True)
            converted.append(a)
        arrays = converted
        first = arrays[0]
        n = first.shape[0]
        for i, a in enumerate(arrays):
            if a.shape[0] != n:
                raise ValueError(
                    f"argument {i} has {a.shape[0]} rows but argument 0 has {n}"
                )
        rows = first.chunks[0]
        chunked = []
        for a in arrays:
            if a.ndim > 1:
                a = a.rechunk({0: rows, **{ax: -1 for ax in range(1, a.ndim)}})
            elif a.chunks[0] != rows:
                a = a.rechunk({0: rows})
            d = a.to_delayed()
            chunked.append(list(d.reshape(d.shape[0], -1)[:, 0]) if a.ndim > 1 else list(d.ravel()))
        offsets = np.concatenate([[0], np.cumsum(rows)[:-1]]).tolist()
        return [list(parts) for parts in zip(*chunked)], offsets
    if all(_is_dask_frame(a) for a in arrays):
        nparts = {a.npartitions for a in arrays}
        if len(nparts) != 1:
            raise ValueError(
                f"the dask collections have different numbers of partitions: {sorted(nparts)}"
            )
        chunked = [list(a.to_delayed()) for a in arrays]
        return [list(parts) for parts in zip(*chunked)], [None] * nparts.pop()
    raise TypeError(
        "streammetrics.dask.evaluate takes dask arrays or dask Series; for numpy "
        "arrays call accumulator.update() directly"
    )


def _fold_partition(template: Accumulator, index: int, offset, weighted: bool, *parts):
    acc = template.copy()
    args = [np.asarray(part) for part in parts]
    w = args.pop() if weighted else None
    try:
        acc.update(*args, sample_weight=w)
    except (ValueError, TypeError) as exc:
        # the error keeps its type and attributes (the row within the partition)
        where = f"partition {index}" + (f" (rows from {offset})" if offset is not None else "")
        raise in_context(exc, where) from None
    return acc


def _merge_all(*accs: Accumulator) -> Accumulator:
    out = accs[0].copy()
    for a in accs[1:]:
        out.merge(a)
    return out


def evaluate(
    accumulator: Accumulator,
    *arrays,
    sample_weight=None,
    split_every: int = 8,
) -> Delayed:
    """Fold dask collections into ``accumulator``'s kind, lazily.

    Parameters
    ----------
    accumulator : Accumulator
        An empty accumulator (or ``Evaluator``) used as the template for the
        settings; it is not modified.
    *arrays : dask.array.Array or dask.dataframe.Series
        The arguments of ``accumulator.update`` (e.g. ``y, p``), chunked alike
        along the rows (dask arrays with other chunks are rechunked to the
        first argument's chunks; 2-D arrays keep whole rows per chunk).
    sample_weight : dask collection, optional
        Per-row weights, chunked like the arrays.
    split_every : int, default 8
        Fan-in of the merge tree.

    Returns
    -------
    dask.delayed.Delayed
        Its ``.compute()`` is the merged accumulator (not finalized, so it can
        be merged further, saved or updated). A partition with bad data raises
        on the client, naming the partition and its first row.
    """
    if not isinstance(accumulator, Accumulator):
        raise TypeError(f"accumulator must be a streammetrics accumulator, got {type(accumulator).__name__}")
    if accumulator.n != 0:
        raise ValueError("the template accumulator must be empty; merge the result into it instead")
    if not arrays:
        raise TypeError("evaluate() needs at least one array")
    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    inputs = list(arrays) + ([sample_weight] if sample_weight is not None else [])
    pieces, offsets = _partitions(inputs)
    template = accumulator.copy()
    fold = dask.delayed(_fold_partition, pure=True)
    merge = dask.delayed(_merge_all, pure=True)
    level = [
        fold(template, i, off, sample_weight is not None, *parts)
        for i, (parts, off) in enumerate(zip(pieces, offsets))
    ]
    if not level:
        return dask.delayed(template)
    while len(level) > 1:
        level = [merge(*level[i : i + split_every]) for i in range(0, len(level), split_every)]
    return level[0]


def compute(accumulator: Accumulator, *arrays, sample_weight=None, split_every: int = 8, **compute_kwargs):
    """Eager :func:`evaluate`: return the merged accumulator.

    ``compute_kwargs`` go to ``dask.compute`` (e.g. ``scheduler="processes"``).
    """
    lazy = evaluate(accumulator, *arrays, sample_weight=sample_weight, split_every=split_every)
    (acc,) = dask.compute(lazy, **compute_kwargs)
    return acc


# ---------------------------------------------------------------------------
# distributed silhouette

def _silhouette_module():
    from .metrics import silhouette

    return silhouette


def _add(*parts):
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def silhouette_samples(X, labels, *, convention="seed", metric="euclidean", block_size=None,
                       split_every: int = 8):
    """Per-point silhouettes of a row-chunked dask array, lazily.

    The distributed twin of :func:`streammetrics.silhouette_samples`: the same
    conventions, metrics and numbers (to rounding: sums are added in another
    order). Each pair of row chunks ``(i, j)`` is one task that adds, for every
    point of chunk ``i``, its distances to each cluster's points in chunk ``j``;
    the sums of chunk ``i`` are then added up by a tree and turned into its
    silhouettes. A worker holds at most two chunks of X, their per-cluster sums
    and one tile per thread, never anything ``n x n``.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
        The points, chunked along the rows (columns are gathered into one
        chunk); or an ``n x n`` dissimilarity matrix with
        ``metric="precomputed"``.
    labels : array-like or dask array of shape (n,)
        Integer cluster identifiers (gathered on the client: n integers).
    convention, metric, block_size
        As in :func:`streammetrics.silhouette_samples`.
    split_every : int, default 8
        Fan-in of the tree adding per-chunk sums.

    Returns
    -------
    dask.array.Array of shape (n,)
        Chunked like X's rows.

    Examples
    --------
    >>> import dask.array as da
    >>> X = da.from_array([[0.0], [1.0], [5.0], [6.0]], chunks=(2, 1))
    >>> silhouette_samples(X, [0, 0, 1, 1]).compute().round(6)
    array([0.909091, 0.888889, 0.888889, 0.909091])
    """
    sil = _silhouette_module()
    plan = sil.Plan(convention, metric, block_size)
    if not _is_dask_array(X):
        raise TypeError(
            "streammetrics.dask.silhouette_samples takes a dask array; for in-memory "
            "data use streammetrics.silhouette_samples"
        )
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got shape {X.shape}")
    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    n, d = X.shape
    if _is_dask_array(labels):
        labels = labels.compute()
    lab, sizes = sil.cluster_labels(labels, n, "X")
    K = int(sizes.shape[0])
    X = X.rechunk({1: -1})
    rows = X.chunks[0]
    offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    chunks = list(X.to_delayed()[:, 0])
    delayed = dask.delayed
    nb = len(chunks)
    labs = [lab[offsets[i] : offsets[i + 1]] for i in range(nb)]

    if plan.precomputed:
        if d != n:
            raise ValueError(f'metric="precomputed" needs a square matrix, got shape {X.shape}')
        sums = [delayed(sil.distance_row_sums, pure=True)(chunks[i], int(offsets[i]), lab, K)
                for i in range(nb)]
    else:
        b = plan.block_for(max(rows), d)
        stats = [delayed(sil.chunk_stats, pure=True, nout=4)(chunks[i], int(offsets[i]), plan.metric)
                 for i in range(nb)]
        use_blas = delayed(sil.blas_for, pure=True)(plan.metric, d, stats)
        sums = []
        for i in range(nb):
            pieces = [
                delayed(sil.pair_sums, pure=True)(
                    chunks[i], chunks[j], int(offsets[i] - offsets[j]), stats[i][0], stats[j][0],
                    labs[j], plan.metric, b, K, use_blas,
                )
                for j in range(nb)
            ]
            while len(pieces) > 1:
                pieces = [
                    delayed(_add, pure=True)(*pieces[k : k + split_every])
                    for k in range(0, len(pieces), split_every)
                ]
            sums.append(pieces[0])
    parts = [
        _da.from_delayed(delayed(sil.from_sums, pure=True)(sums[i], labs[i], sizes, plan.convention),
                         shape=(rows[i],), dtype=np.float64)
        for i in range(nb)
    ]
    return _da.concatenate(parts) if len(parts) > 1 else parts[0]


def silhouette_score(X, labels, *, convention="seed", metric="euclidean", block_size=None,
                     split_every: int = 8):
    """Mean silhouette of a row-chunked dask array, lazily (a 0-d dask array).

    >>> import dask.array as da
    >>> X = da.from_array([[0.0], [1.0], [5.0], [6.0]], chunks=(2, 1))
    >>> round(float(silhouette_score(X, [0, 0, 1, 1]).compute()), 6)
    0.89899
    """
    return silhouette_samples(
        X, labels, convention=convention, metric=metric, block_size=block_size, split_every=split_every
    ).mean()
