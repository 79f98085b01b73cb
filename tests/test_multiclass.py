"""MulticlassConfusion and confusion_matrix: protocol, scikit-learn agreement,
one-vs-rest semantics, label mapping and rejected batches."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from streammetrics.metrics.binary import BinaryConfusion
from streammetrics.metrics.multiclass import MulticlassConfusion, confusion_matrix, multiclass_result, multiclass_scores
from tests.harness import check_accumulator, check_rejected_batch, state_snapshot

RTOL = 1e-12


def sk_reference(y, p, k, w=None) -> dict:
    """Every field, computed by scikit-learn (warnings about undefined scores off)."""
    labels = list(range(k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prec, rec, f1, _ = skm.precision_recall_fscore_support(y, p, labels=labels, sample_weight=w, zero_division=0)
        ref = {
            "matrix": skm.confusion_matrix(y, p, labels=labels, sample_weight=w),
            "precision": prec,
            "recall": rec,
            "f1": f1,
            "accuracy": skm.accuracy_score(y, p, sample_weight=w),
            "balanced_accuracy": skm.balanced_accuracy_score(y, p, sample_weight=w),
            "mcc": skm.matthews_corrcoef(y, p, sample_weight=w),
        }
        for avg in ("macro", "micro", "weighted"):
            pr, rc, ff, _ = skm.precision_recall_fscore_support(y, p, average=avg, sample_weight=w, zero_division=0)
            ref[f"{avg}_precision"], ref[f"{avg}_recall"], ref[f"{avg}_f1"] = pr, rc, ff
        kappa = skm.cohen_kappa_score(y, p, sample_weight=w)
        ref["cohen_kappa"] = 0.0 if math.isnan(kappa) else kappa  # guarded 0 where sklearn says NaN
    return ref


def assert_close(result, ref: dict, rtol=RTOL, atol=1e-14):
    for key, want in ref.items():
        np.testing.assert_allclose(getattr(result, key), want, rtol=rtol, atol=atol, err_msg=key)


# ------------------------------------------------------------- the protocol
def _batches(rng, k, n_batches=7, weighted=False):
    out = []
    for i in range(n_batches):
        n = int(rng.integers(0 if i == 2 else 1, 40))
        y = rng.integers(0, k, n)
        p = np.where(rng.random(n) < 0.6, y, rng.integers(0, k, n))
        if weighted and i % 2 == 0:
            out.append({"args": (y, p), "sample_weight": rng.random(n) * 3})
        else:
            out.append((y, p))
    return out


def _concat(batches):
    ys, ps, ws = [], [], []
    for b in batches:
        if isinstance(b, dict):
            (y, p), w = b["args"], b["sample_weight"]
        else:
            (y, p), w = b, None
        ys.append(np.asarray(y))
        ps.append(np.asarray(p))
        ws.append(np.ones(len(y)) if w is None else np.asarray(w, float))
    return np.concatenate(ys), np.concatenate(ps), np.concatenate(ws)


@pytest.mark.parametrize("weighted", [False, True])
def test_protocol_and_sklearn(weighted):
    rng = np.random.default_rng(3 + weighted)
    k = 5
    batches = _batches(rng, k, weighted=weighted)
    y, p, w = _concat(batches)
    ref = sk_reference(y, p, k, w if weighted else None)
    r = check_accumulator(lambda: MulticlassConfusion(k), batches, expected_rtol=1e-12)
    assert_close(r, ref)
    assert r.matrix.dtype == (np.float64 if weighted else np.int64)
    assert r.n == len(y)


def test_protocol_with_string_labels():
    rng = np.random.default_rng(5)
    names = ["cat", "dog", "bird", "eel"]
    batches = [(list(np.array(names)[y]), list(np.array(names)[p])) for y, p in _batches(rng, 4)]
    r = check_accumulator(lambda: MulticlassConfusion(labels=names), batches)
    y, p, _ = _concat(
        [
            (
                np.array([names.index(v) for v in yb], dtype=np.int64),
                np.array([names.index(v) for v in pb], dtype=np.int64),
            )
            for yb, pb in batches
        ]
    )
    assert_close(r, sk_reference(y, p, 4))


@settings(max_examples=40)
@given(k=st.integers(1, 6), data=st.data(), weighted=st.booleans())
def test_matches_sklearn_random(k, data, weighted):
    n = data.draw(st.integers(1, 50))
    # classes drawn from a subset, so some are absent from y, from p, or both
    y_classes = data.draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    p_classes = data.draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    y = np.array(data.draw(st.lists(st.sampled_from(y_classes), min_size=n, max_size=n)))
    p = np.array(data.draw(st.lists(st.sampled_from(p_classes), min_size=n, max_size=n)))
    w = None
    if weighted:
        w = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]), min_size=n, max_size=n)))
        if w.sum() == 0:
            w[0] = 1.0
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    acc = MulticlassConfusion(k)
    for lo, hi in zip([0] + cuts, cuts + [n]):
        acc.update(y[lo:hi], p[lo:hi], sample_weight=None if w is None else w[lo:hi])
    r = acc.finalize()
    assert_close(r, sk_reference(y, p, k, w), rtol=1e-10, atol=1e-12)
    assert_close(multiclass_scores(y, p, k, sample_weight=w), sk_reference(y, p, k, w), rtol=1e-10, atol=1e-12)


def test_one_vs_rest_matches_binary_confusion():
    """Each class's precision/recall/F1 is the binary score of "k or not"."""
    rng = np.random.default_rng(11)
    k = 4
    y = rng.integers(0, k, 300)
    p = np.where(rng.random(300) < 0.5, y, rng.integers(0, k - 1, 300))  # class 3 rarely called
    y[y == 2] = 0  # class 2 absent from the truth
    r = multiclass_scores(y, p, k)
    for c in range(k):
        b = BinaryConfusion().update(y == c, p == c).finalize()
        assert r.precision[c] == pytest.approx(b.precision, rel=1e-15)
        assert r.recall[c] == pytest.approx(b.recall, rel=1e-15)
        assert r.f1[c] == pytest.approx(b.f1, rel=1e-15)
    assert r.recall[2] == 0.0  # guarded, not NaN


# ------------------------------------------------------ the seed's examples
def _from_matrix(matrix):
    y, p = [], []
    for i, row in enumerate(matrix):
        for j, c in enumerate(row):
            y += [i] * c
            p += [j] * c
    return np.array(y), np.array(p)


def test_seed_cars_example():
    """The origin-of-cars table: per-class scores, macro and weighted averages."""
    names = ["europe", "japan", "usa"]
    y, p = _from_matrix([[6, 1, 10], [2, 8, 5], [1, 4, 42]])
    acc = MulticlassConfusion(labels=names)
    r = acc.update([names[i] for i in y], [names[i] for i in p]).finalize()
    np.testing.assert_allclose(r.precision, [0.666667, 0.615385, 0.736842], atol=5e-7)
    np.testing.assert_allclose(r.recall, [0.352941, 0.533333, 0.893617], atol=5e-7)
    np.testing.assert_allclose(r.f1, [0.461538, 0.571429, 0.807692], atol=5e-7)
    assert f"{r.macro_precision:.1%}" == "67.3%"
    assert f"{r.weighted_precision:.1%}" == "69.9%"
    assert f"{r.accuracy:.1%}" == "70.9%"
    assert f"{r.balanced_accuracy:.1%}" == "59.3%"
    assert_close(r, sk_reference(y, p, 3))


def test_seed_composer_example():
    """Precision reads a column, recall reads a row."""
    bach, mozart, schubert = 0, 1, 2
    y, p = _from_matrix([[23, 5, 1], [2, 18, 7], [4, 2, 20]])
    r = multiclass_scores(y, p, 3)
    assert r.n == 82
    assert r.precision[mozart] == pytest.approx(18 / 25)  # 72%
    assert r.recall[schubert] == pytest.approx(20 / 26)  # about 77%
    assert r.recall[bach] == pytest.approx(23 / 29)


def test_micro_is_accuracy_and_weighted_uses_support():
    y, p = _from_matrix([[5, 1, 0], [2, 2, 0], [0, 0, 0]])
    r = multiclass_scores(y, p, 3)
    assert r.micro_precision == r.micro_recall == r.micro_f1 == r.accuracy == 7 / 10
    # class 2 never occurs: the macro averages skip it (scikit-learn's labels=None)
    assert r.macro_recall == pytest.approx((5 / 6 + 2 / 4) / 2)
    assert r.weighted_recall == pytest.approx((6 * 5 / 6 + 4 * 2 / 4) / 10)
    np.testing.assert_array_equal(r.support, [6, 4, 0])


def test_balanced_accuracy_skips_classes_absent_from_y():
    # class 2 is predicted but never true: sklearn averages recall over classes 0, 1
    y = [0, 0, 1, 1]
    p = [0, 2, 1, 1]
    r = multiclass_scores(y, p, 3)
    assert r.balanced_accuracy == pytest.approx(0.75)
    assert r.macro_recall == pytest.approx((0.5 + 1 + 0) / 3)  # class 2 is present in p


def test_degenerate_scores_are_guarded():
    r = multiclass_scores([1, 1, 1], [1, 1, 1], 3)
    assert r.accuracy == 1.0 and r.mcc == 0.0 and r.cohen_kappa == 0.0  # sklearn: 0.0 and NaN
    assert r.macro_f1 == 1.0  # only class 1 is present
    r = multiclass_scores([0, 0], [1, 1], 2)
    assert r.f1.tolist() == [0.0, 0.0] and r.mcc == 0.0


def test_no_int64_overflow_on_huge_counts():
    m = np.array([[4_000_000_000_000, 3_000_000_000_001], [2_999_999_999_999, 5_000_000_000_000]], dtype=np.int64)
    r = multiclass_result(m, np.array([True, True]), n=int(m.sum()))
    t = [int(v) for v in m.sum(1)]
    c = [int(v) for v in m.sum(0)]
    s, hit = sum(t), int(np.trace(m))
    tc = t[0] * c[0] + t[1] * c[1]
    mcc_exact = (hit * s - tc) / math.sqrt((s * s - sum(x * x for x in c)) * (s * s - sum(x * x for x in t)))
    assert r.mcc == pytest.approx(mcc_exact, rel=1e-14)
    assert r.cohen_kappa == pytest.approx(float(Fraction(hit * s - tc, s * s - tc)), rel=1e-14)


# ---------------------------------------------------------------- labels
def test_labels_mapping_variants():
    ints = [10, -3, 2**62]
    acc = MulticlassConfusion(labels=ints).update(np.array([2**62, -3, 10]), [10, 10, 2**62])
    np.testing.assert_array_equal(acc.matrix(), [[0, 0, 1], [1, 0, 0], [1, 0, 0]])
    mixed = MulticlassConfusion(labels=["1", 1, None])
    mixed.update(["1", 1, None], [1, "1", None])
    np.testing.assert_array_equal(mixed.matrix(), [[0, 1, 0], [1, 0, 0], [0, 0, 1]])
    assert MulticlassConfusion(3, labels=["a", "b", "c"]).n_classes == 3
    # floats holding a label value map to it
    assert MulticlassConfusion(labels=[0, 1]).update([0.0, 1.0], [1, 1]).n == 2


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"n_classes": 2, "labels": ["a", "b", "c"]}, ValueError),
        ({"labels": ["a", "a"]}, ValueError),
        ({"labels": "abc"}, TypeError),
        ({"n_classes": 0}, ValueError),
        ({"n_classes": 2.0}, TypeError),
        ({}, TypeError),
    ],
)
def test_bad_settings(kwargs, err):
    with pytest.raises(err):
        MulticlassConfusion(**kwargs)


def test_merge_needs_equal_settings():
    a = MulticlassConfusion(3).update([0], [1])
    for other in (MulticlassConfusion(4), MulticlassConfusion(labels=["x", "y", "z"])):
        sa, so = state_snapshot(a), state_snapshot(other)
        with pytest.raises(ValueError, match="different settings"):
            a.merge(other)
        assert all(np.array_equal(sa[key], a._state[key]) for key in sa)
        assert all(np.array_equal(so[key], other._state[key]) for key in so)


# ---------------------------------------------------------- bad batches
@pytest.mark.parametrize("weighted_before", [False, True])
@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([0, 1, 3, 9], [0, 1, 2, 2]), {}, r"y\[2\] = 3: classes must be integers in 0..2"),
        (([0, 1, 2], [0, -1, 5]), {}, r"p\[1\] = -1"),
        (([0, 1, 2], [0, 1, 2.5]), {}, r"p\[2\] = 2.5"),
        (([0, 1, float("nan")], [0, 1, 2]), {}, r"y\[2\] = nan"),
        (([0, 1, 2], [0, 1, 2]), {"sample_weight": [1, -1, 1]}, r"sample_weight\[1\]"),
        (([0, 1, 2], [0, 1, 7]), {"sample_weight": [1, 1, 1]}, r"p\[2\] = 7"),
        (([0, 1], [0, 1, 2]), {}, "different lengths"),
        ((np.array([0, 2**64 - 1], dtype=np.uint64), [0, 1]), {}, r"y\[1\]"),
    ],
)
def test_rejected_batch_leaves_state(weighted_before, args, kwargs, match):
    acc = MulticlassConfusion(3).update([0, 1, 2], [0, 2, 2])
    if weighted_before:
        acc.update([1, 1], [1, 0], sample_weight=[0.5, 2.0])
    check_rejected_batch(acc, args, kwargs, match=match)


def test_rejected_labels_batch():
    acc = MulticlassConfusion(labels=["a", "b"]).update(["a"], ["b"])
    check_rejected_batch(acc, (["a", "b", "c"], ["a", "a", "a"]), match=r"y\[2\] = 'c': not one of")
    check_rejected_batch(acc, (["a"], [3]), match=r"p\[0\] = 3")
    int_acc = MulticlassConfusion(labels=[5, 7])
    check_rejected_batch(int_acc, ([5, 7, 6], [5, 5, 5]), match=r"y\[2\] = 6")
    with pytest.raises(ValueError, match="1-D"):
        int_acc.update([[5, 7]], [[5, 7]])


def test_wrong_types():
    acc = MulticlassConfusion(3)
    with pytest.raises(TypeError):
        acc.update(["a", "b"], [0, 1])
    with pytest.raises(ValueError, match="1-D"):
        acc.update(np.zeros((2, 2), int), np.zeros((2, 2), int))


def test_zero_total_weight_is_an_error():
    acc = MulticlassConfusion(2).update([0, 1], [0, 0], sample_weight=[0.0, 0.0])
    assert acc.n == 2
    with pytest.raises(ValueError, match="sum to zero"):
        acc.finalize()


def test_load_rejects_inconsistent_state(tmp_path):
    acc = MulticlassConfusion(3).update([0, 1], [1, 1])
    arrays = {k: v.copy() for k, v in acc._state.items()}
    arrays["counts"][0, 0] = 5  # no longer adds up to n
    with pytest.raises(ValueError, match="add up"):
        MulticlassConfusion._from_saved(acc._settings(), arrays, "x")
    arrays = {k: v.copy() for k, v in acc._state.items()}
    arrays["wsum"] = np.zeros((4, 2))
    with pytest.raises(ValueError, match="wsum"):
        MulticlassConfusion._from_saved(acc._settings(), arrays, "x")


# ------------------------------------------------------ confusion_matrix
def test_confusion_matrix_function():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 6, 200)
    p = rng.integers(0, 5, 200)
    np.testing.assert_array_equal(confusion_matrix(y, p), skm.confusion_matrix(y, p))
    w = rng.random(200)
    got = confusion_matrix(y, p, n_classes=8, sample_weight=w)
    np.testing.assert_allclose(got, skm.confusion_matrix(y, p, labels=range(8), sample_weight=w), rtol=1e-14)
    assert got.shape == (8, 8) and got.dtype == np.float64
    with pytest.raises(ValueError, match="empty"):
        confusion_matrix([], [])
    with pytest.raises(ValueError, match=r"y\[1\] = -2"):
        confusion_matrix([0, -2], [0, 1])
    with pytest.raises(ValueError, match=r"p\[0\] = 4"):
        confusion_matrix([0, 1], [4, 1], n_classes=3)


def test_large_stream_counts_exact_and_fast_path():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 200_003)
    p = np.where(rng.random(y.size) < 0.7, y, rng.integers(0, 10, y.size))
    acc = MulticlassConfusion(10)
    acc.update(y[:100_000], p[:100_000]).update(y[100_000:], p[100_000:])
    np.testing.assert_array_equal(acc.matrix(), skm.confusion_matrix(y, p))
    assert acc.matrix().dtype == np.int64


def test_inferred_n_classes_is_bounded():
    with pytest.raises(ValueError, match="pass n_classes"):
        confusion_matrix([0, 10**9], [0, 1])
    assert confusion_matrix([0, 2], [1, 1]).shape == (3, 3)


def test_a_batch_of_other_labels_is_refused_by_fold():
    # codes of labels mean those labels in their order: another order, or plain
    # class indices, would count rows in the wrong classes
    import streammetrics as sm

    batch = sm.MulticlassConfusion(labels=["c", "b", "a"]).prepare(["a", "a"], ["a", "b"])
    dst = sm.MulticlassConfusion(labels=["a", "b", "c"])
    with pytest.raises(
        TypeError,
        match=r"this batch holds y as the labels \['c', 'b', 'a'\].*"
        r"takes y as the labels \['a', 'b', 'c'\]",
    ):
        dst.fold(batch)
    assert dst.n == 0
    with pytest.raises(TypeError):
        sm.Evaluator("multiclass", labels=["x", "y", "z"]).fold(sm.MulticlassConfusion(3).prepare([0, 2], [0, 1]))
    same = sm.MulticlassConfusion(labels=["a", "b", "c"]).prepare(["a", "a"], ["a", "b"])
    assert dst.fold(same).finalize().support.tolist() == [2, 0, 0]


@given(
    st.lists(st.sampled_from(["cat", "dog", "bird", "eel"]), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_one_shot_functions_take_string_labels_as_scikit_learn(y, rnd, weighted):
    p = [rnd.choice(["cat", "dog", "bird"]) for _ in y]
    w = [rnd.random() + 0.1 for _ in y] if weighted else None
    r = multiclass_scores(y, p, sample_weight=w)
    labels = sorted(set(y) | set(p))
    assert list(r.meta["labels"]) == labels
    assume(len(labels) > 1)  # scikit-learn warns on a 1 x 1 matrix
    ref = skm.confusion_matrix(y, p, sample_weight=w, labels=labels)
    np.testing.assert_allclose(confusion_matrix(y, p, sample_weight=w), ref)
    prec, rec, f1, _ = skm.precision_recall_fscore_support(y, p, labels=labels, sample_weight=w, zero_division=0)
    np.testing.assert_allclose(r.recall, rec, rtol=1e-12)
    np.testing.assert_allclose(r.f1, f1, rtol=1e-12)
    macro = skm.f1_score(y, p, labels=labels, average="macro", sample_weight=w, zero_division=0)
    assert r.macro_f1 == pytest.approx(macro, rel=1e-12)
