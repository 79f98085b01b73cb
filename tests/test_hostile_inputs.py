"""Inputs a hostile user passes: pairs that are not probabilities, object arrays,
uint64 and float16 labels, and thresholds against scores of lower precision."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import streammetrics as sm


def _objects(*values):
    return np.array(list(values), dtype=object)


def _refused(acc, exc, match, *args):
    before = acc.copy()
    with pytest.raises(exc, match=match):
        acc.update(*args)
    assert acc == before


# ------------------------------------------------------------- predict_proba pairs
@pytest.mark.parametrize(
    "make",
    [sm.ProbabilityScores, lambda: sm.Calibration(10), lambda: sm.Evaluator(task="binary")],
    ids=["ProbabilityScores", "Calibration", "Evaluator"],
)
def test_a_predict_proba_pair_whose_rows_do_not_sum_to_one_is_refused(make):
    acc = make().update([1, 0], [0.8, 0.3])
    _refused(acc, ValueError, r"p\[1\] sums to 0.6: each row", [1, 0, 1], [[0.2, 0.8], [0.3, 0.3], [0.5, 0.5]])
    _refused(acc, ValueError, r"p\[0, 0\] = -0.5", [1], [[-0.5, 1.5]])
    with pytest.raises(ValueError, match=r"p\[1\] sums to 0.6"):
        make().prepare([1, 0], [[0.2, 0.8], [0.3, 0.3]])


def test_a_predict_proba_pair_is_checked_by_the_one_shot_functions():
    with pytest.raises(ValueError, match=r"p\[0\] sums to 1.8"):
        sm.log_loss([1], [[0.9, 0.9]])
    assert sm.brier([1, 0], [[0.1, 0.9], [0.8, 0.2]]) == sm.brier([1, 0], [0.9, 0.2])


# ------------------------------------------------------------------ object arrays
@pytest.mark.parametrize(
    "call",
    [
        lambda y: sm.f1(y, [1, 1]),
        lambda y: sm.accuracy(y, [1, 1]),
        lambda y: sm.BinaryConfusion().update(y, [1, 1]),
        lambda y: sm.RankAUC().update(y, [0.2, 0.4]),
        lambda y: sm.ProbabilityScores().update(y, [0.2, 0.4]),
        lambda y: sm.Evaluator(task="binary").update(y, [0.2, 0.4]),
    ],
)
@pytest.mark.parametrize("bad", [0.5, np.inf, 2, 1])
def test_an_object_array_of_numbers_is_checked_as_its_values(call, bad):
    assert _outcome(call, _objects(1, bad)) == _outcome(call, np.array([1, bad]))
    assert _outcome(call, _objects(1, 0)) == _outcome(call, np.array([1, 0]))


def _outcome(call, arg):
    """The result (finalized), or the error's type and message."""
    try:
        out = call(arg)
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)
    return repr(out.finalize() if isinstance(out, sm.Accumulator) else out)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: sm.RegressionErrors().update(a, [1.0, 2.0, 3.0]),
        lambda a: sm.RankAUC().update([1, 0, 1], a),
        lambda a: sm.MulticlassConfusion(3).update(a, [0, 1, 2]),
        lambda a: sm.TopKAccuracy(1).update(a, np.eye(3)),
        lambda a: sm.mse(a, [1.0, 2.0, 3.0]),
        lambda a: sm.confusion_matrix(a, [0, 1, 2]).tolist(),
    ],
)
def test_an_object_array_of_numbers_scores_as_the_numbers(call):
    for values in ([0, 1, 2], [0.0, 1.0, 2.0], [np.int8(0), True, 2]):
        assert _outcome(call, _objects(*values)) == _outcome(call, np.array(values))


@pytest.mark.parametrize(
    "values, match",
    [
        ((1, None), r"{0}\[1\] = None \(NoneType\): {0} must hold numbers"),
        ((1, 0, "x"), r"{0}\[2\] = 'x' \(str\): {0} must hold numbers"),
        ((1, 2**70), r"{0}\[1\] = 1180591620717411303424 \(an integer beyond 64 bits\)"),
        ((1, 1j), r"{0}\[1\] = 1j \(complex\)"),
    ],
)
def test_an_object_array_of_other_things_is_refused_naming_the_first(values, match):
    for acc in (sm.BinaryConfusion(), sm.RegressionErrors(), sm.ClusterContingency()):
        name = acc.inputs[0].name
        _refused(acc, TypeError, match.format(name), _objects(*values), np.zeros(len(values)))
    with pytest.raises(TypeError, match=r"P\[1, 0\] = None"):
        sm.TopKAccuracy(1).update([0, 1], np.array([[0.5, 0.5], [None, 0.5]], dtype=object))


def test_object_arrays_of_string_labels_still_work():
    y, p = _objects("cat", "dog", "cat", "bird"), _objects("cat", "cat", "cat", "bird")
    assert sm.f1(y, p, average="macro") == sm.f1(list(y), list(p), average="macro")
    assert sm.MulticlassConfusion(labels=["cat", "dog", "bird"]).update(y, p).finalize().accuracy == 0.75
    assert sm.MulticlassConfusion(labels=[1, "1"]).update(_objects(1, "1"), _objects("1", "1")).n == 2
    with pytest.raises(TypeError, match="pass labels="):
        sm.MulticlassConfusion(3).update(_objects("a", 1), [0, 1])


# ---------------------------------------------------------------- integer labels
def test_uint64_labels_name_the_first_bad_position():
    big = np.array([1, 2**63], np.uint64)
    _refused(sm.MulticlassConfusion(1), ValueError, r"y\[0\] = 1: the only class is 0", big, [0, 0])
    _refused(sm.MulticlassConfusion(2), ValueError, r"y\[1\] = 9223372036854775808", big, [0, 0])
    _refused(sm.TopKAccuracy(1, n_classes=1), ValueError, r"y\[0\] = 1", big, [[1.0], [1.0]])
    _refused(sm.ClusterContingency(), ValueError, r"labels_true\[1\] = 9223372036854775808", big, [0, 0])


@pytest.mark.parametrize(
    "make",
    [lambda: sm.TopKAccuracy(2), lambda: sm.TopKAccuracy(2, n_classes=3), lambda: sm.TopKAccuracy(2, labels=[0, 1, 2])],
)
def test_top_k_takes_float16_labels_without_warnings(make):
    P = np.array([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    y = np.array([0, 1, 2, 2], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make().update(y, P).finalize() == make().update(y.astype(np.int64), P).finalize()
        for bad, shown in ((np.inf, "inf"), (65504, "65504"), (-1, "-1"), (0.5, "0.5")):
            with pytest.raises(ValueError, match=rf"y\[3\] = {shown}"):
                make().update(np.array([0, 1, 2, bad], np.float16), P)


# -------------------------------------------------------------------- thresholds
THRESHOLDS = [0.7, 0.1, 1 / 3, 0.5, 1e6, -1e6]


def _scores(dtype):
    """Scores around each threshold, in ``dtype``: the rounded threshold and its neighbours."""
    out = []
    for t in THRESHOLDS:
        with np.errstate(over="ignore"):
            v = np.asarray(t).astype(dtype)
        if np.isfinite(v):
            out += [np.nextafter(v, dtype(-np.inf)), v, np.nextafter(v, dtype(np.inf))]
    return np.array(out, dtype)


DTYPES = [np.float16, np.float32, np.float64]


def _numpy_count(s, t):
    """``(s >= t).sum()`` as numpy (or torch) counts it: a Python float takes the scores' dtype."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1e6 overflows float16: inf, as compared
        return int((s >= t).sum())


def _binary_cases(t):
    return [
        lambda y, s: sm.BinaryConfusion(threshold=t).update(y, s).finalize().tp,
        lambda y, s: sm.BinaryConfusion(threshold=t).update(y, s, sample_weight=np.ones(len(y))).finalize().tp,
        lambda y, s: sm.Evaluator(task="binary", scores="score", threshold=t).update(y, s).finalize().tp,
        lambda y, s: round(
            sm.Sliced(sm.BinaryConfusion(threshold=t)).update(y, s, by=np.arange(len(y)) % 3).finalize().accuracy
            * len(y)
        ),
        lambda y, s: sm.Bootstrap(sm.BinaryConfusion(threshold=t), replicates=2).update(y, s).finalize().tp,
        lambda y, s: sm.BinaryConfusion(threshold=t).fold(sm.BinaryConfusion(threshold=t).prepare(y, s)).finalize().tp,
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("t", THRESHOLDS)
def test_a_threshold_is_compared_in_the_scores_precision(dtype, t):
    s = _scores(dtype)
    y = np.ones(len(s), np.int64)
    expected = _numpy_count(s, t)
    for i, count in enumerate(_binary_cases(t)):
        assert count(y, s) == expected, i
    Y = np.ones((len(s), 2), np.int64)
    S = np.column_stack([s, s[::-1]])
    r = sm.MultilabelConfusion(2, threshold=t).update(Y, S).finalize()
    assert int(np.sum(r.tp)) == _numpy_count(S, t)


def test_a_float32_score_reaches_its_own_threshold():
    s = np.float32([0.7])
    assert sm.BinaryConfusion(threshold=0.7).update([1], s).finalize().tp == 1
    assert sm.BinaryConfusion(threshold=0.7).update([1], s.astype(np.float64)).finalize().tp == 0  # 0.69999998...


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_threshold_against_tensors_compares_as_torch_does(dtype):
    torch = pytest.importorskip("torch")
    s = torch.from_numpy(_scores(getattr(np, dtype)))
    y = np.ones(len(s), np.int64)
    for t in THRESHOLDS:
        expected = _numpy_count(s, t)
        assert sm.BinaryConfusion(threshold=t).update(y, s).finalize().tp == expected
        assert sm.Evaluator(task="binary", scores="score", threshold=t).update(y, s).finalize().tp == expected
