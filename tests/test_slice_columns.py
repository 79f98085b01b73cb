"""Every slice's binary scores computed at once equal each slice's own result.

``binary_score_columns`` applies the formulas of ``binary_result`` to many
rows of counts as arrays; a sliced binary confusion reads its per-slice
score arrays and its DataFrame from it instead of building one result per
slice. Both are checked against the results built one by one, bit for bit,
including the counts whose products pass int64 and the zero denominators.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.metrics.binary import binary_result, binary_score_columns


def _same(a, b) -> bool:
    """Equal as numbers bit for bit (NaN equal to NaN, 0.0 unequal to -0.0)."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return int(a) == int(b)


def _check_rows(counts):
    cols = binary_score_columns(counts)
    assert set(cols) == set(binary_result(1, 0, 0, 0, n=1).as_dict()) - {"n"}
    for g, row in enumerate(counts):
        ref = binary_result(*(int(c) for c in row), n=int(sum(row)))
        for name, values in cols.items():
            assert values.shape == (len(counts),)
            assert _same(ref[name], values[g]), (g, name, ref[name], values[g])
    for name in ("tp", "fp", "fn", "tn"):
        assert cols[name].dtype == np.int64
    assert cols["mcc"].dtype == np.float64


_count = st.one_of(st.integers(0, 3), st.integers(0, 60_000), st.integers(0, 2**40))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_count, _count, _count, _count).filter(lambda r: sum(r) > 0), min_size=1, max_size=30))
def test_columns_equal_binary_result_bit_for_bit(rows):
    _check_rows(np.array(rows, np.int64))


def test_columns_cover_zero_denominators_and_large_products():
    rows = [
        [1, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 1],
        [5, 0, 0, 7],
        [0, 3, 4, 0],
        [46_339, 1, 0, 0],
        [46_340, 0, 0, 0],
        [10**6, 3 * 10**6, 2 * 10**6, 10**7],
        [2**45, 2**44 + 1, 2**43 + 3, 2**46 + 5],
    ]
    _check_rows(np.array(rows, np.int64))


def test_columns_refuse_a_row_of_no_observations():
    with pytest.raises(ValueError, match="at least one observation"):
        binary_score_columns(np.array([[1, 0, 0, 0], [0, 0, 0, 0]]))
    assert binary_score_columns(np.zeros((0, 4), np.int64))["f1"].shape == (0,)


def _sliced(rng, n, slices, weighted=False, threshold=0.5):
    y = rng.random(n) < 0.3
    p = rng.random(n)
    keys = rng.integers(0, slices, n)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=threshold))
    w = rng.random(n) if weighted else None
    for a in range(0, n, 997):
        acc.update(
            y[a : a + 997], p[a : a + 997], sample_weight=None if w is None else w[a : a + 997], by=keys[a : a + 997]
        )
    return acc


@pytest.mark.parametrize("weighted", [False, True])
def test_sliced_score_arrays_equal_each_slice_result(weighted):
    acc = _sliced(np.random.default_rng(3), 20_000, 300, weighted)
    fast, slow = acc.finalize(), acc.finalize()
    slow_values = {c: np.array([slow.slices[k][c] for k in slow.slices]) for c in ("accuracy", "f1")}
    for c, ref in slow_values.items():
        got = fast[f"slice_{c}"]
        assert got.dtype == np.float64 and not got.flags.writeable
        assert np.array_equal(got.view(np.int64), ref.astype(np.float64).view(np.int64))


def test_sliced_frame_equals_the_one_built_from_each_result():
    pd = pytest.importorskip("pandas")
    acc = _sliced(np.random.default_rng(4), 30_000, 500)
    r = acc.finalize()
    frame = r.to_frame(overall=False)
    slices = dict(r.slices.items())  # every result built one by one
    rebuilt = pd.DataFrame(
        {
            "rows": [r.rows[k] for k in slices],
            **{f: [slices[k][f] for k in slices] for f in frame.columns if f != "rows"},
        },
        index=pd.Index(list(slices), name="by", dtype=object),
    )
    pd.testing.assert_frame_equal(frame, rebuilt, check_exact=True)
    assert list(frame.columns) == ["rows"] + [k for k in slices[next(iter(slices))].keys() if k != "n"]


def test_slices_of_a_loaded_state_and_after_later_updates(tmp_path):
    rng = np.random.default_rng(5)
    acc = _sliced(rng, 5_000, 40)
    r = acc.finalize()
    before = r.slice_f1.copy()
    acc.update(np.ones(100, bool), np.ones(100), by=np.zeros(100, np.int64))  # after the finalize
    assert np.array_equal(r.slice_f1, before)  # the snapshot's, not the later state's
    path = tmp_path / "sliced.state"
    acc.save(path)
    loaded = sm.load_state(path).finalize()
    slow = acc.finalize()
    ref = np.array([slow.slices[k]["f1"] for k in slow.slices])
    assert np.array_equal(loaded.slice_f1, ref)
    assert not np.array_equal(ref, before)


def test_a_column_name_with_quotes_or_backslashes_is_kept_as_it_is():
    pd = pytest.importorskip("pandas")
    odd = ["score (v2)", 'it\'s \\ "odd"']
    cols = tuple(pd.Series(["a", "b"], name=name) for name in odd)
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update([1, 0], [0.9, 0.1], by=cols).finalize()
    assert list(r.to_frame().index.names) == odd
