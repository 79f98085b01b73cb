"""Silhouette: the specification's matrix form and the blockwise features form."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streammetrics._kernels import silhouette as kern
from streammetrics.metrics import silhouette_sums as sil_sums
from streammetrics.metrics.silhouette import silhouette, silhouette_samples, silhouette_score, silhouettes

METRICS = ["euclidean", "sqeuclidean", "manhattan", "cosine"]
HYPOTHESIS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SPEC_D = [[0, 1, 5, 6], [1, 0, 4, 5], [5, 4, 0, 1], [6, 5, 1, 0]]
SPEC_M = [[1, 0], [1, 0], [0, 1], [0, 1]]


# --------------------------------------------------------------------------
# naive references, written from the definitions


def naive_distances(X, metric):
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    D = np.empty((n, n))
    norms = np.sqrt((X * X).sum(axis=1))
    for i in range(n):
        diff = X - X[i]
        if metric == "euclidean":
            D[i] = np.sqrt((diff * diff).sum(axis=1))
        elif metric == "sqeuclidean":
            D[i] = (diff * diff).sum(axis=1)
        elif metric == "manhattan":
            D[i] = np.abs(diff).sum(axis=1)
        elif metric == "cosine":
            both = norms * norms[i]
            sim = np.where(both > 0, X @ X[i] / np.where(both > 0, both, 1.0), 0.0)
            D[i] = np.clip(1.0 - sim, 0.0, 2.0)
            D[i, i] = 0.0
        else:
            raise AssertionError(metric)
    return D


def naive_silhouettes(D, labels, convention):
    """Point by point: mean distance to the own cluster and to the others."""
    labels = np.asarray(labels)
    n = labels.shape[0]
    out = np.zeros(n)
    for i in range(n):
        own = labels[i]
        mates = labels == own
        size = mates.sum()
        if convention == "seed":
            a = D[i, mates].sum() / size
        else:
            if size == 1:
                out[i] = 0.0
                continue
            a = D[i, mates].sum() / (size - 1)
        b = min(D[i, labels == k].mean() for k in np.unique(labels) if k != own)
        top = max(a, b)
        out[i] = (b - a) / top if top > 0 else 0.0
    return out


def spec_silhouettes(d, m):
    """The specification's matrix formulas, literally."""
    d = np.asarray(d, dtype=float)
    m = np.asarray(m, dtype=float)
    sizes = m.sum(axis=0)
    D = d @ m / (sizes + (sizes == 0))
    a = (m * D).sum(axis=1)
    b = (D + 1e300 * m).min(axis=1)
    top = np.maximum(a, b)
    return (b - a) / (top + (top == 0))


def blobs(rng, n, k, d, spread=1.0, box=10.0):
    centers = rng.uniform(-box, box, size=(k, d))
    labels = rng.integers(0, k, size=n)
    labels[:k] = np.arange(k)  # every cluster non-empty
    X = centers[labels] + spread * rng.standard_normal((n, d))
    return X, labels


# --------------------------------------------------------------------------
# the specification


def test_spec_example():
    s = silhouettes(SPEC_D, SPEC_M)
    np.testing.assert_allclose(s, [0.909091, 0.888889, 0.888889, 0.909091], atol=5e-7)
    np.testing.assert_allclose(s, [10 / 11, 8 / 9, 8 / 9, 10 / 11], rtol=1e-15)
    assert silhouette(SPEC_D, SPEC_M) == pytest.approx(0.89899, abs=5e-6)
    assert isinstance(silhouette(SPEC_D, SPEC_M), float)


def test_spec_example_from_points():
    X = [[0.0], [1.0], [5.0], [6.0]]
    s = silhouette_samples(X, [0, 0, 1, 1])
    np.testing.assert_allclose(s, [10 / 11, 8 / 9, 8 / 9, 10 / 11], rtol=1e-14)
    pre = silhouette_samples(SPEC_D, [0, 0, 1, 1], metric="precomputed")
    np.testing.assert_allclose(pre, s, rtol=1e-14)
    # scikit-learn's convention: a = 1 instead of 0.5 for the first point
    s2 = silhouette_samples(X, [0, 0, 1, 1], convention="sklearn")
    np.testing.assert_allclose(s2, [4.5 / 5.5, 3.5 / 4.5, 3.5 / 4.5, 4.5 / 5.5], rtol=1e-14)


def test_silhouettes_formula_with_empty_cluster_and_any_dissimilarity():
    rng = np.random.default_rng(0)
    n = 40
    d = rng.uniform(-1, 5, size=(n, n))  # any dissimilarity, not symmetric
    lab = rng.integers(0, 3, size=n)
    lab[:3] = [0, 1, 2]
    m = np.zeros((n, 4))
    m[np.arange(n), lab] = 1  # column 3 stays empty: its mean distance is 0
    np.testing.assert_allclose(silhouettes(d, m), spec_silhouettes(d, m), rtol=1e-12, atol=1e-13)
    m_bool = m.astype(bool)
    np.testing.assert_allclose(
        silhouettes(d.astype(np.float32), m_bool), spec_silhouettes(d.astype(np.float32), m), rtol=1e-6, atol=1e-7
    )
    assert silhouette(d, m) == pytest.approx(spec_silhouettes(d, m).mean(), abs=1e-13)


@HYPOTHESIS
@given(n=st.integers(2, 60), k=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_silhouettes_matches_spec_formulas(n, k, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    d = naive_distances(X, "euclidean")
    lab = rng.integers(0, k, size=n)
    lab[:2] = [0, 1]
    m = np.eye(k)[lab]
    np.testing.assert_allclose(silhouettes(d, m), spec_silhouettes(d, m), rtol=1e-12, atol=1e-13)


# --------------------------------------------------------------------------
# the features form against the naive reference


@pytest.mark.parametrize("convention", ["seed", "sklearn"])
@pytest.mark.parametrize("metric", METRICS)
def test_blobs_against_naive(metric, convention):
    rng = np.random.default_rng(1)
    X, lab = blobs(rng, 2000, 5, 7)
    D = naive_distances(X, metric)
    expected = naive_silhouettes(D, lab, convention)
    got = silhouette_samples(X, lab, metric=metric, convention=convention)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11)
    pre = silhouette_samples(D, lab, metric="precomputed", convention=convention)
    np.testing.assert_allclose(pre, expected, rtol=0, atol=1e-12)


@HYPOTHESIS
@given(
    n=st.integers(2, 300),
    k=st.integers(2, 6),
    d=st.integers(2, 20),
    metric=st.sampled_from(METRICS),
    convention=st.sampled_from(["seed", "sklearn"]),
    block=st.one_of(st.none(), st.integers(1, 80)),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_blobs_against_naive(n, k, d, metric, convention, block, seed):
    rng = np.random.default_rng(seed)
    k = min(k, n)
    X, lab = blobs(rng, n, k, d, spread=float(rng.uniform(0.1, 3)))
    lab = lab * 3 - 5  # any integers
    expected = naive_silhouettes(naive_distances(X, metric), lab, convention)
    got = silhouette_samples(X, lab, metric=metric, convention=convention, block_size=block)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11)


# --------------------------------------------------------------------------
# scikit-learn


def _with_singletons(rng, n=1500, k=5, d=8):
    X, lab = blobs(rng, n, k, d)
    lab[[10, 500, 1200]] = [k, k + 1, k + 2]  # three points alone in their cluster
    return X, lab


@pytest.mark.parametrize("metric", METRICS + ["l1", "l2", "cityblock", "precomputed"])
def test_matches_sklearn(metric):
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(2)
    X, lab = _with_singletons(rng)
    if metric == "precomputed":
        X = skm.pairwise_distances(X)
    expected = skm.silhouette_samples(X, lab, metric=metric)
    got = silhouette_samples(X, lab, metric=metric, convention="sklearn")
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    assert got[[10, 500, 1200]].tolist() == [0.0, 0.0, 0.0]
    seed = silhouette_samples(X, lab, metric=metric)
    assert (seed[[10, 500, 1200]] == 1.0).all()  # alone: a = 0, so s = 1
    score = silhouette_score(X, lab, metric=metric, convention="sklearn")
    assert score == pytest.approx(skm.silhouette_score(X, lab, metric=metric), abs=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "precomputed"])
def test_sampled_score_matches_sklearn(metric):
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    X, lab = blobs(rng, 900, 4, 6)
    if metric == "precomputed":
        X = skm.pairwise_distances(X)
    for random_state in (0, 7, np.random.RandomState(5)):
        state2 = np.random.RandomState(5) if isinstance(random_state, np.random.RandomState) else random_state
        expected = skm.silhouette_score(X, lab, metric=metric, sample_size=300, random_state=state2)
        got = silhouette_score(X, lab, metric=metric, convention="sklearn", sample_size=300, random_state=random_state)
        assert got == pytest.approx(expected, abs=1e-10)
    full = silhouette_score(X, lab, metric=metric)
    g = silhouette_score(X, lab, metric=metric, sample_size=900, random_state=np.random.default_rng(0))
    assert g == pytest.approx(full, abs=1e-12)


def test_duplicates_and_far_from_origin_match_sklearn():
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(4)
    # integer coordinates: duplicates are exact and scikit-learn's Gram trick is exact too
    X = rng.integers(-3, 4, size=(400, 3)).astype(float)
    lab = rng.integers(0, 4, size=400)
    assert len(np.unique(X, axis=0)) < 400
    expected = skm.silhouette_samples(X, lab)
    np.testing.assert_allclose(silhouette_samples(X, lab, convention="sklearn"), expected, rtol=0, atol=1e-10)
    # every point duplicated: its twin sits at distance exactly 0
    X2 = np.repeat(rng.standard_normal((150, 4)) + 1e4, 2, axis=0)
    lab2 = np.repeat(rng.integers(0, 3, size=150), 2)
    expected = naive_silhouettes(naive_distances(X2, "euclidean"), lab2, "seed")
    np.testing.assert_allclose(silhouette_samples(X2, lab2), expected, rtol=0, atol=1e-10)


def test_all_points_identical_in_a_cluster():
    X = np.array([[1.0, 2.0]] * 3 + [[1.0, 2.0]] * 2)
    s = silhouette_samples(X, [0, 0, 0, 1, 1])
    assert s.tolist() == [0.0] * 5  # a = b = 0 is guarded to 0, not NaN


# --------------------------------------------------------------------------
# invariances


def test_block_size_does_not_matter():
    rng = np.random.default_rng(5)
    X, lab = blobs(rng, 500, 4, 9)
    for metric in METRICS:
        base = silhouette_samples(X, lab, metric=metric, block_size=500)
        for block in (1, 7, 64, 499, 10_000):
            got = silhouette_samples(X, lab, metric=metric, block_size=block)
            np.testing.assert_allclose(got, base, rtol=1e-12, atol=1e-13)
    D = naive_distances(X, "euclidean")
    base = silhouette_samples(D, lab, metric="precomputed")
    for block in (1, 7, 64, 500):
        assert np.array_equal(silhouette_samples(D, lab, metric="precomputed", block_size=block), base)


def test_panels_of_rows_match_one_panel():
    rng = np.random.default_rng(11)
    X, lab = blobs(rng, 500, 4, 6)
    for metric in METRICS:
        whole = silhouette_samples(X, lab, metric=metric, block_size=16)
        # a budget too small for the sums of all rows at once: panels of rows
        panels = silhouette_samples(X, lab, metric=metric, block_size=16, memory_budget=2**14)
        np.testing.assert_allclose(panels, whole, rtol=1e-12, atol=1e-13)


def test_thread_count_does_not_matter():
    rng = np.random.default_rng(6)
    X, lab = blobs(rng, 700, 3, 5)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = silhouette_samples(X, lab, block_size=32)
    finally:
        numba.set_num_threads(before)
    many = silhouette_samples(X, lab, block_size=32)
    assert np.array_equal(one, many)


@HYPOTHESIS
@given(seed=st.integers(0, 2**32 - 1), metric=st.sampled_from(METRICS))
def test_permutation_equivariance(seed, metric):
    rng = np.random.default_rng(seed)
    X, lab = blobs(rng, 120, 3, 4)
    perm = rng.permutation(120)
    s = silhouette_samples(X, lab, metric=metric)
    sp = silhouette_samples(X[perm], lab[perm], metric=metric)
    np.testing.assert_allclose(sp, s[perm], rtol=1e-12, atol=1e-13)
    # renaming the clusters changes nothing
    relabelled = silhouette_samples(X, np.array([17, -4, 9])[lab], metric=metric)
    np.testing.assert_allclose(relabelled, s, rtol=1e-12, atol=1e-13)


def test_input_kinds():
    rng = np.random.default_rng(7)
    X, lab = blobs(rng, 200, 3, 4)
    base = silhouette_samples(X, lab)
    np.testing.assert_allclose(silhouette_samples(X.tolist(), lab.tolist()), base, rtol=1e-13)
    np.testing.assert_allclose(silhouette_samples(np.asfortranarray(X), lab), base, rtol=1e-13)
    np.testing.assert_allclose(silhouette_samples(X, lab.astype(float)), base, rtol=1e-13)
    np.testing.assert_allclose(silhouette_samples(X, lab.astype(np.uint8)), base, rtol=1e-13)
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(silhouette_samples(X32, lab), silhouette_samples(X32.astype(float), lab), rtol=1e-13)
    Xi = rng.integers(-5, 5, size=(50, 3))
    li = np.arange(50) % 2 == 0
    np.testing.assert_allclose(
        silhouette_samples(Xi, li), naive_silhouettes(naive_distances(Xi, "euclidean"), li, "seed"), atol=1e-12
    )


# --------------------------------------------------------------------------
# data on disk


class RowsOnly:
    """An array-like with shape, dtype and row slicing only; it refuses to be
    converted whole and records the largest read."""

    def __init__(self, arr):
        self._arr = arr
        self.shape = arr.shape
        self.dtype = arr.dtype
        self.largest = 0

    def __getitem__(self, key):
        out = self._arr[key]
        self.largest = max(self.largest, len(out))
        return out

    def __array__(self, *args, **kwargs):
        raise AssertionError("the whole array was converted")


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "cosine"])
def test_memmap_read_in_panels(tmp_path, metric):
    rng = np.random.default_rng(8)
    X, lab = blobs(rng, 1100, 4, 6)
    file = tmp_path / "X.npy"
    mm = np.lib.format.open_memmap(file, mode="w+", dtype=np.float64, shape=X.shape)
    mm[:] = X
    mm.flush()
    del mm
    Xd = np.load(file, mmap_mode="r")
    budget = 2**16  # X is 52 KiB: above half of this budget, so it is read in panels
    assert X.nbytes > budget // 2
    expected = silhouette_samples(X, lab, metric=metric, convention="sklearn")
    got = silhouette_samples(Xd, lab, metric=metric, convention="sklearn", memory_budget=budget)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
    # the same through an object that only slices rows
    rows = RowsOnly(Xd)
    got = silhouette_samples(rows, lab, metric=metric, convention="sklearn", memory_budget=budget)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
    assert 0 < rows.largest <= 256
    # float32 on disk is converted panel by panel
    p32 = tmp_path / "X32.npy"
    np.save(p32, X.astype(np.float32))
    got = silhouette_samples(np.load(p32, mmap_mode="r"), lab, metric=metric, memory_budget=budget)
    np.testing.assert_allclose(
        got, silhouette_samples(X.astype(np.float32), lab, metric=metric), rtol=1e-12, atol=1e-13
    )


def test_memmap_precomputed_and_nan_position(tmp_path):
    rng = np.random.default_rng(9)
    X, lab = blobs(rng, 300, 3, 4)
    D = naive_distances(X, "euclidean")
    path = tmp_path / "D.npy"
    np.save(path, D)
    rows = RowsOnly(np.load(path, mmap_mode="r"))
    budget = 2**16
    got = silhouette_samples(rows, lab, metric="precomputed", memory_budget=budget)
    np.testing.assert_allclose(got, naive_silhouettes(D, lab, "seed"), atol=1e-12)
    assert rows.largest < 300
    score = silhouette_score(rows, lab, metric="precomputed", memory_budget=budget, sample_size=120, random_state=1)
    idx = np.sort(np.random.RandomState(1).permutation(300)[:120])
    expected = naive_silhouettes(D[np.ix_(idx, idx)], lab[idx], "seed").mean()
    assert score == pytest.approx(expected, abs=1e-12)
    # a NaN deep in the file is reported at its global position
    Xn = X.copy()
    Xn[257, 2] = np.nan
    pn = tmp_path / "Xn.npy"
    np.save(pn, Xn)
    with pytest.raises(ValueError, match=r"X\[257, 2\] = nan: values must be finite"):
        silhouette_samples(RowsOnly(np.load(pn, mmap_mode="r")), lab, memory_budget=2**12)


# --------------------------------------------------------------------------
# bad input


def test_bad_arguments():
    X = np.arange(20.0).reshape(10, 2)
    lab = np.arange(10) % 2
    with pytest.raises(ValueError, match=r"convention must be 'seed' or 'sklearn', got 'foo'"):
        silhouette_samples(X, lab, convention="foo")
    with pytest.raises(ValueError, match=r"convention must be 'seed' or 'sklearn'"):
        silhouette_score(X, lab, convention=None)
    with pytest.raises(
        ValueError,
        match=r"metric must be one of 'euclidean', 'sqeuclidean', "
        r"'manhattan', 'cosine', 'precomputed'.*got 'minkowski'",
    ):
        silhouette_samples(X, lab, metric="minkowski")
    with pytest.raises(ValueError, match="metric must be one of"):
        silhouette_score(X, lab, metric=len)
    with pytest.raises(ValueError, match="block_size must be a positive integer, got 0"):
        silhouette_samples(X, lab, block_size=0)
    with pytest.raises(TypeError, match="block_size must be a positive integer"):
        silhouette_samples(X, lab, block_size=2.5)
    with pytest.raises(ValueError, match="sample_size must be a positive integer"):
        silhouette_score(X, lab, sample_size=0)
    with pytest.raises(ValueError, match=r"sample_size must be at most the number of points \(10\)"):
        silhouette_score(X, lab, sample_size=11)
    with pytest.raises(ValueError, match="random_state must be"):
        silhouette_score(X, lab, sample_size=5, random_state="x")
    with pytest.raises(ValueError, match="memory_budget must be a positive integer"):
        silhouette_samples(X, lab, memory_budget=-1)


def test_bad_shapes_and_values():
    X = np.arange(20.0).reshape(10, 2)
    lab = np.arange(10) % 2
    with pytest.raises(ValueError, match="X has 10 rows but labels has 9 entries"):
        silhouette_samples(X, lab[:9])
    with pytest.raises(ValueError, match=r"X must be a 2-D array, got shape \(20,\)"):
        silhouette_samples(X.ravel(), lab)
    with pytest.raises(ValueError, match="X is empty"):
        silhouette_samples(np.empty((0, 2)), [])
    with pytest.raises(ValueError, match="X has no columns"):
        silhouette_samples(np.empty((10, 0)), lab)
    with pytest.raises(ValueError, match="labels must be a 1-D array"):
        silhouette_samples(X, lab.reshape(5, 2))
    with pytest.raises(ValueError, match="at least two non-empty clusters, but every label is 3"):
        silhouette_samples(X, np.full(10, 3))
    for value, shown in ((np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")):
        bad = X.copy()
        bad[3, 1] = value
        with pytest.raises(ValueError, match=rf"X\[3, 1\] = {shown}: values must be finite"):
            silhouette_samples(bad, lab)
    with pytest.raises(ValueError, match=r"labels\[4\] = 1.5: labels must be integers"):
        silhouette_samples(X, [0, 1, 0, 1, 1.5, 0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match=r"labels\[0\] = nan: labels must be integers"):
        silhouette_samples(X, np.r_[np.nan, lab[1:]])


def test_bad_types():
    X = np.arange(20.0).reshape(10, 2)
    lab = np.arange(10) % 2
    with pytest.raises(TypeError, match="X must hold numbers"):
        silhouette_samples(X.astype(str), lab)
    with pytest.raises(TypeError, match="X must be real"):
        silhouette_samples(X.astype(complex), lab)
    with pytest.raises(TypeError, match="X must be array-like"):
        silhouette_samples("abc", lab)
    with pytest.raises(TypeError, match="labels must hold numbers"):
        silhouette_samples(X, np.array(list("ababababab")))
    D = np.array(SPEC_D, dtype=object)  # an object array of numbers is read as them; None is not one
    D[0, 1] = None
    with pytest.raises(TypeError, match=r"d\[0, 1\] = None \(NoneType\): d must hold numbers"):
        silhouettes(D, SPEC_M)
    with pytest.raises(TypeError, match="m must hold numbers"):
        silhouettes(SPEC_D, np.array(SPEC_M).astype(str))


def test_bad_precomputed():
    D = np.array(SPEC_D, dtype=float)
    lab = [0, 0, 1, 1]
    with pytest.raises(ValueError, match=r"metric='precomputed', X must be a square .* got shape \(4, 3\)"):
        silhouette_samples(D[:, :3], lab, metric="precomputed")
    with pytest.raises(ValueError, match=r"X must be a square .* got shape \(4, 3\)"):
        silhouette_score(D[:, :3], lab, metric="precomputed", sample_size=2)
    bad = D.copy()
    bad[2, 1] = -1.0
    with pytest.raises(ValueError, match=r"X\[2, 1\] = -1.0: distances must be non-negative"):
        silhouette_samples(bad, lab, metric="precomputed")
    bad = D.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"X\[1, 3\] = nan: distances must be finite"):
        silhouette_samples(bad, lab, metric="precomputed")
    bad = D.copy()
    bad[2, 2] = 0.5
    with pytest.raises(ValueError, match=r"X\[2, 2\] = 0.5: .*diagonal must be zero"):
        silhouette_samples(bad, lab, metric="precomputed")
    with pytest.raises(ValueError, match="at least two non-empty clusters"):
        silhouette_samples(D, [1, 1, 1, 1], metric="precomputed")


def test_bad_silhouettes_input():
    with pytest.raises(ValueError, match=r"m\[2\] holds 2 ones: each row of m must be one-hot"):
        silhouettes(SPEC_D, [[1, 0], [1, 0], [1, 1], [0, 1]])
    with pytest.raises(ValueError, match=r"m\[1\] holds 0 ones"):
        silhouettes(SPEC_D, [[1, 0], [0, 0], [0, 1], [0, 1]])
    with pytest.raises(ValueError, match=r"m\[3, 0\] = 0.5: membership must be 0 or 1"):
        silhouettes(SPEC_D, [[1, 0], [1, 0], [0, 1], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"m\[0, 1\] = nan: membership must be 0 or 1"):
        silhouettes(SPEC_D, [[1, np.nan], [1, 0], [0, 1], [0, 1]])
    with pytest.raises(ValueError, match="d has 4 rows but m has 3"):
        silhouettes(SPEC_D, SPEC_M[:3])
    with pytest.raises(ValueError, match="m must be a 2-D one-hot membership matrix"):
        silhouettes(SPEC_D, [0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"d must be a square n x n matrix, got shape \(4, 3\)"):
        silhouettes(np.array(SPEC_D)[:, :3], SPEC_M)
    d = np.array(SPEC_D, dtype=float)
    d[0, 3] = np.inf
    with pytest.raises(ValueError, match=r"d\[0, 3\] = inf: distances must be finite"):
        silhouettes(d, SPEC_M)
    with pytest.raises(ValueError, match="only column 1 of m has members"):
        silhouettes(SPEC_D, [[0, 1, 0]] * 4)
    with pytest.raises(ValueError, match="at least two non-empty clusters"):
        silhouette(SPEC_D, [[1]] * 4)


# --------------------------------------------------------------------------
# kernels, run as plain Python


def test_kernels_as_python():
    rng = np.random.default_rng(10)
    XI = rng.standard_normal((5, 3))
    XJ = rng.standard_normal((6, 3))
    labJ = np.array([0, 1, 1, 0, 2, 1], dtype=np.int64)
    sqI = (XI * XI).sum(axis=1)
    sqJ = (XJ * XJ).sum(axis=1)
    pair = np.sqrt(((XI[:, None, :] - XJ[None, :, :]) ** 2).sum(axis=2))
    expected = np.stack([pair[:, labJ == k].sum(axis=1) for k in range(3)], axis=1)

    out = np.empty(5)
    assert kern.rows_sq_norms.py_func(XI, out) == -1
    np.testing.assert_allclose(out, sqI, rtol=1e-15)
    bad = XI.copy()
    bad[2, 1] = np.nan
    assert kern.rows_sq_norms.py_func(bad, out) == 2 * 3 + 1

    sums = np.zeros((5, 3))
    rows, scratch = kern.tile_buffers(1, 2, 3)
    # (the driver runs compiled: its tile is a constant of its closure)
    kern.sum_drivers(kern.EUCLIDEAN)[0].serial(XI, XJ, 0, sqI, sqJ, labJ, 2, rows, scratch, sums)
    np.testing.assert_allclose(sums, expected, rtol=1e-13)

    # a tile of one matrix off its diagonal adds into the rows of both blocks,
    # using the first nc entries of a thread's larger buffers
    L1 = np.abs(XJ[:, None, :] - XJ[None, :, :]).sum(axis=2)
    rows, yt = np.full((2, 8), np.nan), np.empty((3, 8))
    sums = np.zeros((6, 3))
    kern._manhattan_tile.py_func(XJ, 0, 3, XJ, 3, 3, yt, rows, sqJ, sqJ, 0, labJ, labJ, sums, True)
    want = np.zeros((6, 3))
    for i in range(3):  # (an odd number of rows: the last one's twin adds zeros)
        for j in range(3, 6):
            want[i, labJ[j]] += L1[i, j]
            want[j, labJ[i]] += L1[i, j]
    np.testing.assert_allclose(sums, want, rtol=1e-15)
    assert np.isnan(rows[:, 3:]).all()

    D = naive_distances(XJ, "euclidean")
    sums = np.zeros((6, 3))
    flags = np.zeros(6, dtype=np.uint8)
    kern.distance_sums.py_func(D, 0, labJ, 0.0, 1e-12, sums, flags)
    assert not flags.any()
    sizes = np.bincount(labJ).astype(np.int64)
    for convention, name in ((sil_sums.SEED, "seed"), (sil_sums.SKLEARN, "sklearn")):
        s = sil_sums.from_sums(sums, labJ, sizes, convention)
        np.testing.assert_allclose(s, naive_silhouettes(D, labJ, name), rtol=1e-13, atol=1e-15)
    D[4, 4] = 1.0
    kern.distance_sums.py_func(D, 0, labJ, 0.0, 1e-12, sums, flags)
    assert flags.tolist() == [0, 0, 0, 0, 1, 0]


def test_samples_return_type():
    s = silhouette_samples([[0.0], [1.0], [5.0]], [0, 0, 1])
    assert s.dtype == np.float64 and s.shape == (3,)
    assert isinstance(silhouette_score([[0.0], [1.0], [5.0]], [0, 0, 1]), float)


def test_serial_and_parallel_twins_agree():
    """Small problems run the serial, cached twin of a parallel kernel: the same numbers."""
    rng = np.random.default_rng(17)
    X = np.ascontiguousarray(rng.normal(size=(300, 5)))
    lab = rng.integers(0, 4, 300)
    sq = (X * X).sum(axis=1)
    dual, symmetric = kern.sum_drivers(kern.EUCLIDEAN)
    got = []
    for twin, threads in ((dual.serial, 1), (dual.parallel, numba.get_num_threads())):
        sums = np.zeros((300, 4))
        twin(X, X, 0, sq, sq, lab, 64, *kern.tile_buffers(threads, 64, 5), sums)
        got.append(sums)
    assert np.array_equal(got[0], got[1])
    # each distance computed once, for both its points: the same sums but for rounding
    # (38 blocks of 8 rows: groups of three blocks, an odd number of groups)
    for twin, threads in ((symmetric.serial, 1), (symmetric.parallel, numba.get_num_threads())):
        sums = np.zeros((300, 4))
        twin(X, sq, lab, 8, *kern.tile_buffers(threads, 8, 5), sums)
        got.append(sums)
    assert np.array_equal(got[2], got[3])
    np.testing.assert_allclose(got[2], got[0], rtol=1e-13)
    assert dual.pick(1.0) is dual.parallel or not dual.parallel.signatures
    assert dual.pick(1e12) is dual.parallel


def test_a_metric_compiles_only_its_own_tile():
    """The drivers hold their metric as a constant: a driver types the tile
    kernel of its own metric alone (and so loads from Numba's cache in a new
    process: its closure holds plain values only), and that kernel
    holds the loop of its metric alone (the other branches pruned before
    typing, not left to LLVM)."""
    rng = np.random.default_rng(3)
    XI, XJ = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    labJ = np.array([0, 1, 2, 0, 1, 2])
    pair = np.abs(XI[:, None, :] - XJ[None, :, :]).sum(axis=2)
    expected = np.stack([pair[:, labJ == k].sum(axis=1) for k in range(3)], axis=1)
    others = {"_euclidean_tile", "_sqeuclidean_tile", "_cosine_tile"}
    for parallel in (False, True):
        driver = numba.njit(kern._drivers(parallel, kern.MANHATTAN)[0], parallel=parallel)  # compiled afresh
        sums = np.zeros((5, 3))
        threads = numba.get_num_threads() if parallel else 1
        driver(XI, XJ, 0, np.zeros(5), np.zeros(6), labJ, 2, *kern.tile_buffers(threads, 2, 3), sums)
        np.testing.assert_allclose(sums, expected, rtol=1e-13)
        typemap = driver.overloads[driver.signatures[0]].type_annotation.typemap
        called = {ty.dispatcher.py_func.__name__ for ty in typemap.values() if isinstance(ty, numba.types.Dispatcher)}
        assert "_manhattan_tile" in called and not called & others, called
    for cached, has, lacks in ((kern._manhattan_tile, "abs", "sqrt"), (kern._euclidean_tile, "sqrt", "abs")):
        tile = numba.njit(cached.py_func)  # afresh: a cached kernel keeps no typed IR
        sums = np.zeros((5, 3))
        rows, yt = np.empty((2, 6)), np.empty((3, 6))
        tile(XI, 0, 5, XJ, 0, 6, yt, rows, np.zeros(5), np.zeros(6), 0, labJ, labJ, sums, False)
        typemap = tile.overloads[tile.signatures[0]].type_annotation.typemap
        functions = " ".join(str(ty) for ty in typemap.values() if isinstance(ty, numba.types.Function))
        assert has in functions and lacks not in functions, functions  # only its own metric's loop
    pair = np.sqrt(((XI[:, None, :] - XJ[None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_allclose(sums, np.stack([pair[:, labJ == k].sum(axis=1) for k in range(3)], axis=1), rtol=1e-14)
    assert kern.sum_drivers(kern.MANHATTAN) is kern.sum_drivers(kern.MANHATTAN)
    assert kern.sum_drivers(kern.MANHATTAN) is not kern.sum_drivers(kern.COSINE)
