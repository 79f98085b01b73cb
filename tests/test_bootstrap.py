"""Bootstrap: the hash-Poisson weights, keyed invariance, intervals and refusals."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics._kernels.bootstrap import POISSON1_CDF, POISSON1_CUTS, poisson_weights

R = 20


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.clip(0.35 * y + 0.65 * rng.random(n), 0.0, 1.0)
    return y, s


def _weights(seed, keys, R, first=0, w=None):
    out = np.empty((R, len(keys) if len(keys) else 1000), np.float64)
    poisson_weights(
        np.uint64(seed),
        np.asarray(keys, np.int64),
        first,
        0,
        np.zeros(0) if w is None else np.asarray(w, float),
        out,
        POISSON1_CUTS,
    )
    return out


# ----------------------------------------------------------------- weights
def test_poisson_cdf_is_poisson_one():
    want = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(len(POISSON1_CDF))])
    np.testing.assert_allclose(POISSON1_CDF, want, rtol=1e-15)
    assert 1 - POISSON1_CDF[-1] < 2.0**-53


def test_hash_poisson_weights_have_mean_and_variance_one():
    keys = np.arange(-50_000, 150_000, dtype=np.int64)
    w = _weights(11, keys, 64)
    assert set(np.unique(w)) <= set(range(21))
    # 12.8M draws: the standard error of the mean is 2.8e-4, of the variance 5e-4
    assert abs(w.mean() - 1) < 2e-3
    assert abs(w.var() - 1) < 4e-3
    freq = np.bincount(w.astype(np.int64).ravel(), minlength=5)[:5] / w.size
    np.testing.assert_allclose(freq, [math.exp(-1) / math.factorial(k) for k in range(5)], atol=2e-3)
    # replicates and neighbouring keys are not correlated
    assert abs(np.corrcoef(w[0], w[1])[0, 1]) < 0.02
    assert abs(np.corrcoef(w[0, :-1], w[0, 1:])[0, 1]) < 0.02


def test_weights_depend_on_seed_key_and_replicate_only():
    keys = np.array([5, 9, 5, 123456789012, -3], np.int64)
    a = _weights(7, keys, 30)
    np.testing.assert_array_equal(a[:, 0], a[:, 2])  # same key, same weights
    np.testing.assert_array_equal(_weights(7, keys[::-1], 30)[:, ::-1], a)  # order free
    assert not np.array_equal(_weights(8, keys, 30), a)  # the seed matters
    # a block of replicates r0.. is the same rows of the whole block
    part = np.empty((10, 5))
    poisson_weights(np.uint64(7), keys, 0, 12, np.zeros(0), part, POISSON1_CUTS)
    np.testing.assert_array_equal(part, a[12:22])
    # without keys, positions first, first + 1, ... are the keys
    np.testing.assert_array_equal(
        _weights(7, np.zeros(0, np.int64), 30, first=100)[:, :5], _weights(7, np.arange(100, 105), 30)
    )
    # own weights multiply the drawn counts
    w = np.array([0.5, 2.0, 1.0, 3.0, 0.0])
    np.testing.assert_array_equal(_weights(7, keys, 30, w=w), a * w)


_M64 = (1 << 64) - 1


def _mix_reference(x: int) -> int:
    """splitmix64's finaliser on Python integers (wrapping at 64 bits)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _weight_reference(seed: int, key: int, r: int) -> int:
    """The documented weight of row ``key`` in replicate ``r``, computed in pure
    Python: the row hash, the mix of replicate pair ``r // 2`` (its high half for
    even ``r``, its low half for odd), and the count of cut points reached."""
    s = _mix_reference((seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _M64)
    h = _mix_reference(s ^ ((key & _M64) * 0x9E3779B97F4A7C15 & _M64))
    x = _mix_reference((h + (r // 2 + 1) * 0xD1B54A32D192ED03) & _M64)
    u = x >> 32 if r % 2 == 0 else x & 0xFFFFFFFF
    return int(np.searchsorted(POISSON1_CUTS.astype(np.int64), u, side="right"))


def test_weights_are_the_documented_hash_and_inverse_cdf():
    rng = np.random.default_rng(3)
    keys = np.concatenate(
        [rng.integers(-(2**63), 2**63 - 1, 300, dtype=np.int64), np.array([0, 1, -1, 2**63 - 1, -(2**63)], np.int64)]
    )
    R0, R = 5, 57  # an odd first replicate: the block starts in the low half of a pair
    out = np.empty((R, keys.size))
    poisson_weights(np.uint64(42), keys, 0, R0, np.zeros(0), out, POISSON1_CUTS)
    want = np.array([[_weight_reference(42, int(k), R0 + r) for k in keys] for r in range(R)])
    np.testing.assert_array_equal(out, want)
    # the rare counts past the sixth cut point (about 8e-5 a draw) are drawn right too
    tail = np.arange(400_000, dtype=np.int64)
    big = _weights(9, tail, 40)
    rows, cols = np.nonzero(big >= 7)
    assert rows.size > 100
    for r, i in zip(rows[:40], cols[:40]):
        assert big[r, i] == _weight_reference(9, int(tail[i]), int(r))


# --------------------------------------------------------- invariance
def _cut(n, cuts):
    edges = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return list(zip(edges[:-1], edges[1:]))


def _one_and_sharded(make, y, s, w, keys, cuts, shards, rnd):
    """The rows folded by one bootstrap, and cut at ``cuts`` into batches dealt
    at random to ``shards`` bootstraps merged in a random order."""
    one = make().update(y, s, sample_weight=w, key=keys)
    parts = [make() for _ in range(shards)]
    for lo, hi in _cut(len(y), cuts):
        parts[rnd.randrange(shards)].update(y[lo:hi], s[lo:hi], sample_weight=w[lo:hi], key=keys[lo:hi])
    rnd.shuffle(parts)
    total = make()
    for p in parts:
        total.merge(p)
    return one, total


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 400),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_keyed_states_are_identical_under_any_batching_sharding_and_merge_order(n, cuts, shards, rnd):
    y, s = _data(n, seed=n)
    # integer weights: every replicate count is then a sum of integers, exact in any order
    w = np.random.default_rng(n).integers(0, 4, n).astype(np.float64)
    keys = np.random.default_rng(n + 1).permutation(n).astype(np.int64) * 3 + 17
    make = lambda: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=R, seed=5)  # noqa: E731
    one, total = _one_and_sharded(make, y, s, w, keys, cuts, shards, rnd)
    assert total == one
    got, want = total.finalize(), one.finalize()
    assert dict(got) == dict(want)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 300), st.lists(st.integers(0, 10_000), max_size=6))
def test_unkeyed_states_are_identical_under_any_batching(n, cuts):
    y, s = _data(n, seed=n)
    make = lambda: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=R)  # noqa: E731
    one = make().update(y, s)
    many = make()
    for lo, hi in _cut(n, cuts):
        many.update(y[lo:hi], s[lo:hi])
    assert many == one


def test_without_keys_the_row_counter_is_the_key():
    y, s = _data(500)
    make = lambda: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=R)  # noqa: E731
    assert make().update(y, s) == make().update(y, s, key=np.arange(500))
    # shards without keys each count from 0: merged, they differ from one stream
    shards = make().update(y[:250], s[:250]).merge(make().update(y[250:], s[250:]))
    assert shards != make().update(y, s)


def test_replicate_counts_are_sums_of_integer_weights():
    y, s = _data(1000)
    b = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=R, seed=2).update(y, s, key=np.arange(1000))
    w = _weights(2, np.arange(1000), R)
    for r, acc in enumerate(b._replicas):
        want = sm.BinaryConfusion(threshold=0.5).update(y, s, sample_weight=w[r]).finalize()
        got = acc.finalize()
        assert (got.tp, got.fp, got.fn, got.tn) == (want.tp, want.fp, want.fn, want.tn)
        assert float(got.tp) == int(got.tp)


def test_chunked_folding_matches_one_block(monkeypatch):
    import streammetrics.bootstrap.accumulator as B

    y, s = _data(3000)
    whole = sm.Bootstrap(sm.ProbabilityScores(), replicates=R).update(y, s)
    monkeypatch.setattr(B, "MAX_WEIGHT_BLOCK", 8 * R * 7)  # chunks of 7 rows
    chunked = sm.Bootstrap(sm.ProbabilityScores(), replicates=R).update(y, s)
    for k in ("log_loss", "brier", "log_loss_ci_lower", "brier_ci_upper"):
        assert chunked.finalize()[k] == pytest.approx(whole.finalize()[k], rel=1e-12)


# ---------------------------------------------------------- intervals
def test_intervals_hold_the_point_estimate_and_shrink_with_n():
    widths = []
    for n in (500, 8000):
        y, s = _data(n, seed=3)
        b = sm.Bootstrap(
            sm.Evaluator({"binary": sm.BinaryConfusion(threshold=0.5), "probability": sm.ProbabilityScores()}),
            replicates=100,
            seed=1,
        )
        r = b.update(y, s).finalize()
        point = sm.BinaryConfusion(threshold=0.5).update(y, s).finalize()
        assert r.accuracy == point.accuracy and r.f1 == point.f1
        assert r.log_loss == sm.ProbabilityScores().update(y, s).finalize().log_loss
        for k in ("accuracy", "f1", "log_loss", "brier"):
            assert r[f"{k}_ci_lower"] <= r[k] <= r[f"{k}_ci_upper"], k
        assert r.replicates_used == 100 and r.replicates == 100
        widths.append(r.accuracy_ci_upper - r.accuracy_ci_lower)
        narrow = b.finalize(ci=0.5)
        assert r.f1_ci_lower <= narrow.f1_ci_lower <= narrow.f1_ci_upper <= r.f1_ci_upper
    # the width falls as 1/sqrt(n): 4x from 500 to 8000 rows
    assert 2.5 < widths[0] / widths[1] < 6.5


def test_interval_is_the_percentile_of_replicate_scores():
    y, s = _data(400)
    b = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=R).update(y, s)
    scores = [acc.finalize().f1 for acc in b._replicas]
    r = b.finalize(ci=0.9)
    assert r.f1_ci_lower == pytest.approx(np.quantile(scores, 0.05), rel=1e-15)
    assert r.f1_ci_upper == pytest.approx(np.quantile(scores, 0.95), rel=1e-15)
    assert "tp_ci_lower" not in r  # integer counts have no interval


def test_undefined_replicates_are_skipped_and_counted():
    # one row: a replicate that draws it 0 times has no weight, so no score
    b = sm.Bootstrap(sm.ProbabilityScores(), replicates=200, seed=9).update([1], [0.7])
    r = b.finalize()
    assert 40 < r.replicates_used < 200  # P(weight 0) = e^-1
    assert r.log_loss_ci_lower == pytest.approx(r.log_loss) == r.log_loss_ci_upper


def test_ci_argument_is_checked():
    b = sm.Bootstrap(sm.BinaryConfusion(), replicates=3).update([1, 0], [1, 1])
    with pytest.raises(ValueError, match="ci must lie strictly between 0 and 1"):
        b.finalize(ci=95)
    with pytest.raises(TypeError, match="ci must be a real number"):
        b.finalize(ci="0.9")


# ------------------------------------------------------------- refusals
def test_templates_without_weights_are_refused():
    with pytest.raises(TypeError, match="ClusterContingency takes no sample weights"):
        sm.Bootstrap(sm.ClusterContingency())
    with pytest.raises(TypeError, match="template must be an accumulator"):
        sm.Bootstrap("f1")
    with pytest.raises(TypeError, match="takes keys"):
        sm.Bootstrap(sm.Sliced(sm.BinaryConfusion()))
    with pytest.raises(ValueError, match="template must be empty"):
        sm.Bootstrap(sm.BinaryConfusion().update([1], [1]))
    with pytest.raises(ValueError, match="replicates must lie in"):
        sm.Bootstrap(sm.BinaryConfusion(), replicates=0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        sm.Bootstrap(sm.BinaryConfusion(), seed=1.5)
    with pytest.raises(TypeError, match="is a Bootstrap accumulator"):
        sm.Evaluator({"b": sm.Bootstrap(sm.BinaryConfusion())})


def test_bad_keys_change_nothing():
    b = sm.Bootstrap(sm.BinaryConfusion(), replicates=4).update([1, 0], [1, 1], key=[0, 1])
    before = b.state_dict()
    with pytest.raises(TypeError, match="key must hold integer row ids"):
        b.update([1, 0], [1, 1], key=[0.5, 1.0])
    with pytest.raises(ValueError, match="key has 3 rows but the batch has 2"):
        b.update([1, 0], [1, 1], key=[0, 1, 2])
    with pytest.raises(ValueError, match=r"p\[1\] = 2"):
        b.update([1, 0], [1, 2], key=[2, 3])
    after = b.state_dict()
    assert after.keys() == before.keys() and all(np.array_equal(after[k], before[k]) for k in after)


def test_settings_pickle_and_save(tmp_path):
    y, s = _data(300)
    b = sm.Bootstrap(sm.RankAUC(), replicates=6, seed=12).update(y, s, key=np.arange(300))
    assert pickle.loads(pickle.dumps(b)) == b
    b.save(tmp_path / "b.state")
    back = sm.load_state(tmp_path / "b.state")
    assert back == b and dict(back.finalize()) == dict(b.finalize())
    with pytest.raises(ValueError, match="different settings"):
        b.merge(sm.Bootstrap(sm.RankAUC(), replicates=6, seed=13))
    with pytest.raises(ValueError, match="different settings"):
        b.merge(sm.Bootstrap(sm.RankAUC(), replicates=7, seed=12))
    state = b.state_dict()
    state["ranked.key"] = state["ranked.key"][:-1]
    with pytest.raises(ValueError, match="rows of the point's rank state"):
        sm.Bootstrap(sm.RankAUC(), replicates=6, seed=12).load_state_dict(state)


def test_replicate_shapes_are_checked_before_any_is_read():
    b = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=3).update([1, 0, 1], [0.2, 0.7, 0.9], key=[1, 2, 3])
    load = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=3).load_state_dict
    # sizes whose product wraps around int64 to the values held
    state = dict(
        b.state_dict(),
        **{"replicates.wsums": np.zeros(0), "replicates.wsums#shape": np.full((3, 2), 1 << 32, np.int64)},
    )
    with pytest.raises(sm.StateFileError, match="'replicates.wsums' does not hold the sizes its shapes give"):
        load(state)
    # one shape for all: the short form is the sliced state's, not the bootstrap's
    state = dict(b.state_dict(), **{"replicates.n#shape": np.array([[1]], np.int64)})
    with pytest.raises(sm.StateFileError, match=r"'replicates.n#shape' must be 3 x 1 sizes$"):
        load(state)
    assert load(b.state_dict()) == b


@pytest.mark.parametrize(
    "entry, value, match",
    [
        ("ranked.label", 2, r"'ranked.label'\[4\] = 2 is not a 0/1 label"),
        ("ranked.score", np.nan, r"'ranked.score'\[4\] = nan is not a finite score"),
        ("ranked.weight", -1.0, r"'ranked.weight'\[4\] = -1.0 is not a finite weight"),
    ],
)
def test_a_hostile_file_of_bootstrapped_rank_rows_is_refused(tmp_path, entry, value, match):
    y, s = _data(50)
    b = sm.Bootstrap(sm.RankAUC(), replicates=4).update(y, s, sample_weight=np.full(50, 0.5), key=np.arange(50))
    state = b.state_dict()
    bad = state[entry].copy()
    bad[4] = value
    state[entry] = bad
    fresh = sm.Bootstrap(sm.RankAUC(), replicates=4)
    with pytest.raises(ValueError, match=match):
        fresh.load_state_dict(state)
    assert fresh.n == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_kept_rank_rows_that_are_not_the_point_estimates_rows_are_refused(weighted):
    y, s = _data(60)
    w = np.random.default_rng(3).random(60) + 0.1 if weighted else None
    b = sm.Bootstrap(sm.RankAUC(), replicates=4).update(y, s, sample_weight=w, key=np.arange(60))
    state = b.state_dict()
    assert sm.Bootstrap(sm.RankAUC(), replicates=4).load_state_dict(b.state_dict()) == b
    state["ranked.label"] = (1 - state["ranked.label"]).astype(np.uint8)  # every class swapped
    fresh = sm.Bootstrap(sm.RankAUC(), replicates=4)
    with pytest.raises(ValueError, match="do not hold the rows of the point estimate's rank state"):
        fresh.load_state_dict(state)
    assert fresh.n == 0


# --------------------------------------------------- one-pass linear fold
def _preset():
    return sm.Evaluator({"binary": sm.BinaryConfusion(threshold=0.5), "probability": sm.ProbabilityScores()})


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 700), st.booleans(), st.integers(0, 2**64 - 1))
def test_one_pass_fold_matches_each_replicate_fed_its_own_weights(n, weighted, seed):
    y, s = _data(n, seed=n)
    w = np.random.default_rng(n).random(n) * 3 if weighted else None
    keys = np.random.default_rng(n + 2).integers(-(2**40), 2**40, n)
    b = sm.Bootstrap(_preset(), replicates=R, seed=seed).update(y, s, sample_weight=w, key=keys)
    assert b._linear is not None  # the one-pass fold served this template
    draws = _weights(seed, keys, R, w=w)
    for r, acc in enumerate(b._replicas):
        want = _preset().update(y, s, sample_weight=draws[r])
        if not sum(want.members["binary"].counts()):
            continue  # every weight drawn 0
        got, ref = acc.finalize(), want.finalize()
        for k in ("accuracy", "f1", "precision", "recall", "log_loss", "brier"):
            assert got[k] == pytest.approx(ref[k], rel=1e-12, abs=1e-15), (r, k)
        assert acc.n == want.n == n


def test_one_pass_fold_is_the_same_on_any_number_of_threads(monkeypatch):
    import streammetrics.bootstrap.accumulator as B

    y, s = _data(5000)
    w = np.random.default_rng(1).random(5000)
    one = sm.Bootstrap(_preset(), replicates=41, seed=3)
    monkeypatch.setattr(B, "workers", lambda R, n: 1)
    one.update(y, s, sample_weight=w)
    for workers in (2, 3, 7):
        monkeypatch.setattr(B, "workers", lambda R, n, k=workers: k)
        other = sm.Bootstrap(_preset(), replicates=41, seed=3).update(y, s, sample_weight=w)
        assert other == one  # bit for bit: each replicate sums its rows in the same order


def test_one_pass_fold_chunks_like_batches(monkeypatch):
    import streammetrics.bootstrap.accumulator as B

    y, s = _data(3000)
    whole = sm.Bootstrap(_preset(), replicates=R).update(y, s, key=np.arange(3000))
    monkeypatch.setattr(B, "LINEAR_CHUNK", 7)
    chunked = sm.Bootstrap(_preset(), replicates=R).update(y, s, key=np.arange(3000))
    for acc, ref in zip(chunked._replicas, whole._replicas):
        assert acc.members["binary"].counts() == ref.members["binary"].counts()  # integer sums
        assert acc.finalize().log_loss == pytest.approx(ref.finalize().log_loss, rel=1e-13)


# ------------------------------------------ exact rank states from the rows kept
def _tied(n, seed):
    """Labels and scores rounded to two decimals (many ties), and real weights."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)
    return y, s, rng.random(n) * 2 * (rng.random(n) < 0.9)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 500), st.booleans(), st.booleans(), st.integers(0, 2**64 - 1))
def test_rank_replicates_equal_a_rank_state_fed_each_replicates_weights(n, weighted, tied, seed):
    y, s, w = _tied(n, n)
    if not tied:
        s = s + np.random.default_rng(n).random(n) * 1e-3
    w = w if weighted else None
    keys = np.random.default_rng(n + 2).integers(-(2**62), 2**62, n)
    b = sm.Bootstrap(sm.RankAUC(), replicates=R, seed=seed).update(y, s, sample_weight=w, key=keys)
    assert b._replicas == []  # no rank state per replicate: the rows are kept once
    got = b._ranks.scores(seed, R)
    draws = _weights(seed, keys, R, w=w)
    for r in range(R):
        if not draws[r].any():
            assert got[r] is None
            continue
        ref = sm.RankAUC().update(y, s, sample_weight=draws[r])
        assert got[r]["auc"] == pytest.approx(ref.finalize().auc, rel=1e-12, abs=1e-15)
        assert got[r]["average_precision"] == pytest.approx(ref.average_precision(), rel=1e-12, abs=1e-15)
        assert got[r]["n_pos"] == pytest.approx(float(draws[r][y == 1].sum()), rel=1e-12)
    aucs = [g["auc"] for g in got if g is not None]
    if not aucs:  # every row weighs 0
        return
    r = b.finalize()
    assert r.replicates_used == len(aucs)
    assert r.auc_ci_lower == np.quantile(aucs, (1 - 0.95) / 2)
    assert r.auc_ci_upper == np.quantile(aucs, (1 + 0.95) / 2)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.integers(1, 4),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_keyed_rank_states_are_identical_under_any_batching_sharding_and_merge_order(n, cuts, shards, weighted, rnd):
    y, s, _ = _tied(n, n)
    # integer weights: the point estimate's sums of squared weights are then exact in any order
    w = np.random.default_rng(n).integers(0, 4, n).astype(np.float64) if weighted else np.ones(n)
    w[0] = 1.0  # some weight: the point estimate is defined
    keys = np.random.default_rng(n + 1).permutation(n).astype(np.int64) * 3 + 17
    for template in (sm.RankAUC(), sm.Evaluator(task="binary")):
        make = lambda: sm.Bootstrap(template, replicates=R, seed=5)  # noqa: E731
        one, total = _one_and_sharded(make, y, s, w, keys, cuts, shards, rnd)
        got, want = total.finalize(), one.finalize()
        if isinstance(template, sm.RankAUC):
            assert total == one and dict(got) == dict(want)
        else:  # the other members' compensated sums may split differently; the rank scores may not
            for k in ("auc_ci_lower", "auc_ci_upper", "average_precision_ci_lower", "average_precision_ci_upper"):
                assert got[k] == want[k]


def test_rank_bands_are_those_of_each_replicates_rank_state():
    y, s, w = _tied(400, 1)
    keys = np.arange(400) * 7
    b = sm.Bootstrap(sm.RankAUC(), replicates=R, seed=3).update(y, s, sample_weight=w, key=keys)
    fpr, lower, upper = b.roc_band(grid=11)
    draws = _weights(3, keys, R, w=w)
    table = []
    for r in range(R):
        f, t, _ = sm.RankAUC().update(y, s, sample_weight=draws[r]).roc_curve()
        table.append(np.interp(fpr, f, t))  # no vertical run at these rates for these data
    np.testing.assert_allclose(lower, np.quantile(table, (1 - 0.95) / 2, axis=0), rtol=1e-12)
    np.testing.assert_allclose(upper, np.quantile(table, (1 + 0.95) / 2, axis=0), rtol=1e-12)


def test_a_bootstrapped_reliability_table_renders():
    # B + 1 bin edges beside B bins: each length gets a table of its own
    rng = np.random.default_rng(0)
    r = sm.Bootstrap(sm.Calibration(n_bins=4), replicates=5).update(rng.integers(0, 2, 50), rng.random(50)).finalize()
    from streammetrics._protocol.result import RenderContext

    text = "\n".join(r.section(RenderContext()))
    assert "mean_predicted" in text and "bin_edges" in text
    assert "<th>mean_predicted</th>" in r._repr_html_()
    pytest.importorskip("pandas")
    bounded = [
        f"{k}{e}" for k in ("bin_weight", "mean_predicted", "fraction_positive") for e in ("", "_ci_lower", "_ci_upper")
    ]
    assert r.to_frame(per_class=True).columns.tolist() == ["bin_count", *bounded]
