"""Evaluate dask collections with any streammetrics accumulator.

Every accumulator is a small, mergeable, picklable state, so a dask partition
becomes one accumulator and a tree of merges gives exactly the single-process
answer: counts identical, sums equal to 1e-12 relative. Nothing here is a
scheduler of its own: the graph runs on whichever dask scheduler is active (the
threaded default, processes, or a ``distributed`` cluster).

Following dask's conventions, :func:`evaluate` is lazy and returns a
``dask.delayed.Delayed``; :func:`compute` is the eager convenience.

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

from ._base import Accumulator

__all__ = ["evaluate", "compute"]


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
        where = f"partition {index}" + (f" (rows from {offset})" if offset is not None else "")
        raise type(exc)(f"{where}: {exc}") from None
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
