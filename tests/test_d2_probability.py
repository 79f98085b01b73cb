"""D² of the log loss and of the Brier score, binary and by class: against
scikit-learn's d2_log_loss_score and d2_brier_score on data with ties,
weights and extreme probabilities, streamed under any sharding and merge
order; the guarded degenerate cases; states saved before the class totals.

scikit-learn forms the null model's shares as means and loses digits where a
share is within ~1e-6 of 1 (its 1 - share is a difference): the references
take the models' losses from scikit-learn and the null losses from the exact
class totals (mpmath), and scikit-learn's own D² is checked to 1e-7."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics import ClassProbabilityScores, ProbabilityScores, d2_brier_score, d2_log_loss_score

from .harness import sharded

mp = pytest.importorskip("mpmath")

WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e-3, 1e3])
EXTREMES = [0.0, 1.0, 1e-300, 1 - 1e-16, 0.5, 0.25, 0.7, 1e-13]
ROWS = [  # class probability rows with ties and extremes
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1e-300, 0.5, 0.5],
    [0.25, 0.25, 0.5],
    [1 / 3, 1 / 3, 1 / 3],
    [0.6, 0.4, 0.0],
    [1e-13, 1 - 1e-13, 0.0],
]
FLOOR = 1e-12


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def same(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def floored(p):
    """The two columns ``1 - p`` and ``p`` floored at 1e-12, as the specification
    floors them (scikit-learn clips at the float64 epsilon); only the column of
    each row's outcome enters the log loss."""
    return np.c_[np.maximum(1 - p, FLOOR), np.maximum(p, FLOOR)]


@st.composite
def binary(draw):
    n = draw(st.integers(2, 40))
    y = np.array(draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(EXTREMES) | st.floats(0, 1), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(WEIGHTS, min_size=n, max_size=n))) if draw(st.booleans()) else None
    cuts = draw(st.lists(st.integers(0, n), max_size=3))
    return y, p, w, cuts, draw(st.sampled_from(["forward", "reverse", "plus"]))


@st.composite
def classes(draw):
    n = draw(st.integers(2, 40))
    y = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    P = np.array(draw(st.lists(st.sampled_from(ROWS), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(WEIGHTS, min_size=n, max_size=n))) if draw(st.booleans()) else None
    cuts = draw(st.lists(st.integers(0, n), max_size=3))
    return y, P, w, cuts, draw(st.sampled_from(["forward", "reverse", "plus"]))


def exact_null(codes, w, k):
    """The null model's log loss and Brier score (summed over the ``k`` classes),
    from the class totals in 50 digits."""
    ww = np.ones(len(codes)) if w is None else w
    with mp.workdps(50):
        totals = [mp.fsum(mp.mpf(float(v)) for v, c in zip(ww, codes) if c == j) for j in range(k)]
        shares = [t / mp.fsum(totals) for t in totals]
        log = -mp.fsum(s * mp.log(max(s, mp.mpf(FLOOR))) for s in shares if s > 0)
        return float(log), float(mp.fsum(s * (1 - s) for s in shares))


def two_classes_weighted(y, w):
    """Both scikit-learn and the guard define D² the same way: two classes with weight."""
    ww = np.ones(len(y)) if w is None else w
    return len({*y[ww > 0].tolist()}) >= 2


@settings(max_examples=60, deadline=None)
@given(binary())
def test_binary_d2_matches_sklearn_streamed(data):
    y, p, w, cuts, order = data
    if not two_classes_weighted(y, w):
        return
    r = sharded(ProbabilityScores, [y, p], w, cuts, order).finalize()
    log_null, brier_null = exact_null(y, w, 2)
    ref_log = 1 - quiet(skm.log_loss, y, floored(p), sample_weight=w, labels=[0, 1]) / log_null
    ref_brier = 1 - skm.brier_score_loss(y, p, sample_weight=w) / (brier_null / 2)  # one column of two
    close = dict(rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(ref_log, quiet(skm.d2_log_loss_score, y, floored(p), sample_weight=w), **close)
    np.testing.assert_allclose(ref_brier, quiet(skm.d2_brier_score, y, p, sample_weight=w), **close)
    same(r.d2_log_loss, ref_log)
    same(r.d2_brier, ref_brier)
    same(d2_log_loss_score(y, p, sample_weight=w), ref_log)
    same(d2_brier_score(y, p, sample_weight=w), ref_brier)
    named = np.where(y == 1, "spam", "ham")
    same(d2_brier_score(named, p, sample_weight=w, pos_label="spam"), ref_brier)
    same(d2_log_loss_score(named, p, sample_weight=w, labels=["spam", "ham"]), ref_log)


@settings(max_examples=60, deadline=None)
@given(classes())
def test_class_d2_matches_sklearn_streamed(data):
    y, P, w, cuts, order = data
    if not two_classes_weighted(y, w):
        return
    r = sharded(lambda: ClassProbabilityScores(3), [y, P], w, cuts, order).finalize()
    Pf = P.copy()
    Pf[np.arange(len(y)), y] = np.maximum(P[np.arange(len(y)), y], FLOOR)
    log_null, brier_null = exact_null(y, w, 3)
    ww = np.ones(len(y)) if w is None else w
    ref_log = 1 - quiet(skm.log_loss, y, Pf, sample_weight=w, labels=[0, 1, 2]) / log_null
    ref_brier = 1 - np.sum(ww * np.sum((P - np.eye(3)[y]) ** 2, axis=1)) / np.sum(ww) / brier_null
    close = dict(rtol=1e-7, atol=1e-7)
    labels = [0, 1, 2]
    np.testing.assert_allclose(ref_log, quiet(skm.d2_log_loss_score, y, Pf, sample_weight=w, labels=labels), **close)
    np.testing.assert_allclose(ref_brier, quiet(skm.d2_brier_score, y, P, sample_weight=w, labels=labels), **close)
    same(r.d2_log_loss, ref_log)
    same(r.d2_brier, ref_brier)
    same(d2_log_loss_score(y, P, sample_weight=w), ref_log)
    same(d2_brier_score(y, P, sample_weight=w), ref_brier)
    named = np.array(["cat", "dog", "eel"], dtype=object)[y]
    same(d2_brier_score(named, P, sample_weight=w, labels=["eel", "cat", "dog"]), ref_brier)


def test_sliced_and_bootstrap_carry_the_d2_scores():
    rng = np.random.default_rng(3)
    y, p, by = rng.integers(0, 2, 300), rng.random(300), rng.integers(0, 3, 300)
    r = sm.Sliced(ProbabilityScores()).update(y, p, by=by).finalize()
    for key in range(3):
        at = by == key
        same(r.slices[key].d2_brier, skm.d2_brier_score(y[at], p[at]))
        same(r.slices[key].d2_log_loss, skm.d2_log_loss_score(y[at], p[at]))
    b = sm.Bootstrap(ProbabilityScores(), replicates=20, seed=1).update(y, p).finalize()
    assert b.d2_brier_ci_lower < b.d2_brier < b.d2_brier_ci_upper
    same(b.d2_log_loss, skm.d2_log_loss_score(y, p))


def test_one_class_or_one_row_takes_the_specification_guard():
    # the null model is then certain and right: its losses are 0, and
    # 1 - loss / safe(0) = 1 - loss (scikit-learn raises or gives NaN or -inf)
    r = ProbabilityScores().update([1, 1, 1], [0.9, 1.0, 0.6]).finalize()
    assert r.d2_log_loss == 1 - r.log_loss and r.d2_brier == 1 - r.brier
    r = ClassProbabilityScores(3).update([2], [[0.1, 0.2, 0.7]]).finalize()
    assert r.d2_log_loss == 1 - r.log_loss and r.d2_brier == 1 - r.brier
    assert d2_brier_score([1, 1], [1.0, 1.0]) == 1.0
    # a class with all of the weight but a row of weight 0 is one class too
    assert d2_log_loss_score([0, 1], [0.2, 0.4], sample_weight=[1.0, 0.0]) == pytest.approx(1 + np.log(0.8))


def test_extreme_probabilities_and_shares_lose_no_digits():
    # a null share near 1: 1 - share is the other class's weight, not a
    # difference (scikit-learn's own value loses 8 digits here)
    with mp.workdps(50):
        y = np.array([1] * 5 + [0])
        p = np.array([1.0, 1.0, 1e-300, 0.5, 1 - 1e-16, 0.0])
        w = np.array([1e6, 1e6, 1e6, 1e6, 1e6, 1e-3])  # a share of 2e-10: above the floor
        share = mp.mpf(1e-3) / (5 * mp.mpf(1e6) + mp.mpf(1e-3))
        null_log = -(share * mp.log(share) + (1 - share) * mp.log(1 - share))
        picked = [max(mp.mpf(q) if t else 1 - mp.mpf(q), mp.mpf(FLOOR)) for t, q in zip(y, p)]
        total = mp.fsum(w)
        log_loss = mp.fsum(-mp.mpf(v) * mp.log(q) for v, q in zip(w, picked)) / total
        brier = mp.fsum(mp.mpf(v) * (mp.mpf(q) - t) ** 2 for v, q, t in zip(w, p, y)) / total
        same(d2_log_loss_score(y, p, sample_weight=w), float(1 - log_loss / null_log))
        same(d2_brier_score(y, p, sample_weight=w), float(1 - brier / (share * (1 - share))))


def test_a_state_saved_before_the_class_totals_has_no_d2():
    y, p = np.array([1, 0, 1, 0]), np.array([0.9, 0.2, 0.6, 0.4])
    for make, args in ((ProbabilityScores, (y, p)), (lambda: ClassProbabilityScores(2), (y, np.c_[1 - p, p]))):
        acc = make().update(*args)
        old = {k: v for k, v in acc.state_dict().items() if not k.startswith("classes")}
        loaded = make()
        loaded.load_state_dict(old)
        r = loaded.finalize()
        assert "d2_brier" not in r and r.brier == acc.finalize().brier
        assert "d2_log_loss" not in (loaded + make().update(*args)).finalize()
        assert "d2_log_loss" in (make().update(*args) + make().update(*args)).finalize()


def test_forged_class_totals_are_refused():
    acc = ProbabilityScores().update([1, 0, 1], [0.9, 0.2, 0.6], sample_weight=[1.0, 2.0, 3.0])
    st = acc.state_dict()
    st["classes"] = st["classes"] * 1.5
    with pytest.raises(ValueError, match="class totals add up to 9.0, which does not match the weight total 6.0"):
        ProbabilityScores().load_state_dict(st)
    st = acc.state_dict()
    st["classes"][1] = st["classes"][0]
    with pytest.raises(ValueError, match="class totals"):
        ProbabilityScores().load_state_dict(st)
    st = ClassProbabilityScores(3).update([0, 2], [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]).state_dict()
    st["classes_rows"][0] = 3
    with pytest.raises(ValueError, match="rows"):
        ClassProbabilityScores(3).load_state_dict(st)
