"""TopKAccuracy and top_k_accuracy: scikit-learn agreement with ties and
weights, the tie rule, batching invariance and rejected input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

from streammetrics import TopKAccuracy, top_k_accuracy
from tests.harness import state_snapshot

TOL = 1e-12


def sk_top_k(y, P, k, w=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k >= K: scikit-learn warns that every row is a hit
        return skm.top_k_accuracy_score(y, P, k=k, labels=np.arange(P.shape[1]), sample_weight=w)


@st.composite
def problems(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 300))
    K = draw(st.integers(3, 9))
    k = draw(st.integers(1, K + 1))
    levels = draw(st.sampled_from([2, 3, 1000]))  # few levels: many ties
    P = rng.integers(0, levels, (n, K)) / levels
    y = rng.integers(0, K, n)
    w = rng.random(n) * 2 if draw(st.booleans()) else None
    if w is not None:
        w[rng.random(n) < 0.1] = 0.0
        w[0] = 1.0
    return y, P, k, w


@settings(max_examples=150, deadline=None)
@given(problems())
def test_agrees_with_sklearn(problem):
    y, P, k, w = problem
    want = sk_top_k(y, P, k, w)
    assert abs(top_k_accuracy(y, P, k, sample_weight=w) - want) <= TOL
    acc = TopKAccuracy(k, n_classes=P.shape[1])
    half = len(y) // 2
    for lo, hi in ((0, half), (half, len(y))):
        acc.update(y[lo:hi], P[lo:hi], sample_weight=None if w is None else w[lo:hi])
    assert abs(acc.finalize().top_k_accuracy - want) <= TOL


def test_ties_go_to_the_higher_class_index():
    # scikit-learn's documented rule: among equal scores the higher index ranks first
    P = np.array([[0.3, 0.3, 0.3, 0.1]] * 3)
    y = np.array([0, 1, 2])
    for k, hits in ((1, [0, 0, 1]), (2, [0, 1, 1]), (3, [1, 1, 1])):
        got = TopKAccuracy(k).update(y, P).finalize()
        assert got.hits == sum(hits)
        assert got.top_k_accuracy == sk_top_k(y, P, k)


def test_counts_are_exact_and_weights_are_sums():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 10_000)
    P = rng.random((10_000, 5))
    r = TopKAccuracy(2).update(y, P).finalize()
    rank = (P > P[np.arange(10_000), y][:, None]).sum(axis=1)
    assert r.hits == int((rank < 2).sum()) and r.total == 10_000 and r.n == 10_000
    assert isinstance(r.hits, int)
    w = rng.random(10_000)
    rw = TopKAccuracy(2).update(y, P, sample_weight=w).finalize()
    assert abs(rw.hits - w[rank < 2].sum()) <= 1e-9 and abs(rw.total - w.sum()) <= 1e-9
    assert rw.weighted


def test_batching_and_merges_give_the_same_counts():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 4, 500)
    P = rng.integers(0, 3, (500, 4)).astype(float)
    whole = TopKAccuracy(2).update(y, P)
    parts = [TopKAccuracy(2).update(y[lo : lo + 50], P[lo : lo + 50]) for lo in range(0, 500, 50)]
    merged = parts[3]
    for p in parts[:3] + parts[4:]:
        merged = merged + p
    assert merged == whole
    assert merged.finalize().top_k_accuracy == whole.finalize().top_k_accuracy


def test_every_row_is_a_hit_when_k_reaches_the_classes():
    P = np.array([[0.1, 0.9], [0.9, 0.1]])
    assert top_k_accuracy([0, 1], P, 2) == 1.0
    assert top_k_accuracy([0, 1], P, 7) == 1.0


def test_labels():
    P = np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    acc = TopKAccuracy(1, labels=["cat", "dog", "bird"]).update(["dog", "bird"], P)
    assert acc.finalize().top_k_accuracy == 0.5
    with pytest.raises(ValueError, match=r"y\[0\] = 'emu'"):
        acc.update(["emu"], P[:1])


def test_bad_input_names_argument_and_position():
    acc = TopKAccuracy(2).update([0, 1], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    before = state_snapshot(acc)
    with pytest.raises(ValueError, match=r"y\[1\] = 3: classes must be integers in 0..2: P has 3 columns"):
        acc.update([0, 3], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match=r"y\[1\] = 3: classes must be integers in 0..2"):
        acc.prepare([0, 3], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match=r"y\[1\] = -1"):
        acc.update([0, -1], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match=r"y\[0\] = 0.5"):
        acc.update([0.5], [[0.5, 0.3, 0.2]])
    with pytest.raises(ValueError, match=r"P\[1, 2\] = inf: scores must be finite"):
        acc.update([0, 1], [[0.5, 0.3, 0.2], [0.1, 0.8, np.inf]])
    with pytest.raises(ValueError, match=r"sample_weight\[1\]"):
        acc.update([0, 1], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]], sample_weight=[1.0, np.nan])
    with pytest.raises(ValueError, match="n x 3|shape"):
        TopKAccuracy(1, n_classes=3).update([0], [0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="P has 2 columns but n_classes is 3"):
        TopKAccuracy(1, n_classes=3).update([0], [[0.5, 0.5]])
    after = state_snapshot(acc)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_bad_settings():
    with pytest.raises(TypeError, match="k must be an integer"):
        TopKAccuracy(1.5)
    with pytest.raises(TypeError, match="k must be an integer"):
        TopKAccuracy(True)
    with pytest.raises(ValueError, match="k must be at least 1"):
        TopKAccuracy(0)
    with pytest.raises(ValueError, match="different settings"):
        TopKAccuracy(1).merge(TopKAccuracy(2))
    with pytest.raises(ValueError, match="no observations"):
        TopKAccuracy(1).finalize()
    with pytest.raises(ValueError, match="empty"):
        top_k_accuracy(np.zeros(0, int), np.zeros((0, 3)), 1)
