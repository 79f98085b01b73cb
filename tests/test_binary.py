"""Binary confusion counts and rates: specification examples, guards,
scikit-learn agreement, batching invariance and bad input."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics._kernels.binary import count_labels

from .harness import check_accumulator, check_rejected_batch, sharded

Y = [1, 1, 1, 0, 0, 0, 0, 0]
P = [1, 1, 0, 1, 0, 0, 0, 0]


# --------------------------------------------------------------- the spec
def test_specification_example():
    assert sm.accuracy(Y, P) == 0.75
    assert sm.precision_score(Y, P) == pytest.approx(2 / 3, rel=1e-15)
    assert sm.recall_score(Y, P) == pytest.approx(2 / 3, rel=1e-15)
    assert sm.specificity(Y, P) == pytest.approx(0.8, rel=1e-15)
    assert sm.f1(Y, P) == pytest.approx(2 / 3, rel=1e-15)
    assert sm.fbeta(Y, P, 2) == pytest.approx(2 / 3, rel=1e-15)
    assert sm.matthews(Y, P) == pytest.approx(7 / 15, rel=1e-15)
    assert (sm.hits(Y, P), sm.false_calls(Y, P), sm.missed(Y, P), sm.rejected(Y, P)) == (2, 1, 1, 4)
    assert sm.called(Y, P) == 3 and sm.actual(Y) == 3


def test_predicts_nothing_precision_is_zero():
    assert sm.precision_score(Y, [0] * 8) == 0.0
    assert sm.f1(Y, [0] * 8) == 0.0
    assert sm.matthews(Y, [0] * 8) == 0.0


@pytest.mark.parametrize(
    "y, p, field, value",
    [
        ([0, 0, 0], [0, 0, 0], "recall", 0.0),  # no positives
        ([1, 1, 1], [1, 1, 1], "specificity", 0.0),  # no negatives
        ([1, 1, 1], [1, 1, 1], "mcc", 0.0),  # zero margins
        ([1, 1, 1], [1, 1, 1], "balanced_accuracy", 0.5),  # spec guard, sklearn says 1
        ([0, 0], [1, 1], "f1", 0.0),
        ([1, 0], [0, 1], "mcc", -1.0),
    ],
)
def test_guards(y, p, field, value):
    r = sm.BinaryConfusion().update(y, p).finalize()
    assert getattr(r, field) == value
    assert not any(isinstance(v, float) and np.isnan(v) for v in r.as_dict().values())


def test_fbeta_on_result_and_function_agree():
    r = sm.BinaryConfusion().update(Y, P).finalize()
    for b in (0.5, 1, 2, 3.7):
        assert r.fbeta(b) == sm.fbeta(Y, P, b)
    assert r.fbeta(1) == r.f1
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="b must be"):
            r.fbeta(bad)
    with pytest.raises(TypeError):
        r.fbeta("2")


# --------------------------------------------------------- scikit-learn
REFERENCES = {
    "accuracy": skm.accuracy_score,
    "precision_score": partial(skm.precision_score, zero_division=0),
    "recall_score": partial(skm.recall_score, zero_division=0),
    "f1": partial(skm.f1_score, zero_division=0),
    "matthews": skm.matthews_corrcoef,
    "specificity": partial(skm.recall_score, pos_label=0, zero_division=0),
}

# every field of a binary result against its scikit-learn twin: a new score
# computed from the four counts is one formula in binary_result and one row here
RESULT_REFERENCES = {
    "accuracy": skm.accuracy_score,
    "precision": partial(skm.precision_score, zero_division=0),
    "recall": partial(skm.recall_score, zero_division=0),
    "specificity": partial(skm.recall_score, pos_label=0, zero_division=0),
    "f1": partial(skm.f1_score, zero_division=0),
    "mcc": skm.matthews_corrcoef,
    "jaccard": partial(skm.jaccard_score, zero_division=0),
    "youden": partial(skm.balanced_accuracy_score, adjusted=True),
}


@pytest.mark.parametrize("field", sorted(RESULT_REFERENCES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_result_fields_agree_with_sklearn(field, weighted, seed):
    rng = np.random.default_rng(seed)
    y = rng.random(400) < 0.3
    p = rng.random(400) < (0.4 if seed else 0.0)  # seed 0: nothing predicted positive
    w = rng.random(400) * 3 if weighted else None
    ours = sm.BinaryConfusion().update(y, p, sample_weight=w).finalize()[field]
    assert ours == pytest.approx(RESULT_REFERENCES[field](y, p, sample_weight=w), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_sklearn(name, weighted, seed):
    rng = np.random.default_rng(seed)
    n = 500
    y = rng.random(n) < 0.3
    p = rng.random(n) < 0.4
    w = rng.random(n) * 3 if weighted else None
    ours = getattr(sm, name)(y, p, sample_weight=w)
    ref = REFERENCES[name](y, p, sample_weight=w)
    assert ours == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_fbeta_and_balanced_accuracy_agree_with_sklearn():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 300)
    p = rng.integers(0, 2, 300)
    w = rng.random(300)
    for b in (0.5, 2.0):
        assert sm.fbeta(y, p, b, sample_weight=w) == pytest.approx(
            skm.fbeta_score(y, p, beta=b, sample_weight=w, zero_division=0), rel=1e-12
        )
    assert sm.balanced_accuracy(y, p, sample_weight=w) == pytest.approx(
        skm.balanced_accuracy_score(y, p, sample_weight=w), rel=1e-12
    )


def test_threshold_counts_scores_at_or_above():
    y = np.array([1, 0, 1, 0, 1])
    s = np.array([0.5, 0.49, -3.0, 7.0, 0.5000001])
    r = sm.BinaryConfusion(threshold=0.5).update(y, s).finalize()
    assert (r.tp, r.fp, r.fn, r.tn) == (2, 1, 1, 1)
    ref = sm.BinaryConfusion().update(y, s >= 0.5).finalize()
    assert r.as_dict() == ref.as_dict()


# ------------------------------------------------------------- numerics
def test_mcc_does_not_overflow():
    # margins of 1e5-scale counts overflow an int64 product; merged huge counts too
    a = sm.BinaryConfusion()
    a._state["counts"][:] = [3_000_000_000, 1_000_000_000, 2_000_000_000, 5_000_000_000]
    a._state["n"][0] = 11_000_000_000
    r = (a + a).finalize()
    assert r.tp == 6_000_000_000  # exact past 2**32
    tp, fp, fn, tn = 6e9, 2e9, 4e9, 10e9
    expected = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert r.mcc == pytest.approx(expected, rel=1e-14)


def test_mcc_large_n_matches_sklearn():
    rng = np.random.default_rng(1)
    n = 400_000
    y = rng.random(n) < 0.5
    p = np.where(rng.random(n) < 0.8, y, ~y)
    assert sm.matthews(y, p) == pytest.approx(skm.matthews_corrcoef(y, p), rel=1e-12)


# --------------------------------------------------------- the protocol
def _batches(seed, n_batches=9, size=40, weighted=False, scores=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_batches):
        m = int(rng.integers(0, size))
        y = rng.random(m) < 0.4
        p = rng.normal(size=m) if scores else rng.random(m) < 0.5
        out.append({"args": (y, p), "sample_weight": rng.random(m) * 2} if weighted else (y, p))
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_protocol(weighted):
    batches = _batches(0, weighted=weighted)
    y = np.concatenate([(b["args"] if weighted else b)[0] for b in batches])
    p = np.concatenate([(b["args"] if weighted else b)[1] for b in batches])
    w = np.concatenate([b["sample_weight"] for b in batches]) if weighted else None
    expected = {
        "accuracy": skm.accuracy_score(y, p, sample_weight=w),
        "f1": skm.f1_score(y, p, sample_weight=w, zero_division=0),
        "mcc": skm.matthews_corrcoef(y, p, sample_weight=w),
    }
    check_accumulator(sm.BinaryConfusion, batches, expected, expected_rtol=1e-12)


def test_protocol_with_threshold():
    check_accumulator(lambda: sm.BinaryConfusion(threshold=0.1), _batches(1, scores=True))


@given(
    data=st.lists(st.tuples(st.booleans(), st.booleans(), st.floats(0.01, 10)), min_size=1, max_size=80),
    cuts=st.lists(st.integers(0, 80), max_size=6),
    weighted=st.booleans(),
)
def test_any_batching_and_sharding_gives_the_same_counts(data, cuts, weighted):
    y = np.array([d[0] for d in data])
    p = np.array([d[1] for d in data])
    w = np.array([d[2] for d in data]) if weighted else None
    whole = sm.BinaryConfusion().update(y, p, sample_weight=w).finalize()
    got = sharded(sm.BinaryConfusion, (y, p), w, cuts).finalize()
    if weighted:
        for k in ("tp", "fp", "fn", "tn", "f1", "mcc"):
            assert getattr(got, k) == pytest.approx(getattr(whole, k), rel=1e-12, abs=1e-12)
    else:
        assert got.as_dict() == whole.as_dict()


def test_merge_with_different_threshold_is_rejected():
    a = sm.BinaryConfusion(threshold=0.5).update([1, 0], [0.7, 0.2])
    b = sm.BinaryConfusion(threshold=0.3).update([1], [0.4])
    sa, sb = a.copy(), b.copy()
    with pytest.raises(ValueError, match="threshold=0.5 vs 0.3"):
        a.merge(b)
    with pytest.raises(ValueError):
        a + b
    assert a == sa and b == sb
    with pytest.raises(TypeError):
        a.merge(sm.ProbabilityScores())


def test_empty_batch_is_a_noop_and_empty_finalize_raises():
    acc = sm.BinaryConfusion()
    assert acc.update([], []).n == 0
    with pytest.raises(ValueError, match="no observations"):
        acc.finalize()
    with pytest.raises(ValueError, match="empty"):
        sm.f1([], [])


def test_all_zero_weights_is_an_error_not_nan():
    with pytest.raises(ValueError, match="weights sum to zero"):
        sm.accuracy([1, 0], [1, 1], sample_weight=[0, 0])


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "y, p, kwargs, match",
    [
        ([1, 0, 2], [1, 0, 1], {}, r"y\[2\] = 2: labels must be 0 or 1"),
        ([1, 0, 1], [1, -1, 1], {}, r"p\[1\] = -1: labels must be 0 or 1"),
        ([1, 0.5, 1], [1, 0, 1], {}, r"y\[1\] = 0.5: .*fractional"),
        ([1, np.nan, 1], [1, 0, 1], {}, r"y\[1\] = nan: .*NaN"),
        ([1, 0, 1], [1, 0, np.inf], {}, r"p\[2\] = inf"),
        ([1, 0, 1], [1, 0], {}, "different lengths: 3 and 2"),
        ([[1, 0], [0, 1]], [1, 0], {}, "1-D"),
        ([1, 0, 1], [1, 0, 1], {"sample_weight": [1, -1, 1]}, r"sample_weight\[1\] = -1"),
        ([1, 0, 1], [1, 0, 1], {"sample_weight": [1, np.nan, 1]}, r"sample_weight\[1\] = nan: weights must be finite"),
        ([1, 0, 1], [1, 0, 1], {"sample_weight": [1, 1]}, "sample_weight has length 2"),
    ],
)
def test_bad_input_leaves_state_unchanged(y, p, kwargs, match):
    acc = sm.BinaryConfusion().update([1, 0, 1, 1], [1, 1, 0, 1], sample_weight=[1, 2, 3, 4])
    check_rejected_batch(acc, (y, p), kwargs, match=match)
    acc2 = sm.BinaryConfusion().update([1, 0], [1, 0])
    check_rejected_batch(acc2, (y, p), kwargs, match=match)


def test_bad_scores_with_threshold():
    acc = sm.BinaryConfusion(threshold=0.0).update([1, 0], [0.3, -2.0])
    check_rejected_batch(acc, ([1, 0, 1], [0.1, np.nan, 0.2]), match=r"p\[1\] = nan: scores must be finite")
    check_rejected_batch(acc, ([1, 0, 1], [0.1, 0.2, -np.inf]), match=r"p\[2\] = -inf")
    # scores without a threshold are not hard labels
    check_rejected_batch(sm.BinaryConfusion(), ([1, 0], [0.3, 0.9]), match=r"p\[0\] = 0.3")


def test_wrong_types():
    with pytest.raises(TypeError, match="must hold numbers"):
        sm.f1(["a", "b"], [1, 0])
    with pytest.raises(TypeError, match="array-like"):
        sm.f1("10", [1, 0])
    with pytest.raises(ValueError, match="scalar"):
        sm.f1(1, [1])
    with pytest.raises(TypeError):
        sm.BinaryConfusion(threshold="0.5")
    with pytest.raises(ValueError, match="finite"):
        sm.BinaryConfusion(threshold=float("nan"))


def test_float32_labels_and_scores_read_as_float64_in_any_layout():
    rng = np.random.default_rng(11)
    y, s = (rng.random(40) < 0.4).astype(np.float32), rng.random(40).astype(np.float32)
    expected = sm.BinaryConfusion(threshold=0.5).update(y.astype(np.float64), s).finalize().as_dict()
    for yy, ss in ((y, s), (y[::-1][::-1], s[::-1][::-1]), (y.astype(">f4"), s.astype(">f4"))):
        assert sm.BinaryConfusion(threshold=0.5).update(yy, ss).finalize().as_dict() == expected
    wide = np.repeat(y, 2)[::2]  # a strided view
    assert sm.BinaryConfusion(threshold=0.5).update(wide, s).finalize().as_dict() == expected
    bad = y.copy()
    bad[3] = 0.5
    acc = sm.BinaryConfusion(threshold=0.5)
    with pytest.raises(ValueError, match=r"y\[3\] = 0.5: labels must be 0 or 1"):
        acc.update(bad, s)
    assert acc.n == 0


def test_accepts_many_dtypes_and_array_protocols():
    y = np.array([1, 0, 1, 1, 0])
    p = np.array([1, 1, 0, 1, 0])
    expected = sm.BinaryConfusion().update(y, p).finalize().as_dict()
    for dt in (bool, np.uint8, np.int8, np.int16, np.int32, np.uint64, np.float32, np.float64):
        got = sm.BinaryConfusion().update(y.astype(dt), p.astype(dt)).finalize().as_dict()
        assert got == expected, dt
    got = sm.BinaryConfusion().update(list(y), tuple(p)).finalize().as_dict()
    assert got == expected

    class ArrayLike:
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    class DLPackOnly:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    assert sm.BinaryConfusion().update(ArrayLike(y), DLPackOnly(p)).finalize().as_dict() == expected

    class InterfaceOnly:  # the array interface protocol alone (as some image and GPU-host buffers)
        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    import array

    assert sm.BinaryConfusion().update(InterfaceOnly(y), memoryview(p)).finalize().as_dict() == expected
    assert sm.BinaryConfusion().update(array.array("q", y), array.array("d", p)).finalize().as_dict() == expected
    assert sm.RegressionErrors().update(array.array("d", p), memoryview(y.astype(float))).finalize().n == 5
    with pytest.raises(TypeError, match="y must be array-like, got bytes"):
        sm.BinaryConfusion().update(b"\x01\x00", p[:2])
    # non-contiguous views
    yy = np.repeat(y, 2)[::2]
    assert sm.BinaryConfusion().update(yy, p).finalize().as_dict() == expected


def test_kernel_against_naive_python():
    rng = np.random.default_rng(3)
    y = (rng.random(1000) < 0.5).astype(np.uint8)
    p = (rng.random(1000) < 0.5).astype(np.uint8)
    counts = np.zeros(4, np.int64)
    n = np.zeros(1, np.int64)
    assert count_labels(y, p, 0.0, n, counts) == 0
    assert n[0] == 1000
    naive = [
        sum(1 for a, b in zip(y, p) if a and b),
        sum(1 for a, b in zip(y, p) if not a and b),
        sum(1 for a, b in zip(y, p) if a and not b),
        sum(1 for a, b in zip(y, p) if not a and not b),
    ]
    assert counts.tolist() == naive
    counts2 = np.zeros(4, np.int64)
    assert count_labels(y, p, 0.0, np.zeros(1, np.int64), counts2) == 0
    assert counts2.tolist() == naive


def test_result_is_read_only_and_readable():
    r = sm.BinaryConfusion().update(Y, P).finalize()
    with pytest.raises(AttributeError, match="read-only"):
        r.f1 = 1.0
    with pytest.raises(AttributeError, match="no field"):
        r.auc
    assert r["f1"] == r.f1 and "f1" in r.as_dict() and len(r) == len(r.as_dict()) >= 12
    assert "f1=0.666667" in repr(r)


def test_a_score_added_to_the_formulas_reaches_every_wrapper(monkeypatch):
    """One formula: the new score is in BinaryConfusion's result, an Evaluator's
    report (as the command prints it), every slice of a Sliced (one by one and as
    columns), a Bootstrap (with its percentile interval) and the scores
    ``best_threshold`` maximises."""
    import streammetrics.metrics.binary as B

    formulas = B.score_formulas

    def with_fowlkes_mallows(tp, fp, fn, tn, total, to_float, sqrt):
        out = formulas(tp, fp, fn, tn, total, to_float, sqrt)
        out["fowlkes_mallows"] = sqrt(out["precision"] * out["recall"])
        return out

    monkeypatch.setattr(B, "score_formulas", with_fowlkes_mallows)
    rng = np.random.default_rng(5)
    y, p = (rng.random(400) < 0.4).astype(np.int64), rng.random(400)
    by = rng.integers(0, 5, 400)
    r = sm.BinaryConfusion(threshold=0.5).update(y, p).finalize()
    assert r.fowlkes_mallows == pytest.approx(math.sqrt(r.precision * r.recall), rel=1e-15)
    assert sm.Evaluator(task="binary").update(y, p).finalize().fowlkes_mallows == r.fowlkes_mallows
    sliced = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by).finalize()
    assert sliced.overall.fowlkes_mallows == r.fowlkes_mallows
    for key, one in sliced.slices.items():
        rows = by == key
        want = sm.BinaryConfusion(threshold=0.5).update(y[rows], p[rows]).finalize()
        assert one.fowlkes_mallows == want.fowlkes_mallows
        # the scores of many slices at once (a sliced result's columns)
        column = B.binary_score_columns(np.array([[want.tp, want.fp, want.fn, want.tn]]))["fowlkes_mallows"]
        assert column[0] == want.fowlkes_mallows
    boot = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=20).update(y, p).finalize()
    assert boot.fowlkes_mallows == r.fowlkes_mallows
    assert boot.fowlkes_mallows_ci_lower <= boot.fowlkes_mallows <= boot.fowlkes_mallows_ci_upper
    assert "fowlkes_mallows" in str(sm.Evaluator(task="binary").update(y, p).finalize())
    best = sm.RankAUC().update(y, p).best_threshold("fowlkes_mallows")
    at = sm.BinaryConfusion(threshold=best.threshold).update(y, p).finalize()
    assert best.best == pytest.approx(at.fowlkes_mallows, rel=1e-12)
