"""Windowed: each bucket equals the template fed that bucket's rows, however
the rows are ordered, batched and sharded."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import StateFileError

from .harness import assert_results_equal, forged

TEMPLATES = {
    "binary": lambda: sm.BinaryConfusion(threshold=0.5),
    "auc": sm.RankAUC,
    "evaluator": lambda: sm.Evaluator("binary"),
}


def _data(rng, n):
    y = (rng.random(n) < 0.4).astype(np.int64)
    return y, np.round(rng.random(n), 2), rng.random(n) * 2


def _split(n, parts, rng):
    order = rng.permutation(n)
    return [order[j::parts] for j in range(parts)]


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(sorted(TEMPLATES)), st.integers(1, 3), st.integers(1, 4), st.integers(0, 2**31))
def test_each_bucket_is_its_rows_under_any_order_and_sharding(name, shards, batches, seed):
    rng = np.random.default_rng(seed)
    n = 240
    y, p, w = _data(rng, n)
    t = rng.random(n) * 50 - 10  # negative times too: buckets are floor(t / every)
    make = TEMPLATES[name]
    parts = []
    for rows in _split(n, shards, rng):
        acc = sm.Windowed(make(), every=10.0, time=True)
        for chunk in np.array_split(rows, batches):
            acc.update(y[chunk], p[chunk], sample_weight=w[chunk], time=t[chunk])
        parts.append(acc)
    acc = parts[-1]
    for other in parts[:-1]:
        acc.merge(other)
    keys = np.floor(t / 10.0)
    assert [b.key for b in acc.buckets()] == sorted(set(keys.astype(int).tolist()))
    for b in acc.buckets():
        m = keys == b.key
        assert (b.start, b.end, b.rows) == (b.key * 10.0, b.key * 10.0 + 10.0, m.sum())
        ref = make().update(y[m], p[m], sample_weight=w[m]).finalize()
        assert_results_equal(b.result, ref, rtol=1e-12, atol=1e-15)
    assert_results_equal(acc.finalize(), make().update(y, p, sample_weight=w).finalize(), rtol=1e-12, atol=1e-15)


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(sorted(TEMPLATES)),
    st.integers(1, 12),
    st.one_of(st.none(), st.integers(1, 4)),
    st.lists(st.integers(0, 40), min_size=1, max_size=8),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_buckets_of_rows_hold_consecutive_rows_under_any_batching(name, every, keep, sizes, weighted, seed):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y, p, w = _data(rng, n)
    make = TEMPLATES[name]
    acc = sm.Windowed(make(), every=every, keep=keep)
    lo = 0
    for j, m in enumerate(sizes):  # update and prepare/fold in turn; batches inside, across and past buckets
        rows, sw = slice(lo, lo + m), (w[lo : lo + m] if weighted else None)
        if j % 2:
            acc.fold(acc.prepare(y[rows], p[rows], sample_weight=sw))
        else:
            acc.update(y[rows], p[rows], sample_weight=sw)
        lo += m
    keys = np.arange(n) // every
    kept = sorted(set(keys.tolist()))[-keep if keep else 0 :] if n else []
    assert [b.key for b in acc.buckets()] == kept
    assert acc.seen == n and acc.n == int(np.isin(keys, kept).sum()) and acc.dropped == 0
    for b in acc.buckets():
        m = keys == b.key
        assert (b.start, b.end, b.rows) == (b.key * every, b.key * every + every, m.sum())
        ref = make().update(y[m], p[m], sample_weight=w[m] if weighted else None).finalize()
        assert_results_equal(b.result, ref, rtol=1e-12, atol=1e-15)


def test_keep_lets_old_buckets_go_and_counts_late_rows_dropped():
    rng = np.random.default_rng(3)
    y, p, _ = _data(rng, 300)
    t = np.arange(300.0)
    acc = sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=10.0, keep=3, time=True)
    acc.update(y[:250], p[:250], time=t[:250])
    assert [b.key for b in acc.buckets()] == [22, 23, 24] and acc.n == 30 and acc.dropped == 0
    acc.update(y[250:], p[250:], time=t[250:])
    acc.update(y[:5], p[:5], time=t[:5] + 275.0)  # late, but inside the kept range
    acc.update(y[:5], p[:5], time=t[:5])  # older than the kept range
    assert acc.dropped == 5 and acc.n == 35 and [b.key for b in acc.buckets()] == [27, 28, 29]
    yy, pp = np.concatenate([y[270:], y[:5]]), np.concatenate([p[270:], p[:5]])
    ref = sm.BinaryConfusion(threshold=0.5).update(yy, pp).finalize()
    assert acc.finalize() == ref


def test_buckets_of_rows_and_of_days():
    rng = np.random.default_rng(4)
    y, p, _ = _data(rng, 50)
    acc = sm.Windowed(sm.RankAUC(), every=7)
    for lo in range(0, 50, 9):
        acc.update(y[lo : lo + 9], p[lo : lo + 9])
    for b in acc.buckets():
        assert (b.start, b.end) == (7 * b.key, 7 * b.key + 7)
        assert b.result == sm.RankAUC().update(y[b.start : b.end], p[b.start : b.end]).finalize()
    days = sm.Windowed(sm.BinaryConfusion(), every="1d")
    ts = np.datetime64("2024-03-01T06", "ns") + np.arange(6) * np.timedelta64(10, "h")
    days.update([1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0], time=ts)
    assert [str(b.start)[:10] for b in days.buckets()] == ["2024-03-01", "2024-03-02", "2024-03-03"]
    assert [b.rows for b in days.buckets()] == [2, 3, 1]  # 06h 16h | 02h 12h 22h | 08h
    with pytest.raises(TypeError, match="datetimes"):
        days.update([1], [1], time=[1.5])
    with pytest.raises(TypeError, match="time= is taken"):
        acc.update([1], [0.5], time=[1.0])
    with pytest.raises(ValueError, match="whole number of rows"):
        sm.Windowed(sm.BinaryConfusion(), every="1h", time=False)


def test_any_template_sliced_and_budgeted_rank():
    rng = np.random.default_rng(5)
    y, p, _ = _data(rng, 400)
    t, by = rng.random(400) * 40, rng.integers(0, 3, 400)
    acc = sm.Windowed(sm.Sliced(sm.BinaryConfusion(threshold=0.5)), every=10.0, time=True)
    acc.update(y[:200], p[:200], by=by[:200], time=t[:200])
    acc.update(y[200:], p[200:], by=by[200:], time=t[200:])
    for b in acc.buckets():
        m = np.floor(t / 10.0) == b.key
        ref = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[m], p[m], by=by[m]).finalize()
        assert b.result.slices == ref.slices
    binned = sm.Windowed(sm.RankAUC(max_bins=8), every=10.0, time=True).update(y, p, time=t)
    for b in binned.buckets():
        m = np.floor(t / 10.0) == b.key
        exact = sm.RankAUC().update(y[m], p[m]).finalize().auc
        assert b.result.auc_lower - 1e-12 <= exact <= b.result.auc_upper + 1e-12


def test_state_files_round_trip_and_hostile_ones(tmp_path):
    rng = np.random.default_rng(6)
    y, p, w = _data(rng, 300)
    acc = sm.Windowed(sm.RankAUC(), every=5.0, keep=4, time=True)
    acc.update(y, p, sample_weight=w, time=rng.random(300) * 20)
    path = tmp_path / "w.smstate"
    acc.save(path)
    back = sm.load_state(path)
    assert back == acc and back.finalize() == acc.finalize() and back.keep == 4
    st = acc.state_dict()
    cases = {
        "keys": ({"keys": st["keys"][::-1].copy()}, "ascend"),
        "rows": ({"rows": st["rows"] + 1}, "rows"),
        "span": ({"keys": st["keys"] + np.arange(st["keys"].shape[0]) * 3}, "keep=4"),
        "extra": ({"stray": np.zeros(1)}, "unknown state entry"),
        "holders": ({"b#of.n": np.array([0, 9], np.int64)}, "b#of.n"),
        "negative": ({"b.n": -st["b.n"]}, "bucket"),
    }
    for what, (arrays, match) in cases.items():
        with pytest.raises(StateFileError, match=match):
            sm.load_state(forged(acc, tmp_path / f"{what}.smstate", arrays=arrays))


def test_table_intervals_differs_and_plot(tmp_path):
    rng = np.random.default_rng(7)
    y = (rng.random(2000) < 0.5).astype(np.int64)
    good = np.where(rng.random(2000) < 0.9, y, 1 - y)
    good[1900:] = rng.integers(0, 2, 100)  # the last bucket goes wrong
    acc = sm.Windowed(sm.BinaryConfusion(), every=100).update(y, good)
    t = acc.table(ci=0.95)
    assert t["rows"] == [100] * 20 and "accuracy_ci_lower" in t
    assert "accuracy" in t["differs"][-1] and sum("accuracy" in d for d in t["differs"][:-1]) <= 2
    pytest.importorskip("pandas")
    frame = acc.to_frame(ci=0.95)
    assert list(frame["accuracy"]) == t["accuracy"]
    pytest.importorskip("matplotlib")
    png = acc.plot("accuracy", tmp_path)
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def _csv(tmp_path, n=900):
    rng = np.random.default_rng(8)
    t = np.datetime64("2024-01-01", "ns") + (rng.random(n) * 3 * 86400e9).astype("timedelta64[ns]")
    y = (rng.random(n) < 0.5).astype(np.int64)
    good = t < np.datetime64("2024-01-03", "ns")
    p = np.where(good, 0.6 * y + 0.4 * rng.random(n), rng.random(n)).round(4)
    path = tmp_path / "scores.csv"
    lines = ["ts,y,p"] + [f"{str(a)[:19]},{b},{c}" for a, b, c in zip(t, y, p)]
    path.write_text("\n".join(lines) + "\n")
    return path, t, y, p


def test_command_scores_per_day_text_json_png(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from streammetrics import cli

    path, t, y, p = _csv(tmp_path)
    args = ["evaluate", str(path), "--time", "ts", "--every", "1d", "--ci", "0.95", "--progress", "never"]
    assert cli.main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [b["start"] for b in doc["buckets"]] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    day = t.astype("datetime64[D]")
    for b in doc["buckets"]:
        m = day == np.datetime64(b["start"])
        ref = sm.Evaluator("binary").update(y[m], p[m]).finalize()
        assert b["rows"] == m.sum() and abs(b["auc"] - ref["auc"]) < 1e-12
    assert "auc" in doc["buckets"][2]["differs"]  # the day the model went wrong
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "2024-01-03" in text and "*" in text
    if pytest.importorskip("matplotlib"):
        assert cli.main([*args, "--plots", str(tmp_path / "png")]) == 0
        assert (tmp_path / "png" / "buckets_auc.png").exists()


def test_command_last_rows_and_refusals(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from streammetrics import cli

    path, t, y, p = _csv(tmp_path)
    assert cli.main(["evaluate", str(path), "--window", "100", "--batch-rows", "64", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ref = sm.Evaluator("binary").update(y[-100:], p[-100:]).finalize()
    assert doc["n"] == 100 and abs(doc["metrics"]["auc"] - ref["auc"]) < 1e-12
    assert cli.main(["evaluate", str(path), "--time", "ts"]) == 1
    assert "--every" in capsys.readouterr().err
    assert cli.main(["evaluate", str(path), "--keep", "3"]) == 1
    assert "--time" in capsys.readouterr().err
    assert cli.main(["evaluate", str(path), "--window", "9", "--bootstrap", "20"]) == 1
    assert "does not combine" in capsys.readouterr().err
    assert cli.main(["evaluate", str(path), "--time", "y", "--every", "1d"]) == 1
    assert "datetimes" in capsys.readouterr().err


@pytest.mark.parametrize(
    "make",
    [
        lambda every: sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=every, keep=3),
        lambda every: sm.History(sm.BinaryConfusion(threshold=float(every) / 100)),
    ],
    ids=["Windowed", "History"],
)
def test_check_merge_says_what_merge_would_refuse_and_changes_nothing(make):
    rng = np.random.default_rng(5)
    y, p, _ = _data(rng, 60)
    a, b = make(10), make(10)
    a.update(y[:30], p[:30], **({"step": 0} if isinstance(a, sm.History) else {}))
    b.update(y[30:], p[30:], **({"step": 1} if isinstance(b, sm.History) else {}))
    before = a.state_dict()
    assert a.check_merge(b) is None
    assert_results_equal(a.finalize(), make(10).load_state_dict(before).finalize())
    with pytest.raises(ValueError, match="settings"):
        a.check_merge(make(20))
    a.merge(b)
    assert a.n == 60
