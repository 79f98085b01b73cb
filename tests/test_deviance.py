"""TweedieDeviance and the one-shot deviances against scikit-learn.

The protocol (merges, copies, saving, rejected batches, Evaluator, Sliced and
Bootstrap through the declared row terms) runs over its registry row; here
are the values for every kind of power, the domains and the edge cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

skm = pytest.importorskip("sklearn.metrics")

POWERS = (0, 1, 1.5, 2, 3, -1.5)


def _data(power, n=500, seed=0):
    """Truths and predictions in the domain of ``power``, with zeros where it allows them."""
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 1.5, n)
    if 0 < power < 2:
        y[rng.random(n) < 0.2] = 0.0
    elif power <= 0:
        y -= 1.0  # any real truth
    p = rng.gamma(2.0, 1.5, n) + 0.05
    return y, p, rng.random(n) * 3


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("power", POWERS)
def test_matches_scikit_learn(power, weighted):
    y, p, w = _data(power, seed=int(10 * power) + 20)
    w = w if weighted else None
    want_dev = skm.mean_tweedie_deviance(y, p, sample_weight=w, power=power)
    want_d2 = skm.d2_tweedie_score(y, p, sample_weight=w, power=power)
    acc = sm.TweedieDeviance(power=power)
    for lo in range(0, len(y), 64):
        acc.update(y[lo : lo + 64], p[lo : lo + 64], sample_weight=None if w is None else w[lo : lo + 64])
    r = acc.finalize()
    assert r.mean_deviance == pytest.approx(want_dev, rel=1e-12)
    assert r.d2 == pytest.approx(want_d2, rel=1e-12)
    assert r.n == len(y) and r.weight == pytest.approx(len(y) if w is None else w.sum(), rel=1e-15)
    assert r.weighted is weighted
    assert sm.mean_tweedie_deviance(y, p, sample_weight=w, power=power) == pytest.approx(want_dev, rel=1e-12)
    assert sm.d2_tweedie_score(y, p, sample_weight=w, power=power) == pytest.approx(want_d2, rel=1e-12)


def test_poisson_and_gamma_are_powers_1_and_2():
    y, p, w = _data(2)
    assert sm.mean_poisson_deviance(y, p, sample_weight=w) == pytest.approx(
        skm.mean_poisson_deviance(y, p, sample_weight=w), rel=1e-12
    )
    assert sm.mean_gamma_deviance(y, p, sample_weight=w) == pytest.approx(
        skm.mean_gamma_deviance(y, p, sample_weight=w), rel=1e-12
    )


def test_long_stream_totals_are_compensated():
    y, p, _ = _data(1.5, n=200_000, seed=3)
    rows = 2 * (y**0.5 / -0.25 - y * p**-0.5 / -0.5 + p**0.5 / 0.5)
    acc = sm.TweedieDeviance(1.5)
    for lo in range(0, len(y), 7919):
        acc.update(y[lo : lo + 7919], p[lo : lo + 7919])
    assert acc.finalize().mean_deviance == pytest.approx(math.fsum(np.maximum(rows, 0)) / len(y), rel=1e-14)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 120), max_size=6), st.sampled_from(POWERS))
def test_batching_and_merging_do_not_change_the_scores(seed, cuts, power):
    y, p, w = _data(power, n=120, seed=seed)
    whole = sm.TweedieDeviance(power).update(y, p, sample_weight=w)
    edges = [0, *sorted(cuts), len(y)]
    parts = [
        sm.TweedieDeviance(power).update(y[a:b], p[a:b], sample_weight=w[a:b]) for a, b in zip(edges[:-1], edges[1:])
    ]
    streamed = sm.TweedieDeviance(power)
    for a, b in zip(edges[:-1], edges[1:]):
        streamed.update(y[a:b], p[a:b], sample_weight=w[a:b])
    merged = parts[-1]
    for part in parts[-2::-1]:
        merged = part + merged
    want = whole.finalize()
    for got in (streamed.finalize(), merged.finalize()):
        assert got.n == want.n
        for k in ("mean_deviance", "d2", "weight"):
            assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("power", [0, 1, 2, 3])
def test_sliced_and_bootstrap_agree_with_each_slice(power):
    y, p, w = _data(power, n=400, seed=5)
    by = np.random.default_rng(1).integers(0, 7, len(y))
    sliced = sm.Sliced(sm.TweedieDeviance(power)).update(y, p, sample_weight=w, by=by).finalize()
    for key, got in sliced.slices.items():
        m = by == key
        want = sm.TweedieDeviance(power).update(y[m], p[m], sample_weight=w[m]).finalize()
        assert got.n == want.n
        for k in ("mean_deviance", "d2", "weight"):
            assert got[k] == pytest.approx(want[k], rel=1e-12)
    boot = sm.Bootstrap(sm.TweedieDeviance(power), replicates=20, seed=4).update(y, p, sample_weight=w).finalize()
    lo, hi = boot["mean_deviance_ci_lower"], boot["mean_deviance_ci_upper"]
    assert lo <= skm.mean_tweedie_deviance(y, p, sample_weight=w, power=power) <= hi


DOMAIN_ERRORS = [
    (0, [1.0, np.inf], [1.0, 1.0], r"y\[1\] = inf: values must be finite"),
    (0, [1.0, -3.0], [1.0, np.nan], r"p\[1\] = nan: values must be finite"),
    (1, [1.0, 0.0, -0.5], [1.0, 1.0, 1.0], r"y\[2\] = -0.5: the Tweedie deviance of power 1 needs y >= 0"),
    (1, [1.0, 0.0], [1.0, 0.0], r"p\[1\] = 0.0: the Tweedie deviance of power 1 needs p > 0"),
    (1.5, [0.0, 2.0], [1.0, -1.0], r"p\[1\] = -1.0: .* power 1.5 needs p > 0"),
    (2, [1.0, 0.0], [1.0, 1.0], r"y\[1\] = 0.0: the Tweedie deviance of power 2 needs y > 0"),
    (3, [1.0, 2.0, 3.0], [1.0, 2.0, -0.0], r"p\[2\] = -0.0: .* power 3 needs p > 0"),
    (-1.5, [-4.0, 2.0], [1.0, 0.0], r"p\[1\] = 0.0: .* power -1.5 needs p > 0"),
]


@pytest.mark.parametrize("power, y, p, match", DOMAIN_ERRORS)
def test_domain_errors_name_the_first_bad_value_and_change_nothing(power, y, p, match):
    acc = sm.TweedieDeviance(power).update([1.0, 2.0], [1.0, 2.0])
    before = acc.state_dict()
    with pytest.raises(sm.BadValueError, match=match):
        acc.update(y, p)
    with pytest.raises(sm.BadValueError, match=match):
        acc.prepare(y, p)
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    renamed = match.replace("y", "y_true").replace("p\\[", "y_pred\\[").replace("needs p", "needs y_pred")
    with pytest.raises(ValueError, match=renamed):
        sm.mean_tweedie_deviance(y, p, power=power)


def test_the_one_shot_functions_name_scikit_learns_arguments():
    with pytest.raises(sm.BadValueError, match=r"y_pred\[0\] = 0.0: .* needs y_pred > 0") as e:
        sm.mean_poisson_deviance([1.0], [0.0])
    assert e.value.argument == "y_pred" and e.value.index == 0
    with pytest.raises(sm.BadValueError, match=r"y_true\[1\] = 0.0: .* needs y_true > 0"):
        sm.d2_tweedie_score([1.0, 0.0], [1.0, 1.0], power=2)
    with pytest.raises(sm.NoObservationsError):
        sm.mean_gamma_deviance([], [])


@pytest.mark.parametrize("power", [0.5, 0.999, float("nan"), float("inf")])
def test_powers_without_a_distribution_are_refused(power):
    with pytest.raises(ValueError, match="power must be <= 0 or >= 1"):
        sm.TweedieDeviance(power)
    with pytest.raises(ValueError, match="power must be <= 0 or >= 1"):
        sm.mean_tweedie_deviance([1.0], [1.0], power=power)


def test_power_must_be_a_number():
    with pytest.raises(TypeError, match="power must be a real number"):
        sm.TweedieDeviance(True)
    with pytest.raises(TypeError, match="power must be a real number"):
        sm.TweedieDeviance("1")


@pytest.mark.parametrize("power", POWERS)
def test_constant_truths_follow_scikit_learns_r2_rule(power):
    """D(y, ybar) = 0: 1.0 for a perfect fit, else 0.0, never a division by zero."""
    y = np.full(7, 0.1)
    assert sm.d2_tweedie_score(y, y, power=power) == 1.0
    assert sm.d2_tweedie_score(y, y * 1.5, power=power) == 0.0
    assert sm.d2_tweedie_score([2.0], [3.0], power=power) == 0.0  # one row is constant too
    w = np.random.default_rng(0).random(7)
    assert sm.d2_tweedie_score(y, y * 1.5, sample_weight=w, power=power) == 0.0
    # a small spread is still a spread (its digits beyond the ratio of the totals lost)
    z = y + np.arange(7) * 1e-4
    assert sm.d2_tweedie_score(z, z * 1.5, power=power) == pytest.approx(
        skm.d2_tweedie_score(z, z * 1.5, power=power), rel=1e-6
    )


def test_zero_truths_of_poisson_and_negative_powers():
    y = np.array([0.0, 0.0, 0.0])
    assert sm.d2_tweedie_score(y, [1.0, 2.0, 3.0], power=1) == 0.0
    y, p = np.array([0.0, 3.0, 0.0, 1.0]), np.array([0.5, 2.0, 1.0, 1.0])
    for power in (1, 1.2, -1):
        assert sm.d2_tweedie_score(y, p, power=power) == pytest.approx(
            skm.d2_tweedie_score(y, p, power=power), rel=1e-12
        )


def test_negative_mean_at_a_negative_power_is_nan_as_in_scikit_learn():
    y, p = [-3.0, -1.0], [1.0, 2.0]
    assert math.isnan(sm.d2_tweedie_score(y, p, power=-1.5))
    assert sm.d2_tweedie_score(y, p, power=-1) == pytest.approx(skm.d2_tweedie_score(y, p, power=-1), rel=1e-12)


def test_overflowing_deviances_are_refused_and_change_nothing():
    acc = sm.TweedieDeviance(0).update([1.0], [2.0])
    before = acc.state_dict()
    with pytest.raises(ValueError, match="overflow float64"):
        acc.update([1e200, 1.0], [0.0, 1.0])
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_zero_total_weight_is_refused():
    acc = sm.TweedieDeviance(1).update([1.0, 2.0], [1.0, 1.0], sample_weight=[0.0, 0.0])
    with pytest.raises(ValueError, match="sample weights sum to zero"):
        acc.finalize()


def test_a_batch_checked_for_a_power_feeds_regression_errors():
    y, p, _ = _data(2)
    batch = sm.TweedieDeviance(2).prepare(y, p)
    reg = sm.RegressionErrors().fold(batch)
    assert reg == sm.RegressionErrors().update(y, p)
    assert sm.TweedieDeviance(1).fold(batch) == sm.TweedieDeviance(1).update(y, p)
    with pytest.raises(TypeError):
        sm.TweedieDeviance(2).fold(sm.TweedieDeviance(1).prepare(y, p))


def test_settings_are_kept_by_save_and_load(tmp_path):
    y, p, w = _data(3)
    acc = sm.TweedieDeviance(3).update(y, p, sample_weight=w)
    acc.save(tmp_path / "dev.state")
    back = sm.load_state(tmp_path / "dev.state")
    assert back.power == 3.0 and back == acc
    with pytest.raises(ValueError, match="different settings"):
        back.merge(sm.TweedieDeviance(2))
