"""RetrievalScores: per-query ranking scores under any batching, sharding and merge
order, grouped or not, against one-shot references (scikit-learn, ranx)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

from .harness import assert_results_equal, check_accumulator
from .registry import ref_retrieval

pytest.importorskip("sklearn")


@st.composite
def streams(draw):
    """Query-grouped rows (ties, empty queries, queries shorter than k, and queries longer than the 64 rows the
    kernel ranks itself), optional weights."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = rng.integers(1, draw(st.sampled_from([2, 8, 30, 160])), draw(st.integers(1, 25)))
    q = np.repeat(rng.permutation(10**5)[: sizes.size] - 500, sizes)
    n = q.size
    rel = rng.integers(0, 4, n) * (rng.random(n) < draw(st.sampled_from([0.0, 0.3, 0.8])))
    s = np.round(rng.random(n) + 0.2 * rel, draw(st.integers(0, 3)))
    w = None
    if draw(st.booleans()):
        w = np.repeat(rng.random(sizes.size) + 0.1, sizes)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    return (q, rel, s), w, cuts


def _pieces(arrays, w, cuts):
    edges = [0, *cuts, len(arrays[0])]
    return [(tuple(a[lo:hi] for a in arrays), None if w is None else w[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]


def _merged(make, shards, order):
    if order == "reverse":
        shards = shards[::-1]
    elif order == "tree":  # neighbours first, then the pairs
        while len(shards) > 1:
            shards = [shards[i] + shards[i + 1] if i + 1 < len(shards) else shards[i] for i in range(0, len(shards), 2)]
    out = make()
    for sh in shards:
        out.merge(sh)
    return out


@settings(max_examples=40)
@given(streams(), st.sampled_from(["forward", "reverse", "tree"]), st.booleans())
def test_any_batching_sharding_and_merge_order_gives_the_one_shot_scores(data, order, grouped):
    arrays, w, cuts = data
    make = lambda: sm.RetrievalScores(k=(1, 3, 10), grouped=grouped)  # noqa: E731
    expected = ref_retrieval(arrays, w, k=(1, 3, 10))
    pieces = _pieces(arrays, w, cuts)
    one = make()
    for a, pw in pieces:  # one shard, many batches
        one.update(*a, sample_weight=pw)
    shards = [make().update(*a, sample_weight=pw) for a, pw in pieces]  # a shard per batch
    merged = _merged(make, shards, order)
    for acc in (one, merged):
        r = acc.finalize()
        assert acc.n == len(arrays[0]) and r.queries == expected["queries"]
        assert r.empty_queries == expected["empty_queries"]
        for name, v in expected.items():
            np.testing.assert_allclose(r[name], v, rtol=1e-12, atol=1e-12, err_msg=name)
    assert_results_equal(merged.finalize(), one.finalize(), rtol=1e-12, atol=1e-12)


@settings(max_examples=25)
@given(streams())
def test_settings_follow_their_definitions(data):
    arrays, w, cuts = data
    q, rel, s = arrays
    acc = sm.RetrievalScores(k=(2, 5), gain="exp", ties="pessimistic", empty="skip", grouped=True, per_query=True)
    for a, pw in _pieces(arrays, w, cuts):
        acc.update(*a, sample_weight=pw)
    table = acc.query_table()
    assert list(table["query"]) == sorted(set(q.tolist()))
    for i, v in enumerate(table["query"]):
        at = q == v
        r, sc = rel[at].astype(float), s[at]
        ranked = r[np.lexsort((r, -sc))]  # ties pessimistic: least relevant first
        ideal = np.sort(r)[::-1]
        for k in (2, 5):
            disc = 1 / np.log2(np.arange(2, min(k, r.size) + 2))
            dcg = ((2 ** ranked[:k] - 1) * disc).sum()
            idcg = ((2 ** ideal[:k] - 1) * disc).sum()
            assert table[f"dcg@{k}"][i] == pytest.approx(dcg, rel=1e-12, abs=1e-12)
            assert table[f"ndcg@{k}"][i] == pytest.approx(dcg / idcg if idcg else 0.0, rel=1e-12, abs=1e-12)
    result, empty = acc.finalize(), table["empty"]
    if empty.all():
        assert result.mrr == 0.0
    else:
        assert result.mrr == pytest.approx(np.average(table["mrr"][~empty], weights=table["weight"][~empty]), rel=1e-12)
    assert result.empty_queries == int(empty.sum())


@settings(max_examples=10)
@given(streams())
def test_scores_equal_ranx_on_the_same_runs(data):
    ranx = pytest.importorskip("ranx")
    arrays, _, cuts = data
    q, rel, s = arrays
    s = s + np.arange(s.size) * 1e-9  # ranx's order among ties is its own: none here
    rel = rel.astype(np.int64)
    acc = sm.RetrievalScores(k=(1, 3, 10), grouped=True)
    for a, _ in _pieces((q, rel, s), None, cuts):
        acc.update(*a)
    r = acc.finalize()
    qrels = {str(v): {} for v in np.unique(q)}
    run = {str(v): {} for v in np.unique(q)}
    for i, (v, t, sc) in enumerate(zip(q, rel, s)):
        run[str(v)][f"d{i}"] = float(sc)
        if t > 0:
            qrels[str(v)][f"d{i}"] = int(t)
    keep = [v for v in qrels if qrels[v]]
    if not keep:
        return  # ranx needs a relevant row
    both = lambda d: {v: d[v] for v in keep}  # noqa: E731 - ranx scores the queries with a relevant row
    acc_skip = sm.RetrievalScores(k=(1, 3, 10), empty="skip").update(q, rel, s).finalize()

    def evaluate(metrics):
        with warnings.catch_warnings():  # ranx's own compile warnings
            warnings.simplefilter("ignore")
            return ranx.evaluate(ranx.Qrels(both(qrels)), ranx.Run(both(run)), metrics)

    names = {"ndcg": "ndcg", "map": "map", "precision": "precision", "recall": "recall", "hit_rate": "hit_rate"}
    for j, k in enumerate((1, 3, 10)):
        metrics = [f"{m}@{k}" for m in names.values()] + [f"mrr@{k}"]
        got = evaluate(metrics)
        for ours, theirs in names.items():
            assert acc_skip[ours][j] == pytest.approx(got[f"{theirs}@{k}"], rel=1e-12, abs=1e-12), (ours, k)
        assert acc_skip.mrr_at_k[j] == pytest.approx(got[f"mrr@{k}"], rel=1e-12, abs=1e-12)
    assert acc_skip.mrr == pytest.approx(evaluate("mrr"), rel=1e-12)
    assert r.queries == len(qrels) and r.empty_queries == len(qrels) - len(keep)


def test_grouped_shards_merge_exactly_in_the_protocol_harness():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, 60)
    q = np.repeat(np.arange(60) * 3, sizes)
    rel = rng.integers(0, 3, q.size)
    s = np.round(rng.random(q.size), 1)
    edges = np.linspace(0, q.size, 6).astype(int)  # contiguous shards: queries split across them
    batches = [(q[a:b], rel[a:b], s[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    make = lambda: sm.RetrievalScores(k=(1, 4), grouped=True)  # noqa: E731
    expected = ref_retrieval((q, rel, s), None, k=(1, 4))
    r = check_accumulator(make, batches, expected, rtol=1e-12)
    assert r.queries == 60


def test_grouped_state_stays_small_and_ungrouped_keeps_rows():
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(2000), 10)
    rel, s = rng.integers(0, 2, q.size), rng.random(q.size)
    grouped, plain = sm.RetrievalScores(grouped=True), sm.RetrievalScores()
    for lo in range(0, q.size, 997):
        grouped.update(q[lo : lo + 997], rel[lo : lo + 997], s[lo : lo + 997])
        plain.update(q[lo : lo + 997], rel[lo : lo + 997], s[lo : lo + 997])
    assert grouped.state_dict()["open_query"].size <= 20  # the first query and the one under way
    assert plain.state_dict()["open_query"].size == q.size
    assert_results_equal(grouped.finalize(), plain.finalize(), rtol=1e-12)


def test_bad_settings_and_states_are_refused():
    for kwargs, match in [
        ({"k": 0}, "k must be a positive integer"),
        ({"k": (1, 1)}, "twice"),
        ({"gain": "log"}, "gain must be one of"),
        ({"ties": "random"}, "ties must be one of"),
        ({"empty": "one"}, "empty must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            sm.RetrievalScores(**kwargs)
    acc = sm.RetrievalScores(k=2, grouped=True).update([1, 1, 2, 3], [1, 0, 1, 0], [0.3, 0.2, 0.1, 0.0])
    state = acc.state_dict()
    for key, value, match in [
        ("open_score", state["open_score"][:1], "different lengths"),
        ("tail", np.array([5, 0]), "'tail' must begin"),
        ("queries", np.array([9]), "do not fit"),
        ("empty", state["queries"] + 1, "do not fit"),
    ]:
        bad = dict(state, **{key: value})
        with pytest.raises(ValueError, match=match):
            sm.RetrievalScores(k=2, grouped=True).load_state_dict(bad)
    sums = state["sums"].copy()
    sums[0, 0] = 5.0  # a mean NDCG above 1
    with pytest.raises(ValueError, match="means above 1"):
        sm.RetrievalScores(k=2, grouped=True).load_state_dict(dict(state, sums=sums))
    with pytest.raises(ValueError, match="per_query=True"):
        acc.query_table()


def _grouped_rows(seed=0, queries=240):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, queries)
    q = np.repeat(np.arange(queries) * 7, sizes)
    rel = rng.integers(0, 3, q.size)
    s = np.round(rng.random(q.size), 2)
    return q, rel, s


@pytest.mark.parametrize("grouped", [False, True])
def test_sliced_by_query_group_equals_each_group_alone(grouped):
    q, rel, s = _grouped_rows()
    group = np.array(["us", "fr", "de"])[(q // 7) % 3]
    sliced = sm.Sliced(sm.RetrievalScores(k=(1, 5), grouped=grouped))
    for lo in range(0, q.size, 401):
        part = slice(lo, lo + 401)
        sliced.update(q[part], rel[part], s[part], by=group[part])
    r = sliced.finalize()
    for g in ("us", "fr", "de"):
        at = group == g
        assert_results_equal(r.slices[g], sm.RetrievalScores(k=(1, 5)).update(q[at], rel[at], s[at]).finalize())


def test_bootstrap_keyed_by_query_reweights_whole_queries():
    q, rel, s = _grouped_rows(1)
    results = []
    for grouped in (False, True):
        boot = sm.Bootstrap(sm.RetrievalScores(k=(1, 5), grouped=grouped), replicates=40, seed=3)
        for lo in range(0, q.size, 333):
            part = slice(lo, lo + 333)
            boot.update(q[part], rel[part], s[part], key=q[part])
        results.append(boot.finalize(ci=0.9))
    plain = sm.RetrievalScores(k=(1, 5)).update(q, rel, s).finalize()
    for r in results:
        assert r.mrr == pytest.approx(plain.mrr, rel=1e-12)
        assert r.mrr_ci_lower < plain.mrr < r.mrr_ci_upper
    # a query's rows share their replicate weight: grouped or not, the same replicates
    assert results[0].mrr_ci_lower == pytest.approx(results[1].mrr_ci_lower, rel=1e-12)
    assert results[0].mrr_ci_upper == pytest.approx(results[1].mrr_ci_upper, rel=1e-12)
