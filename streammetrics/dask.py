"""Evaluate dask collections with any streammetrics accumulator.

A dask partition becomes one accumulator and a tree of merges gives the
single-process answer on whichever dask scheduler is active. :func:`exact_auc`
works by score ranges, never holding every distinct score in one process.

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

from collections.abc import Sequence
from typing import Any

try:
    import dask
    import dask.array as _da
    from dask.delayed import Delayed
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("streammetrics.dask needs dask: pip install 'streammetrics[dask]'") from exc

import numpy as np

from ._protocol.base import Accumulator
from ._protocol.errors import NoObservationsError
from .metrics import silhouette_sums as sil
from .metrics.ranking import ranges as _ranges
from .metrics.ranking.accumulator import check_count
from .metrics.ranking.ranges import RangeResult

__all__ = ["RangeResult", "compute", "evaluate", "exact_auc", "range_cuts", "silhouette_samples", "silhouette_score"]


def _is_dask_array(x) -> bool:
    return isinstance(x, _da.Array)


def _is_dask_frame(x) -> bool:
    return hasattr(x, "npartitions") and hasattr(x, "to_delayed") and not _is_dask_array(x)


def _partitions(arrays: Sequence[Any]):
    """``(pieces, offsets)``: partition ``i``'s delayed chunks (one per input) and
    first row (``None`` when unknown, as for dask DataFrames)."""
    if any(_is_dask_array(a) for a in arrays):
        arrays = [a.to_dask_array(lengths=True) if _is_dask_frame(a) else a for a in arrays]
        n = arrays[0].shape[0]
        for i, a in enumerate(arrays):
            if a.shape[0] != n:
                raise ValueError(f"argument {i} has {a.shape[0]} rows but argument 0 has {n}")
        rows = arrays[0].chunks[0]
        # chunked like the first argument's rows, whole rows per chunk
        chunked = [a.rechunk({0: rows, **{ax: -1 for ax in range(1, a.ndim)}}).to_delayed() for a in arrays]
        pieces = [list(parts) for parts in zip(*[d.reshape(d.shape[0], -1)[:, 0] for d in chunked])]
        return pieces, np.concatenate([[0], np.cumsum(rows)[:-1]]).tolist()
    if all(_is_dask_frame(a) for a in arrays):
        nparts = {a.npartitions for a in arrays}
        if len(nparts) != 1:
            raise ValueError(f"the dask collections have different numbers of partitions: {sorted(nparts)}")
        return [list(parts) for parts in zip(*[a.to_delayed() for a in arrays])], [None] * nparts.pop()
    raise TypeError(
        "streammetrics.dask.evaluate takes dask arrays or dask Series; for numpy "
        "arrays call accumulator.update() directly"
    )


def _where(index: int, offset) -> str:
    return f"partition {index}" + (f" (rows from {offset})" if offset is not None else "")


def _check_split(split_every) -> int:
    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    return split_every


def _add(*parts):
    """The sum of accumulators (merged) or of arrays, none changed."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _tree(level, combine_parts, split_every: int):
    """One delayed value of many, combined ``split_every`` at a time."""
    step = dask.delayed(combine_parts, pure=True)
    while len(level) > 1:
        level = [step(*level[i : i + split_every]) for i in range(0, len(level), split_every)]
    return level[0]


def _fold_partition(template: Accumulator, index: int, offset, weighted: bool, *parts):
    # an error keeps its type and attributes (the row within the partition)
    return _ranges.folded(template.copy(), [np.asarray(part) for part in parts], weighted, _where(index, offset))


def evaluate(accumulator: Accumulator, *arrays, sample_weight=None, split_every: int = 8) -> Delayed:
    """Fold dask collections into ``accumulator``'s kind, lazily.

    ``accumulator`` is an empty template (not modified); ``arrays`` the
    arguments of its ``update`` as dask arrays or Series (rechunked to the first
    argument's rows); ``split_every`` the fan-in of the merge tree. Returns a
    ``Delayed`` of the merged accumulator. A partition with bad data raises on
    the client, naming the partition and its first row.
    """
    if not isinstance(accumulator, Accumulator):
        raise TypeError(f"accumulator must be a streammetrics accumulator, got {type(accumulator).__name__}")
    if accumulator.n != 0:
        raise ValueError("the template accumulator must be empty; merge the result into it instead")
    if not arrays:
        raise TypeError("evaluate() needs at least one array")
    _check_split(split_every)
    pieces, offsets = _partitions(list(arrays) + ([sample_weight] if sample_weight is not None else []))
    template = accumulator.copy()
    fold = dask.delayed(_fold_partition, pure=True)
    level = [
        fold(template, i, off, sample_weight is not None, *parts) for i, (parts, off) in enumerate(zip(pieces, offsets))
    ]
    return _tree(level, _add, split_every) if level else dask.delayed(template)


def compute(accumulator: Accumulator, *arrays, sample_weight=None, split_every: int = 8, **compute_kwargs):
    """Eager :func:`evaluate`: the merged accumulator."""
    lazy = evaluate(accumulator, *arrays, sample_weight=sample_weight, split_every=split_every)
    (acc,) = dask.compute(lazy, **compute_kwargs)
    return acc


# ---------------------------------------------------------------------------
# distributed silhouette


def _aux(chunk, offset: int, metric: int):
    """What the pair sums read of a chunk (its squared or inverse norms); its values checked."""
    return sil.chunk_stats(chunk, offset, metric)[0]


def silhouette_samples(X, labels, *, convention="seed", metric="euclidean", block_size=None, split_every: int = 8):
    """Per-point silhouettes of a row-chunked dask array, lazily (a dask array chunked like X's rows).

    As :func:`streammetrics.silhouette_samples` (to rounding), one task per pair
    of row chunks, their sums added by a tree of fan-in ``split_every``.

    >>> import dask.array as da
    >>> X = da.from_array([[0.0], [1.0], [5.0], [6.0]], chunks=(2, 1))
    >>> silhouette_samples(X, [0, 0, 1, 1]).compute().round(6)
    array([0.909091, 0.888889, 0.888889, 0.909091])
    """
    plan = sil.Plan(convention, metric, block_size)
    if not _is_dask_array(X):
        raise TypeError(
            "streammetrics.dask.silhouette_samples takes a dask array; for in-memory "
            "data use streammetrics.silhouette_samples"
        )
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got shape {X.shape}")
    _check_split(split_every)
    n, d = X.shape
    lab, sizes = sil.cluster_labels(labels.compute() if _is_dask_array(labels) else labels, n, "X")
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
        sums = [delayed(sil.distance_row_sums, pure=True)(chunks[i], int(offsets[i]), lab, K) for i in range(nb)]
    else:
        b = plan.block_for(max(rows), d)
        aux = [delayed(_aux, pure=True)(chunks[i], int(offsets[i]), plan.metric) for i in range(nb)]
        pair = delayed(sil.pair_sums, pure=True)

        def row(i):  # chunk i's sums against every chunk
            return [
                pair(chunks[i], chunks[j], int(offsets[i] - offsets[j]), aux[i], aux[j], labs[j], plan.metric, b, K)
                for j in range(nb)
            ]

        sums = [_tree(row(i), _add, split_every) for i in range(nb)]
    from_sums = delayed(sil.from_sums, pure=True)
    parts = [
        _da.from_delayed(from_sums(sums[i], labs[i], sizes, plan.convention), (rows[i],), np.float64) for i in range(nb)
    ]
    return _da.concatenate(parts) if len(parts) > 1 else parts[0]


def silhouette_score(X, labels, *, convention="seed", metric="euclidean", block_size=None, split_every: int = 8):
    """Mean silhouette of a row-chunked dask array, lazily (a 0-d dask array).

    >>> import dask.array as da
    >>> X = da.from_array([[0.0], [1.0], [5.0], [6.0]], chunks=(2, 1))
    >>> round(float(silhouette_score(X, [0, 0, 1, 1]).compute()), 6)
    0.89899
    """
    return silhouette_samples(
        X, labels, convention=convention, metric=metric, block_size=block_size, split_every=split_every
    ).mean()


# ---------------------------------------------------------------------------
# exact AUC and average precision by score ranges


def _sample_partition(index: int, k: int, seed: int, part):
    """``(rows, sample)``: the partition's row count and up to ``k`` of its finite scores."""
    arr = np.asarray(part)
    n = int(arr.shape[0]) if arr.ndim else 0
    if arr.ndim != 1 or arr.dtype.kind not in "biuf":
        return n, np.zeros(0)  # not scores: the exact pass names the problem
    if n > k:
        arr = arr[np.random.default_rng([seed, index]).choice(n, k, replace=False)]
    arr = arr.astype(np.float64)
    return n, arr[np.isfinite(arr)]


def range_cuts(
    s, ranges: int, *, samples_per_partition: int | None = None, seed: int = 0, **compute_kwargs
) -> np.ndarray:
    """Cut points splitting the scores ``s`` into about ``ranges`` ranges of equal size.

    One pass draws up to ``samples_per_partition`` scores from each partition
    (default: about 200 per range, at least 256); their quantiles, each sample
    counting for its partition's rows, are the cuts. Any cuts give the exact
    result; balance only spreads the work. Returns at most ``ranges - 1``
    strictly increasing scores.

    >>> import dask.array as da
    >>> import numpy as np
    >>> from streammetrics.dask import range_cuts
    >>> s = da.from_array(np.arange(1000) / 1000, chunks=250)
    >>> range_cuts(s, 4)
    array([0.25, 0.5 , 0.75])
    """
    ranges = check_count(ranges, "ranges", 1, True)
    (pieces, _) = _partitions([s])
    if samples_per_partition is None:
        samples_per_partition = max(256, -(-200 * ranges // max(len(pieces), 1)))
    k = check_count(samples_per_partition, "samples_per_partition", 1)
    seed = check_count(seed, "seed", 0)
    sample = dask.delayed(_sample_partition, pure=True)
    samples = dask.compute(*[sample(i, k, seed, parts[0]) for i, parts in enumerate(pieces)], **compute_kwargs)
    values = [smp for _, smp in samples if smp.size]  # each sample stands for its partition's rows
    if not values or ranges < 2:
        return np.zeros(0)
    v = np.concatenate(values)
    w = np.concatenate([np.full(smp.size, n / smp.size) for n, smp in samples if smp.size])
    order = np.argsort(v, kind="stable")
    v, cw = v[order], np.cumsum(w[order])
    # the first score above a share j / ranges of the rows opens range j
    idx = np.searchsorted(cw, cw[-1] * np.arange(1, ranges) / ranges, side="left") + 1
    cuts = np.unique(v[np.minimum(idx, v.size - 1)] + 0.0)
    return cuts[cuts > v[0]]  # a cut at the smallest score would leave a range empty


#: the most tasks a pass gives the ranges' merges: many ranges (cut points) are merged in that many groups of
#: consecutive ranges, since each task of a graph costs dask a millisecond or more
RANGE_GROUPS = 512


def _route_partition(cuts, lo: int, hi: int, index: int, offset, weighted: bool, edges, *parts):
    """One partition's rows, checked and routed by score range (:func:`route_rows`): ``(info, group, ...)``, each group
    the runs of ranges ``edges[g] .. edges[g + 1] - 1``."""
    info, *runs = _ranges.route_rows(cuts, lo, hi, _where(index, offset), [np.asarray(p) for p in parts], weighted)
    return (info, *(runs[a - lo : b - lo] for a, b in zip(edges[:-1], edges[1:])))


def _merge_groups(*groups):
    """One group of runs from the same group of several partitions: each range's runs merged."""
    return [_ranges.merge_pieces(*runs) for runs in zip(*groups)]


def _group_stats(totals, first: int, weighted: bool, runs):
    return [_ranges.range_stats(totals, first + j, weighted, run) for j, run in enumerate(runs)]


def exact_auc(
    y,
    s,
    *,
    sample_weight=None,
    ranges: int | None = None,
    cuts=None,
    passes: int = 1,
    samples_per_partition: int | None = None,
    seed: int = 0,
    split_every: int = 8,
    **compute_kwargs,
) -> RangeResult:
    """Exact AUC and average precision of dask collections, by score ranges.

    The scores are cut into ranges by value (:func:`range_cuts`, or ``cuts``),
    each range's rows merged by a tree of its own, and ``U = sum_r U_r +
    sum_{r < r'} n_neg_r n_pos_r'``. Without weights ``auc`` is bit for bit
    ``RankAUC``'s; otherwise within 1e-12 relative. ``ranges`` defaults to one
    per partition (at most 256); ``passes`` computes the ranges in that many
    groups, each reading the data once, so the cluster holds about
    ``1 / passes`` of the state at a time.

    >>> import dask.array as da
    >>> import numpy as np
    >>> import streammetrics as sm
    >>> from streammetrics.dask import exact_auc
    >>> rng = np.random.default_rng(0)
    >>> y_np = rng.integers(0, 2, 10_000)
    >>> s_np = np.round(rng.normal(size=10_000) + y_np, 2)   # many ties
    >>> y, s = da.from_array(y_np, chunks=1000), da.from_array(s_np, chunks=1000)
    >>> r = exact_auc(y, s, ranges=8, scheduler="threads")
    >>> one = sm.RankAUC().update(y_np, s_np)
    >>> r.auc == one.finalize().auc, r.n_pos, r.n_neg
    (True, 5030, 4970)
    >>> abs(r.average_precision - one.average_precision()) < 1e-12
    True
    >>> len(r.meta["cuts"]) + 1, max(r.meta["distinct"]) < len(np.unique(s_np))
    (8, True)
    """
    ranges = None if ranges is None else check_count(ranges, "ranges", 1, True)
    passes = check_count(passes, "passes", 1)
    _check_split(split_every)
    pieces, offsets = _partitions([y, s] + ([sample_weight] if sample_weight is not None else []))
    if not pieces:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    weighted = sample_weight is not None
    if cuts is not None:
        cuts = _ranges.check_cuts(cuts)
        if ranges is not None and ranges != cuts.shape[0] + 1:
            raise ValueError(f"ranges={ranges} but {cuts.shape[0]} cuts make {cuts.shape[0] + 1} ranges")
    else:
        cuts = range_cuts(
            s, ranges or min(len(pieces), 256), samples_per_partition=samples_per_partition, seed=seed, **compute_kwargs
        )
    R = cuts.shape[0] + 1
    passes = min(passes, R)
    stats = []
    for g in range(passes):  # ranges lo .. hi-1, each merged by a tree of its own
        lo, hi = g * R // passes, (g + 1) * R // passes
        edges = [lo + j * (hi - lo) // min(hi - lo, RANGE_GROUPS) for j in range(min(hi - lo, RANGE_GROUPS) + 1)]
        route = dask.delayed(_route_partition, pure=True, nout=len(edges))
        outs = [
            route(cuts, lo, hi, i, off, weighted, edges, *parts) for i, (parts, off) in enumerate(zip(pieces, offsets))
        ]
        tot = dask.delayed(_ranges.range_totals, pure=True)(weighted, *[o[0] for o in outs])
        trees = [_tree([o[1 + j] for o in outs], _merge_groups, split_every) for j in range(len(edges) - 1)]
        st = [dask.delayed(_group_stats, pure=True)(tot, a, weighted, t) for a, t in zip(edges, trees)]
        totals, got = dask.compute(tot, st, **compute_kwargs)
        stats.extend(s for group in got for s in group)
    if totals["rows"] == 0:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    return _ranges.range_result(totals, weighted, stats, cuts=cuts, ranges=R, passes=passes)
