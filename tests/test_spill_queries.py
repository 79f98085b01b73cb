"""A spilled exact RankAUC answers its average precision and threshold queries
from its runs read chunk by chunk, never building its merged run in memory.

Tiny budgets make hypothesis-sized data spill. Every threshold query of an
unweighted spilled state must equal the in-memory state's, field for field
and bit for bit; average precision must agree to 1e-13 relative (its terms
are added in another order) and with scikit-learn.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

import streammetrics as sm
from streammetrics.metrics.ranking import exact as E

from .test_spill import _data, _feed, _files, _same

SCORES = ("f1", "mcc", "youden", "balanced_accuracy", "accuracy", "jaccard")


def _no_merged_run(monkeypatch):
    """Make building the merged run in memory an error."""

    def refuse(self, buf=None):
        raise AssertionError("the merged run was built in memory")

    monkeypatch.setattr(E.Exact, "run", refuse)


def _brute_ap(y, s):
    """Average precision by its definition: every distinct threshold from the top."""
    p = y.sum()
    if p == 0:
        return 0.0
    total, prev = 0.0, 0.0
    for t in np.unique(s)[::-1]:
        called = s >= t
        tp = (y[called] == 1).sum()
        recall = tp / p
        total += (recall - prev) * tp / called.sum()
        prev = recall
    return total


def _queries(a, b, y, s, rnd):
    """Every query of ``a`` equals ``b``'s (both accumulators or both results)."""
    ts = [np.inf, -np.inf, 0.0] + [float(v) for v in rnd.choice(s, min(5, s.size))]
    ts += [float(np.nextafter(t, np.inf)) for t in ts[3:]]
    for t in ts:
        assert _same(a.at_threshold(t), b.at_threshold(t)), t
    for name in ("recall", "precision", "fpr", "specificity"):
        for v in (0.0, 0.1, 0.5, 0.77, 0.9, 1.0, float(rnd.random())):
            try:
                ra = a.threshold_for(**{name: v})
            except ValueError as ea:
                with pytest.raises(ValueError) as eb:
                    b.threshold_for(**{name: v})
                assert str(ea) == str(eb.value)
                continue
            assert _same(ra, b.threshold_for(**{name: v})), (name, v)
    for score in SCORES:
        assert _same(a.best_threshold(score), b.best_threshold(score)), score
    cost = rnd.integers(-3, 6, (2, 2)).astype(float)
    assert _same(a.best_threshold(cost=cost), b.best_threshold(cost=cost))
    for max_fpr in (0.05, 0.3, 1.0, float(rnd.uniform(0.01, 1.0))):
        assert a.partial_auc(max_fpr) == b.partial_auc(max_fpr)
        assert a.partial_auc(max_fpr, mcclish=True) == b.partial_auc(max_fpr, mcclish=True)


@settings(max_examples=40, deadline=None)
@given(data=_data(), budget=st.sampled_from([4096, 6000, 20_000]), seed=st.integers(0, 2**32 - 1))
def test_spilled_queries_equal_in_memory_bit_for_bit(data, budget, seed, tmp_path_factory):
    y, s, _, cuts = data
    rnd = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, None, cuts)
    spl = _feed(sm.RankAUC(max_memory=budget, spill_dir=folder), y, s, None, cuts)
    rm = mem.finalize()
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        rs = spl.finalize()
        _queries(rs, rm, y, s, rnd)
        _queries(spl, mem, y, s, rnd)
        ap = rs.average_precision()
        assert rs.average_precision_bounds() == (ap, ap) and rs.exact
        assert spl.average_precision() == ap
    assert ap == pytest.approx(rm.average_precision(), rel=1e-13, abs=0)
    assert ap == pytest.approx(_brute_ap(y, s), rel=1e-12, abs=1e-300)
    if 0 < y.sum() < y.size:
        assert ap == pytest.approx(average_precision_score(y, s), rel=1e-12)
    spl.close()
    assert _files(folder) == []


@settings(max_examples=25, deadline=None)
@given(data=_data(weighted=True))
def test_spilled_weighted_average_precision_streams(data, tmp_path_factory):
    y, s, w, cuts = data
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, w, cuts)
    spl = _feed(sm.RankAUC(max_memory=4096, spill_dir=folder), y, s, w, cuts)
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        ap = spl.finalize().average_precision()
    assert ap == pytest.approx(mem.finalize().average_precision(), rel=1e-13, abs=0)
    spl.close()


@settings(max_examples=30, deadline=None)
@given(data=_data(weighted=True), budget=st.sampled_from([4096, 9000]), seed=st.integers(0, 2**32 - 1))
def test_spilled_weighted_queries_equal_in_memory_bit_for_bit(data, budget, seed, tmp_path_factory):
    # dyadic weights: every order of additions gives the same masses, so the
    # in-memory state's compensated sums are the reference to the bit
    y, s, w, cuts = data
    rnd = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, w, cuts)
    spl = _feed(sm.RankAUC(max_memory=budget, spill_dir=folder), y, s, w, cuts)
    rm = mem.finalize()
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        rs = spl.finalize()
        if w.sum() == 0:  # every score is undefined: both refuse
            for r in (rs, rm):
                with pytest.raises(ValueError, match="sum to zero"):
                    r.best_threshold("f1")
        else:
            _queries(rs, rm, y, s, rnd)
            _queries(spl, mem, y, s, rnd)
    spl.close()


def test_report_queries_of_a_spilled_state_do_not_merge(tmp_path):
    from streammetrics._protocol.result import RenderContext

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 20_000)
    s = rng.normal(size=y.size) + y
    spl = sm.RankAUC(max_memory=1 << 14, spill_dir=tmp_path).update(y, s)
    ref = sm.RankAUC().update(y, s).finalize()
    assert spl._strategy.spilled
    ctx = RenderContext(settings={"threshold": 0.5}, targets={"recall": [0.9], "precision": [0.8], "fpr": [0.1]})
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        r = spl.finalize()
        got = r.operating_points(ctx)
        values = r.report_values()
    want = ref.operating_points(ctx)
    assert [g[0] for g in got] == [w[0] for w in want]
    for (_, a), (_, b) in zip(got, want):
        assert _same(a, b)
    assert values["average_precision"] == pytest.approx(ref.average_precision(), rel=1e-13)
    spl.close()


@settings(max_examples=30, deadline=None)
@given(data=_data(weighted=True), weighted=st.booleans(), budget=st.sampled_from([4096, 9000]))
def test_spilled_delong_interval_streams_to_the_bit(data, weighted, budget, tmp_path_factory):
    y, s, w, cuts = data
    w = w if weighted else None
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, w, cuts)
    spl = _feed(sm.RankAUC(max_memory=budget, spill_dir=folder), y, s, w, cuts)
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        r = spl.finalize(ci=0.9)
    c = mem.finalize(ci=0.9)
    assert _same(r, c)
    spl.close()


def test_delong_blocks_span_chunks(tmp_path):
    # more points than a block (256) and chunks of a few dozen: blocks cross chunks
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 5000)
    s = rng.normal(size=y.size) + y
    w = rng.random(y.size)
    spl = sm.RankAUC(max_memory=4096, spill_dir=tmp_path).update(y, s, sample_weight=w)
    ref = sm.RankAUC().update(y, s, sample_weight=w)
    ops = spl.finalize()._engine()
    assert ops.block * ops.per_read < 256  # the windows a pass reads
    assert _same(spl.finalize(ci=0.95), ref.finalize(ci=0.95))
    spl.close()


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(300, 3000),
    seed=st.integers(0, 2**32 - 1),
    digits=st.sampled_from([2, 3, 6]),
    budget=st.sampled_from([4096, 9000]),
)
def test_spilled_weighted_queries_equal_those_of_the_merged_run(n, seed, digits, budget, tmp_path_factory):
    # any weights: the reference is the engine over the same merged run in memory
    from streammetrics.metrics.ranking.points import Points

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, digits)
    w = rng.random(n) * 10.0 ** rng.integers(-3, 4, n)
    spl = sm.RankAUC(max_memory=budget, spill_dir=tmp_path_factory.mktemp("spill"))
    _feed(spl, y, s, w, sorted(rng.integers(0, n, 4)))
    assume(spl.spilled)
    r = spl.finalize()
    ref = Points(r._engine().materialized(), n, True)
    with pytest.MonkeyPatch.context() as m:
        _no_merged_run(m)
        _queries(r._engine(), ref, y, s, rng)
    spl.close()
