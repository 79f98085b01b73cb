"""Probabilistic and regression scores: the specification's examples, guards,
compensated sums, Chan-merged moments, scikit-learn agreement and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics._kernels.probability import probability_terms
from streammetrics._kernels.regression import regression_moments
from streammetrics._kernels.row_sums import sum_rows

from .harness import check_accumulator, check_rejected_batch, sharded

YR, PR = [3, 5, 2, 7], [2.5, 5, 3, 8]


def test_specification_examples():
    yb, pb = [1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]
    assert round(sm.log_loss(yb, pb), 6) == 0.337539
    assert sm.brier(yb, pb) == pytest.approx(0.0925, rel=1e-15)
    assert sm.mse(YR, PR) == 0.5625
    assert sm.rmse(YR, PR) == 0.75
    assert sm.mae(YR, PR) == 0.625
    assert round(sm.mape(YR, PR), 6) == 0.202381
    assert sm.r2(YR, PR) == pytest.approx(1 - 2.25 / 14.75, rel=1e-15)


def test_log_loss_floors_at_1e_12_both_sides():
    # a certain-and-wrong prediction costs -ln(1e-12), on either side
    assert sm.log_loss([1], [0.0]) == pytest.approx(-math.log(1e-12), rel=1e-15)
    assert sm.log_loss([0], [1.0]) == pytest.approx(-math.log(1e-12), rel=1e-15)
    assert sm.log_loss([1, 0], [1.0, 0.0]) == pytest.approx(-math.log(1.0), abs=0)


def test_mape_floor_and_r2_guard():
    assert sm.mape([0.0], [1.0]) == pytest.approx(1e12, rel=1e-15)
    # constant y: the guard makes r2 = 1 - SSE (scikit-learn would say 0.0)
    assert sm.r2([2.0, 2.0], [2.5, 1.0]) == pytest.approx(1 - 1.25, rel=1e-15)
    assert sm.r2([2.0, 2.0], [2.0, 2.0]) == 1.0


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_agrees_with_sklearn(weighted, seed):
    rng = np.random.default_rng(seed)
    n = 1000
    y = rng.integers(0, 2, n)
    p = np.clip(rng.random(n), 1e-6, 1 - 1e-6)
    w = rng.random(n) if weighted else None
    assert sm.log_loss(y, p, sample_weight=w) == pytest.approx(skm.log_loss(y, p, sample_weight=w), rel=1e-12)
    assert sm.brier(y, p, sample_weight=w) == pytest.approx(skm.brier_score_loss(y, p, sample_weight=w), rel=1e-12)
    yr = rng.normal(size=n) * 10 + 3
    pr = yr + rng.normal(size=n)
    assert sm.mse(yr, pr, sample_weight=w) == pytest.approx(skm.mean_squared_error(yr, pr, sample_weight=w), rel=1e-12)
    assert sm.rmse(yr, pr, sample_weight=w) == pytest.approx(
        skm.root_mean_squared_error(yr, pr, sample_weight=w), rel=1e-12
    )
    assert sm.mae(yr, pr, sample_weight=w) == pytest.approx(skm.mean_absolute_error(yr, pr, sample_weight=w), rel=1e-12)
    assert sm.mape(yr, pr, sample_weight=w) == pytest.approx(
        skm.mean_absolute_percentage_error(yr, pr, sample_weight=w), rel=1e-12
    )
    assert sm.r2(yr, pr, sample_weight=w) == pytest.approx(skm.r2_score(yr, pr, sample_weight=w), rel=1e-12)


def test_streamed_log_loss_matches_fsum():
    rng = np.random.default_rng(0)
    n, batch = 10_000_000, 1_000_000
    acc = sm.ProbabilityScores()
    terms_total = []
    for _i in range(n // batch):
        y = rng.random(batch) < 0.5
        p = rng.random(batch)
        acc.update(y, p)
        q = np.where(y, p, 1 - p)
        terms_total.append(-np.log(np.maximum(q, 1e-12)))
    exact = math.fsum(np.concatenate(terms_total)) / n
    assert acc.finalize().log_loss == pytest.approx(exact, rel=1e-12)


def test_far_from_zero_r2_and_mse_are_exact():
    # y = 1e9 + N(0, 1) in 1000 batches: Σy² - nȳ² would lose every digit
    rng = np.random.default_rng(5)
    ys = [1e9 + rng.normal(size=200) for _ in range(1000)]
    ps = [y + rng.normal(scale=0.5, size=200) for y in ys]
    acc = sm.RegressionErrors()
    for y, p in zip(ys, ps):
        acc.update(y, p)
    r = acc.finalize()
    y, p = np.concatenate(ys), np.concatenate(ps)
    from fractions import Fraction

    fy = [Fraction(v) for v in y]
    mean = sum(fy) / len(fy)
    tss = sum((v - mean) ** 2 for v in fy)
    sse = sum((Fraction(a) - Fraction(b)) ** 2 for a, b in zip(y, p))
    assert r.mse == pytest.approx(float(sse / len(fy)), rel=1e-9)
    assert r.r2 == pytest.approx(float(1 - sse / tss), rel=1e-9)


@given(
    data=st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.floats(0.01, 5)), min_size=2, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=5),
    weighted=st.booleans(),
)
def test_regression_batching_invariance(data, cuts, weighted):
    y = np.array([d[0] for d in data])
    p = np.array([d[1] for d in data])
    w = np.array([d[2] for d in data]) if weighted else None
    whole = sm.RegressionErrors().update(y, p, sample_weight=w).finalize()
    got = sharded(sm.RegressionErrors, (y, p), w, cuts).finalize()
    for k in ("mse", "mae", "mape"):
        assert getattr(got, k) == pytest.approx(getattr(whole, k), rel=1e-12, abs=1e-300)
    # r2 is 1 - SSE/T: compare the residual ratio, as T itself is the sum of
    # squared deviations (relative precision of T is what the state keeps)
    assert got.r2 == pytest.approx(whole.r2, rel=1e-9, abs=1e-9)


@given(
    data=st.lists(st.tuples(st.booleans(), st.floats(0, 1), st.floats(0.01, 5)), min_size=1, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=5),
    weighted=st.booleans(),
)
def test_probability_batching_invariance(data, cuts, weighted):
    y = np.array([d[0] for d in data])
    p = np.array([d[1] for d in data])
    w = np.array([d[2] for d in data]) if weighted else None
    whole = sm.ProbabilityScores().update(y, p, sample_weight=w).finalize()
    got = sharded(sm.ProbabilityScores, (y, p), w, cuts, order="plus").finalize()
    assert got.log_loss == pytest.approx(whole.log_loss, rel=1e-12, abs=1e-300)
    assert got.brier == pytest.approx(whole.brier, rel=1e-12, abs=1e-300)


def _prob_batches(seed, weighted):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(8):
        m = int(rng.integers(1, 50))
        args = (rng.random(m) < 0.5, rng.random(m))
        out.append({"args": args, "sample_weight": rng.random(m)} if weighted else args)
    return out


def _reg_batches(seed, weighted):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(8):
        m = int(rng.integers(1, 50))
        y = rng.normal(size=m) * 3 + 100
        args = (y, y + rng.normal(size=m))
        out.append({"args": args, "sample_weight": rng.random(m)} if weighted else args)
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_protocol(weighted):
    check_accumulator(sm.ProbabilityScores, _prob_batches(1, weighted))
    check_accumulator(sm.RegressionErrors, _reg_batches(2, weighted), rtol=1e-11)


def test_accumulator_example_values():
    acc = sm.RegressionErrors().update([3, 5], [2.5, 5]).update([2, 7], [3, 8])
    r = acc.finalize()
    assert (r.mse, r.rmse, r.mae) == (0.5625, 0.75, 0.625)
    assert r.r2 == pytest.approx(1 - 2.25 / 14.75, rel=1e-15)


@pytest.mark.parametrize(
    "y, p, kw, match",
    [
        ([1, 0, 1], [0.2, 1.3, 0.5], {}, r"p\[1\] = 1.3: probabilities must lie in \[0, 1\]"),
        ([1, 0, 1], [0.2, -0.1, 0.5], {}, r"p\[1\] = -0.1"),
        ([1, 0, 1], [0.2, np.nan, 0.5], {}, r"p\[1\] = nan"),
        ([1, 3, 1], [0.2, 0.3, 0.5], {}, r"y\[1\] = 3"),
        ([1, 0, 1], [0.2, 0.3], {}, "different lengths"),
        ([1, 0, 1], [0.2, 0.3, 0.5], {"sample_weight": [1, 1, -2]}, r"sample_weight\[2\] = -2"),
    ],
)
def test_probability_bad_input(y, p, kw, match):
    acc = sm.ProbabilityScores().update([1, 0], [0.7, 0.1])
    check_rejected_batch(acc, (y, p), kw, match=match)


@pytest.mark.parametrize(
    "y, p, match",
    [
        ([1.0, np.nan, 2.0], [1.0, 2.0, 3.0], r"y\[1\] = nan: values must be finite"),
        ([1.0, 2.0, 3.0], [1.0, 2.0, -np.inf], r"p\[2\] = -inf"),
        ([[1.0, 2.0]], [1.0, 2.0], "1-D"),
        (np.arange(600.0), np.r_[np.arange(599.0), np.inf], r"p\[599\] = inf"),  # past the first block
    ],
)
def test_regression_bad_input(y, p, match):
    acc = sm.RegressionErrors().update([1.0, 2.0], [1.5, 2.5])
    check_rejected_batch(acc, (y, p), match=match)


def test_overflowing_squares_raise_instead_of_nan():
    with pytest.raises(ValueError, match="overflow"):
        sm.r2([1e200, -1e200], [0.0, 0.0])


def test_kernels_against_naive_python():
    rng = np.random.default_rng(9)
    y = (rng.random(700) < 0.5).astype(np.uint8)
    p = rng.random(700)
    second = ((1, 1), (2, 1), (0, 2))  # loss², d2², w²
    status, pairs = sum_rows(probability_terms, (y, p), np.empty(0), 5, second)  # 1, loss, d2, 1 - y, y
    assert status == 0
    sums, squares = pairs[:5], pairs[5:]
    assert sums[3].sum() == (y == 0).sum() and sums[4].sum() == y.sum()
    losses = [-math.log(max(pi if yi else 1 - pi, 1e-12)) for yi, pi in zip(y, p)]
    d2 = [(pi - yi) ** 2 for yi, pi in zip(y, p)]
    assert sums[0].sum() == 700
    assert sums[1].sum() == pytest.approx(math.fsum(losses), rel=1e-14)
    assert sums[2].sum() == pytest.approx(math.fsum(d2), rel=1e-14)
    assert squares[0].sum() == pytest.approx(math.fsum(v * v for v in losses), rel=1e-14)
    assert squares[1].sum() == pytest.approx(math.fsum(v * v for v in d2), rel=1e-14)
    assert squares[2].sum() == 700
    w = rng.random(700) * 3
    status, pairs = sum_rows(probability_terms, (y, p), w, 5, second)
    assert status == 0
    wsums, wsquares = pairs[:5], pairs[5:]
    assert wsums[4].sum() == pytest.approx(math.fsum(w[y == 1]), rel=1e-14)
    assert wsums[0].sum() == pytest.approx(math.fsum(w), rel=1e-14)
    assert wsums[1].sum() == pytest.approx(math.fsum(a * b for a, b in zip(w, losses)), rel=1e-14)
    assert wsums[2].sum() == pytest.approx(math.fsum(a * b for a, b in zip(w, d2)), rel=1e-14)
    assert wsquares[2].sum() == pytest.approx(math.fsum(w * w), rel=1e-14)
    assert sum_rows(probability_terms, (y, np.full(700, 1.5)), w, 5, second)[0] == 2

    yr = rng.normal(size=700) + 50
    pr = yr + rng.normal(size=700)
    moments, rsums, rmoments, top = np.zeros(6), np.zeros((3, 2)), np.zeros(6), np.zeros(1)
    n = np.zeros(1, np.int64)
    assert regression_moments(yr, pr, np.empty(0), n, moments, rsums, np.zeros((3, 2)), rmoments, top) == 0
    assert n[0] == 700
    mean = math.fsum(yr) / 700
    assert moments[2] + moments[3] == pytest.approx(mean, rel=1e-15)
    assert moments[4] + moments[5] == pytest.approx(math.fsum((v - mean) ** 2 for v in yr), rel=1e-13)
    assert rsums[0].sum() == pytest.approx(math.fsum((a - b) ** 2 for a, b in zip(yr, pr)), rel=1e-14)
    rmean = math.fsum(a - b for a, b in zip(yr, pr)) / 700
    assert rmoments[4] + rmoments[5] == pytest.approx(
        math.fsum((a - b - rmean) ** 2 for a, b in zip(yr, pr)), rel=1e-13
    )
    assert top[0] == max(abs(a - b) for a, b in zip(yr, pr))


def test_results_of_weighted_rows_say_so():
    import streammetrics as sm

    y, p, w = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.4], [1.0, 2.0, 0.5, 1.0]
    for make in (sm.RegressionErrors, sm.ProbabilityScores):
        assert make().update(y, p, sample_weight=w).finalize().weighted
        assert not make().update(y, p).finalize().weighted
    assert sm.RegressionErrors().update(y, p, sample_weight=w).finalize(ci=0.9).weighted
    assert sm.Evaluator("regression").update(y, p, sample_weight=w).finalize().weighted
    m = [[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.9, 0.1]]
    assert sm.ClassProbabilityScores(2).update(y, m, sample_weight=w).finalize().weighted
