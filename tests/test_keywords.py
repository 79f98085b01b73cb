"""scikit-learn users' keywords and shapes: column vectors, average=,
zero_division=, pos_label=, multiclass F-beta, checked against scikit-learn."""

from __future__ import annotations

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
