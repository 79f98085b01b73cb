"""Bounded states round-tripped and fed a million distinct scores, and the extra
columns of the wrappers (row keys, times, steps) given in the forms the scored
arrays take."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

import numpy as np
import pytest

import streammetrics as sm

from .harness import assert_results_equal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = 3
BOUNDED = {
    "RankAUC": (
        lambda: sm.RankAUC(max_bins=20),
        lambda rng, n: rng.integers(0, 2, n),
        lambda rng, n: rng.normal(size=n),
    ),
    "MulticlassRankAUC(ovr)": (
        lambda: sm.MulticlassRankAUC(K, max_bins=8),
        lambda rng, n: rng.integers(0, K, n),
        lambda rng, n: rng.random((n, K)),
    ),
    "MulticlassRankAUC(ovo)": (
        lambda: sm.MulticlassRankAUC(K, multi_class="ovo", max_bins=8),
        lambda rng, n: rng.integers(0, K, n),
        lambda rng, n: rng.random((n, K)),
    ),
    "MultilabelRankAUC": (
        lambda: sm.MultilabelRankAUC(K, max_bins=8),
        lambda rng, n: rng.integers(0, 2, (n, K)),
        lambda rng, n: rng.random((n, K)),
    ),
}


def _trip(acc, how, path):
    if how == "pickle":
        return pickle.loads(pickle.dumps(acc))
    if how == "state_dict":
        return type(acc)(**acc.settings).load_state_dict(acc.state_dict())
    if how == "bytes":
        return sm.from_bytes(acc.to_bytes())
    acc.save(path)  # saved then loaded
    return sm.load_state(path)


@pytest.mark.parametrize("weighted", [False, True], ids=["counts", "weights"])
@pytest.mark.parametrize("how", ["pickle", "state_dict", "bytes", "file"])
@pytest.mark.parametrize("name", list(BOUNDED))
def test_every_bounded_state_round_tripped_then_updated_equals_one_never_round_tripped(name, how, weighted, tmp_path):
    make, labels, scores = BOUNDED[name]
    rng = np.random.default_rng(11)
    n = 3000
    y, s = labels(rng, n), scores(rng, n)
    w = rng.random(n) + 0.5 if weighted else None
    ref, acc = make(), make()
    for a in range(0, n, 300):
        kw = {"sample_weight": None if w is None else w[a : a + 300]}
        ref.update(y[a : a + 300], s[a : a + 300], **kw)
        acc = _trip(acc.update(y[a : a + 300], s[a : a + 300], **kw), how, tmp_path / "b.state")
    assert acc == ref
    assert_results_equal(acc.finalize(), ref.finalize(), rtol=0)


@pytest.mark.parametrize("how", ["pickle", "bytes", "file"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.Sliced(sm.RankAUC(max_bins=20)),
        lambda: sm.Bootstrap(sm.RankAUC(max_bins=20), replicates=5, seed=1),
        lambda: sm.Evaluator(task="binary", scores="score", max_bins=20),
    ],
    ids=["Sliced", "Bootstrap", "Evaluator"],
)
def test_a_wrapper_of_a_bounded_state_round_tripped_then_updated_equals_one_never_round_tripped(make, how, tmp_path):
    rng = np.random.default_rng(2)
    y, s, g = rng.integers(0, 2, 3000), rng.normal(size=3000), rng.integers(0, 4, 3000)
    ref, acc = make(), make()
    for a in range(0, 3000, 300):
        part = (y[a : a + 300], s[a : a + 300]) + ((g[a : a + 300],) if isinstance(ref, sm.Sliced) else ())
        ref.update(*part)
        acc = _trip(acc.update(*part), how, tmp_path / "w.state")
    assert acc == ref
    assert repr(acc.finalize().as_dict()) == repr(ref.finalize().as_dict())


def _million_distinct(make, kind, k):
    """``make()`` fed 10**6 rows in batches of 10,000, every score distinct."""
    rng = np.random.default_rng(0)
    acc, n, batch = make(), 1_000_000, 10_000
    for a in range(0, n, batch):
        scores = (rng.permutation(batch * k) + a * k) / (n * k)
        if kind == "binary":
            acc.update(rng.integers(0, 2, batch), scores)
        elif kind == "multiclass":
            acc.update(rng.integers(0, k, batch), scores.reshape(batch, k))
        else:
            acc.update(rng.integers(0, 2, (batch, k)), scores.reshape(batch, k))
    return acc


@pytest.mark.parametrize(
    "make, kind, members",
    [
        (lambda: sm.RankAUC(max_bins=1000), "binary", 1),
        (lambda: sm.MulticlassRankAUC(K, max_bins=1000), "multiclass", K),
        (lambda: sm.MulticlassRankAUC(K, multi_class="ovo", max_bins=1000), "multiclass", K * K),
        (lambda: sm.MultilabelRankAUC(K, max_bins=1000), "multilabel", K),
    ],
    ids=["RankAUC", "MulticlassRankAUC(ovr)", "MulticlassRankAUC(ovo)", "MultilabelRankAUC"],
)
def test_a_bounded_state_fed_a_million_distinct_scores_holds_at_most_100_kb_a_member(make, kind, members):
    acc = _million_distinct(make, kind, 1 if kind == "binary" else K)
    assert acc.n == 1_000_000
    assert sum(v.nbytes for v in acc.state_dict().values()) <= 100_000 * members
    assert len(acc.to_bytes()) <= 100_000 * members + 20_000  # the file: the arrays and their headers


# ------------------------------------------------- wrapper columns in the scored arrays' forms
@pytest.mark.parametrize("key", [np.array(["r1", "r2", "r3"]), np.array([b"r1", b"r2", b"r3"])], ids=["str", "bytes"])
def test_a_refused_key_array_suggests_no_conversion_that_is_refused_too(key):
    b = sm.Bootstrap(sm.BinaryConfusion(), replicates=4)
    with pytest.raises(TypeError) as info:
        b.update([1, 0, 1], [1, 0, 0], key=key)
    assert "labels" not in str(info.value) and "integer row ids" in str(info.value)
    assert b.n == 0


def _over_time(name):
    if name == "Rolling":
        return sm.Rolling(sm.BinaryConfusion(threshold=0.5), window=1000, key=True), np.arange(6)
    if name == "Decayed":
        return sm.Decayed(sm.BinaryConfusion(threshold=0.5), half_life=30.0, time=True), np.arange(6) * 7.5
    if name == "Windowed":
        return sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=25.0, time=True), np.arange(6) * 7.5
    return sm.History(sm.ProbabilityScores()), np.array([0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("name", ["Rolling", "Decayed", "Windowed", "History"])
def test_an_over_time_column_of_numbers_held_as_objects_counts_as_the_numbers(name):
    y, p = np.array([1, 0, 1, 1, 0, 0]), np.array([0.9, 0.2, 0.6, 0.4, 0.3, 0.7])
    want, col = _over_time(name)
    got, _ = _over_time(name)
    want.update(y, p, col)
    got.update(y, p, col.astype(object))
    assert got == want


@pytest.mark.parametrize("name", ["Decayed", "Windowed"])
def test_timestamps_as_one_column_count_as_the_timestamps(name):
    y, p = np.array([1, 0, 1, 1, 0, 0]), np.array([0.9, 0.2, 0.6, 0.4, 0.3, 0.7])
    want, col = _over_time(name)
    got, _ = _over_time(name)
    want.update(y, p, col)
    got.update(y, p, col[:, None])
    assert got == want
    with pytest.raises(ValueError, match="expected 6 timestamps"):
        got.update(y, p, np.c_[col, col])
    assert got == want


# ------------------------------------------------- a spill file past the size the system allows
_FILE_TOO_LARGE = """
import errno, os, resource, signal, sys
import numpy as np
import streammetrics as sm
from streammetrics.metrics.ranking import spill as S

folder = sys.argv[1]
files = lambda: sorted(n for n in os.listdir(folder) if n.endswith(S.SPILL_SUFFIX))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
rng = np.random.default_rng(4)
acc = sm.RankAUC(max_memory=4096, spill_dir=folder)
fed_y, fed_s = [], []
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
for i in range(400):
    y, s = rng.integers(0, 2, 500), rng.normal(size=500) + i
    if i == 3:
        resource.setrlimit(resource.RLIMIT_FSIZE, (96 << 10, hard))  # no file past 96 KB from here
    before = {k: v.copy() for k, v in acc.state_dict().items()}
    names = files()
    try:
        acc.update(y, s)
    except OSError as exc:
        assert exc.errno == errno.EFBIG, exc
        break
    fed_y.append(y)
    fed_s.append(s)
else:
    sys.exit("no write failed")
after = acc.state_dict()
assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before), "half folded"
assert files() == names, (files(), names)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
r = acc.finalize()
y, s = np.concatenate(fed_y), np.concatenate(fed_s)
assert r.n == r.n_pos + r.n_neg == len(y), (r.n, r.n_pos, r.n_neg, len(y))
assert r.auc == sm.auc(y, s)
acc.close()
assert files() == []
print("ok", i)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_a_spill_write_past_the_file_size_limit_leaves_the_batch_out(tmp_path):
    """A real EFBIG from the system (no monkeypatch): the batch whose spill fails is not folded, no part file stays,
    and the rows before it score as a state that never failed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH")))))
    done = subprocess.run(
        [sys.executable, "-c", _FILE_TOO_LARGE, str(tmp_path)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr[-3000:]


# ------------------------------------------------- nullable integer key columns past 2**53
B = 2**53


def test_a_pandas_nullable_int_column_past_2_53_keeps_its_keys_apart():
    pd = pytest.importorskip("pandas")
    by = pd.Series([B, B + 1, None, B + 1], dtype="Int64")
    acc = sm.Sliced(sm.BinaryConfusion()).update([1, 1, 1, 1], [1, 0, 1, 1], by=by)
    r = acc.finalize()
    assert list(r.slices) == [B, B + 1, None]
    assert [r.slices[k].tp for k in (B, B + 1, None)] == [1, 1, 1]


def test_an_arrow_int_column_with_nulls_past_2_53_is_refused_naming_the_row():
    """Arrow hands such a column to numpy as floats (its nulls as NaN): 2**53 and 2**53 + 1 would be one key."""
    pa = pytest.importorskip("pyarrow")
    for by in (pa.array([B, B + 1, None], pa.int64()), pa.chunked_array([[B], [B + 1, None]], pa.int64())):
        acc = sm.Sliced(sm.BinaryConfusion())
        with pytest.raises(ValueError, match=r"by\[0\] = 9007199254740992.0: a float key from 2\*\*53 on"):
            acc.update([1, 1, 1], [1, 1, 1], by=by)
        assert acc.n == 0
    ok = sm.Sliced(sm.BinaryConfusion()).update([1, 1, 1], [1, 1, 1], by=pa.array([B, B + 1, B], pa.int64()))
    assert list(ok.finalize().slices) == [B, B + 1]  # without nulls, integers stay integers
