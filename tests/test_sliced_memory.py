"""One memory budget for a whole accumulator: the exact RankAUC states made from one
template (a Sliced's slices and overall, an Evaluator's copies) share its ``max_memory``.

Memory is measured by the states' own accounting: every RankAUC reachable from the
accumulator, each its ``nbytes`` (16 bytes of counters, the pending rows and the runs in
memory). The budget holds them all, plus those 16 bytes a state: a fold keeps them
under half of it in runs and pending rows (the rest is for the scratch of one merge),
a merge (which spills only the receiving state) under all of it.
"""

from __future__ import annotations

import gc
import pickle
import threading

import numpy as np
import pytest

import streammetrics as sm

from .harness import rank_states

BUDGET = 256 * 1024
SLICES = 500


def held(acc) -> int:
    return sum(s.nbytes for s in rank_states(acc))


def rows(seed=0, slices=SLICES, per=100, weighted=False, ties=False):
    rng = np.random.default_rng(seed)
    n = slices * per
    keys = rng.permutation(np.repeat(np.arange(slices), per))
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 50, n) / 50 if ties else rng.random(n)
    w = rng.random(n) + 0.5 if weighted else None
    return y, s, w, keys


def feed(acc, data, batch=10_000, check=None):
    y, s, w, keys = data
    for a in range(0, y.shape[0], batch):
        part = slice(a, a + batch)
        acc.update(y[part], s[part], sample_weight=None if w is None else w[part], by=keys[part])
        if check is not None:
            check(acc)
    return acc


def within_budget(acc):
    """The budget counts the states' bytes: those of the accumulator, and of any other
    state sharing it (the template given, a slice a result still reads)."""
    gc.collect()
    states = rank_states(acc)
    assert sum(s.nbytes for s in states) <= states[0].memory_used <= BUDGET + 16 * len(states)


def same_results(a, b, weighted=False):
    """Counts give the same AUC bit for bit; weighted sums at tied scores are added in
    another order once spilled, so weighted AUCs agree to 1e-12 relative."""
    ra, rb = a.finalize(), b.finalize()
    rel = 1e-12 if weighted else 0
    assert ra.overall.auc == pytest.approx(rb.overall.auc, rel=rel, abs=0)
    assert ra.rows == rb.rows
    for k in ra.slices:
        assert ra.slices[k].auc == pytest.approx(rb.slices[k].auc, rel=rel, abs=0)
        assert ra.slices[k].average_precision() == pytest.approx(rb.slices[k].average_precision(), rel=1e-13)


@pytest.mark.parametrize("weighted, ties", [(False, True), (True, False), (True, True)])
def test_slices_share_one_budget_and_give_the_unbudgeted_results(weighted, ties):
    data = rows(per=60, weighted=weighted, ties=ties)
    acc = feed(sm.Sliced(sm.RankAUC(max_memory=BUDGET), max_slices=SLICES), data, check=within_budget)
    assert acc.n_slices == SLICES
    assert any(s.spilled for s in rank_states(acc))
    same_results(acc, feed(sm.Sliced(sm.RankAUC(), max_slices=SLICES), data), weighted)
    within_budget(acc)  # finalizing merged each slice's runs: still within


def test_without_sharing_the_slices_would_pass_the_budget():
    """The same rows, each slice a state of its own budget: together far past it."""
    y, s, _, keys = rows()
    states = [sm.RankAUC(max_memory=BUDGET).update(y[keys == g], s[keys == g]) for g in range(SLICES)]
    assert sum(a.nbytes for a in states) > 4 * BUDGET
    assert all(a.memory_used == a.nbytes for a in states)


def test_an_evaluator_in_a_sliced_shares_its_rank_budget():
    data = rows(1, per=40)
    ev = sm.Evaluator(task="binary", max_memory=BUDGET)
    acc = feed(sm.Sliced(ev, max_slices=SLICES), data, check=within_budget)
    plain = feed(sm.Sliced(sm.Evaluator(task="binary"), max_slices=SLICES), data)
    a, b = acc.finalize(), plain.finalize()
    assert a.overall.auc == b.overall.auc
    assert all(a.slices[k].auc == b.slices[k].auc for k in a.slices)


@pytest.mark.parametrize("weighted_ties", [False, True])
def test_a_merge_brings_the_other_slices_into_the_receiving_budget(weighted_ties):
    first, second = (rows(seed, per=20, weighted=weighted_ties, ties=weighted_ties) for seed in (2, 3))
    a = feed(sm.Sliced(sm.RankAUC(max_memory=BUDGET), max_slices=SLICES), first)
    b = feed(sm.Sliced(sm.RankAUC(max_memory=BUDGET), max_slices=SLICES), second)
    b_states = rank_states(b)
    a.merge(b)
    within_budget(a)
    assert not {id(s) for s in rank_states(a)} & {id(s) for s in b_states}  # copies, in a's budget
    assert b_states[0].memory_used == held(b)  # b's budget still counts b's states only
    both = sm.Sliced(sm.RankAUC(), max_slices=SLICES)
    feed(both, first)
    feed(both, second)
    same_results(a, both, weighted_ties)


@pytest.mark.parametrize("weighted_ties", [False, True])
def test_a_loaded_sliced_has_one_budget_of_the_same_size(weighted_ties):
    data = rows(4, per=20, weighted=weighted_ties, ties=weighted_ties)
    acc = feed(sm.Sliced(sm.RankAUC(max_memory=BUDGET), max_slices=SLICES), data)
    for loaded in (sm.Sliced.from_bytes(acc.to_bytes()), pickle.loads(pickle.dumps(acc))):
        within_budget(loaded)
        states = rank_states(loaded)
        assert {s.max_memory for s in states} == {BUDGET}
        assert not {id(s) for s in states} & {id(s) for s in rank_states(acc)}
        same_results(loaded, acc)
        loaded.update([1, 0], [0.5, 0.25], by=[0, 1])
        within_budget(loaded)


def test_an_unpickled_accumulator_has_a_budget_of_its_own():
    a = sm.RankAUC(max_memory=BUDGET).update([0, 1, 1], [0.1, 0.2, 0.3])
    b = a.copy()  # shares a's budget
    assert a.memory_used == b.memory_used == a.nbytes + b.nbytes
    ua, ub = pickle.loads(pickle.dumps([a, b]))
    assert ua.memory_used == ua.nbytes and ub.memory_used == ub.nbytes
    assert ua.finalize().auc == a.finalize().auc and ua.max_memory == BUDGET


def test_threads_folding_slices_of_one_budget_lose_no_row():
    """Two Sliced of one template (one budget) updated from two threads each: no
    deadlock between a state spilling another and that one's own update."""
    template = sm.RankAUC(max_memory=32 * 1024)
    accs = [sm.Sliced(template, max_slices=100), sm.Sliced(template, max_slices=100)]
    data = [rows(10 + i, slices=100, per=20) for i in range(4)]

    def work(i):
        feed(accs[i % 2], data[i], batch=500)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    for j, acc in enumerate(accs):
        ref = sm.Sliced(sm.RankAUC(), max_slices=100)
        for i in (j, j + 2):
            feed(ref, data[i])
        same_results(acc, ref)
    states = rank_states(accs[0]) + rank_states(accs[1])
    assert template.memory_used >= sum(s.nbytes for s in states)  # (the template and copies count too)


def test_the_command_memory_bounds_the_whole_sliced_evaluator(tmp_path, monkeypatch, capsys):
    """``--memory`` with ``--by``: every slice's AUC within the one budget."""
    from streammetrics import cli
    from streammetrics.cli import shards

    made = []

    def recorded(settings):
        acc = make(settings)
        made.append(acc)
        return acc

    make = shards.make_evaluator
    monkeypatch.setattr(shards, "make_evaluator", recorded)
    y, s, _, keys = rows(5, per=40)
    path = str(tmp_path / "rows.npz")
    np.savez(path, y=y, p=s, g=keys)
    code = cli.main(["evaluate", path, "--by", "g", "--memory", f"{BUDGET}B", "--max-slices", str(SLICES)])
    capsys.readouterr()
    assert code == 0
    total = [a for a in made if a.n][0]
    assert isinstance(total, sm.Sliced) and total.n_slices == SLICES
    within_budget(total)
    assert any(s.spilled for s in rank_states(total))


def test_a_copy_of_a_sliced_shares_its_budget():
    acc = feed(sm.Sliced(sm.RankAUC(max_memory=BUDGET), max_slices=SLICES + 2), rows(6, per=20))
    twin = acc.copy()
    twin.update([1, 0], [0.5, 0.25], by=[SLICES + 1, SLICES + 2])  # new slices, in the same budget
    gc.collect()
    assert rank_states(twin)[0].memory_used >= held(acc) + held(twin)
    assert rank_states(acc)[0].memory_used <= BUDGET


@pytest.mark.parametrize("template", ["multilabel", "multiclass"])
def test_the_members_of_a_multilabel_or_multiclass_auc_share_the_budget_across_slices(template):
    rng = np.random.default_rng(3)
    n, k, slices = 60_000, 3, 200
    keys = rng.integers(0, slices, n)
    if template == "multilabel":
        acc = sm.Sliced(sm.MultilabelRankAUC(k, max_memory=BUDGET), max_slices=slices)
        arrays = (rng.integers(0, 2, (n, k)), rng.random((n, k)))
        plain = sm.Sliced(sm.MultilabelRankAUC(k), max_slices=slices)
    else:
        acc = sm.Sliced(sm.MulticlassRankAUC(k, max_memory=BUDGET), max_slices=slices)
        arrays = (rng.integers(0, k, n), rng.dirichlet(np.ones(k), n))
        plain = sm.Sliced(sm.MulticlassRankAUC(k), max_slices=slices)
    for a in range(0, n, 7_000):
        acc.update(*(x[a : a + 7_000] for x in arrays), by=keys[a : a + 7_000])
        plain.update(*(x[a : a + 7_000] for x in arrays), by=keys[a : a + 7_000])
        assert held(acc) <= BUDGET
    if template == "multilabel":  # (an unbudgeted multiclass AUC keeps runs of its own, not rank states)
        assert held(plain) > 4 * BUDGET  # the same rows without a budget
    loaded = sm.Sliced.from_bytes(acc.to_bytes())
    loaded.update(*arrays, by=keys)
    assert held(loaded) <= BUDGET
    score = "slice_macro_auc" if template == "multilabel" else "slice_auc"
    np.testing.assert_array_equal(acc.finalize()[score], plain.finalize()[score])
