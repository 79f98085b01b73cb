"""One-vs-one AUCs over many classes: exact quotients, one rounding each,
from numbers (no K**2 Python objects), and averages read row by row."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.metrics.multiclass_runs import _quotients


def _rounded(num: int, den: int) -> float:
    return float(Fraction(num, den)) if den else 0.0


@pytest.mark.parametrize("scale", [1, 2**10, 2**24])  # the last is past 2**53: Python integers divide
def test_pair_quotients_are_rounded_once(scale):
    rng = np.random.default_rng(scale)
    k = 7
    support = rng.integers(0, 50, k) * scale
    support[3] = 0  # an absent class: its denominators are guarded
    u2 = np.zeros((k, k), np.int64)
    for a in range(k):
        for b in range(k):
            if a != b:
                u2[a, b] = int(rng.integers(0, 2 * int(support[a]) * int(support[b]) + 1))
    per_class, pair = _quotients(u2, support)
    total = int(support.sum())
    sup = [int(s) for s in support]
    for a in range(k):
        den = 2 * (sup[a] * (total - sup[a]) or 1)
        assert per_class[a] == _rounded(int(u2[a].sum()), den)
        for b in range(k):
            assert pair[a, b] == (0.0 if a == b else _rounded(int(u2[a, b]), 2 * (sup[a] * sup[b] or 1)))


def test_one_vs_one_averages_match_the_definition():
    rng = np.random.default_rng(0)
    k, n = 40, 600
    y = rng.integers(0, k, n)
    y[y == 5] = 6  # class 5 absent
    P = rng.random((n, k))
    r = sm.MulticlassRankAUC(k, multi_class="ovo").update(y, P).finalize()
    pair = r.pair_auc
    iu, ju = np.triu_indices(k, 1)
    hand_till = (pair[iu, ju] + pair[ju, iu]) / 2
    support = np.bincount(y, minlength=k).astype(float)
    prevalence = support[iu] + support[ju]
    assert r.ovo_macro_auc == pytest.approx(hand_till.mean(), rel=1e-14)
    assert r.ovo_weighted_auc == pytest.approx(np.dot(prevalence, hand_till) / prevalence.sum(), rel=1e-14)
    for a, b in ((0, 1), (7, 30), (5, 6)):
        rows = (y == a) | (y == b)
        assert pair[a, b] == sm.auc(y[rows] == a, P[rows, a])
