"""Thresholds compare in the scores' own precision, as numpy and torch do: a
float32 score of 0.7 reaches the threshold 0.7 (numpy rounds the threshold to
float32 first), for ``RankAUC.at_threshold`` as for ``BinaryConfusion``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import streammetrics as sm

DTYPES = [np.float16, np.float32, np.float64]


@st.composite
def scored(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.integers(2, 30))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    grid = draw(st.sampled_from([0.1, 0.01, 0.3]))  # decimal scores: most are not float16/32 values
    s = (np.array(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))) * grid).astype(dtype)
    t = draw(st.sampled_from([float(v) for v in s] + [0.7, 0.3, 0.1, 2.9999, 1e-5]))
    return y, s, t


def counts(r):
    return r.tp, r.fp, r.fn, r.tn


@given(scored(), st.booleans())
def test_at_threshold_counts_as_numpy_compares(data, bounded):
    y, s, t = data
    acc = sm.RankAUC(max_bins=64 if bounded else None).update(y, s)
    called = s >= t  # numpy: the Python float takes the array's dtype
    want = (int((called & (y == 1)).sum()), int((called & (y == 0)).sum()))
    got = acc.at_threshold(t)
    if not bounded or not got.meta.get("bounds"):
        assert (got.tp, got.fp) == want
    assert counts(got) == counts(sm.BinaryConfusion(threshold=t).update(y, s).finalize()) or bounded
    assert got.threshold == t  # the threshold asked for is reported as given
    for copy in (sm.RankAUC.from_bytes(acc.to_bytes()), acc.copy()):
        assert counts(copy.at_threshold(t)) == counts(got)
    assert counts(acc.finalize().at_threshold(t)) == counts(got)


def test_torch_tensors_compare_as_torch():
    torch = pytest.importorskip("torch")
    s = torch.tensor([0.7, 0.69, 0.71], dtype=torch.float32)
    y = torch.tensor([1, 0, 1])
    r = sm.RankAUC().update(y, s).at_threshold(0.7)
    assert r.tp + r.fp == int((s >= 0.7).sum()) == 2


def test_the_widest_scores_decide_as_in_a_concatenation():
    y = [1, 0, 1]
    s32 = np.array([0.7, 0.69, 0.71], np.float32)
    acc = sm.RankAUC().update(y, s32)
    assert acc.at_threshold(0.7).tp == 2
    both = acc.copy().merge(sm.RankAUC().update([0], [0.3]))  # float64 rows join: float64, as np.concatenate
    assert both.at_threshold(0.7).tp == int((np.concatenate([s32, [0.3]])[:3] >= 0.7).sum()) == 1
    assert sm.RankAUC().merge(acc).at_threshold(0.7).tp == 2  # an empty state takes the other's width


@pytest.mark.parametrize(
    "bits, scores, n, match",
    [
        (7, [0.5], 1, "must be 16, 32 or 64"),
        (32, [], 0, "always without observations"),
        (32, [0.1], 1, "no float32"),
        (16, [0.5, 70000.0], 2, "no float16"),
    ],
)
def test_a_forged_width_is_refused(bits, scores, n, match):
    st_ = sm.RankAUC().update([1] * max(n, 1), [0.5] * max(n, 1)).state_dict()
    st_["lo"] = np.array(scores, np.float64)
    st_["counts"] = np.array([[1] * len(scores), [0] * len(scores)], np.int64)
    st_["n"] = np.array([n], np.int64)
    st_["score_bits"] = np.array([bits], np.int64)
    with pytest.raises(sm.StateFileError, match=match):
        sm.RankAUC().load_state_dict(st_)


@st.composite
def batches(draw):
    """Batches of decimal scores, each in its own float width."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 6))
        y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
        s = np.array(draw(st.lists(st.sampled_from([0.1, 0.3, 0.69, 0.7, 0.71]), min_size=n, max_size=n)))
        out.append((y, s.astype(draw(st.sampled_from(DTYPES)))))
    return out


@given(batches(), st.integers(1, 8), st.sampled_from([0.7, 0.3, 0.1]))
def test_a_rolling_window_compares_in_the_width_of_its_rows(parts, window, t):
    """The window's rows keep their widths: the threshold compares as RankAUC fed the last ``window`` rows."""
    acc = sm.Rolling(sm.RankAUC(), window=window)
    for y, s in parts:
        acc.update(y, s)
    rows, ref = [(y[i], s[i : i + 1]) for y, s in parts for i in range(len(y))][-window:], sm.RankAUC()
    for y, s in rows:
        ref.update([y], s)
    want = counts(ref.at_threshold(t))
    assert counts(acc.finalize().at_threshold(t)) == want
    assert counts(acc.accumulator().at_threshold(t)) == want
    assert counts(sm.Rolling.from_bytes(acc.to_bytes()).finalize().at_threshold(t)) == want


def test_a_rolling_window_forgets_the_width_of_rows_that_left():
    s32 = np.array([0.7, 0.7], np.float32)
    acc = sm.Rolling(sm.RankAUC(), window=2).update([1, 0], s32)
    assert counts(acc.finalize().at_threshold(0.7)) == (1, 1, 0, 0)
    held = acc.finalize()  # a result kept while the window moves on keeps its width
    acc.update([1], [0.5])  # a float64 row joins: float64, as np.concatenate
    assert counts(acc.finalize().at_threshold(0.7)) == (0, 0, 1, 1)
    acc.update([1], [0.9])  # the float32 rows left: float64 rows only
    assert counts(acc.finalize().at_threshold(0.7)) == (1, 0, 1, 0)
    assert counts(held.at_threshold(0.7)) == (1, 1, 0, 0)


def test_a_rolling_state_saved_without_widths_loads_as_float64():
    acc = sm.Rolling(sm.RankAUC(), window=3).update([1, 0], np.array([0.7, 0.7], np.float32))
    state = acc.state_dict()
    assert state["score_bits"].tolist() == [32, 32]
    del state["score_bits"]
    old = sm.Rolling(sm.RankAUC(), window=3).load_state_dict(state)
    assert counts(old.finalize().at_threshold(0.7)) == (0, 0, 1, 1)  # float32(0.7) < 0.7 in float64
    assert counts(old.accumulator().at_threshold(0.7)) == (0, 0, 1, 1)


@pytest.mark.parametrize(
    "bits, score, match", [([7, 64], 0.5, "16, 32 or 64"), ([32, 64], 0.1, "no float32"), ([16, 64], 7e4, "float16")]
)
def test_a_forged_rolling_width_is_refused(bits, score, match):
    state = sm.Rolling(sm.RankAUC(), window=3).update([1, 0], [0.5, 0.5]).state_dict()
    state["s"][0], state["score_bits"] = score, np.array(bits, np.uint8)
    with pytest.raises(sm.StateFileError, match=match):
        sm.Rolling(sm.RankAUC(), window=3).load_state_dict(state)
