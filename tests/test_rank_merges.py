"""The exact AUC's faster paths against independent references, bit for bit.

* the tournament merge of records (:func:`merge_records`) against a dictionary
  of sums made in the runs' order;
* the spilled reads (:func:`stream_merge`) over files and in-memory runs
  against merging whole runs;
* the one-shot count against brute force and scikit-learn;
* the first read of a spilled state with many runs, which merges them into
  one file, against the in-memory state, before and after more updates.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import streammetrics as sm
from streammetrics._kernels.keys import score_keys
from streammetrics._kernels.merges import merge_records
from streammetrics.metrics.ranking import spill as S
from streammetrics.metrics.ranking.points import u2_counts
from streammetrics.metrics.ranking.sorting import sort_classes

from .test_spill import _assert_same


def _runs(draw_or_rng, k, weighted, decimals):
    rng = draw_or_rng
    runs = []
    for _ in range(k):
        m = int(rng.integers(0, 60))
        s = np.round(rng.normal(size=m), decimals)
        if rng.random() < 0.2:  # the infinities are scores like any other
            s = np.append(s, rng.choice([-np.inf, np.inf], 2))
        s = np.unique(s)
        if weighted:
            ab = rng.random((2, s.shape[0]))
        else:
            ab = rng.integers(0, 5, (2, s.shape[0]))
        runs.append((s, ab))
    return runs


def _reference(runs):
    """Scores and masses of runs merged, each score's masses added in the runs' order."""
    sums = {}
    for s, ab in runs:
        for x, p, q in zip(s.tolist(), ab[0].tolist(), ab[1].tolist()):
            if x in sums:
                sums[x] = (sums[x][0] + p, sums[x][1] + q)
            else:
                sums[x] = (p, q)
    keys = sorted(sums)
    dtype = runs[0][1].dtype if runs else np.int64
    return np.array(keys, np.float64), np.array(
        [[sums[x][0] for x in keys], [sums[x][1] for x in keys]], dtype
    ).reshape(2, -1)


def _bits_equal(a, b) -> bool:
    return (
        a[0].shape == b[0].shape
        and np.array_equal(a[0].view(np.uint64), b[0].view(np.uint64))
        and np.array_equal(np.ascontiguousarray(a[1]).view(np.uint64), np.ascontiguousarray(b[1]).view(np.uint64))
    )


def _records(runs):
    """The runs as one buffer of records, with each run's first and end rows."""
    dtype = runs[0][1].dtype
    total = sum(s.shape[0] for s, _ in runs)
    rec = np.empty(total, S._record(dtype))
    starts, ends, o = [], [], 0
    for s, ab in runs:
        rec["s"][o : o + s.shape[0]] = s
        rec["p"][o : o + s.shape[0]] = ab[0]
        rec["q"][o : o + s.shape[0]] = ab[1]
        starts.append(o)
        o += s.shape[0]
        ends.append(o)
    return rec, np.array(starts, np.int64), np.array(ends, np.int64)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 40), weighted=st.booleans(), decimals=st.integers(0, 3))
def test_tournament_merge_of_records_equals_the_ordered_sums(seed, k, weighted, decimals):
    runs = _runs(np.random.default_rng(seed), k, weighted, decimals)
    rec, starts, ends = _records(runs)
    total = rec.shape[0]
    dtype = runs[0][1].dtype
    out_s, out_ab = np.empty(total), np.empty((2, total), dtype)
    sc, val = S._flat_views(rec)
    m = merge_records(sc, val, starts, ends, out_s, out_ab)
    assert _bits_equal((out_s[:m], out_ab[:, :m]), _reference(runs))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 12),
    weighted=st.booleans(),
    decimals=st.integers(0, 3),
    chunk=st.integers(1, 50),
)
def test_streamed_reads_of_files_and_runs_equal_the_whole_merge(seed, k, weighted, decimals, chunk, tmp_path_factory):
    rng = np.random.default_rng(seed)
    runs = _runs(rng, k, weighted, decimals)
    store = S.SpillStore(str(tmp_path_factory.mktemp("merge")))
    try:
        sources = [store.write(*r).records() if rng.random() < 0.6 else r for r in runs]
        want = _reference(runs)
        parts = list(S.stream_merge(sources, chunk))
        if parts:
            got = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts], axis=1))
            assert _bits_equal(got, want)
            for a, b in zip(parts, parts[1:]):  # chunks never split a score
                assert a[0][-1] < b[0][0]
    finally:
        store.close()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    front=st.integers(0, 200),
    gap=st.integers(0, 20),
    tail=st.integers(0, 200),
    levels=st.integers(1, 50),
)
def test_weighted_sort_moves_the_weights_in_a_stable_order(seed, front, gap, tail, levels):
    """Each class's keys sorted with their weights, equal keys in their order
    (the weights of a score are then summed in the order they came)."""
    rng = np.random.default_rng(seed)
    n = front + gap + tail
    keys = score_keys(rng.integers(0, levels, n) / levels - 0.5)
    vals = rng.random(n)
    got_k, got_v = keys.copy(), vals.copy()
    tk, tv = sort_classes(got_k, front, front + gap, got_v)
    assert tk.shape[0] >= max(front, tail) and tv.shape[0] >= max(front, tail)
    for part in (slice(0, front), slice(front + gap, n)):
        order = np.argsort(keys[part], kind="stable")
        assert np.array_equal(got_k[part], keys[part][order])
        assert np.array_equal(got_v[part].view(np.uint64), vals[part][order].view(np.uint64))


def _brute_u2(y, s):
    p, q = s[y == 1], s[y == 0]
    return int((2 * (p[:, None] > q[None, :]) + (p[:, None] == q[None, :])).sum())


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    decimals=st.integers(0, 3),
    share=st.floats(0, 1),
    zeros=st.booleans(),
)
def test_one_shot_count_equals_brute_force(seed, n, decimals, share, zeros):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < share).astype(np.int64)
    s = np.round(rng.normal(size=n), decimals)
    if zeros:  # -0.0 and +0.0 are one score
        s[rng.random(n) < 0.3] = -0.0
        s[rng.random(n) < 0.2] = 0.0
    p = int(y.sum())
    want = _brute_u2(y, s) / (2 * max(p * (n - p), 1))
    assert sm.auc(y, s) == want


def test_one_shot_auc_on_many_rows_equals_scikit_learn_and_the_rank_state():
    rng = np.random.default_rng(4)
    n = 1_000_000
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 3)  # many ties across the classes
    run = sm.RankAUC().update(y, s).flush()._strategy.run()
    n_pos = int(y.sum())
    assert sm.auc(y, s) == u2_counts(run[1], n_pos, n - n_pos) / (2 * n_pos * (n - n_pos))
    assert sm.auc(y, s) == pytest.approx(roc_auc_score(y, s), rel=1e-12)
    for y_bad, s_bad in (([0, 2], [0.1, 0.2]), ([0, 1], [0.1, np.nan])):
        with pytest.raises(ValueError):
            sm.auc(y_bad, s_bad)


def _spill_files(folder):
    return [n for n in os.listdir(folder) if n.endswith(S.SPILL_SUFFIX)]


@pytest.mark.parametrize("weighted", [False, True])
def test_first_read_of_many_runs_merges_them_and_changes_no_result(weighted, tmp_path):
    rng = np.random.default_rng(6)
    n = 6000
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 3)
    # dyadic weights: exact sums, so the state compares to the bit whatever the order of additions
    w = rng.integers(0, 9, n) / 4.0 if weighted else None
    half = n // 2
    spilled = sm.RankAUC(max_memory=4096, spill_dir=str(tmp_path))
    plain = sm.RankAUC()
    for lo in range(0, half, 250):
        for acc in (spilled, plain):
            acc.update(y[lo : lo + 250], s[lo : lo + 250], sample_weight=None if w is None else w[lo : lo + 250])
    strategy = spilled._strategy
    assert len(strategy.disk) + len(strategy.stack) >= 3
    r, e = spilled.finalize(), plain.finalize()
    assert len(strategy.disk) == 1 and not strategy.stack.runs  # merged into one file
    assert len(_spill_files(tmp_path)) == 1
    assert r.auc == e.auc and (r.n_pos, r.n_neg) == (e.n_pos, e.n_neg)
    assert r.best_threshold("f1") == e.best_threshold("f1")
    assert r.average_precision() == pytest.approx(e.average_precision(), rel=1e-13)
    assert spilled.finalize().as_dict() == r.as_dict()  # a second read: one file, same result
    for lo in range(half, n, 250):  # the state goes on as before
        for acc in (spilled, plain):
            acc.update(y[lo : lo + 250], s[lo : lo + 250], sample_weight=None if w is None else w[lo : lo + 250])
    _assert_same(spilled, plain)  # every array of the state, to the bit, and every result
    spilled.close()
    assert _spill_files(tmp_path) == []


def test_pending_rows_grow_past_their_first_room():
    from streammetrics import RankAUC

    rng = np.random.default_rng(7)
    y, s = rng.integers(0, 2, 5000), np.round(rng.normal(size=5000), 2)
    acc = RankAUC()
    for lo in range(0, 5000, 200):
        acc.update(y[lo : lo + 200], s[lo : lo + 200])
        assert acc._pending.keys.shape[0] <= max(acc._strategy.pending_limit(), 600)
    assert acc._pending.keys.shape[0] > 300  # it doubled as rows arrived
    assert acc.finalize().auc == sm.auc(y, s)
    assert acc == RankAUC().update(y, s)
