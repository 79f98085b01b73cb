"""Analytic confidence intervals of the binary scores: closed forms, references
written here, coverage, merge invariance, weights and bad levels."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics._kernels.intervals import beta_cdf, beta_quantile
from streammetrics.metrics import intervals as I

V1 = pathlib.Path(__file__).parent / "fixtures" / "v1"
Y = [1, 1, 1, 0, 0, 0, 0, 0]
P = [1, 1, 0, 1, 0, 0, 0, 0]
RATES = ("accuracy", "precision", "recall", "specificity")


# ------------------------------------------------------------ the primitives
def _wilson_by_roots(x, n, z):
    """Wilson's bounds as the roots of (p - x/n)^2 = z^2 p (1 - p) / n (the score test)."""
    ph = x / n
    # (1 + z²/n) p² - (2 ph + z²/n) p + ph² = 0
    a = 1 + z * z / n
    b = -(2 * ph + z * z / n)
    c = ph * ph
    disc = math.sqrt(b * b - 4 * a * c)
    return (-b - disc) / (2 * a), (-b + disc) / (2 * a)


@pytest.mark.parametrize("x, n", [(0, 10), (1, 10), (8, 10), (10, 10), (37, 120), (1, 1), (500, 1000)])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_wilson_is_the_score_test_inversion(x, n, level):
    z = I.z_of(level)
    want = _wilson_by_roots(x, n, z)
    got = I.wilson(x, n, level)
    assert got == pytest.approx(want, abs=1e-13)
    # the bounds are where the score statistic equals z
    for bound in got:
        if 0 < bound < 1:
            assert abs(x / n - bound) / math.sqrt(bound * (1 - bound) / n) == pytest.approx(z, rel=1e-9)


def test_wilson_hand_example():
    # 8 of 10, z = 1.959964: centre (8 + z²/2) / (10 + z²), half z sqrt(1.6 + z²/4) / (10 + z²)
    z = 1.959963984540054
    centre = (8 + z * z / 2) / (10 + z * z)
    half = z * math.sqrt(8 * 2 / 10 + z * z / 4) / (10 + z * z)
    assert I.wilson(8, 10, 0.95) == pytest.approx((centre - half, centre + half), abs=1e-15)
    assert (round(centre - half, 4), round(centre + half, 4)) == (0.4902, 0.9433)


def test_normal_quantile():
    assert I.normal_quantile(0.5) == 0.0
    for p in [1e-10, 0.001, 0.025, 0.2, 0.8, 0.975, 0.999]:
        z = I.normal_quantile(p)
        assert 0.5 * math.erfc(-z / math.sqrt(2)) == pytest.approx(p, rel=1e-13)
    assert I.z_of(0.95) == pytest.approx(1.959963984540054, rel=1e-15)
    with pytest.raises(ValueError):
        I.normal_quantile(1.0)


def _beta_cdf_by_sum(x, a, b):
    """I_x(a, b) for integer a, b: the binomial tail P(Bin(a + b - 1, x) >= a)."""
    m = a + b - 1
    return sum(math.comb(m, j) * x**j * (1 - x) ** (m - j) for j in range(a, m + 1))


@pytest.mark.parametrize("a, b", [(1, 1), (1, 9), (3, 4), (9, 2), (12, 30), (40, 7)])
def test_incomplete_beta_against_the_binomial_sum(a, b):
    for x in [0.001, 0.1, 0.3, 0.5, 0.77, 0.95]:
        assert beta_cdf(x, float(a), float(b)) == pytest.approx(_beta_cdf_by_sum(x, a, b), rel=1e-12, abs=1e-300)


def test_incomplete_beta_closed_forms():
    for x in [0.01, 0.3, 0.9]:
        assert beta_cdf(x, 1.0, 3.5) == pytest.approx(1 - (1 - x) ** 3.5, rel=1e-13)
        assert beta_cdf(x, 0.5, 0.5) == pytest.approx(2 / math.pi * math.asin(math.sqrt(x)), rel=1e-13)
    q = beta_quantile(0.3, 2.5, 7.0)
    assert beta_cdf(q, 2.5, 7.0) == pytest.approx(0.3, rel=1e-13)


@pytest.mark.parametrize("n", [1, 5, 20, 1000])
def test_clopper_pearson_closed_forms_at_the_ends(n):
    alpha = 0.05
    assert I.clopper_pearson(0, n, 0.95) == pytest.approx((0.0, 1 - (alpha / 2) ** (1 / n)), rel=1e-12)
    assert I.clopper_pearson(n, n, 0.95) == pytest.approx(((alpha / 2) ** (1 / n), 1.0), rel=1e-12)


@pytest.mark.parametrize("x, n", [(1, 10), (8, 10), (37, 120), (500, 1000), (3, 100000)])
def test_clopper_pearson_bounds_are_binomial_tails(x, n):
    lo, hi = I.clopper_pearson(x, n, 0.9)
    # P(X >= x | lo) = alpha/2 and P(X <= x | hi) = alpha/2, by the binomial-beta identity
    assert beta_cdf(lo, float(x), float(n - x + 1)) == pytest.approx(0.05, rel=1e-10)
    assert 1 - beta_cdf(hi, float(x + 1), float(n - x)) == pytest.approx(0.05, rel=1e-10)
    if n <= 200:  # the tails by direct summation
        tail_lo = sum(math.comb(n, j) * lo**j * (1 - lo) ** (n - j) for j in range(x, n + 1))
        tail_hi = sum(math.comb(n, j) * hi**j * (1 - hi) ** (n - j) for j in range(0, x + 1))
        assert tail_lo == pytest.approx(0.05, rel=1e-9)
        assert tail_hi == pytest.approx(0.05, rel=1e-9)
    assert lo < I.wilson(x, n, 0.9)[0] and hi > I.wilson(x, n, 0.9)[1]  # CP is the wider


def test_clopper_pearson_agrees_with_scipy_when_installed():
    stats = pytest.importorskip("scipy.stats")
    for x, n in [(1, 10), (8, 10), (37, 120), (500, 1000)]:
        want = (stats.beta.ppf(0.025, x, n - x + 1), stats.beta.ppf(0.975, x + 1, n - x))
        assert I.clopper_pearson(x, n, 0.95) == pytest.approx(want, rel=1e-10)


# ------------------------------------------------------------- the accumulator
def _result(ci=0.95, method="wilson", y=Y, p=P, w=None):
    return sm.BinaryConfusion().update(y, p, sample_weight=w).finalize(ci=ci, method=method)


def test_rates_have_their_proportions_interval():
    r = _result()
    cells = {"accuracy": (6, 8), "precision": (2, 3), "recall": (2, 3), "specificity": (4, 5)}
    for name, (x, n) in cells.items():
        assert (r[f"{name}_ci_lower"], r[f"{name}_ci_upper"]) == pytest.approx(I.wilson(x, n, 0.95), abs=1e-15)
        assert r[f"{name}_ci_lower"] <= r[name] <= r[f"{name}_ci_upper"]
    c = _result(method="clopper-pearson")
    for name, (x, n) in cells.items():
        assert (c[f"{name}_ci_lower"], c[f"{name}_ci_upper"]) == pytest.approx(I.clopper_pearson(x, n, 0.95))
    assert r.meta["ci"] == 0.95 and r.meta["ci_method"] == "wilson"


def test_interval_fields_sit_beside_their_scores():
    keys = list(_result())
    for name in ("accuracy", "precision", "recall", "specificity", "f1", "mcc", "balanced_accuracy"):
        i = keys.index(name)
        assert keys[i + 1 : i + 3] == [f"{name}_ci_lower", f"{name}_ci_upper"]
    assert not any(k.endswith("_ci_lower") for k in sm.BinaryConfusion().update(Y, P).finalize())


def test_balanced_accuracy_is_the_mover_of_recall_and_specificity():
    r = _result()
    rec, spec = 2 / 3, 0.8
    lr, ur = I.wilson(2, 3, 0.95)
    ls, us = I.wilson(4, 5, 0.95)
    m = (rec + spec) / 2
    assert r.balanced_accuracy_ci_lower == pytest.approx(m - math.hypot(rec - lr, spec - ls) / 2, abs=1e-15)
    assert r.balanced_accuracy_ci_upper == pytest.approx(m + math.hypot(ur - rec, us - spec) / 2, abs=1e-15)


def _delta_by_differences(score, cells, n, z):
    """The multinomial delta-method half width with a numerical gradient."""
    cells = np.asarray(cells, float)
    p = cells / cells.sum()
    g = np.empty(4)
    for k in range(4):
        h = 1e-6
        up, down = p.copy(), p.copy()
        up[k] += h
        down[k] -= h
        g[k] = (score(up) - score(down)) / (2 * h)
    cov = (np.diag(p) - np.outer(p, p)) / n
    return z * math.sqrt(g @ cov @ g)


def _f1_of(c):
    return 2 * c[0] / (2 * c[0] + c[1] + c[2])


def _mcc_of(c):
    a, b, f, d = c
    return (a * d - b * f) / math.sqrt((a + b) * (a + f) * (d + b) * (d + f))


@pytest.mark.parametrize("cells", [(2, 1, 1, 4), (40, 7, 13, 140), (5, 30, 2, 300)])
def test_f1_and_mcc_delta_method_against_a_numerical_gradient(cells):
    tp, fp, fn, tn = cells
    y = [1] * tp + [0] * fp + [1] * fn + [0] * tn
    p = [1] * (tp + fp) + [0] * (fn + tn)
    r = _result(y=y, p=p)
    z = I.z_of(0.95)
    n = sum(cells)
    for name, fn_ in (("f1", _f1_of), ("mcc", _mcc_of)):
        half = _delta_by_differences(fn_, cells, n, z)
        lo, hi = r[f"{name}_ci_lower"], r[f"{name}_ci_upper"]
        top = 1.0
        assert lo == pytest.approx(max(r[name] - half, -1.0 if name == "mcc" else 0.0), rel=1e-7)
        assert hi == pytest.approx(min(r[name] + half, top), rel=1e-7)


def test_undefined_scores_have_the_whole_range():
    r = _result(y=[1, 1, 0], p=[0, 0, 0])  # nothing predicted positive
    assert (r.precision_ci_lower, r.precision_ci_upper) == (0.0, 1.0)
    assert (r.mcc_ci_lower, r.mcc_ci_upper) == (-1.0, 1.0)
    r = _result(y=[0, 0, 0], p=[0, 0, 0])  # no positive: recall and F1 unknown
    assert (r.recall_ci_lower, r.recall_ci_upper) == (0.0, 1.0)
    assert (r.f1_ci_lower, r.f1_ci_upper) == (0.0, 1.0)
    assert r.accuracy_ci_lower > 0.2 and r.accuracy_ci_upper == 1.0


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(1, 4)), min_size=1, max_size=60),
    st.integers(1, 5),
    st.sampled_from([0.5, 0.9, 0.95]),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_intervals_of_merged_shards_equal_those_of_the_whole(rows, shards, level, weighted):
    y = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows], float) / 3 if weighted else None
    whole = sm.BinaryConfusion().update(y, p, sample_weight=w).finalize(ci=level)
    parts = []
    for idx in np.array_split(np.arange(len(rows)), shards):
        parts.append(sm.BinaryConfusion().update(y[idx], p[idx], sample_weight=None if w is None else w[idx]))
    merged = parts[-1]
    for part in parts[-2::-1]:
        merged = part + merged
    got = merged.finalize(ci=level)
    for k, v in whole.items():
        assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-15), k
    for name in RATES + ("f1", "mcc", "balanced_accuracy"):
        assert got[f"{name}_ci_lower"] <= got[name] + 1e-12 and got[name] <= got[f"{name}_ci_upper"] + 1e-12


def test_kish_weights():
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    p = np.array([1, 1, 1, 0, 1, 0, 0, 0, 0, 0])
    # equal weights: the effective size is the row count whatever the scale
    plain = _result(y=y, p=p)
    scaled = _result(y=y, p=p, w=np.full(10, 7.5))
    for k, v in plain.items():
        if k.endswith(("_ci_lower", "_ci_upper")):
            assert scaled[k] == pytest.approx(v, rel=1e-12), k
    # integer weights are not frequencies: the recall's rows are seen as Kish's size
    w = np.array([3.0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    r = _result(y=y, p=p, w=w)
    tp, fn = 3 + 1 + 1, 1
    n_eff = (tp + fn) ** 2 / (9 + 1 + 1 + 1)
    assert (r.recall_ci_lower, r.recall_ci_upper) == pytest.approx(
        I.wilson(n_eff * tp / (tp + fn), n_eff, 0.95), abs=1e-15
    )
    assert sm.BinaryConfusion().update(y, p, sample_weight=w).squared_weights() == [11.0, 4.0, 1.0, 20.0]
    # threshold mode counts its cells the same way
    s = np.where(p == 1, 0.8, 0.2)
    t = sm.BinaryConfusion(threshold=0.5).update(y, s, sample_weight=w).finalize(ci=0.95)
    assert all(t[k] == r[k] for k in r if k.endswith(("_ci_lower", "_ci_upper")))


def test_weighted_state_saved_before_squared_weights_has_no_interval(tmp_path):
    acc = sm.load_state(V1 / "binary_confusion_weighted.state")
    acc.finalize()  # the scores still load
    with pytest.raises(ValueError, match="without their squared weights"):
        acc.finalize(ci=0.95)
    plain = sm.load_state(V1 / "binary_confusion.state")
    assert "f1_ci_lower" in plain.finalize(ci=0.95)  # unweighted counts need nothing more
    # a fresh weighted shard merged in does not make the old rows' squares known
    fresh = sm.BinaryConfusion(acc.threshold).update([1, 0], [1, 0], sample_weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="squared weights"):
        (acc + fresh).finalize(ci=0.9)
    fresh.save(tmp_path / "new.state")
    assert sm.load_state(tmp_path / "new.state").finalize(ci=0.9) == fresh.finalize(ci=0.9)


def test_coverage_of_wilson_and_clopper_pearson():
    rng = np.random.default_rng(1)
    truth, n, reps = 0.3, 60, 2000
    hits = {"wilson": 0, "clopper-pearson": 0}
    for _ in range(reps):
        y = np.ones(n, int)
        p = (rng.random(n) < truth).astype(int)  # recall = share of positives caught
        acc = sm.BinaryConfusion().update(y, p)
        for method in hits:
            r = acc.finalize(ci=0.95, method=method)
            hits[method] += r.recall_ci_lower <= truth <= r.recall_ci_upper
    # binomial noise on 2000 replicates is about 0.005
    assert 0.925 <= hits["wilson"] / reps <= 0.975
    assert 0.94 <= hits["clopper-pearson"] / reps <= 0.995  # conservative by design


def test_coverage_of_f1_and_mcc():
    rng = np.random.default_rng(2)
    cell_p = np.array([0.25, 0.08, 0.07, 0.6])  # tp, fp, fn, tn
    a, b, c, d = cell_p
    f1_true = 2 * a / (2 * a + b + c)
    mcc_true = (a * d - b * c) / math.sqrt((a + b) * (a + c) * (d + b) * (d + c))
    reps, n = 1500, 400
    cover = {"f1": 0, "mcc": 0}
    for _ in range(reps):
        k = rng.multinomial(n, cell_p)
        y = np.repeat([1, 0, 1, 0], k)
        p = np.repeat([1, 1, 0, 0], k)
        r = sm.BinaryConfusion().update(y, p).finalize(ci=0.9)
        cover["f1"] += r.f1_ci_lower <= f1_true <= r.f1_ci_upper
        cover["mcc"] += r.mcc_ci_lower <= mcc_true <= r.mcc_ci_upper
    for name, hits in cover.items():
        assert 0.87 <= hits / reps <= 0.93, name


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("ci", [0, 1, 95, -0.5, 1.0, float("nan"), float("inf")])
def test_ci_outside_the_unit_interval_is_refused(ci):
    acc = sm.BinaryConfusion().update(Y, P)
    with pytest.raises(ValueError, match=r"ci must lie strictly between 0 and 1"):
        acc.finalize(ci=ci)


@pytest.mark.parametrize("ci", ["0.95", True, [0.95]])
def test_ci_of_the_wrong_type_is_a_type_error(ci):
    with pytest.raises(TypeError, match="ci must be a real number"):
        sm.BinaryConfusion().update(Y, P).finalize(ci=ci)


def test_bad_method_and_accumulators_without_intervals():
    acc = sm.BinaryConfusion().update(Y, P)
    with pytest.raises(ValueError, match="method must be one of 'wilson', 'clopper-pearson'"):
        acc.finalize(ci=0.95, method="wald")
    mc = sm.MulticlassConfusion(3).update([0, 1, 2], [0, 1, 1])
    with pytest.raises(TypeError, match="MulticlassConfusion offers no confidence intervals"):
        mc.finalize(ci=0.95)
    assert list(mc.finalize(ci=None)) == list(mc.finalize())  # ci=None is the plain result
    with pytest.raises(ValueError, match="no observations"):
        sm.BinaryConfusion().finalize(ci=0.95)


def test_finalize_with_ci_changes_nothing():
    acc = sm.BinaryConfusion().update(Y, P)
    before = acc.state_dict()
    acc.finalize(ci=0.95)
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert acc.finalize().as_dict().items() <= acc.finalize(ci=0.95).as_dict().items()


# ------------------------------------------------------- means of per-row terms
def _mean_ci(terms, w, level):
    """Normal interval of a weighted mean with Kish's size, written out plainly."""
    terms = np.asarray(terms, float)
    w = np.ones(len(terms)) if w is None else np.asarray(w, float)
    W = w.sum()
    mean = (w * terms).sum() / W
    n = W * W / (w * w).sum()
    var = (w * (terms - mean) ** 2).sum() / W * n / (n - 1)
    half = I.z_of(level) * math.sqrt(var / n)
    return mean - half, mean + half


@pytest.mark.parametrize("weighted", [False, True])
def test_log_loss_and_brier_intervals(weighted):
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 300)
    p = np.clip(0.35 + 0.3 * y + 0.25 * rng.normal(size=300), 0, 1)
    w = rng.random(300) * 2 if weighted else None
    r = sm.ProbabilityScores().update(y, p, sample_weight=w).finalize(ci=0.9)
    q = np.where(y == 1, p, 1 - p)
    loss = -np.log(np.maximum(q, 1e-12))
    for name, terms in (("log_loss", loss), ("brier", (p - y) ** 2)):
        lo, hi = _mean_ci(terms, w, 0.9)
        assert r[f"{name}_ci_lower"] == pytest.approx(max(lo, 0), rel=1e-10)
        assert r[f"{name}_ci_upper"] == pytest.approx(hi, rel=1e-10)
    assert list(r) == [
        "n",
        "log_loss",
        "log_loss_ci_lower",
        "log_loss_ci_upper",
        "brier",
        "brier_ci_lower",
        "brier_ci_upper",
        "d2_log_loss",
        "d2_brier",
    ]


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_intervals(weighted):
    rng = np.random.default_rng(9)
    y = rng.normal(size=400) * 2 + 50
    p = y + rng.standard_t(5, size=400)
    w = rng.random(400) + 0.2 if weighted else None
    r = sm.RegressionErrors().update(y, p, sample_weight=w).finalize(ci=0.95)
    res = y - p
    for name, terms in (("mse", res**2), ("mae", np.abs(res)), ("mape", np.abs(res) / np.abs(y))):
        lo, hi = _mean_ci(terms, w, 0.95)
        assert r[f"{name}_ci_lower"] == pytest.approx(max(lo, 0), rel=1e-10), name
        assert r[f"{name}_ci_upper"] == pytest.approx(hi, rel=1e-10), name
    assert r.rmse_ci_lower == pytest.approx(math.sqrt(r.mse_ci_lower), rel=1e-15)
    assert r.rmse_ci_upper == pytest.approx(math.sqrt(r.mse_ci_upper), rel=1e-15)
    assert "r2_ci_lower" not in r


@pytest.mark.parametrize(
    "make, data",
    [
        (sm.ProbabilityScores, lambda rng, n: (rng.integers(0, 2, n), rng.random(n))),
        (sm.RegressionErrors, lambda rng, n: (rng.normal(size=n), rng.normal(size=n))),
    ],
)
def test_mean_intervals_merge(make, data):
    rng = np.random.default_rng(10)
    y, p = data(rng, 500)
    w = rng.random(500)
    whole = make().update(y, p, sample_weight=w).finalize(ci=0.95)
    parts = [make().update(y[i], p[i], sample_weight=w[i]) for i in np.array_split(np.arange(500), 4)]
    merged = parts[3] + parts[1] + parts[0] + parts[2]
    got = merged.finalize(ci=0.95)
    for k, v in whole.items():
        assert got[k] == pytest.approx(v, rel=1e-12), k


def test_mean_interval_coverage():
    rng = np.random.default_rng(12)
    reps, n, hits = 1000, 200, 0
    for _ in range(reps):
        y = rng.normal(size=n)
        p = y + rng.exponential(1.0, n)  # |r| ~ Exp(1): MAE 1
        r = sm.RegressionErrors().update(y, p).finalize(ci=0.9)
        hits += r.mae_ci_lower <= 1.0 <= r.mae_ci_upper
    assert 0.87 <= hits / reps <= 0.93


@pytest.mark.parametrize("name", ["probability_scores", "regression_errors"])
def test_mean_states_saved_before_second_moments(name):
    acc = sm.load_state(V1 / f"{name}.state")
    acc.finalize()
    with pytest.raises(ValueError, match="have no second moments"):
        acc.finalize(ci=0.95)


# ------------------------------------------------------------------ reports
def test_text_report_shows_intervals_beside_scores():
    ev = sm.Evaluator(task="binary")
    y = [0, 0, 0, 1, 1, 1, 1, 0, 1, 0]
    s = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2, 0.6, 0.7, 0.2]
    ev.update(y, s)
    plain = ev.finalize().to_text()
    assert "[" not in plain
    report = ev.finalize(ci=0.95)
    text = report.to_text()
    r = sm.BinaryConfusion(threshold=0.5).update(y, s).finalize(ci=0.95)
    line = next(x for x in text.splitlines() if x.strip().startswith("recall "))
    assert line.split()[1:] == ["0.6", f"[{r.recall_ci_lower:.6g},", f"{r.recall_ci_upper:.6g}]"]
    assert not any(x.strip().startswith(("recall_ci_lower", "auc_ci_upper")) for x in text.splitlines())
    assert report["recall_ci_lower"] == r.recall_ci_lower  # the flat mapping and JSON keep them
    assert '"auc_ci_lower"' in report.to_json()


def test_evaluator_passes_ci_only_to_members_with_intervals():
    ev = sm.Evaluator(task="binary")  # ranking, probabilities, calibration, confusion
    ev.update([0, 1, 1, 0, 1], [0.1, 0.8, 0.3, 0.4, 0.9])
    r = ev.finalize(ci=0.9)
    with_ci = {name for name, part in r.parts.items() if any(k.endswith("_ci_lower") for k in part)}
    without = {name for name, part in r.parts.items() if type(part).__name__ == "CalibrationResult" or "ece" in part}
    assert without and not (with_ci & without)
    assert len(with_ci) == 3 and "auc_se" in r
    with pytest.raises(ValueError, match="strictly between"):
        ev.finalize(ci=2)
