"""Honest inputs at the edges: masked arrays, inferred classes, big settings."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm


def test_masked_arrays_with_masked_values_are_refused_not_scored():
    masked = np.ma.array([1, 0, 1], mask=[0, 0, 1])
    with pytest.raises(TypeError, match="masked array with masked values"):
        sm.BinaryConfusion().update(masked, [1, 0, 0])
    whole = np.ma.array([1, 0, 1], mask=[0, 0, 0])  # nothing masked: the data
    assert sm.BinaryConfusion().update(whole, [1, 0, 0]).n == 3
    assert sm.BinaryConfusion().update(masked.compressed(), [1, 0]).n == 2


@pytest.mark.parametrize(
    "y, p, where",
    [
        ([0, 0], [1.0, np.nan], r"p\[1\] = nan"),
        ([0, -3], [1, 0], r"y\[1\] = -3"),
        ([0.5, 1.0], [1, 0], r"y\[0\] = 0.5"),
    ],
)
def test_inferred_classes_blame_the_value_that_is_no_class(y, p, where):
    with pytest.raises(sm.BadValueError, match=where + ": classes must be integers >= 0"):
        sm.confusion_matrix(y, p)


def test_a_block_larger_than_the_data_is_clamped():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    labels = np.arange(100) % 3
    want = sm.silhouette_score(X, labels)
    assert sm.silhouette_score(X, labels, block_size=100_000) == pytest.approx(want, rel=1e-12)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    assert sm.silhouette_score(D, labels, metric="precomputed", block_size=10**9) == pytest.approx(
        sm.silhouette_score(D, labels, metric="precomputed"), rel=1e-12
    )


def test_many_bins_do_not_reserve_a_huge_buffer():
    acc = sm.RankAUC(max_bins=10**9).update(np.zeros(70_000, int), np.random.default_rng(1).random(70_000))
    assert acc.n == 70_000 and acc.nbytes < 64 * 2**20
