"""RetrievalScores past ``max_memory``: open rows in files sorted by query, scored a range of ids at a time."""

from __future__ import annotations

import gc
import glob
import json
import os
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.metrics.ranking.spill import SpillStore

from .harness import merge_peak

BIG = np.iinfo(np.int64).max


def _rows(n, seed=0, queries=300):
    rng = np.random.default_rng(seed)
    q = rng.integers(-5, queries, n)
    q[:2] = np.array([BIG, -BIG - 1])[: min(n, 2)]  # ids at both ends of int64
    return q, rng.integers(0, 3, n).astype(float), rng.random(n).round(2), rng.random(n)


def _fed(acc, rows, cuts, weighted=True):
    q, rel, s, w = rows
    for a, b in zip([0, *cuts], [*cuts, q.shape[0]]):
        acc.update(q[a:b], rel[a:b], s[a:b], sample_weight=w[a:b] if weighted else None)
    return acc


def _same(a, b, exact: bool):
    ra, rb = a.finalize(), b.finalize()
    for k in ra:
        if exact or k in ("queries", "empty_queries", "n", "k"):
            assert np.array_equal(np.asarray(ra[k]), np.asarray(rb[k])), k
        else:
            np.testing.assert_allclose(ra[k], rb[k], rtol=1e-12, atol=1e-15, err_msg=k)


def _files(folder):
    return glob.glob(os.path.join(folder, ".streammetrics-*.smspill"))


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 3000),
    st.lists(st.integers(0, 3000), max_size=6),
    st.booleans(),
    st.sampled_from([4096, 20_000]),
    st.booleans(),
)
def test_spilled_rows_score_as_in_memory(n, cuts, weighted, budget, per_query):
    rows = _rows(n, seed=n)
    cuts = sorted(c for c in cuts if c < n)
    kw = dict(k=(1, 3, 10), per_query=per_query)
    spilled = _fed(sm.RetrievalScores(**kw, max_memory=budget), rows, cuts, weighted)
    plain = _fed(sm.RetrievalScores(**kw), rows, [], weighted)
    assert spilled.spilled == (n * 32 > budget // 2)
    _same(spilled, plain, exact=not weighted and not spilled.spilled)
    if per_query:  # every query's own scores are those in memory, to the bit
        got, want = spilled.query_table(), plain.query_table()
        assert all(np.array_equal(got[k], want[k]) for k in want)


def test_shards_merge_copy_pickle_and_save_keep_the_rows(tmp_path):
    rows = _rows(6000)
    whole = _fed(sm.RetrievalScores(), rows, [])
    halves = [sm.RetrievalScores(max_memory=8192, spill_dir=tmp_path) for _ in range(2)]
    _fed(halves[0], tuple(a[:2500] for a in rows), [700])
    _fed(halves[1], tuple(a[2500:] for a in rows), [1000, 3000])
    assert all(h.spilled for h in halves) and _files(tmp_path)
    merged = halves[1].copy().merge(halves[0])
    _same(merged, whole.copy(), exact=False)
    _same(pickle.loads(pickle.dumps(merged)), whole, exact=False)
    merged.save(tmp_path / "state.npz")
    loaded = sm.RetrievalScores.load(tmp_path / "state.npz")
    assert loaded.settings == merged.settings and "spill_dir" not in loaded.settings
    _same(loaded, whole, exact=False)
    for h in halves:
        h.reset()
    assert not halves[0].spilled
    del halves, merged, loaded
    gc.collect()
    assert _files(tmp_path) == []


def test_a_spilled_shard_merges_file_to_file_within_the_budget(tmp_path):
    """Merging a spilled state copies its files a chunk at a time: the memory a merge takes does not grow with the
    rows the other state holds in files (reading all of them took 53 MB for 6.4 MB of rows)."""
    rows = _rows(400_000, queries=50_000)
    whole = _fed(sm.RetrievalScores(), rows, [])
    a, b = (sm.RetrievalScores(max_memory="1MB", spill_dir=tmp_path) for _ in range(2))
    _fed(a, tuple(x[:200_000] for x in rows), list(range(20_000, 200_000, 20_000)))
    _fed(b, tuple(x[200_000:] for x in rows), list(range(20_000, 200_000, 20_000)))
    theirs = b.spilled_bytes
    assert theirs >= 6_000_000 and b.nbytes < 1_000_000
    peak = merge_peak(a, b)
    assert peak < theirs  # (the checksum of a copied file is read 4 MiB at a time)
    assert a.nbytes < 1_000_000 and a.spilled_bytes >= 2 * theirs - 1_000_000
    assert b.spilled_bytes == theirs  # the other state keeps its files
    _same(a, whole, exact=False)
    _same(b, _fed(sm.RetrievalScores(), tuple(x[200_000:] for x in rows), []), exact=False)


def test_a_failed_write_leaves_the_state_as_it_was(monkeypatch):
    rows = _rows(400)
    acc = _fed(sm.RetrievalScores(max_memory=8192), tuple(a[:100] for a in rows), [])
    before = acc.state_dict()

    def full(self, rec):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SpillStore, "write_records", full)
    with pytest.raises(OSError, match="No space left"):
        _fed(acc, tuple(a[100:] for a in rows), [])
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_a_changed_file_is_an_error_not_a_score(tmp_path):
    acc = _fed(sm.RetrievalScores(max_memory=4096, spill_dir=tmp_path), _rows(2000), [500])
    path = _files(tmp_path)[0]
    with open(path, "r+b") as fh:
        fh.seek(40)
        fh.write(b"\x01")
    with pytest.raises(OSError, match="changed on disk"):
        acc.finalize()


def test_settings_are_checked(tmp_path):
    with pytest.raises(ValueError, match="give max_memory too"):
        sm.RetrievalScores(spill_dir=tmp_path)
    with pytest.raises(ValueError, match="spill_dir must be an existing folder"):
        sm.RetrievalScores(max_memory="1MB", spill_dir=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="max_memory must be at least"):
        sm.RetrievalScores(max_memory=100)


def test_the_ranking_command_spills_its_open_rows_past_memory(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    from streammetrics import cli

    q, rel, s, _ = _rows(3000, queries=400)
    path = tmp_path / "runs.csv"
    np.savetxt(path, np.column_stack([q, rel, s]), delimiter=",", header="qid,rel,s", comments="", fmt="%d,%d,%.2f")
    args = ["evaluate", str(path), "--task", "ranking", "--query", "qid", "--relevance", "rel", "--score", "s"]
    args += ["--format", "json", "--batch-rows", "500"]
    written = []
    real = SpillStore.write_records
    monkeypatch.setattr(SpillStore, "write_records", lambda self, rec: written.append(rec.shape[0]) or real(self, rec))
    assert cli.main([*args, "--memory", "8KB"]) == 0
    spilled = capsys.readouterr().out
    assert sum(written) == 3000  # the open rows went to files
    assert cli.main([*args, "--memory", "none"]) == 0
    plain = json.loads(capsys.readouterr().out)
    for name, value in json.loads(spilled)["metrics"].items():
        np.testing.assert_allclose(value, plain["metrics"][name], rtol=1e-12, err_msg=name)


def test_memory_and_file_bytes_are_reported():
    acc = _fed(sm.RetrievalScores(max_memory=8192), _rows(1000), [100, 200, 300, 600])
    in_memory = 32 * 1000 - acc.spilled_bytes  # 32 bytes a row, each row in a file or in memory
    assert acc.spilled and 0 <= in_memory <= 8192 // 2
    assert in_memory <= acc.nbytes < in_memory + 2048  # and the sums
    assert sm.RetrievalScores().spilled_bytes == 0
