"""Sliced: each slice's result is the template's on that slice's rows alone.

The reference here groups rows in plain Python (a dict of normalised keys to
row indices) and runs the template on each group; the sliced accumulator must
agree whatever the key kinds (integers, strings, booleans, floats with NaN,
nulls, crosses), the batching, the sharding and the merge order.
"""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

from .harness import assert_results_equal, assert_state_unchanged, state_snapshot

pd = pytest.importorskip("pandas")


# ------------------------------------------------------------------ reference
def _norm(v):
    """A key as the specification of Sliced reads it, computed independently."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return int(v) if v.is_integer() else v
    return v


def _row_keys(by, n):
    cols = by if isinstance(by, tuple) else (by,)
    per = [[_norm(v) for v in (c.tolist() if hasattr(c, "tolist") else list(c))] for c in cols]
    return [tuple(p[i] for p in per) if isinstance(by, tuple) else per[0][i] for i in range(n)]


def _rank(v):
    if v is None:
        return (3, "")
    if isinstance(v, bool):
        return (0, v)
    if isinstance(v, str):
        return (2, v)
    return (1, v)


def _sort_key(k):
    return tuple(_rank(v) for v in k) if isinstance(k, tuple) else _rank(k)


def _groups(by, n):
    groups: dict = {}
    for i, k in enumerate(_row_keys(by, n)):
        groups.setdefault(k, []).append(i)
    return {k: np.array(groups[k]) for k in sorted(groups, key=_sort_key)}


def _check_against_template(make, acc, arrays, w, by):
    n = len(arrays[0])
    r = acc.finalize()
    alone = make().update(*arrays, sample_weight=w)
    # the same absolute floor as the slices': an MCC near zero is a difference of
    # products of weighted sums, whose last bits follow the batches' cuts
    assert_results_equal(r.overall, alone.finalize(), rtol=1e-12, atol=1e-15, what="overall: ")
    groups = _groups(by, n)
    assert list(r.slices) == list(groups)  # the same keys, in key order
    for key, idx in groups.items():
        want = make().update(*(a[idx] for a in arrays), sample_weight=None if w is None else w[idx])
        assert r.rows[key] == len(idx)
        assert_results_equal(r.slices[key], want.finalize(), rtol=1e-12, atol=1e-15, what=f"slice {key!r}: ")
    assert r.n == n and r.n_slices == len(groups)
    np.testing.assert_array_equal(r.slice_n, [len(i) for i in groups.values()])
    if not make().intervals:
        return
    # the intervals too: each slice keeps the second moments its formulas need
    r = acc.finalize(ci=0.9)
    assert_results_equal(r.overall, alone.finalize(ci=0.9), rtol=1e-12, atol=1e-15, what="overall: ")
    for key, idx in groups.items():
        want = make().update(*(a[idx] for a in arrays), sample_weight=None if w is None else w[idx])
        try:
            expect = want.finalize(ci=0.9)
        except ValueError:  # no score is defined (weights summing to zero)
            expect = None
        if expect is None:
            assert r.slices[key] is None
        else:
            # a bound near zero is a difference of nearly equal numbers (mse - z se),
            # whose last bits follow the order of the sums, and the rmse's square
            # root of it magnifies them (4.6e-15 apart at 3.75e-4): an absolute floor
            # relative to the scale of the scores (of order one here)
            assert_results_equal(r.slices[key], expect, rtol=1e-12, atol=1e-13, what=f"slice {key!r} ci: ")


# ------------------------------------------------------------------ strategies
TEMPLATES = {
    "binary": (lambda: sm.BinaryConfusion(), "labels"),
    "binary@0.5": (lambda: sm.BinaryConfusion(threshold=0.5), "scores"),
    "probability": (lambda: sm.ProbabilityScores(), "scores"),
    "regression": (lambda: sm.RegressionErrors(), "reals"),
    "auc": (lambda: sm.RankAUC(), "scores"),
    "multiclass": (lambda: sm.MulticlassConfusion(3), "classes"),
    "evaluator": (lambda: sm.Evaluator({"b": sm.BinaryConfusion(threshold=0.5), "auc": sm.RankAUC()}), "scores"),
}


def _data(kind, rng, n):
    if kind == "classes":
        return rng.integers(0, 3, n), rng.integers(0, 3, n)
    if kind == "reals":
        y = rng.normal(size=n) * 3 + 1e3
        return y, y + rng.normal(size=n)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.round(rng.random(n), 2)
    return (y, (s >= 0.5).astype(np.int64)) if kind == "labels" else (y, s)


def _column(kind, rng, n):
    if kind == "int":
        return rng.integers(-3, 4, n)
    if kind == "bigint":
        return rng.choice(np.array([-(2**62), 7, 2**62]), n)
    if kind == "bool":
        return rng.random(n) < 0.5
    if kind == "str":
        return np.array(["ä", "b", "", "long key"])[rng.integers(0, 4, n)]
    if kind == "str+null":
        return np.array(["x", "y", None, "z"], dtype=object)[rng.integers(0, 4, n)]
    if kind == "float+nan":
        k = rng.integers(0, 3, n).astype(float) / 2  # 0, 0.5, 1.0
        k[rng.random(n) < 0.2] = np.nan
        return k
    if kind == "category":
        return pd.Categorical(
            np.array(["lo", "hi", None], dtype=object)[rng.integers(0, 3, n)], categories=["lo", "hi", "unused"]
        )
    raise AssertionError(kind)


COLUMN_KINDS = ["int", "bigint", "bool", "str", "str+null", "float+nan", "category"]


@settings(max_examples=40)
@given(
    template=st.sampled_from(sorted(TEMPLATES)),
    columns=st.lists(st.sampled_from(COLUMN_KINDS), min_size=1, max_size=2),
    n=st.integers(1, 120),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 120), max_size=4),
    weighted=st.booleans(),
)
def test_each_slice_equals_the_template_on_its_rows(template, columns, n, seed, cuts, weighted):
    make, kind = TEMPLATES[template]
    rng = np.random.default_rng(seed)
    arrays = _data(kind, rng, n)
    w = rng.random(n) * 2 if weighted else None
    cols = [_column(c, rng, n) for c in columns]
    tuple(cols) if len(cols) > 1 else cols[0]
    acc = sm.Sliced(make())
    edges = sorted({0, n, *[c for c in cuts if c <= n]})
    for lo, hi in zip(edges[:-1], edges[1:]):
        part = tuple(c[lo:hi] for c in cols)
        acc.update(
            *(a[lo:hi] for a in arrays),
            sample_weight=None if w is None else w[lo:hi],
            by=part if len(cols) > 1 else part[0],
        )
    _check_against_template(
        make,
        acc,
        arrays,
        w,
        tuple(np.asarray(c, dtype=object) for c in cols) if len(cols) > 1 else np.asarray(cols[0], dtype=object),
    )


@pytest.mark.parametrize("template", ["binary@0.5", "probability", "regression", "auc", "evaluator"])
def test_merges_of_disjoint_and_overlapping_shards_equal_one_pass(template):
    make, kind = TEMPLATES[template]
    rng = np.random.default_rng(3)
    n = 900
    y, p = _data(kind, rng, n)
    w = rng.random(n)
    keys = np.array(["a", "b", "c", "d", None], dtype=object)[rng.integers(0, 5, n)]
    one = sm.Sliced(make()).update(y, p, sample_weight=w, by=keys)
    # disjoint: each shard holds some slices only; overlapping: cut by rows
    low = np.isin(keys, ["a", "b"])
    disjoint = [sm.Sliced(make()).update(y[m], p[m], sample_weight=w[m], by=keys[m]) for m in (low, ~low)]
    thirds = [slice(0, 250), slice(250, 251), slice(251, n)]
    overlapping = [sm.Sliced(make()).update(y[s], p[s], sample_weight=w[s], by=keys[s]) for s in thirds]
    for shards in (disjoint, overlapping, overlapping[::-1]):
        merged = sm.Sliced(make())
        for s in shards:
            merged.merge(s)
        plus = shards[0] + shards[1]
        for s in shards[2:]:
            plus = plus + s
        for got, ci in ((merged, None), (plus, 0.9)):
            a, b = got.finalize(ci=ci), one.finalize(ci=ci)
            assert list(a.slices) == list(b.slices)
            assert_results_equal(a.overall, b.overall, rtol=1e-12)
            for k in b.slices:
                assert_results_equal(a.slices[k], b.slices[k], rtol=1e-12, atol=1e-15, what=f"{k!r}: ")
    if template == "binary@0.5":  # counts: the merged state is the single pass's, exactly
        merged = sm.Sliced(make()).update(y, p, by=keys[::-1])
        again = sm.Sliced(make()).update(y[:400], p[:400], by=keys[::-1][:400])
        again.merge(sm.Sliced(make()).update(y[400:], p[400:], by=keys[::-1][400:]))
        assert again == merged


def test_slices_found_in_one_shard_only_are_added_and_the_other_is_unchanged():
    a = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 1], by=["x", "y"])
    b = sm.Sliced(sm.BinaryConfusion()).update([1, 1, 0], [0, 1, 0], by=["y", "z", None])
    before = state_snapshot(b)
    a.merge(b)
    assert_state_unchanged(b, before)
    r = a.finalize()
    assert list(r.slices) == ["x", "y", "z", None]
    assert (r.slices["y"].fp, r.slices["y"].fn, r.slices["z"].tp, r.slices[None].tn) == (1, 1, 1, 1)


# ------------------------------------------------------------------ round trips
def _rich():
    acc = sm.Sliced(sm.RankAUC())
    acc.update([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.6], by=(['ü"x', "b", None, 'ü"x'], [1, 2, 1, 1]))
    acc.update([0, 1], [0.3, 0.3], by=(np.array(["b", "{json}"]), np.array([2.5, np.nan])))
    return acc


@pytest.mark.parametrize(
    "make",
    [
        _rich,
        lambda: sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(
            [1, 0, 1], [0.7, 0.2, 0.1], sample_weight=[1.0, 2.0, 0.5], by=["日本", "", "null"]
        ),
    ],
)
def test_save_load_and_pickle_keep_string_keys(make, tmp_path):
    acc = make()
    path = tmp_path / "sliced.state"
    acc.save(path)
    loaded = sm.load_state(path)
    assert type(loaded) is sm.Sliced and loaded == acc
    back = pickle.loads(pickle.dumps(acc))
    assert back == acc
    for other in (loaded, back):
        a, b = other.finalize(), acc.finalize()
        assert list(a.slices) == list(b.slices)
        for k in b.slices:
            assert_results_equal(a.slices[k], b.slices[k], rtol=0)
    # the keys are stored as JSON bytes: no pickled object in the file
    import zipfile

    with zipfile.ZipFile(path) as zf:
        assert "keys.npy" in zf.namelist()
    with np.load(path, allow_pickle=False) as z:
        doc = json.loads(z["keys"].tobytes().decode())
    assert isinstance(doc["keys"], list)


def test_rich_keys_sort_and_render():
    r = _rich().finalize()
    assert list(r.slices) == [("b", 2), ("b", 2.5), ("{json}", None), ('ü"x', 1), (None, 1)]
    text = str(r)
    assert "(null)" in text and "(all)" in text and text.count("\n") == 11
    assert text.splitlines()[-1].startswith("  over the slices (mean ± std, ddof=1): auc ")
    doc = json.loads(r.to_json())
    assert [s["key"] for s in doc["slices"]] == [list(k) for k in r.slices]
    page = r._repr_html_()
    assert page.count("<tr>") == 7 and "ü&quot;x" in page
    assert doc["slices"][0]["result"]["auc"] == r.slices[("b", 2)].auc


def test_a_corrupt_key_table_is_refused(tmp_path):
    acc = _rich()
    state = acc.state_dict()
    bad = dict(state)
    bad["keys"] = np.frombuffer(b'{"columns": 2, "names": ["a", "b"], "keys": [[1, {}]]}', np.uint8).copy()
    with pytest.raises(ValueError, match="keys"):
        sm.Sliced(sm.RankAUC()).load_state_dict(bad)
    bad = dict(state)
    bad["n"] = np.array([5], np.int64)
    with pytest.raises(ValueError, match="rows"):
        sm.Sliced(sm.RankAUC()).load_state_dict(bad)
    bad = dict(state)
    bad["slices.n#shape"] = bad["slices.n#shape"][:-1]
    with pytest.raises(ValueError, match="slices.n#shape"):
        sm.Sliced(sm.RankAUC()).load_state_dict(bad)
    fresh = sm.Sliced(sm.RankAUC()).load_state_dict(state)
    assert fresh == acc


# ------------------------------------------------------------------ refusals
def test_max_slices_is_a_clear_error_that_changes_nothing():
    acc = sm.Sliced(sm.BinaryConfusion(), max_slices=3).update([1, 0], [1, 0], by=[1, 2])
    snap, n = state_snapshot(acc), acc.n
    with pytest.raises(ValueError, match=r"by: 4 distinct slice keys seen, more than max_slices=3"):
        acc.update([1, 0, 1], [1, 0, 1], by=[3, 4, 1])
    assert acc.n == n and acc.n_slices == 2
    assert_state_unchanged(acc, snap)
    s = pd.Series([5, 6], name="user_id")
    with pytest.raises(ValueError, match=r"by \(user_id\): 4 distinct"):
        acc.update([1, 0], [1, 0], by=s)
    assert_state_unchanged(acc, snap)
    many = np.arange(1000)
    with pytest.raises(ValueError, match=r"by: 1,000 distinct slice keys in this batch alone, more than max_slices=3"):
        acc.update(many % 2, many % 2, by=many)
    with pytest.raises(ValueError, match=r"by \(by\[0\], by\[1\]\): 4 distinct slice keys in this batch"):
        acc.update([1, 0, 1, 1], [1, 0, 1, 1], by=([1, 1, 2, 2], ["a", "b", "a", "b"]))
    assert_state_unchanged(acc, snap)
    acc.update([1], [1], by=[3])  # the third slice still fits
    other = sm.Sliced(sm.BinaryConfusion(), max_slices=3).update([1], [1], by=[9])
    snap = state_snapshot(acc)
    with pytest.raises(ValueError, match="max_slices=3"):
        acc.merge(other)
    assert_state_unchanged(acc, snap)


def test_bad_by_is_named():
    acc = sm.Sliced(sm.BinaryConfusion()).update([1], [1], by=["a"])
    snap = state_snapshot(acc)
    with pytest.raises(ValueError, match="by has 2 rows but the batch has 3"):
        acc.update([1, 0, 1], [1, 0, 1], by=["a", "b"])
    with pytest.raises(ValueError, match=r"by\[1\] has 1 rows but the batch has 2"):
        acc.update([1, 0], [1, 0], by=(["a", "b"], [1]))
    with pytest.raises(ValueError, match=r"by\[1\] = inf"):
        acc.update([1, 0], [1, 0], by=np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="these keys have 2 columns"):
        acc.update([1, 0], [1, 0], by=(["a", "b"], [1, 2]))
    with pytest.raises(TypeError, match="needs the slice keys"):
        acc.update([1, 0], [1, 0])
    with pytest.raises(TypeError, match=r"by\[1\] = .*: slice keys must be"):
        acc.update([1, 0], [1, 0], by=np.array(["a", object()], dtype=object))
    with pytest.raises(TypeError, match="datetime64"):
        acc.update([1, 0], [1, 0], by=np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"))
    with pytest.raises(ValueError, match=r"p\[1\] = 2"):
        acc.update([1, 0], [1, 2], by=["a", "b"])
    assert_state_unchanged(acc, snap)


def test_templates_and_settings():
    with pytest.raises(ValueError, match="template must be empty"):
        sm.Sliced(sm.BinaryConfusion().update([1], [1]))
    with pytest.raises(TypeError, match="template must be an accumulator"):
        sm.Sliced(object())
    with pytest.raises(TypeError, match="not be a Sliced"):
        sm.Sliced(sm.Sliced(sm.RankAUC()))
    with pytest.raises(ValueError, match="max_slices"):
        sm.Sliced(sm.RankAUC(), max_slices=0)
    with pytest.raises(TypeError, match="Sliced accumulator"):
        sm.Evaluator({"s": sm.Sliced(sm.RankAUC())})
    with pytest.raises(ValueError, match="different settings"):
        sm.Sliced(sm.BinaryConfusion()).merge(sm.Sliced(sm.BinaryConfusion(threshold=0.5)))
    with pytest.raises(ValueError, match="no observations"):
        sm.Sliced(sm.BinaryConfusion()).finalize()
    with pytest.raises(ValueError, match="no sample_weight"):
        sm.Sliced(sm.ClusterContingency()).update([1, 2], [1, 2], sample_weight=[1.0, 1.0], by=[0, 0])


# ------------------------------------------------------------------ key kinds
def test_pandas_columns_frames_and_masked_keys():
    country = pd.Series(["uk", "fr", None, "uk"], name="country", dtype="category")
    device = pd.Series([1, 2, pd.NA, 1], name="device", dtype="Int64")
    y, p = np.array([1, 0, 1, 1]), np.array([1, 1, 0, 1])
    by_tuple = sm.Sliced(sm.BinaryConfusion()).update(y, p, by=(country, device))
    by_frame = sm.Sliced(sm.BinaryConfusion()).update(y, p, by=pd.DataFrame({"country": country, "device": device}))
    assert by_tuple == by_frame
    r = by_frame.finalize()
    assert list(r.slices) == [("fr", 2), ("uk", 1), (None, None)] and r.rows[("uk", 1)] == 2
    assert r.by == ("country", "device") and "by country, device" in str(r)
    frame = r.to_frame()
    assert frame.index.names == ["country", "device"] and frame.loc[("uk", 1), "rows"] == 2
    assert frame.loc[("fr", 2), "fp"] == 1
    masked = np.ma.masked_array([3, 4, 3, 0], mask=[0, 0, 0, 1])
    r = sm.Sliced(sm.BinaryConfusion()).update(y, p, by=masked).finalize()
    assert list(r.slices) == [3, 4, None] and r.rows[None] == 1
    # an integer key and the same number as a float (pandas with nulls) are one slice
    acc = sm.Sliced(sm.BinaryConfusion()).update(y[:2], p[:2], by=[1, 2])
    acc.update(y[2:], p[2:], by=np.array([2.0, np.nan]))
    assert list(acc.finalize().slices) == [1, 2, None]
    # booleans sort before numbers and strings; True and 1, equal as dict keys, do not mix
    acc = sm.Sliced(sm.BinaryConfusion()).update(y[:3], p[:3], by=np.array([True, False, True]))
    acc.update(y[3:], p[3:], by=["yes"])
    snap = state_snapshot(acc)
    with pytest.raises(ValueError, match="the keys True and 1 are of different kinds"):
        acc.update(y[2:], p[2:], by=[1, 7])
    assert_state_unchanged(acc, snap)
    assert list(acc.finalize().slices) == [False, True, "yes"]


def test_a_slice_whose_weights_sum_to_zero_has_no_scores():
    acc = sm.Sliced(sm.ProbabilityScores()).update(
        [1, 0, 1], [0.9, 0.2, 0.4], sample_weight=[1.0, 0.0, 2.0], by=["a", "b", "a"]
    )
    r = acc.finalize()
    assert r.slices["b"] is None and np.isnan(r.slice_log_loss[1]) and r.rows["b"] == 1
    assert "undefined" in str(r)
    json.loads(r.to_json())


def test_table_kernels_agree_with_one_accumulator_per_slice():
    rng = np.random.default_rng(11)
    n = 5000
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.random(n)
    w = rng.random(n)
    keys = rng.integers(0, 40, n)
    fast = sm.Sliced(sm.BinaryConfusion(threshold=0.3)).update(y, s, sample_weight=w, by=keys)
    general = sm.Sliced(sm.Evaluator({"b": sm.BinaryConfusion(threshold=0.3)}))
    general.update(y, s, sample_weight=w, by=keys)
    a, b = fast.finalize(), general.finalize()
    for k in a.slices:
        for f in ("tp", "fp", "fn", "tn", "f1", "mcc"):
            assert a.slices[k][f] == pytest.approx(b.slices[k][f], rel=1e-13)


def test_copy_reset_and_prepared_batches():
    acc = sm.Sliced(sm.RegressionErrors())
    batch = acc.prepare([1.0, 2.0], [1.5, 2.5], by=["a", "b"])
    assert batch.n == 2
    acc.fold(batch)
    cp = acc.copy()
    cp.update([3.0], [3.0], by=["c"])
    assert acc.n_slices == 2 and cp.n_slices == 3
    with pytest.raises(TypeError, match="Sliced.prepare"):
        acc.fold(sm.RegressionErrors().prepare([1.0], [1.0]))
    with pytest.raises(TypeError, match="another template"):
        acc.fold(sm.Sliced(sm.BinaryConfusion()).prepare([1], [1], by=[1]))
    assert acc.reset() is acc and acc.n == 0 and acc.n_slices == 0
    acc.update([1.0], [2.0], by=[("x")])
    assert list(acc.finalize().slices) == ["x"]


# ------------------------------------------------------- intervals and report
def _ci_data(n=3000, seed=5):
    rng = np.random.default_rng(seed)
    key = rng.choice(["a", "b", "c", "d", "e"], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    y = rng.integers(0, 2, n)
    right = rng.random(n) < np.where(key == "c", 0.6, 0.85)
    p = np.where(right, y, 1 - y) * 0.6 + 0.2
    return y, p, key


def test_ci_reaches_every_slice_and_flags_follow_the_intervals():
    y, p, key = _ci_data()
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=key).finalize(ci=0.9)
    assert r.ci == 0.9 and r.overall == sm.BinaryConfusion(threshold=0.5).update(y, p).finalize(ci=0.9)
    seen = set()
    for k in sorted(set(key.tolist())):
        m = key == k
        direct = sm.BinaryConfusion(threshold=0.5).update(y[m], p[m]).finalize(ci=0.9)
        assert_results_equal(r.slices[k], direct)
        expect = tuple(
            c for c in ("accuracy", "f1") if not direct[f"{c}_ci_lower"] <= r.overall[c] <= direct[f"{c}_ci_upper"]
        )
        assert r.differs[k] == expect
        seen.update(expect)
    assert "c" in [k for k, v in r.differs.items() if "f1" in v] and seen
    i = list(r.slices).index("c")
    assert r.slice_f1_differs[i] and r.slice_f1_ci_lower[i] == r.slices["c"].f1_ci_lower
    plain = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=key).finalize()
    assert plain.ci is None and all(v == () for v in plain.differs.values())
    assert "f1_ci_lower" not in plain.slices["a"] and "slice_f1_differs" not in plain


def test_ci_with_an_evaluator_and_a_template_without_intervals():
    y, p, key = _ci_data(800)
    r = sm.Sliced(sm.Evaluator(task="binary")).update(y, p, by=key).finalize(ci=0.95)
    assert r.scores == ("auc", "f1") and "auc_ci_lower" in r.slices["a"]
    text = r.to_text()
    assert "auc 95% CI" in text and "differs" in text
    acc = sm.Sliced(sm.Calibration()).update(y, p, by=key)
    with pytest.raises(TypeError, match="confidence intervals"):
        acc.finalize(ci=0.95)
    with pytest.raises(ValueError, match="ci"):
        sm.Sliced(sm.BinaryConfusion()).update([1], [1], by=["a"]).finalize(ci=1.5)


def test_the_text_sorts_by_size_or_score_and_keeps_the_top():
    y, p, key = _ci_data()
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=key).finalize(ci=0.95)
    sizes = {k: int((key == k).sum()) for k in set(key.tolist())}
    assert r.order() == sorted(sizes, key=lambda k: -sizes[k])
    f1 = {k: r.slices[k].f1 for k in r.slices}
    assert r.order("f1") == sorted(f1, key=lambda k: -f1[k])
    assert r.order("f1", ascending=True) == sorted(f1, key=lambda k: f1[k])
    assert r.order("key") == sorted(sizes)
    lines = r.to_text(sort="f1", ascending=True, top=2).splitlines()
    body = [ln.split()[0] for ln in lines[4:6]]
    assert body == r.order("f1", ascending=True)[:2] and "3 more slices" in lines[6]
    assert "sorted by f1 (lowest first)" in lines[0]
    flagged = [ln for ln in lines if ln.strip().startswith("c ")]
    assert flagged and flagged[0].rstrip().endswith("accuracy f1")
    for bad, err in [
        ({"sort": "nope"}, ValueError),
        ({"sort": 3}, TypeError),
        ({"top": 0}, ValueError),
        ({"top": 1.5}, TypeError),
        ({"top": 2, "max_rows": 3}, ValueError),
        ({"ascending": "yes"}, TypeError),
    ]:
        with pytest.raises(err, match=next(iter(bad))):
            r.to_text(**bad)


def test_undefined_scores_sort_last():
    acc = sm.Sliced(sm.BinaryConfusion())
    acc.update([1, 0, 1], [1, 0, 0], sample_weight=[1.0, 1.0, 1.0], by=["a", "a", "b"])
    acc.update([1], [1], sample_weight=[0.0], by=["z"])
    r = acc.finalize()
    assert r.slices["z"] is None and r.order("accuracy")[-1] == "z"
    assert r.order("accuracy", ascending=True)[-1] == "z"


def test_json_and_frame_carry_intervals_and_flags():
    y, p, key = _ci_data()
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=key).finalize(ci=0.95)
    doc = json.loads(r.to_json())
    assert doc["ci"] == 0.95
    for s in doc["slices"]:
        assert s["differs"] == list(r.differs[s["key"]])
        assert s["result"]["f1_ci_lower"] == r.slices[s["key"]].f1_ci_lower
    frame = r.to_frame(overall=False)
    assert list(frame["f1_differs"]) == ["f1" in r.differs[k] for k in r.slices]
    assert list(frame["f1_ci_upper"]) == [r.slices[k].f1_ci_upper for k in r.slices]
    again = pickle.loads(pickle.dumps(r))
    assert again.ci == 0.95 and again.differs == r.differs


def test_the_plot_draws_the_largest_slices(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(2)
    key = rng.integers(0, 60, 5000)
    y = rng.integers(0, 2, 5000)
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, rng.random(5000), by=key).finalize(ci=0.95)
    path = r.plot_scores(str(tmp_path), "f1", max_slices=10)
    assert path.endswith(".png") and (tmp_path / "slices_f1.png").stat().st_size > 1000
    paths = r.plot(str(tmp_path / "all"))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["slices_accuracy.png", "slices_f1.png"]
    with pytest.raises(ValueError, match="score"):
        r.plot_scores(str(tmp_path), "nope")
    with pytest.raises(ValueError, match="max_slices"):
        r.plot_scores(str(tmp_path), max_slices=0)


# ------------------------------------------------------------ summary (folds)
def test_summary_is_the_mean_and_sample_std_over_the_slices():
    rng = np.random.default_rng(8)
    n = 2000
    fold = rng.integers(0, 5, n)
    y = rng.integers(0, 2, n)
    p = rng.random(n)
    r = sm.Sliced(sm.Evaluator(task="binary", max_bins=None)).update(y, p, by=fold).finalize()
    s = r.summary()
    frame = pd.DataFrame({"y": y, "p": p, "fold": fold})
    from sklearn.metrics import f1_score, roc_auc_score

    auc = frame.groupby("fold").apply(lambda g: roc_auc_score(g["y"], g["p"]), include_groups=False)
    f1 = frame.groupby("fold").apply(lambda g: f1_score(g["y"], g["p"] >= 0.5), include_groups=False)
    assert s.n_slices == 5 and s.auc_slices == 5
    assert s.auc_mean == pytest.approx(auc.mean(), rel=1e-12)
    assert s.auc_std == pytest.approx(auc.std(ddof=1), rel=1e-9)
    assert s.f1_std == pytest.approx(f1.std(ddof=1), rel=1e-9)
    text = r.to_text()
    assert "over the slices (mean ± std, ddof=1)" in text.splitlines()[-1]
    assert json.loads(r.to_json())["summary"]["auc_std"] == pytest.approx(s.auc_std)
    assert r.summary("accuracy").accuracy_slices == 5
    with pytest.raises(ValueError, match="scores"):
        r.summary("nope")
    with pytest.raises(TypeError, match="scores"):
        r.summary(3)


def test_summary_leaves_out_undefined_slices_and_needs_two_for_a_std():
    acc = sm.Sliced(sm.BinaryConfusion())
    acc.update([1, 0, 1, 0, 1], [1, 0, 0, 0, 1], sample_weight=[1.0, 1.0, 1.0, 1.0, 0.0], by=["a", "a", "b", "b", "c"])
    r = acc.finalize()
    s = r.summary()
    assert r.slices["c"] is None and s.accuracy_slices == 2 and s.n_slices == 3
    assert s.accuracy_mean == pytest.approx(0.75)
    assert s.accuracy_std == pytest.approx(np.std([1.0, 0.5], ddof=1))
    assert "(2 slices)" in r.to_text()
    one = sm.Sliced(sm.RankAUC()).update([1, 0], [0.9, 0.1], by=["a", "a"]).finalize().summary()
    assert one.auc_mean == 1.0 and math.isnan(one.auc_std)


def test_the_counting_sort_is_a_stable_argsort():
    from streammetrics._kernels import grouped as G

    rng = np.random.default_rng(4)
    for groups in (1, 3, 700):
        local = rng.integers(0, groups, 5000).astype(np.int64)
        starts = np.r_[0, np.cumsum(np.bincount(local, minlength=groups))[:-1]].astype(np.int64)
        order = np.empty(5000, np.int64)
        G.group_scatter(np.arange(5000, dtype=np.int64), local, starts, order)
        np.testing.assert_array_equal(order, np.argsort(local, kind="stable"))
        for a in (rng.random(5000), rng.integers(0, 2, 5000).astype(np.int8), rng.random(5000) < 0.5):
            out = np.empty_like(a)
            G.group_scatter(a, local, starts, out)
            np.testing.assert_array_equal(out, a[order])


def test_second_moments_that_overflow_are_kept_by_their_slice_alone():
    """Residuals near 1e80 overflow r**4 but not r**2: the scores stay, the intervals
    are refused for the overall state and the slice of that row, and no state holds inf."""
    acc = sm.Sliced(sm.RegressionErrors()).update([0.0, 1e80, 1.0], [0.0, 0.0, 0.5], by=["a", "b", "a"])
    acc.update([2.0, 3.0], [2.5, 3.0], by=["a", "b"])
    assert all(np.isfinite(v).all() for k, v in acc.state_dict().items() if v.dtype.kind == "f")
    with pytest.raises(ValueError, match="second moments"):
        acc.finalize(ci=0.9)
    with pytest.raises(ValueError, match="^1 rows of this state have no second moments"):
        acc._slice_acc(1).finalize(ci=0.9)
    want = sm.RegressionErrors().update([0, 1, 2], [0, 0.5, 2.5])
    assert acc._slice_acc(0).finalize(ci=0.9) == want.finalize(ci=0.9)
    assert acc.finalize().slices["a"] == want.finalize()
    fresh = sm.Sliced(sm.RegressionErrors()).update([2.0, 3.0], [2.5, 3.0], by=["a", "b"])
    assert fresh.finalize(ci=0.9).slices["a"] == sm.RegressionErrors().update([2.0], [2.5]).finalize(ci=0.9)


def test_keys_beyond_int64_and_large_floats_are_kept():
    y, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3])
    big = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=np.array([1, 2, 3, 2**63 + 5], dtype=np.uint64))
    assert sorted(big.finalize().slices) == [1, 2, 3, 2**63 + 5]
    floats = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=[1e20, 1e20, 2.0, 2.5])
    assert sorted(floats.finalize().slices, key=float) == [2, 2.5, 1e20]
    for acc in (big, floats):
        assert pickle.loads(pickle.dumps(acc)) == acc
        assert sm.Sliced(sm.BinaryConfusion(threshold=0.5)).load_state_dict(acc.state_dict()) == acc
    # 1e20 and the int 10**20 are one key, as 2.0 and 2 are
    merged = floats.copy().merge(sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update([1], [0.9], by=[10**20]))
    assert merged.finalize().slices[10**20].n == 3


def test_an_infinite_key_is_reported_at_its_first_row():
    with pytest.raises(ValueError, match=r"^by\[1\] = inf: slice keys must be finite"):
        sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(
            [0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], by=[1.0, math.inf, -math.inf, 3.0]
        )


def test_a_list_of_numbers_and_strings_keeps_its_numbers():
    y, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3])
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=[1, "x", 1, "x"])
    assert set(acc.finalize().slices) == {1, "x"}
    acc.update(y, p, by=[1, 1, 2, 2])
    assert {k: r.n for k, r in acc.finalize().slices.items()} == {1: 4, 2: 2, "x": 2}


def test_true_beside_one_is_refused_in_one_batch_as_in_two():
    y, p = np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.4])
    with pytest.raises(ValueError, match=r"^by\[2\] = True: the keys 1 and True are of different kinds"):
        sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=np.array([1, 1, True, True], dtype=object))
    two = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[:2], p[:2], by=np.array([1, 1], dtype=object))
    with pytest.raises(ValueError, match="the keys 1 and True are of different kinds"):
        two.update(y[2:], p[2:], by=np.array([True, True], dtype=object))
    # booleans alone, or numbers alone, are slices as before
    ok = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=np.array([True, False, True, None], dtype=object))
    assert {k: r.n for k, r in ok.finalize().slices.items()} == {False: 1, True: 2, None: 1}


def test_check_merge_refuses_what_merge_would_and_changes_nothing():
    a = sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=2).update([1, 0], [0.9, 0.1], by=["x", "y"])
    b = sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=2).update([1, 1], [0.9, 0.2], by=["x", "z"])
    before = a.to_bytes()
    with pytest.raises(ValueError, match="max_slices") as checked:
        a.check_merge(b)
    with pytest.raises(ValueError) as merged:
        a.merge(b)
    assert str(checked.value) == str(merged.value) and a.to_bytes() == before
    same = sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=2).update([0], [0.3], by=["y"])
    a.check_merge(same)  # nothing to refuse
    assert a.to_bytes() == before
    a.check_merge(sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=2))  # an empty one
