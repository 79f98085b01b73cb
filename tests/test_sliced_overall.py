"""The overall state of a table template read off its slices' tables.

A template that declares its row terms keeps its slices as rows of tables that
merge linearly, so the overall state is their merge (counts summed,
compensated pairs merged) rather than a second fold of every row. Each check
compares it with an independent reference: the template fed every row in one
stream.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

from .harness import assert_results_equal

DERIVED = {"binary": lambda: sm.BinaryConfusion(), "binary@0.5": lambda: sm.BinaryConfusion(threshold=0.5)}


def _arrays(name, rng, n):
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.round(rng.random(n), 3)
    return (y, (s >= 0.5).astype(np.int64)) if name == "binary" else (y, s)


def test_templates_without_row_terms_fold_their_overall():
    acc = sm.Sliced(sm.RegressionErrors()).update([1.0, 0.0], [0.5, 0.25], by=[1, 2])
    assert acc._overall is not None and acc._overall.n == 2
    acc = sm.Sliced(sm.ProbabilityScores()).update([1.0, 0.0], [0.5, 0.25], by=[1, 2])
    assert acc._overall is None and acc.finalize(ci=0.9).overall == sm.ProbabilityScores().update(
        [1.0, 0.0], [0.5, 0.25]
    ).finalize(ci=0.9)


def _same(a, b):
    """Two sliced results with the same overall and slices, to the bit."""
    return a.overall == b.overall and dict(a.slices) == dict(b.slices) and dict(a.rows) == dict(b.rows)


def _edges(n, cuts):
    return [0, *sorted(c % (n + 1) for c in cuts), n]


def _assert_overall_is_the_template_on_every_row(make, acc, arrays, w):
    alone = make().update(*arrays, sample_weight=w)
    got = acc.finalize().overall
    assert_results_equal(got, alone.finalize(), rtol=1e-12, what="overall: ")
    state = acc.state_dict()
    for k, v in alone.state_dict().items():  # the counts to the row, the sums to 1e-12
        mine = state[f"overall.{k}"]
        if v.dtype.kind == "i":
            np.testing.assert_array_equal(mine, v, err_msg=k)
        else:
            np.testing.assert_allclose(
                mine.sum(axis=-1) if v.ndim > 1 else mine,
                v.sum(axis=-1) if v.ndim > 1 else v,
                rtol=1e-12,
                atol=1e-300,
                err_msg=k,
            )


@settings(max_examples=40, deadline=None)
@given(
    template=st.sampled_from(sorted(DERIVED)),
    n=st.integers(1, 500),
    slices=st.integers(1, 40),
    sparse=st.booleans(),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 500), max_size=4),
    shards=st.integers(1, 3),
)
def test_the_overall_read_off_the_tables_is_the_template_on_every_row(template, n, slices, sparse, seed, cuts, shards):
    rng = np.random.default_rng(seed)
    make = DERIVED[template]
    arrays = _arrays(template, rng, n)
    by = rng.integers(0, slices, n) * (10**9 if sparse else 1)  # coded, or read by value
    edges = _edges(n, cuts)
    parts = [sm.Sliced(make()) for _ in range(shards)]
    for j, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        parts[j % shards].update(*(x[a:b] for x in arrays), by=by[a:b])
    acc = parts[0]
    for other in parts[:0:-1]:  # merged in reverse order
        acc.merge(other)
    assert acc._overall is None  # unweighted rows: nothing folded twice
    assert acc.n == n
    _assert_overall_is_the_template_on_every_row(make, acc, arrays, None)
    # equal contents give equal states, whatever order the keys came in
    reverse = sm.Sliced(make()).update(*(x[::-1] for x in arrays), by=by[::-1])
    assert reverse == acc


@settings(max_examples=25, deadline=None)
@given(
    template=st.sampled_from(sorted(DERIVED)),
    n=st.integers(2, 300),
    seed=st.integers(0, 2**31),
    weighted_first=st.booleans(),
    merge=st.booleans(),
)
def test_weighted_rows_are_read_off_the_tables_too(template, n, seed, weighted_first, merge):
    rng = np.random.default_rng(seed)
    make = DERIVED[template]
    arrays = _arrays(template, rng, n)
    by = rng.integers(0, 7, n)
    w = rng.random(n) * 2
    h = n // 2
    plain = sm.Sliced(make()).update(*(x[:h] for x in arrays), by=by[:h])
    assert plain._overall is None
    if merge:  # a derived shard merged with a weighted one, one way or the other
        weighted = sm.Sliced(make()).update(*(x[h:] for x in arrays), sample_weight=w[h:], by=by[h:])
        acc = weighted.merge(plain) if weighted_first else plain.merge(weighted)
    else:
        acc = plain.update(*(x[h:] for x in arrays), sample_weight=w[h:], by=by[h:])
    assert acc._overall is None
    alone = make().update(*(x[:h] for x in arrays)).update(*(x[h:] for x in arrays), sample_weight=w[h:])
    assert_results_equal(acc.finalize().overall, alone.finalize(), rtol=1e-12, atol=1e-15)
    assert acc.n == n and acc.finalize().overall.n == n


@pytest.mark.parametrize("template", sorted(DERIVED))
def test_a_derived_state_saves_loads_pickles_and_copies(template, tmp_path):
    rng = np.random.default_rng(4)
    make = DERIVED[template]
    arrays = _arrays(template, rng, 2000)
    by = np.array(["uk", "fr", "de", "nl"])[rng.integers(0, 4, 2000)]
    acc = sm.Sliced(make()).update(*arrays, by=by)
    path = tmp_path / "state"
    acc.save(path)
    back = sm.Sliced.load(path)
    assert back == acc and back._overall is None  # read off the tables again
    assert _same(back.finalize(), acc.finalize())
    twin = pickle.loads(pickle.dumps(acc))
    assert twin == acc and _same(twin.finalize(), acc.finalize())
    copy = acc.copy()
    copy.update(*(x[:10] for x in arrays), by=by[:10])
    assert copy.n == acc.n + 10 and _same(acc.finalize(), back.finalize())  # the copy is independent
    _assert_overall_is_the_template_on_every_row(make, copy, tuple(np.r_[x, x[:10]] for x in arrays), None)
    # and a weighted state
    w = rng.random(2000)
    heavy = sm.Sliced(make()).update(*arrays, sample_weight=w, by=by)
    heavy.save(tmp_path / "heavy")
    again = sm.Sliced.load(tmp_path / "heavy")
    assert again == heavy and again._overall is None
    assert _same(again.finalize(), heavy.finalize())


def test_a_file_whose_overall_disagrees_with_its_slices_is_refused_or_kept_as_saved(tmp_path):
    acc = sm.Sliced(sm.BinaryConfusion()).update([1, 0, 1, 1], [1, 0, 0, 1], by=[1, 1, 2, 2])
    state = acc.state_dict()
    bad = dict(state)
    bad["overall.n"] = np.array([5], np.int64)  # more rows than the slices hold
    with pytest.raises(ValueError):
        sm.Sliced(sm.BinaryConfusion()).load_state_dict(bad)
    moved = dict(state)
    counts = state["overall.counts"].copy()
    counts[0] -= 1
    counts[1] += 1  # the same rows, in other cells: not the slices' sum, which no stream gives
    moved["overall.counts"] = counts
    with pytest.raises(ValueError, match="'overall.counts' is not the slices' entries merged"):
        sm.Sliced(sm.BinaryConfusion()).load_state_dict(moved)
    # weighted sums folded row by row overall (as earlier releases did) and apart
    # per slice differ by rounding: such a file loads, its overall read off the slices
    w = np.array([0.1, 0.7, 0.2, 0.3])
    heavy = sm.Sliced(sm.BinaryConfusion()).update([1, 0, 1, 1], [1, 0, 0, 1], sample_weight=w, by=[1, 1, 2, 2])
    rounded = heavy.state_dict()
    rounded["overall.wsums"] = rounded["overall.wsums"].copy()
    rounded["overall.wsums"][0, 0] = np.nextafter(rounded["overall.wsums"][0, 0], 1.0)
    back = sm.Sliced(sm.BinaryConfusion()).load_state_dict(rounded)
    assert back.finalize().overall.tp == pytest.approx(heavy.finalize().overall.tp, rel=1e-15)


def test_update_reads_the_key_column_in_place_and_prepare_copies_it():
    y = np.array([1, 0, 1, 1, 0, 1])
    p = np.array([1, 0, 0, 1, 1, 1])
    keys = np.array([3, 3, 4, 4, 5, 5])
    acc = sm.Sliced(sm.BinaryConfusion())
    batch = acc.prepare(y, p, by=keys)
    keys[:] = 5  # after prepare: the batch keeps the keys it was given
    acc.fold(batch)
    want = sm.Sliced(sm.BinaryConfusion()).update(y, p, by=np.array([3, 3, 4, 4, 5, 5]))
    assert acc == want
    again = sm.Sliced(sm.BinaryConfusion()).update(y, p, by=keys)
    assert list(again.finalize().slices) == [5] and again.finalize().slices[5].n == 6


def test_many_rows_per_slice_cross_the_count_blocks():
    rng = np.random.default_rng(8)
    n = 50_000  # many blocks of rows, a few slices
    y = rng.random(n) < 0.3
    s = rng.random(n)
    by = rng.integers(0, 3, n)
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, s, by=by).finalize()
    for key in range(3):
        m = by == key
        yy, pp = y[m], s[m] >= 0.5
        want = (int((yy & pp).sum()), int((~yy & pp).sum()), int((yy & ~pp).sum()), int((~yy & ~pp).sum()))
        got = r.slices[key]
        assert (got.tp, got.fp, got.fn, got.tn) == want
    assert r.overall.tp == int((y & (s >= 0.5)).sum()) and r.n == n


# ------------------------------------------------------------- lazy results
LAZY_TEMPLATES = {
    "binary@0.5": lambda: sm.BinaryConfusion(threshold=0.5),  # tables
    "probability": lambda: sm.ProbabilityScores(),  # tables, overall folded
    "auc": lambda: sm.RankAUC(),  # one accumulator per slice
    "evaluator": lambda: sm.Evaluator(task="binary"),
}


@pytest.mark.parametrize("template", sorted(LAZY_TEMPLATES))
def test_a_result_reads_the_state_it_was_finalized_from_whatever_follows(template):
    rng = np.random.default_rng(11)
    make = LAZY_TEMPLATES[template]
    n = 3000
    y = (rng.random(n) < 0.4).astype(np.int64)
    p = np.round(rng.random(n), 3)
    by = rng.integers(0, 12, n)
    h = 2000
    acc = sm.Sliced(make()).update(y[:h], p[:h], by=by[:h])
    first = acc.finalize()
    assert len(first.slices) == 12
    # more rows, a merge and a new slice after finalize: the first result keeps its state
    acc.update(y[h:], p[h:], by=by[h:])
    acc.merge(sm.Sliced(make()).update(y[:50], p[:50], by=np.full(50, 99)))
    for key in first.slices:  # read only now
        idx = np.flatnonzero(by[:h] == key)
        want = make().update(y[idx], p[idx]).finalize()
        assert_results_equal(first.slices[key], want, rtol=1e-12, atol=1e-15, what=f"slice {key}: ")
        assert first.rows[key] == idx.shape[0]
    assert 99 not in first.slices and first.n == h
    again = acc.finalize()
    assert 99 in again.slices and again.n == n + 50
    idx = np.flatnonzero(by == 3)
    assert_results_equal(again.slices[3], make().update(y[idx], p[idx]).finalize(), rtol=1e-12, atol=1e-15)


def test_lazy_values_read_like_the_eager_ones():
    rng = np.random.default_rng(12)
    n = 2000
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = rng.random(n)
    by = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, n)]
    acc = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by)
    lazy = acc.finalize()
    assert lazy._lazy  # nothing per slice computed yet
    assert repr(lazy).startswith("SlicedScores(n=2000, n_slices=4") and lazy._lazy
    eager = sm.SlicedResult(
        lazy.overall, {k: lazy.slices[k] for k in lazy.slices}, dict(lazy.rows), lazy.by, lazy.scores
    )
    assert list(lazy) == list(eager)  # the same fields in the same order
    for k in eager:
        np.testing.assert_array_equal(lazy[k], eager[k])
    assert str(lazy) == str(eager) and lazy.to_json() == eager.to_json()
    back = pickle.loads(pickle.dumps(acc.finalize()))
    assert list(back.slices) == list(lazy.slices) and all(back.slices[k] == lazy.slices[k] for k in lazy.slices)
    np.testing.assert_array_equal(back.slice_f1, lazy.slice_f1)
    assert dict(acc.finalize().differs) == dict.fromkeys("abcd", ())


def test_slices_read_from_several_threads_are_computed_once_each():
    import threading

    rng = np.random.default_rng(13)
    n = 5000
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = rng.random(n)
    by = rng.integers(0, 40, n)
    r = sm.Sliced(sm.RankAUC()).update(y, p, by=by).finalize()
    seen: list = []

    def read():
        seen.append([id(r.slices[k]) for k in r.slices])

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(s == seen[0] for s in seen)  # one result object per slice
    for k in (0, 17, 39):
        idx = np.flatnonzero(by == k)
        assert r.slices[k].auc == sm.RankAUC().update(y[idx], p[idx]).finalize().auc


# -------------------------------------------- an Evaluator's linear members
@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(2, 400),
    slices=st.integers(1, 30),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 400), max_size=3),
    weighted=st.booleans(),
    shards=st.integers(1, 3),
)
def test_an_evaluators_overall_folds_every_row_and_equals_the_template(n, slices, seed, cuts, weighted, shards):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    p = np.round(rng.random(n), 2)
    w = rng.random(n) * 2 if weighted else None
    by = rng.integers(0, slices, n)
    edges = _edges(n, cuts)
    parts = [sm.Sliced(sm.Evaluator(task="binary")) for _ in range(shards)]
    for j, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        parts[j % shards].update(y[a:b], p[a:b], sample_weight=None if w is None else w[a:b], by=by[a:b])
    acc = parts[0]
    for other in parts[1:]:
        acc.merge(other)
    assert acc._overall is not None  # an Evaluator's slices are its own: the overall folds every row
    alone = sm.Evaluator(task="binary").update(y, p, sample_weight=w)
    got, want = acc.finalize().overall, alone.finalize()
    for name in want.parts:
        assert_results_equal(got.parts[name], want.parts[name], rtol=1e-12, atol=1e-15, what=f"{name}: ")
    if w is None:  # counts: to the row
        assert (got.parts["binary"].tp, got.parts["binary"].tn) == (want.parts["binary"].tp, want.parts["binary"].tn)
        np.testing.assert_array_equal(
            acc.state_dict()["overall.calibration.counts"], alone.state_dict()["calibration.counts"]
        )
        assert got.parts["auc"].auc == want.parts["auc"].auc  # the rank state folded itself: exact
    # saved, loaded, copied and pickled, the overall is read off the same slices again
    back = sm.Sliced(sm.Evaluator(task="binary")).load_state_dict(acc.state_dict())
    twin = pickle.loads(pickle.dumps(acc))
    for other in (back, twin, acc.copy()):
        assert other == acc
        again = other.finalize().overall
        for name in want.parts:  # to the bit
            assert_results_equal(again.parts[name], got.parts[name], rtol=0.0, what=f"{name}: ")


def test_a_template_without_row_terms_folds_its_overall():
    for make in (sm.RankAUC, lambda: sm.Evaluator({"auc": sm.RankAUC()})):
        acc = sm.Sliced(make()).update([1, 0, 1], [0.5, 0.25, 0.75], by=[1, 2, 1])
        assert acc._overall is not None and acc._overall.n == 3


@settings(max_examples=20, deadline=None)
@given(
    template=st.sampled_from(["auc", "evaluator"]),
    n=st.integers(2, 400),
    slices=st.integers(2, 30),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 400), max_size=3),
    weighted=st.booleans(),
)
def test_per_slice_accumulators_sorted_by_value_or_by_code_agree(template, n, slices, seed, cuts, weighted):
    rng = np.random.default_rng(seed)
    make = LAZY_TEMPLATES[template]
    y = (rng.random(n) < 0.4).astype(np.int64)
    p = np.round(rng.random(n), 2)
    w = rng.random(n) if weighted else None
    values = rng.integers(0, slices, n)
    edges = _edges(n, cuts)
    dense = sm.Sliced(make())  # rows sorted by slice reading their codes by value
    sparse = sm.Sliced(make())  # the same grouping spread out: coded
    for a, b in zip(edges[:-1], edges[1:]):
        ww = None if w is None else w[a:b]
        dense.update(y[a:b], p[a:b], sample_weight=ww, by=values[a:b])
        sparse.update(y[a:b], p[a:b], sample_weight=ww, by=values[a:b] * 10**9)
    rd, rs = dense.finalize(), sparse.finalize()
    assert [k * 10**9 for k in rd.slices] == list(rs.slices)
    for k in rd.slices:
        assert_results_equal(rd.slices[k], rs.slices[k * 10**9], rtol=0.0, what=f"slice {k}: ")
        idx = np.flatnonzero(values == k)
        want = make().update(y[idx], p[idx], sample_weight=None if w is None else w[idx]).finalize()
        assert_results_equal(rd.slices[k], want, rtol=1e-12, atol=1e-15, what=f"slice {k}: ")
