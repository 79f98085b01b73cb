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


@pytest.mark.parametrize("scale", [1, 2**24])  # one rounding in float64, and Python integers past 2**53
def test_pair_quotients_written_over_their_counts_are_the_same(scale):
    rng = np.random.default_rng(scale + 1)
    k = 9
    support = rng.integers(1, 50, k) * scale
    u2 = np.zeros((k, k), np.int64)
    for a in range(k):
        for b in range(k):
            if a != b:
                u2[a, b] = int(rng.integers(0, 2 * int(support[a]) * int(support[b]) + 1))
    want = _quotients(u2, support)
    got = _quotients(u2, support, out=u2.view(np.float64))  # each row's counts read before its quotients land
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("pending", [False, True], ids=["loaded", "with pending rows"])
@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_finalize_holds_the_pair_numbers_once(multi_class, pending):
    """K classes: finalize holds the K * K pair counts, turned into the pair AUCs in place (and, with rows not yet in
    a run, that run's K * K block lengths), not copies of them nor K * K Python objects (5000 classes took 1.9 GB)."""
    import tracemalloc

    k, n = 1000, 300
    rng = np.random.default_rng(3)
    acc = sm.MulticlassRankAUC(k, multi_class=multi_class).update(rng.integers(0, k, n), rng.random((n, k)))
    if not pending:
        acc = sm.MulticlassRankAUC(k, multi_class=multi_class).load_state_dict(acc.state_dict())
    want = 8 * k * k * (2 if pending else 1) + (16 * k * n if pending else 0)  # and the pending rows' run
    tracemalloc.start()
    try:
        r = acc.finalize()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.pair_auc.shape == (k, k)
    assert peak < want + 1_000_000, (peak / k / k, "bytes a class pair")
