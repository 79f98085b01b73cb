"""Evaluator: one accumulator bundling the members of a task."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import EvaluationReport, Evaluator, evaluate_batches, load_state

from .harness import (
    assert_results_equal,
    assert_state_unchanged,
    check_accumulator,
    check_rejected_batch,
    state_snapshot,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def _batches(*arrays, sizes=(7, 1, 30, 0, 62), weights=None):
    out, start = [], 0
    for s in sizes:
        args = tuple(a[start : start + s] for a in arrays)
        if weights is not None:
            out.append({"args": args, "sample_weight": weights[start : start + s]})
        else:
            out.append(args)
        start += s
    assert start == len(arrays[0])
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# ----------------------------------------------------------------- regression
def test_regression_protocol_and_sklearn(rng):
    y = rng.normal(size=100) * 5 + 3
    p = y + rng.normal(size=100)
    expected = {
        "mse": sklearn_metrics.mean_squared_error(y, p),
        "mae": sklearn_metrics.mean_absolute_error(y, p),
        "r2": sklearn_metrics.r2_score(y, p),
        "n": 100,
    }
    r = check_accumulator(lambda: Evaluator("regression"), _batches(y, p), expected)
    assert isinstance(r, EvaluationReport)
    assert r.task == "regression"


def test_regression_weighted(rng):
    y = rng.normal(size=100)
    p = y + rng.normal(size=100)
    w = rng.random(100)
    expected = {
        "mse": sklearn_metrics.mean_squared_error(y, p, sample_weight=w),
        "r2": sklearn_metrics.r2_score(y, p, sample_weight=w),
    }
    check_accumulator(lambda: Evaluator("regression"), _batches(y, p, weights=w), expected, expected_rtol=1e-10)


def test_regression_rejected_batch_unchanged(rng):
    ev = Evaluator("regression").update([1.0, 2.0], [1.5, 2.5])
    check_rejected_batch(ev, ([1.0, np.nan], [1.0, 2.0]), match=r"y\[1\]")
    check_rejected_batch(ev, ([1.0, 2.0], [1.0]), match="different lengths")
    check_rejected_batch(ev, ([1.0, 2.0], [1.0, 2.0]), {"sample_weight": [1.0, -1.0]}, match=r"sample_weight\[1\]")


# ----------------------------------------------------------------- multiclass
def _multiclass_data(rng, n=100, k=4):
    y = rng.integers(0, k, n)
    proba = rng.dirichlet(np.ones(k), n)
    return y, proba


def test_multiclass_probabilities_protocol_and_sklearn(rng):
    pytest.importorskip("streammetrics.metrics.multiclass")
    y, proba = _multiclass_data(rng)
    pred = proba.argmax(axis=1)
    onehot = np.eye(4)[y]
    expected = {
        "log_loss": sklearn_metrics.log_loss(y, proba, labels=range(4)),
        "brier": float(np.mean(np.sum((proba - onehot) ** 2, axis=1))),
        "accuracy": sklearn_metrics.accuracy_score(y, pred),
        "macro_f1": sklearn_metrics.f1_score(y, pred, average="macro"),
        "cohen_kappa": sklearn_metrics.cohen_kappa_score(y, pred),
        "n": 100,
    }
    r = check_accumulator(
        lambda: Evaluator("multiclass", n_classes=4), _batches(y, proba), expected, expected_rtol=1e-10
    )
    np.testing.assert_array_equal(r.matrix, sklearn_metrics.confusion_matrix(y, pred, labels=range(4)))


def test_multiclass_labels_and_mixed_batches(rng):
    pytest.importorskip("streammetrics.metrics.multiclass")
    y, proba = _multiclass_data(rng)
    pred = proba.argmax(axis=1)
    labels = Evaluator("multiclass", n_classes=4).update(y, pred).finalize()
    assert "log_loss" not in labels
    check_accumulator(lambda: Evaluator("multiclass", n_classes=4), _batches(y, pred))
    # one batch of labels, one of probabilities: the confusion is complete, the
    # probabilistic scores would cover only part of the rows, so they are left out
    mixed = Evaluator("multiclass", n_classes=4).update(y[:50], pred[:50]).update(y[50:], proba[50:])
    r = mixed.finalize()
    assert "log_loss" not in r
    assert_results_equal(r.parts["multiclass"], labels.parts["multiclass"])


def test_multiclass_rejections_leave_everything_unchanged(rng):
    pytest.importorskip("streammetrics.metrics.multiclass")
    y, proba = _multiclass_data(rng, n=20)
    ev = Evaluator("multiclass", n_classes=4).update(y, proba)
    bad = proba.copy()
    bad[3] = [0.5, 0.5, 0.5, 0.5]
    check_rejected_batch(ev, (y, bad), match=r"p\[3\] sums to 2.0")
    bad = proba.copy()
    bad[5, 2] = 1.5
    check_rejected_batch(ev, (y, bad), match=r"p\[5, 2\] = 1.5")
    check_rejected_batch(ev, (np.r_[y[:-1], 4], proba), match=r"y\[19\] = 4")
    check_rejected_batch(ev, (y, proba[:, :3]), match="3 columns but n_classes is 4")
    check_rejected_batch(ev, (y, np.r_[y[:-1], 9]), match=r"p\[19\] = 9")


def test_bad_batch_is_refused_before_any_member_folds(rng, monkeypatch):
    """A bad batch is refused before any member folds it: by the checks of
    ``prepare``, or by the kernel of the member that checks exactly the batch's
    inputs (folded first, it writes nothing when it refuses). No member can
    keep rows that another refused."""
    pytest.importorskip("streammetrics.metrics.multiclass")
    y, proba = _multiclass_data(rng, n=20)
    ev = Evaluator("multiclass", n_classes=4).update(y, proba)
    snap = state_snapshot(ev)
    folded = []
    for name, m in ev.members.items():

        def watched(batch, name=name, fold=m.fold):
            folded.append(name)
            return fold(batch)

        monkeypatch.setattr(m, "fold", watched)
    bad = proba.copy()
    bad[0] = [0.5, 0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match=r"p\[0\] sums to 2.0"):
        ev.update(y, bad)
    assert folded == [] and ev.n == 20
    assert_state_unchanged(ev, snap)
    assert ev.update(y, proba).n == 40
    assert all(m.n == 40 for m in ev.members.values())
    # the checking member folds by its own kernel; the others take the checked batch
    assert folded == ["calibration", "multiclass"]
    with pytest.raises(ValueError, match=r"p\[0\] sums to 2.0"):
        ev.fold(ev.prepare(y, bad))
    assert folded == ["calibration", "multiclass"] and ev.n == 40


def test_binary_update_is_checked_by_its_probability_member(rng, monkeypatch):
    """The binary preset's probability member checks 0/1 labels and
    probabilities in [0, 1] in its own kernel, so ``update`` runs no separate
    check over the batch; the result is that of ``prepare`` and ``fold``."""
    from streammetrics._kernels import checks

    y, p = _binary_data(rng)
    reference = Evaluator(task="binary")
    reference.fold(reference.prepare(y, p))

    def never(arr):
        raise AssertionError("a separate check ran")

    monkeypatch.setattr(checks, "first_not01", never)
    monkeypatch.setattr(checks, "first_outside01", never)
    ev = Evaluator(task="binary").update(y, p)
    assert ev == reference
    monkeypatch.undo()
    snap = state_snapshot(ev)
    with pytest.raises(ValueError, match=r"p\[2\] = 3.5.*scores='score'"):
        ev.update(y[:4], np.array([0.1, 0.2, 3.5, 0.4]))
    with pytest.raises(ValueError, match=r"y\[1\] = 2"):
        ev.update(np.array([0, 2, 1]), np.array([0.1, 0.2, 0.3]))
    assert_state_unchanged(ev, snap)


# --------------------------------------------------------------------- binary
def _binary_data(rng, n=200):
    y = (rng.random(n) < 0.35).astype(np.int64)
    p = np.clip(0.35 * y + rng.random(n) * 0.65, 0, 1).round(2)
    return y, p


def test_binary_protocol_and_sklearn(rng):
    pytest.importorskip("streammetrics.metrics.ranking")
    y, p = _binary_data(rng)
    pred = (p >= 0.5).astype(int)
    expected = {
        "auc": sklearn_metrics.roc_auc_score(y, p),
        "average_precision": sklearn_metrics.average_precision_score(y, p),
        "log_loss": sklearn_metrics.log_loss(y, p),
        "brier": sklearn_metrics.brier_score_loss(y, p),
        "f1": sklearn_metrics.f1_score(y, pred),
        "mcc": sklearn_metrics.matthews_corrcoef(y, pred),
        "n": 200,
    }
    r = check_accumulator(
        lambda: Evaluator("binary"), _batches(y, p, sizes=(13, 0, 87, 100)), expected, expected_rtol=1e-10
    )
    assert r.parts["binary"].fbeta(1) == pytest.approx(r.f1)
    assert r.auc_lower <= r.auc <= r.auc_upper


def test_binary_weighted(rng):
    pytest.importorskip("streammetrics.metrics.ranking")
    y, p = _binary_data(rng)
    w = rng.random(200)
    expected = {
        "auc": sklearn_metrics.roc_auc_score(y, p, sample_weight=w),
        "log_loss": sklearn_metrics.log_loss(y, p, sample_weight=w),
    }
    check_accumulator(
        lambda: Evaluator("binary"), _batches(y, p, weights=w, sizes=(50, 150)), expected, expected_rtol=1e-9
    )


def test_binary_scores_mode_takes_logits(rng):
    pytest.importorskip("streammetrics.metrics.ranking")
    y, p = _binary_data(rng)
    logits = np.log(np.clip(p, 1e-3, 1 - 1e-3) / (1 - np.clip(p, 1e-3, 1 - 1e-3)))
    ev = Evaluator("binary", scores="score").update(y, logits)
    r = ev.finalize()
    assert "log_loss" not in r and "brier" not in r
    assert r.settings["threshold"] == 0.0
    assert r.auc == pytest.approx(sklearn_metrics.roc_auc_score(y, logits))
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        Evaluator("binary", threshold=2.0)


def test_binary_rejected_batch_rolls_back_every_member(rng):
    pytest.importorskip("streammetrics.metrics.ranking")
    y, p = _binary_data(rng, 20)
    ev = Evaluator("binary").update(y, p)
    # BinaryConfusion (a threshold cut) would accept 1.3; ProbabilityScores refuses
    # it: the confusion counts must not keep the batch
    bad = p.copy()
    bad[7] = 1.3
    check_rejected_batch(ev, (y, bad), match=r"p\[7\] = 1.3: probabilities")
    check_rejected_batch(ev, (np.r_[y[:-1], 2], p), match=r"y\[19\] = 2")
    nan = p.copy()
    nan[4] = np.nan
    check_rejected_batch(ev, (y, nan), match=r"p\[4\]")
    assert ev.members["binary"].n == 20


def test_binary_predict_proba_matrix(rng):
    pytest.importorskip("streammetrics.metrics.ranking")
    y, p = _binary_data(rng)
    a = Evaluator("binary").update(y, np.column_stack([1 - p, p])).finalize()
    b = Evaluator("binary").update(y, p).finalize()
    assert_results_equal(a, b, rtol=0)


# ----------------------------------------------------------------- clustering
def test_clustering_protocol_and_sklearn(rng):
    pytest.importorskip("streammetrics.metrics.clustering")
    truth = rng.integers(0, 4, 150)
    pred = np.where(rng.random(150) < 0.7, truth, rng.integers(10, 14, 150))
    expected = {
        "ari": sklearn_metrics.adjusted_rand_score(truth, pred),
        "nmi": sklearn_metrics.normalized_mutual_info_score(truth, pred),
        "v_measure": sklearn_metrics.v_measure_score(truth, pred),
    }
    check_accumulator(
        lambda: Evaluator("clustering"),
        _batches(truth, pred, sizes=(50, 0, 100)),
        expected,
        expected_rtol=1e-9,
        rtol=1e-9,
    )
    with pytest.raises(ValueError, match="no sample_weight"):
        Evaluator("clustering").update([1, 2], [1, 2], sample_weight=[1.0, 1.0])


# ------------------------------------------------------------ settings, files
def test_settings_are_checked():
    with pytest.raises(ValueError, match="task must be one of"):
        Evaluator("forecasting")
    with pytest.raises(ValueError, match="threshold applies to task='binary' only"):
        Evaluator("regression", threshold=0.3)
    with pytest.raises(ValueError, match="n_classes applies"):
        Evaluator("regression", n_classes=3)
    with pytest.raises(ValueError, match="needs n_classes"):
        pytest.importorskip("streammetrics.metrics.multiclass")
        Evaluator("multiclass")


@pytest.mark.parametrize(
    "members, starved",
    [
        ({"ps": sm.ProbabilityScores(), "reg": sm.RegressionErrors()}, "'reg'"),
        ({"reg": sm.RegressionErrors(), "ps": sm.ProbabilityScores()}, "'ps'"),
        ({"bc": sm.BinaryConfusion(), "mc": sm.MulticlassConfusion(2)}, "'mc'"),
        ({"auc": sm.RankAUC(), "reg": sm.RegressionErrors()}, "'reg'"),
    ],
)
def test_members_no_batch_could_reach_are_refused(members, starved):
    # each takes 1-D (y, p) alone, but no one conversion checks a batch for both:
    # the batch would go to the first member's form and the other get no row
    with pytest.raises(ValueError, match=rf"check them differently .* and {starved} would never get a row"):
        Evaluator(members)


def test_members_sharing_one_checked_form_take_every_row(rng):
    y = rng.integers(0, 2, 50)
    p = rng.random(50)
    ev = Evaluator({"auc": sm.RankAUC(), "ps": sm.ProbabilityScores(), "bc": sm.BinaryConfusion(threshold=0.5)})
    ev.update(y, p)
    assert {name: m.n for name, m in ev.members.items()} == {"auc": 50, "ps": 50, "bc": 50}


def test_merge_with_other_settings_refused_and_unchanged(rng):
    pytest.importorskip("streammetrics.metrics.multiclass")
    y, proba = _multiclass_data(rng, n=10, k=3)
    a = Evaluator("multiclass", n_classes=3).update(y, proba)
    b = Evaluator("multiclass", n_classes=4).update(y, np.c_[proba, np.zeros(10)])
    sa, sb = state_snapshot(a), state_snapshot(b)
    with pytest.raises(ValueError, match="different settings"):
        a.merge(b)
    with pytest.raises(ValueError, match="task='multiclass' vs 'regression'"):
        a.merge(Evaluator("regression"))
    assert_state_unchanged(a, sa)
    assert_state_unchanged(b, sb)


def test_load_state_reads_an_evaluator_and_checks_members(tmp_path, rng):
    y = rng.normal(size=50)
    ev = Evaluator("regression").update(y, y + 1)
    path = tmp_path / "ev.state"
    ev.save(path)
    back = load_state(path)
    assert isinstance(back, Evaluator) and back == ev
    assert back.finalize()["mse"] == pytest.approx(1.0)
    assert pickle.loads(pickle.dumps(ev.finalize()))["mse"] == ev.finalize()["mse"]

    # a state whose member counts disagree with the evaluator's is refused
    arrays = dict(np.load(path))
    arrays["n"] = np.array([49], np.int64)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match="counts 50 rows but the evaluator 49"):
        load_state(bad)
    # a state with a missing member entry is refused
    arrays = dict(np.load(path))
    del arrays["regression.sums"]
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match="do not match"):
        load_state(bad)


def test_report_output(rng):
    y = rng.normal(size=30)
    r = Evaluator("regression").update(y, y * 0.9).finalize()
    doc = json.loads(r.to_json())
    assert doc["task"] == "regression" and doc["n"] == 30
    assert doc["metrics"]["mse"] == pytest.approx(r["mse"])
    assert set(doc["metrics"]) == set(r) - {"n"}
    text = str(r)
    assert text == r.to_text()
    assert "regression evaluation of 30 rows" in text and "rmse" in text
    assert dict(r)["r2"] == r.r2
    with pytest.raises(AttributeError):
        r.r2 = 1.0


def test_evaluate_batches(rng):
    y = rng.normal(size=40)
    p = y + 0.5
    r = evaluate_batches([(y[:10], p[:10]), (y[10:], p[10:], np.ones(30))], task="regression")
    assert r["mae"] == pytest.approx(0.5)
    assert r.n == 40
    with pytest.raises(ValueError, match="batch 1 must be a"):
        evaluate_batches([(y, p), y], task="regression")
    with pytest.raises(ValueError, match="no observations"):
        evaluate_batches([], task="regression")


def test_repr_and_empty():
    ev = Evaluator("regression")
    assert repr(ev) == "Evaluator(task='regression'): n=0"
    with pytest.raises(ValueError, match="no observations"):
        ev.finalize()
    assert ev.update([], []).n == 0
    assert "rmse=" in repr(ev.update([1.0], [2.0]))


def test_multiclass_with_string_labels():
    labels = ["cat", "dog", "bird"]
    ev = sm.Evaluator(task="multiclass", labels=labels)
    ev.update(["cat", "dog", "bird", "dog"], ["cat", "bird", "bird", "dog"])
    ref = sm.MulticlassConfusion(labels=labels).update(["cat", "dog", "bird", "dog"], ["cat", "bird", "bird", "dog"])
    assert ev.finalize()["macro_f1"] == ref.finalize().macro_f1
    # class probabilities: columns follow the labels' order
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    evp = sm.Evaluator(task="multiclass", labels=labels).update(["cat", "dog"], proba)
    r = evp.finalize()
    assert r["accuracy"] == 0.5
    assert r["log_loss"] == pytest.approx(-(np.log(0.7) + np.log(0.3)) / 2, rel=1e-14)
    snapshot = {k: v.copy() for k, v in evp._state.items()}
    with pytest.raises(ValueError, match=r"y\[0\] = 'cow': not one of the 3 labels"):
        evp.update(["cow"], proba[:1])
    assert all(np.array_equal(snapshot[k], v) for k, v in evp._state.items())
    with pytest.raises(ValueError, match="labels applies to task='multiclass' only"):
        sm.Evaluator(task="binary", labels=[0, 1])


def test_multiclass_labels_state_round_trips(tmp_path):
    ev = sm.Evaluator(task="multiclass", labels=["a", "b"]).update(["a", "b", "b"], ["a", "a", "b"])
    ev.save(tmp_path / "s")
    back = sm.load_state(tmp_path / "s")
    assert back == ev and back.finalize()["accuracy"] == ev.finalize()["accuracy"]


def test_members_of_different_strictness_all_fold_every_row():
    """A batch is checked for the strictest member's form first: probabilities in
    [0, 1] feed both the AUC and the probability scores, and a value outside
    [0, 1] is refused for both rather than folded into the AUC alone."""
    ev = Evaluator({"auc": sm.RankAUC(), "ps": sm.ProbabilityScores()})
    ev.update([0, 1, 1], [0.2, 0.7, 0.4])
    assert {k: m.n for k, m in ev.members.items()} == {"auc": 3, "ps": 3}
    with pytest.raises(ValueError, match=r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]"):
        ev.update([0, 1], [0.2, 1.5])
    assert {k: m.n for k, m in ev.members.items()} == {"auc": 3, "ps": 3}
    r = ev.finalize()
    assert r.log_loss == pytest.approx(sm.log_loss([0, 1, 1], [0.2, 0.7, 0.4]))
