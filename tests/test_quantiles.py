"""ErrorQuantiles: exact quantiles of errors against scikit-learn and a sort, in memory
and spilled, under any batching, sharding and merge order; its saved states."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import streammetrics as sm

from .harness import merge_peak

skm = pytest.importorskip("sklearn.metrics")
weighted_percentile = pytest.importorskip("sklearn.utils.stats")._weighted_percentile

POOL = (0.0, 0.5, -1.5, 3.0, 2.0**-20, 1.0e6, -2.5e7, 7.25, -0.0)
LEVELS = (0.0, 0.1, 0.25, 0.5, 0.9, 1.0)


@st.composite
def rows(draw, n_max=40):
    n = draw(st.integers(2, n_max))
    y = np.array(draw(st.lists(st.sampled_from(POOL), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(POOL), min_size=n, max_size=n)))
    w = None
    if draw(st.booleans()):  # integer weights: sums exact, as scikit-learn's row by row
        w = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.float64)
        w[draw(st.integers(0, n - 1))] = 2.0
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    order = draw(st.permutations(range(len(cuts) + 1)))
    return y, p, w, cuts, order


def _streamed(make, y, p, w, cuts, order):
    bounds = [0, *cuts, len(y)]
    shards = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        acc = make()
        if b > a:
            acc.update(y[a:b], p[a:b], sample_weight=None if w is None else w[a:b])
        shards.append(acc)
    out = make()
    for i in order:
        out.merge(shards[i])
    return out


def _reference_quantiles(v, w, levels):
    ones = np.ones(len(v)) if w is None else w
    return np.array([weighted_percentile(v, ones, percentile_rank=q * 100, average=True) for q in levels])


@settings(max_examples=60, deadline=None)
@given(rows(), st.sampled_from([None, 4096]))
def test_quantiles_and_d2_equal_scikit_learn(data, budget):
    y, p, w, cuts, order = data
    a = _streamed(lambda: sm.ErrorQuantiles(truth=True, max_memory=budget), y, p, w, cuts, order)
    s = _streamed(lambda: sm.ErrorQuantiles("signed", truth=True, max_memory=budget), y, p, w, cuts, order)
    r = a.finalize()
    assert r.median == skm.median_absolute_error(y, p, sample_weight=w)
    assert np.array_equal(a.quantile(LEVELS), _reference_quantiles(np.abs(y - p), w, LEVELS))
    assert np.array_equal(s.quantile(LEVELS), _reference_quantiles(y - p, w, LEVELS))
    want = skm.d2_absolute_error_score(y, p, sample_weight=w)
    assert r.d2_absolute_error == pytest.approx(want, rel=1e-12, abs=1e-12)
    for alpha in (0.1, 0.5, 0.8):
        want = skm.d2_pinball_score(y, p, sample_weight=w, alpha=alpha)
        assert s.d2_pinball(alpha) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert sm.median_absolute_error(y, p, sample_weight=w) == r.median


def test_spilled_state_is_exact_and_merges():
    rng = np.random.default_rng(5)
    y, p = rng.normal(size=20000), rng.normal(size=20000)
    w = rng.integers(0, 5, 20000).astype(np.float64)
    big = sm.ErrorQuantiles(max_memory=4096)
    for i in range(0, 20000, 1500):
        big.update(y[i : i + 1500], p[i : i + 1500], sample_weight=w[i : i + 1500])
    assert big.spilled
    memory = sm.ErrorQuantiles().update(y[:9000], p[:9000], sample_weight=w[:9000])
    memory.merge(sm.ErrorQuantiles().update(y[9000:], p[9000:], sample_weight=w[9000:]))
    want = _reference_quantiles(np.abs(y - p), w, LEVELS)
    assert np.array_equal(big.quantile(LEVELS), want)
    assert np.array_equal(memory.quantile(LEVELS), want)
    assert big.finalize().median == skm.median_absolute_error(y, p, sample_weight=w)
    unweighted = sm.ErrorQuantiles(max_memory=4096)
    for i in range(0, 20000, 1500):
        unweighted.update(y[i : i + 1500], p[i : i + 1500])
    assert unweighted.finalize().median == np.median(np.abs(y - p))


@pytest.mark.parametrize("weights", ["none", "both", "theirs", "mine"])
def test_a_spilled_shard_merges_file_to_file(weights):
    """Merging a spilled state copies its files a chunk at a time: the memory it takes does not grow with the
    rows the other holds in files (reading them all took 29 MB for 500k rows), and the quantiles are exact."""
    rng = np.random.default_rng(8)
    n = 400_000
    y, p, w = rng.normal(size=n), rng.normal(size=n), rng.integers(1, 4, n).astype(np.float64)
    mine, theirs = sm.ErrorQuantiles(truth=True, max_memory="1MB"), sm.ErrorQuantiles(truth=True, max_memory="1MB")
    for acc, part, weighted in ((mine, slice(0, n // 2), "mine"), (theirs, slice(n // 2, n), "theirs")):
        for a in range(part.start, part.stop, 40_000):
            rows = slice(a, min(a + 40_000, part.stop))
            acc.update(y[rows], p[rows], sample_weight=w[rows] if weights in (weighted, "both") else None)
    assert mine.spilled and theirs.spilled and theirs.nbytes < 1_000_000
    peak = merge_peak(mine, theirs)
    assert peak < 8 * 2**20 and mine.n == n and theirs.n == n // 2
    ww = w.copy()
    ww[: n // 2] = 1 if weights in ("none", "theirs") else ww[: n // 2]
    ww[n // 2 :] = 1 if weights in ("none", "mine") else ww[n // 2 :]
    whole = sm.ErrorQuantiles(truth=True).update(y, p, sample_weight=None if weights == "none" else ww)
    assert np.array_equal(mine.quantile(LEVELS), whole.quantile(LEVELS))
    assert mine.finalize().d2_absolute_error == pytest.approx(whole.finalize().d2_absolute_error, rel=1e-12)


def test_saved_state_round_trips_and_forged_states_are_refused(tmp_path):
    acc = sm.ErrorQuantiles("signed", truth=True).update([1.0, 2.0, 2.0], [0.5, 2.5, 2.0])
    acc.save(tmp_path / "q")
    back = sm.ErrorQuantiles.load(tmp_path / "q")
    assert back.finalize() == acc.finalize() and back.d2_pinball(0.3) == acc.d2_pinball(0.3)
    good = acc.state_dict()
    forged = {
        "strictly increasing": {"lo": good["lo"][::-1].copy()},
        "add up": {"counts": good["counts"] * 2},
        "observations": {"n": np.array([1])},
    }
    for match, change in forged.items():
        with pytest.raises(ValueError, match=match):
            sm.ErrorQuantiles("signed", truth=True).load_state_dict(good | change)
    state = sm.ErrorQuantiles().update([1.0], [3.0]).state_dict()
    state["lo"] = -state["lo"]
    with pytest.raises(ValueError, match="negative absolute error"):
        sm.ErrorQuantiles().load_state_dict(state)


def test_refusals():
    with pytest.raises(ValueError, match="overflows float64"):
        sm.ErrorQuantiles().update([1e308], [-1e308])
    with pytest.raises(ValueError, match="needs ErrorQuantiles"):
        sm.ErrorQuantiles(truth=True).d2_pinball(0.9)
    with pytest.raises(ValueError, match="error must be"):
        sm.ErrorQuantiles("squared")
    with pytest.raises(ValueError, match="sum to 0"):
        sm.ErrorQuantiles().update([1.0], [2.0], sample_weight=[0.0]).finalize()
    with pytest.raises(ValueError, match="no observations"):
        sm.ErrorQuantiles().quantile(0.5)
    with pytest.raises(ValueError, match="settings"):
        sm.ErrorQuantiles().merge(sm.ErrorQuantiles("signed"))


@settings(max_examples=40, deadline=None)
@given(rows(), st.integers(1, 20), st.sampled_from(["absolute", "signed"]))
@example((np.array([0.0, 0.5]), np.array([0.5, 0.0]), None, [], [0]), 1, "signed")  # averaged across 0
def test_binned_bounds_hold_the_exact_quantiles(data, bits, error):
    y, p, w, cuts, order = data
    binned = _streamed(lambda: sm.ErrorQuantiles(error, significant_bits=bits), y, p, w, cuts, order)
    values = np.abs(y - p) if error == "absolute" else y - p
    exact = _reference_quantiles(values, w, LEVELS)
    lower, upper = binned.quantile_bounds(LEVELS)
    assert np.all(lower <= exact) and np.all(exact <= upper)
    r = binned.finalize()
    assert r.median_lower <= r.median <= r.median_upper
    if w is None:  # each bound within a bin of the values it averages
        assert np.all(upper - lower <= np.abs(values).max() * 2.0 ** (1 - bits) + 1e-300)


def test_binned_state_is_small_and_checked():
    rng = np.random.default_rng(2)
    y, p = rng.normal(size=100_000), rng.normal(size=100_000)
    acc = sm.ErrorQuantiles(significant_bits=7).update(y, p)
    state = acc.state_dict()
    assert state["lo"].shape[0] < 128 * 64  # bins per power of two, times the powers seen
    lower, upper = acc.quantile_bounds(0.5)
    assert lower <= np.median(np.abs(y - p)) <= upper and upper - lower <= lower * 2.0**-6
    state["lo"] = state["lo"] + 2.0**-40
    with pytest.raises(ValueError, match="lowest of its bin"):
        sm.ErrorQuantiles(significant_bits=7).load_state_dict(state)
    with pytest.raises(ValueError, match="settings"):
        acc.merge(sm.ErrorQuantiles(significant_bits=8))
    with pytest.raises(ValueError, match="no truth"):
        sm.ErrorQuantiles(significant_bits=7, truth=True)
