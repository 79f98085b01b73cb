"""Paired comparison: bootstrap differences of two models, and DeLong's paired test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import streammetrics as sm


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    a = np.clip(0.30 * y + 0.70 * rng.random(n), 0, 1)
    b = np.clip(0.15 * y + 0.85 * rng.random(n), 0, 1)
    return y, a, b


def _preset():
    return sm.Evaluator({"binary": sm.BinaryConfusion(threshold=0.5), "probability": sm.ProbabilityScores()})


def _boot(template, y, p, keys=None, replicates=60, seed=3):
    return sm.Bootstrap(template, replicates=replicates, seed=seed).update(y, p, key=keys)


# ------------------------------------------------------------- bootstrap
@pytest.mark.parametrize("template", [_preset, sm.RankAUC])
def test_a_model_compared_with_itself_differs_by_zero_with_p_value_one(template):
    y, a, _ = _data(800)
    r = sm.compare(_boot(template(), y, a), _boot(template(), y, a))
    scores = [k[:-5] for k in r if k.endswith("_diff")]
    assert scores and r.replicates_used == 60
    for k in scores:
        assert r[f"{k}_diff"] == 0.0 == r[f"{k}_diff_ci_lower"] == r[f"{k}_diff_ci_upper"], k
        assert r[f"{k}_p_value"] == 1.0, k


def test_differences_are_the_replicate_by_replicate_differences():
    y, a, b = _data(1500, seed=1)
    keys = np.random.default_rng(2).permutation(1500)
    ba, bb = _boot(_preset(), y, a, keys), _boot(_preset(), y, b, keys)
    r = sm.compare(ba, bb, ci=0.9)
    for k in ("f1", "accuracy", "log_loss", "brier"):
        d = np.array([x.finalize()[k] - z.finalize()[k] for x, z in zip(ba._replicas, bb._replicas)])
        assert r[f"{k}_a"] == ba.finalize()[k] and r[f"{k}_b"] == bb.finalize()[k]
        assert r[f"{k}_diff"] == r[f"{k}_a"] - r[f"{k}_b"]
        assert r[f"{k}_diff_ci_lower"] == pytest.approx(np.quantile(d, 0.05), rel=1e-12)
        assert r[f"{k}_diff_ci_upper"] == pytest.approx(np.quantile(d, 0.95), rel=1e-12)
        want_p = min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0)))
        assert r[f"{k}_p_value"] == want_p
    assert r.f1_p_value < 0.05 < r.f1_diff  # model a is the better one


def test_the_comparison_is_paired():
    # the same model plus a little noise: unpaired intervals overlap, the paired one excludes 0
    y, a, _ = _data(3000, seed=4)
    b = np.clip(a - 0.02 * np.random.default_rng(5).random(3000) * y, 0, 1)  # b a shade worse on positives
    keys = np.arange(3000)
    ba, bb = _boot(sm.RankAUC(), y, a, keys, 100), _boot(sm.RankAUC(), y, b, keys, 100)
    r, ra, rb = sm.compare(ba, bb), ba.finalize(), bb.finalize()
    assert ra.auc_ci_lower < rb.auc_ci_upper  # overlapping marginal intervals
    assert 0 < r.auc_diff_ci_lower and r.auc_p_value < 0.05


@settings(max_examples=10, deadline=None)
@given(st.integers(20, 300), st.integers(1, 3), st.randoms(use_true_random=False))
def test_shards_merged_in_any_order_compare_as_one_stream(n, shards, rnd):
    y, a, b = _data(n, seed=n)
    keys = np.arange(n) * 7 + 1
    parts = [[_boot(_preset(), y[:0], a[:0], keys[:0]) for _ in range(shards)] for _ in range(2)]
    cut = sorted(rnd.sample(range(1, n), min(shards - 1, n - 1)))
    for i, (lo, hi) in enumerate(zip([0, *cut], [*cut, n])):
        parts[0][i].update(y[lo:hi], a[lo:hi], key=keys[lo:hi])
        parts[1][i].update(y[lo:hi], b[lo:hi], key=keys[lo:hi])
    merged = []
    for side in parts:
        rnd.shuffle(side)
        total = side[0].copy()
        for p in side[1:]:
            total.merge(p)
        merged.append(total)
    one = sm.compare(_boot(_preset(), y, a, keys), _boot(_preset(), y, b, keys))
    got = sm.compare(*merged)
    for k, v in one.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-15, nan_ok=True), k


def test_refusals():
    y, a, b = _data(100)
    ba = _boot(sm.BinaryConfusion(threshold=0.5), y, a)
    with pytest.raises(TypeError, match="b must be a Bootstrap"):
        sm.compare(ba, sm.BinaryConfusion())
    with pytest.raises(ValueError, match="same template, replicates and seed"):
        sm.compare(ba, _boot(sm.BinaryConfusion(threshold=0.5), y, b, seed=4))
    with pytest.raises(ValueError, match="same template, replicates and seed"):
        sm.compare(ba, _boot(sm.BinaryConfusion(threshold=0.6), y, b))
    with pytest.raises(ValueError, match="a holds 100 rows and b 99"):
        sm.compare(ba, _boot(sm.BinaryConfusion(threshold=0.5), y[:99], b[:99]))
    with pytest.raises(ValueError, match="ci must lie strictly between 0 and 1"):
        sm.compare(ba, ba, ci=95)


# ---------------------------------------------------------------- DeLong
def _paired_brute(y, sa, sb, w):
    """DeLong et al. (1988), pair by pair: the AUCs and the variance of their difference
    (weighted means; Kish's effective sizes for the classes)."""
    pos = [i for i in range(len(y)) if y[i] == 1 and w[i] > 0]
    neg = [j for j in range(len(y)) if y[j] == 0 and w[j] > 0]

    def psi(u, v):
        return 1.0 if u > v else (0.5 if u == v else 0.0)

    P, N = sum(w[i] for i in pos), sum(w[j] for j in neg)
    m = P * P / sum(w[i] ** 2 for i in pos)
    k = N * N / sum(w[j] ** 2 for j in neg)
    out = []
    for s in (sa, sb):
        v10 = {i: sum(w[j] * psi(s[i], s[j]) for j in neg) / N for i in pos}
        v01 = {j: sum(w[i] * psi(s[i], s[j]) for i in pos) / P for j in neg}
        auc = sum(w[i] * v10[i] for i in pos) / P
        out.append((auc, v10, v01))
    (A, a10, a01), (B, b10, b01) = out

    def cov(x10, xa, z10, za, rows, tot, size):
        return sum(w[i] * (x10[i] - xa) * (z10[i] - za) for i in rows) / tot * size / (size - 1)

    var = 0.0
    for rows, tot, size, xa, xb in ((pos, P, m, a10, b10), (neg, N, k, a01, b01)):
        s_aa, s_bb = cov(xa, A, xa, A, rows, tot, size), cov(xb, B, xb, B, rows, tot, size)
        s_ab = cov(xa, A, xb, B, rows, tot, size)
        var += (s_aa + s_bb - 2 * s_ab) / size
    return A, B, var


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weights", ["none", "integer", "real"])
def test_paired_delong_against_brute_force_with_ties(seed, weights):
    rng = np.random.default_rng(seed)
    n = 90
    y, a, b = _data(n, seed)
    a, b = np.round(a, 1), np.round(b * 3, 0) / 3  # many ties, within and across classes
    w = {"none": np.ones(n), "integer": rng.integers(0, 4, n).astype(float), "real": rng.random(n) * 2}[weights]
    r = sm.paired_delong(y, a, b, sample_weight=None if weights == "none" else w)
    A, B, var = _paired_brute(y, a, b, w)
    assert r.auc_a == pytest.approx(A, abs=1e-12) and r.auc_b == pytest.approx(B, abs=1e-12)
    assert r.auc_a == pytest.approx(roc_auc_score(y, a, sample_weight=w), abs=1e-12)
    assert r.auc_diff_se == pytest.approx(math.sqrt(var), abs=1e-12)
    z = (A - B) / math.sqrt(var)
    assert r.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), abs=1e-10)


def test_paired_delong_against_a_constant_model_is_the_one_sample_delong():
    y, a, _ = _data(400, seed=8)
    r = sm.paired_delong(y, a, np.zeros(400))
    one = sm.RankAUC().update(y, a).finalize(ci=0.95)
    assert r.auc_b == 0.5 and r.auc_diff_se == pytest.approx(one.auc_se, rel=1e-12)


def test_paired_delong_of_a_model_with_itself_or_a_monotone_copy():
    y, a, _ = _data(300, seed=9)
    for other in (a, 3 * a + 1, np.exp(a)):
        r = sm.paired_delong(y, a, other)
        assert r.auc_diff == 0.0 and r.auc_diff_se == 0.0 and r.p_value == 1.0


def test_paired_delong_refusals():
    with pytest.raises(ValueError, match=r"p_b\[1\] = nan"):
        sm.paired_delong([0, 1], [0.1, 0.2], [0.1, np.nan])
    with pytest.raises(ValueError, match=r"y\[2\] = 2"):
        sm.paired_delong([0, 1, 2], [0.1, 0.2, 0.3], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="p_a has 1 rows but y has 2"):
        sm.paired_delong([0, 1], [0.1], [0.1, 0.2])
    with pytest.raises(ValueError, match="both classes"):
        sm.paired_delong([1, 1], [0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"sample_weight\[0\] = -1"):
        sm.paired_delong([0, 1], [0.1, 0.2], [0.1, 0.2], sample_weight=[-1, 1])
