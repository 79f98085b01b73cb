"""scikit-learn users' keywords and shapes: column vectors, average=,
zero_division=, pos_label=, multiclass F-beta, checked against scikit-learn."""

from __future__ import annotations

import os

import numpy as np
import pytest

import streammetrics as sm

skm = pytest.importorskip("sklearn.metrics")


# ------------------------------------------------------------ column vectors
def test_column_vectors_are_read_as_vectors():
    rng = np.random.default_rng(0)
    y = (rng.random(50) < 0.4).astype(np.int64)
    p = (rng.random(50) < 0.5).astype(np.int64)
    s = rng.random(50)
    w = rng.random(50)
    col = lambda a: a.reshape(-1, 1)  # noqa: E731
    assert sm.f1(col(y), col(p), sample_weight=col(w)) == sm.f1(y, p, sample_weight=w)
    assert sm.auc(col(y), col(s)) == sm.auc(y, s)
    assert sm.log_loss(col(y), col(s)) == sm.log_loss(y, s)
    assert sm.mse(col(s), col(w)) == sm.mse(s, w)
    np.testing.assert_array_equal(sm.confusion_matrix(col(y), col(p)), sm.confusion_matrix(y, p))
    acc = sm.MulticlassConfusion(labels=["a", "b"])
    acc.update(np.array([["a"], ["b"]]), [["a"], ["a"]])
    assert acc.finalize().accuracy == 0.5


def test_an_evaluator_reads_a_column_of_classes_as_the_vector_it_holds():
    # a one-column selection, df[["pred"]]: with K > 1 classes it holds the
    # predicted classes, not probabilities
    y = np.array([0, 1, 2, 2, 1, 0])
    p = np.array([0, 2, 2, 2, 1, 1])
    want = sm.Evaluator("multiclass", n_classes=3).update(y, p).finalize()
    got = sm.Evaluator("multiclass", n_classes=3).update(y.reshape(-1, 1), p.reshape(-1, 1)).finalize()
    assert got["accuracy"] == want["accuracy"] == 4 / 6
    assert got["macro_f1"] == want["macro_f1"]
    s = np.array([0.9, 0.2, 0.4, 0.8, 0.3, 0.6])
    yb = np.array([1, 0, 1, 1, 0, 0])
    assert (
        sm.Evaluator(task="binary").update(yb, s.reshape(-1, 1)).finalize()["auc"]
        == sm.Evaluator(task="binary").update(yb, s).finalize()["auc"]
    )


def test_rows_and_matrices_are_still_refused():
    with pytest.raises(ValueError, match=r"y must be a 1-D array, got shape \(1, 3\) \(use .ravel\(\)"):
        sm.f1(np.array([[1, 0, 1]]), [1, 0, 1])
    with pytest.raises(ValueError, match=r"got shape \(3, 3\)"):
        sm.f1(np.eye(3), [1, 0, 1])
    acc = sm.BinaryConfusion().update([1, 0], [1, 1])
    before = acc.copy()
    with pytest.raises(ValueError, match="1-D"):
        acc.update(np.ones((2, 3)), [1, 0])
    assert acc == before


# ---------------------------------------------- average=, zero_division=, pos_label=
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ONE_SHOT = {
    "precision": (sm.precision_score, skm.precision_score),
    "recall": (sm.recall_score, skm.recall_score),
    "f1": (sm.f1, skm.f1_score),
}


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=1e-12, atol=1e-15, equal_nan=True)


def _sk(fn, *args, **kw):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@st.composite
def _labelled(draw, max_classes=5):
    k = draw(st.integers(1, max_classes))
    n = draw(st.integers(1, 40))
    y = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    p = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    w = draw(st.none() | st.lists(st.floats(0.0, 10.0, allow_nan=False, allow_subnormal=False), min_size=n, max_size=n))
    if w is not None and sum(w) == 0:
        w = None
    return np.array(y), np.array(p), None if w is None else np.array(w)


@settings(max_examples=150, deadline=None)
@given(
    _labelled(),
    st.sampled_from(["macro", "micro", "weighted", None]),
    st.sampled_from([0, 1, np.nan]),
    st.sampled_from([0.5, 1.0, 2.0, 3.7]),
)
def test_averages_and_zero_division_match_scikit_learn(data, average, zd, beta):
    y, p, w = data
    P, R, F, _ = _sk(
        skm.precision_recall_fscore_support, y, p, beta=beta, average=average, sample_weight=w, zero_division=zd
    )
    _close(sm.precision_score(y, p, sample_weight=w, average=average, zero_division=zd), P)
    _close(sm.recall_score(y, p, sample_weight=w, average=average, zero_division=zd), R)
    _close(sm.fbeta(y, p, beta, sample_weight=w, average=average, zero_division=zd), F)
    _close(
        sm.fbeta(y, p, beta, sample_weight=w, average=average, zero_division=zd),
        _sk(skm.fbeta_score, y, p, beta=beta, average=average, sample_weight=w, zero_division=zd),
    )
    if beta == 1.0:
        _close(sm.f1(y, p, sample_weight=w, average=average, zero_division=zd), F)


@settings(max_examples=150, deadline=None)
@given(
    _labelled(max_classes=2), st.sampled_from([0, 1, np.nan]), st.sampled_from([0, 1]), st.sampled_from([0.5, 1.0, 2.0])
)
def test_binary_pos_label_and_zero_division_match_scikit_learn(data, zd, pos, beta):
    y, p, w = data
    P, R, F, _ = _sk(
        skm.precision_recall_fscore_support,
        y,
        p,
        beta=beta,
        average="binary",
        pos_label=pos,
        sample_weight=w,
        zero_division=zd,
        labels=[0, 1],
    )
    kw = dict(sample_weight=w, pos_label=pos, zero_division=zd)
    _close(sm.precision_score(y, p, **kw), P)
    _close(sm.recall_score(y, p, **kw), R)
    _close(sm.fbeta(y, p, beta, **kw), F)


def test_defaults_are_the_guarded_scores_exactly():
    rng = np.random.default_rng(5)
    for _ in range(20):
        y, p = rng.integers(0, 2, 30), rng.integers(0, 2, 30)
        w = rng.random(30)
        r = sm.BinaryConfusion().update(y, p, sample_weight=w).finalize()
        assert sm.precision_score(y, p, sample_weight=w) == r.precision
        assert sm.recall_score(y, p, sample_weight=w, zero_division=0) == r.recall
        assert sm.f1(y, p, sample_weight=w, average="binary") == r.f1
        assert sm.fbeta(y, p, 2, sample_weight=w) == r.fbeta(2)
    # the guard: nothing predicted, nothing true
    assert sm.precision_score([1, 0], [0, 0]) == 0.0
    assert sm.precision_score([1, 0], [0, 0], zero_division=1) == 1.0
    assert np.isnan(sm.precision_score([1, 0], [0, 0], zero_division=np.nan))
    assert sm.f1([0, 0], [0, 0]) == 0.0
    assert sm.f1([0, 0], [0, 0], zero_division=1) == 1.0
    assert sm.f1([1, 0], [0, 0], zero_division=1) == 0.0


def test_string_and_two_label_data():
    y = ["spam", "ham", "spam", "spam", "ham"]
    p = ["spam", "spam", "ham", "spam", "ham"]
    for ours, theirs in ONE_SHOT.values():
        assert ours(y, p, pos_label="spam") == pytest.approx(theirs(y, p, pos_label="spam"))
        assert ours(y, p, pos_label="ham") == pytest.approx(theirs(y, p, pos_label="ham"))
        _close(ours(y, p, average=None), theirs(y, p, average=None))
    # labels 1 and 2: the default pos_label=1 is one of them
    assert sm.f1([1, 2, 2], [1, 1, 2]) == pytest.approx(skm.f1_score([1, 2, 2], [1, 1, 2]))
    assert sm.f1([1, 2, 2], [1, 1, 2], pos_label=2) == pytest.approx(skm.f1_score([1, 2, 2], [1, 1, 2], pos_label=2))
    # 0/1 data with pos_label=0 score the zeros
    assert sm.recall_score([0, 0, 1], [0, 1, 1], pos_label=0) == 0.5
    # column vectors of strings
    col = np.array(y).reshape(-1, 1)
    assert sm.f1(col, np.array(p).reshape(-1, 1), pos_label="spam") == sm.f1(y, p, pos_label="spam")
    # strings score multiclass averages too
    animals_y = ["cat", "dog", "bird", "dog", "cat"]
    animals_p = ["cat", "dog", "dog", "dog", "bird"]
    for average in ("macro", "micro", "weighted"):
        assert sm.fbeta(animals_y, animals_p, 2, average=average) == pytest.approx(
            skm.fbeta_score(animals_y, animals_p, beta=2, average=average), rel=1e-12
        )


def test_keyword_errors():
    with pytest.raises(ValueError, match=r"pos_label='eggs' is not one of the labels \['ham', 'spam'\]"):
        sm.f1(["spam", "ham"], ["ham", "ham"], pos_label="eggs")
    with pytest.raises(ValueError, match="pos_label=1 is not one of the labels"):
        sm.f1(["spam", "ham"], ["ham", "ham"])
    with pytest.raises(ValueError, match=r"hold 3 labels \(0, 1, 2\), but average='binary'"):
        sm.f1([0, 1, 2], [0, 1, 2], pos_label=0)
    with pytest.raises(ValueError, match=r"y\[1\] = 2: labels must be 0 or 1"):
        sm.f1([0, 2, 1], [0, 1, 1])  # not two-label data: the 0/1 message stands
    with pytest.raises(ValueError, match="average must be one of"):
        sm.precision_score([1, 0], [1, 0], average="samples")
    with pytest.raises(TypeError, match="average must be a string or None"):
        sm.precision_score([1, 0], [1, 0], average=1)
    with pytest.raises(ValueError, match="zero_division must be 0, 1 or np.nan"):
        sm.recall_score([1, 0], [1, 0], zero_division=0.5)
    with pytest.raises(TypeError, match="zero_division must be"):
        sm.recall_score([1, 0], [1, 0], zero_division="warn")
    with pytest.raises(ValueError, match=r"p\[1\] = 0.7: class labels must be integers or strings"):
        sm.f1([0, 1, 2], [0, 0.7, 2], average="macro")
    with pytest.raises(TypeError, match="y holds strings and p numbers"):
        sm.f1(["a", "b"], [0, 1], average="macro")
    with pytest.raises(ValueError, match=r"sample_weight\[1\] = -1.0"):
        sm.f1([0, 1, 2], [0, 1, 2], average="macro", sample_weight=[1, -1, 1])
    with pytest.raises(ValueError, match="empty"):
        sm.f1([], [], average="macro")
    with pytest.raises(ValueError, match="different lengths"):
        sm.f1([0, 1, 2], [0, 1], average="micro")


def test_multiclass_fbeta_matches_scikit_learn():
    rng = np.random.default_rng(11)
    y, p, w = rng.integers(0, 4, 300), rng.integers(0, 4, 300), rng.random(300)
    for beta in (0.5, 1, 2):
        r = sm.multiclass_scores(y, p, sample_weight=w, beta=beta)
        _close(r.fbeta_per_class, skm.fbeta_score(y, p, beta=beta, average=None, sample_weight=w))
        for average in ("macro", "micro", "weighted"):
            want = skm.fbeta_score(y, p, beta=beta, average=average, sample_weight=w)
            assert r[f"{average}_fbeta"] == pytest.approx(want, rel=1e-12)
            assert r.fbeta(beta, average=average) == pytest.approx(want, rel=1e-12)
    acc = sm.MulticlassConfusion(4).update(y, p)
    r = acc.finalize()
    assert r.fbeta(1) == r.macro_f1
    _close(r.fbeta(1, average=None), r.f1)
    assert r.fbeta(1, average="weighted") == pytest.approx(r.weighted_f1, rel=1e-12)
    # a class declared but never seen is left out of the macro average
    r5 = sm.MulticlassConfusion(5).update(y, p).finalize()
    assert r5.fbeta(2) == pytest.approx(skm.fbeta_score(y, p, beta=2, average="macro"), rel=1e-12)
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        sm.multiclass_scores(y, p, beta=0)
    with pytest.raises(ValueError, match="average must be one of 'micro'"):
        r.fbeta(2, average="binary")


# ------------------------------------------------ the multiclass preset's options
def _proba(rng, n=400, k=4):
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n)
    P[np.arange(n), y] += 0.5
    return y, P / P.sum(axis=1, keepdims=True)


def test_multiclass_preset_top_k_and_auc(tmp_path):
    rng = np.random.default_rng(2)
    y, P = _proba(rng)
    w = rng.random(y.size)
    ev = sm.Evaluator("multiclass", n_classes=4, top_k=2, auc=True)
    ev.update(y[:150], P[:150], w[:150]).update(y[150:], P[150:], w[150:])
    r = ev.finalize()
    assert r.top_k_accuracy == pytest.approx(skm.top_k_accuracy_score(y, P, k=2, sample_weight=w), rel=1e-12)
    assert r.auc == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovr", sample_weight=w), rel=1e-12)
    assert set(r.parts) >= {"top_k", "auc", "multiclass"}
    # saved and loaded with the settings; merging shards gives one pass
    path = str(tmp_path / "ev.state")
    ev.save(path)
    back = sm.load_state(path)
    assert back.finalize().auc == r.auc and back.finalize().top_k_accuracy == r.top_k_accuracy
    a = sm.Evaluator("multiclass", n_classes=4, top_k=2, auc=True).update(y[:99], P[:99], w[:99])
    b = sm.Evaluator("multiclass", n_classes=4, top_k=2, auc=True).update(y[99:], P[99:], w[99:])
    assert (a + b).finalize().auc == pytest.approx(r.auc, rel=1e-12)
    with pytest.raises(ValueError):
        a.merge(sm.Evaluator("multiclass", n_classes=4, top_k=3, auc=True))


def test_multiclass_preset_defaults_leave_them_out():
    rng = np.random.default_rng(3)
    y, P = _proba(rng)
    r = sm.Evaluator("multiclass", n_classes=4).update(y, P).finalize()
    assert "top_k" not in r.parts and "auc" not in r.parts
    # hard labels: the probability members skip the batch
    r = sm.Evaluator("multiclass", n_classes=4, top_k=2, auc=True).update(y, P.argmax(1)).finalize()
    assert "top_k" not in r.parts and "auc" not in r.parts and r.accuracy == np.mean(P.argmax(1) == y)


def test_multiclass_preset_checks_the_options():
    with pytest.raises(ValueError, match="k must be at least 1"):
        sm.Evaluator("multiclass", n_classes=3, top_k=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        sm.Evaluator("multiclass", n_classes=3, top_k=1.5)
    with pytest.raises(TypeError, match="auc must be True or False"):
        sm.Evaluator("multiclass", n_classes=3, auc="yes")


def test_old_multiclass_states_load_without_the_options():
    import os

    # settings saved before top_k and auc existed: they load as off
    old = sm.Evaluator.from_settings({"task": "multiclass", "n_classes": 3, "labels": None})
    assert old._settings()["top_k"] is None and old._settings()["auc"] is False
    assert set(old._members) == {"class_probability", "multiclass"}
    fixture = os.path.join(os.path.dirname(__file__), "fixtures", "v1", "evaluator_multiclass_labels.state")
    loaded = sm.load_state(fixture)
    assert loaded._settings()["top_k"] is None and loaded._settings()["auc"] is False


# ------------------------------------------------------------- per-class plots
def test_per_class_curves_are_plotted_named_and_capped(tmp_path):
    pytest.importorskip("matplotlib")
    import pickle

    from streammetrics._protocol.result import RenderContext
    from streammetrics.report import plots

    rng = np.random.default_rng(8)
    y, P = _proba(rng, n=300, k=3)
    r = sm.MulticlassRankAUC(labels=["cat", "dog", "bird"]).update(np.array(["cat", "dog", "bird"])[y], P).finalize()
    paths = r.plot(str(tmp_path / "three"), RenderContext())
    assert [os.path.basename(p) for p in paths] == ["roc_per_class.png", "pr_per_class.png"]
    assert all(os.path.getsize(p) > 0 for p in paths)
    # the curves drawn are the accumulator's own
    drawn = {}
    real = plots.class_curves
    try:
        plots.class_curves = lambda curves, total, folder, roc: roc and drawn.update(curves=curves, total=total) or "x"
        y25, P25 = _proba(rng, n=600, k=25)
        acc = sm.MulticlassRankAUC(25).update(y25, P25)
        acc.finalize().plot(str(tmp_path / "many"), RenderContext())
    finally:
        plots.class_curves = real
    assert drawn["total"] == 25 and len(drawn["curves"]) == plots.MAX_CLASS_CURVES
    name, fpr, tpr, auc = drawn["curves"][3]
    want_fpr, want_tpr, _ = acc.roc_curve(3)
    assert name == "3" and np.array_equal(fpr, want_fpr) and np.array_equal(tpr, want_tpr)
    assert auc == pytest.approx(skm.roc_auc_score(y25 == 3, P25[:, 3]), rel=1e-12)
    # an unpickled result holds no state to draw from
    assert pickle.loads(pickle.dumps(r)).plot(str(tmp_path / "none"), RenderContext()) == []


# ------------------------------------------------------------- predict_proba pairs
def test_predict_proba_pairs_where_the_positive_column_is_plain():
    rng = np.random.default_rng(12)
    y = (rng.random(80) < 0.4).astype(np.int64)
    p = rng.random(80)
    pairs = np.column_stack([1 - p, p])
    assert sm.log_loss(y, pairs) == sm.log_loss(y, p)
    assert sm.brier(y, pairs) == sm.brier(y, p)
    assert sm.log_loss(y, pairs) == pytest.approx(skm.log_loss(y, pairs), rel=1e-12)
    cal = sm.Calibration(10).update(y, pairs).finalize()
    assert cal.ece == sm.Calibration(10).update(y, p).finalize().ece
    acc = sm.ProbabilityScores().update(y, p)
    before = acc.copy()
    with pytest.raises(ValueError, match=r"p\[0\] = 1.5"):
        acc.update(y[:2], [[0.0, 1.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="1-D"):
        acc.update(y[:2], np.full((2, 3), 1 / 3))  # three columns: not a pair
    assert acc == before


# ------------------------------------------------------- scikit-learn's names
def test_every_score_takes_scikit_learns_keyword_names():
    rng = np.random.default_rng(3)
    y = (rng.random(60) < 0.4).astype(np.int64)
    p = (rng.random(60) < 0.5).astype(np.int64)
    s = rng.random(60)
    assert sm.f1(y_true=y, y_pred=p) == sm.f1(y, p) == skm.f1_score(y_true=y, y_pred=p)
    assert sm.precision_score(y, y_pred=p, average="binary") == sm.precision_score(y, p)
    assert sm.auc(y_true=y, y_score=s) == sm.auc(y, s)
    assert sm.average_precision(y_true=y, y_score=s) == sm.average_precision(y, s)
    assert sm.log_loss(y_true=y, y_prob=s) == sm.log_loss(y, s) == sm.log_loss(y_true=y, y_proba=s)
    assert sm.brier(y_true=y, y_prob=s) == sm.brier(y, s)
    assert sm.mse(y_true=s, y_pred=s[::-1]) == sm.mse(s, s[::-1])
    from streammetrics import accuracy  # the names imported from the package take them too

    assert accuracy(y_true=y, y_pred=p) == sm.accuracy(y, p)
    labels = np.arange(60) % 3
    P = rng.dirichlet([1, 1, 1], 60)
    assert sm.top_k_accuracy(y_true=labels, y_score=P, k=2) == sm.top_k_accuracy(labels, P, k=2)
    with pytest.raises(TypeError, match="'y' twice"):
        sm.f1(y, y_true=y, y_pred=p)
    with pytest.raises(TypeError, match="'p' twice"):
        sm.f1(y, p, y_pred=p)
    assert "sample_weight" in str(__import__("inspect").signature(sm.f1))  # help() shows the function's own


def _case_ids():
    from .registry import CASES

    return [pytest.param(c, id=c.name) for c in CASES]


@pytest.mark.parametrize("case", _case_ids())
def test_help_shows_the_arguments_of_update_in_order(case):
    import inspect

    acc = case.make()
    if type(acc).update.__code__ is not sm.Accumulator.update.__code__:
        pytest.skip("a wrapper's own update (it takes keys, times or steps too)")
    for method in (type(acc).update, type(acc).prepare):
        params = list(inspect.signature(method).parameters)
        assert params == ["self", *(i.name for i in acc.inputs), "sample_weight"]


_B = lambda: sm.BinaryConfusion(threshold=0.5)  # noqa: E731
WRAPPERS = {
    "Sliced": (lambda: sm.Sliced(_B()), {"by": ["a", "a", "b", "b"]}),
    "Sliced(Evaluator)": (lambda: sm.Sliced(sm.Evaluator("binary")), {"by": ["a", "a", "b", "b"]}),
    "Bootstrap": (lambda: sm.Bootstrap(_B(), 5, seed=0), {}),
    "Rolling": (lambda: sm.Rolling(_B(), window=3), {}),
    "Rolling(key)": (lambda: sm.Rolling(_B(), window=3, key=True), {"key": [4, 3, 2, 1]}),
    "Decayed": (lambda: sm.Decayed(_B(), half_life=2), {}),
    "Windowed": (lambda: sm.Windowed(_B(), every=2), {}),
    "History": (lambda: sm.History(_B()), {"step": 1}),
}


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_wrappers_take_the_template_s_arrays_by_name(name):
    make, extra = WRAPPERS[name]
    y, p = np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.4])
    positional = make().update(y, p, **extra)
    for named in ({"y": y, "p": p}, {"y_true": y, "y_pred": p}, {"p": p, "y": y}):
        assert make().update(**named, **extra).same_results(positional)
        assert make().fold(make().prepare(**named, **extra)).same_results(positional)
    with pytest.raises(TypeError, match="unexpected argument 'q'"):
        make().update(y=y, q=p, **extra)
    with pytest.raises(TypeError, match="argument 'y' twice"):
        make().update(y, y=y, p=p, **extra)
