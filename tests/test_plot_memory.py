"""The curves the plots draw: the points of the full curves a plot keeps, read a few blocks at a time, so that
``evaluate --plots`` on a spilled state never holds the whole run (the peak RSS is measured by
``benchmarks/bench_plots_memory.py``)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streammetrics import MulticlassRankAUC, RankAUC, cli
from streammetrics._protocol.result import RenderContext
from streammetrics.metrics.ranking import exact, points
from streammetrics.metrics.ranking.curves import RankResult
from streammetrics.report import plots

KINDS = {"in memory": {}, "spilled": {"max_memory": 16 * 1024}, "bounded": {"max_bins": 40}}


def _data(n, seed, ties=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    return y, s.round(1) if ties else s, rng.random(n) * 3


def _expected(r, limit):
    """The points ``report.plots`` keeps of each full curve, and the threshold curves from the confusion counts."""
    keep = lambda *a: tuple(v[plots.spread(a[0].shape[0], limit)] for v in a)  # noqa: E731
    out = {"roc": keep(*r.roc_curve()[:2]), "pr": keep(*r.pr_curve()[:2]), "gain": keep(*r.gain_curve()[:2])}
    tns, fps, fns, tps, th = r.confusion_matrix_at_thresholds()
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tps + fps > 0, tps / (tps + fps), 0.0)
        recall = np.where(tps + fns > 0, tps / (tps + fns), 0.0)
        f1 = np.where(2 * tps + fps + fns > 0, 2 * tps / (2 * tps + fps + fns), 0.0)
    out["threshold"] = keep(th, precision, recall, f1)
    return out


def _same(got, want, weighted):
    assert got.keys() == want.keys()
    for name in want:
        assert len(got[name]) == len(want[name])
        for i, (g, w) in enumerate(zip(got[name], want[name])):
            assert g.shape == w.shape, name
            if weighted or (name, i) == ("threshold", 3):  # compensated sums, F1 by another formula
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=name)
            else:
                np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("limit", [2, 7, 300, 100_000])
def test_thinned_curves_are_points_of_the_full_curves(kind, weighted, limit, tmp_path):
    y, s, w = _data(5000, 3, ties=kind == "bounded")
    acc = RankAUC(**KINDS[kind], spill_dir=str(tmp_path)) if kind == "spilled" else RankAUC(**KINDS[kind])
    acc.update(y, s, sample_weight=w if weighted else None)
    assert acc.spilled == (kind == "spilled")
    r = acc.finalize()
    want = _expected(r, limit)
    _same(r.thinned_curves(limit), want, weighted)
    _same(acc.thinned_curves(limit), want, weighted)
    assert all(len(c) <= limit for curve in r.thinned_curves(limit).values() for c in curve)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 400),
    distinct=st.integers(1, 50),
    limit=st.integers(2, 60),
    positives=st.floats(0, 1),
    weighted=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_thinned_curves_of_any_rows(n, distinct, limit, positives, weighted, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positives).astype(np.int64)
    s = rng.integers(0, distinct, n) / distinct
    w = rng.random(n) + 0.5 if weighted else None
    acc = RankAUC().update(y, s, sample_weight=w)
    if n == 0:
        return
    r = acc.finalize()
    _same(r.thinned_curves(limit), _expected(r, limit), weighted)


def test_multiclass_plots_draw_the_kept_points_of_each_class(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 3000)
    P = rng.dirichlet(np.ones(3), 3000)
    acc = MulticlassRankAUC(3).update(y, P)
    drawn = {}
    monkeypatch.setattr(plots, "MAX_CURVE_POINTS", 50)
    monkeypatch.setattr(plots, "class_curves", lambda curves, total, folder, roc: drawn.setdefault(roc, curves) and "x")
    acc.finalize().plot(str(tmp_path), RenderContext())
    for c in range(3):
        fpr, tpr, _ = acc.roc_curve(c)
        precision, recall, _ = acc.pr_curve(c)
        keep = plots.spread(fpr.shape[0], 50)
        np.testing.assert_array_equal(drawn[True][c][1], fpr[keep])
        np.testing.assert_array_equal(drawn[True][c][2], tpr[keep])
        np.testing.assert_array_equal(drawn[False][c][1], precision[keep])
        np.testing.assert_array_equal(drawn[False][c][2], recall[keep])


# ------------------------------------------------------------------ the command


@pytest.fixture
def scores_file(tmp_path):
    rng = np.random.default_rng(11)
    n = 40_000
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = 1.0 / (1.0 + np.exp(-rng.normal(np.where(y == 1, 1.0, -1.0), 1.3)))  # distinct scores
    rec = np.empty(n, [("y", np.int64), ("p", np.float64)])
    rec["y"], rec["p"] = y, p
    path = str(tmp_path / "scores.npy")
    np.save(path, rec)
    return path, y, p


def _record_drawn(monkeypatch):
    """The curves handed to the plot primitives (the primitives still draw)."""
    drawn = {}
    for name in ("roc", "pr", "gain_lift", "threshold_curves"):
        original = getattr(plots, name)

        def record(*args, _name=name, _original=original, **kw):
            drawn[_name] = [np.asarray(a, float) for a in args[: 4 if _name == "threshold_curves" else 2]]
            return _original(*args, **kw)

        monkeypatch.setattr(plots, name, record)
    return drawn


def test_plots_of_a_spilled_state_read_a_few_blocks(scores_file, tmp_path, monkeypatch, capsys):
    """The plots of a spilled state read only the blocks around the points they keep, a block at a time, and never
    join the run; they draw the points the full curves of the rows held in memory give."""
    pytest.importorskip("matplotlib")
    path, y, p = scores_file
    limit = 60
    monkeypatch.setattr(plots, "MAX_CURVE_POINTS", limit)
    reads, joined, phase = [], [], {"plotting": False}
    read, join, plot = exact.window, points.joined, RankResult.plot

    def counted_read(src, a, b):
        if phase["plotting"]:
            reads.append(b - a)
        return read(src, a, b)

    def counted_join(chunks, weighted):
        out = join(chunks, weighted)
        joined.append(out[0].shape[0])
        return out

    def plotting(self, folder, ctx):
        phase["plotting"] = True
        try:
            return plot(self, folder, ctx)
        finally:
            phase["plotting"] = False

    monkeypatch.setattr(exact, "window", counted_read)
    monkeypatch.setattr(points, "joined", counted_join)
    monkeypatch.setattr(RankResult, "plot", plotting)
    drawn = _record_drawn(monkeypatch)
    folder = tmp_path / "plots"
    code = cli.main(["evaluate", path, "--task", "binary", "--memory", "64KiB", "--plots", str(folder)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "exact AUC within 65.5 KB" in out  # spilled
    assert {"roc.png", "pr.png", "gain.png", "threshold.png"} <= set(os.listdir(folder))
    assert joined == []  # no run made whole
    m = y.shape[0]
    assert reads and max(reads) <= m // 100 and sum(reads) <= m // 4
    full = RankAUC().update(y, p)
    want = _expected(full.finalize(), limit)
    names = (("roc", "roc"), ("pr", "pr"), ("gain_lift", "gain"), ("threshold_curves", "threshold"))
    _same({key: drawn[name] for name, key in names}, want, False)


def test_timing_line_covers_the_plots(scores_file, tmp_path, monkeypatch, capsys):
    """The seconds of the last line on stderr include the plotting (a clock that the drawing moves by 1000 s)."""
    pytest.importorskip("matplotlib")
    path = scores_file[0]
    clock, real = [0.0], time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + clock[0])
    roc = plots.roc

    def slow_roc(*args, **kw):
        clock[0] += 1000.0
        return roc(*args, **kw)

    monkeypatch.setattr(plots, "roc", slow_roc)
    code = cli.main(["evaluate", path, "--task", "binary", "--plots", str(tmp_path / "plots")])
    _, err = capsys.readouterr()
    assert code == 0, err
    seconds = float(err.strip().splitlines()[-1].split(" rows in ")[1].split(" s ")[0])
    assert seconds >= 1000.0
