"""Dask evaluation: one accumulator per partition, merged by a tree, equals
the single-process answer, on the threaded scheduler and on a real
two-process cluster."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
from streammetrics.dask import compute, evaluate  # noqa: E402

from .registry import CASES  # noqa: E402

N = 2_000
rng = np.random.default_rng(0)
Y = (rng.random(N) < 0.4).astype(np.int64)
S = rng.random(N)
W = rng.random(N) * 2
YR = rng.normal(size=N) * 5 + 1e6
PR = YR + rng.normal(size=N)
UNEVEN = ((1, 0, 600, 13, 0, 900, 486),)


def _cases():
    """(template factory, numpy args, weights to use, exact state expected): every
    registry row, so every public accumulator runs under dask."""
    out = []
    for case in CASES:
        arrays, w = case.data(np.random.default_rng(7))
        takes = case.make().takes_weights
        out.append((case.make, arrays, W[: len(arrays[0])] if takes else None, case.exact))
    return out


CASE_IDS = [c.name for c in CASES]


def _single(make, args, w):
    return make().update(*args, sample_weight=w)


def _assert_same(got, want, exact):
    assert type(got) is type(want) and got.n == want.n
    if exact:
        assert got == want  # identical state
        return
    a, b = dict(got.finalize()), dict(want.finalize())
    for k in a:
        if isinstance(a[k], list):  # class labels
            assert a[k] == b[k]
            continue
        np.testing.assert_allclose(a[k], b[k], rtol=1e-10, atol=1e-300, err_msg=k)


@pytest.mark.parametrize("case", range(len(_cases())), ids=CASE_IDS)
@pytest.mark.parametrize("chunks", [50, ((1, 0, 100, 13, 0, 90, 96),)])
@pytest.mark.parametrize("weighted", [False, True])
def test_threaded_equals_single_process(case, chunks, weighted):
    make, args, w, exact = _cases()[case]
    if weighted and w is None:
        pytest.skip("this accumulator takes no weights")
    w = w if weighted else None
    want = _single(make, args, w)
    row_chunks = chunks[0] if isinstance(chunks, tuple) else chunks
    dargs = [da.from_array(a, chunks=chunks if a.ndim == 1 else (row_chunks, -1)) for a in args]
    dw = da.from_array(w, chunks=chunks) if weighted else None
    template = make()
    lazy = evaluate(template, *dargs, sample_weight=dw, split_every=3)
    from dask.delayed import Delayed

    assert isinstance(lazy, Delayed)
    assert template.n == 0
    got = lazy.compute(scheduler="threads")
    _assert_same(got, want, exact=exact and not weighted)


def test_chunks_are_aligned_automatically_and_frames_work():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    y = da.from_array(Y, chunks=300)
    s = da.from_array(S, chunks=700)  # different chunks: rechunked to y's
    got = compute(sm.BinaryConfusion(threshold=0.5), y, s)
    assert got == _single(lambda: sm.BinaryConfusion(threshold=0.5), (Y, S), None)
    frame = dd.from_pandas(pd.DataFrame({"y": Y, "s": S, "w": W}), npartitions=5)
    got = compute(sm.ProbabilityScores(), frame["y"], frame["s"], sample_weight=frame["w"])
    _assert_same(got, _single(sm.ProbabilityScores, (Y, S), W), exact=False)


def test_bad_partition_is_named():
    s = S.copy()
    s[1234] = np.nan
    with pytest.raises(ValueError, match=r"partition 4 \(rows from 1000\): p\[234\] = nan"):
        compute(sm.BinaryConfusion(threshold=0.5), da.from_array(Y, chunks=250), da.from_array(s, chunks=250))


def test_template_rules():
    with pytest.raises(ValueError, match="must be empty"):
        evaluate(sm.BinaryConfusion().update([1], [1]), da.from_array(Y), da.from_array(Y))
    with pytest.raises(TypeError, match="dask arrays"):
        evaluate(sm.BinaryConfusion(), Y, Y)
    with pytest.raises(TypeError, match="accumulator"):
        evaluate(object(), da.from_array(Y))
    with pytest.raises(ValueError, match="rows"):
        evaluate(sm.BinaryConfusion(), da.from_array(Y), da.from_array(Y[:-1]))


@pytest.fixture(scope="module")
def cluster_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_on_a_two_process_cluster(cluster_client):
    wants, lazies = [], []
    for make, args, w, _ in _cases():
        chunks = ((1, 0, 100, 13, 0, 90, 96),)
        dargs = [da.from_array(a, chunks=chunks if a.ndim == 1 else (chunks[0], -1)) for a in args]
        dw = da.from_array(w, chunks=chunks) if w is not None else None
        # every single-process reference first: it compiles and caches every
        # kernel before the workers load them (two processes compiling the
        # same kernel at once can race on Numba's cache files)
        wants.append(_single(make, args, w))
        lazies.append(evaluate(make(), *dargs, sample_weight=dw))
    # every accumulator in one computation: the workers take them in parallel
    for got, want in zip(dask.compute(*lazies), wants):
        _assert_same(got, want, exact=False)
    s = S.copy()
    s[5] = 7.0
    with pytest.raises(ValueError, match=r"partition 0 \(rows from 0\): p\[5\] = 7.0: probabilities"):
        compute(sm.ProbabilityScores(), da.from_array(Y, chunks=500), da.from_array(s, chunks=500))


# ------------------------------------------------------------- silhouette
from streammetrics.dask import silhouette_samples as dask_silhouette_samples  # noqa: E402
from streammetrics.dask import silhouette_score as dask_silhouette_score  # noqa: E402


def _blobs(n, d, k, seed):
    r = np.random.default_rng(seed)
    centers = r.normal(scale=4, size=(k, d))
    labels = r.integers(0, k, n)
    return centers[labels] + r.normal(size=(n, d)), labels * 7 - 3


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "manhattan", "cosine"])
@pytest.mark.parametrize("convention", ["seed", "sklearn"])
def test_distributed_silhouette_equals_single_process(metric, convention):
    X, labels = _blobs(700, 5, 4, 1)
    want = sm.silhouette_samples(X, labels, convention=convention, metric=metric)
    dX = da.from_array(X, chunks=((100, 250, 1, 349), 5))
    got = dask_silhouette_samples(dX, labels, convention=convention, metric=metric, block_size=32, split_every=2)
    assert got.chunks[0] == dX.chunks[0]
    np.testing.assert_allclose(got.compute(scheduler="threads"), want, rtol=1e-12, atol=1e-14)


def test_distributed_silhouette_score_of_wide_column_chunked_data():
    X, labels = _blobs(600, 40, 3, 2)
    want = sm.silhouette_score(X, labels)
    dX = da.from_array(X, chunks=(150, 20))  # columns are gathered into one chunk
    got = float(dask_silhouette_score(dX, da.from_array(labels, chunks=100)).compute())
    assert got == pytest.approx(want, rel=1e-12)


def test_distributed_silhouette_precomputed():
    X, labels = _blobs(300, 3, 3, 3)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    want = sm.silhouette_samples(D, labels, metric="precomputed", convention="sklearn")
    got = dask_silhouette_samples(
        da.from_array(D, chunks=(70, 300)), labels, metric="precomputed", convention="sklearn"
    )
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12)


def test_distributed_silhouette_errors():
    X, labels = _blobs(100, 3, 2, 4)
    X[57, 2] = np.inf
    with pytest.raises(ValueError, match=r"X\[57, 2\] = inf"):
        dask_silhouette_samples(da.from_array(X, chunks=20), labels).compute()
    with pytest.raises(ValueError, match="two non-empty clusters"):
        dask_silhouette_samples(da.from_array(X, chunks=20), np.zeros(100, int))
    with pytest.raises(ValueError, match="convention"):
        dask_silhouette_samples(da.from_array(X, chunks=20), labels, convention="x")
    with pytest.raises(TypeError, match="dask array"):
        dask_silhouette_samples(X, labels)


def test_distributed_silhouette_on_a_two_process_cluster(cluster_client):
    X, labels = _blobs(900, 6, 5, 5)
    want = sm.silhouette_samples(X, labels)
    got = dask_silhouette_samples(da.from_array(X, chunks=200), labels).compute()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# ------------------------------------------- exact AUC by score ranges
from fractions import Fraction  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from streammetrics.dask import RangeResult, exact_auc, range_cuts  # noqa: E402


def _brute_auc(y, s, w=None):
    """The Mann-Whitney U over every pair, as an exact fraction of safe(P N)."""
    y = np.asarray(y)
    w = np.ones(len(y), np.int64) if w is None else w
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    u = Fraction(0)
    for i in pos:
        for j in neg:
            if s[i] > s[j]:
                u += Fraction(w[i]) * Fraction(w[j])
            elif s[i] == s[j]:
                u += Fraction(w[i]) * Fraction(w[j]) / 2
    pn = (
        Fraction(w[pos].sum()) * Fraction(w[neg].sum())
        if w.dtype.kind == "i"
        else sum(map(Fraction, w[pos])) * sum(map(Fraction, w[neg]))
    )
    return u / (pn if pn else 1)


def _brute_ap(y, s):
    """sum over positives of the precision at its score, over P, in exact fractions."""
    y, s = np.asarray(y), np.asarray(s)
    P = int(y.sum())
    if P == 0:
        return Fraction(0)
    total = Fraction(0)
    for v in np.unique(s):
        at = s >= v
        pos_here = int(y[s == v].sum())
        total += Fraction(pos_here) * Fraction(int(y[at].sum()), int(at.sum()))
    return total / P


def _ranged(y, s, w=None, chunks=500, **kw):
    dy = da.from_array(np.asarray(y), chunks=chunks)
    ds = da.from_array(np.asarray(s, dtype=np.float64), chunks=chunks)
    dw = None if w is None else da.from_array(w, chunks=chunks)
    kw.setdefault("scheduler", "sync")
    return exact_auc(dy, ds, sample_weight=dw, **kw)


def _assert_unweighted(r, y, s):
    one = sm.RankAUC().update(y, s)
    want = one.finalize()
    assert r.auc == want.auc  # bit for bit
    assert (r.n_pos, r.n_neg, r.n) == (want.n_pos, want.n_neg, want.n)
    assert r.auc_lower == r.auc == r.auc_upper
    assert r.average_precision == pytest.approx(one.average_precision(), rel=1e-12, abs=1e-300)
    # every distinct score lands in exactly one range
    assert sum(r.meta["distinct"]) == len(np.unique(np.asarray(s, dtype=np.float64)))


def test_ranges_equal_single_process_and_brute_force():
    rng = np.random.default_rng(3)
    y = (rng.random(700) < 0.35).astype(np.int64)
    s = np.round(rng.normal(size=700) + y, 1)  # heavy ties
    r = _ranged(y, s, chunks=((100, 0, 250, 1, 0, 349),), ranges=6)
    assert isinstance(r, RangeResult)
    _assert_unweighted(r, y, s)
    assert r.auc == float(_brute_auc(y, s))  # the exact rational, rounded once
    assert abs(r.average_precision - float(_brute_ap(y, s))) <= 2e-16
    from sklearn.metrics import average_precision_score, roc_auc_score

    assert r.auc == pytest.approx(roc_auc_score(y, s), rel=1e-14)
    assert r.average_precision == pytest.approx(average_precision_score(y, s), rel=1e-12)


def test_cuts_on_tied_scores_keep_every_tie_in_one_range():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 900)
    s = rng.integers(0, 7, 900).astype(np.float64)  # 7 distinct scores, each on many rows
    # cut points at the tied values themselves, and between them
    for cuts in ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.5, 3.0], [3.0], [-1.0, 100.0], []):
        r = _ranged(y, s, cuts=cuts, chunks=128)
        _assert_unweighted(r, y, s)
        assert r.meta["ranges"] == len(cuts) + 1
    # one score on 80% of the rows: sampled cuts fall on it, and it stays whole
    s2 = np.where(rng.random(900) < 0.8, 0.5, rng.random(900))
    r = _ranged(y, s2, ranges=16, chunks=100)
    _assert_unweighted(r, y, s2)
    assert r.meta["ranges"] < 16


def test_single_class_all_equal_and_empty_partitions():
    s = np.linspace(0, 1, 300)
    for y in (np.ones(300, np.int64), np.zeros(300, np.int64)):
        r = _ranged(y, s, ranges=4, chunks=((0, 100, 0, 200, 0),))
        _assert_unweighted(r, y, s)
        assert r.auc == 0.0  # the guard
        assert r.average_precision == (1.0 if y[0] else 0.0)
    y = np.arange(300) % 3 == 0
    same = np.full(300, 0.25)
    r = _ranged(y.astype(np.int64), same, ranges=8, chunks=50)
    _assert_unweighted(r, y.astype(np.int64), same)
    assert r.auc == 0.5 and r.meta["ranges"] == 1
    # more ranges than rows, and a single row
    r = _ranged([1, 0, 1], [0.3, 0.1, 0.2], ranges=50, chunks=1)
    _assert_unweighted(r, np.array([1, 0, 1]), np.array([0.3, 0.1, 0.2]))
    r = _ranged([1], [0.3], ranges=3, chunks=1)
    assert (r.auc, r.average_precision, r.n) == (0.0, 1.0, 1)


def test_weighted_within_1e_12_and_zero_weights():
    rng = np.random.default_rng(5)
    n = 1500
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 2)
    w = rng.random(n) * 3
    w[::7] = 0.0
    one = sm.RankAUC().update(y, s, sample_weight=w)
    want = one.finalize()
    for passes in (1, 3):
        r = _ranged(y, s, w, chunks=((200, 0, 600, 700),), ranges=7, passes=passes)
        assert r.weighted and r.n == n
        assert r.auc == pytest.approx(want.auc, rel=1e-12)
        assert r.n_pos == pytest.approx(want.n_pos, rel=1e-12)
        assert r.average_precision == pytest.approx(one.average_precision(), rel=1e-12)
    small = slice(0, 120)
    wq = np.round(w[small] * 8) / 8  # binary fractions: the brute force is exact
    r = _ranged(y[small], s[small], wq, chunks=30, ranges=3)
    assert r.auc == pytest.approx(float(_brute_auc(y[small], s[small], wq)), rel=1e-13)
    zero = _ranged(y[:10], s[:10], np.zeros(10), chunks=4, ranges=2)
    assert (zero.auc, zero.average_precision, zero.n_pos, zero.n) == (0.0, 0.0, 0.0, 10)


def test_passes_and_cut_balance():
    rng = np.random.default_rng(6)
    n = 40_000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y  # distinct scores
    base = _ranged(y, s, chunks=5000, ranges=8)
    _assert_unweighted(base, y, s)
    assert max(base.meta["distinct"]) < 2 * n / 8  # the ranges share the scores about evenly
    for passes in (2, 8, 50):
        r = _ranged(y, s, chunks=5000, cuts=base.meta["cuts"], passes=passes)
        assert (r.auc, r.average_precision) == (base.auc, base.average_precision)
        assert r.meta["distinct"] == base.meta["distinct"]
    cuts = range_cuts(da.from_array(s, chunks=5000), 8, scheduler="sync")
    assert np.array_equal(cuts, base.meta["cuts"]) and np.all(np.diff(cuts) > 0)


def test_frames_and_onehot_labels():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(pd.DataFrame({"y": Y, "s": S, "w": W}), npartitions=5)
    r = exact_auc(frame["y"], frame["s"], ranges=4, scheduler="sync")
    _assert_unweighted(r, Y, S)
    r = exact_auc(frame["y"], frame["s"], sample_weight=frame["w"], ranges=4, scheduler="sync")
    assert r.auc == pytest.approx(sm.auc(Y, S, sample_weight=W), rel=1e-12)
    g = np.stack([1 - Y, Y], axis=1)
    r = exact_auc(da.from_array(g, chunks=(300, 2)), da.from_array(S, chunks=300), ranges=3, scheduler="sync")
    _assert_unweighted(r, Y, S)


def test_ranges_errors():
    y, s = da.from_array(Y, chunks=250), S.copy()
    s[1234] = np.inf
    with pytest.raises(ValueError, match=r"partition 4 \(rows from 1000\): s\[234\] = inf"):
        exact_auc(y, da.from_array(s, chunks=250), ranges=3, scheduler="sync")
    bad = Y.copy()
    bad[7] = 2
    with pytest.raises(ValueError, match=r"partition 0 \(rows from 0\): y\[7\] = 2"):
        exact_auc(da.from_array(bad, chunks=250), da.from_array(S, chunks=250), cuts=[0.5])
    with pytest.raises(ValueError, match="empty"):
        exact_auc(da.zeros(0, chunks=1), da.zeros(0, chunks=1), ranges=2, scheduler="sync")
    ds = da.from_array(S, chunks=250)
    with pytest.raises(ValueError, match=r"cuts\[2\] = 0.2: cut points must be strictly increasing"):
        exact_auc(y, ds, cuts=[0.1, 0.3, 0.2])
    with pytest.raises(ValueError, match=r"cuts\[1\] = nan: cut points must be finite"):
        exact_auc(y, ds, cuts=[0.1, np.nan])
    with pytest.raises(ValueError, match="4 ranges"):
        exact_auc(y, ds, cuts=[0.1, 0.2, 0.3], ranges=3)
    with pytest.raises(TypeError, match="ranges must be an int"):
        exact_auc(y, ds, ranges=2.5)
    with pytest.raises(ValueError, match="ranges must be at least 1"):
        exact_auc(y, ds, ranges=0)
    with pytest.raises(ValueError, match="passes must be at least 1"):
        exact_auc(y, ds, passes=0)
    with pytest.raises(TypeError, match="dask arrays"):
        exact_auc(Y, S)


@st.composite
def _ranged_data(draw):
    n = draw(st.integers(1, 60))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.int64)
    pool = draw(st.sampled_from([3, 10, 1000]))
    s = np.array(draw(st.lists(st.integers(-pool, pool), min_size=n, max_size=n)), np.float64) / 4
    cuts_at = draw(st.lists(st.integers(0, n - 1), max_size=4))
    edges = sorted(draw(st.lists(st.integers(0, n), max_size=6)))  # repeats: empty partitions
    sizes = np.diff([0, *edges, n]).tolist()
    return y, s, tuple(sizes), sorted(set(s[cuts_at].tolist())), draw(st.integers(1, 6))


@settings(max_examples=40)
@given(_ranged_data(), st.booleans())
def test_ranges_hypothesis(data, sampled):
    y, s, chunks, cuts, ranges = data
    kw = {"ranges": ranges} if sampled else {"cuts": cuts}
    r = _ranged(y, s, chunks=(chunks,), **kw)
    _assert_unweighted(r, y, s)
    assert r.auc == float(_brute_auc(y, s))
    assert abs(r.average_precision - float(_brute_ap(y, s))) <= 4e-16


def test_ranges_on_a_two_process_cluster(cluster_client):
    rng = np.random.default_rng(8)
    n = 60_000
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 3)
    w = rng.random(n)
    # in this process first: the kernels are compiled and cached before the
    # workers load them
    _ranged(y[:50], s[:50], chunks=10, ranges=2)
    _ranged(y[:50], s[:50], w[:50], chunks=10, ranges=2)
    r = _ranged(y, s, chunks=7000, ranges=6, scheduler=None)
    _assert_unweighted(r, y, s)
    r = _ranged(y, s, w, chunks=7000, ranges=6, passes=2, scheduler=None)
    assert r.auc == pytest.approx(sm.auc(y, s, sample_weight=w), rel=1e-12)


def test_ranges_count_past_int64():
    """Runs whose 2U passes 2**63 (2 n_pos n_neg of range 0 is about 1.8e19):
    128-bit within a range, Python ints across ranges."""
    from streammetrics.metrics.ranking.ranges import combine as _combine
    from streammetrics.metrics.ranking.ranges import range_stats as _range_stats

    big = 3 * 10**9
    runs = [
        (np.array([0.1, 0.2]), np.array([[big, 1], [2, big]], np.int64)),
        (np.array([0.5, 0.7]), np.array([[big, big - 5], [big + 7, 3]], np.int64)),
    ]
    masses = [[int(ab[0].sum()), int(ab[1].sum())] for _, ab in runs]
    P, N = sum(m[0] for m in masses), sum(m[1] for m in masses)
    totals = {"rows": P + N, "masses": masses, "total": [P, N], "above": [[masses[1][0], masses[1][1]], [0, 0]]}
    stats = [_range_stats(totals, r, False, run) for r, run in enumerate(runs)]
    ab = np.concatenate([a for _, a in runs], axis=1)
    u2, below = 0, 0  # the brute force over the four scores, in Python ints
    for k in range(4):
        u2 += int(ab[0, k]) * (2 * below + int(ab[1, k]))
        below += int(ab[1, k])
    assert stats[0][0] == int(ab[0, 0]) * int(ab[1, 0]) + int(ab[0, 1]) * (2 * int(ab[1, 0]) + int(ab[1, 1]))
    auc, ap = _combine(totals, False, stats)
    assert auc == Fraction(u2, 2 * P * N).__float__()
    tp = fp = 0
    want = Fraction(0)
    for k in range(3, -1, -1):
        tp, fp = tp + int(ab[0, k]), fp + int(ab[1, k])
        want += Fraction(int(ab[0, k]) * tp, tp + fp)
    assert ap == pytest.approx(float(want / P), rel=1e-15)


def test_ranges_totals_and_combine_take_linear_time_and_keep_every_bit():
    """Many ranges (cut points): the masses above each range and the cross terms are running sums, exact for
    counts and correctly rounded (as ``math.fsum``) for weights."""
    import math
    import time

    from streammetrics.metrics.ranking.ranges import combine, range_totals

    rng = np.random.default_rng(2)
    small = [(10, rng.random((50, 2)) * 10.0 ** rng.integers(-8, 8, (50, 2))) for _ in range(3)]
    got = range_totals(True, *small)
    masses = got["masses"]
    for r in range(50):
        assert got["above"][r] == [math.fsum(m[c] for m in masses[r + 1 :]) for c in range(2)]
    ranges = 30_000
    infos = [(ranges, rng.integers(0, 5, (ranges, 2)).astype(float)) for _ in range(2)]
    t0 = time.perf_counter()
    for weighted in (False, True):
        totals = range_totals(weighted, *infos)
        stats = [(0, 0.0, 1)] * ranges
        combine(totals, weighted, stats)
    assert time.perf_counter() - t0 < 10.0  # quadratic sums take minutes here


@pytest.mark.parametrize("weighted", [False, True])
def test_many_cut_points_merge_in_a_bounded_number_of_tasks(weighted, monkeypatch):
    """10,000 cut points (ranges of a few rows, many empty): the ranges are merged in at most ``RANGE_GROUPS`` tasks
    a pass, not one tree of tasks each (dask's cost per task made 3,000 cuts take minutes, 100,000 never end)."""
    import streammetrics.dask as smd

    rng = np.random.default_rng(8)
    y, s = rng.integers(0, 2, 6000), np.round(rng.random(6000), 3)  # ties across the cuts' neighbours
    w = rng.random(6000) + 0.5 if weighted else None
    cuts = np.linspace(0.0, 1.0, 10_001)[1:-1]
    groups = []
    real = smd._group_stats
    monkeypatch.setattr(
        smd, "_group_stats", lambda tot, first, wt, runs: groups.append(len(runs)) or real(tot, first, wt, runs)
    )
    r = _ranged(y, s, w, chunks=1500, cuts=cuts, passes=2)
    assert r.meta["ranges"] == 10_000 and sum(groups) == 10_000 and len(groups) <= 2 * smd.RANGE_GROUPS
    if weighted:
        assert r.auc == pytest.approx(sm.RankAUC().update(y, s, sample_weight=w).finalize().auc, rel=1e-12)
    else:
        _assert_unweighted(r, y, s)
