"""Evaluate dask collections with any streammetrics accumulator.

Every accumulator is a small, mergeable, picklable state, so a dask partition
becomes one accumulator and a tree of merges gives exactly the single-process
answer: counts identical, sums equal to 1e-12 relative. Nothing here is a
scheduler of its own: the graph runs on whichever dask scheduler is active (the
threaded default, processes, or a ``distributed`` cluster).

Following dask's conventions, :func:`evaluate` is lazy and returns a
``dask.delayed.Delayed``; :func:`compute` is the eager convenience.
:func:`exact_auc` gives the exact AUC and average precision without ever
holding every distinct score in one process: the scores are cut into ranges by
value, each range is merged on its own, and the ranges are combined with the
cross terms of the Mann-Whitney statistic.
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

import numbers

import numpy as np

from ._protocol.base import Accumulator
from ._protocol.errors import NoObservationsError, in_context
from .metrics.ranking.ranges import RangeResult, combine, merge_pieces, range_stats, range_totals, route_rows

__all__ = ["evaluate", "compute", "exact_auc", "range_cuts", "RangeResult",
           "silhouette_samples", "silhouette_score"]


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



# ---------------------------------------------------------------------------
# exact AUC and average precision by score ranges

def _check_ranges(ranges):
    if ranges is None:
        return None
    if isinstance(ranges, (bool, np.bool_)) or not isinstance(ranges, numbers.Integral):
        raise TypeError(f"ranges must be an int or None, got {type(ranges).__name__}")
    if ranges < 1:
        raise ValueError(f"ranges must be at least 1, got {ranges}")
    return int(ranges)


def _check_count(value, name: str, low: int):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


def _check_cuts(cuts) -> np.ndarray:
    """``cuts`` as a float64 vector of finite, strictly increasing scores."""
    try:
        arr = np.asarray(cuts, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"cuts must be a 1-D array of real numbers, got {type(cuts).__name__}") from None
    if arr.ndim != 1:
        raise ValueError(f"cuts must be a 1-D array of scores, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"cuts[{bad[0]}] = {float(arr[bad[0]])!r}: cut points must be finite")
    bad = np.flatnonzero(np.diff(arr) <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(f"cuts[{i}] = {float(arr[i])!r}: cut points must be strictly increasing "
                         f"(cuts[{i - 1}] = {float(arr[i - 1])!r})")
    return arr + 0.0  # -0.0 as 0.0


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


def _cuts_of_samples(samples, ranges: int) -> np.ndarray:
    """Cut points splitting the sampled scores (each standing for its
    partition's rows) into ``ranges`` parts of about equal row counts.

    Cuts are score values, so a score repeated more often than one range
    holds gives fewer, distinct cuts: all its rows stay in one range.
    """
    values = [smp for _, smp in samples if smp.size]
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


def range_cuts(s, ranges: int, *, samples_per_partition: int | None = None, seed: int = 0,
               **compute_kwargs) -> np.ndarray:
    """Cut points splitting the scores ``s`` into about ``ranges`` ranges of equal size.

    One pass over ``s`` draws up to ``samples_per_partition`` scores from each
    partition (default: enough for about 200 per range over all partitions,
    at least 256); their quantiles, each sample counting for its partition's
    rows, are the cuts. The ranges are ``(-inf, cuts[0])``, ``[cuts[0],
    cuts[1])``, ..., ``[cuts[-1], inf)``. Cuts are score values, never row
    positions: all rows of one score fall in one range, and a score that alone
    fills more than a range merges ranges (fewer cuts). Balance only sets how
    work and memory spread over the workers; any cuts give the exact result.

    Returns a float64 array of at most ``ranges - 1`` strictly increasing
    scores (``compute_kwargs`` go to ``dask.compute``).

    >>> import dask.array as da
    >>> import numpy as np
    >>> from streammetrics.dask import range_cuts
    >>> s = da.from_array(np.arange(1000) / 1000, chunks=250)
    >>> range_cuts(s, 4)
    array([0.25, 0.5 , 0.75])
    """
    ranges = _check_ranges(ranges)
    (pieces, _) = _partitions([s])
    if samples_per_partition is None:
        samples_per_partition = max(256, -(-200 * ranges // max(len(pieces), 1)))
    k = _check_count(samples_per_partition, "samples_per_partition", 1)
    seed = _check_count(seed, "seed", 0)
    sample = dask.delayed(_sample_partition, pure=True)
    samples = dask.compute(*[sample(i, k, seed, parts[0]) for i, parts in enumerate(pieces)],
                           **compute_kwargs)
    return _cuts_of_samples(samples, ranges)


def _route_partition(cuts, lo: int, hi: int, index: int, offset, weighted: bool, *parts):
    """One partition's rows, checked and routed by score range (:func:`route_rows`)."""
    args = [np.asarray(p) for p in parts]
    w = args.pop() if weighted else None
    where = f"partition {index}" + (f" (rows from {offset})" if offset is not None else "")
    return route_rows(cuts, lo, hi, where, args, w)


def _exact_graph(pieces, offsets, weighted, cuts, lo, hi, split_every):
    """The delayed ``(totals, [stats of ranges lo .. hi-1])`` of one pass."""
    route = dask.delayed(_route_partition, pure=True, nout=1 + hi - lo)
    merge = dask.delayed(merge_pieces, pure=True)
    outs = [route(cuts, lo, hi, i, off, weighted, *parts)
            for i, (parts, off) in enumerate(zip(pieces, offsets))]
    totals = dask.delayed(range_totals, pure=True)(weighted, *[o[0] for o in outs])
    stats = []
    for j in range(hi - lo):
        level = [o[1 + j] for o in outs]
        while len(level) > 1:
            level = [merge(*level[i : i + split_every]) for i in range(0, len(level), split_every)]
        stats.append(dask.delayed(range_stats, pure=True)(totals, lo + j, weighted, level[0]))
    return totals, stats


def exact_auc(y, s, *, sample_weight=None, ranges: int | None = None, cuts=None,
              passes: int = 1, samples_per_partition: int | None = None, seed: int = 0,
              split_every: int = 8, **compute_kwargs) -> RangeResult:
    """Exact AUC and average precision of dask collections, by score ranges.

    :func:`evaluate` with ``RankAUC()`` merges every partition's state into
    one, which holds every distinct score: the whole state must fit one
    process. This path never gathers it. The scores are cut into ranges by
    value (:func:`range_cuts`, one pass over ``s`` drawing a sample); each
    partition's rows are checked, sorted and routed to their ranges, and the
    runs of one range (its distinct scores with their positive and negative
    counts) are merged by a tree of tasks of that range only. A range then
    gives its positives ``n_pos_r``, negatives ``n_neg_r`` and the
    Mann-Whitney ``U_r`` of its own pairs, and, every positive of a higher
    range outranking every negative of a lower one,

        ``U = sum_r U_r + sum_{r < r'} n_neg_r n_pos_r'``.

    The average precision ``sum_k (R_k - R_{k-1}) P_k`` splits the same
    way: the precision at a score of range ``r`` counts the positives and
    negatives above the range, known from per-range counts that every
    partition reports as it is routed, so each range adds its share on its
    own.

    Without weights ``U`` is an exact integer (Python ints for the cross
    terms) and ``auc`` is ``U / safe(n_pos n_neg)`` rounded once: bit for bit
    the value of ``RankAUC().update(y, s).finalize().auc`` in one process.
    With weights the sums are compensated, within 1e-12 relative of it. The
    average precision is a compensated sum of the terms, within 1e-12
    relative of ``RankAUC.average_precision()`` (which adds rounded recall
    steps instead).

    Parameters
    ----------
    y, s : dask.array.Array or dask.dataframe.Series
        0/1 labels (or the n x 2 one-hot matrix) and finite scores, chunked
        alike along the rows, as :func:`evaluate` takes them.
    sample_weight : dask collection, optional
        Non-negative per-row weights.
    ranges : int, optional
        How many ranges to cut the scores into (default: one per partition,
        at most 256). A task holds one range's run, about
        ``24 * distinct / ranges`` bytes; more ranges spread the state thinner.
    cuts : array-like, optional
        The cut points themselves (finite, strictly increasing), skipping the
        sampling pass; ``ranges`` is then ``len(cuts) + 1``.
    passes : int, default 1
        Split the ranges into this many groups, computed one after the other,
        each in one pass over the data: the cluster then holds at most one
        group's runs at a time (about ``1 / passes`` of the state) at the cost
        of reading the data ``passes`` times.
    samples_per_partition, seed
        As in :func:`range_cuts`.
    split_every : int, default 8
        Fan-in of each range's merge tree.
    compute_kwargs
        Go to ``dask.compute`` (e.g. ``scheduler="threads"``).

    Returns
    -------
    RangeResult
        ``auc``, ``average_precision``, ``n_pos``, ``n_neg``, ``auc_lower``,
        ``auc_upper`` (both equal to ``auc``) and ``n``. A partition with bad
        data raises on the client, naming the partition and its first row.
        No rows at all is a ``ValueError``; a single class gives an AUC of 0
        (the specification's guard).

    Examples
    --------
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
    ranges = _check_ranges(ranges)
    passes = _check_count(passes, "passes", 1)
    if not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    inputs = [y, s] + ([sample_weight] if sample_weight is not None else [])
    pieces, offsets = _partitions(inputs)
    if not pieces:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    weighted = sample_weight is not None
    if cuts is not None:
        cuts = _check_cuts(cuts)
        if ranges is not None and ranges != cuts.shape[0] + 1:
            raise ValueError(f"ranges={ranges} but {cuts.shape[0]} cuts make {cuts.shape[0] + 1} ranges")
    else:
        if ranges is None:
            ranges = min(max(len(pieces), 1), 256)
        cuts = range_cuts(s, ranges, samples_per_partition=samples_per_partition, seed=seed,
                          **compute_kwargs)
    R = cuts.shape[0] + 1
    passes = min(passes, R)
    stats = []
    totals = None
    for g in range(passes):
        lo, hi = g * R // passes, (g + 1) * R // passes
        tot, st = _exact_graph(pieces, offsets, weighted, cuts, lo, hi, split_every)
        totals, got = dask.compute(tot, st, **compute_kwargs)
        stats.extend(got)
    if totals is None or totals["rows"] == 0:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    auc, ap = combine(totals, weighted, stats)
    P, N = totals["total"]
    values = {"auc": auc, "average_precision": ap, "n_pos": P, "n_neg": N,
              "auc_lower": auc, "auc_upper": auc, "n": totals["rows"]}
    meta = {"weighted": weighted, "cuts": cuts, "ranges": R, "passes": passes,
            "distinct": [d for _, _, d in stats]}
    return RangeResult("AUCScores", values, meta)
