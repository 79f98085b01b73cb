"""DeLong's confidence interval of the AUC: against a brute-force O(n²)
implementation written here, on ties and weights, across merges and saves,
in bounded memory, and by simulation."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.metrics.intervals import z_of
from streammetrics.metrics.ranking.points import Points


def delong_sums(ab):
    """DeLong's sums of the points' masses ``ab`` (any scores, increasing)."""
    return Points((np.arange(ab.shape[1], dtype=np.float64), ab), 0, ab.dtype.kind == "f").delong_sums(0.5)


V1 = pathlib.Path(__file__).parent / "fixtures" / "v1"


def delong_brute(y, s, w=None):
    """``(auc, variance)`` by DeLong et al. (1988), pair by pair.

    Without weights: ``V10_i = mean_j psi(X_i, Y_j)``, ``V01_j = mean_i psi``,
    ``S10``, ``S01`` their sample variances (divisor ``m - 1``, ``n - 1``) and
    ``var = S10 / m + S01 / n``. With weights the means are weighted, and the
    sizes are Kish's effective sizes ``(sum w)^2 / sum w^2`` of each class.
    """
    y = np.asarray(y)
    s = np.asarray(s, float)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    pos = [(s[i], w[i]) for i in range(len(y)) if y[i] == 1]
    neg = [(s[j], w[j]) for j in range(len(y)) if y[j] == 0]

    def psi(a, b):
        return 1.0 if a > b else (0.5 if a == b else 0.0)

    P = sum(wi for _, wi in pos)
    N = sum(vj for _, vj in neg)
    v10 = [sum(vj * psi(si, sj) for sj, vj in neg) / N for si, _ in pos]
    v01 = [sum(wi * psi(si, sj) for si, wi in pos) / P for sj, _ in neg]
    auc = sum(wi * v for (_, wi), v in zip(pos, v10)) / P
    m = P * P / sum(wi * wi for _, wi in pos)
    k = N * N / sum(vj * vj for _, vj in neg)
    s10 = sum(wi * (v - auc) ** 2 for (_, wi), v in zip(pos, v10)) / P * m / (m - 1)
    s01 = sum(vj * (v - auc) ** 2 for (_, vj), v in zip(neg, v01)) / N * k / (k - 1)
    return auc, s10 / m + s01 / k


def _data(rng, n, ties=True):
    y = rng.integers(0, 2, n)
    y[:2] = (0, 1)
    s = rng.normal(size=n) + 0.8 * y
    if ties:
        s = np.round(s, 1)  # many ties, within and across classes
    return y, s


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weights", ["none", "integer", "real"])
def test_against_brute_force(seed, weights):
    rng = np.random.default_rng(seed)
    y, s = _data(rng, 60 + 20 * seed)
    w = {"none": None, "integer": rng.integers(1, 5, len(y)).astype(float), "real": rng.random(len(y)) * 3 + 0.01}[
        weights
    ]
    want_auc, want_var = delong_brute(y, s, w)
    r = sm.RankAUC().update(y, s, sample_weight=w).finalize(ci=0.9)
    assert r.auc == pytest.approx(want_auc, rel=1e-12)
    assert r.auc_se**2 == pytest.approx(want_var, rel=1e-12)
    half = z_of(0.9) * math.sqrt(want_var)
    assert r.auc_ci_lower == pytest.approx(max(want_auc - half, 0), rel=1e-12)
    assert r.auc_ci_upper == pytest.approx(min(want_auc + half, 1), rel=1e-12)


def test_textbook_example_by_hand():
    # positives 0.8, 0.4, 0.9, 0.2; negatives 0.1, 0.35, 0.3 (the specification's)
    y = [0, 0, 0, 1, 1, 1, 1]
    s = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]
    r = sm.RankAUC().update(y, s).finalize(ci=0.95)
    # V10 = (1, 1, 1, 1/3), V01 = (1, 3/4, 3/4): S10 = 1/9, S01 = 1/48
    assert r.auc_se == pytest.approx(math.sqrt(1 / 9 / 4 + 1 / 48 / 3), rel=1e-15)
    # all tied: every placement is 1/2, the variance 0
    t = sm.RankAUC().update([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]).finalize(ci=0.95)
    assert (t.auc, t.auc_se, t.auc_ci_lower, t.auc_ci_upper) == (0.5, 0.0, 0.5, 0.5)


def test_kernel_sums_on_points():
    rng = np.random.default_rng(7)
    y, s = _data(rng, 80)
    scores = np.unique(s)
    ab = np.array(
        [[np.sum((s == v) & (y == 1)) for v in scores], [np.sum((s == v) & (y == 0)) for v in scores]], np.int64
    )
    theta, P, N, ss_pos, ss_neg = delong_sums(ab)
    auc, var = delong_brute(y, s)
    assert (P, N) == (y.sum(), len(y) - y.sum())
    assert theta == pytest.approx(auc, rel=1e-14)
    assert ss_pos / (P * (P - 1)) + ss_neg / (N * (N - 1)) == pytest.approx(var, rel=1e-12)
    assert delong_sums(ab.astype(np.float64))[3:] == pytest.approx((ss_pos, ss_neg), rel=1e-15)


def test_weights_scale_free_and_equal_weights_unweighted():
    rng = np.random.default_rng(3)
    y, s = _data(rng, 120)
    plain = sm.RankAUC().update(y, s).finalize(ci=0.95)
    equal = sm.RankAUC().update(y, s, sample_weight=np.full(len(y), 4.0)).finalize(ci=0.95)
    assert equal.auc_se == pytest.approx(plain.auc_se, rel=1e-12)
    w = rng.random(len(y)) + 0.5
    a = sm.RankAUC().update(y, s, sample_weight=w).finalize(ci=0.95)
    b = sm.RankAUC().update(y, s, sample_weight=1000 * w).finalize(ci=0.95)
    assert b.auc_se == pytest.approx(a.auc_se, rel=1e-12)


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 6), st.integers(0, 3)), min_size=4, max_size=80),
    st.integers(1, 4),
    st.sampled_from(["none", "all", "some"]),
)
@settings(max_examples=60, deadline=None)
def test_merge_order_batching_and_saving(rows, shards, weighted):
    y = np.array([r[0] for r in rows])
    s = np.array([r[1] for r in rows], float) / 2
    w = np.array([r[2] for r in rows], float) / 2 + 0.25
    parts = np.array_split(np.arange(len(rows)), shards)

    def weights(i, idx):
        if weighted == "all" or (weighted == "some" and i % 2):
            return w[idx]
        return None

    whole = sm.RankAUC()
    accs = []
    for i, idx in enumerate(parts):
        whole.update(y[idx], s[idx], sample_weight=weights(i, idx))
        accs.append(sm.RankAUC().update(y[idx], s[idx], sample_weight=weights(i, idx)))
    want = whole.finalize(ci=0.8)
    merged = accs[-1]
    for a in accs[-2::-1]:
        merged = a + merged
    for got in (merged.finalize(ci=0.8), merged.copy().flush().finalize(ci=0.8)):
        for k in ("auc", "auc_se", "auc_ci_lower", "auc_ci_upper"):
            if math.isnan(want[k]):
                assert math.isnan(got[k])
            else:
                assert got[k] == pytest.approx(want[k], rel=1e-11, abs=1e-14), k
    loaded = sm.RankAUC()
    loaded.load_state_dict(merged.state_dict())
    assert loaded.finalize(ci=0.8)["auc_ci_lower"] == pytest.approx(want["auc_ci_lower"], rel=1e-11, abs=1e-14)


def test_save_and_load_keep_the_squared_weights(tmp_path):
    rng = np.random.default_rng(4)
    y, s = _data(rng, 200)
    w = rng.random(200) * 2
    acc = sm.RankAUC().update(y, s, sample_weight=w)
    acc.save(tmp_path / "a.state")
    again = sm.load_state(tmp_path / "a.state")
    assert again.finalize(ci=0.95).auc_se == pytest.approx(acc.finalize(ci=0.95).auc_se, rel=1e-14)


def test_states_saved_before_the_squared_weights():
    exact = sm.load_state(V1 / "rank_auc_exact.state")
    r = exact.finalize(ci=0.95)  # counts need nothing more
    assert r.auc_ci_lower <= r.auc <= r.auc_ci_upper and r.auc_se > 0
    weighted = sm.load_state(V1 / "rank_auc_weighted.state")
    weighted.finalize()
    with pytest.raises(ValueError, match="without their squared weights"):
        weighted.finalize(ci=0.95)
    with pytest.raises(ValueError, match="squared weights"):
        (weighted + sm.RankAUC().update([0, 1], [0.1, 0.9], sample_weight=[1.0, 1.0])).finalize(ci=0.95)


def test_bounded_state_widens_by_its_bounds():
    rng = np.random.default_rng(5)
    n = 300_000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + 0.7 * y
    bounded = sm.RankAUC(max_bins=20)
    for idx in np.array_split(np.arange(n), 30):
        bounded.update(y[idx], s[idx])
    b = bounded.finalize(ci=0.95)
    assert b.auc_lower < b.auc_upper  # really binned
    points = bounded._strategy.run(bounded._pending)
    _, P, N, ss_pos, ss_neg = delong_sums(points[1])
    se = math.sqrt(ss_pos / (P * (P - 1)) + ss_neg / (N * (N - 1)))
    assert b.auc_se == pytest.approx(se, rel=1e-12)
    half = z_of(0.95) * se
    assert b.auc_ci_lower == pytest.approx(b.auc_lower - half, rel=1e-12)
    assert b.auc_ci_upper == pytest.approx(b.auc_upper + half, rel=1e-12)
    e = sm.RankAUC().update(y, s).finalize(ci=0.95)
    assert b.auc_ci_lower <= e.auc_ci_lower and e.auc_ci_upper <= b.auc_ci_upper
    # while a bounded state holds every score it is exact, interval included
    few = sm.RankAUC(max_bins=1000).update(y[:500], np.round(s[:500], 1)).finalize(ci=0.95)
    exact = sm.RankAUC().update(y[:500], np.round(s[:500], 1)).finalize(ci=0.95)
    assert few.auc_se == pytest.approx(exact.auc_se, rel=1e-14)
    assert few.auc_ci_lower == pytest.approx(exact.auc_ci_lower, rel=1e-14)


def test_undefined_variance():
    one = sm.RankAUC().update([1, 0, 0, 0], [0.9, 0.1, 0.2, 0.3]).finalize(ci=0.95)
    assert math.isnan(one.auc_se) and (one.auc_ci_lower, one.auc_ci_upper) == (0.0, 1.0)
    single = sm.RankAUC().update([1, 1], [0.9, 0.1]).finalize(ci=0.95)
    assert single.auc == 0.0 and (single.auc_ci_lower, single.auc_ci_upper) == (0.0, 1.0)
    # one heavy row among light ones: Kish's size of the positives is about 1
    w = sm.RankAUC().update([1, 1, 0, 0], [0.9, 0.1, 0.2, 0.3], sample_weight=[1e9, 1e-9, 1, 1])
    assert math.isnan(w.finalize(ci=0.95).auc_se)


def test_no_interval_fields_without_ci_and_bad_levels():
    acc = sm.RankAUC().update([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.5])
    assert "auc_se" not in acc.finalize() and "auc_ci_lower" not in acc.finalize(ci=None)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        acc.finalize(ci=1.5)
    with pytest.raises(TypeError, match="real number"):
        acc.finalize(ci="95%")


def test_standard_error_by_simulation():
    """The mean DeLong standard error matches the spread of the AUC over
    replicates, and the 90 % interval covers the true AUC about 90 % of the time."""
    rng = np.random.default_rng(11)
    reps, n_pos, n_neg, shift = 400, 60, 90, 1.0
    truth = 0.5 * math.erfc(-shift / 2)  # P(X > Y), X ~ N(1, 1), Y ~ N(0, 1)
    aucs, ses, cover = [], [], 0
    for _ in range(reps):
        s = np.concatenate((rng.normal(shift, 1, n_pos), rng.normal(0, 1, n_neg)))
        y = np.r_[np.ones(n_pos, int), np.zeros(n_neg, int)]
        r = sm.RankAUC().update(y, s).finalize(ci=0.9)
        aucs.append(r.auc)
        ses.append(r.auc_se)
        cover += r.auc_ci_lower <= truth <= r.auc_ci_upper
    ratio = np.mean(ses) / np.std(aucs, ddof=1)
    assert 0.88 < ratio < 1.12, ratio  # the sd of an sd from 400 replicates is about 3.5 %
    assert 0.86 <= cover / reps <= 0.94
