"""Bootstrap.roc_band / pr_band: against a brute-force reference, keyed invariance, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_curve, roc_curve

import streammetrics as sm
from streammetrics._kernels.bootstrap import POISSON1_CUTS, poisson_weights

R = 30


def _data(n, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = np.clip(0.35 * y + 0.65 * rng.random(n), 0.0, 1.0)
    return y, (np.round(s, 1) if ties else s)


def _weights(seed, keys, R):
    out = np.empty((R, len(keys)), np.float64)
    poisson_weights(np.uint64(seed), np.asarray(keys, np.int64), 0, 0, np.zeros(0), out, POISSON1_CUTS)
    return out


def _polyline_top(xs, fpr, tpr):
    """The highest point of the polyline through (fpr, tpr) above each x, segment by segment."""
    out = np.full(xs.shape, -np.inf)
    for k in range(len(fpr) - 1):
        a, b = fpr[k], fpr[k + 1]
        for g, x in enumerate(xs):
            if a <= x <= b:
                v = max(tpr[k], tpr[k + 1]) if a == b else tpr[k] + (x - a) / (b - a) * (tpr[k + 1] - tpr[k])
                out[g] = max(out[g], v)
    return out


def _pr_reference(xs, y, s, w):
    """Precision at the highest threshold whose recall reaches each x (scikit-learn's curve)."""
    keep = w > 0
    precision, recall, _ = precision_recall_curve(y[keep], s[keep], sample_weight=w[keep])
    out = []
    for x in xs:  # recall decreases along scikit-learn's curve: take the last index reaching x
        idx = np.nonzero(recall >= x)[0]
        out.append(precision[idx[-1]])
    return np.array(out)


@pytest.mark.parametrize("ties", [False, True])
def test_bands_are_the_percentiles_of_each_replicates_curve(ties):
    n, seed = 600, 9
    y, s = _data(n, seed=3, ties=ties)
    keys = np.arange(n) * 7 + 1
    b = sm.Bootstrap(sm.RankAUC(), replicates=R, seed=seed).update(y, s, key=keys)
    xs = np.linspace(0, 1, 41)
    draws = _weights(seed, keys, R)
    rocs, prs = [], []
    for r in range(R):
        w = draws[r]
        if not (w[y == 1].sum() > 0 and w[y == 0].sum() > 0):
            continue
        fpr, tpr, _ = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
        rocs.append(_polyline_top(xs, fpr, tpr))
        prs.append(_pr_reference(xs, y, s, w))
    for got, table in ((b.roc_band(0.9, grid=xs), rocs), (b.pr_band(0.9, grid=xs), prs)):
        grid, lower, upper = got
        np.testing.assert_array_equal(grid, xs)
        np.testing.assert_allclose(lower, np.quantile(np.vstack(table), 0.05, axis=0), rtol=0, atol=1e-12)
        np.testing.assert_allclose(upper, np.quantile(np.vstack(table), 0.95, axis=0), rtol=0, atol=1e-12)


def _curve_at(rank, xs, which):
    """One replicate's curve read at ``xs`` point by point from its own sorted curve."""
    if which == "roc":
        fpr, tpr, _ = rank.roc_curve()
        out = []
        for x in xs:
            i = np.nonzero(fpr <= x)[0][-1]  # the last point at or before x, then the next
            out.append(
                tpr[-1] if i == len(fpr) - 1 else tpr[i] + (x - fpr[i]) / (fpr[i + 1] - fpr[i]) * (tpr[i + 1] - tpr[i])
            )
        return np.array(out)
    precision, recall, _ = rank.pr_curve()  # recall decreasing, (1, 0) last
    return np.array([precision[np.nonzero(recall >= x)[0][-1]] for x in xs])


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_bands_equal_a_sort_per_replicate(weighted, ties):
    n, seed = 700, 4
    y, s = _data(n, seed=5, ties=ties)
    rng = np.random.default_rng(6)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3) if weighted else None
    keys = rng.permutation(n).astype(np.int64) * 3 - 7
    xs = np.unique(np.concatenate([np.linspace(0, 1, 21), [1e-9, 1 / 3, 0.999]]))
    b = sm.Bootstrap(sm.RankAUC(), replicates=R, seed=seed)
    b.update(y[:300], s[:300], sample_weight=None if w is None else w[:300], key=keys[:300])
    b.finalize(), b.roc_band(grid=xs)  # walks of the first rows, then more rows
    b.update(y[300:], s[300:], sample_weight=None if w is None else w[300:], key=keys[300:])
    draws = _weights(seed, keys, R) * (1.0 if w is None else w)
    tables = {"roc": [], "pr": []}
    for r in range(R):
        if draws[r][y == 1].sum() > 0 and draws[r][y == 0].sum() > 0:
            rank = sm.RankAUC().update(y, s, sample_weight=draws[r])
            for which, table in tables.items():
                table.append(_curve_at(rank, xs, which))
    for level in (0.5, 0.9):
        for which, (grid, lower, upper) in (("roc", b.roc_band(level, xs)), ("pr", b.pr_band(level, xs))):
            want = np.quantile(np.vstack(tables[which]), [(1 - level) / 2, (1 + level) / 2], axis=0)
            # tied weighted rows are summed in another order than the reference's (the last bit)
            tol = 1e-15 if weighted and ties else 0.0
            np.testing.assert_allclose(np.vstack([lower, upper]), want, rtol=0, atol=tol)
            np.testing.assert_array_equal(grid, xs)


def test_band_is_ordered_and_holds_the_point_curve():
    n = 4000
    y, s = _data(n, seed=1)
    b = sm.Bootstrap(sm.RankAUC(), replicates=100, seed=2).update(y, s, key=np.arange(n))
    grid, lower, upper = b.roc_band()
    assert grid.shape == (sm.bootstrap.DEFAULT_GRID,) and grid[0] == 0 and grid[-1] == 1
    assert (lower <= upper).all() and (lower >= 0).all() and (upper <= 1).all()
    assert (np.diff(lower) >= -1e-12).all() and (np.diff(upper) >= -1e-12).all()  # rates: monotone
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    point = _polyline_top(grid, fpr, tpr)
    inside = (lower - 1e-12 <= point) & (point <= upper + 1e-12)
    assert inside.mean() >= 0.9, inside.mean()
    narrow = b.roc_band(level=0.5)
    assert (narrow[1] >= lower - 1e-12).all() and (narrow[2] <= upper + 1e-12).all()
    recall, plo, phi = b.pr_band()
    assert (plo <= phi).all() and plo[0] == phi[0] == 1.0
    p, rc, _ = precision_recall_curve(y, s)
    ref = _pr_reference(recall, y, s, np.ones(n))
    assert ((plo - 1e-12 <= ref) & (ref <= phi + 1e-12)).mean() >= 0.9


def _cut(n, cuts):
    edges = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return list(zip(edges[:-1], edges[1:]))


@settings(max_examples=15, deadline=None)
@given(
    st.integers(2, 300),
    st.lists(st.integers(0, 10_000), max_size=5),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
)
def test_keyed_bands_are_identical_under_any_batching_sharding_and_merge_order(n, cuts, shards, rnd):
    y, s = _data(n, seed=n)
    y[0], y[1] = 0, 1
    keys = np.random.default_rng(n).permutation(n).astype(np.int64) * 5 - 40
    make = lambda: sm.Bootstrap(sm.Evaluator(task="binary"), replicates=12, seed=3)  # noqa: E731
    one = make().update(y, s, key=keys)
    parts = [make() for _ in range(shards)]
    for lo, hi in _cut(n, cuts):
        parts[rnd.randrange(shards)].update(y[lo:hi], s[lo:hi], key=keys[lo:hi])
    rnd.shuffle(parts)
    total = make()
    for p in parts:
        total.merge(p)
    for method in ("roc_band", "pr_band"):
        try:
            want = getattr(one, method)(grid=17)
        except ValueError:  # no replicate with both classes (tiny n): the same everywhere
            with pytest.raises(ValueError):
                getattr(total, method)(grid=17)
            continue
        for a, b in zip(getattr(total, method)(grid=17), want):
            np.testing.assert_array_equal(a, b)


def test_an_evaluators_band_is_its_rank_members():
    y, s = _data(1500, seed=4)
    keys = np.arange(1500)
    ev = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=R, seed=8).update(y, s, key=keys)
    rank = sm.Bootstrap(sm.RankAUC(), replicates=R, seed=8).update(y, s, key=keys)
    for a, b in zip(ev.roc_band(grid=33), rank.roc_band(grid=33)):
        np.testing.assert_array_equal(a, b)
    report = ev.point_result()
    assert report.parts["auc"].auc == pytest.approx(rank.finalize().auc, rel=1e-15)


def test_band_refusals():
    y, s = _data(200)
    b = sm.Bootstrap(sm.RankAUC(), replicates=5).update(y, s)
    with pytest.raises(TypeError, match="rank state"):
        sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=5).update(y, s).roc_band()
    with pytest.raises(ValueError, match=r"grid\[1\].*increase"):
        b.roc_band(grid=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"grid\[2\].*\[0, 1\]"):
        b.pr_band(grid=[0.0, 0.5, 1.5])
    with pytest.raises(ValueError, match="grid"):
        b.roc_band(grid=1)
    with pytest.raises(TypeError, match="grid"):
        b.roc_band(grid="fine")
    with pytest.raises(ValueError, match="ci must lie"):
        b.roc_band(level=95)
    with pytest.raises(TypeError):
        b.roc_band(level=None)
    only_pos = sm.Bootstrap(sm.RankAUC(), replicates=5).update(np.ones(50, int), s[:50])
    with pytest.raises(ValueError, match="both classes"):
        only_pos.roc_band()


def test_evaluate_bootstrap_bands_sort_the_rows_no_more_than_the_scores(tmp_path, capsys, monkeypatch):
    """``evaluate --bootstrap 200 --plots``, the drawing left out: the bands add no sort of the rows per
    replicate (they walk the order the scores sorted once); the time it saves is in ``bench_core --bootstrap``."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from streammetrics import cli
    from streammetrics.cli import bootstrapping

    n = 3_000
    y, s = _data(n, seed=7)
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"y": y, "p": s, "row_id": np.arange(n) * 3}), path)
    drawn = []
    monkeypatch.setattr(bootstrapping, "write_plots", lambda report, folder, **k: drawn.append(k["bands"]))
    sorts = {False: 0, True: 0}
    plots = False
    for name in ("argsort", "lexsort", "sort"):
        real = getattr(np, name)

        def counted(*a, _real=real, **k):
            sorts[plots] += 1
            return _real(*a, **k)

        monkeypatch.setattr(np, name, counted)
    for plots in (False, True):
        extra = ["--plots", str(tmp_path / "plots")] if plots else []
        assert cli.main(["evaluate", str(path), "--bootstrap", "200", "--key", "row_id", *extra]) == 0
    assert "bootstrap bands of 200 replicates" in capsys.readouterr().err and len(drawn) == 1
    assert sorts[True] - sorts[False] < 10, sorts  # a sort per replicate and band: 400 more
