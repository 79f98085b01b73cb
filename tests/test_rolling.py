"""Rolling: the template's result on exactly the last N rows, after every batch."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics._protocol.errors import StateFileError

from .harness import assert_results_equal
from .registry import CASES

skm = pytest.importorskip("sklearn.metrics")


def _linear_cases():
    out = []
    for case in CASES:
        acc = case.make()
        terms = acc.row_terms()
        if terms is not None and terms.complete and not isinstance(acc, (sm.Sliced, sm.Bootstrap)):
            out.append(case)
    return out


def _rows(arrays, w, lo, hi):
    return tuple(a[lo:hi] for a in arrays), None if w is None else w[lo:hi]


def _cuts(rng, n, most):
    """Random batch sizes (empty ones and ones larger than the window included) covering ``n`` rows."""
    edges = [0]
    while edges[-1] < n:
        edges.append(min(n, edges[-1] + int(rng.integers(0, most + 1))))
    return list(zip(edges[:-1], edges[1:]))


@pytest.mark.parametrize("case", _linear_cases(), ids=repr)
@pytest.mark.parametrize("window", [1, 23, 120])
def test_every_linear_template_equals_the_template_on_the_last_rows(case, window):
    arrays, w = case.data(np.random.default_rng(5))
    if not case.make().takes_weights:
        w = None
    rng = np.random.default_rng(window)
    acc = sm.Rolling(case.make(), window=window)
    n = len(arrays[0])
    for lo, hi in _cuts(rng, n, 2 * window + 5):
        acc.update(*_rows(arrays, w, lo, hi)[0], sample_weight=_rows(arrays, w, lo, hi)[1])
        if hi == 0:
            continue
        part, pw = _rows(arrays, w, max(0, hi - window), hi)
        want = case.make().update(*part, sample_weight=pw)
        assert acc.n == want.n
        assert_results_equal(acc.finalize(), want.finalize(), rtol=1e-12, what=f"rows {hi - window}..{hi}: ")
        if acc.intervals:
            assert_results_equal(acc.finalize(ci=0.9), want.finalize(ci=0.9), rtol=1e-12, what="ci: ")


def test_rows_with_and_without_weights_mix_as_in_the_template():
    rng = np.random.default_rng(3)
    y, p, w = rng.integers(0, 2, 200), rng.random(200), rng.random(200) * 3
    for template in (sm.BinaryConfusion(threshold=0.5), sm.ProbabilityScores()):
        acc = sm.Rolling(template, window=30)
        fed = []  # (lo, hi, weighted)
        for lo in range(0, 200, 10):
            weighted = (lo // 10) % 3 == 1
            acc.update(y[lo : lo + 10], p[lo : lo + 10], sample_weight=w[lo : lo + 10] if weighted else None)
            fed.append((lo, lo + 10, weighted))
            want = template.copy()
            for a, b, weighted in fed[-3:]:
                want.update(y[a:b], p[a:b], sample_weight=w[a:b] if weighted else None)
            assert_results_equal(acc.finalize(), want.finalize(), rtol=1e-12)


def test_sums_stay_within_1e_12_after_large_rows_leave():
    """Subtracting large terms leaves their rounding in the compensation; the
    window summed afresh after each window of rows keeps it bounded."""
    rng = np.random.default_rng(0)
    window, n = 50, 5000
    y = rng.integers(0, 2, n)
    p = np.clip(rng.random(n), 1e-6, 1 - 1e-6)
    w = np.where((np.arange(n) // 250) % 2 == 0, 1e12, 1e-3) * (1 + rng.random(n))
    acc = sm.Rolling(sm.ProbabilityScores(), window=window)
    worst = 0.0
    for lo in range(0, n, 7):
        acc.update(y[lo : lo + 7], p[lo : lo + 7], sample_weight=w[lo : lo + 7])
        last = slice(max(0, min(n, lo + 7) - window), min(n, lo + 7))
        want = sm.ProbabilityScores().update(y[last], p[last], sample_weight=w[last])
        got, ref = acc.finalize(), want.finalize()
        for k in ("log_loss", "brier"):
            worst = max(worst, abs(got[k] - ref[k]) / abs(ref[k]))
    assert worst < 1e-12


def _auc_stream(rng, n, weighted, ties):
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    if ties:
        s = np.round(s, 1)
    w = rng.random(n) * 3 if weighted else None
    if weighted:
        w[rng.random(n) < 0.05] = 0.0
    return y, s, w


@pytest.mark.parametrize("window", [1, 2, 50, 1000])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_rolling_auc_equals_sklearn_on_the_last_rows_after_every_batch(window, weighted, ties):
    rng = np.random.default_rng(window + 10 * weighted + 100 * ties)
    n = 12 * window + 300
    y, s, w = _auc_stream(rng, n, weighted, ties)
    acc = sm.Rolling(sm.RankAUC(), window=window)
    for lo, hi in _cuts(rng, n, 2 * window + 3):
        acc.update(y[lo:hi], s[lo:hi], sample_weight=None if w is None else w[lo:hi])
        a = max(0, hi - window)
        yy, ss, ww = y[a:hi], s[a:hi], None if w is None else w[a:hi]
        if hi == 0:
            continue
        r = acc.finalize()
        pos = yy == 1 if ww is None else (yy == 1) & (ww > 0)
        neg = yy == 0 if ww is None else (yy == 0) & (ww > 0)
        if pos.any() and neg.any():
            assert abs(r.auc - skm.roc_auc_score(yy, ss, sample_weight=ww)) < 1e-12
        if not weighted:
            assert (r.n_pos, r.n_neg) == (int(yy.sum()), int((1 - yy).sum()))
            want = sm.RankAUC().update(yy, ss)
            assert r.auc == want.finalize().auc  # exact: the same rational, rounded once


def test_rolling_auc_queries_read_the_window():
    rng = np.random.default_rng(7)
    y, s, w = _auc_stream(rng, 3000, True, True)
    acc = sm.Rolling(sm.RankAUC(), window=700)
    for lo in range(0, 3000, 250):
        acc.update(y[lo : lo + 250], s[lo : lo + 250], sample_weight=w[lo : lo + 250])
    want = sm.RankAUC().update(y[-700:], s[-700:], sample_weight=w[-700:])
    r, ref = acc.finalize(ci=0.95), want.finalize(ci=0.95)
    assert_results_equal(r, ref, rtol=1e-12)
    assert r.average_precision() == pytest.approx(want.average_precision(), rel=1e-12)
    assert r.at_threshold(0.5).as_dict() == pytest.approx(want.at_threshold(0.5).as_dict(), rel=1e-12)
    assert r.threshold_for(recall=0.8).threshold == want.threshold_for(recall=0.8).threshold
    assert r.best_threshold("f1").threshold == want.best_threshold("f1").threshold
    for got, exp in zip(r.roc_curve() + r.pr_curve(), want.roc_curve() + want.pr_curve()):
        np.testing.assert_allclose(got, exp, rtol=1e-12)
    # a result kept while the window moves on answers for the window it was read from
    acc.update(1 - y[:700], s[:700])
    assert r.average_precision() == pytest.approx(want.average_precision(), rel=1e-12)
    assert acc.accumulator() == sm.RankAUC().update(1 - y[:700], s[:700])


def _fed_in(batches, make, y, s, w):
    acc = make()
    for lo, hi in batches:
        acc.update(y[lo:hi], s[lo:hi], sample_weight=None if w is None else w[lo:hi])
    return acc


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12),
    window=st.integers(1, 30),
    weighted=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_batching_gives_the_same_window(sizes, window, weighted, seed):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y, s, w = _auc_stream(rng, n, weighted, True)
    edges = np.cumsum([0, *sizes])
    batches = list(zip(edges[:-1], edges[1:]))
    for make in (
        lambda: sm.Rolling(sm.RankAUC(), window=window),
        lambda: sm.Rolling(sm.BinaryConfusion(), window=window),
    ):
        p = s if make().template.inputs[1].name == "s" else (s > 0.5).astype(int)
        one = _fed_in([(0, n)], make, y, p, w)
        cut = _fed_in(batches, make, y, p, w)
        assert one == cut and one.n == min(n, window)
        if n:
            assert_results_equal(cut.finalize(), one.finalize(), rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(shards=st.integers(1, 4), window=st.integers(1, 60), seed=st.integers(0, 2**16))
def test_keyed_shards_merge_to_the_last_rows_by_key(shards, window, seed):
    rng = np.random.default_rng(seed)
    n = 150
    y, s, w = _auc_stream(rng, n, True, True)
    keys = np.arange(n) * 10.0  # rows in key order; each shard gets some of them
    part = rng.integers(0, shards, n)
    last = slice(max(0, n - window), n)
    for template in (sm.RankAUC(), sm.BinaryConfusion(threshold=0.5)):
        states = []
        for i in range(shards):
            rows = np.flatnonzero(part == i)
            acc = sm.Rolling(template, window=window, key=True)
            for lo in range(0, rows.shape[0], 9):
                sl = rows[lo : lo + 9]
                acc.update(y[sl], s[sl], sample_weight=w[sl], key=keys[sl])
            states.append(acc)
        merged = states[-1].copy()
        for other in states[-2::-1]:
            merged.merge(other)
        assert np.array_equal(merged.state_dict()["keys"], keys[last])
        want = template.copy().update(y[last], s[last], sample_weight=w[last])
        try:
            expected = want.finalize()
        except ValueError as exc:  # rows of weight 0 only: undefined for the window as for the template
            with pytest.raises(type(exc), match=str(exc)):
                merged.finalize()
            continue
        assert_results_equal(merged.finalize(), expected, rtol=1e-12)


def test_late_rows_take_their_place_by_key():
    y = np.array([1, 0, 1, 0, 1, 1])
    s = np.array([0.9, 0.1, 0.4, 0.6, 0.2, 0.8])
    k = np.array([1, 2, 3, 4, 5, 6])
    acc = sm.Rolling(sm.RankAUC(), window=4, key=True)
    acc.update(y[[0, 1, 3, 5]], s[[0, 1, 3, 5]], key=k[[0, 1, 3, 5]])
    acc.update(y[[4, 2]], s[[4, 2]], key=k[[4, 2]])  # late rows, out of order
    assert acc.accumulator() == sm.RankAUC().update(y[2:], s[2:])
    acc.update(y[:1], s[:1], key=[0])  # older than the whole window: dropped
    assert acc.accumulator() == sm.RankAUC().update(y[2:], s[2:])


def test_merging_without_keys_is_refused_and_changes_nothing():
    a = sm.Rolling(sm.BinaryConfusion(), window=5).update([1, 0], [1, 1])
    b = sm.Rolling(sm.BinaryConfusion(), window=5).update([1], [0])
    before = a.state_dict()
    with pytest.raises(ValueError, match="without keys: the order of their rows is unknown"):
        a.merge(b)
    with pytest.raises(ValueError, match="give key=True"):
        a + b
    assert sm.Rolling(sm.BinaryConfusion(), window=5).load_state_dict(before) == a


def test_templates_that_cannot_roll_are_refused():
    for template in (sm.RegressionErrors(), sm.RankAUC(max_bins=8), sm.RankAUC(max_memory=4096)):
        with pytest.raises(TypeError, match="sum of per-row terms"):
            sm.Rolling(template, window=10)
    with pytest.raises(ValueError, match="at least 1"):
        sm.Rolling(sm.BinaryConfusion(), window=0)
    with pytest.raises(TypeError, match="window must be an int"):
        sm.Rolling(sm.BinaryConfusion(), window=2.5)
    with pytest.raises(ValueError, match="template must be empty"):
        sm.Rolling(sm.BinaryConfusion().update([1], [1]), window=3)


def test_a_rejected_batch_leaves_the_window_unchanged():
    acc = sm.Rolling(sm.RankAUC(), window=3).update([1, 0, 1, 0], [0.1, 0.2, 0.3, 0.4])
    before = acc.state_dict()
    with pytest.raises(ValueError, match=r"s\[1\] = nan"):
        acc.update([1, 0], [0.5, np.nan])
    with pytest.raises(ValueError, match=r"sample_weight\[0\]"):
        acc.update([1], [0.5], sample_weight=[-1.0])
    assert all(np.array_equal(v, acc.state_dict()[k]) for k, v in before.items())


@pytest.mark.parametrize("make", [lambda: sm.RankAUC(), lambda: sm.MulticlassConfusion(n_classes=3)])
def test_save_load_and_pickle_round_trip(make, tmp_path):
    rng = np.random.default_rng(1)
    acc = sm.Rolling(make(), window=40)
    for _ in range(5):
        y = rng.integers(0, 2 if isinstance(make(), sm.RankAUC) else 3, 25)
        p = rng.random(25) if isinstance(make(), sm.RankAUC) else rng.integers(0, 3, 25)
        acc.update(y, p, sample_weight=rng.random(25))
    acc.save(tmp_path / "r.state")
    back = sm.load_state(tmp_path / "r.state")
    assert back == acc and pickle.loads(pickle.dumps(acc)) == acc
    assert_results_equal(back.finalize(), acc.finalize(), rtol=1e-13)  # (weighted sums: to rounding)
    more = ([1, 0], [0.5, 0.25]) if isinstance(make(), sm.RankAUC) else ([1, 2], [1, 0])
    assert back.update(*more) == acc.update(*more)


def _forge(acc, **changes):
    state = acc.state_dict()
    for k, f in changes.items():
        state[k] = f(state[k].copy())
    return state


def test_forged_states_are_refused():
    rng = np.random.default_rng(2)
    conf = sm.Rolling(sm.BinaryConfusion(), window=10).update(rng.integers(0, 2, 12), rng.integers(0, 2, 12))
    auc = sm.Rolling(sm.RankAUC(), window=10, key=True).update([1, 0, 1], [0.2, 0.4, 0.3], key=[1, 2, 3])

    weighted = sm.Rolling(sm.BinaryConfusion(), window=10).update([1, 0, 1], [1, 1, 0], sample_weight=[1, 2, 3])

    def negative(a):
        a[0] = -4.0
        return a

    forged = [
        (conf, {"n": lambda a: a + 5}, "more than the window|rows of"),
        (conf, {"slots": lambda a: a + 7}, "slot outside"),
        (conf, {"weights": lambda a: a * 2}, "weight other than 1"),
        (conf, {"weighted": lambda a: a + 2}, "0 or 1"),
        (auc, {"y": lambda a: a + 2}, "labels 0 or 1"),
        (auc, {"s": lambda a: a * np.nan}, "NaN"),
        (auc, {"keys": lambda a: a[::-1].copy()}, "in order"),
        (auc, {"keys": lambda a: a[:1]}, "float64 keys"),
        (weighted, {"values": negative}, "do not make a valid state.*negative"),
    ]
    for acc, changes, match in forged:
        with pytest.raises(StateFileError, match=match):
            sm.Rolling(acc.template, window=10, key=acc.key).load_state_dict(_forge(acc, **changes))


def test_updates_from_threads_hold_a_consistent_window():
    acc = sm.Rolling(sm.RankAUC(), window=500)
    y, s = np.tile([0, 1], 50), np.tile([0.2, 0.7], 50)

    def work():
        for _ in range(40):
            acc.update(y, s)
            acc.finalize()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = acc.finalize()
    assert (r.n, r.n_pos, r.n_neg, r.auc) == (500, 250, 250, 1.0)


def test_the_base_merge_refuses_to_write_past_its_scratch():
    from streammetrics._kernels.order_stats import merge_base

    def level(keys, pos, room):
        key = np.array(keys, float)
        cnt = np.zeros((2, len(keys)), np.int32)
        cnt[0] = pos
        return key, cnt.astype(float), cnt, np.zeros((2, room + 1))  # (prefix masses: a window's entries and 1)

    base, pend = level([0.1, 0.2], [1, 1], 3), level([0.3], [1], 1)
    scratch = (np.zeros(2), np.zeros((2, 2)), np.zeros((2, 2), np.int32))  # room for two entries, not three
    meta = np.array([0, 3, 2, 1, 0, 0], np.int64)
    with pytest.raises(ValueError, match="more distinct scores"):
        merge_base(*base, *pend, *scratch, meta, np.zeros((1, 2)), np.zeros((2, 2)))
    roomy = (np.zeros(3), np.zeros((2, 3)), np.zeros((2, 3), np.int32))
    merge_base(*base, *pend, *roomy, meta, np.zeros((1, 2)), np.zeros((2, 2)))
    assert roomy[0].tolist() == [0.1, 0.2, 0.3] and meta[2] == 3 and meta[3] == 0
