"""AUC (Mann–Whitney U), ROC and precision-recall curves, and RankAUC in its
exact and bounded-memory modes: the specification example, a brute-force pair
count, scikit-learn agreement, batching invariance, certified intervals, safe
state files and bad input."""

from __future__ import annotations

import contextlib
import os
import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from streammetrics._kernels import keys as KK
from streammetrics._kernels import pairs
from streammetrics._kernels.sort import sort_keys
from streammetrics.metrics.ranking import RankAUC, auc, average_precision, pr_curve, roc_curve
from streammetrics.metrics.ranking.exact import Exact
from streammetrics.metrics.ranking.points import u2_counts

from .harness import assert_state_unchanged, check_accumulator, check_rejected_batch, sharded, state_snapshot

G = [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]]
S = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]
Y = [0, 0, 0, 1, 1, 1, 1]


# ------------------------------------------------------------ references
def brute_u2(y, s, w=None):
    """Twice the Mann–Whitney U by counting every (positive, negative) pair."""
    y = np.asarray(y)
    s = np.asarray(s, dtype=float)
    w = np.ones(len(y), dtype=np.int64) if w is None else np.asarray(w)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    total = 0
    for i in pos:
        for j in neg:
            total += w[i] * w[j] * (2 if s[i] > s[j] else 1 if s[i] == s[j] else 0)
    return total, w[pos].sum(), w[neg].sum()


def brute_auc(y, s, w=None):
    u2, p, n = brute_u2(y, s, w)
    if w is None:
        u2, p, n = int(u2), int(p), int(n)
        return u2 / (2 * (p * n + (p * n == 0)))
    return float(u2) / (2.0 * (p * n + (p * n == 0)))


def brute_auc_sorted(y, s):
    """Exact AUC of larger inputs: 2U counted with numpy's sort and searchsorted."""
    pos = np.sort(np.asarray(s)[np.asarray(y) == 1])
    neg = np.sort(np.asarray(s)[np.asarray(y) == 0])
    below = np.searchsorted(neg, pos, side="left")
    upto = np.searchsorted(neg, pos, side="right")
    u2 = int(np.sum(below + upto))
    p, n = len(pos), len(neg)
    return u2 / (2 * (p * n + (p * n == 0)))


def both_classes(y, w=None):
    y = np.asarray(y)
    w = np.ones(len(y)) if w is None else np.asarray(w)
    return w[y == 1].sum() > 0 and w[y == 0].sum() > 0


def fold_batches(acc, y, s, w, cuts):
    edges = sorted({0, len(y), *[c for c in cuts if c <= len(y)]})
    for lo, hi in zip(edges[:-1], edges[1:]):
        acc.update(y[lo:hi], s[lo:hi], sample_weight=None if w is None else w[lo:hi])
    return acc


# inputs with many ties: scores drawn from a few values, or continuous
tied_scores = st.lists(st.sampled_from([-1.5, -0.0, 0.0, 0.25, 0.5, 0.75, 2.0, 1e300]), min_size=1, max_size=60)


@st.composite
def labelled(draw, max_size=60, weights=None, continuous=None):
    n = draw(st.integers(1, max_size))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int64)
    if continuous is None:
        continuous = draw(st.booleans())
    if continuous:
        s = np.array(draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n)))
    else:
        k = draw(st.integers(1, 6))
        s = np.array(draw(st.lists(st.integers(0, k), min_size=n, max_size=n)), dtype=float) / k - 0.5
    if weights is None:
        weights = draw(st.booleans())
    w = None
    if weights:
        w = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=float)
    cuts = draw(st.lists(st.integers(0, n), max_size=5))
    return y, s, w, cuts


# ------------------------------------------------------------- the spec
def test_specification_example_both_forms():
    assert auc(G, S) == auc(Y, S) == 10 / 12
    assert round(auc(G, S), 6) == 0.833333
    r = RankAUC().update(G, S).finalize()
    assert r.auc == 10 / 12 and (r.n_pos, r.n_neg, r.n) == (4, 3, 7)
    assert r.auc_lower == r.auc == r.auc_upper
    assert RankAUC().update(np.array(G, dtype=bool), S).finalize().auc == 10 / 12
    assert auc(np.array(G, dtype=float), np.array(S, dtype=np.float32)) == auc(Y, np.float32(S))


def test_single_class_gives_zero_not_half():
    # the specification's guard; scikit-learn warns and returns NaN instead
    assert auc([1, 1, 1], [0.1, 0.2, 0.3]) == 0.0
    assert auc([0, 0], [0.1, 0.2]) == 0.0
    r = RankAUC().update([1, 1], [0.3, 0.3]).finalize()
    assert r.auc == 0.0 and r.n_pos == 2 and r.n_neg == 0
    assert auc([1, 0], [0.5, 0.5], sample_weight=[1.0, 0.0]) == 0.0
    with pytest.warns(skm._ranking.UndefinedMetricWarning, match="Only one class"):
        assert np.isnan(skm.roc_auc_score([1, 1, 1], [0.1, 0.2, 0.3]))


def test_one_hot_rows_are_checked():
    with pytest.raises(ValueError, match=r"y\[2\] = \[1, 1\]: each row of the membership matrix"):
        auc([[1, 0], [0, 1], [1, 1]], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"y\[0\] = \[0, 0\]"):
        RankAUC().update([[0, 0], [0, 1]], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"y\[1\] = \[0.5, 0.5\]"):
        auc(np.array([[1.0, 0.0], [0.5, 0.5]]), [0.1, 0.2])
    with pytest.raises(ValueError, match="n x 2 one-hot membership matrix"):
        auc(np.eye(3), [0.1, 0.2, 0.3])
    # an (n, 1) column is read as the vector it holds; a (1, n) row is refused
    assert auc(np.array([[1], [0]]), [0.2, 0.1]) == auc([1, 0], [0.2, 0.1]) == 1.0
    with pytest.raises(ValueError, match="row vector"):
        auc([1, 0, 1], np.array([[0.1, 0.2, 0.3]]))


def test_ties_count_one_half_and_signed_zeros_tie():
    assert auc([1, 0], [0.5, 0.5]) == 0.5
    assert auc([1, 0, 1, 0], [0.0, -0.0, -0.0, 0.0]) == 0.5
    fpr, tpr, th = roc_curve([1, 0, 1, 0], [0.0, -0.0, -0.0, 0.0])
    assert th.tolist() == [np.inf, 0.0]


# ----------------------------------------------------- brute-force pairs
@given(labelled())
def test_matches_brute_force_pair_count(data):
    y, s, w, cuts = data
    expected = brute_auc(y, s, w)
    got = auc(y, s, sample_weight=w)
    acc = fold_batches(RankAUC(), y, s, w, cuts)
    r = acc.finalize()
    if w is None:
        assert got == expected  # exact: 2U is an integer, rounded once
        assert r.auc == expected
        assert r.n_pos == int(np.sum(y == 1)) and r.n_neg == int(np.sum(y == 0))
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert r.auc == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert r.n_pos == pytest.approx(w[y == 1].sum())
    assert r.n == len(y)
    assert r.auc_lower == r.auc == r.auc_upper


@given(tied_scores, st.data())
def test_brute_force_with_extreme_ties(s, data):
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=len(s), max_size=len(s))))
    assert auc(y, s) == brute_auc(y, s)


@pytest.mark.parametrize("n", [191, 192, 193, 1000, 20_000])
@pytest.mark.parametrize("kind", ["normal", "float32", "ties", "wide"])
def test_radix_path_against_sklearn(n, kind):
    rng = np.random.default_rng(n)
    y = rng.integers(0, 2, n)
    if kind == "normal":
        s = rng.normal(size=n) + y
    elif kind == "float32":
        s = (rng.random(n) + 0.3 * y).astype(np.float32).astype(np.float64)
    elif kind == "ties":
        s = rng.integers(-3, 4, n) * 0.5 + 0.0
        s[::7] = -0.0
    else:
        s = rng.choice([-1e300, -1.0, -5e-324, 0.0, 5e-324, 1e-300, 1.0, 1e300], n) * rng.random(n)
    assert auc(y, s) == brute_auc_sorted(y, s)
    assert auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), rel=1e-14)
    assert auc(y, s) == RankAUC().update(y, s).finalize().auc
    w = rng.random(n)
    assert auc(y, s, sample_weight=w) == pytest.approx(skm.roc_auc_score(y, s, sample_weight=w), rel=1e-12)


@pytest.mark.parametrize("n", [0, 1, 5, 191, 192, 500, 70_000])
def test_sort_kernels(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    keys[: n // 3] &= np.uint64(0xFFFF)  # shared high bytes: skipped passes
    ref = np.sort(keys)
    got = keys.copy()
    sort_keys(got, np.empty(n, np.uint64), None, None)
    np.testing.assert_array_equal(got, ref)
    vals = keys.astype(np.float64)
    k2, v2 = keys.copy(), vals.copy()
    sort_keys(k2, np.empty(n, np.uint64), v2, np.empty(n))
    np.testing.assert_array_equal(k2, ref)
    np.testing.assert_array_equal(v2, ref.astype(np.float64))


# ---------------------------------------------------------- scikit-learn
def sk_curves(y, s, w):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return (
            skm.roc_auc_score(y, s, sample_weight=w),
            skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False),
            skm.precision_recall_curve(y, s, sample_weight=w),
            skm.average_precision_score(y, s, sample_weight=w),
        )


@settings(max_examples=80)
@given(labelled(max_size=300))
def test_agrees_with_sklearn(data):
    y, s, w, cuts = data
    if not both_classes(y, w):
        return
    ref_auc, ref_roc, ref_pr, ref_ap = sk_curves(y, s, w)
    acc = fold_batches(RankAUC(), y, s, w, cuts)
    rtol = 0 if w is None else 1e-12
    np.testing.assert_allclose(acc.finalize().auc, ref_auc, rtol=max(rtol, 1e-15))
    for got, ref in zip(acc.roc_curve(), ref_roc):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-15)
    np.testing.assert_array_equal(acc.roc_curve()[2], ref_roc[2])
    for got, ref in zip(acc.pr_curve(), ref_pr):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-15)
    np.testing.assert_array_equal(acc.pr_curve()[2], ref_pr[2])
    assert acc.average_precision() == pytest.approx(ref_ap, rel=1e-12, abs=1e-15)
    # the functional twins read the same state
    for got, ref in zip(roc_curve(y, s, sample_weight=w), ref_roc):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-15)
    for got, ref in zip(pr_curve(y, s, sample_weight=w), ref_pr):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-15)
    assert average_precision(y, s, sample_weight=w) == pytest.approx(ref_ap, rel=1e-12, abs=1e-15)
    assert auc(y, s, sample_weight=w) == pytest.approx(ref_auc, rel=1e-12)


def test_curves_are_exact_on_a_large_sample():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 200_000)
    s = np.round(rng.normal(size=y.size) + y, 3)  # ties
    acc = RankAUC()
    for i in range(0, y.size, 30_000):
        acc.update(y[i : i + 30_000], s[i : i + 30_000])
    ref = skm.roc_curve(y, s, drop_intermediate=False)
    for got, r in zip(acc.roc_curve(), ref):
        np.testing.assert_array_equal(got, r)
    ref = skm.precision_recall_curve(y, s)
    for got, r in zip(acc.pr_curve(), ref):
        np.testing.assert_array_equal(got, r)
    assert acc.average_precision() == skm.average_precision_score(y, s)
    assert acc.finalize().auc == skm.roc_auc_score(y, s)


def test_curves_with_one_class_use_the_guard():
    fpr, tpr, th = roc_curve([1, 1], [0.2, 0.4])
    assert fpr.tolist() == [0.0, 0.0, 0.0] and tpr.tolist() == [0.0, 0.5, 1.0]
    precision, recall, th = pr_curve([0, 0], [0.2, 0.4])
    assert recall.tolist() == [0.0, 0.0, 0.0] and precision.tolist() == [0.0, 0.0, 1.0]
    assert average_precision([0, 0], [0.2, 0.4]) == 0.0


def test_zero_weight_rows_are_dropped_like_sklearn():
    y, s, w = [1, 0, 1, 0, 1], [0.9, 0.8, 0.3, 0.1, 0.5], [1.0, 2.0, 0.0, 1.0, 0.5]
    for got, ref in zip(
        roc_curve(y, s, sample_weight=w), skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    ):
        np.testing.assert_allclose(got, ref)
    acc = RankAUC().update(y, s, sample_weight=[0.0] * 5)
    assert acc.n == 5 and acc.finalize().auc == 0.0
    assert acc.roc_curve()[2].tolist() == [np.inf]


# ------------------------------------------------ batching and merging
@given(labelled(weights=False), st.sampled_from(["forward", "reverse", "plus"]))
def test_any_batching_sharding_and_merge_order_is_exact(data, order):
    y, s, _, cuts = data
    one = RankAUC().update(y, s)
    merged = sharded(RankAUC, [y, s], None, cuts, order)
    assert merged.finalize().as_dict() == one.finalize().as_dict()
    assert merged == one  # the canonical state: one run of distinct scores
    assert fold_batches(RankAUC(), y, s, None, cuts) == one


@given(labelled(weights=True))
def test_weighted_batching_agrees(data):
    y, s, w, cuts = data
    one = RankAUC().update(y, s, sample_weight=w).finalize()
    merged = sharded(RankAUC, [y, s], w, cuts, "reverse").finalize()
    assert merged.auc == pytest.approx(one.auc, rel=1e-12, abs=1e-15)
    assert merged.n == one.n


def test_huge_weights_do_not_overflow():
    y, s = [1, 0, 1, 0, 1], [0.3, 0.2, 0.1, 0.4, 0.2]
    w = np.array([1.0, 1.0, 2.0, 1.0, 3.0])
    assert auc(y, s, sample_weight=w * 1e300) == pytest.approx(auc(y, s, sample_weight=w), rel=1e-15)
    assert auc(y, s, sample_weight=w * 1e-300) == pytest.approx(auc(y, s, sample_weight=w), rel=1e-15)


def test_unweighted_then_weighted_batches():
    a = RankAUC().update([1, 0, 1], [0.3, 0.2, 0.1]).update([0, 1], [0.5, 0.6], sample_weight=[2.0, 0.5])
    b = RankAUC().update([1, 0, 1, 0, 1], [0.3, 0.2, 0.1, 0.5, 0.6], sample_weight=[1, 1, 1, 2, 0.5])
    assert a.finalize().auc == pytest.approx(b.finalize().auc, rel=1e-15)
    assert isinstance(a.finalize().n_pos, float)
    c = RankAUC().update([1, 0], [0.3, 0.2])
    c.merge(RankAUC().update([0], [0.5], sample_weight=[2.0]))
    assert c.finalize().auc == pytest.approx(auc([1, 0, 0], [0.3, 0.2, 0.5], sample_weight=[1, 1, 2]))


def test_runs_merge_log_structured():
    rng = np.random.default_rng(3)
    acc = RankAUC()
    for _ in range(300):
        acc.update(rng.integers(0, 2, 50), rng.random(50))
        sizes = [r[0].shape[0] for r in runs(acc)]
        assert all(a > 2 * b for a, b in zip(sizes, sizes[1:]))
        assert len(sizes) <= 15
    assert sum(sizes) == 15_000


def test_harness_exact():
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, 2, k), np.round(rng.normal(size=k), 1)) for k in (5, 1, 40, 17, 3, 60)]
    y = np.concatenate([b[0] for b in batches])
    s = np.concatenate([b[1] for b in batches])
    check_accumulator(RankAUC, batches, {"auc": brute_auc(y, s), "n_pos": int(y.sum())}, rtol=0)


def test_harness_weighted_and_bounded_before_binning():
    rng = np.random.default_rng(1)
    batches = [
        {"args": (rng.integers(0, 2, k), rng.integers(0, 9, k) / 8), "sample_weight": rng.random(k)}
        for k in (4, 30, 9, 21)
    ]
    y = np.concatenate([b["args"][0] for b in batches])
    s = np.concatenate([b["args"][1] for b in batches])
    w = np.concatenate([b["sample_weight"] for b in batches])
    expected = {"auc": brute_auc(y, s, w)}
    check_accumulator(RankAUC, batches, expected)
    r = check_accumulator(lambda: RankAUC(max_bins=5), batches, expected)
    assert r.auc_lower == r.auc == r.auc_upper


# ------------------------------------------------------------ overflow
def test_128_bit_pair_count_past_int64():
    counts = np.array([[3_000_000_000, 0, 5_000_000_000, 7], [0, 4_000_000_000, 6_000_000_000, 1]], np.int64)
    n = int(counts.sum())
    state = RankAUC().state_dict()
    state.update(n=np.array([n], np.int64), lo=np.array([-1.0, 0.0, 0.5, 2.0]), counts=counts)
    acc2 = RankAUC._from_saved({"max_bins": None}, state, "test")
    p, q = counts
    u2 = sum(int(p[i]) * (2 * int(q[:i].sum()) + int(q[i])) for i in range(4))
    n_pos, n_neg = int(p.sum()), int(q.sum())
    assert 2 * n_pos * n_neg > 2**63
    r = acc2.finalize()
    assert r.auc == u2 / (2 * n_pos * n_neg) and r.n_pos == n_pos
    high, low = pairs.u2_int128(counts)
    assert (int(high) << 64) | int(low) == u2
    rng = np.random.default_rng(0)
    small = rng.integers(0, 1000, (2, 500))
    high, low = pairs.u2_int128(small)
    assert high == 0 and int(low) == u2_counts(small, *small.sum(axis=1).tolist())


# ---------------------------------------------------------- bounded mode
@st.composite
def bounded_case(draw):
    y, s, w, cuts = draw(labelled(max_size=120))
    max_bins = draw(st.integers(1, 6))
    shards = draw(st.integers(1, 4))
    tree = draw(st.booleans())
    return y, s, w, cuts, max_bins, shards, tree


def check_interval(r, exact, weighted):
    if weighted:
        tol = 1e-12
        assert r.auc_lower - tol <= exact <= r.auc_upper + tol
        assert r.auc_lower - tol <= r.auc <= r.auc_upper + tol
    else:
        assert r.auc_lower <= exact <= r.auc_upper
        assert r.auc_lower <= r.auc <= r.auc_upper


@settings(max_examples=150)
@given(bounded_case())
def test_bounded_interval_always_holds_the_exact_value(case):
    y, s, w, cuts, max_bins, n_shards, tree = case
    exact = RankAUC().update(y, s, sample_weight=w).finalize().auc
    # shards folded in batches, then merged in a chain or a tree
    parts = []
    for k in range(n_shards):
        idx = np.arange(k, len(y), n_shards)
        part = RankAUC(max_bins=max_bins)
        fold_batches(part, y[idx], s[idx], None if w is None else w[idx], cuts)
        assert part.n == len(idx)
        assert items(part) is None or items(part)[0].shape[0] <= 2 * max_bins
        if part.n:
            wk = None if w is None else w[idx]
            check_interval(part.finalize(), auc(y[idx], s[idx], sample_weight=wk), w is not None)
        parts.append(part)
    if tree:
        while len(parts) > 1:
            parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        merged = parts[0]
    else:
        merged = RankAUC(max_bins=max_bins)
        for p in parts:
            merged.merge(p)
    assert merged.n == len(y)
    r = merged.finalize()
    check_interval(r, exact, w is not None)
    # the curves are those of the binned scores: well-formed
    fpr, tpr, th = merged.roc_curve()
    assert th[0] == np.inf and np.all(np.diff(th) < 0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    # the state survives a file round trip, bins included
    back = pickle.loads(pickle.dumps(merged))
    assert back == merged and back.finalize().as_dict() == r.as_dict()
    RankAUC._from_saved({"max_bins": max_bins}, dict(merged._state), "check")


@given(labelled(max_size=40), st.integers(20, 40))
def test_bounded_is_exact_until_binned(data, max_bins):
    y, s, w, cuts = data  # at most 40 distinct scores: never past 2 * max_bins
    r = fold_batches(RankAUC(max_bins=max_bins), y, s, w, cuts).finalize()
    e = RankAUC().update(y, s, sample_weight=w).finalize()
    assert r.auc_lower == r.auc == r.auc_upper
    if w is None:
        assert r.as_dict() == e.as_dict()
    else:
        assert r.auc == pytest.approx(e.auc, rel=1e-12, abs=1e-15)


def test_bounded_million_scores_narrow_interval_small_state():
    rng = np.random.default_rng(42)
    exact, bounded = RankAUC(), RankAUC(max_bins=1000)
    for _ in range(50):
        y = rng.integers(0, 2, 20_000)
        s = rng.normal(size=y.size) + 0.8 * y
        exact.update(y, s)
        bounded.update(y, s)
        assert items(bounded)[0].shape[0] <= 2000
        assert bounded.nbytes < 100_000
        assert sum(a.nbytes for a in bounded.state_dict().values()) < 100_000
    e, b = exact.finalize(), bounded.finalize()
    assert runs(exact)[0][0].shape[0] == 1_000_000  # a million distinct scores
    assert b.auc_lower <= e.auc <= b.auc_upper
    assert b.auc_upper - b.auc_lower < 0.01
    assert abs(b.auc - e.auc) < 1e-3
    assert (b.n_pos, b.n_neg, b.n) == (e.n_pos, e.n_neg, e.n)
    # 16 binned shards merged: still a valid and useful interval
    shards = [RankAUC(max_bins=1000) for _ in range(16)]
    ys, ss = [], []
    for _k, sh in enumerate(shards):
        y = rng.integers(0, 2, 30_000)
        s = rng.normal(size=y.size) + 0.8 * y
        ys.append(y)
        ss.append(s)
        for i in range(0, y.size, 10_000):
            sh.update(y[i : i + 10_000], s[i : i + 10_000])
    merged = RankAUC(max_bins=1000)
    for sh in shards:
        merged.merge(sh)
    e = auc(np.concatenate(ys), np.concatenate(ss))
    r = merged.finalize()
    assert r.auc_lower <= e <= r.auc_upper and r.auc_upper - r.auc_lower < 0.01
    assert merged.nbytes < 100_000


def test_bounded_state_does_not_grow_with_rows():
    rng = np.random.default_rng(5)
    acc = RankAUC(max_bins=50)
    sizes = []
    for k in range(200):
        n = int(rng.integers(1, 400))
        acc.update(rng.integers(0, 2, n), rng.random(n), sample_weight=rng.random(n) if k % 3 == 0 else None)
        sizes.append(items(acc)[0].shape[0])
    assert max(sizes) <= 100 and acc.nbytes <= 16 + 100 * 48


def test_bounded_settings_must_match():
    exact = RankAUC().update([1, 0], [0.2, 0.1])
    bounded = RankAUC(max_bins=10).update([1, 0], [0.2, 0.1])
    other = RankAUC(max_bins=20).update([1, 0], [0.2, 0.1])
    snaps = [state_snapshot(a) for a in (exact, bounded, other)]
    for a, b in [(exact, bounded), (bounded, exact), (bounded, other)]:
        with pytest.raises(ValueError, match="max_bins"):
            a.merge(b)
        with pytest.raises(ValueError, match="max_bins"):
            a + b
    for a, snap in zip((exact, bounded, other), snaps):
        assert_state_unchanged(a, snap)
    with pytest.raises(ValueError, match="at least 1"):
        RankAUC(max_bins=0)
    with pytest.raises(TypeError):
        RankAUC(max_bins=2.5)
    with pytest.raises(TypeError):
        RankAUC(max_bins=True)


# ---------------------------------------------------------------- bad input
BAD = [
    (([1, 2, 0], [0.1, 0.2, 0.3]), {}, r"y\[1\] = 2: labels must be 0 or 1"),
    (([1, 0, 0.5], [0.1, 0.2, 0.3]), {}, r"y\[2\] = 0.5: labels must be 0 or 1"),
    (([1, 0, -1], [0.1, 0.2, 0.3]), {}, r"y\[2\] = -1"),
    (([1, 0, 1], [0.1, np.nan, 0.3]), {}, r"s\[1\] = nan: scores must be finite"),
    (([1, 0, 1], [0.1, 0.2, np.inf]), {}, r"s\[2\] = inf: scores must be finite"),
    (([1, 0, 1], [-np.inf, 0.2, 0.3]), {}, r"s\[0\] = -inf"),
    (([1, 0, 1], [0.1, 0.2, 0.3]), {"sample_weight": [1.0, -1.0, 1.0]}, r"sample_weight\[1\] = -1.0"),
    (([1, 0, 1], [0.1, 0.2, 0.3]), {"sample_weight": [1.0, 1.0, np.nan]}, r"sample_weight\[2\] = nan"),
    (([1, 0, 1], [0.1, 0.2]), {}, "different lengths"),
    (([1, 0, 1], [0.1, 0.2, 0.3]), {"sample_weight": [1.0]}, "length"),
]


@pytest.mark.parametrize("max_bins", [None, 2])
@pytest.mark.parametrize("args, kwargs, match", BAD)
def test_bad_batches_leave_state_unchanged(args, kwargs, match, max_bins):
    rng = np.random.default_rng(0)
    acc = RankAUC(max_bins=max_bins)
    acc.update(rng.integers(0, 2, 300), rng.random(300))
    acc.update(rng.integers(0, 2, 300), rng.random(300))
    check_rejected_batch(acc, args, kwargs, match=match)
    big_y = rng.integers(0, 2, 1000)
    big_s = rng.random(1000)
    big_s[777] = np.nan
    check_rejected_batch(acc, (big_y, big_s), match=r"s\[777\] = nan")
    with pytest.raises(ValueError, match=match):
        auc(*args, **kwargs)


def test_empty_input():
    with pytest.raises(ValueError, match="empty"):
        auc([], [])
    with pytest.raises(ValueError, match="empty"):
        roc_curve([], [])
    acc = RankAUC().update([], [])
    assert acc.n == 0
    with pytest.raises(ValueError, match="no observations"):
        acc.finalize()
    with pytest.raises(ValueError, match="no observations"):
        acc.roc_curve()


# --------------------------------------------------------------- state files
def test_save_load_exact_and_bounded(tmp_path):
    rng = np.random.default_rng(2)
    for acc in (RankAUC(), RankAUC(max_bins=8)):
        for _ in range(5):
            acc.update(rng.integers(0, 2, 100), rng.normal(size=100))
        path = os.path.join(tmp_path, f"auc-{acc.max_bins}")
        acc.save(path)
        back = RankAUC.load(path)
        assert back == acc and back.max_bins == acc.max_bins
        assert back.finalize().as_dict() == acc.finalize().as_dict()
        back.update([1, 0], [0.5, 0.4])
        assert back.n == acc.n + 2


def corrupt(acc, **changes):
    state = {k: np.array(v, copy=True) for k, v in acc._state.items()}
    for k, v in changes.items():
        state[k] = v(state[k]) if callable(v) else v
    return state


def flip_first_two(a):
    a = a.copy()
    a[..., [0, 1]] = a[..., [1, 0]]
    return a


@pytest.mark.parametrize(
    "max_bins, changes, match",
    [
        (None, {"lo": flip_first_two}, "strictly increasing"),
        (None, {"counts": lambda c: c - 1000}, "negative"),
        (None, {"counts": lambda c: c + 1}, "add up"),
        (None, {"n": np.array([3], np.int64)}, "entries but only"),
        (None, {"weighted": np.array([2], np.int64)}, "'weighted' must be 0 or 1"),
        (None, {"weighted": np.array([1], np.int64)}, "shape"),
        (None, {"hi": np.zeros(3)}, "no bins"),
        (None, {"counts": lambda c: c[:, :-1]}, "shape"),
        (4, {"lo": flip_first_two, "hi": flip_first_two, "counts": flip_first_two, "pairs": flip_first_two}, "sorted"),
        (4, {"hi": lambda h: h - 100}, "upper edge"),
        (4, {"pairs": lambda p: p * 1e6 + 1}, "pair masses"),
        (4, {"pairs": lambda p: -p - 1}, "negative"),
        (4, {"hi": lambda h: h[:-1]}, "shapes"),
    ],
)
def test_corrupt_states_are_rejected(max_bins, changes, match):
    rng = np.random.default_rng(9)
    acc = RankAUC(max_bins=max_bins)
    for _ in range(4):
        acc.update(rng.integers(0, 2, 50), rng.normal(size=50))
    if max_bins:
        assert np.any(items(acc)[1] > items(acc)[0])  # binned
    with pytest.raises(ValueError, match=match):
        RankAUC._from_saved({"max_bins": max_bins}, corrupt(acc, **changes), "f")


def test_too_many_bins_for_max_bins_is_rejected():
    acc = RankAUC(max_bins=50)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        acc.update(rng.integers(0, 2, 200), rng.normal(size=200))
    with pytest.raises(ValueError, match="more than 2 \\* max_bins"):
        RankAUC._from_saved({"max_bins": 2}, corrupt(acc), "f")


# ----------------------------------------------------------- pending rows
@contextlib.contextmanager
def small_buffers(exact=64, ratio=1):
    """Shrink the exact mode's pending buffers so that small tests cross their bounds (bounded mode bins every
    batch as it comes)."""
    limits = [(Exact, "PENDING_MIN", exact), (Exact, "PENDING_RATIO", ratio)]
    saved = [(cls, k, getattr(cls, k)) for cls, k, _ in limits]
    for cls, k, v in limits:
        setattr(cls, k, v)
    try:
        yield
    finally:
        for cls, k, v in saved:
            setattr(cls, k, v)


def runs(acc):
    """Exact mode: the runs, longest first, after sorting the pending rows in
    (as a full buffer would: the runs stay log-structured)."""
    acc._flush()
    return acc._strategy.stack.runs


def items(acc):
    """Bounded mode: the bins (None if empty), after binning the pending rows in."""
    acc._flush()
    return acc._strategy.items


def held_arrays(acc):
    """What the state holds besides the pending rows: the runs, or the bins."""
    strategy = acc._strategy
    return list(strategy.stack.runs) if isinstance(strategy, Exact) else [strategy.items]


def pending_rows(acc):
    return 0 if acc._pending is None else acc._pending.rows


def pending_snapshot(acc):
    """The pending rows as they are held, without sorting them in."""
    buf = acc._pending
    if buf is None:
        return None
    parts = [buf.keys[: buf.front].copy(), buf.keys[buf.back :].copy()]
    if buf.vals is not None:
        parts += [buf.vals[: buf.front].copy(), buf.vals[buf.back :].copy()]
    return buf.front, buf.rows, buf.weighted, parts


def assert_same_pending(a, b):
    assert (a is None) == (b is None)
    if a is not None:
        assert a[:3] == b[:3]
        for x, z in zip(a[3], b[3]):
            np.testing.assert_array_equal(x, z)


# batch sizes around a buffer of 64 rows: straddling it, filling it exactly,
# one row past it, and several times larger than it
STRADDLING = [10, 30, 23, 1, 64, 65, 3, 200, 7, 63, 64, 128, 5]


def straddling_data(seed, ties):
    rng = np.random.default_rng(seed)
    n = sum(STRADDLING)
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n), 1) if ties else rng.normal(size=n)
    return y, s, np.cumsum(STRADDLING)[:-1]


@pytest.mark.parametrize("ties", [False, True])
def test_exact_batches_straddling_the_buffer_bound(ties):
    y, s, cuts = straddling_data(1, ties)
    one = RankAUC().update(y, s)
    with small_buffers():
        acc = RankAUC()
        seen = 0
        for lo, hi in zip([0, *cuts], [*cuts, len(y)]):
            acc.update(y[lo:hi], s[lo:hi])
            seen += hi - lo
            assert acc.n == seen
            assert pending_rows(acc) <= acc._strategy.pending_limit()
            assert sum(r[0].shape[0] for r in acc._strategy.stack.runs) + pending_rows(acc) >= len(np.unique(s[:seen]))
        assert acc._strategy.stack.runs, "the buffer never overflowed into a run"
        r = acc.finalize()
    assert r.as_dict() == one.finalize().as_dict()
    assert acc == one
    np.testing.assert_array_equal(acc.roc_curve()[2], one.roc_curve()[2])


def test_weighted_batches_straddling_the_buffer_bound():
    y, s, cuts = straddling_data(2, ties=True)
    w = np.random.default_rng(2).integers(0, 3, len(y)).astype(float)  # zero weights too
    one = RankAUC().update(y, s, sample_weight=w).finalize()
    with small_buffers():
        acc = fold_batches(RankAUC(), y, s, w, cuts)
        # and unweighted batches first, the weighted ones after
        half = int(cuts[5])
        mixed = fold_batches(RankAUC(), y[:half], s[:half], None, cuts)
        fold_batches(mixed, y[half:], s[half:], w[half:], [c - half for c in cuts if c > half])
        r = acc.finalize()
    assert r.auc == pytest.approx(one.auc, rel=1e-12) and r.n == one.n
    ref = RankAUC().update(y, s, sample_weight=np.concatenate((np.ones(half), w[half:]))).finalize()
    assert mixed.finalize().auc == pytest.approx(ref.auc, rel=1e-12)


@settings(max_examples=60)
@given(labelled(max_size=200, weights=False), st.sampled_from([1, 8, 64]))
def test_any_batching_across_small_buffers_is_exact(data, bound):
    y, s, _, cuts = data
    one = RankAUC().update(y, s)
    with small_buffers(exact=bound, ratio=1):
        got = fold_batches(RankAUC(), y, s, None, cuts)
        assert got.finalize().as_dict() == one.finalize().as_dict()
        assert got == one


@pytest.mark.parametrize("weighted", [False, True])
def test_bounded_batches_straddling_the_buffer_bound(weighted):
    y, s, cuts = straddling_data(3, ties=False)
    w = np.random.default_rng(3).random(len(y)) if weighted else None
    exact = auc(y, s, sample_weight=w)
    with small_buffers():  # 32 rows for max_bins <= 16
        acc = RankAUC(max_bins=6)
        for lo, hi in zip([0, *cuts], [*cuts, len(y)]):
            acc.update(y[lo:hi], s[lo:hi], sample_weight=None if w is None else w[lo:hi])
            assert pending_rows(acc) <= 32
            assert acc._strategy.items is None or acc._strategy.items[0].shape[0] <= 12
        r = acc.finalize()
    check_interval(r, exact, weighted)
    assert r.auc_upper > r.auc_lower  # binned


def test_bounded_stays_exact_while_the_points_fit():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 5000)
    s = rng.integers(0, 30, 5000) / 30  # 30 distinct scores, max_bins 20: 2 B = 40
    with small_buffers():
        acc = fold_batches(RankAUC(max_bins=20), y, s, None, range(0, 5000, 37))
        r = acc.finalize()
    assert r.auc_lower == r.auc == r.auc_upper == auc(y, s)
    assert items(acc)[0].shape[0] == 30


def test_one_bounded_batch_beyond_the_buffer_is_binned_exactly():
    # a single batch is grouped from its sorted rows: no group overlaps
    # another, so no pair is unknown however few the bins
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 50_000)
    s = rng.normal(size=y.size) + y
    acc = RankAUC(max_bins=10).update(y, s)
    assert acc._pending is None and acc._strategy.items[0].shape[0] <= 20
    r = acc.finalize()
    assert np.any(acc._strategy.items[1] > acc._strategy.items[0])
    assert r.auc_lower == r.auc == r.auc_upper == auc(y, s)


def test_bounded_huge_batch_takes_16_bytes_a_row():
    rng = np.random.default_rng(6)
    n = 1_000_000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    acc = RankAUC(max_bins=1000).update(y[:1000], s[:1000])
    tracemalloc.start()
    try:
        acc.update(y, s)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # its keys and the sort's scratch, not a 48-byte entry per row
    assert peak < 16 * n + 2_000_000, peak
    check_interval(acc.finalize(), auc(np.concatenate((y[:1000], y)), np.concatenate((s[:1000], s))), False)


@pytest.mark.parametrize("max_bins", [None, 5])
def test_pickle_save_and_copy_with_pending_rows(tmp_path, max_bins):
    rng = np.random.default_rng(7)
    y, s = rng.integers(0, 2, 300), rng.normal(size=300)
    with small_buffers():
        acc = RankAUC(max_bins=max_bins)
        for lo in range(0, 290, 29):
            acc.update(y[lo : lo + 29], s[lo : lo + 29])
        twin = RankAUC(max_bins=max_bins)
        for lo in range(0, 290, 29):
            twin.update(y[lo : lo + 29], s[lo : lo + 29])
        assert (pending_rows(acc) > 0) == (max_bins is None)  # bounded mode bins each batch as it comes
        before = acc.finalize()
        back = pickle.loads(pickle.dumps(acc))
        path = os.path.join(tmp_path, "pending")
        acc.save(path)
        loaded = RankAUC.load(path)
        cp = acc.copy()
        for other in (back, loaded, cp):
            assert other == acc and other == twin
            assert other.finalize().as_dict() == before.as_dict()
            assert other.n == 290
        # exporting sorted the rows in: all of them continue identically
        for other in (acc, back, loaded, cp, twin):
            other.update(y[290:], s[290:])
        for other in (back, loaded, cp, twin):
            assert other == acc and other.finalize().as_dict() == acc.finalize().as_dict()
    if max_bins is None:
        assert acc == RankAUC().update(y, s)


@pytest.mark.parametrize("max_bins", [None, 6])
def test_merging_accumulators_with_pending_rows(max_bins):
    rng = np.random.default_rng(8)
    y, s = rng.integers(0, 2, 400), np.round(rng.normal(size=400), 2)
    with small_buffers():
        a = fold_batches(RankAUC(max_bins=max_bins), y[:250], s[:250], None, range(0, 250, 40))
        b = fold_batches(RankAUC(max_bins=max_bins), y[250:], s[250:], None, range(0, 150, 40))
        assert (pending_rows(a) > 0 and pending_rows(b) > 0) == (max_bins is None)
        ra, rb = a.finalize(), b.finalize()
        c = a + b
        assert c.n == 400
        assert a.finalize().as_dict() == ra.as_dict() and b.finalize().as_dict() == rb.as_dict()
        a.merge(b)
        assert a == c
        r = a.finalize()
    check_interval(r, auc(y, s), False)
    if max_bins is None:
        assert a == RankAUC().update(y, s) and r.auc == auc(y, s)


@pytest.mark.parametrize("max_bins", [None, 4])
def test_rejected_batch_leaves_the_pending_rows_unchanged(max_bins):
    rng = np.random.default_rng(9)
    with small_buffers():
        acc = RankAUC(max_bins=max_bins)
        for _ in range(5):
            acc.update(rng.integers(0, 2, 25), rng.random(25))
        assert (pending_rows(acc) > 0) == (max_bins is None)
        held, n = held_arrays(acc), acc.n
        snap = pending_snapshot(acc)
        bad = [
            ((rng.integers(0, 2, 10), np.r_[rng.random(9), np.nan]), {}),  # fits the free slots
            ((rng.integers(0, 2, 60), np.r_[np.nan, rng.random(59)]), {}),  # needs the buffer grown
            ((np.r_[rng.integers(0, 2, 299), 7], rng.random(300)), {}),  # beyond the buffer bound
            ((rng.integers(0, 2, 10), np.r_[rng.random(9), np.inf]), {"sample_weight": np.ones(10)}),  # weighted
            ((rng.integers(0, 2, 3), rng.random(3)), {"sample_weight": [1.0, -1.0, 1.0]}),
        ]
        for args, kwargs in bad:
            with pytest.raises(ValueError):
                acc.update(*args, **kwargs)
            assert acc.n == n and not acc.weighted
            now = held_arrays(acc)
            assert len(now) == len(held) and all(x is z for x, z in zip(now, held))
            assert_same_pending(pending_snapshot(acc), snap)
        check_rejected_batch(acc, ([1, 0], [0.5, np.nan]), match=r"s\[1\] = nan")


@pytest.mark.parametrize("max_bins", [None, 4])
def test_finalize_and_curves_do_not_change_later_results(max_bins):
    rng = np.random.default_rng(10)
    y, s = rng.integers(0, 2, 600), rng.normal(size=600)
    with small_buffers():
        plain = fold_batches(RankAUC(max_bins=max_bins), y, s, None, range(0, 600, 45))
        watched = RankAUC(max_bins=max_bins)
        for lo in range(0, 600, 45):
            watched.update(y[lo : lo + 45], s[lo : lo + 45])
            if max_bins is not None:
                snap = pending_snapshot(watched)
            watched.finalize()
            watched.roc_curve()
            watched.average_precision()
            repr(watched)
            if max_bins is not None:  # bounded mode reads the pending rows, leaves them
                assert_same_pending(pending_snapshot(watched), snap)
        assert watched == plain
        assert watched.finalize().as_dict() == plain.finalize().as_dict()


def test_nbytes_counts_the_pending_rows():
    acc = RankAUC().update([1, 0, 1], [0.3, 0.2, 0.1])
    assert acc.nbytes >= 16 + 3 * 8
    acc.flush()  # sorted in: a run of 3 scores
    assert acc._pending is None and acc.nbytes == 16 + 3 * 24


@settings(max_examples=150)
@given(bounded_case(), st.integers(1, 16))
def test_bounded_interval_holds_across_many_small_flushes(case, bound):
    # tiny buffers: pending rows are binned into existing bins again and again
    y, s, w, cuts, max_bins, n_shards, tree = case
    exact = RankAUC().update(y, s, sample_weight=w).finalize().auc
    with small_buffers():
        parts = []
        for k in range(n_shards):
            idx = np.arange(k, len(y), n_shards)
            part = RankAUC(max_bins=max_bins)
            for i in idx:  # row by row as well as in the drawn batches
                part.update(y[i : i + 1], s[i : i + 1], sample_weight=None if w is None else w[i : i + 1])
                assert pending_rows(part) <= max(bound, max_bins)
            parts.append(part)
        merged = fold_batches(RankAUC(max_bins=max_bins), y, s, w, cuts)
        for part in parts:
            merged.merge(part)
        r = merged.finalize()
    assert merged.n == 2 * len(y)
    check_interval(r, exact, w is not None)
    RankAUC._from_saved({"max_bins": max_bins}, dict(merged._state), "check")
    for part, k in zip(parts, range(n_shards)):
        if part.n:
            idx = np.arange(k, len(y), n_shards)
            wk = None if w is None else w[idx]
            check_interval(part.finalize(), auc(y[idx], s[idx], sample_weight=wk), w is not None)


# ------------------------------------- counting across pending rows
def counted_pair(y, s, cut):
    """An accumulator holding ``[:cut]`` as a run and ``[cut:]`` as pending rows,
    and a copy of it with everything sorted into one run."""
    acc = RankAUC()
    if cut:
        acc.update(y[:cut], s[:cut])
        acc.flush()  # sorted in: a run
    if cut < len(y):
        acc.update(y[cut:], s[cut:])
    return acc


@settings(max_examples=150)
@given(labelled(max_size=200, weights=False), st.integers(0, 200))
def test_finalize_across_pending_rows_equals_finalize_after_a_flush(data, cut):
    y, s, _, _ = data
    cut = min(cut, len(y))
    acc = counted_pair(y, s, cut)
    assert (pending_rows(acc) > 0) == (cut < len(y))
    ref = counted_pair(y, s, cut)
    ref.flush()  # sorted in
    r = acc.finalize()
    assert r.as_dict() == ref.finalize().as_dict()
    assert r.auc == brute_auc(y, s)
    assert acc.finalize().as_dict() == r.as_dict()  # again, from the run the rows were sorted into
    assert acc == ref and pending_rows(acc) == 0


def test_updates_after_a_finalize_across_pending_rows():
    rng = np.random.default_rng(11)
    y, s = rng.integers(0, 2, 900), np.round(rng.normal(size=900), 2)  # ties across batches
    plain = fold_batches(RankAUC(), y, s, None, range(0, 900, 70))
    with small_buffers(exact=256):
        watched = RankAUC()
        for lo in range(0, 900, 70):
            watched.update(y[lo : lo + 70], s[lo : lo + 70])
            r = watched.finalize()
            assert r.auc == auc(y[: lo + 70], s[: lo + 70])
        assert watched._strategy.stack.runs, "no update ever turned sorted rows into a run"
        copied = watched.copy()
        merged = RankAUC().merge(watched)
    assert watched == plain == copied == merged
    assert watched.finalize().as_dict() == plain.finalize().as_dict()


def test_finalize_across_pending_rows_falls_back_past_int64():
    # a state of ~2e10 rows with pending rows: 2U no longer fits an int64
    counts = np.array([[3_000_000_000, 0, 5_000_000_000], [0, 4_000_000_000, 6_000_000_000]], np.int64)
    state = RankAUC().state_dict()
    state.update(n=np.array([int(counts.sum())], np.int64), lo=np.array([-1.0, 0.0, 0.5]), counts=counts)
    acc = RankAUC._from_saved({"max_bins": None}, state, "test").update([1, 0, 0], [0.5, 0.7, -2.0])
    p = np.array([0, 3_000_000_000, 0, 5_000_000_001, 0])  # at -2, -1, 0, 0.5, 0.7
    q = np.array([1, 0, 4_000_000_000, 6_000_000_000, 1])
    u2 = sum(int(p[i]) * (2 * int(q[:i].sum()) + int(q[i])) for i in range(5))
    r = acc.finalize()
    assert r.auc == u2 / (2 * int(p.sum()) * int(q.sum())) and r.n_pos == int(p.sum())


@pytest.mark.parametrize("scores", ["one value", "extremes"])
def test_the_sort_of_keys_alone_handles_ties_and_extremes(scores):
    """Every key equal, or the infinities, zeros, subnormals."""
    import streammetrics.metrics.ranking.sorting as A

    rng = np.random.default_rng(1)
    if scores == "one value":
        x = np.full(5000, 0.25)
    else:
        x = rng.choice([-np.inf, np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.0, -1e308], 5000)
    keys = KK.score_keys(x)
    k = keys.copy()
    A.sort_classes(k, 1200, 1200)
    np.testing.assert_array_equal(k[:1200], np.sort(keys[:1200]))
    np.testing.assert_array_equal(k[1200:], np.sort(keys[1200:]))


@pytest.mark.parametrize("n_pos, n_neg", [(0, 0), (1, 0), (0, 1), (1, 1), (191, 300), (3000, 7000)])
@pytest.mark.parametrize("weighted", [False, True])
def test_sorted_classes_and_their_scratch(n_pos, n_neg, weighted):
    import streammetrics.metrics.ranking.sorting as A

    rng = np.random.default_rng(n_pos + n_neg)
    n = n_pos + n_neg + 10
    keys = KK.score_keys(np.round(rng.normal(size=n), 2))
    vals = rng.random(n) if weighted else None
    back = n - n_neg
    k = keys.copy()
    v = None if vals is None else vals.copy()
    tk, tv = A.sort_classes(k, n_pos, back, v)
    assert tk.shape[0] >= max(n_pos, n_neg)  # the scratch comes back, free for the prefix sums
    assert (tv is None) != weighted and (tv is None or tv.shape[0] >= max(n_pos, n_neg))
    np.testing.assert_array_equal(k[n_pos:back], keys[n_pos:back])  # the free slots
    np.testing.assert_array_equal(k[:n_pos], np.sort(keys[:n_pos]))
    np.testing.assert_array_equal(k[back:], np.sort(keys[back:]))


@settings(max_examples=100)
@given(labelled(max_size=200, weights=False), st.integers(0, 200))
def test_the_run_of_a_run_and_sorted_keys_counts_every_pair(data, cut):
    import streammetrics.metrics.ranking.sorting as A

    y, s, _, _ = data
    cut = min(cut, len(y))
    run = RankAUC().update(y[:cut], s[:cut]).flush()._strategy.run()
    ys, ss = np.asarray(y[cut:]), np.ascontiguousarray(s[cut:], np.float64)
    keys = np.empty(ys.shape[0], np.uint64)
    _, n_pos, _ = KK.append_split(ys, ss.view(np.uint64), None, keys, None, 0, ys.shape[0])
    A.sort_classes(keys, n_pos, n_pos)
    got = A.run_of_sorted(keys[:n_pos], keys[n_pos:], run=run)
    assert u2_counts(got[1], *got[1].sum(axis=1).tolist()) == int(brute_u2(y, s)[0])
    # a signed zero in a loaded run ties with the keys' +0.0
    lo = np.where(run[0] == 0.0, -0.0, run[0])
    np.testing.assert_array_equal(A.run_of_sorted(keys[:n_pos], keys[n_pos:], run=(lo, run[1]))[1], got[1])


def test_small_buffers_give_identical_states():
    rng = np.random.default_rng(13)
    y, s = rng.integers(0, 2, 5000), np.round(rng.normal(size=5000), 3)
    cuts = range(0, 5000, 300)
    serial = fold_batches(RankAUC(), y, s, None, cuts)
    with small_buffers(exact=1000, ratio=2):
        acc = RankAUC()
        for lo in cuts:
            acc.update(y[lo : lo + 300], s[lo : lo + 300])
            assert pending_rows(acc) <= acc._strategy.pending_limit()
        r = acc.finalize()
        w = RankAUC().update(y, s, sample_weight=np.ones(5000))
    assert acc._strategy.stack.runs, "the buffer never overflowed into a run"
    assert r.as_dict() == serial.finalize().as_dict()
    assert acc == serial
    assert w.finalize().auc == pytest.approx(r.auc, rel=1e-12)
    assert auc(y, s) == r.auc


@pytest.mark.parametrize("max_bins", [None, 8])
def test_flush_moves_rows_into_the_state_and_changes_no_result(max_bins):
    rng = np.random.default_rng(21)
    with small_buffers():
        acc = RankAUC(max_bins=max_bins)
        for _ in range(40):
            acc.update(rng.integers(0, 2, 30), np.round(rng.random(30), 3))
        assert (pending_rows(acc) > 0) == (max_bins is None)
        before, state = acc.finalize().as_dict(), acc.state_dict()
        assert acc.flush() is acc and acc._pending is None
        if max_bins is None:
            assert len(acc._strategy.stack.runs) == 1  # one merged run, as when loaded
        assert acc.finalize().as_dict() == before
        after = acc.state_dict()
        assert all(np.array_equal(after[k], state[k]) for k in state)


# ------------------------------------------------- bounded states round-tripped, and their size
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("trip", ["pickle", "state_dict", "copy"])
def test_a_bounded_state_round_tripped_then_updated_equals_one_never_round_tripped(trip, weighted):
    rng = np.random.default_rng(3)
    y, s = rng.integers(0, 2, 6000), rng.normal(size=6000)
    w = rng.random(6000) + 0.5 if weighted else None
    ref, acc = RankAUC(max_bins=20), RankAUC(max_bins=20)
    for a in range(0, 6000, 500):
        part = (y[a : a + 500], s[a : a + 500])
        kw = {"sample_weight": None if w is None else w[a : a + 500]}
        ref.update(*part, **kw)
        acc.update(*part, **kw)
        if trip == "pickle":
            acc = pickle.loads(pickle.dumps(acc))
        elif trip == "state_dict":
            acc = RankAUC(max_bins=20).load_state_dict(acc.state_dict())
        else:
            acc = acc.copy()
    assert acc.finalize().as_dict() == ref.finalize().as_dict()


def test_a_bounded_state_stays_within_a_constant_of_max_bins():
    rng = np.random.default_rng(0)
    n = 1_000_000
    s, y = rng.permutation(n) / n, rng.integers(0, 2, n)  # every score distinct
    acc = RankAUC(max_bins=1000)
    for a in range(0, n, 1000):
        acc.update(y[a : a + 1000], s[a : a + 1000])
    assert acc.nbytes <= 100_000
    assert sum(v.nbytes for v in acc.state_dict().values()) <= 100_000


# ------------------------------------------------------------ hostile queries and states
def test_best_threshold_is_invariant_to_scaling_the_costs():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 5000)
    acc = RankAUC().update(y, rng.normal(size=5000) + y)
    cost = np.array([[0.0, 1.0], [5.0, 0.0]])
    ref = acc.best_threshold(cost=cost)
    for k in (1e-300, 3.0, 1e305, 2.0**1000):
        got = acc.best_threshold(cost=cost * k)
        assert got.threshold == ref.threshold and (got.tp, got.fp) == (ref.tp, ref.fp)
        assert got.cost == pytest.approx(ref.cost * k, rel=1e-12) or not np.isfinite(ref.cost * k)


def test_a_forged_state_with_subnormal_weights_is_refused():
    st = RankAUC().update([0, 1, 1, 0], [0.1, 0.4, 0.35, 0.8], sample_weight=[1, 1, 1, 1]).state_dict()
    st["weights"] = np.array([[0, 5e-324, 5e-324, 0], [5e-324, 0, 0, 5e-324]])
    with pytest.raises(ValueError, match="subnormal"):
        RankAUC().load_state_dict(st)


@given(labelled(max_size=200, weights=False))
def test_the_one_shot_merge_of_the_sorted_classes_counts_every_pair(data):
    """``auc`` counts 2U by one merge of the sorted positives and negatives (no run of distinct scores); a signed
    zero ties with +0.0 as in the runs."""
    y, s, _, _ = data
    s = np.where(s == 0.0, -0.0, s) if len(s) % 2 else s
    keys = np.empty(y.shape[0], np.uint64)
    _, n_pos, back = KK.append_split(
        y, np.ascontiguousarray(s, np.float64).view(np.uint64), None, keys, None, 0, y.shape[0]
    )
    sort_keys(keys[:n_pos], np.empty(n_pos, np.uint64), None, None)
    sort_keys(keys[back:], np.empty(y.shape[0] - back, np.uint64), None, None)
    u2, n_p, n_n = brute_u2(y, s)
    assert int(pairs.u2_sorted(keys[:n_pos], keys[back:])) == u2
    assert auc(y, s) == RankAUC().update(y, s).finalize().auc == u2 / (2 * max(n_p * n_n, 1))
