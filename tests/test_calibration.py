"""Calibration: reliability tables against scikit-learn, ECE/MCE/RMSCE computed
independently, the Brier decomposition, multiclass top-label and class-wise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve

import streammetrics as sm


@st.composite
def probabilities(draw, max_size=80):
    n = draw(st.integers(1, max_size))
    n_bins = draw(st.integers(1, 12))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    # probabilities on and between the bin edges, and the ends
    grid = draw(st.integers(1, 24))
    p = np.array(draw(st.lists(st.integers(0, grid), min_size=n, max_size=n))) / grid
    w = None
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.floats(0.1, 5.0), min_size=n, max_size=n)))
    return y, p, w, n_bins


def reference(y, p, w, n_bins):
    """Each bin's weight, mean probability and positive fraction, with the edges of
    calibration_curve(strategy="uniform"): (lo, hi], the first bin closed."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ww = np.ones(len(y)) if w is None else w
    out = []
    for b in range(n_bins):
        inside = (p > edges[b]) & (p <= edges[b + 1]) if b else (p <= edges[1])
        W = ww[inside].sum()
        if W:
            out.append((W, np.sum(ww[inside] * p[inside]) / W, np.sum(ww[inside] * y[inside]) / W))
        else:
            out.append((0.0, 0.0, 0.0))
    return np.array(out).T


@given(probabilities())
def test_bins_ece_mce_rmsce_against_independent_computation(data):
    y, p, w, n_bins = data
    r = sm.Calibration(n_bins).update(y, p, sample_weight=w).finalize()
    W, mp, fp = reference(y, p, w, n_bins)
    np.testing.assert_allclose(r.bin_weight, W, rtol=1e-12)
    np.testing.assert_allclose(r.mean_predicted, mp, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.fraction_positive, fp, rtol=1e-12, atol=1e-15)
    gap = np.abs(fp - mp)
    assert r.ece == pytest.approx(np.sum(W * gap) / W.sum(), rel=1e-12, abs=1e-15)
    assert r.mce == pytest.approx(gap[W > 0].max(), rel=1e-12, abs=1e-15)
    assert r.rmsce == pytest.approx(np.sqrt(np.sum(W * gap**2) / W.sum()), rel=1e-12, abs=1e-15)
    assert r.bin_count.sum() == len(y) and r.bin_count.shape == (n_bins,)
    np.testing.assert_array_equal(r.bin_edges, np.linspace(0, 1, n_bins + 1))


@given(probabilities())
def test_bins_equal_calibration_curve_where_it_keeps_a_bin(data):
    y, p, w, n_bins = data
    if w is not None:
        return  # calibration_curve takes no weights
    r = sm.Calibration(n_bins).update(y, p).finalize()
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform")
    kept = r.bin_count > 0
    np.testing.assert_allclose(r.fraction_positive[kept], prob_true, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.mean_predicted[kept], prob_pred, rtol=1e-12, atol=1e-15)


@given(probabilities())
def test_brier_decomposition_adds_up_for_the_binned_forecasts(data):
    y, p, w, n_bins = data
    r = sm.Calibration(n_bins).update(y, p, sample_weight=w).finalize()
    ww = np.ones(len(y)) if w is None else w
    edges = np.linspace(0, 1, n_bins + 1)
    b = np.searchsorted(edges[1:-1], p, side="left")
    binned = r.mean_predicted[b]  # every probability replaced by its bin's mean
    brier = np.sum(ww * (binned - y) ** 2) / ww.sum()
    assert r.reliability - r.resolution + r.uncertainty == pytest.approx(brier, rel=1e-12, abs=1e-15)
    assert r.binned_brier == pytest.approx(brier, rel=1e-12, abs=1e-15)
    base = np.sum(ww * y) / ww.sum()
    assert r.uncertainty == pytest.approx(base * (1 - base), rel=1e-12, abs=1e-15)
    assert r.reliability == pytest.approx(r.rmsce**2, rel=1e-12, abs=1e-15)


def test_batching_and_merging_give_the_same_table():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < p).astype(int)
    whole = sm.Calibration().update(y, p).finalize()
    parts = [sm.Calibration().update(y[i : i + 700], p[i : i + 700]) for i in range(0, 5000, 700)]
    merged = parts[0]
    for a in parts[:0:-1]:
        merged = merged + a
    r = merged.finalize()
    np.testing.assert_array_equal(r.bin_count, whole.bin_count)
    assert r.ece == pytest.approx(whole.ece, rel=1e-12)


def test_empty_bins_are_reported_with_count_zero():
    r = sm.Calibration(n_bins=4).update([0, 1], [0.1, 0.9]).finalize()
    np.testing.assert_array_equal(r.bin_count, [1, 0, 0, 1])
    np.testing.assert_array_equal(r.mean_predicted, [0.1, 0.0, 0.0, 0.9])
    assert r.mce == pytest.approx(0.1)
    text = sm.Evaluator({"calibration": sm.Calibration(n_bins=4)}).update([0, 1], [0.1, 0.9]).finalize().to_text()
    assert "(2 of 4 bins hold no row)" in text and "[0, 0.25]" in text


def test_class_calibration_top_label_and_classwise():
    rng = np.random.default_rng(4)
    n, k = 3000, 4
    P = rng.dirichlet(np.ones(k) * 0.7, n)
    y = np.array([rng.choice(k, p=row) for row in P])
    w = rng.uniform(0.5, 2, n)
    r = sm.ClassCalibration(k, n_bins=10).update(y, P, sample_weight=w).finalize()
    top = P.argmax(axis=1)
    W, mp, fp = reference((top == y).astype(int), P.max(axis=1), w, 10)
    assert r.ece == pytest.approx(np.sum(W * np.abs(fp - mp)) / W.sum(), rel=1e-12)
    np.testing.assert_allclose(r.bin_weight, W, rtol=1e-12)
    per = []
    for j in range(k):
        W, mp, fp = reference((y == j).astype(int), P[:, j], w, 10)
        per.append(np.sum(W * np.abs(fp - mp)) / W.sum())
    np.testing.assert_allclose(r.class_ece, per, rtol=1e-12)
    assert r.classwise_ece == pytest.approx(np.mean(per), rel=1e-12)


def test_one_shot_and_errors():
    assert sm.expected_calibration_error([0, 1], [0.2, 0.7], n_bins=1) == pytest.approx(0.05)
    with pytest.raises(ValueError, match=r"n_bins must lie in \[1, 100,000\], got 0"):
        sm.Calibration(0)
    with pytest.raises(TypeError, match="n_bins must be an int, got float"):
        sm.Calibration(2.5)
    acc = sm.Calibration()
    before = acc.state_dict()
    with pytest.raises(ValueError, match=r"p\[2\] = -0.1"):
        acc.update([0, 1, 1], [0.2, 0.3, -0.1])
    assert all(np.array_equal(before[k], v) for k, v in acc.state_dict().items())
    with pytest.raises(sm.NoObservationsError):
        acc.finalize()
    with pytest.raises(ValueError, match="weights sum to zero"):
        sm.Calibration().update([0, 1], [0.2, 0.3], sample_weight=[0.0, 0.0]).finalize()


def test_a_forged_table_is_refused():
    acc = sm.Calibration(n_bins=2).update([0, 1], [0.2, 0.7])
    state = acc.state_dict()
    state["observed"][1, 0] = 5.0  # more positives than the bin's weight
    with pytest.raises(ValueError, match="exceed the bin's weight"):
        sm.Calibration(n_bins=2).load_state_dict(state)
    state = acc.state_dict()
    state["counts"][0] = 7
    with pytest.raises(ValueError, match="does not add up"):
        sm.Calibration(n_bins=2).load_state_dict(state)
