"""Extremes of honest input: scores do not change with the scale of the weights
or of the points, and a batch whose totals would overflow is refused whole."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

RNG = np.random.default_rng(11)
N = 2000
Y = RNG.integers(0, 2, N)
P = RNG.random(N)
W = RNG.random(N) + 0.01
YR = RNG.normal(size=N) * 3
PR = YR + RNG.normal(size=N)
YC = RNG.integers(0, 3, N)
PM = RNG.dirichlet(np.ones(3), N)

WEIGHTED = {
    "BinaryConfusion": (
        lambda: sm.BinaryConfusion(threshold=0.5),
        (Y, P),
        ("accuracy", "precision", "recall", "f1", "mcc", "balanced_accuracy"),
    ),
    "ProbabilityScores": (sm.ProbabilityScores, (Y, P), ("log_loss", "brier")),
    "RegressionErrors": (sm.RegressionErrors, (YR, PR), ("mse", "mae", "mape", "r2")),
    "RankAUC": (sm.RankAUC, (Y, P), ("auc",)),
    "Calibration": (sm.Calibration, (Y, P), ("ece", "mce", "reliability", "resolution")),
    "MulticlassConfusion": (
        lambda: sm.MulticlassConfusion(3),
        (YC, PM.argmax(axis=1)),
        ("accuracy", "mcc", "cohen_kappa", "macro_f1", "balanced_accuracy"),
    ),
    "MulticlassRankAUC": (
        lambda: sm.MulticlassRankAUC(3),
        (YC, PM),
        ("ovr_macro_auc", "ovr_weighted_auc", "ovo_macro_auc", "macro_average_precision"),
    ),
}


@pytest.mark.parametrize("name", WEIGHTED)
@pytest.mark.parametrize("scale", [1e-200, 2.0**-600, 1e200, 2.0**700])
def test_scores_do_not_change_with_the_scale_of_the_weights(name, scale):
    make, arrays, fields = WEIGHTED[name]
    base = make().update(*arrays, sample_weight=W).finalize()
    scaled = make().update(*arrays, sample_weight=W * scale).finalize()
    for f in fields:
        assert scaled[f] == pytest.approx(base[f], rel=1e-12, abs=1e-15), f


@pytest.mark.parametrize("name", ["BinaryConfusion", "ProbabilityScores", "RegressionErrors"])
def test_a_batch_whose_weighted_totals_overflow_is_refused_whole(name):
    make, arrays, _ = WEIGHTED[name]
    acc = make().update(arrays[0][:10], arrays[1][:10], sample_weight=W[:10])
    before = acc.state_dict()
    w = np.full(10, 1.5e308)
    with pytest.raises(ValueError, match="would overflow float64"):
        acc.update(arrays[0][:10], arrays[1][:10], sample_weight=w)
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    acc.update(arrays[0][10:20], arrays[1][10:20])  # and the accumulator goes on
    assert acc.n == 20


MERGED = {
    **{k: WEIGHTED[k] for k in ("BinaryConfusion", "ProbabilityScores", "Calibration", "MulticlassConfusion")},
    "ClassCalibration": (lambda: sm.ClassCalibration(3), (YC, PM), ()),
    "ClassProbabilityScores": (lambda: sm.ClassProbabilityScores(3), (YC, PM), ()),
    "TopKAccuracy": (lambda: sm.TopKAccuracy(2), (YC, PM), ()),
    "MultilabelConfusion": (lambda: sm.MultilabelConfusion(2), (np.c_[Y, 1 - Y], np.c_[P > 0.5, P < 0.2]), ()),
}


@pytest.mark.parametrize("name", MERGED)
def test_a_merge_whose_weighted_totals_overflow_is_refused_as_one_pass_is(name):
    make, arrays, _ = MERGED[name]
    w = np.ones(10)
    # finite totals in each shard, twice that past float64 (a multilabel row
    # adds its weight once for each wrong label: two here)
    w[0] = 6e307 if name == "MultilabelConfusion" else 1e308
    part = tuple(a[:10] for a in arrays)
    acc = make().update(*part, sample_weight=w)
    with pytest.raises(ValueError, match="overflow float64"):  # one pass: at update or finalize
        make().update(*(np.concatenate([a, a]) for a in part), sample_weight=np.r_[w, w]).finalize()
    before = acc.state_dict()
    with pytest.raises(ValueError, match="the merged states would overflow float64"):
        acc.merge(acc.copy())
    with pytest.raises(ValueError, match="the merged states would overflow float64"):
        acc + acc
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("name", ["ClassCalibration", "TopKAccuracy", "MultilabelConfusion", "MulticlassConfusion"])
def test_a_batch_whose_weighted_cells_overflow_is_refused_whole_and_its_scores_too(name):
    make, arrays, _ = MERGED[name]
    acc = make().update(*(a[:10] for a in arrays), sample_weight=W[:10])
    before = acc.state_dict()
    w = np.full(10, 1e308)  # every cell's total past float64
    with pytest.raises(ValueError, match="overflow float64"):
        acc.update(*(a[10:20] for a in arrays), sample_weight=w)
    after = acc.state_dict()
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)
    acc.update(*(a[10:20] for a in arrays), sample_weight=W[10:20])  # and it goes on
    assert acc.n == 20 and acc.finalize() is not None


def test_regression_values_whose_squares_overflow_are_refused_at_update():
    acc = sm.RegressionErrors()
    with pytest.raises(ValueError, match=r"\|y\| or \|p\| near 1e154"):
        acc.update([1e200], [0.0])
    assert acc.n == 0
    assert acc.update([1.0, 2.0], [1.5, 2.0]).finalize().mse == pytest.approx(0.125)
    big = sm.RegressionErrors().update([4e153, -4e153], [-4e153, 4e153])
    with pytest.raises(ValueError, match="the merged state"):
        big.merge(sm.RegressionErrors().update([4e153, -4e153], [-4e153, 4e153]))
    assert big.n == 2  # the merge changed nothing


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean", "manhattan", "cosine"])
@pytest.mark.parametrize("scale", [1e154, 1e200, 1e-160, 1e-300])
def test_silhouette_does_not_change_with_the_scale_of_the_points(metric, scale):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4)) + np.repeat(np.eye(4)[:3] * 3, 20, axis=0)
    labels = np.repeat([0, 1, 2], 20)
    base = sm.silhouette_samples(X, labels, metric=metric)
    got = sm.silhouette_samples(X * scale, labels, metric=metric)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, base, rtol=1e-9, atol=1e-12)


def test_cosine_silhouette_of_parallel_vectors_is_zero():
    V = np.outer(np.arange(1, 9), [1.0, 2.0, 3.0])
    s = sm.silhouette_samples(V, np.arange(8) % 2, metric="cosine")
    np.testing.assert_array_equal(s, np.zeros(8))


@pytest.mark.parametrize(
    "call",
    [
        lambda y, p: sm.confusion_matrix(y, p),
        lambda y, p: sm.adjusted_rand_score(y, p),
        lambda y, p: sm.MulticlassConfusion(3).update(y, p).finalize(),
    ],
)
def test_float16_labels_are_read_without_warnings(call):
    import warnings

    y = np.array([0, 1, 2, 1], np.float16)
    p = np.array([0, 2, 1, 1], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(y, p)
        with pytest.raises(ValueError, match=r"\[1\] = inf"):
            call(y, np.array([0, np.inf, 1, 1], np.float16))


def test_subnormal_weights_are_refused_with_the_fix():
    acc = sm.BinaryConfusion(threshold=0.5).update([1, 0], [0.7, 0.2], sample_weight=[1.0, 2.0])
    before = acc.state_dict()
    with pytest.raises(ValueError, match=r"sample_weight\[1\] = .*subnormal.*rescale the weights"):
        acc.update([1, 0], [0.7, 0.2], sample_weight=[1e-300, 1e-320])
    assert all(np.array_equal(before[k], v) for k, v in acc.state_dict().items())
    acc.update([1, 0], [0.7, 0.2], sample_weight=[0.0, 2.3e-308])  # zero and normal: fine


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_one_shot_multiclass_auc_does_not_change_with_the_scale_of_the_weights(scale):
    base = sm.multiclass_auc(YC, PM, sample_weight=W)
    scaled = sm.multiclass_auc(YC, PM, sample_weight=W * scale)
    for f in ("ovr_macro_auc", "ovo_weighted_auc"):
        assert scaled[f] == pytest.approx(base[f], rel=1e-12), f
    assert scaled.support == pytest.approx(base.support * scale, rel=1e-12)


def test_weights_whose_pair_masses_overflow_give_an_error_not_nan():
    # the exact AUC's totals overflow past 1e308; the bounded AUC keeps products of
    # weights in its state: either way a clear error, never a NaN or a division error
    with pytest.raises(ValueError, match="overflow float64 .* rescale the weights"):
        sm.RankAUC().update(Y[:10], P[:10], sample_weight=np.full(10, 1e308)).finalize()
    for scale in (1e-200, 1e200):
        acc = sm.RankAUC(max_bins=16).update(Y, P, sample_weight=W * scale)
        with pytest.raises(ValueError, match="pair masses of the bounded AUC"):
            acc.finalize()


def _state_equal(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.Evaluator(task="regression"),
        lambda: sm.Bootstrap(sm.RegressionErrors(), replicates=20, seed=0),
        lambda: sm.Sliced(sm.Evaluator(task="regression")),
        lambda: sm.Sliced(sm.RegressionErrors()),
    ],
    ids=["Evaluator", "Bootstrap", "Sliced(Evaluator)", "Sliced(RegressionErrors)"],
)
def test_a_merge_one_part_refuses_changes_no_part(make):
    # one slice (or member, or replicate) whose merged totals overflow: the
    # parts merged before it were left merged, and the state was inconsistent
    acc = make()
    # squared errors near float64's top: finite in one shard, past it in two (in
    # a bootstrap, in the replicates that draw a row several times)
    y, p = np.array([1.0, 2.0, 0.5]), np.array([3.0, 1.2e154, 0.25])
    if isinstance(acc, sm.Bootstrap):
        y, p = np.zeros(3), np.full(3, 4e153)
    if isinstance(acc, sm.Sliced):
        acc.update(y, p, by=["x", "y", "x"])
    elif isinstance(acc, sm.Bootstrap):
        acc.update(y, p, key=np.arange(3))
    else:
        acc.update(y, p)
    before = acc.state_dict()
    with pytest.raises(ValueError, match="would overflow float64"):
        acc.merge(acc.copy())
    assert _state_equal(before, acc.state_dict())
    assert acc.n == 3


def test_a_sliced_merge_whose_weighted_slice_totals_overflow_is_refused_whole():
    w = np.array([1e308, 1.0, 1.0])
    acc = sm.Sliced(sm.ProbabilityScores()).update([1, 0, 1], [0.9, 0.2, 0.7], sample_weight=w, by=["a", "b", "b"])
    before = acc.state_dict()
    with pytest.raises(ValueError, match="would overflow float64"):
        acc + acc
    assert _state_equal(before, acc.state_dict())
