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
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def test_on_a_two_process_cluster(cluster_client):
    for make, args, w, _ in _cases():
        chunks = ((1, 0, 100, 13, 0, 90, 96),)
        dargs = [da.from_array(a, chunks=chunks if a.ndim == 1 else (chunks[0], -1)) for a in args]
        dw = da.from_array(w, chunks=chunks) if w is not None else None
        # the single-process reference first: it compiles and caches every
        # kernel before the workers load them (two processes compiling the
        # same kernel at once can race on Numba's cache files)
        want = _single(make, args, w)
        got = evaluate(make(), *dargs, sample_weight=dw).compute()
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


def test_distributed_silhouette_blas_path_and_score():
    X, labels = _blobs(600, 40, 3, 2)  # d >= 32: BLAS tiles where available
    want = sm.silhouette_score(X, labels)
    dX = da.from_array(X, chunks=(150, 20))  # columns are gathered into one chunk
    got = float(dask_silhouette_score(dX, da.from_array(labels, chunks=100)).compute())
    assert got == pytest.approx(want, rel=1e-12)


def test_distributed_silhouette_precomputed():
    X, labels = _blobs(300, 3, 3, 3)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    want = sm.silhouette_samples(D, labels, metric="precomputed", convention="sklearn")
    got = dask_silhouette_samples(da.from_array(D, chunks=(70, 300)), labels, metric="precomputed", convention="sklearn")
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
