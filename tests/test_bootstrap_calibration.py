"""Bootstrap of Calibration (alone and in the binary Evaluator): the one-pass fold
against each replicate fed its own Poisson weights, keyed invariance, the fallback."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
import streammetrics.bootstrap.accumulator as B
from streammetrics._kernels.bootstrap import POISSON1_CUTS, poisson_weights
from streammetrics._protocol.errors import WeightOverflowError

R = 16
TABLE = ("bin_count", "bin_weight", "mean_predicted", "fraction_positive")
FIGURES = ("ece", "mce", "rmsce", "reliability", "resolution", "uncertainty", "binned_brier")


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    p[: n // 10] = np.round(p[: n // 10], 1)  # probabilities on the bin edges, and 0 and 1
    return y, p


def _weights(seed, keys, R, w=None):
    out = np.empty((R, len(keys)), np.float64)
    poisson_weights(
        np.uint64(seed),
        np.asarray(keys, np.int64),
        0,
        0,
        np.zeros(0) if w is None else np.asarray(w, float),
        out,
        POISSON1_CUTS,
    )
    return out


def _same_table(got, ref):
    np.testing.assert_array_equal(got.bin_count, ref.bin_count)
    for k in TABLE[1:]:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-12, atol=1e-15, err_msg=k)
    for k in FIGURES:
        assert got[k] == pytest.approx(ref[k], rel=1e-11, abs=1e-14), k


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 600), st.integers(1, 40), st.booleans(), st.integers(0, 2**64 - 1))
def test_one_pass_calibration_matches_each_replicate_fed_its_own_weights(n, bins, weighted, seed):
    y, p = _data(n, seed=n)
    w = np.random.default_rng(n).random(n) * 3 if weighted else None
    keys = np.random.default_rng(n + 2).integers(-(2**40), 2**40, n)
    b = sm.Bootstrap(sm.Calibration(bins), replicates=R, seed=seed).update(y, p, sample_weight=w, key=keys)
    assert b._linear is not None  # the one-pass fold served this template
    draws = _weights(seed, keys, R, w=w)
    b._ranks.scores(seed, R)  # the AUC member's replicates: one walk over the rows kept
    for r, acc in enumerate(b._replicas):
        want = sm.Calibration(bins).update(y, p, sample_weight=draws[r])
        assert acc.n == want.n == n
        if not draws[r].sum():
            continue  # every weight drawn 0: no figure defined
        _same_table(acc.finalize(), want.finalize())


def test_one_pass_calibration_takes_predict_proba_matrices():
    y, p = _data(900, seed=3)
    m = np.column_stack([1 - p, p])
    a = sm.Bootstrap(sm.Calibration(10), replicates=R, seed=1).update(y, m, key=np.arange(900))
    b = sm.Bootstrap(sm.Calibration(10), replicates=R, seed=1).update(y, p, key=np.arange(900))
    for x, z in zip(a._replicas, b._replicas):
        _same_table(x.finalize(), z.finalize())


@settings(max_examples=8, deadline=None)
@given(st.integers(2, 500), st.booleans(), st.integers(0, 2**32))
def test_binary_evaluators_members_match_each_replicate_fed_its_own_weights(n, weighted, seed):
    y, p = _data(n, seed=n + 7)
    w = np.random.default_rng(n).random(n) * 2 if weighted else None
    keys = np.arange(n) * 11 + 3
    b = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=R, seed=seed).update(y, p, sample_weight=w, key=keys)
    assert b._linear is not None and b._linear.complete  # the AUC is kept as rows
    draws = _weights(seed, keys, R, w=w)
    ranked = b._ranks.scores(seed, R)  # the AUC member's replicates: one walk over the rows kept
    for r, acc in enumerate(b._replicas):
        want = sm.Evaluator(task="binary").update(y, p, sample_weight=draws[r])
        assert acc.n == want.n == n
        got_cal, want_cal = acc.members["calibration"], want.members["calibration"]
        np.testing.assert_array_equal(got_cal._arrays["counts"], want_cal._arrays["counts"])
        if not (draws[r][y == 1].sum() and draws[r][y == 0].sum()):
            continue
        _same_table(got_cal.finalize(), want_cal.finalize())
        got, ref = acc.finalize(), want.finalize()
        for k in ("ece", "accuracy", "log_loss"):
            assert got[k] == pytest.approx(ref[k], rel=1e-11, abs=1e-14), (r, k)
        for k in ("auc", "average_precision"):
            assert ranked[r][k] == pytest.approx(ref[k], rel=1e-11, abs=1e-14), (r, k)


@settings(max_examples=10, deadline=None)
@given(
    st.integers(1, 400),
    st.lists(st.integers(0, 10_000), max_size=5),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_keyed_calibration_replicates_are_the_same_under_any_batching_and_merge_order(n, cuts, shards, rnd):
    y, p = _data(n, seed=n)
    keys = np.random.default_rng(n + 1).permutation(n).astype(np.int64) * 3 + 17
    make = lambda: sm.Bootstrap(sm.Calibration(8), replicates=R, seed=5)  # noqa: E731
    one = make().update(y, p, key=keys)
    parts = [make() for _ in range(shards)]
    edges = sorted({0, n, *(c % (n + 1) for c in cuts)})
    for lo, hi in zip(edges[:-1], edges[1:]):
        parts[rnd.randrange(shards)].update(y[lo:hi], p[lo:hi], key=keys[lo:hi])
    rnd.shuffle(parts)
    total = make()
    for part in parts:
        total.merge(part)
    for got, want in zip(total._replicas, one._replicas):
        np.testing.assert_array_equal(got._arrays["counts"], want._arrays["counts"])  # exact
        np.testing.assert_array_equal(got._arrays["weight"].sum(axis=1), want._arrays["weight"].sum(axis=1))
        np.testing.assert_allclose(
            got._arrays["predicted"].sum(axis=1), want._arrays["predicted"].sum(axis=1), rtol=1e-13
        )
    g, w_ = total.finalize(), one.finalize()
    for k in ("ece_ci_lower", "ece_ci_upper", "mce_ci_upper"):
        assert g[k] == pytest.approx(w_[k], rel=1e-11, abs=1e-14)


def test_many_bins_fold_replicate_by_replicate_with_the_same_result():
    y, p = _data(800, seed=2)
    bins = B.MAX_SLOTS // 3 + 1
    b = sm.Bootstrap(sm.Calibration(bins), replicates=R, seed=4).update(y, p, key=np.arange(800))
    assert b._linear is None
    draws = _weights(4, np.arange(800), R)
    for r, acc in enumerate(b._replicas):
        _same_table(acc.finalize(), sm.Calibration(bins).update(y, p, sample_weight=draws[r]).finalize())


def test_one_pass_calibration_is_the_same_on_any_number_of_threads(monkeypatch):
    y, p = _data(4000, seed=6)
    w = np.random.default_rng(1).random(4000)
    monkeypatch.setattr(B, "workers", lambda R, n: 1)
    one = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=21, seed=3).update(y, p, sample_weight=w)
    monkeypatch.setattr(B, "workers", lambda R, n: 3)
    other = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=21, seed=3).update(y, p, sample_weight=w)
    assert other == one


def test_bad_batches_change_nothing_and_states_round_trip(tmp_path):
    y, p = _data(500, seed=1)
    b = sm.Bootstrap(sm.Calibration(12), replicates=R, seed=2).update(y, p, key=np.arange(500))
    before = b.copy()
    bad = p.copy()
    bad[7] = 1.5
    with pytest.raises(ValueError, match=r"p\[7\]"):
        b.update(y, bad, key=np.arange(500))
    with pytest.raises(WeightOverflowError):
        b.update(y, p, sample_weight=np.full(500, 1e308), key=np.arange(500))
    assert b == before
    b.save(tmp_path / "b.state")
    loaded = sm.load_state(tmp_path / "b.state")
    assert loaded == b
    assert loaded.finalize().ece_ci_upper == b.finalize().ece_ci_upper
    state = b.state_dict()  # a replicate whose counts miss a row is refused
    state["replicates.counts"] = state["replicates.counts"].copy()
    state["replicates.counts"][3] += 1
    with pytest.raises(ValueError):
        sm.Bootstrap(sm.Calibration(12), replicates=R, seed=2).load_state_dict(state)
