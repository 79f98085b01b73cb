"""MultilabelConfusion and MultilabelRankAUC: scikit-learn agreement (with
weights), invariance under batching, sharding and merge order, rejected
batches, settings and loaded states."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import MultilabelConfusion, MultilabelRankAUC
from tests.harness import check_accumulator, check_rejected_batch

RTOL = 1e-10


def sk_reference(Y, P, w=None) -> dict:
    """Every MultilabelConfusion field, computed by scikit-learn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mcm = skm.multilabel_confusion_matrix(Y, P, sample_weight=w)
        ref = {
            "tn": mcm[:, 0, 0],
            "fp": mcm[:, 0, 1],
            "fn": mcm[:, 1, 0],
            "tp": mcm[:, 1, 1],
            "subset_accuracy": skm.accuracy_score(Y, P, sample_weight=w),
            "hamming_loss": skm.hamming_loss(Y, P, sample_weight=w),
            "samples_jaccard": skm.jaccard_score(Y, P, average="samples", sample_weight=w, zero_division=0),
        }
        for average in (None, "micro", "macro", "weighted", "samples"):
            p, r, f, s = skm.precision_recall_fscore_support(Y, P, average=average, sample_weight=w, zero_division=0)
            prefix = "" if average is None else f"{average}_"
            ref[prefix + "precision"], ref[prefix + "recall"], ref[prefix + "f1"] = p, r, f
            if average is None:
                ref["support"] = s
    return ref


def sk_auc(Y, S, w=None) -> dict:
    ref = {"auc": skm.roc_auc_score(Y, S, average=None, sample_weight=w)}
    for average in ("macro", "weighted", "micro"):
        ref[f"{average}_auc"] = skm.roc_auc_score(Y, S, average=average, sample_weight=w)
    return ref


def assert_close(result, ref: dict, rtol=RTOL, atol=1e-12):
    for key, want in ref.items():
        np.testing.assert_allclose(getattr(result, key), want, rtol=rtol, atol=atol, err_msg=key)


def _cuts(data, n):
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    return list(zip([0] + cuts, cuts + [n]))


# ------------------------------------------------------------ agreement
@settings(max_examples=60, deadline=None)
# k >= 2: scikit-learn reads an n x 1 indicator matrix as binary labels
@given(k=st.integers(2, 5), data=st.data(), weighted=st.booleans(), scored=st.booleans())
def test_confusion_matches_sklearn(k, data, weighted, scored):
    n = data.draw(st.integers(1, 40))
    Y = np.array(
        data.draw(st.lists(st.lists(st.integers(0, 1), min_size=k, max_size=k), min_size=n, max_size=n)), np.int64
    ).reshape(n, k)
    S = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=n * k, max_size=n * k))
    ).reshape(n, k)
    P = (S >= 0.5).astype(np.int64)
    w = None
    if weighted:
        w = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]), min_size=n, max_size=n)))
        if w.sum() == 0:
            w[0] = 1.0
    acc = MultilabelConfusion(k, threshold=0.5 if scored else None)
    for lo, hi in _cuts(data, n):
        acc.update(Y[lo:hi], (S if scored else P)[lo:hi], sample_weight=None if w is None else w[lo:hi])
    r = acc.finalize()
    assert_close(r, sk_reference(Y, P, w))
    assert r.n == n
    assert r.tp.dtype == (np.float64 if weighted else np.int64)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(2, 4), data=st.data(), weighted=st.booleans())
def test_auc_matches_sklearn(k, data, weighted):
    n = data.draw(st.integers(2, 40))
    Y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n * k, max_size=n * k))).reshape(n, k)
    Y[0], Y[1] = 1, 0  # every label has both classes: scikit-learn refuses it otherwise
    S = np.array(
        data.draw(st.lists(st.sampled_from([-1.0, 0.0, 0.3, 0.5, 2.0]), min_size=n * k, max_size=n * k))
    ).reshape(n, k)
    w = None
    if weighted:
        w = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 3.0]), min_size=n, max_size=n)))
    acc = MultilabelRankAUC(k)
    for lo, hi in _cuts(data, n):
        acc.update(Y[lo:hi], S[lo:hi], sample_weight=None if w is None else w[lo:hi])
    r = acc.finalize()
    assert_close(r, sk_auc(Y, S, w))
    np.testing.assert_allclose(r.n_pos, (Y * (1 if w is None else w[:, None])).sum(axis=0))


def test_auc_of_a_one_class_label_is_guarded_to_zero():
    Y = np.array([[1, 0], [1, 1], [1, 0]])
    S = np.array([[0.2, 0.1], [0.4, 0.9], [0.1, 0.3]])
    r = MultilabelRankAUC(2).update(Y, S).finalize()
    assert r.auc[0] == 0.0  # scikit-learn: ValueError, only one class present
    assert r.auc[1] == skm.roc_auc_score(Y[:, 1], S[:, 1])
    assert r.macro_auc == r.auc.mean()
    assert r.weighted_auc == pytest.approx((3 * 0.0 + 1 * 1.0) / 4)


def test_degenerate_rows_and_labels_are_guarded():
    # a row with no true and no predicted label, a label never true nor predicted
    Y = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]])
    P = np.array([[0, 0, 0], [0, 0, 0], [1, 1, 0]])
    r = MultilabelConfusion(3).update(Y, P).finalize()
    for key, v in r.items():
        assert not np.any(np.isnan(np.asarray(v, float))), key
    assert r.precision[2] == r.recall[2] == r.f1[2] == 0.0
    assert r.samples_precision == pytest.approx(1 / 3)  # rows 0 and 1 predict nothing: 0
    assert r.samples_recall == pytest.approx(1 / 3)  # row 0 has nothing true: 0
    assert_close(r, sk_reference(Y, P))
    assert r.macro_f1 == pytest.approx(r.f1.mean())  # over all three labels


def test_all_zero_weights_is_an_error():
    acc = MultilabelConfusion(2).update([[1, 0]], [[1, 1]], sample_weight=[0.0])
    with pytest.raises(ValueError, match="sum to zero"):
        acc.finalize()


def test_unweighted_rows_count_one_beside_weighted_ones():
    Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    P = np.array([[1, 1], [0, 1], [0, 1], [0, 0]])
    w = np.array([1.0, 1.0, 2.5, 0.5])
    acc = MultilabelConfusion(2).update(Y[:2], P[:2]).update(Y[2:], P[2:], sample_weight=w[2:])
    assert_close(acc.finalize(), sk_reference(Y, P, w))


# ---------------------------------------------------------- the protocol
def _batches(rng, k, n_batches=6, weighted=False, scored=False):
    out = []
    for i in range(n_batches):
        n = int(rng.integers(0 if i == 2 else 1, 30))
        Y = (rng.random((n, k)) < 0.4).astype(np.int64)
        S = np.round(np.clip(0.5 * Y + 0.5 * rng.random((n, k)), 0, 1), 1)
        P = S if scored else (S >= 0.5).astype(np.int64)
        if weighted and i % 2 == 0:
            out.append({"args": (Y, P), "sample_weight": rng.random(n) * 3})
        else:
            out.append((Y, P))
    return out


def _concat(batches, k):
    Ys, Ps, ws = [], [], []
    for b in batches:
        (Y, P), w = (b["args"], b["sample_weight"]) if isinstance(b, dict) else (b, None)
        Ys.append(np.asarray(Y).reshape(-1, k))
        Ps.append(np.asarray(P).reshape(-1, k))
        ws.append(np.ones(len(Y)) if w is None else np.asarray(w, float))
    return np.concatenate(Ys), np.concatenate(Ps), np.concatenate(ws)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scored", [False, True])
def test_confusion_protocol(weighted, scored):
    rng = np.random.default_rng(10 + 2 * weighted + scored)
    k = 4
    batches = _batches(rng, k, weighted=weighted, scored=scored)
    Y, P, w = _concat(batches, k)
    r = check_accumulator(
        lambda: MultilabelConfusion(k, threshold=0.5 if scored else None), batches, expected_rtol=1e-12
    )
    assert_close(r, sk_reference(Y, (P >= 0.5).astype(int), w if weighted else None))


@pytest.mark.parametrize("weighted", [False, True])
def test_auc_protocol(weighted):
    rng = np.random.default_rng(20 + weighted)
    k = 3
    batches = _batches(rng, k, weighted=weighted, scored=True)
    Y, S, w = _concat(batches, k)
    r = check_accumulator(lambda: MultilabelRankAUC(k), batches, expected_rtol=1e-12)
    assert_close(r, sk_auc(Y, S, w if weighted else None))


def test_sharded_in_any_order_agrees():
    rng = np.random.default_rng(4)
    Y = (rng.random((3000, 5)) < 0.3).astype(np.int8)
    S = rng.random((3000, 5))
    w = rng.random(3000)
    whole = MultilabelConfusion(5, threshold=0.6).update(Y, S, sample_weight=w).finalize()
    auc = MultilabelRankAUC(5).update(Y, S, sample_weight=w).finalize()
    cuts = [0, 7, 700, 701, 2500, 3000]
    parts = [
        (
            MultilabelConfusion(5, threshold=0.6).update(Y[a:b], S[a:b], sample_weight=w[a:b]),
            MultilabelRankAUC(5).update(Y[a:b], S[a:b], sample_weight=w[a:b]),
        )
        for a, b in zip(cuts[:-1], cuts[1:])
    ]
    for order in (parts, parts[::-1], parts[2:] + parts[:2]):
        c, a = order[0][0].copy(), order[0][1].copy()
        for pc, pa in order[1:]:
            c.merge(pc)
            a.merge(pa)
        rc, ra = c.finalize(), a.finalize()
        for key in whole:
            np.testing.assert_allclose(rc[key], whole[key], rtol=1e-13, err_msg=key)
        for key in auc:
            np.testing.assert_allclose(ra[key], auc[key], rtol=1e-13, err_msg=key)


def test_unweighted_counts_are_exact_across_batchings():
    rng = np.random.default_rng(5)
    Y = rng.integers(0, 2, (1000, 3))
    P = rng.integers(0, 2, (1000, 3))
    a = MultilabelConfusion(3).update(Y, P)
    b = MultilabelConfusion(3)
    for lo in range(0, 1000, 97):
        b.update(Y[lo : lo + 97], P[lo : lo + 97])
    assert np.array_equal(a.state_dict()["counts"], b.state_dict()["counts"])
    assert np.array_equal(a.state_dict()["rows"], b.state_dict()["rows"])


def test_input_dtypes_agree():
    rng = np.random.default_rng(6)
    Y = rng.integers(0, 2, (50, 3))
    P = rng.integers(0, 2, (50, 3))
    ref = MultilabelConfusion(3).update(Y, P).finalize()
    for cast in (bool, np.int8, np.uint8, np.int32, float, np.float32):
        r = MultilabelConfusion(3).update(Y.astype(cast), P.astype(cast).tolist()).finalize()
        assert_close(r, dict(ref.items()), rtol=0, atol=0)
    # a non-contiguous view reads as its copy
    big = np.zeros((50, 6), np.uint8)
    big[:, ::2] = Y
    assert_close(MultilabelConfusion(3).update(big[:, ::2], P).finalize(), dict(ref.items()), 0, 0)


# ---------------------------------------------------------- bad batches
@pytest.mark.parametrize("weighted_before", [False, True])
@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([[0, 1], [1, 2]], [[0, 1], [1, 1]]), {}, r"Y\[1, 1\] = 2: labels must be 0 or 1"),
        ((np.array([[0, 1], [1, 7]], np.uint8), [[0, 1], [1, 1]]), {}, r"Y\[1, 1\] = 7"),
        (([[0, 1], [1, 0]], [[0, 1], [0.5, 1]]), {}, r"P\[1, 0\] = 0.5"),
        (([[0, 1], [1, float("nan")]], [[0, 1], [0, 1]]), {}, r"Y\[1, 1\] = nan: labels must be 0 or 1, got NaN"),
        (([[0, 1], [1, 0]], [[0, 1], [1, 0]]), {"sample_weight": [1, -1]}, r"sample_weight\[1\]"),
        (([[0, 1], [1, 0]], [[0, 1, 0], [1, 0, 0]]), {}, "P has 3 columns but n_labels is 2"),
        (([[0, 1], [1, 0]], [[0, 1]]), {}, "different lengths"),
        (([0, 1], [0, 1]), {}, r"Y must be an n x 2 matrix"),
    ],
)
def test_rejected_batch_leaves_state(weighted_before, args, kwargs, match):
    acc = MultilabelConfusion(2).update([[1, 0], [0, 0]], [[1, 1], [0, 0]])
    if weighted_before:
        acc.update([[1, 1]], [[0, 1]], sample_weight=[2.5])
    check_rejected_batch(acc, args, kwargs, match=match)


@pytest.mark.parametrize(
    "args, match",
    [
        (([[0, 1], [1, 0]], [[0.1, 0.2], [float("inf"), 0.3]]), r"P\[1, 0\] = inf: scores must be finite"),
        (([[0, 1], [3, 0]], [[0.1, 0.2], [0.2, 0.3]]), r"Y\[1, 0\] = 3"),
    ],
)
def test_rejected_scores_leave_state(args, match):
    acc = MultilabelConfusion(2, threshold=0.5).update([[1, 0]], [[0.7, 0.2]])
    check_rejected_batch(acc, args, match=match)
    auc = MultilabelRankAUC(2).update([[1, 0], [0, 1]], [[0.7, 0.2], [0.1, 0.9]])
    check_rejected_batch(auc, args, match=match.replace("P", "S"))


def test_wrong_types_and_settings():
    with pytest.raises(TypeError, match="n_labels or labels"):
        MultilabelConfusion()
    with pytest.raises(TypeError, match="integer"):
        MultilabelConfusion(2.0)
    with pytest.raises(ValueError, match="at least 1"):
        MultilabelRankAUC(0)
    with pytest.raises(ValueError, match="2 labels were given"):
        MultilabelConfusion(3, labels=["a", "b"])
    with pytest.raises(ValueError, match="repeats"):
        MultilabelConfusion(labels=["a", "a"])
    with pytest.raises(ValueError, match="finite"):
        MultilabelConfusion(2, threshold=float("nan"))
    with pytest.raises(TypeError):
        MultilabelConfusion(2).update([["a", "b"]], [[0, 1]])
    with pytest.raises(sm.SettingsMismatchError):
        MultilabelConfusion(2).merge(MultilabelConfusion(2, threshold=0.5))


def test_load_rejects_inconsistent_states():
    acc = MultilabelConfusion(2).update([[1, 0], [0, 1]], [[1, 1], [0, 1]])
    arrays = acc.state_dict()
    arrays["counts"][0, 0] += 1
    with pytest.raises(ValueError, match="add up"):
        MultilabelConfusion._from_saved(acc.settings, arrays, "x")
    arrays = acc.state_dict()
    arrays["sums"][2, 0] = 5.0  # more F1 than rows
    with pytest.raises(ValueError, match="sums"):
        MultilabelConfusion._from_saved(acc.settings, arrays, "x")
    auc = MultilabelRankAUC(2).update([[1, 0], [0, 1]], [[0.3, 0.2], [0.1, 0.9]])
    arrays = auc.state_dict()
    arrays["sizes"][0, 0] += 1
    with pytest.raises(ValueError, match="sizes"):
        MultilabelRankAUC._from_saved(auc.settings, arrays, "x")
    good = MultilabelRankAUC._from_saved(auc.settings, auc.state_dict(), "x")
    assert good == auc


def test_labels_name_the_rows_of_the_report():
    ev = sm.Evaluator({"multilabel": MultilabelConfusion(labels=["news", "sport"])})
    report = ev.update([[1, 0], [1, 1]], [[1, 0], [0, 1]]).finalize()
    text = report.to_text()
    assert "sport" in text and "samples_f1" in text
    assert report.parts["multilabel"].report_values()["labels"] == ["news", "sport"]


def test_int8_matrices_are_read_as_they_are_and_checked():
    Y = np.array([[1, 0], [0, 1]], np.int8)
    r = MultilabelConfusion(2).update(Y, Y).finalize()
    assert r.subset_accuracy == 1.0 and r.tp.tolist() == [1, 1]
    acc = MultilabelConfusion(2).update(Y, Y)
    check_rejected_batch(acc, (np.array([[1, 0], [0, -1]], np.int8), Y), match=r"Y\[1, 1\] = -1")
    check_rejected_batch(acc, (Y, np.array([[1, 0], [5, 1]], np.int8)), match=r"P\[1, 0\] = 5")


def test_a_forged_label_count_in_a_state_file_is_refused_before_allocating():
    auc = MultilabelRankAUC(2).update([[1, 0], [0, 1]], [[0.3, 0.2], [0.1, 0.9]])
    with pytest.raises(sm.StateFileError, match="more than the file holds"):
        MultilabelRankAUC._from_saved({"n_labels": 10**9, "labels": None}, auc.state_dict(), "x")
    with pytest.raises(sm.StateFileError, match="more than the file holds"):
        MultilabelConfusion._from_saved(
            {"n_labels": 10**9, "threshold": None, "labels": None}, MultilabelConfusion(2).state_dict(), "x"
        )


def test_merging_folded_or_loaded_shards_gives_identical_results():
    import pickle

    rng = np.random.default_rng(202)
    shards = []
    for _ in range(2):
        Y = (rng.random((300, 4)) < 0.4).astype(np.int64)
        S = np.round(np.clip(0.4 * Y + 0.6 * rng.random((300, 4)), 0, 1), 2)  # many ties
        shards.append(MultilabelRankAUC(4).update(Y, S, sample_weight=rng.random(300) * 2))
    folded = (shards[0] + shards[1]).finalize()
    loaded = [pickle.loads(pickle.dumps(s)) for s in shards]
    again = loaded[0].copy().merge(loaded[1]).finalize()
    for key in folded:
        assert np.array_equal(folded[key], again[key]), key
