"""Operating points from the rank state: any threshold, targets, the best threshold,
partial AUC; checked against BinaryConfusion, brute-force scans and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import example, given
from hypothesis import strategies as st

from streammetrics import BinaryConfusion, NoObservationsError, RankAUC
from streammetrics.metrics.binary import binary_result

COUNTS = ("tp", "fp", "fn", "tn")
RATES = ("accuracy", "precision", "recall", "specificity", "f1", "mcc", "balanced_accuracy", "jaccard")


@st.composite
def rows(draw, max_size=40, weights=None):
    """Labels, tied scores and (maybe) integer-valued weights, cut into batches."""
    n = draw(st.integers(1, max_size))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int64)
    levels = draw(st.integers(1, 8))
    s = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n)), float) / levels
    weighted = draw(st.booleans()) if weights is None else weights
    w = None
    if weighted:
        w = np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), float)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    return y, s, w, [0, *cuts, n]


def folded(y, s, w, cuts, max_bins=None):
    acc = RankAUC(max_bins=max_bins)
    for a, b in zip(cuts[:-1], cuts[1:]):
        acc.update(y[a:b], s[a:b], sample_weight=None if w is None else w[a:b])
    return acc


def confusion_at(y, s, w, t):
    if not np.isfinite(t):  # BinaryConfusion takes finite thresholds only: count by hand
        counts = _counts(y, s, w, t)
        return binary_result(*[int(v) if w is None else float(v) for v in counts], n=len(y))
    return BinaryConfusion(threshold=t).update(y, s, sample_weight=w).finalize()


def candidates(s, w):
    """The thresholds a scan tries: +inf and every distinct score of a row of weight > 0."""
    keep = s if w is None else s[w > 0]
    return [np.inf, *sorted(set(keep.tolist()), reverse=True)]


def assert_same_confusion(got, want):
    for k in COUNTS + RATES + ("n",):
        g, e = got[k], want[k]
        if isinstance(e, int):
            assert g == e and isinstance(g, int), k
        else:
            assert g == pytest.approx(e, rel=1e-12, abs=1e-12), k


@given(rows())
def test_at_threshold_is_binary_confusion_at_every_threshold(data):
    y, s, w, cuts = data
    acc = folded(y, s, w, cuts)
    before = acc.state_dict()
    for t in [-np.inf, np.inf, -1.0, 2.0, *np.unique(s), *(np.unique(s) + 1e-3)]:
        if w is not None and w.sum() == 0:
            with pytest.raises(ValueError, match="weights sum to zero"):
                acc.at_threshold(t)  # as BinaryConfusion: every score is undefined
            continue
        got = acc.at_threshold(t)
        assert got.threshold == t
        assert_same_confusion(got, confusion_at(y, s, w, t))
    after = acc.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before), "a query changed the state"


def scan(y, s, w, keep, rank):
    """Brute force: the BinaryConfusion results of every candidate, filtered and ranked."""
    found = []
    for t in candidates(s, w):
        r = binary_result(*[int(v) if w is None else float(v) for v in _counts(y, s, w, t)], n=len(y))
        if keep(r):
            found.append((rank(r, t), t, r))
    return found


def _counts(y, s, w, t):
    w = np.ones(len(y)) if w is None else w
    called = s >= t
    return (
        w[called & (y == 1)].sum(),
        w[called & (y == 0)].sum(),
        w[~called & (y == 1)].sum(),
        w[~called & (y == 0)].sum(),
    )


@given(rows(), st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]))
def test_threshold_for_equals_a_brute_force_scan(data, target):
    y, s, w, cuts = data
    acc = folded(y, s, w, cuts)
    if w is not None and w.sum() == 0:
        return
    cases = {
        # recall at least r: the highest such threshold
        "recall": (lambda r: r.recall >= target, lambda r, t: -t),
        # precision at least p: the lowest such threshold
        "precision": (lambda r: r.precision >= target, lambda r, t: t),
        # fpr at most f: the lowest such threshold
        "fpr": (lambda r: 1 - r.specificity <= target if r.tn + r.fp else True, lambda r, t: t),
        "specificity": (lambda r: r.specificity >= target, lambda r, t: t),
    }
    for name, (keep, rank) in cases.items():
        found = scan(y, s, w, keep, rank)
        if not found:
            with pytest.raises(ValueError, match=f"no threshold reaches {name}"):
                acc.threshold_for(**{name: target})
            continue
        _, t, want = min(found, key=lambda f: f[0])
        got = acc.threshold_for(**{name: target})
        assert got.threshold == t, name
        assert got.target == name and got.target_value == target
        assert_same_confusion(got, want)


@given(rows(), st.sampled_from(["f1", "mcc", "youden", "balanced_accuracy", "accuracy", "jaccard"]))
def test_best_threshold_equals_a_brute_force_scan(data, score):
    y, s, w, cuts = data
    acc = folded(y, s, w, cuts)
    if w is not None and w.sum() == 0:
        return

    def value(r):
        return r.recall + r.specificity - 1 if score == "youden" else r[score]

    found = scan(y, s, w, lambda r: True, lambda r, t: 0)
    best = max(value(r) for _, _, r in found)
    got = acc.best_threshold(score)
    assert got.score == score
    assert value(got) == pytest.approx(best, rel=1e-12, abs=1e-12)
    assert got.best == pytest.approx(best, rel=1e-12, abs=1e-12)
    # of equally good thresholds, the highest
    ties = [t for _, t, r in found if value(r) >= best - 1e-12]
    assert got.threshold == max(ties)


@given(rows(), st.lists(st.integers(-3, 6), min_size=4, max_size=4))
def test_best_threshold_by_cost_equals_a_brute_force_scan(data, c):
    y, s, w, cuts = data
    if w is not None and w.sum() == 0:
        return
    acc = folded(y, s, w, cuts)
    cost = np.array(c, float).reshape(2, 2)
    totals = {
        t: cost[0, 0] * tn + cost[0, 1] * fp + cost[1, 0] * fn + cost[1, 1] * tp
        for t in candidates(s, w)
        for tp, fp, fn, tn in [_counts(y, s, w, t)]
    }
    best = min(totals.values())
    got = acc.best_threshold(cost=cost)
    assert got.cost == pytest.approx(best, abs=1e-9)
    assert got.threshold == max(t for t, v in totals.items() if v <= best + 1e-9)


@given(rows(max_size=60), st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.77, 1.0]))
def test_partial_auc_equals_scikit_learn(data, max_fpr):
    y, s, w, cuts = data
    if len(set(y.tolist() if w is None else y[w > 0].tolist())) < 2:
        return  # scikit-learn raises with one class; here the guard gives 0
    acc = folded(y, s, w, cuts)
    want = skm.roc_auc_score(y, s, max_fpr=max_fpr, sample_weight=w)
    assert acc.partial_auc(max_fpr, mcclish=True) == pytest.approx(want, rel=1e-12, abs=1e-14)
    if max_fpr == 1.0:
        assert acc.partial_auc(1.0) == pytest.approx(acc.finalize().auc, rel=1e-12)


def test_partial_auc_raw_area_and_guard():
    acc = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    # ROC: (0,0) (0,.5) (.5,.5) (.5,1) (1,1): area up to fpr .25 is .25 * .5
    assert acc.partial_auc(0.25) == pytest.approx(0.125)
    assert acc.partial_auc(0.5) == pytest.approx(0.25)
    assert acc.partial_auc(0.75) == pytest.approx(0.25 + 0.25)
    assert RankAUC().update([1, 1], [0.2, 0.3]).partial_auc(0.5) == 0.0


def test_result_answers_as_the_accumulator_and_queries_follow_updates():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    s = np.round(rng.normal(size=2000) + y, 2)
    acc = RankAUC().update(y, s)
    r = acc.finalize()
    for t in (-0.5, 0.3, 1.2):
        assert r.at_threshold(t) == acc.at_threshold(t)
    assert r.threshold_for(recall=0.8) == acc.threshold_for(recall=0.8)
    assert r.best_threshold("mcc") == acc.best_threshold("mcc")
    assert r.partial_auc(0.2) == acc.partial_auc(0.2)
    # the accumulator's cached totals follow a change of state
    before = acc.at_threshold(0.3).tp
    acc.update([1], [5.0])
    assert acc.at_threshold(0.3).tp == before + 1
    other = RankAUC().update([1, 1], [6.0, 7.0])
    acc.merge(other)
    assert acc.at_threshold(0.3).tp == before + 3
    acc.reset().update([0, 1], [0.0, 1.0])
    assert acc.at_threshold(0.5).tp == 1


@pytest.mark.parametrize("weights", [False, True])
def test_bounded_state_bounds_hold_the_exact_counts(weights):
    rng = np.random.default_rng(1)
    n = 50_000
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + y
    w = rng.uniform(0.5, 2.0, n) if weights else None
    exact, bounded = RankAUC(), RankAUC(max_bins=64)
    for i in range(0, n, 10_000):
        sw = None if w is None else w[i : i + 10_000]
        exact.update(y[i : i + 10_000], s[i : i + 10_000], sample_weight=sw)
        bounded.update(y[i : i + 10_000], s[i : i + 10_000], sample_weight=sw)
    widened = 0
    for t in np.linspace(-2, 3, 41):
        e, b = exact.at_threshold(t), bounded.at_threshold(t)
        widened += b.tp_upper > b.tp_lower
        for k in ("tp", "fp"):
            assert b[f"{k}_lower"] <= e[k] * (1 + 1e-12) and e[k] <= b[f"{k}_upper"] * (1 + 1e-12)
        for rate in ("accuracy", "precision", "recall", "specificity", "f1", "balanced_accuracy", "jaccard"):
            assert b[f"{rate}_lower"] - 1e-12 <= e[rate] <= b[f"{rate}_upper"] + 1e-12, (t, rate)
            assert b[f"{rate}_lower"] <= b[rate] <= b[f"{rate}_upper"]
    assert widened > 0  # the state did bin, and the bounds said so
    r = bounded.threshold_for(recall=0.9)
    assert r.recall_lower <= r.recall <= r.recall_upper


def test_bounded_state_that_never_binned_is_exact():
    y, s = [0, 1, 1, 0, 1], [0.1, 0.5, 0.7, 0.5, 0.2]
    e, b = RankAUC().update(y, s), RankAUC(max_bins=100).update(y, s)
    for t in (0.0, 0.2, 0.5, 0.6, 1.0):
        rb = b.at_threshold(t)
        assert rb.tp_lower == rb.tp_upper and rb.fp_lower == rb.fp_upper
        assert_same_confusion(rb, e.at_threshold(t))


def test_large_counts_stay_exact_integers():
    acc = RankAUC()
    y = np.tile([0, 1], 300_000)
    s = np.tile([0.25, 0.75], 300_000)
    for _ in range(4):
        acc.update(y, s)
    r = acc.at_threshold(0.5)
    assert (r.tp, r.fp, r.fn, r.tn) == (1_200_000, 0, 0, 1_200_000)
    assert isinstance(r.tp, int)


def test_errors_name_the_problem():
    acc = RankAUC()
    with pytest.raises(NoObservationsError):
        acc.at_threshold(0.5)
    acc.update([0, 1, 1], [0.2, 0.4, 0.9])
    with pytest.raises(ValueError, match="t must be a number, got nan"):
        acc.at_threshold(float("nan"))
    with pytest.raises(TypeError, match="t must be a real number, got str"):
        acc.at_threshold("0.5")
    with pytest.raises(TypeError, match="exactly one target"):
        acc.threshold_for()
    with pytest.raises(TypeError, match="exactly one target"):
        acc.threshold_for(recall=0.5, precision=0.5)
    with pytest.raises(ValueError, match=r"recall must lie in \[0, 1\], got 1.5"):
        acc.threshold_for(recall=1.5)
    with pytest.raises(ValueError, match="no threshold reaches specificity"):
        RankAUC().update([1, 1], [0.1, 0.2]).threshold_for(specificity=0.5)
    with pytest.raises(ValueError, match="no threshold reaches recall 0.5: the highest is 0"):
        RankAUC().update([0, 0], [0.1, 0.2]).threshold_for(recall=0.5)
    with pytest.raises(ValueError, match="score must be one of"):
        acc.best_threshold("auc")
    with pytest.raises(TypeError, match="a score or a cost, not both"):
        acc.best_threshold("f1", cost=[[0, 1], [1, 0]])
    with pytest.raises(ValueError, match=r"cost must be a 2 x 2 matrix"):
        acc.best_threshold(cost=[1, 2, 3])
    with pytest.raises(ValueError, match=r"cost\[1, 0\] must be finite"):
        acc.best_threshold(cost=[[0, 1], [np.inf, 0]])
    with pytest.raises(ValueError, match=r"max_fpr must lie in \(0, 1\], got 0"):
        acc.partial_auc(0)


def test_unpickled_result_says_where_the_points_are():
    import pickle

    r = pickle.loads(pickle.dumps(RankAUC().update([0, 1], [0.1, 0.9]).finalize()))
    with pytest.raises(ValueError, match="holds no points"):
        r.at_threshold(0.5)


def test_real_valued_weights_agree_with_binary_confusion():
    rng = np.random.default_rng(5)
    n = 20_000
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(size=n) + y, 3)
    w = rng.lognormal(size=n)
    acc = RankAUC()
    for i in range(0, n, 3000):
        acc.update(y[i : i + 3000], s[i : i + 3000], sample_weight=w[i : i + 3000])
    for t in (-2.0, -0.3, 0.0, 0.5, 1.7, 3.5):
        assert_same_confusion(acc.at_threshold(t), confusion_at(y, s, w, t))


def test_report_operating_points_and_targets():
    import json

    from streammetrics import Evaluator

    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 3000)
    p = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1)
    report = Evaluator(task="binary", threshold=0.6).update(y, p).finalize()
    acc = RankAUC().update(y, p)
    text = report.to_text(targets={"recall": [0.8], "precision": 1.0})
    assert "chosen, s >= 0.6" in text and "best F1" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("recall >= 0.8"))
    assert f"{acc.threshold_for(recall=0.8).threshold:g}" in line
    assert "not reached" in next(x for x in text.splitlines() if "precision >= 1" in x)
    doc = json.loads(report.to_json(targets={"fpr": [0.1]}))
    points = {p["point"]: p for p in doc["operating_points"]}
    chosen = acc.at_threshold(0.6)
    assert points["chosen, s >= 0.6"]["tp"] == chosen.tp
    assert points["fpr <= 0.1"]["fpr"] <= 0.1
    with pytest.raises(ValueError, match="unknown target 'f1'"):
        report.to_text(targets={"f1": [0.5]})
    with pytest.raises(ValueError, match=r"2.0 is not a rate in \[0, 1\]"):
        report.to_text(targets={"recall": [2.0]})


# ------------------------------------------------ states read block by block
from fractions import Fraction  # noqa: E402

from streammetrics.metrics.ranking.points import EXACT_LIMIT, Points, scores  # noqa: E402


def points_of(acc, block=None):
    """The query engine over the merged run of a copy of ``acc``, read in blocks of
    ``block`` entries (by default one block: the reference)."""
    c = acc.copy().flush()
    run = c._strategy.run()
    return Points(run, c.n, c.weighted, block=block or max(1, run[0].shape[0]))


def answer(fn):
    try:
        return fn()
    except ValueError as e:
        return str(e)


def assert_identical(got, want):
    if isinstance(want, str):
        assert got == want
        return
    assert got.as_dict().keys() == want.as_dict().keys()
    for k, e in want.items():
        g = got[k]
        assert type(g) is type(e) and (g == e or (g != g and e != e)), (k, g, e)


@st.composite
def held_states(draw):
    """An exact state (weighted or not) held as runs and pending rows, from updates,
    flushes, finalizes, merges and a reload; tied scores; tiny blocks."""
    n = draw(st.integers(1, 120))
    levels = draw(st.integers(1, 40))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int64)
    s = np.array(draw(st.lists(st.integers(-levels, levels), min_size=n, max_size=n)), float) / levels
    w = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), float) if draw(st.booleans()) else None
    acc = RankAUC()
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    for a, b in zip([0, *cuts], [*cuts, n]):
        if b > a:
            acc.update(y[a:b], s[a:b], sample_weight=None if w is None else w[a:b])
        action = draw(st.sampled_from(["none", "flush", "finalize", "merge", "reload"]))
        if action == "flush":
            acc.flush()
        elif action == "finalize" and acc.n:
            acc.finalize()
        elif action == "merge" and b > a:
            acc.merge(RankAUC().update(y[a:b][::-1], s[a:b][::-1]))
        elif action == "reload" and acc.n:
            acc = RankAUC().load_state_dict(acc.state_dict())
    if acc.n == 0:
        acc.update(y, s)
    return acc, np.unique(s), draw(st.integers(1, 5))


@given(held_states(), st.lists(st.floats(0, 1), min_size=3, max_size=3))
def test_a_state_read_in_blocks_answers_as_read_at_once_bit_for_bit(state, rates):
    acc, distinct, step = state
    want, got = points_of(acc), points_of(acc, step)
    for t in [*distinct, np.inf, -np.inf, -2.0, 2.0, *(distinct[:-1] + np.diff(distinct) / 2)]:
        assert_identical(got.at_threshold(t), want.at_threshold(t))
        assert_identical(acc.at_threshold(t), want.at_threshold(t))
    for v in [0.0, 1.0, *rates]:
        for name in ("recall", "precision", "fpr", "specificity"):
            assert_identical(
                answer(lambda: got.threshold_for(**{name: v})), answer(lambda: want.threshold_for(**{name: v}))
            )
    for score in scores():
        assert_identical(got.best_threshold(score), want.best_threshold(score))
    for cost in ([[0, 1], [5, 0]], [[1, -2], [3, 0.5]], [[0, 0], [0, 0]]):
        assert_identical(got.best_threshold(None, cost), want.best_threshold(None, cost))
    # partial areas asked in any order resume from the sums kept by earlier ones
    for max_fpr in [*rates[::-1], 1.0, 1e-3, 0.5]:
        if max_fpr > 0:
            assert got.partial_auc(max_fpr) == want.partial_auc(max_fpr)
            assert got.partial_auc(max_fpr, True) == want.partial_auc(max_fpr, True)
    assert got.delong_sums(0.5) == want.delong_sums(0.5)
    assert got.auc() == want.auc()


def test_best_threshold_among_near_ties_takes_the_highest():
    """Equal scores at many thresholds (accuracy is equal wherever tp - fp is):
    the first, highest, of the equal is picked, whichever blocks hold them."""
    y = np.tile([1, 0], 5000)
    s = -np.arange(10_000, dtype=float)  # alternating labels down the scores
    acc = RankAUC().update(y[:4000], s[:4000]).flush().update(y[4000:], s[4000:])
    for score in ("accuracy", "youden", "balanced_accuracy"):
        want = points_of(acc).best_threshold(score)
        assert want.threshold == -0.0  # the highest threshold of the best
        for block in (16, 1000):
            assert_identical(points_of(acc, block).best_threshold(score), want)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_threshold_of_blocks_picks_as_the_scan_of_every_score(seed):
    """The blocks whose corners may hold the best, read alone, pick what the scan
    of every candidate picks, for every score and for costs, with ties."""
    rng = np.random.default_rng(20 + seed)
    n = 60_000
    y = (rng.random(n) < (0.2, 0.5, 0.8)[seed]).astype(np.int64)
    s = np.round(rng.normal(size=n) + y, 2 + seed)
    acc = RankAUC().update(y[: n // 3], s[: n // 3]).flush().update(y[n // 3 :], s[n // 3 :])
    want = points_of(acc)
    for block in (64, 200):
        ops = points_of(acc, block)
        for score in scores():
            assert_identical(ops.best_threshold(score), want.best_threshold(score))
        for cost in ([[0, 1], [5, 0]], [[0, 3], [1, 0]], [[1, -2], [3, 0.5]]):
            assert_identical(ops.best_threshold(None, cost), want.best_threshold(None, cost))


def test_best_threshold_by_cost_is_kept_until_the_state_changes():
    rng = np.random.default_rng(16)
    y = (rng.random(6000) < 0.4).astype(np.int64)
    s = np.round(rng.normal(size=6000) + y, 2)
    for weighted in (False, True):

        def w(k):
            return np.ones(k) if weighted else None

        acc = RankAUC().update(y[:4000], s[:4000], sample_weight=w(4000))
        cost = [[0, 1], [3, 0]]
        first = acc.best_threshold(cost=cost)
        assert acc.best_threshold(cost=np.array(cost, float)) == first  # kept, the same answer
        acc.update(y[4000:], s[4000:], sample_weight=w(2000))
        want = RankAUC().update(y, s).best_threshold(cost=cost)
        assert acc.best_threshold(cost=cost).threshold == want.threshold
        assert acc.best_threshold(cost=cost).cost == pytest.approx(want.cost)


# ------------------------------------------------ the partial area in exact integers
def fraction_partial_area(y, s, max_fpr):
    """The area under the ROC curve up to ``max_fpr`` in exact fractions, by
    brute force: the points at every distinct score from the top, linear
    between them, cut at ``Fraction(max_fpr)``."""
    P, N = int((y == 1).sum()), int((y == 0).sum())
    cut = Fraction(max_fpr)
    area, x0, y0 = Fraction(0), Fraction(0), Fraction(0)
    for t in sorted(set(s.tolist()), reverse=True):
        x1 = Fraction(int(((s >= t) & (y == 0)).sum()), N)
        y1 = Fraction(int(((s >= t) & (y == 1)).sum()), P)
        if x1 > cut:
            return area + (cut - x0) * (y0 + y0 + (y1 - y0) * (cut - x0) / (x1 - x0)) / 2
        area += (x1 - x0) * (y0 + y1) / 2
        x0, y0 = x1, y1
    return area


@given(rows(max_size=80, weights=False), st.floats(1e-3, 1.0))
@example(  # the whole area is the cut step's, whose width max_fpr * N - x0 cancels
    (
        np.array([0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0]),
        np.array([0, 0, 0, 0.5, 1, 0, 1, 1, 1, 1, 1, 0.5, 1]),
        None,
        [0, 13],
    ),
    0.7615628841130906,
)
def test_exact_partial_area_equals_exact_fractions(data, max_fpr):
    """Counts: the steps' doubled areas are summed exactly and divided once, so the
    area is the exact one to a few roundings (the cut's, whose width is rounded
    once), and at max_fpr=1 the correctly rounded 2U / 2PN, the AUC's bits."""
    y, s, _, cuts = data
    if len(set(y.tolist())) < 2:
        return
    acc = folded(y, s, None, cuts)
    want = fraction_partial_area(y, s, max_fpr)
    got = acc.partial_auc(max_fpr)
    assert abs(Fraction(got) - want) <= Fraction(1, 2**50) * want + Fraction(1, 2**60)
    assert acc.partial_auc(1.0) == float(fraction_partial_area(y, s, 1.0)) == acc.finalize().auc
    for block in (1, 3, 1000):  # every way of reading the state gives the same bits
        assert points_of(acc, block).partial_auc(max_fpr) == got
        assert points_of(acc, block).partial_auc(max_fpr, True) == acc.partial_auc(max_fpr, mcclish=True)


def test_partial_auc_falls_back_to_floats_when_2pn_passes_int64():
    # a run whose counts make 2PN pass int64 (P = N = 3e9 on 5 scores)
    scores = np.array([0.1, 0.2, 0.5, 0.7, 0.9])
    ab = np.array([[0, 1, 1, 1, 2], [2, 1, 1, 1, 0]], np.int64) * 600_000_000
    P, N = int(ab[0].sum()), int(ab[1].sum())
    assert 2 * P * N > EXACT_LIMIT
    ops = Points((scores, ab), P + N, False)
    y = np.repeat([1, 0, 1, 0, 1, 0, 1, 0, 1, 0], [0, 2, 1, 1, 1, 1, 1, 1, 2, 0])
    s = np.repeat([0.1, 0.1, 0.2, 0.2, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9], [0, 2, 1, 1, 1, 1, 1, 1, 2, 0])
    for max_fpr in (0.05, 0.2, 0.5, 0.9, 1.0):
        got = ops.partial_auc(max_fpr)
        # the same curve as one row per 6e8-th of the mass
        assert got == pytest.approx(float(fraction_partial_area(y, s, max_fpr)), rel=1e-12)
        for block in (1, 2):
            blocks = Points((scores, ab), P + N, False, block=block)
            assert blocks.partial_auc(max_fpr) == got
            assert blocks.partial_auc(max_fpr, True) == ops.partial_auc(max_fpr, True)


def test_partial_auc_exact_at_the_int64_limit():
    """Just below the limit the exact sums do not overflow: the exact area to a few roundings."""
    scores = np.array([0.1, 0.5, 0.9])
    p = n = 2_147_483_647  # P N just under 2**62: 2PN fits int64
    ab = np.array([[0, p // 2, p - p // 2], [n // 2, n - n // 2, 0]], np.int64)
    P, N = int(ab[0].sum()), int(ab[1].sum())
    assert 2 * P * N <= EXACT_LIMIT
    ops = Points((scores, ab), P + N, False)
    x1, x2 = Fraction(int(ab[1, 2]), N), Fraction(int(ab[1, 2] + ab[1, 1]), N)
    y1, y2 = Fraction(int(ab[0, 2]), P), Fraction(int(ab[0, 2] + ab[0, 1]), P)
    exact = x1 * y1 / 2 + (x2 - x1) * (y1 + y2) / 2 + (1 - x2) * (y2 + 1) / 2
    assert ops.partial_auc(1.0) == float(exact)
    for max_fpr in (0.3, 0.7, 1.0):
        assert Points((scores, ab), P + N, False, block=1).partial_auc(max_fpr) == ops.partial_auc(max_fpr)
