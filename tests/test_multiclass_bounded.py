"""Bounded multiclass and multilabel AUC (``max_bins``): the certified bounds
contain the exact scores (scikit-learn's binary AUC per class and per pair,
and its multiclass/multilabel averages) for any number of bins, batching,
sharding and merge order; the state is the exact one while the scores fit the
bins; state files, pickles and hostile states; presets, the command and the
report."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import MulticlassRankAUC, MultilabelRankAUC, multiclass_auc

TOL = 1e-9


def _problem(rng, n, k, levels, weighted):
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)  # every class present
    if levels:
        counts = rng.integers(0, levels, (n, k)) + 2 * np.eye(k, dtype=np.int64)[y] * (rng.random((n, 1)) < 0.6)
        counts[counts.sum(axis=1) == 0, 0] = 1
        P = counts / counts.sum(axis=1, keepdims=True)
    else:
        P = rng.dirichlet(np.ones(k), n) + 0.5 * np.eye(k)[y] * rng.random((n, 1))
        P /= P.sum(axis=1, keepdims=True)
    w = None
    if weighted:
        w = rng.random(n) * 3
        w[rng.random(n) < 0.1] = 0.0
        w[:k] = 1.0
    return y, P, w


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(6, 600))
    k = draw(st.integers(2, 5))
    levels = draw(st.sampled_from([0, 3, 20]))  # 0: continuous scores
    weighted = draw(st.booleans())
    y, P, w = _problem(rng, n, k, levels, weighted)
    max_bins = draw(st.sampled_from([1, 2, 3, 8, 40]))
    shards = draw(st.integers(1, 6))
    multi_class = draw(st.sampled_from(["ovr", "ovo"]))
    return y, P, w, k, max_bins, shards, multi_class, seed


def _fold(acc, y, P, w, rng):
    cuts = np.sort(rng.integers(0, len(y) + 1, 3))
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(y)]):
        if hi > lo:
            acc.update(y[lo:hi], P[lo:hi], sample_weight=None if w is None else w[lo:hi])
    return acc


def _sharded(make, y, P, w, shards, rng):
    """Fold shards of the rows and merge them in a random order, one through a
    state file's arrays and one through a pickle."""
    cuts = np.sort(rng.integers(0, len(y) + 1, shards - 1))
    bounds = list(zip(np.r_[0, cuts], np.r_[cuts, len(y)]))
    parts = [_fold(make(), y[lo:hi], P[lo:hi], None if w is None else w[lo:hi], rng) for lo, hi in bounds]
    parts = [parts[i] for i in rng.permutation(len(parts))]
    parts[0] = make().load_state_dict(parts[0].state_dict())
    parts[-1] = pickle.loads(pickle.dumps(parts[-1]))
    out = parts[0]
    for p in parts[1:]:
        out.merge(p)
    return out


def _binary_auc(labels, s, w):
    """scikit-learn's binary AUC, the specification's guard (0) for one class."""
    if w is not None:
        keep = w > 0
        labels, s, w = labels[keep], s[keep], w[keep]
    if labels.all() or not labels.any():
        return 0.0
    return skm.roc_auc_score(labels, s, sample_weight=w)


def _references(y, P, w, k):
    per_class = np.array([_binary_auc(y == c, P[:, c], w) for c in range(k)])
    pair = np.zeros((k, k))
    for a in range(k):
        for b in range(k):
            if a != b:
                m = (y == a) | (y == b)
                pair[a, b] = _binary_auc(y[m] == a, P[m, a], None if w is None else w[m])
    sup = np.bincount(y, weights=w, minlength=k).astype(np.float64)
    iu, ju = np.triu_indices(k, 1)
    ht = (pair[iu, ju] + pair[ju, iu]) / 2
    prev = sup[iu] + sup[ju]
    return {
        "per_class_auc": per_class,
        "pair_auc": pair,
        "ovr_macro_auc": per_class.mean(),
        "ovr_weighted_auc": np.dot(sup, per_class) / sup.sum(),
        "ovo_macro_auc": ht.mean() if ht.size else 0.0,
        "ovo_weighted_auc": np.dot(prev, ht) / prev.sum() if ht.size else 0.0,
    }


def _inside(r, field, expected):
    lo, hi, v = (np.asarray(r[field + s], np.float64) for s in ("_lower", "_upper", ""))
    expected = np.asarray(expected, np.float64)
    assert np.all(lo <= v) and np.all(v <= hi), field
    assert np.all(lo - TOL <= expected) and np.all(expected <= hi + TOL), (field, lo, expected, hi)


# ------------------------------------------------------------------ bounds
@settings(max_examples=60, deadline=None)
@given(problems())
def test_bounds_contain_the_exact_scores(problem):
    y, P, w, k, max_bins, shards, multi_class, seed = problem
    rng = np.random.default_rng(seed)
    r = _sharded(
        lambda: MulticlassRankAUC(k, multi_class=multi_class, max_bins=max_bins), y, P, w, shards, rng
    ).finalize()
    ref = _references(y, P, w, k)
    fields = ["per_class_auc", "ovr_macro_auc", "ovr_weighted_auc"]
    if multi_class == "ovo":
        fields += ["pair_auc", "ovo_macro_auc", "ovo_weighted_auc"]
    else:  # a bounded one-vs-rest state keeps no pairs
        assert "pair_auc" not in r and "ovo_macro_auc_lower" not in r
    for f in fields:
        _inside(r, f, ref[f])
    _inside(r, "auc", ref[f"{multi_class}_macro_auc"])
    _inside(r, "weighted_auc", ref[f"{multi_class}_weighted_auc"])
    support = np.bincount(y, weights=w, minlength=k)
    np.testing.assert_allclose(r.support, support, rtol=1e-12)
    assert r.n == len(y)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["ovr", "ovo"]), st.booleans())
def test_bounds_contain_sklearn_multiclass_auc(seed, multi_class, weighted):
    rng = np.random.default_rng(seed)
    y, P, w = _problem(rng, 3000, 4, 0, weighted)
    if multi_class == "ovo":
        w = None  # scikit-learn's one-vs-one takes no weights
    r = _sharded(lambda: MulticlassRankAUC(4, multi_class=multi_class, max_bins=16), y, P, w, 5, rng).finalize()
    for average in ("macro", "weighted"):
        expected = skm.roc_auc_score(y, P, multi_class=multi_class, average=average, sample_weight=w)
        _inside(r, f"{average}_auc", expected)
        _inside(r, f"{multi_class}_{average}_auc", expected)
    assert r.auc_upper - r.auc_lower > 0  # the state did bin
    assert r.auc_upper - r.auc_lower < 0.2


def test_bounds_narrow_with_more_bins():
    rng = np.random.default_rng(3)
    y, P, w = _problem(rng, 40_000, 5, 0, False)
    widths = []
    for bins in (4, 32, 256):
        r = _sharded(lambda: MulticlassRankAUC(5, max_bins=bins), y, P, w, 8, rng).finalize()
        widths.append(r.auc_upper - r.auc_lower)
    assert widths[0] > widths[1] > widths[2] > 0


@settings(max_examples=40, deadline=None)
@given(problems())
def test_exact_while_the_scores_fit_the_bins(problem):
    y, P, w, k, _, shards, multi_class, seed = problem
    distinct = max(np.unique(P[:, c]).shape[0] for c in range(k))
    max_bins = (distinct + 1) // 2  # 2 B entries hold every distinct score
    rng = np.random.default_rng(seed)
    b = _sharded(
        lambda: MulticlassRankAUC(k, multi_class=multi_class, max_bins=max_bins), y, P, w, shards, rng
    ).finalize()
    e = MulticlassRankAUC(k, multi_class=multi_class).update(y, P, sample_weight=w).finalize()
    fields = ["auc", "macro_auc", "weighted_auc", "per_class_auc", "ovr_macro_auc", "ovr_weighted_auc"]
    if multi_class == "ovo":
        fields += ["pair_auc", "ovo_macro_auc", "ovo_weighted_auc"]
    for f in fields:
        assert np.array_equal(b[f + "_lower"], b[f]) and np.array_equal(b[f + "_upper"], b[f]), f
        if w is None:
            assert np.array_equal(b[f], e[f]), f
        else:
            np.testing.assert_allclose(b[f], e[f], rtol=1e-12, atol=1e-15, err_msg=f)
    np.testing.assert_allclose(b.per_class_average_precision, e.per_class_average_precision, rtol=1e-12)
    for c in range(k):
        for got, want in zip(
            MulticlassRankAUC(k, max_bins=max_bins).update(y, P, sample_weight=w).roc_curve(c),
            MulticlassRankAUC(k).update(y, P, sample_weight=w).roc_curve(c),
        ):
            np.testing.assert_allclose(got, want, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(problems())
def test_any_merge_order_gives_the_same_state_without_weights(problem):
    y, P, _, k, max_bins, shards, multi_class, seed = problem
    make = lambda: MulticlassRankAUC(k, multi_class=multi_class, max_bins=max_bins)  # noqa: E731
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, len(y) + 1, shards - 1))
    parts = [
        make().update(y[lo:hi], P[lo:hi]) if hi > lo else make() for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(y)])
    ]
    results = []
    for order in (range(len(parts)), rng.permutation(len(parts))):
        acc = make()
        for i in order:
            acc.merge(parts[i])
        results.append(acc.finalize())
    a, b = results
    for _f in ("auc", "per_class_auc"):  # bounds move with the order; each holds the exact value
        ref = _references(y, P, None, k)["per_class_auc"]
        for r in (a, b):
            assert np.all(r.per_class_auc_lower - TOL <= ref) and np.all(ref <= r.per_class_auc_upper + TOL)
    assert a.n == b.n == len(y)
    assert np.array_equal(a.support, b.support)


# --------------------------------------------------------------- multilabel
@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 5),
    st.sampled_from([1, 3, 16]),
    st.integers(1, 5),
    st.booleans(),
    st.sampled_from([0, 5]),
)
def test_multilabel_bounds_contain_sklearn(seed, k, max_bins, shards, weighted, decimals):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 500))
    Y = (rng.random((n, k)) < np.linspace(0.2, 0.6, k)).astype(np.int64)
    Y[0], Y[1] = 1, 0  # every label has positives and negatives
    S = 0.5 * Y + rng.random((n, k))
    if decimals:
        S = np.round(S, 1)
    w = rng.random(n) * 2 + 0.01 if weighted else None
    make = lambda: MultilabelRankAUC(k, max_bins=max_bins)  # noqa: E731
    cuts = np.sort(rng.integers(0, n + 1, shards - 1))
    parts = [
        make().update(Y[lo:hi], S[lo:hi], sample_weight=None if w is None else w[lo:hi])
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, n])
        if hi > lo
    ]
    parts = [parts[i] for i in rng.permutation(len(parts))]
    acc = make().load_state_dict(parts[0].state_dict())
    for p in parts[1:]:
        acc.merge(pickle.loads(pickle.dumps(p)))
    r = acc.finalize()
    _inside(r, "auc", skm.roc_auc_score(Y, S, average=None, sample_weight=w))
    for a in ("macro", "weighted", "micro"):
        _inside(r, f"{a}_auc", skm.roc_auc_score(Y, S, average=a, sample_weight=w))
    if decimals and 2 * max_bins >= 11:  # at most 11 distinct scores: exact
        e = MultilabelRankAUC(k).update(Y, S, sample_weight=w).finalize()
        np.testing.assert_allclose(r.auc, e.auc, rtol=1e-12)
        assert np.array_equal(r.auc_lower, r.auc_upper)


# ------------------------------------------------------------ state and misc
def _binned(multi_class="ovo", k=3, bins=4, weighted=False):
    rng = np.random.default_rng(11)
    y, P, w = _problem(rng, 3000, k, 0, weighted)
    return _sharded(lambda: MulticlassRankAUC(k, multi_class=multi_class, max_bins=bins), y, P, w, 4, rng)


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
@pytest.mark.parametrize("weighted", [False, True])
def test_save_load_pickle_round_trip(multi_class, weighted, tmp_path):
    acc = _binned(multi_class, weighted=weighted)
    r = acc.finalize()
    assert r.auc_lower < r.auc_upper
    acc.save(tmp_path / "s")
    for back in (
        sm.load_state(tmp_path / "s"),
        MulticlassRankAUC.load(tmp_path / "s"),
        pickle.loads(pickle.dumps(acc)),
        acc.copy(),
    ):
        assert back == acc
        got = back.finalize()
        for f in ("auc", "auc_lower", "auc_upper", "per_class_auc_lower", "per_class_auc_upper"):
            assert np.array_equal(got[f], r[f])
    # bounded states merge only with bounded states of the same bins
    with pytest.raises(ValueError):
        acc.merge(MulticlassRankAUC(3, multi_class=multi_class))
    with pytest.raises(ValueError):
        acc.merge(MulticlassRankAUC(3, multi_class=multi_class, max_bins=5))


def test_bounded_state_stays_within_its_bins():
    acc = _binned("ovo", k=3, bins=4)
    state = acc.state_dict()
    assert state["lo"].shape[0] <= 2 * 4 * 9  # 9 members of at most 2 B entries
    assert acc.nbytes < 20_000


def test_hostile_bounded_states():
    acc = _binned("ovo", k=3, bins=4)
    good = acc.state_dict()

    def fails(match, **changes):
        bad = {k: v.copy() for k, v in good.items()}
        for k, v in changes.items():
            bad[k] = v(bad[k]) if callable(v) else v
        with pytest.raises(ValueError, match=match):
            MulticlassRankAUC(3, multi_class="ovo", max_bins=4).load_state_dict(bad)

    fails("sizes", sizes=lambda s: s + np.eye(9, 5, dtype=np.int64))
    fails("one-vs-rest", member_n=lambda m: m - np.r_[1, np.zeros(8, np.int64)])
    fails("outside", member_n=lambda m: np.r_[m[:3], m[3:] * 0 + 10**9])
    fails("weighted", weighted=np.array([2]))

    def moved(counts):  # one row moved from a pair member's positives to its negatives
        s = good["sizes"]
        start = int(s[:3, 2].sum())
        counts = counts.copy()
        j = start + int(np.flatnonzero(counts[0, start : start + int(s[3, 2])] > 0)[0])
        counts[0, j] -= 1
        counts[1, j] += 1
        return counts

    fails("disagrees|no observation", counts=moved)
    # more entries than the bins allow: refused for a state of fewer bins
    with pytest.raises(ValueError, match="max_bins"):
        MulticlassRankAUC(3, multi_class="ovo", max_bins=1).load_state_dict(good)
    # an exact state's arrays are not a bounded state
    exact = MulticlassRankAUC(3, multi_class="ovo").update([0, 1, 2], np.eye(3)).state_dict()
    with pytest.raises(ValueError):
        MulticlassRankAUC(3, multi_class="ovo", max_bins=4).load_state_dict(exact)


def test_huge_settings_in_a_small_file_are_refused(tmp_path):
    acc = MulticlassRankAUC(2, multi_class="ovo", max_bins=4).update([0, 1], [[0.7, 0.3], [0.2, 0.8]])
    acc.save(tmp_path / "s")
    import streammetrics._protocol.statefile as sf

    cls, settings_, arrays, where = sf.read(tmp_path / "s")
    with pytest.raises(ValueError):
        cls._from_saved({**settings_, "n_classes": 100_000}, arrays, where)


def test_bad_batch_leaves_the_bounded_state_unchanged():
    acc = _binned("ovo")
    before = acc.state_dict()
    with pytest.raises(ValueError, match=r"P\[1, 2\] = nan"):
        acc.update([0, 1], [[0.2, 0.3, 0.5], [0.1, 0.2, np.nan]])
    with pytest.raises(ValueError, match=r"y\[0\] = 5"):
        acc.update([5, 1], [[0.2, 0.3, 0.5], [0.1, 0.2, 0.7]])
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_weights_after_unweighted_rows_and_absent_pairs():
    # the first batch holds no row of class 2: a weighted batch later turns every member weighted
    acc = MulticlassRankAUC(3, multi_class="ovo", max_bins=4)
    acc.update([0, 1, 0, 1], [[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.4, 0.4, 0.2], [0.5, 0.4, 0.1]])
    acc.update([0, 1], [[0.6, 0.3, 0.1], [0.3, 0.6, 0.1]], sample_weight=[2.0, 0.5])
    st_ = acc.state_dict()
    assert st_["weighted"][0] == 1 and st_["counts"].shape == (2, 0)
    r = acc.finalize()
    assert r.per_class_auc[2] == 0.0 and r.pair_auc[0, 2] == 0.0  # no row of class 2: the guard
    assert MulticlassRankAUC(3, multi_class="ovo", max_bins=4).load_state_dict(st_) == acc


def test_one_shot_and_settings():
    rng = np.random.default_rng(5)
    y, P, _ = _problem(rng, 500, 3, 0, False)
    one = multiclass_auc(y, P, max_bins=8)
    acc = MulticlassRankAUC(3, max_bins=8).update(y, P).finalize()
    assert one.auc == acc.auc and one.auc_lower == acc.auc_lower
    assert MulticlassRankAUC(3, max_bins=8).settings["max_bins"] == 8
    assert "max_bins" not in MulticlassRankAUC(3).settings
    with pytest.raises(ValueError, match="max_bins must be at least 1"):
        MulticlassRankAUC(3, max_bins=0)
    with pytest.raises(TypeError, match="max_bins must be an int"):
        MultilabelRankAUC(3, max_bins=2.5)


def test_report_shows_the_bounds():
    rng = np.random.default_rng(8)
    y, P, _ = _problem(rng, 4000, 3, 0, False)
    ev = sm.Evaluator(task="multiclass", n_classes=3, auc=True, max_bins=4)
    for lo in range(0, 4000, 1000):  # Evaluators merged: binned shards
        part = sm.Evaluator(task="multiclass", n_classes=3, auc=True, max_bins=4)
        ev.merge(part.update(y[lo : lo + 1000], P[lo : lo + 1000]))
    text = ev.finalize().to_text()
    assert "(bounds " in text and "per_class_auc_lower" in text
    assert "ovo_macro_auc" not in text  # not kept by a bounded one-vs-rest state
    exact_text = sm.Evaluator(task="multiclass", n_classes=3, auc=True).update(y, P).finalize().to_text()
    assert "(bounds " not in exact_text and "ovo_macro_auc" in exact_text
    multilabel = sm.Evaluator(task="multilabel", n_labels=3, threshold=0.5, max_bins=2)
    Y = (P > 0.3).astype(np.int64)
    for lo in range(0, 4000, 1000):
        multilabel.merge(
            sm.Evaluator(task="multilabel", n_labels=3, threshold=0.5, max_bins=2).update(
                Y[lo : lo + 1000], P[lo : lo + 1000]
            )
        )
    assert "(bounds " in multilabel.finalize().to_text()


def test_command_max_bins_for_multiclass_and_multilabel(tmp_path, capsys):
    from streammetrics import cli

    rng = np.random.default_rng(9)
    y, P, _ = _problem(rng, 3000, 3, 0, False)
    path = str(tmp_path / "d.npz")
    np.savez(
        path,
        y=y,
        p0=P[:, 0],
        p1=P[:, 1],
        p2=P[:, 2],
        l0=(P[:, 0] > 0.3).astype(np.int64),
        l1=(P[:, 1] > 0.3).astype(np.int64),
    )
    code = cli.main(
        [
            "evaluate",
            path,
            "--task",
            "multiclass",
            "--n-classes",
            "3",
            "--p",
            "p0,p1,p2",
            "--auc",
            "--max-bins",
            "2",
            "--batch-rows",
            "500",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["max_bins"] == 2
    expected = skm.roc_auc_score(y, P, multi_class="ovr")
    assert doc["metrics"]["auc_lower"] - TOL <= expected <= doc["metrics"]["auc_upper"] + TOL
    code = cli.main(
        [
            "evaluate",
            path,
            "--task",
            "multiclass",
            "--n-classes",
            "3",
            "--p",
            "p0,p1,p2",
            "--auc",
            "--max-bins",
            "exact",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"].get("max_bins") is None and "auc_lower" not in doc["metrics"]
    assert doc["metrics"]["auc"] == pytest.approx(expected, rel=1e-12)
    code = cli.main(
        [
            "evaluate",
            path,
            "--task",
            "multilabel",
            "--y",
            "l0,l1",
            "--p",
            "p0,p1",
            "--threshold",
            "0.5",
            "--max-bins",
            "3",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    Y = np.column_stack([(P[:, 0] > 0.3), (P[:, 1] > 0.3)]).astype(np.int64)
    micro = skm.roc_auc_score(Y, P[:, :2], average="micro")
    assert doc["settings"]["max_bins"] == 3
    assert doc["metrics"]["micro_auc_lower"] - TOL <= micro <= doc["metrics"]["micro_auc_upper"] + TOL


def test_members_take_any_binary_settings():
    """The per-class layout holds any binary rank state: exact members (no
    max_bins) give the exact scores, join and split to the same state, and
    pass the same checks (how a memory budget of the binary state plugs in)."""
    from streammetrics.metrics.multiclass_bounded import RankMembers

    rng = np.random.default_rng(12)
    y, P, _ = _problem(rng, 2000, 4, 0, False)
    members = RankMembers(4, {}, pairs=True)
    members.fold(y[:700], P[:700], np.zeros(0))
    members.fold(y[700:], P[700:], np.zeros(0))
    value, lower, upper, _, _ = members.results()
    e = MulticlassRankAUC(4, multi_class="ovo").update(y, P).finalize()
    assert np.array_equal(value[:4], e.per_class_auc) and np.array_equal(lower, upper)
    np.testing.assert_array_equal(members.pair_matrix(value), e.pair_auc)
    state = members.join(len(y))
    members.check(state)
    again = RankMembers(4, {}, pairs=True)
    again.load(state)
    assert np.array_equal(again.results()[0], value)


# ------------------------------------------------------------ memory budget
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    k=st.integers(2, 4),
    batch=st.integers(50, 900),
    multi_class=st.sampled_from(["ovr", "ovo"]),
    weighted=st.booleans(),
)
def test_budgeted_multiclass_auc_equals_the_exact_state(seed, k, batch, multi_class, weighted):
    """A budget small enough to spill changes no AUC: every class (and pair) is
    an exact binary state, whatever the batching and the merge order."""
    rng = np.random.default_rng(seed)
    n = 1500
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n).round(3)
    w = rng.random(n) if weighted else None
    exact = sm.MulticlassRankAUC(k, multi_class=multi_class).update(y, P, sample_weight=w).finalize()
    shards = []
    for i in range(0, n, batch):
        part = sm.MulticlassRankAUC(k, multi_class=multi_class, max_memory="8KiB")
        shards.append(
            part.update(y[i : i + batch], P[i : i + batch], sample_weight=None if w is None else w[i : i + batch])
        )
    order = rng.permutation(len(shards))
    merged = shards[order[0]]
    for j in order[1:]:
        merged = merged.merge(shards[j])
    got = merged.finalize()
    tol = dict(rtol=1e-12, atol=1e-15) if weighted else dict(rtol=0, atol=0)
    np.testing.assert_allclose(got.auc, exact.auc, **tol)
    np.testing.assert_allclose(got.macro_auc, exact.macro_auc, **tol)
    np.testing.assert_allclose(got.weighted_auc, exact.weighted_auc, **tol)
    if multi_class == "ovo":
        np.testing.assert_allclose(got.ovo_macro_auc, exact.ovo_macro_auc, **tol)
    assert got.auc_lower == got.auc_upper == got.auc
    back = pickle.loads(pickle.dumps(merged)).finalize()
    np.testing.assert_array_equal(back.auc, got.auc)


def test_budgeted_multilabel_auc_equals_the_exact_state():
    rng = np.random.default_rng(3)
    Y = (rng.random((4000, 3)) < 0.4).astype(np.int8)
    S = (rng.random((4000, 3)) + 0.3 * Y).round(4)
    exact = sm.MultilabelRankAUC(3).update(Y, S).finalize()
    acc = sm.MultilabelRankAUC(3, max_memory="16KiB")
    for i in range(0, 4000, 700):
        acc.update(Y[i : i + 700], S[i : i + 700])
    assert any(m.spilled for m in acc._members)
    got = acc.finalize()
    np.testing.assert_array_equal(got.auc, exact.auc)
    assert got.micro_auc == exact.micro_auc and got.macro_auc == exact.macro_auc
    state = acc.state_dict()
    again = sm.MultilabelRankAUC(3, max_memory="16KiB")
    again.load_state_dict(state)
    np.testing.assert_array_equal(again.finalize().auc, exact.auc)


@pytest.mark.parametrize("cls, args", [(sm.MulticlassRankAUC, (3,)), (sm.MultilabelRankAUC, (3,))])
def test_budget_and_bins_exclude_each_other(cls, args):
    with pytest.raises(ValueError, match="max_bins and max_memory exclude each other"):
        cls(*args, max_bins=10, max_memory="1MB")
    with pytest.raises(ValueError, match="max_memory must be at least 4096 bytes"):
        cls(*args, max_memory=100)


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
@pytest.mark.parametrize("trip", ["pickle", "state_dict"])
def test_a_bounded_state_round_tripped_then_updated_equals_one_never_round_tripped(multi_class, trip):
    rng = np.random.default_rng(4)
    y, P = rng.integers(0, 3, 3000), rng.random((3000, 3))
    make = lambda: MulticlassRankAUC(3, multi_class=multi_class, max_bins=8)  # noqa: E731
    ref, acc = make(), make()
    for a in range(0, 3000, 300):
        ref.update(y[a : a + 300], P[a : a + 300])
        acc.update(y[a : a + 300], P[a : a + 300])
        acc = pickle.loads(pickle.dumps(acc)) if trip == "pickle" else make().load_state_dict(acc.state_dict())
    got, want = acc.finalize(), ref.finalize()
    for f in ("auc", "auc_lower", "auc_upper", "per_class_auc_lower", "per_class_auc_upper"):
        assert np.array_equal(got[f], want[f])
