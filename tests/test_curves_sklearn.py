"""DET, gain and lift curves, the Kolmogorov–Smirnov statistic and the
confusion counts at every threshold, read from the rank state: against
scikit-learn, scipy and brute force, under any batching, sharding and merge
order, exact and spilled, and with certified bounds when binned."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics import RankAUC, confusion_matrix_at_thresholds, det_curve

from .harness import sharded

stats = pytest.importorskip("scipy.stats")


@st.composite
def scored(draw, max_size=80):
    """Labels, tied or extreme scores, optional integer weights (zeros too), cuts and a merge order."""
    n = draw(st.integers(1, max_size))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.int64)
    pool = st.sampled_from([-1e300, -2.5, -0.0, 0.0, 0.25, 0.5, 0.75, 3.0, 1e300])
    if draw(st.booleans()):
        pool = st.floats(-1e6, 1e6, allow_nan=False)
    s = np.array(draw(st.lists(pool, min_size=n, max_size=n)), np.float64)
    w = None
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 1e-3, 7.25]), min_size=n, max_size=n)))
    cuts = draw(st.lists(st.integers(0, n), max_size=4))
    return y, s, w, cuts, draw(st.sampled_from(["forward", "reverse", "plus"]))


def both_classes(y, w):
    w = np.ones(len(y)) if w is None else w
    return w[y == 1].sum() > 0 and w[y == 0].sum() > 0


def close(got, ref, exact):
    for g, r in zip(got, ref):
        if exact:
            np.testing.assert_array_equal(g, r)
        else:
            # weighted: a difference of two running sums (tns = fps[-1] - fps) is exact to the sums' rounding
            scale = float(np.max(np.abs(r[np.isfinite(r)]), initial=0.0))
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12 * scale)


def brute_gain(y, s, w):
    """Cumulative gain per row (descending scores), kept at the last row of each tie group."""
    w = np.ones(len(y)) if w is None else w
    keep = w > 0
    y, s, w = y[keep], s[keep], w[keep]
    order = np.argsort(-s, kind="stable")
    y, s, w = y[order], s[order], w[order]
    last = np.append(s[1:] != s[:-1], True)
    called, found = np.cumsum(w)[last], np.cumsum(w * y)[last]
    total_pos = found[-1] if found.size and found[-1] > 0 else 1.0
    return called / called[-1], found / total_pos, s[last]


def brute_ks(y, s, w):
    """``max |F_pos - F_neg|`` of the weighted empirical distributions, at every score."""
    w = np.ones(len(y)) if w is None else w
    pts = np.unique(s)
    cdf = [np.array([w[(y == c) & (s <= t)].sum() for t in pts]) / w[y == c].sum() for c in (1, 0)]
    return float(np.max(np.abs(cdf[0] - cdf[1])))


@settings(max_examples=60, deadline=None)
@given(scored())
def test_curves_agree_with_sklearn_under_any_sharding(data):
    y, s, w, cuts, order = data
    acc = sharded(RankAUC, [y, s], w, cuts, order)
    exact = w is None
    if w is None or (w > 0).any():
        ref = skm.confusion_matrix_at_thresholds(y, s, sample_weight=w)
        close(acc.confusion_matrix_at_thresholds(), ref, exact)
        close(confusion_matrix_at_thresholds(y, s, sample_weight=w), ref, exact)
        fraction, gains, th = acc.gain_curve()
        ref_fraction, ref_gain, ref_th = brute_gain(y, s, w)
        np.testing.assert_array_equal(th, np.concatenate(([np.inf], ref_th)))
        np.testing.assert_allclose(fraction, np.concatenate(([0.0], ref_fraction)), rtol=1e-12)
        np.testing.assert_allclose(gains, np.concatenate(([0.0], ref_gain)), rtol=1e-12)
        lf, lift, lth = acc.lift_curve()
        np.testing.assert_allclose(lift, ref_gain / ref_fraction, rtol=1e-12)
        np.testing.assert_array_equal(lth, ref_th)
    if both_classes(y, w):
        for drop in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                ref = skm.det_curve(y, s, sample_weight=w, drop_intermediate=drop)
            close(acc.det_curve(drop_intermediate=drop), ref, exact)
            close(det_curve(y, s, sample_weight=w, drop_intermediate=drop), ref, exact)
        r = acc.ks_statistic()
        assert r.ks == pytest.approx(brute_ks(y, s, w), rel=1e-12)
        if w is None:
            with warnings.catch_warnings():  # only the statistic is compared, not scipy's p-value
                warnings.simplefilter("ignore", RuntimeWarning)
                ref = stats.ks_2samp(s[y == 1], s[y == 0], method="asymp").statistic
            assert r.ks == pytest.approx(ref, rel=1e-14)
        # the threshold reaches it, and no higher threshold does
        at = acc.at_threshold(r.threshold)
        assert abs(at.recall - (1 - at.specificity)) == pytest.approx(r.ks, rel=1e-12)
        assert r.ks_sign == (1 if at.recall >= 1 - at.specificity else -1)
        assert r.ks_lower == r.ks == r.ks_upper
        assert acc.finalize().ks_statistic().ks == r.ks


def test_ks_with_one_class_is_the_guard():
    r = RankAUC().update([1, 1, 1], [0.1, 0.2, 0.3]).ks_statistic()
    assert (r.ks, r.threshold) == (0.0, np.inf)


def test_negative_separation_has_sign_minus_one():
    r = RankAUC().update([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4]).ks_statistic()
    assert (r.ks, r.ks_sign, r.threshold) == (1.0, -1, 0.3)


@pytest.mark.parametrize("max_bins", [2, 8, 40])
def test_binned_ks_bounds_hold_the_exact_statistic(max_bins):
    rng = np.random.default_rng(max_bins)
    y = rng.integers(0, 2, 3000)
    s = rng.normal(size=3000) + 0.8 * y
    exact = RankAUC().update(y, s).ks_statistic().ks
    r = RankAUC(max_bins=max_bins).update(y, s).ks_statistic()
    assert r.ks_lower <= exact <= r.ks_upper
    assert r.ks_lower <= r.ks <= r.ks_upper
    fpr, fnr, _ = RankAUC(max_bins=max_bins).update(y, s).det_curve()
    assert np.all(np.diff(fpr) <= 0) and np.all(np.diff(fnr) >= 0)


def test_spilled_state_gives_the_in_memory_curves(tmp_path):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60_000)
    s = np.round(rng.normal(size=y.size) + y, 3)
    spilled = RankAUC(max_memory="64KiB", spill_dir=tmp_path)
    for i in range(0, y.size, 7_000):
        spilled.update(y[i : i + 7_000], s[i : i + 7_000])
    assert spilled.spilled
    memory = RankAUC().update(y, s)
    close(spilled.det_curve(), skm.det_curve(y, s), True)
    close(spilled.gain_curve(), memory.gain_curve(), True)
    assert spilled.ks_statistic().as_dict() == memory.ks_statistic().as_dict()
    assert memory.ks_statistic().ks == pytest.approx(
        stats.ks_2samp(s[y == 1], s[y == 0], method="asymp").statistic, rel=1e-14
    )


def test_pos_label_reads_labels_of_any_kind():
    y = np.array(["ham", "spam", "spam", "ham", "spam"])
    s = [0.1, 0.9, 0.4, 0.6, 0.4]
    ref = skm.det_curve(y, s, pos_label="spam")
    close(det_curve(y, s, pos_label="spam"), ref, True)
    ref = skm.confusion_matrix_at_thresholds(y, s, pos_label="ham")
    close(confusion_matrix_at_thresholds(y, s, pos_label="ham"), ref, True)


def test_zero_weight_rows_leave_empty_curves():
    acc = RankAUC().update([0, 1], [0.1, 0.2], sample_weight=[0.0, 0.0])
    tns, fps, fns, tps, th = acc.confusion_matrix_at_thresholds()
    assert th.size == tps.size == tns.size == 0
    fraction, gains, th = acc.gain_curve()
    assert fraction.tolist() == [0.0] and th.tolist() == [np.inf]


def test_pos_label_across_the_ranking_probability_and_calibration_families():
    from sklearn.calibration import calibration_curve

    import streammetrics as sm

    rng = np.random.default_rng(4)
    y = rng.choice(np.array(["ham", "spam"]), 500)
    p = np.round(rng.random(500), 2)
    w = rng.random(500)
    pos = y == "spam"
    close(sm.roc_curve(y, p, pos_label="spam"), skm.roc_curve(y, p, pos_label="spam", drop_intermediate=False), True)
    close(
        sm.pr_curve(y, p, pos_label="spam", sample_weight=w),
        skm.precision_recall_curve(y, p, pos_label="spam", sample_weight=w),
        False,
    )
    assert sm.average_precision(y, p, pos_label="ham") == pytest.approx(
        skm.average_precision_score(y == "ham", p), rel=1e-12
    )
    assert sm.auc(y, p, pos_label="spam") == pytest.approx(skm.roc_auc_score(pos, p), rel=1e-14)
    assert sm.partial_auc(y, p, 0.3, pos_label="spam", mcclish=True) == pytest.approx(
        skm.roc_auc_score(pos, p, max_fpr=0.3), rel=1e-12
    )
    inside = np.clip(p, 0.01, 0.99)  # the floors differ (1e-12, scikit-learn's epsilon)
    assert sm.log_loss(y, inside, pos_label="spam") == pytest.approx(skm.log_loss(pos, inside), rel=1e-12)
    assert sm.brier(y, p, pos_label="ham", sample_weight=w) == pytest.approx(
        skm.brier_score_loss(y, p, pos_label="ham", sample_weight=w), rel=1e-12, abs=1e-15
    )
    r = sm.Calibration(5, pos_label="spam").update(y, p).finalize()
    frac, _ = calibration_curve(y, p, n_bins=5, pos_label="spam")
    np.testing.assert_allclose(r.fraction_positive[r.bin_count > 0], frac, rtol=1e-12)
    ints = np.where(pos, 7, 3)  # integer labels other than 0/1
    assert sm.RankAUC(pos_label=7).update(ints, p).finalize().auc == sm.auc(pos, p)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: RankAUC().update([0, 1, 2], [0.1, 0.2, 0.3]), "pass pos_label=.*MulticlassRankAUC"),
        (lambda: RankAUC().update(["a", "b"], [0.1, 0.2]), "pass pos_label="),
        (lambda: RankAUC().update([[0, 1], [1]], [0.1, 0.2]), "ragged list"),
        (lambda: det_curve([[0, 1], [1]], [0.1, 0.2], pos_label=1), "ragged list"),
    ],
)
def test_labels_other_than_01_are_value_errors_saying_where_they_go(call, match):
    import streammetrics as sm

    with pytest.raises(ValueError, match=match):
        call()
    for f in (sm.log_loss, sm.brier, sm.expected_calibration_error):
        with pytest.raises(ValueError, match="pass pos_label="):
            f([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="MulticlassConfusion"):
        sm.BinaryConfusion().update([0, 2], [0, 1])


@pytest.mark.parametrize(
    "call",
    [
        lambda: sm.MulticlassConfusion(3).update([[0, 1], [2]], [0, 1]),
        lambda: sm.MulticlassConfusion(labels=["a", "b"]).update([["a"], ["a", "b"]], ["a", "b"]),
        lambda: sm.MultilabelConfusion(n_labels=2).update([[0, 1], [1]], [[0, 1], [1, 0]]),
        lambda: sm.multiclass_scores([[0, 1], [2]], [0, 1]),
        lambda: sm.BinaryConfusion().update([1, 0], [[0.1], [0.2, 0.3]]),
    ],
)
def test_ragged_lists_are_value_errors_naming_the_argument(call):
    with pytest.raises(ValueError, match=r"^[yYp] is a ragged list") as info:
        call()
    assert isinstance(info.value, TypeError)  # as any input numpy cannot convert
