"""Certified bounds on the average precision (and curve points) of binned rank states.

References: scikit-learn's ``average_precision_score`` on the raw rows, and a
brute-force step AP (below) over every order the binned rows could take.
"""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

skm = pytest.importorskip("sklearn.metrics")

from streammetrics import RankAUC, cli  # noqa: E402
from streammetrics.metrics.ranking.bounded import average_precision_bounds  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def brute_ap(scores, labels, weights=None) -> float:
    """Step AP, tied rows called together, from the highest score down."""
    scores = np.asarray(scores, float)
    labels = np.asarray(labels)
    w = np.ones(len(scores)) if weights is None else np.asarray(weights, float)
    total = float(w[labels == 1].sum())
    if total == 0:
        return 0.0
    tp = fp = ap = 0.0
    for s in sorted(set(scores.tolist()), reverse=True):
        at = scores == s
        pos = float(w[at & (labels == 1)].sum())
        tp += pos
        fp += float(w[at & (labels == 0)].sum())
        ap += pos * tp / (tp + fp)
    return ap / total


def _rows_of(items):
    """The rows (labels) of each item, positives first."""
    return [[1] * int(p) + [0] * int(q) for p, q in zip(*items[2])]


# ----------------------------------------------------------- the bound is the true extreme
@st.composite
def disjoint_items(draw):
    """Items strictly apart: points and at most two small bins."""
    k = draw(st.integers(1, 5))
    bins = set(draw(st.lists(st.integers(0, k - 1), max_size=2, unique=True)))
    lo, hi, ab = [], [], []
    for i in range(k):
        if i in bins:
            p, q = draw(st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(lambda t: 2 <= sum(t) <= 3))
            lo.append(10.0 * i)
            hi.append(10.0 * i + 5.0)
        else:
            p, q = draw(st.tuples(st.integers(0, 4), st.integers(0, 4)).filter(lambda t: sum(t) > 0))
            lo.append(10.0 * i)
            hi.append(10.0 * i)
        ab.append((p, q))
    return np.array(lo), np.array(hi), np.array(ab, np.int64).T.copy()


@SETTINGS
@given(disjoint_items())
def test_bounds_are_the_worst_and_best_order_inside_the_bins(items):
    lo, hi, ab = items
    rows = _rows_of(items)
    wide = [i for i in range(len(lo)) if hi[i] > lo[i]]
    values = []
    # every weak order of every bin's rows: each row at one of r levels inside its range
    choices = [itertools.product(range(len(rows[i])), repeat=len(rows[i])) for i in wide]
    for levels in itertools.product(*choices):
        scores, labels = [], []
        for i, r in enumerate(rows):
            if i in wide:
                lv = levels[wide.index(i)]
                scores += [lo[i] + (hi[i] - lo[i]) * (v + 1) / (len(r) + 1) for v in lv]
            else:
                scores += [lo[i]] * len(r)
            labels += r
        values.append(brute_ap(scores, labels))
    at_lower = brute_ap(np.repeat(lo, [len(r) for r in rows]), sum(rows, []))
    value, lower, upper = average_precision_bounds(lo, hi, ab, weighted=False)
    assert value == pytest.approx(at_lower, abs=1e-12)
    assert lower <= min(values) + 1e-15 and max(values) <= upper + 1e-15
    # attained: no wider than the true extremes (bar the rounding slack)
    assert lower == pytest.approx(min(values), abs=3e-9)
    assert upper == pytest.approx(max(values), abs=3e-9)


@st.composite
def overlapping_items(draw):
    """Items whose ranges may overlap and nest, sorted by (lo, hi)."""
    k = draw(st.integers(1, 4))
    out = set()
    for _ in range(k):
        a = draw(st.integers(0, 6))
        b = draw(st.integers(a, min(a + 3, 7)))
        out.add((float(a), float(b)))
    spans = sorted(out)
    ab = [draw(st.tuples(st.integers(0, 2), st.integers(0, 2)).filter(lambda t: sum(t) > 0)) for _ in spans]
    return (np.array([s[0] for s in spans]), np.array([s[1] for s in spans]), np.array(ab, np.int64).T.copy())


@SETTINGS
@given(overlapping_items(), st.data())
def test_bounds_hold_every_placement_of_overlapping_items(items, data):
    lo, hi, ab = items
    rows = _rows_of(items)
    _, lower, upper = average_precision_bounds(lo, hi, ab, weighted=False)
    # each row anywhere on a half-step grid inside its item's range (ties and crossings included)
    grids = [np.arange(2 * lo[i], 2 * hi[i] + 1) / 2 for i in range(len(lo))]
    labels = sum(rows, [])
    placements = [
        np.concatenate([np.full(len(r), lo[i]) for i, r in enumerate(rows)]),
        np.concatenate([np.where(np.array(r) == 1, hi[i], lo[i]) for i, r in enumerate(rows)]),
        np.concatenate([np.where(np.array(r) == 1, lo[i], hi[i]) for i, r in enumerate(rows)]),
    ]
    for _ in range(30):
        placements.append(
            np.concatenate([[data.draw(st.sampled_from(list(grids[i]))) for _ in r] for i, r in enumerate(rows)])
        )
    for scores in placements:
        ap = brute_ap(scores, labels)
        assert lower - 1e-15 <= ap <= upper + 1e-15


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 1), st.floats(0.01, 10.0)), min_size=1, max_size=5),
    st.integers(0, 3),
    st.integers(0, 3),
    st.data(),
)
def test_weighted_lower_bound_holds_any_split_of_the_mass(rows, above_pos, above_neg, data):
    # one bin holding weighted rows, under points of known mass
    labels = np.array([r[0] for r in rows])
    w = np.array([r[1] for r in rows])
    lo = np.array([0.0, 10.0, 20.0])
    hi = np.array([5.0, 10.0, 20.0])
    ab = np.array([[w[labels == 1].sum(), 0.0, float(above_pos)], [w[labels == 0].sum(), float(above_neg), 0.0]])
    keep = ab.sum(axis=0) > 0
    _, lower, upper = average_precision_bounds(lo[keep], hi[keep], ab[:, keep], weighted=True)
    for _ in range(20):
        perm = data.draw(st.permutations(range(len(rows))))
        levels = data.draw(st.lists(st.integers(0, 4), min_size=len(rows), max_size=len(rows)))
        scores = np.concatenate(
            ([20.0] * (above_pos > 0), [10.0] * (above_neg > 0), np.array(levels, float)[list(perm)])
        )
        lab = np.concatenate(([1] * (above_pos > 0), [0] * (above_neg > 0), labels))
        wt = np.concatenate(([above_pos] * (above_pos > 0), [above_neg] * (above_neg > 0), w))
        ap = brute_ap(scores, lab, wt)
        assert lower - 1e-12 <= ap <= upper + 1e-12


def test_bounds_of_exact_and_degenerate_items():
    lo = np.array([0.1, 0.4, 0.9])
    ab = np.array([[0, 2, 1], [3, 1, 0]])
    v, lower, upper = average_precision_bounds(lo, lo, ab, weighted=False)
    assert lower == v == upper == pytest.approx(brute_ap([0.1] * 3 + [0.4] * 3 + [0.9], [0] * 3 + [1, 1, 0, 1]))
    # no positive: the guard gives 0, whatever the bins
    hi = np.array([0.3, 0.4, 0.9])
    assert average_precision_bounds(lo, hi, np.array([[0, 0, 0], [3, 1, 2]]), weighted=False) == (0.0, 0.0, 0.0)
    # a bin of negatives only, apart from every positive, changes nothing: exact
    v, lower, upper = average_precision_bounds(lo, hi, np.array([[0, 2, 1], [3, 1, 0]]), weighted=False)
    assert lower == v == upper
    # large counts go through the asymptotic harmonic sum: compared with a direct float sum
    J, K, p, n = 7.0, 300.0, 5000, 2000
    v, lower, upper = average_precision_bounds(
        np.array([0.0, 1.0]), np.array([0.5, 1.0]), np.array([[p, J], [n, K]], np.int64), weighted=False
    )
    i = np.arange(1, p + 1)
    direct = (J * J / (J + K) + np.sum((J + i) / (J + i + K + n))) / (J + p)
    assert lower <= direct and lower == pytest.approx(direct, rel=1e-8)
    assert upper == pytest.approx((J * J / (J + K) + p * (J + p) / (J + p + K)) / (J + p), rel=1e-8)


# ------------------------------------------------- through RankAUC: any binning, any merge
def _merge_in_order(accs, order):
    accs = list(accs)
    for pick in order:
        if len(accs) == 1:
            break
        i = pick % (len(accs) - 1)
        accs[i : i + 2] = [accs[i] + accs[i + 1]]
    while len(accs) > 1:
        accs[-2:] = [accs[-2] + accs[-1]]
    return accs[0]


@st.composite
def streams(draw):
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    kind = draw(st.sampled_from(["normal", "rounded", "few"]))
    s = rng.normal(size=n) + y * draw(st.floats(-1.0, 3.0))
    if kind == "rounded":
        s = np.round(s, 1)
    elif kind == "few":
        s = rng.integers(0, 5, n).astype(float)
    w = rng.uniform(0.01, 3.0, n) if draw(st.booleans()) else None
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    shards = draw(st.integers(1, 4))
    order = draw(st.lists(st.integers(0, 10), max_size=6))
    return y, s, w, cuts, shards, order


@SETTINGS
@given(streams(), st.integers(1, 40))
def test_ap_bounds_contain_the_exact_ap_for_any_binning_and_merge(stream, max_bins):
    y, s, w, cuts, shards, order = stream
    accs = [RankAUC(max_bins=max_bins) for _ in range(shards)]
    for j, (a, b) in enumerate(zip([0] + cuts, cuts + [len(y)])):
        if b > a:
            accs[j % shards].update(y[a:b], s[a:b], sample_weight=None if w is None else w[a:b])
    merged = _merge_in_order(accs, order)
    r = merged.finalize()
    exact = skm.average_precision_score(y, s, sample_weight=w) if y.any() else 0.0
    lower, upper = r.average_precision_bounds()
    assert (lower, upper) == (r.average_precision_lower, r.average_precision_upper)
    assert merged.average_precision_bounds() == (lower, upper)  # the accumulator's own
    assert lower <= r.average_precision() <= upper
    if r.exact:  # equal, and scikit-learn's value to its rounding
        assert lower == r.average_precision() == upper
    if r.exact or lower == upper:
        # (bins holding no positive determine the AP: equal bounds, to rounding)
        assert r.average_precision() == pytest.approx(exact, rel=1e-12, abs=1e-15)
    else:
        assert lower <= exact <= upper
    # any placement of the rows the state allows, the adversarial ones included
    d = merged.state_dict()
    if w is None and d["lo"].shape[0]:
        rows = _rows_of((None, None, d["counts"]))
        labels = np.array(sum(rows, []))
        for place in ("pos_high", "pos_low", "lower", "upper"):
            parts = []
            for i, r_ in enumerate(rows):
                r_ = np.array(r_)
                a, b = d["lo"][i], d["hi"][i]
                if place == "pos_high":
                    parts.append(np.where(r_ == 1, b, a))
                elif place == "pos_low":
                    parts.append(np.where(r_ == 1, a, b))
                else:
                    parts.append(np.full(len(r_), a if place == "lower" else b))
            ap = brute_ap(np.concatenate(parts), labels)
            assert lower - 1e-12 <= ap <= upper + 1e-12


@SETTINGS
@given(streams(), st.integers(1, 30))
def test_curve_point_bounds_contain_the_exact_counts(stream, max_bins):
    y, s, w, cuts, shards, order = stream
    accs = [RankAUC(max_bins=max_bins) for _ in range(shards)]
    for j, (a, b) in enumerate(zip([0] + cuts, cuts + [len(y)])):
        if b > a:
            accs[j % shards].update(y[a:b], s[a:b])
    r = _merge_in_order(accs, order).finalize()
    fpr, tpr, thresholds = r.roc_curve()
    fl, fu, tl, tu = r.roc_curve_bounds()
    P, N = max(int(y.sum()), 1), max(int((1 - y).sum()), 1)
    true_tpr = np.array([((s >= t) & (y == 1)).sum() for t in thresholds]) / P
    true_fpr = np.array([((s >= t) & (y == 0)).sum() for t in thresholds]) / N
    assert np.all(tl <= tpr) and np.all(tpr <= tu) and np.all(fl <= fpr) and np.all(fpr <= fu)
    assert np.all(tl <= true_tpr + 1e-15) and np.all(true_tpr <= tu + 1e-15)
    assert np.all(fl <= true_fpr + 1e-15) and np.all(true_fpr <= fu + 1e-15)
    precision, recall, pth = r.pr_curve()
    pl, pu, rl, ru = r.pr_curve_bounds()
    called = [(s >= t) for t in pth]
    true_prec = np.array([(c & (y == 1)).sum() / max(c.sum(), 1) for c in called] + [1.0])
    assert np.all(pl <= true_prec + 1e-12) and np.all(true_prec <= pu + 1e-12)
    assert np.all(pl <= precision + 1e-15) and np.all(precision <= pu + 1e-15)
    if r.exact:
        assert np.array_equal(tl, tu) and np.array_equal(pl, pu)


def test_bounds_survive_save_and_load(tmp_path):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 3000)
    s = rng.normal(size=3000) + y
    acc = RankAUC(max_bins=20).update(y, s)
    path = str(tmp_path / "bounded.smstate")
    acc.save(path)
    back = RankAUC.load(path)
    a, b = acc.finalize(), back.finalize()
    assert not a.exact and not b.exact
    assert a.average_precision_bounds() == b.average_precision_bounds()
    assert a.average_precision_lower < a.average_precision_upper
    assert RankAUC().update(y, s).finalize().exact


# --------------------------------------------------------------------- reports
def _data(tmp_path, n=20_000):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, n)
    p = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * y - 0.7)))
    path = str(tmp_path / "scores.parquet")
    pq.write_table(pa.table({"y": y, "p": p}), path)
    return path, y, p


_LINE = re.compile(r"^  (\w+)\s+([0-9.]+)  \((exact|bounds ([0-9.]+) \.\. ([0-9.]+))\)$", re.M)


def test_text_and_json_mark_every_approximate_figure(tmp_path, capsys):
    path, y, p = _data(tmp_path)
    exact_ap, exact_auc = skm.average_precision_score(y, p), skm.roc_auc_score(y, p)
    assert cli.main(["evaluate", path, "--y", "y", "--p", "p", "--max-bins", "10", "--threshold", "0.4321"]) == 0
    out = capsys.readouterr().out
    figures = {m[0]: m for m in _LINE.findall(out)}
    assert set(figures) == {"auc", "average_precision"}
    for name, want in (("auc", exact_auc), ("average_precision", exact_ap)):
        _, value, note, lo, hi = figures[name]
        assert note.startswith("bounds")  # a binned state never says exact
        assert float(lo) - 1e-6 <= want <= float(hi) + 1e-6
    assert "(exact)" not in out.split("Probabilities")[0]
    # a threshold inside a bin: the operating point's interval follows it
    head = out.split("chosen, s >= 0.4321")[1].splitlines()
    assert head[1].strip().startswith("lower bound") and head[2].strip().startswith("upper bound")

    assert (
        cli.main(
            ["evaluate", path, "--y", "y", "--p", "p", "--max-bins", "10", "--threshold", "0.4321", "--format", "json"]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    m = doc["metrics"]
    assert doc["ranking_exact"] is False
    assert m["average_precision_lower"] <= exact_ap <= m["average_precision_upper"]
    assert m["average_precision_lower"] < m["average_precision"] < m["average_precision_upper"]
    chosen = doc["operating_points"][0]
    called = p >= 0.4321
    true_prec = (called & (y == 1)).sum() / called.sum()
    assert chosen["precision_lower"] <= true_prec <= chosen["precision_upper"]
    assert chosen["tp_lower"] <= (called & (y == 1)).sum() <= chosen["tp_upper"]

    assert cli.main(["evaluate", path, "--y", "y", "--p", "p", "--max-bins", "exact"]) == 0
    out = capsys.readouterr().out
    figures = {m[0]: m for m in _LINE.findall(out)}
    assert figures["auc"][2] == figures["average_precision"][2] == "exact"
    assert float(figures["average_precision"][1]) == pytest.approx(exact_ap, abs=1e-6)
    assert cli.main(["evaluate", path, "--y", "y", "--p", "p", "--max-bins", "exact", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    m = doc["metrics"]
    assert doc["ranking_exact"] is True
    assert m["average_precision_lower"] == m["average_precision"] == m["average_precision_upper"]
    assert m["average_precision"] == pytest.approx(exact_ap, rel=1e-12)


def test_plot_legends_carry_the_intervals(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from streammetrics.report import plots

    labels = []
    real = plots.figure_label
    monkeypatch.setattr(plots, "figure_label", lambda *a, **k: labels.append(real(*a, **k)) or labels[-1])
    _, y, p = _data(tmp_path, 5000)
    r = RankAUC(max_bins=10).update(y, p).finalize()
    from streammetrics._protocol.result import RenderContext

    r.plot(str(tmp_path / "binned"), RenderContext())
    lo, hi = r.average_precision_bounds()
    assert labels[0].startswith("AUC = ") and "(bounds " in labels[0]
    assert labels[1] == f"average precision = {r.average_precision():.4f} (bounds {lo:.4f} .. {hi:.4f})"
    labels.clear()
    RankAUC().update(y, p).finalize().plot(str(tmp_path / "exact"), RenderContext())
    assert labels[0].endswith("(exact)") and labels[1].endswith("(exact)")
    assert plots.figure_label("AUC", 0.5, 0.4, 0.6) == "AUC = 0.5000 (bounds 0.4000 .. 0.6000)"


def test_sliced_table_marks_binned_figures():
    import streammetrics as sm

    rng = np.random.default_rng(5)
    n = 6000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    k = rng.integers(0, 3, n)
    text = str(sm.Sliced(sm.RankAUC(max_bins=5)).update(y, s, by=k).finalize())
    found = re.findall(r"^  (\d|\(all\))\s+[\d,]+\s+([0-9.]+) \(bounds ([0-9.]+) \.\. ([0-9.]+)\)$", text, re.M)
    assert len(found) == 4
    for key, _value, lo, hi in found:
        rows = np.ones(n, bool) if key == "(all)" else k == int(key)
        exact = skm.roc_auc_score(y[rows], s[rows])
        assert float(lo) - 1e-6 <= exact <= float(hi) + 1e-6
    assert "(bounds" not in str(sm.Sliced(sm.RankAUC()).update(y, s, by=k).finalize())


def test_bounds_hold_an_average_precision_rounded_past_one():
    # every row positive, weighted: the steps of recall sum to 1 + 2**-52
    rng = np.random.default_rng(1855)
    y = (rng.random(23) < rng.choice([0.5, 0.9, 1.0])).astype(int)
    s = np.round(rng.normal(size=23) + y * rng.uniform(-1, 3), 1)
    w = rng.uniform(0.01, 3.0, 23)
    acc = RankAUC(max_bins=3).update(y[:21], s[:21], sample_weight=w[:21]).update(y[21:], s[21:], sample_weight=w[21:])
    r = acc.finalize()
    lower, upper = r.average_precision_bounds()
    assert y.all() and r.average_precision() > 1.0
    assert lower < 1.0 and lower <= r.average_precision() <= upper
