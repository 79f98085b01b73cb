"""Jaccard under every average, Hamming loss, adjusted balanced accuracy,
class likelihood ratios and multilabel F-beta: one formula each on the
confusion states, against scikit-learn on binary, multiclass (labels of any
kind) and multilabel data with ties, weights and every zero_division, and
the streamed results under any sharding and merge order."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from streammetrics import (
    MulticlassConfusion,
    MultilabelConfusion,
    UndefinedMetricWarning,
    accuracy,
    balanced_accuracy,
    class_likelihood_ratios,
    cohen_kappa_score,
    hamming_loss,
    jaccard_score,
    matthews,
)

from .harness import sharded

AVERAGES = ["micro", "macro", "weighted", None]
WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e-3, 1e3])


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def same(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)


@st.composite
def labelled(draw, kinds=("01", "ints", "strings")):
    n = draw(st.integers(1, 40))
    kind = draw(st.sampled_from(kinds))
    pool = {"01": [0, 1], "ints": [0, 1, 2, 5], "signed": [-1, 1, 3], "strings": ["ant", "bee", "cat"]}[kind]
    y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(WEIGHTS, min_size=n, max_size=n))) if draw(st.booleans()) else None
    return y, p, w


@st.composite
def matrices(draw):
    n, L = draw(st.integers(1, 25)), draw(st.integers(2, 4))
    cells = st.lists(st.integers(0, 1), min_size=n * L, max_size=n * L)
    Y, P = (np.array(draw(cells)).reshape(n, L) for _ in range(2))
    w = np.array(draw(st.lists(WEIGHTS, min_size=n, max_size=n))) if draw(st.booleans()) else None
    cuts = draw(st.lists(st.integers(0, n), max_size=3))
    return Y, P, w, cuts, draw(st.sampled_from(["forward", "reverse", "plus"]))


def exact_mcc(y, p, w):
    """Gorodkin's coefficient in exact fractions of the weights (the square root taken last)."""
    labels = sorted(set(y.tolist()) | set(p.tolist()))
    m = {(a, b): Fraction(0) for a in labels for b in labels}
    for a, b, v in zip(y.tolist(), p.tolist(), w.tolist()):
        m[a, b] += Fraction(v)
    t = [sum(m[a, b] for b in labels) for a in labels]
    c = [sum(m[a, b] for a in labels) for b in labels]
    s, hit = sum(t), sum(m[a, a] for a in labels)
    under = (s * s - sum(x * x for x in c)) * (s * s - sum(x * x for x in t))
    return float((hit * s - sum(a * b for a, b in zip(t, c))) / Fraction(math.sqrt(under))) if under else 0.0


def has_mass(w):
    return w is None or w.sum() > 0


@settings(max_examples=60, deadline=None)
@given(labelled(), st.sampled_from([0, 1]))
def test_jaccard_and_hamming_of_labels(data, zd):
    y, p, w = data
    if not has_mass(w):
        return
    for average in AVERAGES:
        same(
            jaccard_score(y, p, average=average, sample_weight=w, zero_division=zd),
            quiet(skm.jaccard_score, y, p, average=average, sample_weight=w, zero_division=zd),
        )
    labels = sorted(set(y.tolist()) | set(p.tolist()))
    if len(labels) <= 2:
        pos = labels[-1]
        same(
            jaccard_score(y, p, pos_label=pos, sample_weight=w, zero_division=zd),
            quiet(skm.jaccard_score, y, p, pos_label=pos, sample_weight=w, zero_division=zd),
        )
    chosen = labels[::-1][:2]
    same(
        jaccard_score(y, p, labels=chosen, average="macro", sample_weight=w, zero_division=zd),
        quiet(skm.jaccard_score, y, p, labels=chosen, average="macro", sample_weight=w, zero_division=zd),
    )
    assert hamming_loss(y, p, sample_weight=w) == pytest.approx(skm.hamming_loss(y, p, sample_weight=w), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(labelled())
def test_balanced_accuracy_adjusted(data):
    y, p, w = data
    if not has_mass(w):
        return
    kept = y if w is None else y[w > 0]
    if set(np.unique(kept).tolist()) <= {0, 1} and set(np.unique(np.concatenate([y, p])).tolist()) <= {0, 1}:
        if len(np.unique(kept)) < 2:  # the guard differs from scikit-learn (documented)
            return
    for adjusted in (False, True):
        ref = quiet(skm.balanced_accuracy_score, y, p, sample_weight=w, adjusted=adjusted)
        if np.isfinite(ref):
            same(balanced_accuracy(y, p, sample_weight=w, adjusted=adjusted), ref)


@settings(max_examples=60, deadline=None)
@given(labelled(kinds=("ints", "strings", "signed")))
def test_accuracy_matthews_and_kappa_of_class_labels(data):
    y, p, w = data
    if not has_mass(w):
        return
    same(accuracy(y, p, sample_weight=w), quiet(skm.accuracy_score, y, p, sample_weight=w))
    # weighted: an exact reference (scikit-learn's 1 - sum(c^2) cancels digits when one class holds nearly all)
    ref = quiet(skm.matthews_corrcoef, y, p, sample_weight=w) if w is None else exact_mcc(y, p, w)
    same(matthews(y, p, sample_weight=w), ref)
    for weights in (None, "linear", "quadratic"):
        ref = quiet(skm.cohen_kappa_score, y, p, weights=weights, sample_weight=w)
        got = cohen_kappa_score(y, p, weights=weights, sample_weight=w, replace_undefined_by=np.nan)
        same(got, ref)
        # the library's default guards an undefined kappa to 0
        assert cohen_kappa_score(y, p, weights=weights, sample_weight=w) == (0.0 if np.isnan(ref) else got)
    labels = sorted(set(y.tolist()) | set(p.tolist()))[::-1]  # an order of its own: the weights follow it
    same(
        cohen_kappa_score(y, p, labels=labels, weights="linear", replace_undefined_by=np.nan),
        quiet(skm.cohen_kappa_score, y, p, labels=labels, weights="linear"),
    )


def test_kappa_and_class_scores_refuse_what_scikit_learn_refuses():
    with pytest.raises(ValueError, match="weights must be None, 'linear' or 'quadratic'"):
        cohen_kappa_score([0, 1], [0, 1], weights="cubic")
    with pytest.raises(ValueError, match=r"p\[0\] = 0.3"):  # scores are not labels
        accuracy([0, 2], [0.3, 2])
    with pytest.raises(ValueError, match=r"y\[1\] = 2: not one of the 2 labels"):
        cohen_kappa_score([0, 2], [0, 1], labels=[0, 1])


@settings(max_examples=60, deadline=None)
@given(labelled(kinds=("01", "strings")), st.sampled_from([np.nan, 1.0, {"LR+": 7.0, "LR-": 0.5}]))
def test_class_likelihood_ratios(data, replace):
    y, p, w = data
    labels = sorted(set(y.tolist()) | set(p.tolist()))
    if len(labels) != 2 or not has_mass(w):
        return
    with warnings.catch_warnings(record=True) as ref_warned:
        warnings.simplefilter("always")
        ref = skm.class_likelihood_ratios(y, p, sample_weight=w, replace_undefined_by=replace)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        got = class_likelihood_ratios(y, p, sample_weight=w, replace_undefined_by=replace)
    support_pos = (y == labels[1]).sum() if w is None else w[y == labels[1]].sum()
    if support_pos == 0:  # both replaced (scikit-learn: NaN whatever replace_undefined_by says)
        want = (replace, replace) if not isinstance(replace, dict) else (replace["LR+"], replace["LR-"])
        same(got, want)
        return
    same(got, ref)
    ours = [x for x in warned if issubclass(x.category, UndefinedMetricWarning)]
    theirs = [x for x in ref_warned if x.category.__name__ == "UndefinedMetricWarning"]
    assert len(ours) == len(theirs)
    if (y == labels[0]).sum() == 0 or (w is not None and w[y == labels[0]].sum() == 0):
        return  # reversed, no row of the positive class: both replaced, as checked above
    same(
        quiet(class_likelihood_ratios, y, p, labels=labels[::-1], sample_weight=w, replace_undefined_by=replace),
        quiet(skm.class_likelihood_ratios, y, p, labels=labels[::-1], sample_weight=w, replace_undefined_by=replace),
    )


@settings(max_examples=40, deadline=None)
@given(matrices(), st.sampled_from([0, 1]), st.sampled_from([0.5, 1.0, 2.0, 3.7]), st.sampled_from([0, 1, np.nan]))
def test_multilabel_scores_streamed_and_one_shot(data, zd, beta, fzd):
    Y, P, w, cuts, order = data
    if not has_mass(w):
        return
    betas = (0.5, 2.0, 3.7)
    r = sharded(lambda: MultilabelConfusion(Y.shape[1], samples_betas=betas), [Y, P], w, cuts, order).finalize()
    for average in AVERAGES + ["samples"]:
        ref = quiet(skm.jaccard_score, Y, P, average=average, sample_weight=w, zero_division=zd)
        same(jaccard_score(Y, P, average=average, sample_weight=w, zero_division=zd), ref)
        same(r.jaccard(average, zero_division=zd), ref)
        ref = quiet(skm.fbeta_score, Y, P, beta=beta, average=average, sample_weight=w, zero_division=fzd)
        same(r.fbeta(beta, average, zero_division=fzd), ref)
    same(
        jaccard_score(Y, P, labels=[1, 0], average=None, sample_weight=w, zero_division=zd),
        quiet(skm.jaccard_score, Y, P, labels=[1, 0], average=None, sample_weight=w, zero_division=zd),
    )
    same(hamming_loss(Y, P, sample_weight=w), skm.hamming_loss(Y, P, sample_weight=w))


def test_multilabel_samples_fbeta_is_kept_for_the_declared_betas_only():
    Y, P = [[1, 0], [0, 0]], [[1, 1], [0, 0]]
    r = MultilabelConfusion(2, samples_betas=[2]).update(Y, P).finalize()
    assert r.fbeta(2, "samples") == skm.fbeta_score(Y, P, beta=2, average="samples", zero_division=0)
    assert r.fbeta(2, "samples", zero_division=1) == skm.fbeta_score(Y, P, beta=2, average="samples", zero_division=1)
    with pytest.raises(ValueError, match=r"b=0\.5 .*samples_betas=.*kept: \[1\.0, 2\.0\]"):
        r.fbeta(0.5, "samples")
    with pytest.raises(ValueError, match="samples_betas must be a finite number > 0"):
        MultilabelConfusion(2, samples_betas=[0])
    with pytest.raises(TypeError, match="samples_betas must be a sequence"):
        MultilabelConfusion(2, samples_betas=2.0)
    with pytest.raises(ValueError, match="settings differ|samples_betas"):
        MultilabelConfusion(2).merge(MultilabelConfusion(2, samples_betas=[2]))


def test_a_multilabel_state_saved_before_the_samples_terms_keeps_f1_at_zero_division_0():
    Y, P = [[1, 0], [0, 0], [1, 1]], [[1, 1], [0, 0], [0, 1]]
    acc = MultilabelConfusion(2).update(Y, P)
    old = {k: v for k, v in acc.state_dict().items() if not k.startswith("samples")}
    loaded = MultilabelConfusion(2)
    loaded.load_state_dict(old)
    merged = loaded.merge(MultilabelConfusion(2).update(Y, P)).finalize()
    assert merged.fbeta(1, "samples") == skm.f1_score(Y, P, average="samples", zero_division=0)
    with pytest.raises(ValueError, match="saved before .* zero_division=0 only"):
        merged.fbeta(1, "samples", zero_division=1)
    assert acc.finalize().jaccard("samples", 1) == skm.jaccard_score(Y, P, average="samples", zero_division=1)


@settings(max_examples=40, deadline=None)
@given(labelled(kinds=("ints",)), st.lists(st.integers(0, 40), max_size=3), st.sampled_from([0, 1]))
def test_multiclass_jaccard_streamed(data, cuts, zd):
    y, p, w = data
    if not has_mass(w):
        return
    labels = [0, 1, 2, 5]
    code = {v: i for i, v in enumerate(labels)}
    yc, pc = np.array([code[v] for v in y]), np.array([code[v] for v in p])
    r = sharded(lambda: MulticlassConfusion(4), [yc, pc], w, cuts, "reverse").finalize()
    for average in AVERAGES:
        ref = quiet(skm.jaccard_score, y, p, labels=labels, average=average, sample_weight=w, zero_division=zd)
        same(r.jaccard(average, zero_division=zd), ref)


def test_large_counts_are_exact():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 3, 200_000), rng.integers(0, 3, 200_000)
    assert hamming_loss(y, p) == skm.hamming_loss(y, p)
    assert jaccard_score(y, p, average="micro") == skm.jaccard_score(y, p, average="micro")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: jaccard_score([0, 1, 2], [0, 1, 1]), "average='binary' scores two"),
        (lambda: jaccard_score([[0, 1]], [[0, 1]]), "multilabel"),
        (lambda: jaccard_score([0, 1], [0, 1], average="samples"), "multilabel"),
        (lambda: jaccard_score([0, 1], [0, 1], zero_division=np.nan), "zero_division"),
        (lambda: jaccard_score([0, 1], [0, 1], average="mean"), "average"),
        (lambda: class_likelihood_ratios([0, 1, 2], [0, 1, 1]), "two-label"),
        (lambda: class_likelihood_ratios([0, 1], [0, 1], replace_undefined_by=0.5), "replace_undefined_by"),
        (lambda: class_likelihood_ratios([0, 1], [0, 1], replace_undefined_by={"LR+": 0.5, "LR-": 0}), "LR+"),
        (lambda: hamming_loss([0.5, 1], [0, 1]), "integers or strings"),
    ],
)
def test_bad_values_are_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=30, deadline=None)
@given(matrices(), st.sampled_from([None, 8]))
def test_multilabel_average_precision_per_label(data, max_bins):
    from streammetrics import MultilabelRankAUC

    Y, P, w, cuts, order = data
    S = np.round(np.random.default_rng(Y.size).random(Y.shape) + 0.4 * Y, 1)
    if not has_mass(w) or ((Y if w is None else Y * (w[:, None] > 0)).sum(axis=0) == 0).any():
        return
    acc = sharded(lambda: MultilabelRankAUC(Y.shape[1], max_bins=max_bins), [Y, S], w, cuts, order)
    for average in AVERAGES:
        same(acc.average_precision(average), skm.average_precision_score(Y, S, average=average, sample_weight=w))
