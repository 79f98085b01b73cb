"""One-shot ranking scores of query x item matrices against scikit-learn and ranx."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm

skm = pytest.importorskip("sklearn.metrics")


@st.composite
def matrices(draw, distinct=False):
    """Relevance and score matrices with ties, zero-relevance rows and weights; some rows longer than the 64
    items the kernel ranks itself."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n, m = draw(st.integers(1, 8)), draw(st.one_of(st.integers(2, 45), st.integers(60, 150)))
    t = rng.integers(0, 4, (n, m)) * (rng.random((n, m)) < draw(st.sampled_from([0.0, 0.2, 0.7])))
    if distinct:
        s = rng.permutation(n * m).reshape(n, m) / 7.0
    else:
        s = rng.integers(0, draw(st.integers(1, 6)), (n, m)).astype(float)
    w = rng.random(n) + 0.1 if draw(st.booleans()) else None
    k = draw(st.one_of(st.none(), st.integers(1, m + 3)))
    return t, s, w, k


@settings(max_examples=40)
@given(matrices())
def test_ndcg_and_dcg_equal_scikit_learn_with_ties(data):
    t, s, w, k = data
    assert sm.ndcg_score(t, s, k=k, sample_weight=w) == pytest.approx(
        skm.ndcg_score(t, s, k=k, sample_weight=w), rel=1e-12, abs=1e-12
    )
    for base in (2, 10):
        assert sm.dcg_score(t, s, k=k, log_base=base, sample_weight=w) == pytest.approx(
            skm.dcg_score(t, s, k=k, log_base=base, sample_weight=w), rel=1e-12, abs=1e-12
        )


@settings(max_examples=30)
@given(matrices(distinct=True))
def test_ignore_ties_equal_scikit_learn_without_ties(data):
    # scikit-learn's order among tied scores is unspecified: compared where there is none
    t, s, w, k = data
    for f in ("ndcg_score", "dcg_score"):
        got = getattr(sm, f)(t, s, k=k, sample_weight=w, ignore_ties=True)
        assert got == pytest.approx(getattr(skm, f)(t, s, k=k, sample_weight=w, ignore_ties=True), rel=1e-12, abs=1e-12)


@settings(max_examples=40)
@given(matrices())
def test_label_ranking_scores_equal_scikit_learn(data):
    t, s, w, _ = data
    y = (t > 0).astype(int)
    for f in ("label_ranking_average_precision_score", "coverage_error", "label_ranking_loss"):
        got = getattr(sm, f)(y, s, sample_weight=w)
        assert got == pytest.approx(getattr(skm, f)(y, s, sample_weight=w), rel=1e-12, abs=1e-12), f


def _brute(t, s, k):
    """Per-query values by sorting each row (ties: least relevant first)."""
    out = {"mrr": [], "map": [], "precision": [], "recall": []}
    for rel, sc in zip(t, s):
        r = rel[np.lexsort((rel, -sc))] > 0
        top = r[:k]
        n_rel = r.sum()
        first = np.flatnonzero(r)
        out["mrr"].append(1 / (first[0] + 1) if first.size and first[0] < k else 0.0)
        prec = np.cumsum(top) / np.arange(1, top.size + 1)
        out["map"].append((prec * top).sum() / n_rel if n_rel else 0.0)
        out["precision"].append(top.sum() / k)
        out["recall"].append(top.sum() / n_rel if n_rel else 0.0)
    return out


@settings(max_examples=40)
@given(matrices())
def test_cut_off_scores_equal_brute_force(data):
    t, s, w, k = data
    ref = _brute(t, s, k or t.shape[1])
    got = {
        "mrr": sm.mrr_score(t, s, k=k, sample_weight=w),
        "map": sm.map_at_k(t, s, k, sample_weight=w),
        "precision": sm.precision_at_k(t, s, k, sample_weight=w),
        "recall": sm.recall_at_k(t, s, k, sample_weight=w),
    }
    for name, v in got.items():
        assert v == pytest.approx(np.average(ref[name], weights=w), rel=1e-12, abs=1e-12), name


def test_bad_matrices_are_refused_naming_the_cell():
    with pytest.raises(ValueError, match=r"y_true\[1, 0\] = -1.0: relevance must be finite and non-negative"):
        sm.ndcg_score([[1, 0], [-1, 0]], [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(ValueError, match=r"y_score\[0, 1\] = nan"):
        sm.mrr_score([[1, 0]], [[0.1, np.nan]])
    with pytest.raises(ValueError, match="shape"):
        sm.map_at_k([[1, 0]], [[0.1, 0.2, 0.3]])
    with pytest.raises(ValueError, match="k must be a positive integer"):
        sm.precision_at_k([[1, 0]], [[0.1, 0.2]], k=0)
    with pytest.raises(ValueError, match=r"y_true\[0, 0\] = 2.0: labels must be 0 or 1"):
        sm.coverage_error([[2, 0]], [[0.1, 0.2]])
