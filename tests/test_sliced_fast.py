"""The fast paths of Sliced give the results of the plain ones.

Dense integer keys are read by value (never coded); a column with booleans
and numbers is checked for ``True == 1`` and no other; the key index is built
late; an Evaluator copy shares its settings; average precision is read from
the points without the curve. Each is checked against an independent
reference: the same keys made sparse (so they take the coded path), the
template fed each slice's rows alone, or the curve built in full.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.metrics.ranking.curves import curve_from_points, pr
from streammetrics.metrics.ranking.points import Points
from streammetrics.sliced import encode as K

from .harness import assert_results_equal, assert_state_unchanged, state_snapshot
from .test_sliced import _check_against_template

pytest.importorskip("pandas")

TABLE_TEMPLATES = {
    "binary": lambda: sm.BinaryConfusion(),
    "binary@0.5": lambda: sm.BinaryConfusion(threshold=0.5),
    "probability": lambda: sm.ProbabilityScores(),
    "regression": lambda: sm.RegressionErrors(),
}


def _arrays(name, rng, n):
    if name == "regression":
        y = rng.normal(size=n) * 3 + 10
        return y, y + rng.normal(size=n)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.round(rng.random(n), 3)
    return (y, (s >= 0.5).astype(np.int64)) if name == "binary" else (y, s)


def _fold(acc, arrays, w, by, cuts):
    n = len(by)
    edges = [0, *sorted(c % (n + 1) for c in cuts), n]
    for a, b in zip(edges[:-1], edges[1:]):
        acc.update(*(x[a:b] for x in arrays), sample_weight=None if w is None else w[a:b], by=by[a:b])
    return acc


# ------------------------------------------------------------- dense keys
def test_dense_and_sparse_integer_keys_are_coded():
    dense = K.encode(np.array([5, 3, 5, 9, 3]), 5)
    np.testing.assert_array_equal(dense.codes, [1, 0, 1, 2, 0])
    assert [k[0][1] for k in dense.keys] == [3, 5, 9]
    sparse = K.encode(np.array([0, 10**9, 0]), 3)
    np.testing.assert_array_equal(sparse.codes, [0, 1, 0])


@settings(max_examples=40, deadline=None)
@given(
    template=st.sampled_from(sorted(TABLE_TEMPLATES)),
    n=st.integers(1, 400),
    slices=st.integers(1, 60),
    low=st.integers(-(2**40), 2**40),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 400), max_size=4),
    weighted=st.booleans(),
)
def test_dense_integer_keys_give_the_coded_result_and_each_slices_own(template, n, slices, low, seed, cuts, weighted):
    rng = np.random.default_rng(seed)
    make = TABLE_TEMPLATES[template]
    arrays = _arrays(template, rng, n)
    w = rng.random(n) * 2 if weighted else None
    values = rng.integers(0, slices, n)
    dense = low + values  # a range a few times the distinct keys: read by value
    sparse = low + values * 10**7  # the same grouping, spread out: coded
    a = _fold(sm.Sliced(make()), arrays, w, dense, cuts)
    b = _fold(sm.Sliced(make()), arrays, w, sparse, cuts)
    ra, rb = a.finalize(), b.finalize()
    # the same kernels over the same rows in the same order: equal to the last bit
    assert [int(k - low) for k in ra.slices] == [int(k - low) // 10**7 for k in rb.slices]
    for (ka, x), (kb, y) in zip(ra.slices.items(), rb.slices.items()):
        assert x == y, (ka, kb)
    assert ra.overall == rb.overall
    _check_against_template(make, a, arrays, w, dense)


def test_dense_keys_after_other_keys_and_across_merges():
    rng = np.random.default_rng(3)
    n = 3000
    y, p = (rng.random(n) < 0.3).astype(np.int64), rng.random(n)
    by = rng.integers(-50, 50, n)
    whole = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by)
    first = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[:10], p[:10], by=by[:10])
    twin = first.copy()  # its key index is built later, independently
    first.update(y[10:2000], p[10:2000], by=by[10:2000]).update(y[2000:], p[2000:], by=by[2000:])
    assert first == whole
    other = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[10:], p[10:], by=by[10:])
    assert twin.merge(other) == whole
    _check_against_template(lambda: sm.BinaryConfusion(threshold=0.5), whole, (y, p), None, by)


def test_bad_rows_with_dense_keys_change_nothing():
    acc = sm.Sliced(sm.ProbabilityScores()).update([1, 0], [0.2, 0.9], by=[1, 2])
    before = state_snapshot(acc)
    with pytest.raises(ValueError, match=r"p\[2\]"):
        acc.update([1, 0, 1], [0.2, 0.3, 1.5], by=[1, 2, 3])
    with pytest.raises(ValueError, match="max_slices"):
        sm.Sliced(sm.ProbabilityScores(), max_slices=2).update([1, 0, 1], [0.2, 0.3, 0.5], by=[1, 2, 3])
    assert_state_unchanged(acc, before)


# ------------------------------------------------------- booleans, numbers
def test_booleans_and_numbers_in_one_column_are_refused_across_batches_and_merges():
    acc = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 0], by=[0, 1])
    before = state_snapshot(acc)
    with pytest.raises(ValueError, match="True == 1"):
        acc.update([1], [1], by=[True])
    assert_state_unchanged(acc, before)
    acc.update([1], [0], by=[2])  # numbers still welcome
    flags = sm.Sliced(sm.BinaryConfusion()).update([1], [1], by=[False])
    with pytest.raises(ValueError, match="True == 1"):
        acc.merge(flags)
    with pytest.raises(ValueError, match="True == 1"):
        flags.merge(acc)
    # a boolean that equals no number here is a key of its own
    ok = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 0], by=[5, 7]).update([1], [1], by=[True])
    assert list(ok.finalize().slices) == [True, 5, 7]
    # the check is per column: a cross of a boolean and an integer column is fine
    r = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 1], by=([True, False], [1, 0])).finalize()
    assert list(r.slices) == [(False, 0), (True, 1)]


def test_a_loaded_state_remembers_its_key_kinds(tmp_path):
    acc = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 0], by=[0, 1])
    path = tmp_path / "s"
    acc.save(path)
    for back in (sm.load_state(path), pickle.loads(pickle.dumps(acc))):
        with pytest.raises(ValueError, match="True == 1"):
            back.update([1], [1], by=[True])


# ------------------------------------------------------------ Evaluator copies
def test_an_evaluator_copy_is_independent_and_takes_the_templates_batches():
    rng = np.random.default_rng(4)
    y, p = (rng.random(500) < 0.4).astype(np.int64), rng.random(500)
    ev = sm.Evaluator(task="binary")
    twin = ev.copy()
    batch = ev.prepare(y, p)
    twin.fold(batch)
    assert ev.n == 0 and twin.n == 500
    ref = sm.Evaluator(task="binary").update(y, p)
    assert twin == ref
    for name, part in ref.finalize().parts.items():
        assert_results_equal(twin.finalize().parts[name], part, rtol=0.0, what=f"{name}: ")
    again = twin.copy().update(y[:10], p[:10])
    assert twin.n == 500 and again.n == 510
    assert again.settings == ev.settings and again.settings is not ev.settings
    custom = sm.Evaluator({"b": sm.BinaryConfusion(threshold=0.5), "auc": sm.RankAUC()})
    assert custom.copy().update(y, p) == custom.update(y, p)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_sliced_evaluator_equals_each_slices_own(weighted):
    rng = np.random.default_rng(5)
    n = 2000
    y, p = (rng.random(n) < 0.3).astype(np.int64), rng.random(n)
    w = rng.random(n) if weighted else None
    by = rng.integers(0, 12, n)
    acc = sm.Sliced(sm.Evaluator(task="binary"))
    _fold(acc, (y, p), w, by, [700, 1300])
    _check_against_template(lambda: sm.Evaluator(task="binary"), acc, (y, p), w, by)
    r = acc.finalize()
    for k in r.slices:
        m = by == k
        want = sm.RankAUC().update(y[m], p[m], sample_weight=None if w is None else w[m]).finalize()
        assert r.slices[k].parts["auc"].average_precision() == want.average_precision()


# ------------------------------------------------------- average precision
@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 80), seed=st.integers(0, 2**31), weighted=st.booleans(), zeros=st.floats(0.0, 0.9))
def test_average_precision_from_the_points_is_the_curves_bit_for_bit(n, seed, weighted, zeros):
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(n))
    if weighted:
        ab = rng.random((2, n)) * (rng.random((2, n)) >= zeros)
    else:
        ab = rng.integers(0, 5, (2, n)) * (rng.random((2, n)) >= zeros)
    precision, recall, _ = pr(*curve_from_points(scores, ab))
    want = float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))  # scikit-learn's steps along the curve
    got = Points((scores, ab), 0, weighted).average_precision()  # what states take
    assert got == want or (np.isnan(got) and np.isnan(want))


def test_average_precision_matches_scikit_learn():
    skm = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(6)
    y = (rng.random(5000) < 0.2).astype(np.int64)
    s = np.round(rng.random(5000) + 0.3 * y, 2)  # ties
    w = rng.random(5000)
    r = sm.RankAUC().update(y, s).finalize()
    assert abs(r.average_precision() - skm.average_precision_score(y, s)) < 1e-12
    rw = sm.RankAUC().update(y, s, sample_weight=w).finalize()
    assert abs(rw.average_precision() - skm.average_precision_score(y, s, sample_weight=w)) < 1e-12
    curve = sm.RankAUC().update(y, s).finalize()
    curve.pr_curve()  # the curve built first: the value comes from it
    assert curve.average_precision() == r.average_precision()


def test_a_prepared_batch_does_not_read_the_callers_keys_again():
    by = np.array([3, 4, 3, 5], np.int64)
    acc = sm.Sliced(sm.BinaryConfusion())
    batch = acc.prepare([1, 0, 1, 1], [1, 0, 0, 1], by=by)
    by[:] = 10**12  # far outside the range the batch was coded for
    acc.fold(batch)
    r = acc.finalize()
    assert dict(r.rows) == {3: 2, 4: 1, 5: 1}
    assert (r.slices[3].tp, r.slices[3].fn) == (1, 1)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=50), spread=st.integers(1, 30))
def test_the_value_table_is_numpys_unique(values, spread):
    from streammetrics._kernels.grouped import dense_codes, key_range

    a = np.array(values, np.int64) % spread - spread // 2 + values[0]
    lo, hi = (int(v) for v in key_range(a, 0, a.shape[0]))
    assert (lo, hi) == (int(a.min()), int(a.max()))
    codes, distinct = dense_codes(a, lo, hi - lo + 1)
    want_values, want_codes = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(distinct, want_values)
    np.testing.assert_array_equal(codes, want_codes.reshape(-1))


@settings(max_examples=80, deadline=None)
@given(
    distinct=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=300, unique=True),
    n=st.integers(1, 2000),
    step=st.sampled_from([0, 1, 1024, 7_000_021, 2**40]),
    sort=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_hashed_codes_of_sparse_keys_are_numpys_unique(distinct, n, step, sort, seed):
    # sparse values (a range far wider than the rows) are hashed, not sorted
    rng = np.random.default_rng(seed)
    values = np.array(distinct, np.int64)
    if step:  # an arithmetic progression: the keys a weak hash puts in runs of slots
        values = np.arange(values.shape[0], dtype=np.int64) * step + values[0] // 2
    a = values[rng.integers(0, values.shape[0], n)]
    if sort:
        a.sort()
    codes, got = K._unique_ints(a)
    want_values, want_codes = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(got, want_values)
    np.testing.assert_array_equal(codes, want_codes.reshape(-1))


@settings(max_examples=60, deadline=None)
@given(
    distinct=st.lists(st.floats(allow_nan=False), min_size=1, max_size=200),
    n=st.integers(1, 1000),
    seed=st.integers(0, 2**31),
)
def test_hashed_codes_of_float_keys_are_numpys_unique(distinct, n, seed):
    values = np.array(distinct + [0.0, -0.0], np.float64)
    a = values[np.random.default_rng(seed).integers(0, values.shape[0], n)]
    codes, got = K._unique_floats(a)
    want_values, want_codes = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(got, want_values)  # -0.0 and 0.0 one key, as == has them
    np.testing.assert_array_equal(codes, want_codes.reshape(-1))


@settings(max_examples=60, deadline=None)
@given(
    distinct=st.lists(st.text(max_size=6), min_size=1, max_size=60),
    n=st.integers(1, 600),
    as_bytes=st.booleans(),
    order=st.sampled_from(["random", "sorted", "strided", "big"]),
    seed=st.integers(0, 2**31),
)
def test_string_keys_are_coded_as_python_strings_are(distinct, n, as_bytes, order, seed):
    # a numpy string column and the same strings as Python objects agree
    values = np.array(distinct)
    if as_bytes:
        values = np.array([v.encode("utf-8") for v in distinct])
    a = values[np.random.default_rng(seed).integers(0, values.shape[0], 2 * n)]
    if order == "sorted":
        a.sort()
    elif order == "strided":
        a = a[::2]
    elif order == "big" and a.dtype.kind == "U":
        a = a.astype(a.dtype.newbyteorder(">"))
    got = K.encode(a, a.shape[0])
    want = K.encode(a.astype(object), a.shape[0])
    assert got.keys == want.keys
    np.testing.assert_array_equal(got.codes, want.codes)


def test_string_keys_past_the_cap_and_empty_strings(monkeypatch):
    a = np.array(["b", "", "a", "b", ""])
    got = K.encode(a, 5)
    assert [k[0] for k in got.keys] == [K.tag(""), K.tag("a"), K.tag("b")]
    np.testing.assert_array_equal(got.codes, [2, 0, 1, 2, 0])
    empty = np.array(["", ""], dtype="U0")
    assert [k[0] for k in K.encode(empty, 2).keys] == [K.tag("")]
    monkeypatch.setattr(K, "HASH_DISTINCT", 2)  # sorted by numpy instead: the same keys
    again = K.encode(a, 5)
    assert again.keys == got.keys
    np.testing.assert_array_equal(again.codes, got.codes)


def test_hashing_stops_past_its_cap_and_numpy_sorts_instead(monkeypatch):
    from streammetrics._kernels.grouped import hash_codes

    a = np.arange(5000, dtype=np.int64) * 10**12
    np.random.default_rng(0).shuffle(a)
    codes, values, m = hash_codes(a, 4999)
    assert m == -1  # more than cap distinct values: given up
    codes, values, m = hash_codes(a, 5000)
    assert m == 5000 and np.array_equal(values[codes], a)
    monkeypatch.setattr(K, "HASH_DISTINCT", 100)
    codes, got = K._unique_ints(np.concatenate([a, a[:7]]))
    np.testing.assert_array_equal(got, np.sort(a))
    np.testing.assert_array_equal(got[codes], np.concatenate([a, a[:7]]))


def test_sparse_integer_keys_give_each_slices_own_result():
    rng = np.random.default_rng(3)
    n = 20_000
    ids = rng.integers(-(2**62), 2**62, 300)
    by = ids[rng.integers(0, 300, n)]
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = rng.random(n)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5))
    for a, b in ((0, 7000), (7000, 7001), (7001, n)):
        acc.update(y[a:b], p[a:b], by=by[a:b])
    r = acc.finalize()
    assert sorted(r.slices) == sorted(int(v) for v in np.unique(by))
    for v in np.unique(by)[:40]:
        rows = by == v
        want = sm.BinaryConfusion(threshold=0.5).update(y[rows], p[rows]).finalize()
        assert_results_equal(r.slices[int(v)], want)


# ------------------------------------------------------- summed by key
def _spy_counts(monkeypatch):
    """The batches summed by key (before their keys are coded), in a list."""
    from streammetrics.sliced.accumulator import Sliced

    calls = []
    real = Sliced._sum_by_key

    def spy(self, *args):
        done = real(self, *args)
        if done:
            calls.append(args[2].shape[0])
        return done

    monkeypatch.setattr(Sliced, "_sum_by_key", spy)
    return calls


@pytest.mark.parametrize("template", ["labels", "threshold", "probability"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_summing_by_key_gives_the_coded_paths_state(monkeypatch, template, weighted, dtype):
    """Batches of integer keys summed by key, with keys far apart (too sparse
    for a table: coded) and new keys in later batches: the state of the same
    batches prepared (coded) and folded."""
    make = {
        "labels": lambda: sm.BinaryConfusion(),
        "threshold": lambda: sm.BinaryConfusion(threshold=0.5),
        "probability": sm.ProbabilityScores,
    }[template]
    calls = _spy_counts(monkeypatch)
    rng = np.random.default_rng(11)
    n = 4000
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = (rng.random(n) < 0.5).astype(np.int64) if template == "labels" else rng.random(n)
    w = rng.random(n) if weighted else None
    keys = rng.integers(0, 50, n)
    keys[[7, 1001, 2503]] = [-(10**6), 10**7, 77]  # a wide range: coded
    batches = [slice(0, 1000), slice(1000, 2500), slice(2500, n)]
    late = rng.integers(0, 50, n)
    late[2500:] += 30  # new keys in the last batch
    sparse = late * 10**9 if dtype is np.int64 else (late % 1024) * 2**20
    for by in (keys, late, sparse):
        by = by.astype(dtype)
        fast, coded = sm.Sliced(make()), sm.Sliced(make())
        for part in batches:
            ww = None if w is None else w[part]
            fast.update(y[part], p[part], sample_weight=ww, by=by[part])
            coded.fold(coded.prepare(y[part], p[part], sample_weight=ww, by=by[part]))
        assert fast == coded
        np.testing.assert_array_equal(fast.finalize().slice_n, coded.finalize().slice_n)
    assert calls  # the batches above were summed by key
    late = late.astype(dtype)
    _check_against_template(make, sm.Sliced(make()).update(y, p, sample_weight=w, by=late), (y, p), w, late)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_the_state_holds_no_array_of_the_callers(dtype):
    """The keys a batch counted by key brings are the state's own: changing
    the caller's arrays afterwards changes no slice."""
    rng = np.random.default_rng(6)
    y, p = (rng.random(3000) < 0.5).astype(np.int64), rng.random(3000)
    by = np.repeat(np.arange(30, dtype=dtype), 100)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by)
    before = state_snapshot(acc)
    want = acc.finalize()
    by[:] = 7
    y[:] = 0
    p[:] = 0.0
    assert_state_unchanged(acc, before)
    assert sorted(acc.finalize().slices) == sorted(want.slices) == list(range(30))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.uint32])
def test_narrow_and_unsigned_integer_keys_give_the_int64_keys_state(monkeypatch, dtype):
    """Integer keys of other widths are summed by key, with the state of the same keys as int64."""
    calls = _spy_counts(monkeypatch)
    rng = np.random.default_rng(12)
    info = np.iinfo(dtype)
    y, p = (rng.random(5000) < 0.4).astype(np.int64), rng.random(5000)
    if info.bits == 8:  # both limits of the type
        by = rng.integers(info.min, int(info.max) + 1, 5000)
        by[:2] = [info.min, info.max]
    else:  # a table's span of keys up to the type's largest
        by = rng.integers(int(info.max) - 80, int(info.max) + 1, 5000)
        by[0] = info.max
    by = by.astype(dtype)
    want = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by.astype(np.int64))
    got = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by)
    assert got == want and len(calls) == 2


def test_a_batch_of_too_many_hashed_keys_is_refused_once_hashing_passes_max_slices(monkeypatch):
    """Floats, sparse integers and strings are refused as soon as their hash table
    holds more than ``max_slices`` values: no sort of every row for the exact
    count, and nothing changed; below the cap, or with no cap, they are coded."""
    import streammetrics.sliced.encode as SK

    sorted_ = []
    real_sorted = SK._sorted
    monkeypatch.setattr(SK, "_sorted", lambda a: sorted_.append(a.shape[0]) or real_sorted(a))
    rng = np.random.default_rng(13)
    n = 20_000
    y, p = (rng.random(n) < 0.5).astype(np.int64), rng.random(n)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=500).update(y[:10], p[:10], by=p[:10])
    before = state_snapshot(acc)
    strings = np.array([f"user-{i}" for i in range(n)])
    for by, _label in (
        (p, "floats"),
        (rng.integers(0, 2**60, n), "ids"),
        (strings, "strings"),
        ((rng.integers(0, 2**60, n), strings), "a cross"),
    ):
        with pytest.raises(ValueError, match=r"more than max_slices=500 distinct slice keys in this batch alone"):
            acc.update(y, p, by=by)
        assert_state_unchanged(acc, before)
    assert not sorted_, "a refused batch was sorted"
    monkeypatch.setattr(SK, "HASH_DISTINCT", 300)  # past the hashing cap but within max_slices: sorted
    acc.update(y[:400], p[:400], by=rng.integers(0, 2**60, 400))
    assert sorted_ and acc.n_slices == 410
    assert sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=n).update(y, p, by=p).n_slices == n


def test_int32_keys_at_their_limits_are_counted_by_key():
    keys = np.array([-(2**31), 2**31 - 1, 0, 5, 5, -(2**31)], np.int32)
    y = np.array([1, 0, 1, 0, 1, 1])
    p = np.array([0.9, 0.1, 0.8, 0.2, 0.4, 0.3])
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=keys).finalize()
    assert dict(r.rows) == {-(2**31): 2, 0: 1, 5: 2, 2**31 - 1: 1}
    assert (r.slices[-(2**31)].tp, r.slices[-(2**31)].fn) == (1, 1)


def test_a_batch_counted_by_key_and_refused_changes_nothing_and_the_next_counts_right(monkeypatch):
    calls = _spy_counts(monkeypatch)
    rng = np.random.default_rng(2)
    y, p, by = (rng.random(500) < 0.5).astype(np.int64), rng.random(500), rng.integers(0, 9, 500)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[:100], p[:100], by=by[:100])
    before = state_snapshot(acc)
    bad = p[100:].copy()
    bad[250] = np.nan
    with pytest.raises(ValueError, match=r"p\[250\] = nan: scores must be finite"):
        acc.update(y[100:], bad, by=by[100:])
    with pytest.raises(ValueError, match="max_slices=3"):
        sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=3).update(y, p, by=by)
    assert_state_unchanged(acc, before)
    acc.update(y[100:], p[100:], by=by[100:])  # the refused batch's counts are gone
    assert acc == sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by)
    assert len(calls) >= 3


def test_integer_keys_counted_by_key_beside_keys_of_other_kinds():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    n = 600
    y, p = (rng.random(n) < 0.5).astype(np.int64), rng.random(n)
    ints = rng.integers(0, 5, n)
    keys = np.array([int(k) if i < 400 else f"s{k}" for i, k in enumerate(ints)], dtype=object)
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5))
    acc.update(y[:200], p[:200], by=ints[:200])  # counted by key
    acc.update(y[200:300], p[200:300], by=pd.Series(ints[200:300]))  # coded, the same keys
    acc.update(y[300:400], p[300:400], by=ints[300:400])
    acc.update(y[400:], p[400:], by=keys[400:])  # strings: the keys leave their integer form
    acc.update(y[:50], p[:50], by=ints[:50])  # coded now
    whole = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(
        np.concatenate([y, y[:50]]), np.concatenate([p, p[:50]]), by=np.concatenate([keys, ints[:50].astype(object)])
    )
    assert acc == whole
    assert set(acc.finalize().slices) == {*range(5), *(f"s{k}" for k in range(5))}


def test_a_pandas_series_of_integers_is_counted_by_key_and_named_as_when_coded(monkeypatch):
    pd = pytest.importorskip("pandas")
    calls = _spy_counts(monkeypatch)
    rng = np.random.default_rng(6)
    y, p = (rng.random(300) < 0.5).astype(np.int64), rng.random(300)
    country = pd.Series(rng.integers(0, 9, 300), name="country")
    fast = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=country)
    assert calls
    coded = sm.Sliced(sm.BinaryConfusion(threshold=0.5))
    coded.fold(coded.prepare(y, p, by=country))
    assert fast == coded
    assert fast.finalize().to_text() == coded.finalize().to_text()  # the column named "country"
    with pytest.raises(ValueError, match=r"by \('country'\): 9 distinct slice keys in this batch alone"):
        sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=3).update(y, p, by=country)
    nullable = pd.Series(country, dtype="Int64")  # may hold NA: coded
    assert sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=nullable) == coded
