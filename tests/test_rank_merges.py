"""The exact AUC's faster paths against independent references, bit for bit.

* the tournament merge of records (:func:`merge_records`) against the scan of every
  head (:func:`merge_k`) and a dictionary of sums made in the runs' order;
* the spilled reads (:func:`stream_merge`, :func:`descending`) over files and
  in-memory runs against merging whole runs;
* the run of a run and sorted keys written on two threads against one;
* the one-shot count on float64 scores (cut at a sampled median, two threads)
  against brute force and scikit-learn;
* the first read of a spilled state with many runs, which merges them into
  one file, against the in-memory state, before and after more updates.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import roc_auc_score

import streammetrics as sm
from streammetrics._kernels import rank as K
from streammetrics.metrics.ranking import spill as S
from streammetrics.metrics.ranking.exact import run_of_sorted
from streammetrics.metrics.ranking.sorting import (NUMPY_MAX, auc_u2_scores, run_into_across, run_of_keys_numpy,
                                                  sort_classes, u2_across, u2_sorted, u2_sorted_numpy)
from streammetrics.metrics.ranking.streamed import descending

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
    return np.array(keys, np.float64), np.array([[sums[x][0] for x in keys],
                                                  [sums[x][1] for x in keys]], dtype).reshape(2, -1)


def _bits_equal(a, b) -> bool:
    return (a[0].shape == b[0].shape and np.array_equal(a[0].view(np.uint64), b[0].view(np.uint64))
            and np.array_equal(np.ascontiguousarray(a[1]).view(np.uint64),
                               np.ascontiguousarray(b[1]).view(np.uint64)))


def _records(runs):
    """The runs as one buffer of records, with each run's first and end rows."""
    dtype = runs[0][1].dtype
    total = sum(s.shape[0] for s, _ in runs)
    rec = np.empty(total, S._record(dtype))
    starts, ends, o = [], [], 0
    for s, ab in runs:
        rec["s"][o:o + s.shape[0]] = s
        rec["p"][o:o + s.shape[0]] = ab[0]
        rec["q"][o:o + s.shape[0]] = ab[1]
        starts.append(o)
        o += s.shape[0]
        ends.append(o)
    return rec, np.array(starts, np.int64), np.array(ends, np.int64)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 40), weighted=st.booleans(),
       decimals=st.integers(0, 3))
def test_tournament_merge_of_records_equals_the_scan_and_the_ordered_sums(seed, k, weighted, decimals):
    runs = _runs(np.random.default_rng(seed), k, weighted, decimals)
    rec, starts, ends = _records(runs)
    total = rec.shape[0]
    dtype = runs[0][1].dtype
    out_s, out_ab = np.empty(total), np.empty((2, total), dtype)
    sc, val, _ = S._flat_views(rec)
    m = K.merge_records(sc, val, starts, ends, out_s, out_ab)
    got = (out_s[:m], out_ab[:, :m])
    assert _bits_equal(got, _reference(runs))
    scan_s, scan_ab = np.empty(total), np.empty((2, total), dtype)
    bounds = np.append(starts, total)
    m2 = K.merge_k(rec["s"].copy(), np.vstack([rec["p"], rec["q"]]), bounds, scan_s, scan_ab)
    assert _bits_equal(got, (scan_s[:m2], scan_ab[:, :m2]))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 12), weighted=st.booleans(),
       decimals=st.integers(0, 3), chunk=st.integers(1, 50))
def test_streamed_reads_of_files_and_runs_equal_the_whole_merge(seed, k, weighted, decimals, chunk,
                                                                tmp_path_factory):
    rng = np.random.default_rng(seed)
    runs = _runs(rng, k, weighted, decimals)
    store = S.SpillStore(str(tmp_path_factory.mktemp("merge")))
    try:
        sources = [store.write(*r).records() if rng.random() < 0.6 else r for r in runs]
        want = _reference(runs)
        for parts in (list(S.stream_merge(sources, chunk)), list(descending(sources, chunk))[::-1]):
            if not parts:
                assert want[0].shape[0] == 0
                continue
            got = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts], axis=1))
            assert _bits_equal(got, want)
            for a, b in zip(parts, parts[1:]):  # chunks never split a score
                assert a[0][-1] < b[0][0]
    finally:
        store.close()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), decimals=st.integers(0, 3), signed_zero=st.booleans())
def test_run_written_on_two_threads_equals_one(seed, decimals, signed_zero):
    rng = np.random.default_rng(seed)

    def keys(m):
        x = np.round(rng.normal(size=m), decimals)
        if signed_zero:
            x[rng.random(m) < 0.2] = -0.0
        return np.sort(K.score_keys(x))

    run = run_of_sorted(keys(int(rng.integers(0, 300))), keys(int(rng.integers(0, 300))))
    kp, kn = keys(int(rng.integers(0, 300))), keys(int(rng.integers(0, 300)))
    cap = run[0].shape[0] + kp.shape[0] + kn.shape[0]
    out = []
    for threads in (False, True):
        bits, ab = np.empty(cap, np.uint64), np.empty((2, cap), np.int64)
        m = run_into_across(run, kp, kn, bits, ab, threads=threads)
        out.append((bits[:m].view(np.float64), ab[:, :m]))
    assert _bits_equal(out[0], out[1])
    # and the count across them, threaded or not, is the count of that run
    u2, _, _ = u2_across(run, kp, kn, threads=True)
    assert u2 == u2_across(run, kp, kn, threads=False)[0] == int(K.u2_int(out[0][1]))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_pos=st.integers(0, 300), n_neg=st.integers(0, 300),
       decimals=st.integers(0, 3), signed_zero=st.booleans())
def test_numpy_count_and_run_of_small_states_equal_the_kernels(seed, n_pos, n_neg, decimals, signed_zero):
    """Small states are counted and made into a run by numpy (no kernel to
    compile on a first use): the same 2U, and the same run to the bit, as the
    kernels that larger states take."""
    rng = np.random.default_rng(seed)

    def scores(m):
        x = np.round(rng.normal(size=m) * 10.0 ** rng.integers(-3, 4), decimals)
        if signed_zero:
            x[rng.random(m) < 0.2] = -0.0
            x[rng.random(m) < 0.1] = 0.0
        return x

    sp, sn = scores(n_pos), scores(n_neg)
    kp, kn = np.sort(K.score_keys(sp)), np.sort(K.score_keys(sn))
    want = int(K.u2_sorted(kp, kn))
    assert u2_sorted_numpy(kp, kn) == want == u2_sorted(kp, kn)
    # the one-shot count sorts the scores themselves as float64 (-0.0 as +0.0)
    fp, fn = np.sort(sp + 0.0), np.sort(sn + 0.0)
    assert u2_sorted_numpy(fp, fn) == int(K.u2_sorted(fp, fn)) == want
    cap = n_pos + n_neg
    out = []
    for fill in (lambda b, a: int(K.run_into(np.zeros(0, np.uint64), np.zeros((2, 0), np.int64), kp, kn, b, a)),
                 lambda b, a: run_of_keys_numpy(kp, kn, b, a)):
        bits, ab = np.empty(cap, np.uint64), np.empty((2, cap), np.int64)
        m = fill(bits, ab)
        out.append((bits[:m].view(np.float64), ab[:, :m]))
    assert _bits_equal(out[0], out[1])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), front=st.integers(0, 200), gap=st.integers(0, 20),
       tail=st.integers(0, 200), levels=st.integers(1, 50))
def test_small_weighted_sort_moves_the_weights_as_the_radix_sort(seed, front, gap, tail, levels):
    """Up to NUMPY_MAX weighted rows are sorted by numpy's stable argsort: each
    class's keys and weights in the radix kernel's order, ties included (the
    weights of a score are then summed in the same order)."""
    rng = np.random.default_rng(seed)
    n = front + gap + tail
    keys = K.score_keys(rng.integers(0, levels, n) / levels - 0.5)
    vals = rng.random(n)
    want_k, want_v = keys.copy(), vals.copy()
    room = max(front, tail)
    K.sort_parts_payload(want_k, want_v, front, front + gap, np.empty(room, np.uint64), np.empty(room))
    got_k, got_v = keys.copy(), vals.copy()
    tk, tv = sort_classes(got_k, front, front + gap, got_v, threads=False)
    assert tk.shape[0] >= room and tv.shape[0] >= room
    for a, b in ((slice(0, front), slice(0, front)), (slice(front + gap, n), slice(front + gap, n))):
        assert np.array_equal(got_k[a], want_k[b]) and np.array_equal(got_v[a].view(np.uint64),
                                                                       want_v[b].view(np.uint64))


def test_numpy_and_kernel_routes_meet_at_the_size_limit():
    rng = np.random.default_rng(5)
    for total in (NUMPY_MAX - 1, NUMPY_MAX, NUMPY_MAX + 1):
        s = np.round(rng.normal(size=total), 2)
        y = rng.random(total) < 0.4
        kp, kn = np.sort(K.score_keys(s[y])), np.sort(K.score_keys(s[~y]))
        assert u2_sorted(kp, kn) == int(K.u2_sorted(kp, kn)) == u2_sorted_numpy(kp, kn) == _brute_u2(y, s)
        empty = (np.zeros(0), np.zeros((2, 0), np.int64))
        bits, ab = np.empty(total, np.uint64), np.empty((2, total), np.int64)
        m = run_into_across(empty, kp, kn, bits, ab, threads=False)
        kbits, kab = np.empty(total, np.uint64), np.empty((2, total), np.int64)
        km = int(K.run_into(empty[0].view(np.uint64), empty[1], kp, kn, kbits, kab))
        assert _bits_equal((bits[:m].view(np.float64), ab[:, :m]), (kbits[:km].view(np.float64), kab[:, :km]))
        assert m == np.unique(s + 0.0).size and ab[:, :m].sum() == total


def _brute_u2(y, s):
    p, q = s[y == 1], s[y == 0]
    return int((2 * (p[:, None] > q[None, :]) + (p[:, None] == q[None, :])).sum())


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), decimals=st.integers(0, 3),
       share=st.floats(0, 1), zeros=st.booleans())
def test_one_shot_count_on_float_scores_equals_brute_force(seed, n, decimals, share, zeros):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < share).astype(np.int64)
    s = np.round(rng.normal(size=n), decimals)
    if zeros:  # -0.0 and +0.0 are one score
        s[rng.random(n) < 0.3] = -0.0
        s[rng.random(n) < 0.2] = 0.0
    want = (_brute_u2(y, s), int(y.sum()))
    assert auc_u2_scores(y, s, threads=False) == want
    assert auc_u2_scores(y, s, threads=True) == want


def test_one_shot_auc_on_many_rows_equals_scikit_learn_and_the_serial_count():
    rng = np.random.default_rng(4)
    n = 1_000_000
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 3)  # many ties across the classes
    u2, n_pos = auc_u2_scores(y, s, threads=True)
    assert (u2, n_pos) == auc_u2_scores(y, s, threads=False)
    assert sm.auc(y, s) == u2 / (2 * n_pos * (n - n_pos))
    assert sm.auc(y, s) == pytest.approx(roc_auc_score(y, s), rel=1e-12)
    assert auc_u2_scores(np.array([0, 2]), np.array([0.1, 0.2])) is None
    assert auc_u2_scores(np.array([0, 1]), np.array([0.1, np.nan])) is None


def test_partition_below_moves_the_smaller_values_first():
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=1000), 1)
    y = x.copy()
    j = K.partition_below(y, 0.0)
    assert j == int((x < 0.0).sum())
    assert (y[:j] < 0.0).all() and (y[j:] >= 0.0).all()
    assert np.array_equal(np.sort(y), np.sort(x))


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
            acc.update(y[lo:lo + 250], s[lo:lo + 250],
                       sample_weight=None if w is None else w[lo:lo + 250])
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
            acc.update(y[lo:lo + 250], s[lo:lo + 250],
                       sample_weight=None if w is None else w[lo:lo + 250])
    _assert_same(spilled, plain)  # every array of the state, to the bit, and every result
    spilled.close()
    assert _spill_files(tmp_path) == []


def test_pending_rows_grow_past_the_preallocated_room(monkeypatch):
    from streammetrics import RankAUC

    monkeypatch.setattr(RankAUC, "_PREALLOCATE_BATCH", 100)
    monkeypatch.setattr(RankAUC, "_PREALLOCATE_ROWS", 300)
    rng = np.random.default_rng(7)
    y, s = rng.integers(0, 2, 5000), np.round(rng.normal(size=5000), 2)
    acc = RankAUC()
    for lo in range(0, 5000, 200):
        acc.update(y[lo:lo + 200], s[lo:lo + 200])
        assert acc._pending.keys.shape[0] <= max(acc._limit(), 600)
    assert acc._pending.keys.shape[0] > 300  # it doubled as rows arrived
    assert acc.finalize().auc == sm.auc(y, s)
    assert acc == RankAUC().update(y, s)
