"""ClusterContingency and the clustering agreement functions: scikit-learn
agreement, the seed's examples, invariances, exact merging, huge inputs."""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streammetrics._kernels.contingency import batch_table, expected_mutual_info
from streammetrics.metrics.clustering import (
    AVERAGE_METHODS,
    ClusterContingency,
    adjusted_mutual_info_score,
    adjusted_rand_score,
    completeness_score,
    fowlkes_mallows_score,
    homogeneity_completeness_v_measure,
    homogeneity_score,
    mutual_info_score,
    normalized_mutual_info_score,
    rand_score,
    v_measure_score,
)
from tests.harness import check_accumulator, check_rejected_batch, state_snapshot

FIELDS = ["ari", "ami", "nmi", "mi", "homogeneity", "completeness", "v_measure", "fowlkes_mallows", "rand_index"]
# scores unchanged when the two labelings swap places
SYMMETRIC = ["ari", "ami", "nmi", "mi", "v_measure", "fowlkes_mallows", "rand_index"]


def sklearn_metrics():
    """scikit-learn's metrics, the reference (the test skips without them)."""
    return pytest.importorskip("sklearn.metrics")


def sk_reference(t, p, average_method="arithmetic", ami=True) -> dict:
    skm = sklearn_metrics()
    h, c, v = skm.homogeneity_completeness_v_measure(t, p)
    ref = {
        "ari": skm.adjusted_rand_score(t, p),
        "nmi": skm.normalized_mutual_info_score(t, p, average_method=average_method),
        "mi": skm.mutual_info_score(t, p),
        "homogeneity": h,
        "completeness": c,
        "v_measure": v,
        "fowlkes_mallows": skm.fowlkes_mallows_score(t, p),
        "rand_index": skm.rand_score(t, p),
    }
    if ami:
        ref["ami"] = skm.adjusted_mutual_info_score(t, p, average_method=average_method)
    return ref


def assert_close(result, ref, rtol=1e-10, atol=1e-12):
    for key, want in ref.items():
        np.testing.assert_allclose(getattr(result, key), want, rtol=rtol, atol=atol, err_msg=key)


# ------------------------------------------------------------ seed examples
def test_seed_examples():
    t = [0, 0, 0, 1, 1, 1]
    p = [0, 0, 1, 1, 2, 2]
    assert adjusted_rand_score(t, p) == pytest.approx(0.24242, abs=1e-5)  # 0.24...
    assert adjusted_rand_score(t, [1, 1, 0, 0, 3, 3]) == adjusted_rand_score(t, p)
    assert adjusted_rand_score(p, t) == adjusted_rand_score(t, p)
    assert adjusted_rand_score(t, t) == 1.0
    assert adjusted_rand_score([0, 1, 2, 0, 3, 4, 5, 1], [1, 1, 0, 0, 2, 2, 2, 2]) == pytest.approx(
        -0.12, abs=0.01
    )  # -0.12...
    h, c, v = homogeneity_completeness_v_measure(t, p)
    assert (round(h, 2), round(c, 2), round(v, 2)) == (0.67, 0.42, 0.52)
    assert f"{h:.2f} {c:.2f} {v:.2f}"[:14] == "0.67 0.42 0.52"
    assert str(h).startswith("0.66") and str(c).startswith("0.42") and str(v).startswith("0.51")
    h, c, v = homogeneity_completeness_v_measure(t, [0, 0, 0, 1, 2, 2])
    assert h == 1.0 and str(c).startswith("0.68") and str(v).startswith("0.81")
    assert str(fowlkes_mallows_score(t, p)).startswith("0.47140")
    assert adjusted_mutual_info_score(t, t) == 1.0
    assert normalized_mutual_info_score(t, t) == 1.0


def test_seed_ami_values_follow_the_old_max_normalisation():
    """The seed prints AMI from scikit-learn < 0.22, whose default was "max".

    We follow today's default, "arithmetic" (0.2988 here); with
    ``average_method="max"`` the seed's printed values come back.
    """
    t = [0, 0, 0, 1, 1, 1]
    p = [0, 0, 1, 1, 2, 2]
    assert str(adjusted_mutual_info_score(t, p, average_method="max")).startswith("0.22504")
    assert str(adjusted_mutual_info_score(p, t, average_method="max")).startswith("0.22504")
    assert str(adjusted_mutual_info_score(t, [1, 1, 0, 0, 3, 3], average_method="max")).startswith("0.22504")
    bad = ([0, 1, 2, 0, 3, 4, 5, 1], [1, 1, 0, 0, 2, 2, 2, 2])
    assert str(adjusted_mutual_info_score(*bad, average_method="max")).startswith("-0.10526")
    assert adjusted_mutual_info_score(t, p) == pytest.approx(
        sklearn_metrics().adjusted_mutual_info_score(t, p), rel=1e-12
    )
    assert adjusted_mutual_info_score(t, p) == pytest.approx(0.29879, abs=1e-5)


# ---------------------------------------------------------- scikit-learn
labels_strategy = st.lists(st.integers(-3, 4), min_size=1, max_size=40)


@settings(max_examples=50)
@given(
    data=st.data(),
    offset=st.sampled_from([0, -(2**62), 2**62, 10**12]),
    average_method=st.sampled_from(AVERAGE_METHODS),
)
def test_matches_sklearn_random(data, offset, average_method):
    t = np.array(data.draw(labels_strategy), dtype=np.int64)
    n = t.size
    p = np.array(data.draw(st.lists(st.integers(-2, 3), min_size=n, max_size=n)), dtype=np.int64)
    p = p * 7919 + offset  # far-apart, possibly huge labels (hash path)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    acc = ClusterContingency(average_method)
    for lo, hi in zip([0] + cuts, cuts + [n]):
        acc.update(t[lo:hi], p[lo:hi])
    r = acc.finalize()
    assert r.n == n
    ref = sk_reference(t, p, average_method)
    if average_method == "min" and n in (np.unique(t).size, np.unique(p).size) and r.n_classes > 1 and r.n_clusters > 1:
        # every point alone in one labeling: MI, its expectation and the
        # smaller entropy are one number, so AMI is 0/0 and either side's
        # value is rounding (scikit-learn gives 1.5 or 1.33 by direction)
        del ref["ami"]
    assert_close(r, ref)
    # the functional twins
    assert adjusted_rand_score(t, p) == r.ari
    assert adjusted_mutual_info_score(t, p, average_method=average_method) == r.ami
    assert normalized_mutual_info_score(t, p, average_method=average_method) == r.nmi
    assert mutual_info_score(t, p) == r.mi
    assert homogeneity_completeness_v_measure(t, p) == (r.homogeneity, r.completeness, r.v_measure)
    assert fowlkes_mallows_score(t, p) == r.fowlkes_mallows
    assert rand_score(t, p) == r.rand_index
    assert homogeneity_score(t, p) == r.homogeneity
    assert completeness_score(t, p) == r.completeness
    assert v_measure_score(t, p) == r.v_measure


@settings(max_examples=30)
@given(t=labels_strategy, data=st.data())
def test_relabelling_invariance_and_symmetry(t, data):
    t = np.array(t)
    p = np.array(data.draw(st.lists(st.integers(0, 5), min_size=t.size, max_size=t.size)))
    base = ClusterContingency().update(t, p).finalize()
    # any injective renaming, to arbitrary int64 values, changes nothing
    rng = np.random.default_rng(len(t))
    new_t = rng.integers(-(2**63), 2**63 - 1, 8, dtype=np.int64, endpoint=True)
    new_p = rng.permutation(np.array([-1, 2**62, 5, 0, -(2**63), 77], dtype=np.int64))
    if np.unique(new_t).size == new_t.size:
        renamed = ClusterContingency().update(new_t[t + 3], new_p[p]).finalize()
        assert_close(renamed, {k: base[k] for k in FIELDS}, rtol=1e-12, atol=1e-15)
    swapped = ClusterContingency().update(p, t).finalize()
    assert_close(swapped, {k: base[k] for k in SYMMETRIC}, rtol=1e-12, atol=1e-15)
    assert swapped.homogeneity == pytest.approx(base.completeness, rel=1e-12, abs=1e-15)
    assert swapped.completeness == pytest.approx(base.homogeneity, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "t, p",
    [
        ([0], [0]),
        ([3, 3], [1, 1]),
        ([0, 0, 0, 0], [0, 1, 2, 3]),
        ([0, 1, 2, 3], [0, 0, 0, 0]),
        ([0, 1, 2, 3], [4, 5, 6, 7]),  # every point alone in both
        ([0, 1], [0, 0]),
        ([0, 0, 1, 1], [0, 1, 0, 1]),
        ([0, 0, 1, 1], [1, 1, 0, 0]),
        ([5, 5, 5, 9], [2, 2, 2, 2]),
    ],
)
def test_degenerate_cases_match_sklearn(t, p):
    r = ClusterContingency().update(t, p).finalize()
    assert_close(r, sk_reference(t, p), rtol=1e-12, atol=1e-15)
    for method in AVERAGE_METHODS:
        r = ClusterContingency(method).update(t, p).finalize()
        assert_close(r, sk_reference(t, p, method), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------- protocol / merging
def _batches(rng, n_batches=8, huge=False):
    out = []
    for i in range(n_batches):
        n = int(rng.integers(0 if i == 3 else 1, 60))
        t = rng.integers(-4, 5, n)
        p = np.where(rng.random(n) < 0.5, t, rng.integers(0, 7, n))
        if huge:
            p = p * (2**60) - 3
        out.append((t, p))
    return out


@pytest.mark.parametrize("huge", [False, True])
def test_protocol_shards_and_sklearn(huge):
    batches = _batches(np.random.default_rng(7 + huge), huge=huge)
    t = np.concatenate([b[0] for b in batches])
    p = np.concatenate([b[1] for b in batches])
    r = check_accumulator(ClusterContingency, batches, sk_reference(t, p), expected_rtol=1e-10, atol=1e-12)
    assert r.n == t.size


@settings(max_examples=25)
@given(data=st.data())
def test_merge_order_is_exact(data):
    n = data.draw(st.integers(1, 60))
    t = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)))
    p = np.array(data.draw(st.lists(st.sampled_from([-(2**63), -1, 0, 2**40, 2**63 - 1]), min_size=n, max_size=n)))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    shards = [ClusterContingency().update(t[lo:hi], p[lo:hi]) for lo, hi in zip([0] + cuts, cuts + [n])]
    order = data.draw(st.permutations(range(len(shards))))
    merged = ClusterContingency()
    for i in order:
        merged.merge(shards[i])
    whole = ClusterContingency().update(t, p)
    assert merged == whole  # the same table, exactly
    keys, counts = np.unique(np.stack([t, p], 1), axis=0, return_counts=True)
    got_t, got_p, got_c = whole.table()
    np.testing.assert_array_equal(got_t, keys[:, 0])
    np.testing.assert_array_equal(got_p, keys[:, 1])
    np.testing.assert_array_equal(got_c, counts)


def test_batch_table_paths_agree():
    rng = np.random.default_rng(4)
    t = rng.integers(0, 30, 5000)
    p = rng.integers(0, 40, 5000)
    dense = batch_table(t, p)
    sparse = batch_table(t * 10**15, p - 2**62)  # too wide for the dense histogram
    np.testing.assert_array_equal(dense[2], sparse[2])
    np.testing.assert_array_equal(dense[0] * 10**15, sparse[0])
    np.testing.assert_array_equal(dense[1] - 2**62, sparse[1])


# ---------------------------------------------------------------- large n
def test_million_rows_pair_counts_do_not_overflow():
    """n = 1e6 and 2000 x 300 clusters: tp * tn ~ 1e23 would overflow int64."""
    rng = np.random.default_rng(0)
    n = 1_000_000
    t = rng.integers(0, 2000, n)
    p = np.where(rng.random(n) < 0.5, t % 300, rng.integers(0, 300, n))
    acc = ClusterContingency()
    for lo in range(0, n, 250_000):
        acc.update(t[lo : lo + 250_000], p[lo : lo + 250_000])
    r = acc.finalize()
    assert (n * (n - 1) / 2) ** 2 > 2**63  # the products involved
    assert_close(r, sk_reference(t, p, ami=False), rtol=1e-9)
    assert r.n == n and r.n_classes == 2000 and r.n_clusters == 300


def test_million_rows_ami_matches_sklearn():
    rng = np.random.default_rng(1)
    n = 1_000_000
    t = rng.integers(0, 10, n)
    p = np.where(rng.random(n) < 0.3, t, rng.integers(0, 12, n))
    ours = adjusted_mutual_info_score(t, p)
    # scikit-learn's lgamma differences lose ~1e-9 of each term at this n
    assert ours == pytest.approx(sklearn_metrics().adjusted_mutual_info_score(t, p), rel=1e-8)


def _emi_exact(a, b, n):
    """EMI with exact rational hypergeometric probabilities (reference)."""
    terms = []
    for ai in (int(v) for v in a):
        for bj in (int(v) for v in b):
            denom = math.comb(n, bj)
            for nij in range(max(1, ai + bj - n), min(ai, bj) + 1):
                prob = Fraction(math.comb(ai, nij) * math.comb(n - ai, bj - nij), denom)
                terms.append(float(prob) * nij / n * math.log(Fraction(n * nij, ai * bj)))
    return math.fsum(terms)


@pytest.mark.parametrize(
    "sizes", [([3, 4, 5], [6, 6]), ([30, 50, 1, 19], [25, 25, 50]), ([150, 50, 100], [100, 200]), ([1] * 7, [7])]
)
def test_expected_mutual_info_is_accurate(sizes):
    a, b = (np.array(s, dtype=np.int64) for s in sizes)
    n = int(a.sum())
    assert expected_mutual_info(a, b, n) == pytest.approx(_emi_exact(a, b, n), rel=1e-14, abs=1e-16)


# ------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "args, match",
    [
        (([0, 1, 2], [0, 1.5, 2]), r"labels_pred\[1\] = 1.5: cluster labels must be integers"),
        (([0, float("nan")], [0, 1]), r"labels_true\[1\] = nan"),
        (([0, 1], [0, 1, 2]), "different lengths"),
        (([0, 2.0**70], [0, 1]), r"labels_true\[1\]"),
        ((np.array([1, 2**63], dtype=np.uint64), [0, 1]), r"labels_true\[1\]"),
        ((np.zeros((2, 2)), np.zeros((2, 2))), "1-D"),
    ],
)
def test_rejected_batch_leaves_state(args, match):
    acc = ClusterContingency().update([0, 0, 1], [5, 5, 5])
    check_rejected_batch(acc, args, match=match)


def test_wrong_types_and_settings():
    acc = ClusterContingency()
    with pytest.raises(TypeError):
        acc.update(["a", "b"], [0, 1])
    with pytest.raises(ValueError, match="'arithmetic', 'geometric', 'min', 'max'"):
        ClusterContingency("mean")
    with pytest.raises(ValueError, match="average_method"):
        adjusted_mutual_info_score([0, 1], [0, 1], average_method="median")
    a = ClusterContingency().update([0, 1], [0, 0])
    b = ClusterContingency("max").update([0], [1])
    snap = state_snapshot(a)
    with pytest.raises(ValueError, match="different settings"):
        a.merge(b)
    assert all(np.array_equal(snap[k], a._state[k]) for k in snap)
    with pytest.raises(ValueError):
        homogeneity_completeness_v_measure([0, 1], [0, 1], beta=-1)


@pytest.mark.parametrize(
    "fn",
    [
        adjusted_rand_score,
        adjusted_mutual_info_score,
        rand_score,
        normalized_mutual_info_score,
        mutual_info_score,
        fowlkes_mallows_score,
        homogeneity_completeness_v_measure,
    ],
)
def test_empty_input_is_an_error(fn):
    with pytest.raises(ValueError, match="empty"):
        fn([], [])


def test_load_rejects_inconsistent_tables():
    acc = ClusterContingency().update([0, 0, 1, 2], [1, 1, 0, 0])
    settings_ = acc._settings()

    def tampered(**changes):
        arrays = {k: v.copy() for k, v in acc._state.items()}
        arrays.update(changes)
        return arrays

    with pytest.raises(ValueError, match="sorted"):
        ClusterContingency._from_saved(settings_, tampered(true=np.array([1, 0, 2])), "x")
    with pytest.raises(ValueError, match="positive"):
        ClusterContingency._from_saved(settings_, tampered(counts=np.array([4, 0, 0])), "x")
    with pytest.raises(ValueError, match="add up"):
        ClusterContingency._from_saved(settings_, tampered(counts=np.array([1, 1, 1])), "x")
    with pytest.raises(ValueError, match="one length"):
        ClusterContingency._from_saved(settings_, tampered(pred=np.array([0, 1])), "x")


def test_weights_are_refused_with_a_clear_error():
    acc = ClusterContingency().update([0, 1], [1, 1])
    with pytest.raises(TypeError, match="no sample_weight"):
        acc.update([0, 1], [1, 0], sample_weight=[1.0, 2.0])
    assert acc.n == 2


def test_small_batches_on_a_large_table_give_the_one_pass_state(tmp_path):
    """Small batches wait in a log-structured stack before joining the table;
    every way of reading the state sees them, and nothing depends on when
    the stack was flushed."""
    rng = np.random.default_rng(11)
    big_t, big_p = rng.integers(0, 300, 20_000), rng.integers(0, 300, 20_000)
    small = [(rng.integers(-3, 400, int(rng.integers(1, 64))), rng.integers(0, 350, 64)) for _ in range(150)]
    small = [(t, p[: len(t)]) for t, p in small]
    acc = ClusterContingency().update(big_t, big_p)
    for i, (t, p) in enumerate(small):
        acc.update(t, p)
        if i == 70:
            mid = acc.finalize()  # reading the state in the middle changes nothing later
            assert mid.n == 20_000 + sum(len(a) for a, _ in small[:71])
    all_t = np.concatenate([big_t] + [t for t, _ in small])
    all_p = np.concatenate([big_p] + [p for _, p in small])
    one = ClusterContingency().update(all_t, all_p)
    assert acc.n == one.n
    assert acc == one
    assert dict(acc.finalize()) == dict(one.finalize())
    # copies, pickles, saves and merges taken while batches are pending
    pend = ClusterContingency().update(big_t, big_p)
    for t, p in small[:20]:
        pend.update(t, p)
    assert len(pend._tables) > 1  # still stacked
    ref = ClusterContingency().update(
        np.concatenate([big_t] + [t for t, _ in small[:20]]), np.concatenate([big_p] + [p for _, p in small[:20]])
    )
    assert pickle.loads(pickle.dumps(pend)) == ref
    cp = pend.copy()
    cp.update([1], [1])
    assert cp.n == ref.n + 1 and pend.n == ref.n
    other = ClusterContingency().update([5, 6], [7, 8])
    other.update([9], [9])
    assert (other + pend) == (ClusterContingency().update([5, 6, 9], [7, 8, 9]) + ref)
    pend.save(tmp_path / "s")
    assert ClusterContingency.load(tmp_path / "s") == ref
    # a rejected batch leaves the pending stack as it was
    with pytest.raises(ValueError):
        pend.update([1, 2], [1])
    assert pend == ref


@pytest.mark.parametrize("p", [[0, 0, 0, 0, 0, 1], [0, 0, 1, 1, 2, 3]])
def test_ami_when_every_point_is_alone_in_one_labeling(p):
    # MI and its expectation are both the other labeling's entropy: AMI is 0
    # (1 for "min", whose normaliser is that entropy too: 0/0, guarded), in
    # either direction
    t = [0, 1, -1, 2, -2, 3]
    for method in AVERAGE_METHODS:
        a = ClusterContingency(method).update(t, p).finalize().ami
        b = ClusterContingency(method).update(p, t).finalize().ami
        assert a == pytest.approx(b, rel=1e-12)  # same sign: eps over the same denominator
        assert a == 1.0 if method == "min" else 0 < a < 1e-14
