"""Messages that name the fix: where a value is refused but the call is what is
wrong, the error says what to pass instead."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import streammetrics as sm


def test_logits_to_the_binary_evaluator_suggest_scores_score():
    with pytest.raises(
        sm.BadValueError,
        match=r"p\[0\] = 2.3: probabilities must lie in \[0, 1\] "
        r"\(for unbounded scores such as logits, pass scores='score'\)",
    ) as err:
        sm.Evaluator(task="binary").update([1, 0], [2.3, -1.0])
    assert err.value.hint == "for unbounded scores such as logits, pass scores='score'"
    assert err.value.problem == "probabilities must lie in [0, 1]"  # the command adds its own hint
    assert sm.Evaluator(task="binary", scores="score").update([1, 0], [2.3, -1.0]).n == 2


def test_probabilities_to_a_confusion_without_threshold_suggest_one():
    with pytest.raises(
        sm.BadValueError,
        match=r"p\[0\] = 0.7: labels must be 0 or 1, got a fractional "
        r"value \(for scores or probabilities, pass threshold=",
    ):
        sm.BinaryConfusion().update([1, 0], [0.7, 0.2])
    with pytest.raises(sm.BadValueError) as err:  # a bad truth is not a matter of threshold
        sm.BinaryConfusion().update([1, 0.5], [1, 0])
    assert err.value.argument == "y" and err.value.hint is None


def test_string_classes_suggest_labels():
    with pytest.raises(TypeError, match=r"pass labels=\[\.\.\.\], the class labels in order"):
        sm.MulticlassConfusion(3).update(["a", "b"], ["a", "b"])
    # the one-shot functions take them as scikit-learn does: the sorted union of the labels
    assert sm.confusion_matrix(["cat", "dog"], ["cat", "cat"]).tolist() == [[1, 0], [1, 0]]
    r = sm.multiclass_scores(np.array(["a", "b"], dtype=object), ["a", "a"])
    assert r.meta["labels"] == ["a", "b"]


def test_probability_matrix_to_a_confusion_suggests_argmax_or_the_evaluator():
    P = np.full((2, 3), 1 / 3)
    for acc in (sm.MulticlassConfusion(3), sm.MulticlassConfusion(labels=["a", "b", "c"])):
        with pytest.raises(sm.BadShapeError, match=r"argmax.*Evaluator\(task='multiclass'\)"):
            acc.update([0, 1] if acc.labels is None else ["a", "b"], P)
        assert acc.n == 0
    assert sm.Evaluator(task="multiclass", n_classes=3).update([0, 1], P).n == 2


def test_hints_survive_pickling_and_moving_rows():
    import pickle

    err = sm.BadValueError("p", 3, 0.5, "labels must be 0 or 1", hint="pass threshold=")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.hint == "pass threshold="
    assert err.shifted(10, "partition 1").hint == "pass threshold="


def test_float32_precomputed_distances_round_as_float32():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    d64 = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    d32 = d64.astype(np.float32)
    d32[2, 2] = 1.19e-06  # float32 rounding noise on the diagonal: accepted, as scikit-learn does
    labels = np.arange(30) % 3
    got = sm.silhouette_samples(d32, labels, metric="precomputed")
    assert np.all(np.isfinite(got))
    bad = d64.copy()
    bad[2, 2] = 1.19e-06  # in float64 that is no rounding noise
    with pytest.raises(sm.BadValueError, match=r"X\[2, 2\].*diagonal must be zero"):
        sm.silhouette_samples(bad, labels, metric="precomputed")


@pytest.mark.parametrize(
    "call",
    [
        lambda: sm.BinaryConfusion(threshold=0.5).update([0.357, 0.8, 0.1], [1, 0, 1]),
        lambda: sm.Evaluator(task="binary").update(np.array([0.357, 0.8]), np.array([1.0, 0.0])),
        lambda: sm.RankAUC().update([0.357, 0.8], [True, False]),
    ],
)
def test_swapped_labels_and_scores_are_named(call):
    with pytest.raises(sm.BadValueError, match=r"y\[0\] = 0.357: labels must be 0 or 1, got a fractional value") as err:
        call()
    assert err.value.hint.startswith("are y and ")  # ... p swapped?, ... s swapped?
    assert "swapped" in err.value.hint


def test_fractional_labels_beside_scores_are_not_called_swapped():
    with pytest.raises(sm.BadValueError) as err:  # p holds no 0/1 labels: not a swap
        sm.BinaryConfusion(threshold=0.5).update([0.357, 1], [0.2, 0.9])
    assert err.value.hint is None


def test_logits_to_probability_scores_suggest_a_sigmoid():
    with pytest.raises(
        sm.BadValueError, match=r"p\[0\] = 2.3: probabilities must lie in \[0, 1\] \(for logits, apply a sigmoid"
    ):
        sm.ProbabilityScores().update([1, 0], [2.3, -1.0])
    with pytest.raises(sm.BadValueError, match="sigmoid"):
        sm.Calibration().update([1, 0], [0.5, -1.0])


def test_class_logits_to_the_multiclass_evaluator_suggest_a_softmax():
    ev = sm.Evaluator(task="multiclass", n_classes=3)
    with pytest.raises(
        sm.BadValueError, match=r"p\[0, 0\] = 2.0: class probabilities must lie in \[0, 1\] \(.*softmax"
    ):
        ev.update([1, 0], [[2.0, -1.0, 0.5], [0.0, 1.0, 2.0]])
    with pytest.raises(sm.BadValueError, match=r"p\[0\] sums to 0.8.*softmax"):
        ev.update([1, 0], [[0.2, 0.1, 0.5], [0.0, 1.0, 0.0]])
    assert ev.n == 0


def test_a_nan_score_is_called_missing_not_a_logit():
    for acc in (sm.Evaluator(task="binary"), sm.ProbabilityScores()):
        with pytest.raises(sm.BadValueError, match=r"p\[0\] = nan: probabilities must not be NaN") as err:
            acc.update([1, 0], [np.nan, 0.1])
        assert err.value.hint == "a missing value: drop or fill those rows first"
        assert "scores='score'" not in str(err.value) and "sigmoid" not in str(err.value)
    with pytest.raises(sm.BadValueError, match=r"p\[1, 2\] = nan: class probabilities .*drop or fill"):
        sm.Evaluator(task="multiclass", n_classes=3).update([1, 0], [[0.2, 0.3, 0.5], [0.5, 0.5, np.nan]])


def test_text_labels_to_a_binary_confusion_suggest_what_works():
    with pytest.raises(TypeError, match=r"np\.asarray\(y\) == 'cat' as 0/1 labels; for classes pass labels=\[\.\.\.\]"):
        sm.BinaryConfusion().update(["cat", "dog"], ["cat", "cat"])
    with pytest.raises(TypeError, match=r"y\[0\] = 'cat' \(str\).*np\.asarray\(y\) == 'cat'"):
        sm.BinaryConfusion(threshold=0.5).update(np.array(["cat", 1], dtype=object), [0.1, 0.2])
    with pytest.raises(TypeError, match=r"numbers as text: convert with np\.asarray\(y, dtype=float\)"):
        sm.RankAUC().update(["1", "0"], [0.1, 0.2])
    assert sm.RankAUC().update(np.asarray(["1", "0"], dtype=float), [0.1, 0.2]).n == 2
    y = np.asarray(["cat", "dog"]) == "cat"  # what the message suggests works
    assert sm.BinaryConfusion().update(y, [1, 1]).n == 2


def test_a_state_of_another_kind_is_named_with_its_article(tmp_path):
    from streammetrics._protocol.errors import a_an

    assert (a_an("Evaluator"), a_an("RankAUC"), a_an("update")) == ("an Evaluator", "a RankAUC", "an update")
    path = tmp_path / "ev.npz"
    sm.Evaluator(task="binary").update([1, 0], [0.9, 0.2]).save(path)
    with pytest.raises(sm.StateFileError, match="holds an Evaluator state, not a RankAUC"):
        sm.RankAUC.load(path)


@pytest.mark.parametrize(
    "module, extra", [("pandas", "pip install pandas"), ("matplotlib", 'pip install "streammetrics[plot]"')]
)
def test_a_missing_optional_module_names_its_install(monkeypatch, tmp_path, module, extra):
    report = sm.Evaluator(task="binary").update([1, 0, 1], [0.9, 0.2, 0.4]).finalize()
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    sliced = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update([1, 0], [0.9, 0.2], by=[1, 2]).finalize()
    calls = (
        [report.to_frame, report.parts["binary"].to_frame, sliced.to_frame]
        if module == "pandas"
        else [lambda: report.plot(str(tmp_path))]
    )
    for call in calls:
        with pytest.raises(ModuleNotFoundError, match=re.escape(extra)) as err:
            call()
        assert err.value.name == module
