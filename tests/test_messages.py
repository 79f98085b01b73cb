"""Messages that name the fix: where a value is refused but the call is what is
wrong, the error says what to pass instead."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    "call",
    [
        lambda: sm.confusion_matrix(["cat", "dog"], ["cat", "cat"]),
        lambda: sm.multiclass_scores(np.array(["a", "b"], dtype=object), ["a", "a"]),
        lambda: sm.MulticlassConfusion(3).update(["a", "b"], ["a", "b"]),
    ],
)
def test_string_classes_suggest_labels(call):
    with pytest.raises(TypeError, match=r"pass labels=\[\.\.\.\], the class labels in order"):
        call()


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
