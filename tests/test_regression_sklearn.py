"""Explained variance, max error, squared log error, pinball loss and the one-shot
scikit-learn names against scikit-learn, under any batching, sharding and merge order.

The protocol (saving, refused batches, Sliced and Bootstrap) runs over the registry
rows; here are the values on data with ties, weights (0 included) and extreme values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

skm = pytest.importorskip("sklearn.metrics")

#: dyadic values (exact means), far apart in scale: ties, extremes and tiny ones
POOL = (0.0, 0.5, -1.5, 3.0, 2.0**-20, 1.0e6, -2.5e7, 7.25)
#: values above -1 for the logarithms
LOG_POOL = (0.0, 0.5, 3.0, 2.0**-20, 1.0e6, -0.5, -0.999, 7.25)
ALPHAS = (0.0, 0.1, 0.5, 0.9, 1.0)


def _close(got, want, what=""):
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), f"{what}: {got!r} != {want!r}"


@st.composite
def rows(draw, pool=POOL, n_max=40):
    n = draw(st.integers(1, n_max))
    y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(["none", "integers", "floats"]))
    w = None
    if kind == "integers":
        w = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.float64)
        w[draw(st.integers(0, n - 1))] = 1.0  # some weight
    elif kind == "floats":
        w = np.array(draw(st.lists(st.floats(0.01, 4.0), min_size=n, max_size=n)))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    order = draw(st.permutations(range(len(cuts) + 1)))
    return y, p, w, cuts, order


def _streamed(make, y, p, w, cuts, order):
    """Shards cut at ``cuts``, each fed in two batches, merged in ``order``."""
    bounds = [0, *cuts, len(y)]
    shards = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        acc = make()
        mid = (a + b) // 2
        for lo, hi in ((a, mid), (mid, b)):
            if hi > lo:
                acc.update(y[lo:hi], p[lo:hi], sample_weight=None if w is None else w[lo:hi])
        shards.append(acc)
    out = make()
    for i in order:
        out.merge(shards[i])
    return out


@settings(max_examples=60, deadline=None)
@given(rows())
def test_explained_variance_and_max_error_match_scikit_learn(data):
    y, p, w, cuts, order = data
    r = _streamed(lambda: sm.RegressionErrors(spread=True), y, p, w, cuts, order).finalize()
    _close(r.explained_variance, skm.explained_variance_score(y, p, sample_weight=w), "explained variance")
    seen = np.ones(len(y), bool) if w is None else w > 0
    assert r.max_error == skm.max_error(y[seen], p[seen])
    _close(sm.explained_variance_score(y, p, sample_weight=w), skm.explained_variance_score(y, p, sample_weight=w))
    assert sm.max_error(y, p) == skm.max_error(y, p)


@settings(max_examples=60, deadline=None)
@given(rows(LOG_POOL))
def test_squared_log_error_matches_scikit_learn(data):
    y, p, w, cuts, order = data
    r = _streamed(sm.SquaredLogError, y, p, w, cuts, order).finalize()
    _close(r.msle, skm.mean_squared_log_error(y, p, sample_weight=w), "msle")
    _close(r.rmsle, skm.root_mean_squared_log_error(y, p, sample_weight=w), "rmsle")
    _close(sm.mean_squared_log_error(y, p, sample_weight=w), skm.mean_squared_log_error(y, p, sample_weight=w))


@settings(max_examples=60, deadline=None)
@given(rows())
def test_pinball_losses_at_several_levels_match_scikit_learn(data):
    y, p, w, cuts, order = data
    r = _streamed(lambda: sm.PinballLoss(alpha=list(ALPHAS)), y, p, w, cuts, order).finalize()
    want = [skm.mean_pinball_loss(y, p, sample_weight=w, alpha=a) for a in ALPHAS]
    _close(r.pinball, want, "pinball")
    _close(sm.mean_pinball_loss(y, p, sample_weight=w, alpha=0.9), want[3])


def _two_d(seed, n=200, k=3):
    rng = np.random.default_rng(seed)
    y = np.round(rng.gamma(2.0, 2.0, (n, k)), 1)
    y[:, 1] *= 100.0  # outputs of different spreads: the variance weights differ
    p = np.round(y + rng.normal(0, 1.5, (n, k)), 1).clip(0)
    return y, p, rng.integers(0, 4, n).astype(np.float64)


NAMES_2D = {
    "explained_variance_score": ("raw_values", "uniform_average", "variance_weighted", [0.2, 0.3, 0.5]),
    "mean_squared_log_error": ("raw_values", "uniform_average", [1.0, 0.0, 2.0]),
    "root_mean_squared_log_error": ("raw_values", "uniform_average", [1.0, 0.0, 2.0]),
    "mean_pinball_loss": ("raw_values", "uniform_average", [1.0, 2.0, 3.0]),
    "d2_pinball_score": ("raw_values", "uniform_average", [1.0, 2.0, 3.0]),
    "d2_absolute_error_score": ("raw_values", "uniform_average", [1.0, 2.0, 3.0]),
    "median_absolute_error": ("raw_values", "uniform_average", [1.0, 2.0, 3.0]),
}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", sorted(NAMES_2D))
def test_multioutput_matches_scikit_learn(name, weighted):
    y, p, w = _two_d(3)
    w = w if weighted else None
    for multioutput in NAMES_2D[name]:
        got = getattr(sm, name)(y, p, sample_weight=w, multioutput=multioutput)
        want = getattr(skm, name)(y, p, sample_weight=w, multioutput=multioutput)
        assert np.shape(got) == np.shape(want)
        if name == "median_absolute_error":
            assert np.array_equal(got, want)
        else:
            _close(got, want, f"{name}, {multioutput}")


def test_one_output_arguments_as_scikit_learn():
    y, p = [3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0]
    for name in ("explained_variance_score", "mean_pinball_loss", "d2_pinball_score", "median_absolute_error"):
        got = getattr(sm, name)(y, p, multioutput="raw_values")
        assert got.shape == (1,)
        _close(got, getattr(skm, name)(y, p, multioutput="raw_values"))
    _close(sm.d2_pinball_score(y, p, alpha=0.2), skm.d2_pinball_score(y, p, alpha=0.2))


def test_force_finite_off_gives_the_ratio():
    y, p = [1.0, 1.0, 1.0], [1.0, 2.0, 1.0]
    assert sm.explained_variance_score(y, p) == skm.explained_variance_score(y, p) == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        want = skm.explained_variance_score(y, p, force_finite=False)
    assert sm.explained_variance_score(y, p, force_finite=False) == want == -np.inf


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"y_pred\[2\] = -1.0: the squared log error needs y_pred > -1"):
        sm.mean_squared_log_error([1.0, 2.0, 3.0], [1.0, 2.0, -1.0])
    with pytest.raises(ValueError, match=r"y_true\[1, 0\] = -3.0"):
        sm.mean_squared_log_error([[1.0, 1.0], [-3.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="max_error takes one output"):
        sm.max_error([[1.0, 2.0]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="multioutput must be one of"):
        sm.mean_pinball_loss([1.0, 2.0], [1.0, 2.0], multioutput="variance_weighted")
    with pytest.raises(ValueError, match="as many multioutput weights"):
        sm.d2_absolute_error_score([[1.0, 2.0]], [[1.0, 2.0]], multioutput=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="different numbers of outputs"):
        sm.median_absolute_error([[1.0, 2.0]], [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="alpha must lie in"):
        sm.PinballLoss(alpha=[0.5, 1.5])
    with pytest.raises(ValueError, match="empty"):
        sm.mean_pinball_loss([], [])
    for y in ([1.0, 2.0], [[1.0, 2.0], [3.0, 5.0]]):  # (one output and two)
        with pytest.raises(ValueError, match="weights sum to zero: the explained variance is undefined"):
            sm.explained_variance_score(y, np.add(y, 0.5), sample_weight=[0.0, 0.0])


def test_a_state_saved_before_the_error_moments_gives_no_explained_variance(tmp_path):
    acc = sm.RegressionErrors(spread=True).update([1.0, 2.0, 4.0], [1.5, 2.0, 3.0])
    assert "explained_variance" not in sm.RegressionErrors().update([1.0], [2.0]).finalize().as_dict()
    state = acc.state_dict()
    state["rmoments"][:] = 0.0
    state["top"][:] = 0.0
    old = sm.RegressionErrors(spread=True).load_state_dict(state)
    assert "explained_variance" not in old.finalize().as_dict()
    merged = old.merge(acc).finalize()  # a side without them: the merge has none either
    assert "explained_variance" not in merged.as_dict() and merged.mse == acc.finalize().mse
