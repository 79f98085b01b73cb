"""Ranking scores per query: streammetrics against torchmetrics and scikit-learn.

``python -m benchmarks.bench_retrieval [--quick] [--large]``

* A training step of torchmetrics #2287's shape: 8,000 queries x 40 items, NDCG@10
  with update and compute (and MRR), against torchmetrics' ``RetrievalNormalizedDCG``
  and ``RetrievalMRR`` and scikit-learn's ``ndcg_score`` on the same rows.
* With ``--large``: 10M rows of 1M queries in batches, grouped (its state bytes
  printed) and ungrouped (rows kept: their bytes printed), the same values.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import streammetrics as sm

from ._util import have, median_time, print_table, row


def step_data(queries=8000, items=40, seed=0):
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(queries, dtype=np.int64), items)
    rel = rng.integers(0, 2, queries * items).astype(np.float64)
    s = rng.random(queries * items)
    return q, rel, s


def _ours(q, rel, s, grouped):
    acc = sm.RetrievalScores(k=10, grouped=grouped)
    return acc.update(q, rel, s).finalize()


def run_step(quick: bool) -> list[dict]:
    queries, items = (2000, 40) if quick else (8000, 40)
    q, rel, s = step_data(queries, items)
    group = f"NDCG@10 update+compute, {queries:,} queries x {items} items"
    repeat = 5 if quick else 9
    rows = []
    ours = {g: median_time(lambda g=g: _ours(q, rel, s, g), repeat=repeat) for g in (True, False)}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows.append(row(group, "streammetrics RetrievalScores(grouped=True)", ours[True], load=load))
    rows.append(row(group, "streammetrics RetrievalScores()", ours[False]))
    want = _ours(q, rel, s, True)
    if have("sklearn"):
        from sklearn.metrics import ndcg_score

        t, p = rel.reshape(queries, items), s.reshape(queries, items)
        rows.append(row(group, "sklearn ndcg_score", median_time(lambda: ndcg_score(t, p, k=10), repeat=repeat)))
        assert abs(ndcg_score(t, p, k=10) - want.ndcg[0]) < 1e-12
    if have("torchmetrics"):
        import torch
        from torchmetrics.retrieval import RetrievalMRR, RetrievalNormalizedDCG

        torch.set_num_threads(1)
        tq, tr, ts = torch.from_numpy(q), torch.from_numpy(rel).long(), torch.from_numpy(s)

        def tm(cls, **kw):
            m = cls(**kw)
            m.update(ts, tr, indexes=tq)
            return float(m.compute())

        reps = 3
        got = tm(RetrievalNormalizedDCG, top_k=10)
        rows.append(
            row(
                group,
                "torchmetrics RetrievalNormalizedDCG",
                median_time(lambda: tm(RetrievalNormalizedDCG, top_k=10), repeat=reps),
                agrees=abs(got - want.ndcg[0]) < 1e-6,
            )
        )
        got = tm(RetrievalMRR)
        rows.append(
            row(
                group,
                "torchmetrics RetrievalMRR",
                median_time(lambda: tm(RetrievalMRR), repeat=reps),
                agrees=abs(got - want.mrr) < 1e-6,
            )
        )
    return rows


def run_large(rows_total=10_000_000, queries=1_000_000, batch=1 << 20) -> list[dict]:
    rng = np.random.default_rng(1)
    sizes = rng.multinomial(rows_total - queries, np.full(queries, 1 / queries)) + 1  # every query a row at least
    group = f"{rows_total / 1e6:g}M rows of {queries / 1e6:g}M queries, batches of {batch:,}"
    out, results = [], {}
    seed = rng.integers(2**32)
    for grouped, budget in ((True, None), (False, None), (False, "64MB")):
        acc = sm.RetrievalScores(k=(1, 5, 10), grouped=grouped, max_memory=budget)
        t0, peak = time.perf_counter(), 0
        rng = np.random.default_rng(seed)  # the same rows both ways
        for lo in range(0, rows_total, batch):
            n = min(batch, rows_total - lo)
            q = _ids(sizes, lo, n)
            rel = rng.integers(0, 3, n).astype(np.float64) * (rng.random(n) < 0.3)
            acc.update(q, rel, rng.random(n))
            peak = max(peak, acc.nbytes)
        results[grouped, budget] = acc.finalize()
        seconds = time.perf_counter() - t0
        name = "streammetrics grouped=True" if grouped else "streammetrics grouped=False (rows kept)"
        name += f", max_memory={budget}" if budget else ""
        out.append(row(group, name, seconds, state_mb=peak / 1e6, disk_mb=acc.spilled_bytes / 1e6))
        print(f"# {name}: state at most {peak / 1e6:.1f} MB, {seconds:.1f} s", file=sys.stderr, flush=True)
    a = results[True, None]
    for r, b in zip(out[1:], list(results.values())[1:]):
        r["same_values"] = all(np.allclose(a[k], b[k], rtol=1e-9) for k in ("ndcg", "map", "mrr", "recall"))
    return out


_STARTS: dict = {}


def _ids(sizes, lo, n):
    """Query ids of rows ``lo:lo + n`` (query i has ``sizes[i]`` rows, in order)."""
    key = id(sizes)
    if key not in _STARTS:
        _STARTS.clear()
        _STARTS[key] = np.concatenate([[0], np.cumsum(sizes)])
    starts = _STARTS[key]
    return np.searchsorted(starts, np.arange(lo, lo + n), side="right").astype(np.int64) - 1


def run(quick: bool) -> list[dict]:
    return run_step(quick)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_retrieval", description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--large", action="store_true", help="also 10M rows of 1M queries")
    args = ap.parse_args(argv)
    rows = run_step(args.quick)
    if args.large:
        rows += run_large(*((1_000_000, 100_000) if args.quick else ()))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
