"""Calibration over equal-mass bins against scikit-learn's
calibration_curve(strategy="quantile"), under any batching, sharding, merge
order and spilling; its state checks and its refusals."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.metrics.ranking.spill import MIN_MEMORY

calibration_curve = pytest.importorskip("sklearn.calibration").calibration_curve

# ties on a grid, the ends, the smallest subnormal and the float below 1
EXTREMES = [0.0, 1.0, 5e-324, float(np.nextafter(1.0, 0.0)), 0.5, 1 / 3]


@st.composite
def scores(draw, max_size=120):
    n = draw(st.integers(1, max_size))
    kind = draw(st.sampled_from(["grid", "floats", "extremes", "equal"]))
    if kind == "grid":
        grid = draw(st.integers(1, 20))
        p = np.array(draw(st.lists(st.integers(0, grid), min_size=n, max_size=n))) / grid
    elif kind == "floats":
        p = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    elif kind == "extremes":
        p = np.array(draw(st.lists(st.sampled_from(EXTREMES), min_size=n, max_size=n)))
    else:
        p = np.full(n, draw(st.sampled_from(EXTREMES)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    n_bins = draw(st.one_of(st.integers(1, 12), st.integers(13, 150)))
    return y, p, n_bins


def check_against_sklearn(r, y, p, n_bins):
    edges = np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    np.testing.assert_array_equal(r.bin_edges, edges)  # to the bit
    counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=n_bins)
    np.testing.assert_array_equal(r.bin_count, counts)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="quantile")
    held = r.bin_count > 0
    np.testing.assert_allclose(r.fraction_positive[held], prob_true, rtol=1e-12, atol=0)
    np.testing.assert_allclose(r.mean_predicted[held], prob_pred, rtol=1e-12, atol=0)
    gap = np.abs(prob_true - prob_pred)
    share = counts[held] / len(p)
    assert r.ece == pytest.approx(np.sum(share * gap), rel=1e-12, abs=1e-300)
    assert r.mce == pytest.approx(gap.max(), rel=1e-12, abs=1e-300)
    assert r.rmsce == pytest.approx(np.sqrt(np.sum(share * gap**2)), rel=1e-12, abs=1e-300)
    assert r.n == len(p)


@settings(max_examples=60, deadline=None)
@given(scores(), st.data())
def test_equal_to_calibration_curve_under_any_batching_and_merge_order(data, draw):
    y, p, n_bins = data
    whole = sm.Calibration(n_bins, strategy="quantile").update(y, p)
    check_against_sklearn(whole.finalize(), y, p, n_bins)
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(y)), max_size=4)))
    parts = np.split(np.arange(len(y)), cuts)
    batched = sm.QuantileCalibration(n_bins)
    for rows in parts:
        batched.update(y[rows], p[rows])
    shards = [sm.QuantileCalibration(n_bins).update(y[rows], p[rows]) for rows in parts]
    order = draw.draw(st.permutations(range(len(shards))))
    merged = sm.QuantileCalibration(n_bins)
    for i in order:
        merged.merge(shards[i])
    for acc in (batched, merged):
        assert acc == whole
        check_against_sklearn(acc.finalize(), y, p, n_bins)


def test_single_row_and_one_value_everywhere():
    r = sm.Calibration(4, strategy="quantile").update([1], [0.3]).finalize()
    assert r.bin_edges.tolist() == [0.3] * 5 and r.bin_count.tolist() == [1, 0, 0, 0]
    y = np.array([0, 1, 1, 0, 1])
    check_against_sklearn(sm.QuantileCalibration(3).update(y, np.ones(5)).finalize(), y, np.ones(5), 3)


def test_a_spilled_state_gives_the_same():
    rng = np.random.default_rng(7)
    p = np.round(rng.random(40_000), 4)
    y = (rng.random(40_000) < p).astype(np.int64)
    shards = []
    for part in np.array_split(np.arange(len(p)), 4):
        acc = sm.QuantileCalibration(10, max_memory=MIN_MEMORY)
        for rows in np.array_split(part, 5):
            acc.update(y[rows], p[rows])
        shards.append(acc)
    assert all(s.spilled for s in shards)
    merged = shards[3].merge(shards[1]).merge(shards[0]).merge(shards[2])
    check_against_sklearn(merged.finalize(), y, p, 10)
    want = sm.QuantileCalibration(10).update(y, p).state_dict()
    got = merged.state_dict()
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])
    merged.close()


def test_save_load_pickle_and_the_one_shot_score(tmp_path):
    y, p = np.array([0, 1, 1, 0, 1, 0]), np.array([0.1, 0.9, 0.4, 0.4, 0.8, 0.2])
    acc = sm.Calibration(3, strategy="quantile", pos_label=1).update(y, p)
    acc.save(tmp_path / "q.npz")
    for back in (sm.load_state(tmp_path / "q.npz"), pickle.loads(pickle.dumps(acc))):
        assert type(back) is sm.QuantileCalibration and back == acc
        assert back.finalize().ece == acc.finalize().ece
    assert sm.expected_calibration_error(y, p, n_bins=3, strategy="quantile") == acc.finalize().ece


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda s: s.update(lo=s["lo"][::-1].copy()), "strictly increasing"),
        (lambda s: s.update(lo=s["lo"] + 1.0), r"in \[0, 1\]"),
        (lambda s: s.update(n=s["n"] + 1), "adding up"),
        (lambda s: s.update(weighted=np.array([1])), "weights"),
        (lambda s: s.update(counts=s["counts"][:, :1].copy()), "shape"),
    ],
)
def test_a_loaded_state_is_checked(change, match):
    acc = sm.QuantileCalibration(3).update([0, 1, 1], [0.1, 0.5, 0.9])
    state = acc.state_dict()
    change(state)
    with pytest.raises(ValueError, match=match):
        sm.QuantileCalibration(3).load_state_dict(state)


def test_bad_arguments_give_clear_errors():
    with pytest.raises(ValueError, match="strategy must be 'uniform' or 'quantile', got 'median'"):
        sm.Calibration(5, strategy="median")
    with pytest.raises(ValueError, match=r"n_bins must lie in \[1, 100,000\], got 0"):
        sm.Calibration(0, strategy="quantile")
    with pytest.raises(TypeError, match="n_bins must be an int"):
        sm.QuantileCalibration(2.5)
    with pytest.raises(ValueError, match="give max_memory too"):
        sm.QuantileCalibration(5, spill_dir=".")
    with pytest.raises(TypeError, match="max_memory"):
        sm.Calibration(5, max_memory="1GB")  # a uniform table holds no runs
    with pytest.raises(sm.NoWeightsError):
        sm.QuantileCalibration(5).update([0, 1], [0.2, 0.4], sample_weight=[1.0, 2.0])
    with pytest.raises(sm.NoWeightsError):
        sm.expected_calibration_error([0, 1], [0.2, 0.4], sample_weight=[1.0, 2.0], strategy="quantile")
    with pytest.raises(ValueError, match=r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]"):
        sm.QuantileCalibration(5).update([0, 1], [0.2, 1.5])
    with pytest.raises(sm.NoObservationsError):
        sm.QuantileCalibration(5).finalize()
