"""Decayed: equal to the template fed the same rows with weights 2**(-age / half_life)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import StateFileError

from .harness import assert_results_equal, forged

TEMPLATES = {
    "binary": (lambda: sm.BinaryConfusion(threshold=0.5), 2),
    "probability": (sm.ProbabilityScores, 2),
    "calibration": (lambda: sm.Calibration(n_bins=5), 2),
    "evaluator": (lambda: sm.Evaluator({"c": sm.BinaryConfusion(threshold=0.5), "p": sm.ProbabilityScores()}), 2),
    "deviance": (sm.TweedieDeviance, "tweedie"),
}


def _data(rng, n, kind):
    if kind == "tweedie":
        y = rng.poisson(2.0, n).astype(float)
        return (y, rng.random(n) * 3 + 0.1)
    y = (rng.random(n) < 0.4).astype(np.int64)
    return (y, np.round(rng.random(n), 2))


def _cuts(n, sizes):
    edges = np.cumsum([0, *sizes])
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if a < n] + [(min(edges[-1], n), n)]


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(sorted(TEMPLATES)),
    st.lists(st.integers(1, 90), min_size=1, max_size=8),
    st.floats(0.3, 50),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_decayed_by_rows_equals_explicit_weights(name, sizes, half_life, weighted, seed):
    make, kind = TEMPLATES[name]
    rng = np.random.default_rng(seed)
    n = 300
    arrays, w = _data(rng, n, kind), (rng.random(n) * 2 + 0.01 if weighted else None)
    acc = sm.Decayed(make(), half_life=half_life)
    for a, b in _cuts(n, sizes):
        acc.update(*(x[a:b] for x in arrays), sample_weight=None if w is None else w[a:b])
    decay = 2.0 ** (-(n - 1 - np.arange(n)) / half_life)
    ref = make().update(*arrays, sample_weight=decay if w is None else w * decay)
    assert_results_equal(acc.finalize(), ref.finalize(), rtol=1e-12, atol=1e-300)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.integers(0, 2**31), st.sampled_from([0.5, 2.0, 40.0]))
def test_decayed_in_time_any_order_and_sharding(shards, seed, half_life):
    rng = np.random.default_rng(seed)
    n = 400
    arrays, t = _data(rng, n, 2), rng.random(n) * 500  # rows out of order; many half-lives
    parts = [sm.Decayed(sm.BinaryConfusion(threshold=0.5), half_life=half_life, time=True) for _ in range(shards)]
    order = rng.permutation(n)
    for j, part in enumerate(parts):
        rows = order[j::shards]
        part.update(*(x[rows] for x in arrays), time=t[rows])
    acc = parts[0]
    for part in parts[1:]:
        acc.merge(part)
    ref = sm.BinaryConfusion(threshold=0.5).update(*arrays, sample_weight=2.0 ** (-(t.max() - t) / half_life))
    # the oldest rows' weights underflow together in both
    assert_results_equal(acc.finalize(), ref.finalize(), rtol=1e-12, atol=1e-300)
    assert_results_equal(acc.finalize(ci=0.9), ref.finalize(ci=0.9), rtol=1e-12, atol=1e-14)


def test_decayed_datetimes_and_durations():
    ts = np.array(["2024-01-01T00", "2024-01-01T12", "2024-01-02T00", "2024-03-02T00"], "datetime64[ns]")
    y, p = np.array([1, 1, 0, 1]), np.array([1.0, 0.0, 0.0, 1.0])
    acc = sm.Decayed(sm.BinaryConfusion(), half_life="1d", time=True).update(y, p, time=ts)
    age = (ts.max() - ts) / np.timedelta64(1, "D")
    ref = sm.BinaryConfusion().update(y, p, sample_weight=2.0**-age).finalize()
    assert_results_equal(acc.finalize(), ref, rtol=1e-12, atol=1e-300)
    with pytest.raises(TypeError, match="datetimes"):
        acc.update([1], [1.0], time=[3.0])
    with pytest.raises(ValueError, match=r"time\[1\]"):
        acc.update([1, 0], [1.0, 0.0], time=np.array(["2024-01-01", "NaT"], "datetime64[ns]"))
    with pytest.raises(ValueError, match="positive duration"):
        sm.Decayed(sm.BinaryConfusion(), half_life="1 fortnight", time=True)


def test_decayed_refuses_states_that_are_not_weighted_sums():
    for template in (
        sm.RankAUC(),
        sm.RegressionErrors(),
        sm.Evaluator({"c": sm.BinaryConfusion(threshold=0.5), "a": sm.RankAUC()}),
    ):
        with pytest.raises(TypeError, match="not a sum of weighted"):
            sm.Decayed(template, half_life=10)
    with pytest.raises(ValueError, match="no common clock"):
        sm.Decayed(sm.BinaryConfusion(), half_life=3).update([1], [1]).merge(
            sm.Decayed(sm.BinaryConfusion(), half_life=3).update([0], [1])
        )


def test_decayed_save_load_and_hostile_files(tmp_path):
    rng = np.random.default_rng(1)
    acc = sm.Decayed(sm.ProbabilityScores(), half_life=5.0, time=True)
    acc.update(*_data(rng, 200, 2), time=rng.random(200) * 1000)
    path = tmp_path / "d.smstate"
    acc.save(path)
    back = sm.load_state(path)
    assert back == acc and back.finalize() == acc.finalize()
    bad = {"pairs": np.full_like(acc.state_dict()["pairs"], np.inf)}
    with pytest.raises(StateFileError, match="finite"):
        sm.load_state(forged(acc, tmp_path / "a.smstate", arrays=bad))
    clock = acc.state_dict()["clock"]
    clock[0, 0] += 10.0  # the origin after the latest row
    with pytest.raises(StateFileError, match="clock"):
        sm.load_state(forged(acc, tmp_path / "b.smstate", arrays={"clock": clock}))
    with pytest.raises(StateFileError):
        sm.load_state(forged(acc, tmp_path / "c.smstate", settings={"half_life": -1}))
