"""Bootstrap intervals of array scores: one per k, class or label, element by element."""

from __future__ import annotations

import json

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import cli
from streammetrics._kernels.bootstrap import POISSON1_CUTS, poisson_weights

R = 25


def _replicate_weights(seed, keys, replicates):
    out = np.empty((replicates, len(keys)), np.float64)
    poisson_weights(np.uint64(seed), np.asarray(keys, np.int64), 0, 0, np.zeros(0), out, POISSON1_CUTS)
    return out


def _queries(n_queries=60, per=8, seed=0):
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_queries), per)
    rel = rng.integers(0, 3, q.size)
    rel[q == 3] = 0  # a query with no relevant row
    return q, rel, rng.random(q.size).round(2)


@pytest.mark.parametrize("level", [0.95, 0.5])
def test_per_k_intervals_are_the_percentiles_of_templates_fed_each_replicates_weights(level):
    q, rel, s = _queries()
    b = sm.Bootstrap(sm.RetrievalScores(k=(1, 3, 5)), replicates=R, seed=4).update(q, rel, s, key=q)
    r = b.finalize(ci=level)
    weights = _replicate_weights(4, q, R)
    for name in ("ndcg", "map", "precision", "recall", "hit_rate", "mrr_at_k"):
        draws = np.array(
            [sm.RetrievalScores(k=(1, 3, 5)).update(q, rel, s, sample_weight=w).finalize()[name] for w in weights]
        )
        lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        np.testing.assert_allclose(r[f"{name}_ci_lower"], lo, rtol=1e-15)
        np.testing.assert_allclose(r[f"{name}_ci_upper"], hi, rtol=1e-15)
        assert r[f"{name}_ci_lower"].shape == r[name].shape == (3,)


def test_an_element_equal_to_a_scalar_score_gets_the_scalars_interval():
    q, rel, s = _queries(per=5)
    r = sm.Bootstrap(sm.RetrievalScores(k=(1, 50)), replicates=R).update(q, rel, s, key=q).finalize()
    # every query is shorter than 50 rows: MRR@50 is the MRR, through the scalar path
    assert r.mrr_at_k[1] == r.mrr
    assert (r.mrr_at_k_ci_lower[1], r.mrr_at_k_ci_upper[1]) == (r.mrr_ci_lower, r.mrr_ci_upper)


def test_per_class_intervals_leave_out_replicates_without_the_class():
    y = np.array([0, 1, 2, 2, 1, 0, 1, 2, 0, 0, 1, 2] * 3)
    p = np.roll(y, 1)
    b = sm.Bootstrap(sm.MulticlassConfusion(3), replicates=R, seed=2).update(y, p)
    r = b.finalize()
    _, _, _, reps = b.replicate_scores()
    for j in range(3):
        lo, hi = sm.bootstrap.accumulator.interval([rep["f1"][j] for rep in reps if rep is not None], 0.95)
        assert (r.f1_ci_lower[j], r.f1_ci_upper[j]) == (lo, hi)
    assert "support_ci_lower" not in r  # integer counts have no interval


def test_settings_arrays_get_no_interval_and_bounded_array_bounds_are_compared_as_arrays():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 400)
    p = rng.dirichlet([1, 1, 1], 400)
    r = sm.Bootstrap(sm.Calibration(n_bins=5), replicates=R).update(y == 1, p[:, 1]).finalize()
    assert "bin_edges_ci_lower" not in r and "fraction_positive_ci_lower" in r
    # a bounded state's per-class bounds are arrays beside their score: compared as arrays (this raised before)
    r = sm.Bootstrap(sm.MulticlassRankAUC(3, max_bins=8), replicates=R).update(y, p).finalize()
    assert r.per_class_auc_ci_lower.shape == (3,) and np.all(r.per_class_auc_ci_lower <= r.per_class_auc_ci_upper)


def test_the_ranking_command_bootstraps_whole_queries_and_prints_each_k(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    q, rel, s = _queries()
    path = tmp_path / "runs.csv"
    np.savetxt(
        path,
        np.column_stack([q + 100, rel, s]),
        delimiter=",",
        header="qid,rel,s",
        comments="",
        fmt=["%d", "%d", "%.2f"],
    )
    args = ["evaluate", str(path), "--task", "ranking", "--query", "qid", "--relevance", "rel", "--score", "s"]
    args += ["--k", "1,5", "--bootstrap", str(R), "--format", "json"]
    assert cli.main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    want = sm.Bootstrap(sm.RetrievalScores(k=(1, 5)), replicates=R).update(q + 100, rel, s, key=q + 100).finalize()
    for j, k in enumerate((1, 5)):
        got = doc["metrics"][f"ndcg@{k}"]
        assert (got["value"], got["ci_lower"], got["ci_upper"]) == pytest.approx(
            (want.ndcg[j], want.ndcg_ci_lower[j], want.ndcg_ci_upper[j]), rel=1e-12
        )
    assert doc["metrics"]["mrr"]["ci_lower"] == pytest.approx(want.mrr_ci_lower, rel=1e-12)
    assert cli.main(args[:-2]) == 0
    out = capsys.readouterr().out
    assert "ndcg@5" in out and "keyed by query 'qid'" in out
