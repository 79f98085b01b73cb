"""``evaluate --task ranking`` and the Evaluator's ranking task."""

from __future__ import annotations

import json

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import cli

from .harness import assert_results_equal


def _rows(seed=0, queries=300):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 25, queries)
    q = np.repeat(np.arange(queries), sizes)
    rel = rng.integers(0, 4, q.size) * (rng.random(q.size) < 0.3)
    return q, rel, np.round(rng.random(q.size), 3)


def test_the_ranking_task_is_one_member_with_a_per_k_report():
    q, rel, s = _rows()
    ev = sm.Evaluator(task="ranking", k=(1, 10), grouped=True)
    for lo in range(0, q.size, 700):
        ev.update(q[lo : lo + 700], rel[lo : lo + 700], s[lo : lo + 700])
    want = sm.RetrievalScores(k=(1, 10)).update(q, rel, s).finalize()
    assert_results_equal(ev.finalize().parts["ranking"], want)
    text = ev.finalize().to_text()
    assert "ranking evaluation of" in text and "@10" in text and "ndcg" in text
    with pytest.raises(ValueError, match="gain must be one of"):
        sm.Evaluator(task="ranking", gain="log")


def test_evaluate_command_reads_text_query_ids_and_reports_per_k(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    q, rel, s = _rows(1)
    path = tmp_path / "runs.csv"
    lines = ["qid,rel,s,country"] + [f"q{a},{b},{c},{'us' if a % 2 else 'fr'}" for a, b, c in zip(q, rel, s)]
    path.write_text("\n".join(lines) + "\n")
    args = ["evaluate", str(path), "--task", "ranking", "--query", "qid", "--relevance", "rel", "--score", "s"]
    assert cli.main([*args, "--k", "1,5", "--grouped", "--format", "json", "--plots", str(tmp_path / "p")]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = sm.RetrievalScores(k=(1, 5)).update(q, rel, s).finalize()
    got = doc["metrics"]
    np.testing.assert_allclose(got["ndcg"], want.ndcg, rtol=1e-12)
    assert got["mrr"] == pytest.approx(want.mrr, rel=1e-12) and got["queries"] == 300
    assert (tmp_path / "p" / "ranking_at_k.png").exists()
    assert cli.main([*args, "--by", "country", "--batch-rows", "100"]) == 0
    out = capsys.readouterr().out
    us = q % 2 == 1
    assert f"{sm.RetrievalScores().update(q[us], rel[us], s[us]).finalize().mrr:.6g}" in out
    assert cli.main(["evaluate", str(path), "--task", "ranking", "--relevance", "rel", "--score", "s"]) != 0
    assert "--task ranking needs --query COL" in capsys.readouterr().err


def test_ranking_over_time_reads_the_query_before_the_slice_and_time_columns(tmp_path, capsys):
    q, rel, s = _rows(2, queries=60)
    t = np.arange(q.size)
    path = tmp_path / "runs.csv"
    lines = (f"q{a},{b},{c},{d},{'us' if a % 2 else 'fr'}\n" for a, b, c, d in zip(q, rel, s, t))
    path.write_text("qid,rel,s,t,country\n" + "".join(lines))
    args = ["evaluate", str(path), "--task", "ranking", "--query", "qid", "--relevance", "rel", "--score", "s"]
    last = slice(q.size - 200, None)
    assert cli.main([*args, "--window", "200", "--format", "json", "--batch-rows", "150"]) == 0
    got = json.loads(capsys.readouterr().out)["metrics"]
    want = sm.RetrievalScores().update(q[last], rel[last], s[last]).finalize()
    assert got["mrr"] == pytest.approx(want.mrr, rel=1e-12) and got["queries"] == want.queries
    assert cli.main([*args, "--time", "t", "--every", "300", "--by", "country", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    first = t < 300
    want = sm.RetrievalScores().update(q[first], rel[first], s[first]).finalize()
    bucket = [b for b in doc["buckets"] if b["start"] == "0"][0]
    assert bucket["n_slices"] == 2 and bucket["rows"] == 300  # sliced by country, not by query
    assert bucket["mrr"] == pytest.approx(want.mrr, rel=1e-12)
