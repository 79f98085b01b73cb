"""RankAUC(max_memory=...): exact with sorted runs spilled to temporary files.

A budget of a few KB makes hypothesis-sized data spill; every result and the
state itself must be those of the in-memory exact accumulator, under any
batching, sharding and merge order; the files go with reset, close, del,
the end of a ``with`` block, and a stale file of a dead process is removed.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

import streammetrics as sm
from streammetrics._protocol import tempfiles
from streammetrics.metrics.ranking import spill as S

from .test_auc import brute_auc, brute_auc_sorted

BUDGET = 4096  # the smallest budget: spills after about 85 distinct scores


def _files(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(S.SPILL_SUFFIX))


def _feed(acc, y, s, w, cuts):
    start = 0
    for stop in list(cuts) + [len(y)]:
        stop = max(start, min(stop, len(y)))
        if stop > start:
            acc.update(y[start:stop], s[start:stop], sample_weight=None if w is None else w[start:stop])
        start = stop
    return acc


def _same(ra, rb) -> bool:
    """Equal results, field by field (NaN equal to NaN)."""
    da, db = dict(ra), dict(rb)

    def eq(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f")

    return da.keys() == db.keys() and all(eq(da[k], db[k]) for k in da)


def _assert_same(a, b):
    """Same state (every array, to the bit) and the same results."""
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert sa[k].dtype == sb[k].dtype and np.array_equal(sa[k], sb[k]), k
    ra, rb = a.finalize(), b.finalize()
    assert _same(ra, rb)
    for fa, fb in zip(a.roc_curve() + a.pr_curve(), b.roc_curve() + b.pr_curve()):
        assert np.array_equal(fa, fb)
    # a spilled state adds the terms of its average precision chunk by chunk
    # (compensated), the in-memory one pairwise: equal to 1e-13, not to the bit
    assert a.average_precision() == pytest.approx(b.average_precision(), rel=1e-13, abs=0)


@st.composite
def _data(draw, weighted=False):
    n = draw(st.integers(1, 700))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < draw(st.floats(0.0, 1.0))).astype(np.int64)
    digits = draw(st.sampled_from([1, 2, 3, 6]))  # many ties, or nearly none
    s = np.round(rng.normal(size=n) + y, digits)
    # dyadic weights: their sums are exact, so any order of additions gives the same bits
    w = rng.integers(0, 9, n) / 4.0 if weighted else None
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    return y, s, w, cuts


@settings(max_examples=30, deadline=None)
@given(data=_data(), budget=st.sampled_from([BUDGET, 6000, 20_000]))
def test_spilled_state_and_results_equal_in_memory(data, budget, tmp_path_factory):
    y, s, w, cuts = data
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, w, cuts)
    spl = _feed(sm.RankAUC(max_memory=budget, spill_dir=folder), y, s, w, cuts)
    _assert_same(mem, spl)
    assert spl.finalize().auc == brute_auc(y, s)
    if len(set(y.tolist())) == 2:
        assert spl.finalize().auc == pytest.approx(roc_auc_score(y, s), rel=1e-12)
        assert spl.average_precision() == pytest.approx(average_precision_score(y, s), rel=1e-12)
    spl.close()
    assert _files(folder) == []


def _joined(chunks):
    parts = list(chunks)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts], axis=1)


def test_files_hold_counts_in_the_narrowest_dtype_and_read_them_as_int64(tmp_path):
    """Counts below 2**32 are written as uint32 (16-byte records), larger ones as
    int64 (24 bytes), weights as float64; every file reads back as int64 counts
    or float64 weights, the same entries, and merges into the same run."""
    store = S.SpillStore(tmp_path)
    scores = np.array([0.1, 0.5, 0.7])
    small = np.array([[1, 0, 2**32 - 1], [3, 4, 0]], np.int64)
    large = np.array([[2**32, 0, 5], [0, 1, 2**40]], np.int64)
    weights = np.array([[0.5, 0.0, 1.5], [2.0, 0.25, 0.0]])
    runs = [store.write(scores, ab) for ab in (small, large, weights)]
    assert [r.dtype for r in runs] == [np.uint32, np.int64, np.float64]
    assert [r.nbytes for r in runs] == [48, 72, 72] and [r.peak for r in runs[:2]] == [2**32 - 1, 2**40]
    for run, ab in zip(runs, (small, large, weights)):
        got_s, got_ab = _joined(S.stream_merge([run], 2))  # read two at a time
        assert np.array_equal(got_s, scores) and got_ab.dtype == ab.dtype and np.array_equal(got_ab, ab)
    merged = _joined(S.stream_merge(runs[:2], 2))
    assert np.array_equal(merged[1], small + large) and merged[1].dtype == np.int64
    with pytest.raises(ValueError, match="does not fit"):
        store.write_chunks(np.uint32, [(scores, large)])  # the file is removed
    store.close()
    assert _files(tmp_path) == []


@pytest.mark.parametrize("weighted", [False, True])
def test_runs_are_written_in_chunks_of_records(weighted, tmp_path, monkeypatch):
    """A run larger than the records packed at a time is written chunk by chunk
    (five entries at a time here): the same files' contents, the same state."""
    monkeypatch.setattr(S, "PACK_ROWS", 5)
    rng = np.random.default_rng(4)
    n = 3000
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.round(rng.normal(size=n) + y, 2)
    w = rng.integers(0, 9, n) / 4.0 if weighted else None
    mem = _feed(sm.RankAUC(), y, s, w, [700, 1900])
    spl = _feed(sm.RankAUC(max_memory=BUDGET, spill_dir=tmp_path), y, s, w, [700, 1900])
    assert spl.spilled
    _assert_same(mem, spl)
    spl.close()


@settings(max_examples=25, deadline=None)
@given(data=_data(weighted=True))
def test_spilled_weighted_equals_in_memory(data, tmp_path_factory):
    y, s, w, cuts = data
    folder = tmp_path_factory.mktemp("spill")
    mem = _feed(sm.RankAUC(), y, s, w, cuts)
    spl = _feed(sm.RankAUC(max_memory=BUDGET, spill_dir=folder), y, s, w, cuts)
    _assert_same(mem, spl)
    r, c = spl.finalize(ci=0.95), mem.finalize(ci=0.95)
    assert _same(r, c)
    spl.close()


@settings(max_examples=25, deadline=None)
@given(data=_data(), shards=st.integers(1, 5), rnd=st.randoms(use_true_random=False), mixed=st.booleans())
def test_any_sharding_and_merge_order(data, shards, rnd, mixed, tmp_path_factory):
    y, s, _, cuts = data
    folder = tmp_path_factory.mktemp("spill")
    whole = _feed(sm.RankAUC(), y, s, None, cuts)
    parts = np.array_split(np.arange(len(y)), shards)
    accs = []
    for i, idx in enumerate(parts):
        # some shards in memory, some spilled: they merge, whatever the budget
        make = (lambda: sm.RankAUC()) if mixed and i % 2 else (lambda: sm.RankAUC(max_memory=BUDGET, spill_dir=folder))
        accs.append(_feed(make(), y[idx], s[idx], None, [c - idx[0] for c in cuts if idx.size]))
    rnd.shuffle(accs)
    total = accs[0].copy()
    for a in accs[1:]:
        total.merge(a)
    _assert_same(whole, total)
    tree = accs[0]
    for a in accs[1:]:
        tree = a + tree
    _assert_same(whole, tree)


def test_spilling_happens_and_run_count_is_bounded(tmp_path):
    rng = np.random.default_rng(0)
    acc = sm.RankAUC(max_memory=BUDGET, spill_dir=tmp_path)
    y = rng.integers(0, 2, 20_000)
    s = rng.normal(size=20_000) + y
    for i in range(0, 20_000, 300):
        acc.update(y[i : i + 300], s[i : i + 300])
        assert len(acc._strategy.disk) <= S.MAX_DISK_RUNS
        assert acc.nbytes <= BUDGET  # runs in memory and pending rows
    # unweighted counts below 2**32: 16-byte records (score, two uint32 counts)
    assert all(r.dtype == np.uint32 for r in acc._strategy.disk)
    assert acc.spilled and acc.spilled_bytes >= 16 * 20_000 * 0.9
    assert acc.finalize().auc == brute_auc_sorted(y, s)
    assert 1 <= len(_files(tmp_path)) <= S.MAX_DISK_RUNS
    acc.flush()
    assert len(_files(tmp_path)) == 1 and acc.nbytes == 16


def _spilled(folder, n=3000, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    acc = sm.RankAUC(max_memory=BUDGET, spill_dir=folder)
    for i in range(0, n, 250):
        acc.update(y[i : i + 250], s[i : i + 250])
    assert acc.spilled and _files(folder)
    return acc, y, s


def test_files_go_with_reset_close_del_and_with(tmp_path):
    acc, y, s = _spilled(tmp_path)
    acc.reset()
    assert _files(tmp_path) == [] and acc.n == 0
    acc.update(y, s)  # still usable, and spills again
    acc.update(y, s + 1)
    assert _files(tmp_path)
    acc.close()
    assert _files(tmp_path) == []
    acc, _, _ = _spilled(tmp_path)
    del acc
    gc.collect()
    assert _files(tmp_path) == []
    with sm.RankAUC(max_memory=BUDGET, spill_dir=tmp_path) as acc:
        acc.update(y, s)
        assert _files(tmp_path)
    assert _files(tmp_path) == []
    acc, _, _ = _spilled(tmp_path)
    acc.load_state_dict(sm.RankAUC().update([0, 1], [0.1, 0.2]).state_dict())
    assert _files(tmp_path) == []  # replaced state: its files go


def test_results_keep_their_snapshot_after_the_files_go(tmp_path):
    acc, y, s = _spilled(tmp_path)
    r = acc.finalize()
    acc.reset()
    fpr, tpr, _ = r.roc_curve()
    ref = sm.roc_curve(y, s)
    assert np.array_equal(fpr, ref[0]) and np.array_equal(tpr, ref[1])


def test_files_go_at_normal_exit_and_stale_ones_are_removed(tmp_path):
    code = (
        "import sys, numpy as np, streammetrics as sm\n"
        "acc = sm.RankAUC(max_memory=4096, spill_dir=sys.argv[1])\n"
        "acc.update(np.arange(2000) % 2, np.arange(2000.0))\n"
        "acc.update(np.arange(2000) % 2, np.arange(2000.0) + 0.5)\n"
        "assert acc.spilled\n"
        "if sys.argv[2] == 'kill':\n"
        "    import os; os._exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # the two processes run at once, each in a folder of its own
    exited, killed = tmp_path / "exited", tmp_path / "killed"
    runs = []
    for folder, end in ((exited, "exit"), (killed, "kill")):
        folder.mkdir()
        runs.append(subprocess.Popen([sys.executable, "-c", code, str(folder), end], env=env))
    assert [run.wait(timeout=300) for run in runs] == [0, 0]
    assert _files(exited) == []
    stale = _files(killed)
    assert stale  # a killed process leaves its files
    # a file of a live process (this one) and a foreign file stay
    mine = os.path.join(killed, f"{tempfiles.prefix(S.SPILL_STEM)}{os.getpid()}.0{S.SPILL_SUFFIX}")
    other = os.path.join(killed, "keep.smspill")
    for p in (mine, other):
        open(p, "wb").close()
    acc, _, _ = _spilled(killed)  # the first spill cleans the folder
    left = _files(killed)
    assert not set(stale) & set(left)
    assert os.path.basename(mine) in left and "keep.smspill" in left
    acc.close()


def test_pickle_save_load_copy_of_a_spilled_state(tmp_path):
    acc, y, s = _spilled(tmp_path)
    ref = sm.RankAUC().update(y, s)
    back = pickle.loads(pickle.dumps(acc))
    assert back.max_memory == BUDGET and back.spill_dir == str(tmp_path)
    _assert_same(ref, back)
    path = tmp_path / "state.smstate"
    acc.save(path)
    # the file holds the merged run: 24 bytes per distinct score, plus the header
    assert os.path.getsize(path) < 24 * len(np.unique(s)) + 4096
    loaded = sm.RankAUC.load(path)
    assert loaded.max_memory == BUDGET
    _assert_same(ref, loaded)
    dup = acc.copy()
    acc.close()
    _assert_same(ref, dup)
    assert dup.spilled
    dup.update(y, s)
    ref.update(y, s)
    _assert_same(ref, dup)


def test_hostile_file_of_a_spilled_state_is_rejected(tmp_path):
    from .test_hostile_states import _load_fails, forge

    acc, y, s = _spilled(tmp_path)
    state = acc.state_dict()
    settings_ = acc.settings
    assert settings_ == {"max_bins": None, "max_memory": BUDGET}
    bad = dict(state)
    bad["lo"] = state["lo"][::-1].copy()
    _load_fails(forge(tmp_path / "a.smstate", "RankAUC", settings_, bad), "not strictly increasing")
    bad = dict(state)
    c = state["counts"].copy()
    c[0, 3] += 5
    bad["counts"] = c
    _load_fails(forge(tmp_path / "b.smstate", "RankAUC", settings_, bad), "do not add up")
    for mem, match in ((-5, "at least 4096"), ("lots", "number of bytes"), (True, "bool")):
        _load_fails(forge(tmp_path / "c.smstate", "RankAUC", {"max_bins": None, "max_memory": mem}, state), match)
    _load_fails(
        forge(tmp_path / "d.smstate", "RankAUC", {"max_bins": 8, "max_memory": BUDGET}, state), "exclude each other"
    )
    _load_fails(
        forge(tmp_path / "e.smstate", "RankAUC", {"max_bins": None, "max_memory": BUDGET, "spill_dir": "/"}, state),
        "spill_dir|invalid settings",
    )
    acc.close()


@pytest.mark.parametrize(
    "value, nbytes",
    [
        (4096, 4096),
        ("1GB", 10**9),
        ("512MiB", 2**29),
        ("1.5 gb", 1_500_000_000),
        ("64 KiB", 65536),
        (np.int64(10_000), 10_000),
    ],
)
def test_memory_strings(value, nbytes):
    assert sm.RankAUC(max_memory=value).max_memory == nbytes


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"max_memory": 1.5e9}, TypeError, "max_memory must be an int"),
        ({"max_memory": True}, TypeError, "bool"),
        ({"max_memory": "12 parsecs"}, ValueError, "'12 parsecs'"),
        ({"max_memory": "-1GB"}, ValueError, "number of bytes"),
        ({"max_memory": 100}, ValueError, "at least 4096"),
        ({"max_memory": "1GB", "max_bins": 100}, ValueError, "exclude each other"),
        ({"spill_dir": "/tmp"}, ValueError, "give max_memory too"),
        ({"max_memory": "1GB", "spill_dir": 5}, TypeError, "spill_dir must be a folder"),
        ({"max_memory": "1GB", "spill_dir": "/no/such/folder"}, ValueError, "existing folder"),
    ],
)
def test_bad_settings(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sm.RankAUC(**kwargs)


def test_rejected_batch_leaves_a_spilled_state_as_it_was(tmp_path):
    acc, y, s = _spilled(tmp_path)
    before = acc.state_dict()
    files = _files(tmp_path)
    with pytest.raises(ValueError, match=r"s\[7\] = nan"):
        acc.update(np.zeros(10, np.int64), np.r_[np.zeros(7), np.nan, np.zeros(2)])
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before) and _files(tmp_path) == files
    acc.close()


def test_operating_points_and_delong_of_a_spilled_state(tmp_path):
    acc, y, s = _spilled(tmp_path)
    ref = sm.RankAUC().update(y, s)
    for t in (-1.0, 0.0, 0.7, 3.0):
        assert _same(acc.at_threshold(t), ref.at_threshold(t))
    assert _same(acc.best_threshold("f1"), ref.best_threshold("f1"))
    assert acc.partial_auc(0.3) == ref.partial_auc(0.3)
    assert _same(acc.finalize(ci=0.9), ref.finalize(ci=0.9))
    acc.close()


def test_weights_after_a_spill(tmp_path):
    # an unweighted spilled state turns weighted: its files are rewritten as weights
    acc, y, s = _spilled(tmp_path)
    ref = sm.RankAUC().update(y, s)
    w = np.full(len(y), 0.5)
    acc.update(y, s, sample_weight=w)
    ref.update(y, s, sample_weight=w)
    _assert_same(ref, acc)
    assert _same(acc.finalize(ci=0.95), ref.finalize(ci=0.95))
    acc.close()


def test_stream_merge_chunks_never_split_a_score(tmp_path):
    store = S.SpillStore(tmp_path)
    rng = np.random.default_rng(3)
    runs = []
    for _ in range(5):
        sc = np.unique(rng.integers(0, 300, 120)).astype(np.float64)
        ab = rng.integers(0, 4, (2, sc.shape[0]))
        ab[0] += 1
        runs.append((sc, ab))
    disk = [store.write(*r) for r in runs[:3]] + runs[3:]
    for chunk in (1, 2, 7, 1000):
        parts = list(S.stream_merge(disk, chunk))
        sc = np.concatenate([p[0] for p in parts])
        ab = np.concatenate([p[1] for p in parts], axis=1)
        assert np.all(np.diff(sc) > 0)
        ref = {}
        for r in runs:
            for v, a, b in zip(r[0], r[1][0], r[1][1]):
                p, q = ref.get(v, (0, 0))
                ref[v] = (p + a, q + b)
        keys = sorted(ref)
        assert np.array_equal(sc, keys)
        assert np.array_equal(ab, np.array([ref[k] for k in keys]).T)
    store.close()
    assert _files(tmp_path) == []


@pytest.mark.parametrize("weighted_side", ["none", "self", "other", "both"])
def test_merging_spilled_files_into_a_budgeted_accumulator(tmp_path, weighted_side):
    # the other's files are copied in chunks; weights on either side convert the counts
    rng = np.random.default_rng(9)

    def part(weighted):
        y = rng.integers(0, 2, 3000)
        s = np.round(rng.normal(size=3000) + y, 3)
        w = rng.integers(1, 5, 3000) / 2.0 if weighted else None
        spl = sm.RankAUC(max_memory=BUDGET, spill_dir=tmp_path)
        mem = sm.RankAUC()
        _feed(spl, y, s, w, range(0, 3000, 400))
        _feed(mem, y, s, w, range(0, 3000, 400))
        spl.update(y[:37], s[:37])  # pending rows too
        mem.update(y[:37], s[:37])
        assert spl.spilled
        return spl, mem

    a, ra = part(weighted_side in ("self", "both"))
    b, rb = part(weighted_side in ("other", "both"))
    a.merge(b)
    ra.merge(rb)
    _assert_same(ra, a)
    assert _same(a.finalize(ci=0.95), ra.finalize(ci=0.95))
    assert b.spilled  # the other keeps its files
    _assert_same(rb, b)
    b.close()
    a.close()
    assert _files(tmp_path) == []


def _resident_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads Linux's /proc")
def test_reading_a_spilled_run_keeps_the_file_out_of_resident_memory(tmp_path):
    """Pages of a run file are unmapped once copied out: merging a 48 MB file
    in 1 MB windows leaves the process's resident memory near the windows,
    and the data read are those written."""
    m = 2_000_000
    scores = np.arange(m, dtype=np.float64)
    ab = np.vstack([np.arange(m, dtype=np.int64) % 3, np.arange(m, dtype=np.int64) % 5])
    store = S.SpillStore(str(tmp_path))
    try:
        run = store.write(scores, ab)
        rec = run.records()
        before = _resident_bytes()
        total = np.zeros(2, np.int64)
        for _ in range(2):  # a second pass maps the released pages again
            for s, part in S.stream_merge([rec], 40_000):
                total += part.sum(axis=1)
                assert s.shape[0] <= 40_000
        grown = _resident_bytes() - before
        np.testing.assert_array_equal(total, 2 * ab.sum(axis=1))
        assert grown < 16 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MB reading 48 MB"
        # an in-memory run passes through untouched
        S.release((scores, ab), 0, 10)
    finally:
        store.close()
