"""MulticlassRankAUC and multiclass_auc: scikit-learn agreement (one-vs-rest
with weights, one-vs-one, per-class average precision and curves), batching,
sharding and merge-order invariance, the guard for absent classes, and
rejected input."""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import MulticlassRankAUC, multiclass_auc
from tests.harness import state_snapshot

TOL = 1e-12


def tied_probabilities(rng, n, k, levels=4):
    """Rows of small integer counts, normalised: probabilities with many ties."""
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)  # every class present, as scikit-learn needs
    counts = rng.integers(0, levels, (n, k)) + 2 * np.eye(k, dtype=np.int64)[y] * (rng.random((n, 1)) < 0.5)
    counts[counts.sum(axis=1) == 0, 0] = 1
    return y, counts / counts.sum(axis=1, keepdims=True)


def fold_batches(acc, y, P, w, rng):
    cuts = np.sort(rng.integers(0, len(y) + 1, 4))
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(y)]):
        acc.update(y[lo:hi], P[lo:hi], sample_weight=None if w is None else w[lo:hi])
    return acc


def hand_till_weighted(y, P, w, k, average):
    """Hand & Till's pair average with weighted binary AUCs (scikit-learn's
    one-vs-one takes no weights, so it is built here from its binary AUC)."""
    scores, prevalence = [], []
    for a in range(k):
        for b in range(a + 1, k):
            m = (y == a) | (y == b)
            s_a = skm.roc_auc_score(y[m] == a, P[m, a], sample_weight=w[m])
            s_b = skm.roc_auc_score(y[m] == b, P[m, b], sample_weight=w[m])
            scores.append((s_a + s_b) / 2)
            prevalence.append(w[m].sum())
    return np.average(scores, weights=prevalence if average == "weighted" else None)


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(8, 400))
    k = draw(st.integers(3, 6))
    levels = draw(st.sampled_from([2, 4, 50]))
    weighted = draw(st.booleans())
    rng = np.random.default_rng(seed)
    y, P = tied_probabilities(rng, n, k, levels)
    w = None
    if weighted:
        w = rng.random(n) * 3
        w[rng.random(n) < 0.1] = 0.0  # zero weights are dropped, as scikit-learn drops them
        w[:k] = 1.0
    return y, P, w, k, seed


# ---------------------------------------------------------------- references
@settings(max_examples=60, deadline=None)
@given(problems())
def test_agrees_with_sklearn(problem):
    y, P, w, k, seed = problem
    one = multiclass_auc(y, P, sample_weight=w)
    acc = fold_batches(MulticlassRankAUC(k), y, P, w, np.random.default_rng(seed)).finalize()
    for r in (one, acc):
        for avg in ("macro", "weighted"):
            want = skm.roc_auc_score(y, P, multi_class="ovr", average=avg, sample_weight=w)
            assert abs(r[f"ovr_{avg}_auc"] - want) <= TOL
            if w is None:
                want = skm.roc_auc_score(y, P, multi_class="ovo", average=avg)
            else:
                want = hand_till_weighted(y, P, w, k, avg)
            assert abs(r[f"ovo_{avg}_auc"] - want) <= TOL
        for c in range(k):
            want = skm.roc_auc_score(y == c, P[:, c], sample_weight=w)
            assert abs(r.per_class_auc[c] - want) <= TOL
            want = skm.average_precision_score(y == c, P[:, c], sample_weight=w)
            assert abs(r.per_class_average_precision[c] - want) <= TOL
    for name in one:
        np.testing.assert_allclose(one[name], acc[name], rtol=TOL, atol=TOL, err_msg=name)


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_auc_is_the_chosen_average(multi_class, average):
    rng = np.random.default_rng(3)
    y, P = tied_probabilities(rng, 500, 4)
    r = multiclass_auc(y, P, multi_class=multi_class, average=average)
    assert r.auc == r[f"{multi_class}_{average}_auc"] == r[f"{average}_auc"]
    assert abs(r.auc - skm.roc_auc_score(y, P, multi_class=multi_class, average=average)) <= TOL
    acc = MulticlassRankAUC(4, multi_class=multi_class, average=average).update(y, P)
    assert acc.finalize().auc == r.auc


def test_large_batches_agree_with_sklearn():
    rng = np.random.default_rng(5)
    n, k = 70_000, 5
    y = rng.integers(0, k, n)
    P = np.round(rng.dirichlet(np.ones(k), n), 3)
    P /= P.sum(axis=1, keepdims=True)
    r = multiclass_auc(y, P)
    acc = MulticlassRankAUC(k).update(y[:40_000], P[:40_000]).update(y[40_000:], P[40_000:]).finalize()
    for avg in ("macro", "weighted"):
        assert abs(r[f"ovr_{avg}_auc"] - skm.roc_auc_score(y, P, multi_class="ovr", average=avg)) <= TOL
        assert abs(r[f"ovo_{avg}_auc"] - skm.roc_auc_score(y, P, multi_class="ovo", average=avg)) <= TOL
    np.testing.assert_array_equal(r.per_class_auc, acc.per_class_auc)
    np.testing.assert_allclose(r.per_class_average_precision, acc.per_class_average_precision, rtol=TOL)
    w = rng.random(n)
    rw = multiclass_auc(y, P, sample_weight=w)
    want = skm.roc_auc_score(y, P, multi_class="ovr", sample_weight=w)
    assert abs(rw.auc - want) <= TOL


def test_scores_need_not_be_probabilities():
    # only each column's order counts: logits, and any increasing map of a column
    rng = np.random.default_rng(7)
    y, P = tied_probabilities(rng, 300, 3)
    logits = np.log(P + 1e-3) * 4 - 7
    logits[:, 1] = np.exp(logits[:, 1])
    a, b = multiclass_auc(y, P), multiclass_auc(y, logits)
    np.testing.assert_array_equal(a.per_class_auc, b.per_class_auc)
    assert a.ovo_macro_auc == b.ovo_macro_auc


def test_curves_match_sklearn():
    rng = np.random.default_rng(11)
    y, P = tied_probabilities(rng, 200, 4)
    w = rng.random(200)
    acc = MulticlassRankAUC(4).update(y, P, sample_weight=w)
    r = acc.finalize()
    for c in range(4):
        fpr, tpr, th = acc.roc_curve(c)
        f2, t2, th2 = skm.roc_curve(y == c, P[:, c], sample_weight=w, drop_intermediate=False)
        np.testing.assert_allclose(fpr, f2, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(tpr, t2, rtol=TOL, atol=TOL)
        np.testing.assert_array_equal(th[1:], th2[1:])
        prec, rec, pth = acc.pr_curve(c)
        p2, r2, pth2 = skm.precision_recall_curve(y == c, P[:, c], sample_weight=w)
        np.testing.assert_allclose(prec, p2, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(rec, r2, rtol=TOL, atol=TOL)
        np.testing.assert_array_equal(pth, pth2)
        assert abs(acc.average_precision(c) - r.per_class_average_precision[c]) <= TOL


def test_labels_name_the_classes():
    rng = np.random.default_rng(13)
    y, P = tied_probabilities(rng, 120, 3)
    names = np.array(["cat", "dog", "bird"], dtype=object)
    a = MulticlassRankAUC(labels=["cat", "dog", "bird"]).update(names[y], P)
    b = MulticlassRankAUC(3).update(y, P)
    np.testing.assert_array_equal(a.finalize().per_class_auc, b.finalize().per_class_auc)
    np.testing.assert_array_equal(a.roc_curve("dog")[1], b.roc_curve(1)[1])
    with pytest.raises(ValueError, match="'emu' is not one of the labels"):
        a.roc_curve("emu")


# ------------------------------------------------------------------- guards
def test_an_absent_class_scores_zero():
    # the specification's guard: scikit-learn raises (or warns and gives NaN) here
    y = np.array([0, 1, 0, 1, 0, 1])
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.8, 0.1, 0.1], [0.1, 0.8, 0.1]])
    r = multiclass_auc(y, P)
    assert r.per_class_auc[2] == 0.0
    assert r.pair_auc[0, 2] == r.pair_auc[2, 0] == 0.0
    ovr = [skm.roc_auc_score(y == c, P[:, c]) for c in (0, 1)]
    np.testing.assert_allclose(r.per_class_auc[:2], ovr, rtol=TOL)
    assert abs(r.ovr_macro_auc - sum(ovr) / 3) <= TOL  # the zero enters the macro average
    assert abs(r.ovr_weighted_auc - (3 * ovr[0] + 3 * ovr[1]) / 6) <= TOL  # weight 0
    pair01 = (r.pair_auc[0, 1] + r.pair_auc[1, 0]) / 2
    assert abs(r.ovo_macro_auc - pair01 / 3) <= TOL
    assert abs(r.ovo_weighted_auc - 6 * pair01 / (6 + 3 + 3)) <= TOL
    assert list(r.support) == [3, 3, 0]


def test_one_class_gives_zero():
    r = multiclass_auc([0, 0, 0], [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    assert r.auc == 0.0 and r.ovo_macro_auc == 0.0
    assert MulticlassRankAUC(1).update([0, 0], [[0.3], [0.1]]).finalize().auc == 0.0


# ----------------------------------------------------------- invariance
def test_any_batching_sharding_and_merge_order_gives_the_same_state():
    rng = np.random.default_rng(17)
    y, P = tied_probabilities(rng, 600, 4)
    whole = MulticlassRankAUC(4).update(y, P)
    orders = []
    for seed in range(4):
        r = np.random.default_rng(seed)
        cuts = np.sort(r.choice(np.arange(1, 600), 7, replace=False))
        shards = [MulticlassRankAUC(4).update(y[lo:hi], P[lo:hi]) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, 600])]
        r.shuffle(shards)
        acc = shards[0]
        for s in shards[1:]:
            acc = acc + s if seed % 2 else acc.merge(s)
        orders.append(acc)
    for acc in orders:
        assert acc == whole
        a, b = acc.state_dict(), whole.state_dict()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
        assert acc.finalize().as_dict().keys() == whole.finalize().as_dict().keys()
        np.testing.assert_array_equal(acc.finalize().per_class_auc, whole.finalize().per_class_auc)


def test_weighted_merges_agree_to_1e12():
    rng = np.random.default_rng(19)
    y, P = tied_probabilities(rng, 500, 3)
    w = rng.random(500)
    whole = MulticlassRankAUC(3).update(y, P, sample_weight=w).finalize()
    a = MulticlassRankAUC(3).update(y[:100], P[:100])  # unweighted first: counts become weights of 1
    a.merge(MulticlassRankAUC(3).update(y[300:], P[300:], sample_weight=w[300:]))
    a.update(y[100:300], P[100:300], sample_weight=w[100:300])
    ref = np.r_[np.ones(100), w[100:]]
    want = multiclass_auc(y, P, sample_weight=ref)
    got = a.finalize()
    for name in ("per_class_auc", "ovo_macro_auc", "per_class_average_precision", "support"):
        np.testing.assert_allclose(got[name], want[name], rtol=TOL, err_msg=name)
    assert whole.weighted and got.weighted


def test_finalize_never_changes_the_state():
    rng = np.random.default_rng(23)
    y, P = tied_probabilities(rng, 200, 3)
    acc = MulticlassRankAUC(3).update(y[:50], P[:50]).update(y[50:], P[50:])
    before = state_snapshot(acc)
    acc.finalize()
    acc.roc_curve(0)
    after = state_snapshot(acc)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_state_file_round_trip_and_corruption():
    rng = np.random.default_rng(29)
    y, P = tied_probabilities(rng, 100, 3)
    acc = MulticlassRankAUC(3, multi_class="ovo").update(y, P)
    path = os.path.join(tempfile.mkdtemp(), "auc.smstate")
    acc.save(path)
    back = MulticlassRankAUC.load(path)
    assert back == acc and back.settings == acc.settings
    state = acc.state_dict()
    bad = dict(state, lengths=state["lengths"] + np.eye(3, dtype=np.int64))
    with pytest.raises(ValueError, match="block lengths add up"):
        MulticlassRankAUC(3).load_state_dict(bad)
    bad = dict(state, scores=state["scores"][::-1].copy())
    with pytest.raises(ValueError, match="not strictly increasing"):
        MulticlassRankAUC(3).load_state_dict(bad)
    counts = state["counts"].copy()
    counts[0] += 1
    with pytest.raises(ValueError, match="observation count|disagree"):
        MulticlassRankAUC(3).load_state_dict(dict(state, counts=counts))


# ------------------------------------------------------------------ errors
def test_bad_input_names_argument_and_position():
    acc = MulticlassRankAUC(3).update([0, 1], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    before = state_snapshot(acc)
    with pytest.raises(ValueError, match=r"P\[2, 1\] = nan: scores must be finite"):
        acc.update([0, 1, 2], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.1, np.nan, 0.1]])
    with pytest.raises(ValueError, match=r"y\[1\] = 5: classes must be integers in 0..2"):
        acc.update([0, 5], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match="P has 2 columns but n_classes is 3"):
        acc.update([0, 1], [[0.5, 0.5], [0.1, 0.9]])
    with pytest.raises(ValueError, match="different lengths"):
        acc.update([0, 1, 2], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    with pytest.raises(ValueError, match=r"sample_weight\[0\]"):
        acc.update([0], [[0.5, 0.3, 0.2]], sample_weight=[-1.0])
    with pytest.raises(TypeError, match="labels="):
        acc.update(["a", "b"], [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    after = state_snapshot(acc)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
    assert acc.n == 2


def test_bad_settings():
    with pytest.raises(ValueError, match="multi_class must be one of 'ovr', 'ovo'"):
        MulticlassRankAUC(3, multi_class="ovo ")
    with pytest.raises(ValueError, match="average must be one of 'macro', 'weighted'"):
        MulticlassRankAUC(3, average="micro")
    with pytest.raises(TypeError, match="n_classes"):
        MulticlassRankAUC()
    with pytest.raises(ValueError, match="different settings"):
        MulticlassRankAUC(3).merge(MulticlassRankAUC(3, average="weighted"))
    with pytest.raises(ValueError, match="no observations"):
        MulticlassRankAUC(3).finalize()
    with pytest.raises(ValueError, match="empty"):
        multiclass_auc(np.zeros(0, int), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="class must be in 0..2"):
        MulticlassRankAUC(3).update([0], [[1.0, 0, 0]]).roc_curve(3)


def test_sklearn_refuses_what_the_guard_scores():
    # documents the difference: scikit-learn cannot score an absent class
    y = np.array([0, 1, 0, 1])
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError):
            skm.roc_auc_score(y, P, multi_class="ovr")
    assert multiclass_auc(y, P).per_class_auc[2] == 0.0


def test_prepared_probabilities_feed_the_rank_auc():
    # a batch checked as class probabilities serves a consumer of class scores
    rng = np.random.default_rng(31)
    y, P = tied_probabilities(rng, 100, 3)
    batch = sm.ClassProbabilityScores(3).prepare(y, P)
    a = MulticlassRankAUC(3).fold(batch)
    assert a == MulticlassRankAUC(3).update(y, P)


def test_a_score_vector_is_a_shape_error():
    with pytest.raises(ValueError, match="P must be an n x K matrix of class scores, got shape"):
        multiclass_auc([0, 1], [0.5, 0.5])


def test_weights_that_sum_to_zero_are_refused():
    P = [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]]
    with pytest.raises(ValueError, match="sum to zero"):
        multiclass_auc([0, 1], P, sample_weight=[0.0, 0.0])
    acc = MulticlassRankAUC(3).update([0, 1], P, sample_weight=[0.0, 0.0])
    with pytest.raises(ValueError, match="sum to zero"):
        acc.finalize()
    assert acc.n == 2


@pytest.mark.parametrize("weights_from", [None, 0, 5])
def test_pending_rows_sorted_in_at_any_point_give_the_same_state(weights_from):
    # a tiny pending buffer: rows are sorted in, large batches bypass it,
    # and weights may start in the middle of the stream
    rng = np.random.default_rng(37)
    y, P = tied_probabilities(rng, 900, 4)
    w = rng.random(900)
    sizes = [3, 40, 1, 7, 120, 2, 60, 11, 300]
    acc = MulticlassRankAUC(4)
    acc._PENDING_MIN = 16
    lo = 0
    weights = np.ones(900)
    for i, s in enumerate(sizes + [900]):
        hi = min(lo + s, 900)
        use = weights_from is not None and i >= weights_from
        if use:
            weights[lo:hi] = w[lo:hi]
        acc.update(y[lo:hi], P[lo:hi], sample_weight=w[lo:hi] if use else None)
        lo = hi
    ref = MulticlassRankAUC(4).update(y, P, sample_weight=None if weights_from is None else weights)
    if weights_from is None:
        assert acc == ref
    got, want = acc.finalize(), ref.finalize()
    for name in ("per_class_auc", "pair_auc", "per_class_average_precision", "support"):
        np.testing.assert_allclose(got[name], want[name], rtol=TOL, atol=TOL, err_msg=name)
    copy = acc.copy()
    acc.flush()
    assert acc == copy and acc._pending is None and len(acc._stack) == 1


@pytest.mark.parametrize("k", [3, 12])
def test_numpy_and_radix_sorts_of_the_class_blocks_agree(k, monkeypatch):
    """A small batch's class blocks are sorted by numpy, a large one's by the
    radix kernel: the same state and scores either way, and scikit-learn's."""
    from streammetrics.metrics import multiclass_runs

    rng = np.random.default_rng(41)
    y, P = tied_probabilities(rng, 500, k)
    results = {}
    for few in (0, 100):  # every batch sorted by the radix kernel, then by numpy
        monkeypatch.setattr(multiclass_runs, "NUMPY_MAX", few)
        acc = MulticlassRankAUC(k)
        for lo in range(0, 500, 125):
            acc.update(y[lo : lo + 125], P[lo : lo + 125])
        results[few] = (acc, acc.finalize(), multiclass_auc(y, P, multi_class="ovo"))
    (a, ra, oa), (b, rb, ob) = results[0], results[100]
    assert a == b
    for name in ("per_class_auc", "pair_auc", "per_class_average_precision", "support"):
        np.testing.assert_array_equal(ra[name], rb[name], err_msg=name)
    assert oa.auc == ob.auc
    assert ra.macro_auc == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovr"), abs=TOL)
    assert oa.auc == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovo"), abs=TOL)
