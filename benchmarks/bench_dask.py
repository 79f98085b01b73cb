"""Dask: a binary task over 50M rows on a 2-worker LocalCluster vs one process,
and the per-partition overhead of the accumulator graph.

``python -m benchmarks.bench_dask [--quick]``
"""

from __future__ import annotations

import argparse
import time

from ._util import have, median_time, print_table, row


def run(quick: bool = False) -> list[dict]:
    if not (have("dask") and have("distributed")):
        return []
    import dask
    import dask.array as da
    import distributed

    import streammetrics as sm
    from streammetrics.dask import evaluate

    n = 5_000_000 if quick else 50_000_000
    chunk = 2_500_000
    repeat = 2 if quick else 3
    rng = da.random.default_rng(0)
    y = rng.random(n, chunks=chunk) < 0.3
    s = rng.random(n, chunks=chunk)
    group = f"dask binary task (confusion + log loss), n={n:.0e}, {n // chunk} partitions"

    def graph():
        return [
            evaluate(sm.BinaryConfusion(threshold=0.5), y, s),
            evaluate(sm.ProbabilityScores(), y, s),
        ]

    def dask_expr():
        p = s >= 0.5
        q = da.where(y, s, 1 - s)
        return [(y & p).sum(), (~y & p).sum(), (y & ~p).sum(), -da.log(da.maximum(q, 1e-12)).mean()]

    rows = []
    with dask.config.set(scheduler="sync"):
        rows.append(row(group, "streammetrics, one process (sync scheduler)", median_time(lambda: dask.compute(graph()), repeat)))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50) as cluster, distributed.Client(cluster) as client:
        t = median_time(lambda: dask.compute(graph()), repeat)
        rows.append(row(group, "streammetrics, LocalCluster 2 workers", t))
        rows.append(row(group, "dask.array expressions, LocalCluster 2 workers", median_time(lambda: dask.compute(dask_expr()), repeat)))
        # overhead per partition: many tiny partitions, nearly no data
        parts = 400
        ty = da.zeros(parts * 100, chunks=100, dtype=bool)
        ts = da.zeros(parts * 100, chunks=100)
        t0 = time.perf_counter()
        evaluate(sm.BinaryConfusion(threshold=0.5), ty, ts).compute()
        per = (time.perf_counter() - t0) / parts
        rows.append(row("dask per-partition overhead (400 tiny partitions, 2 workers)", "streammetrics", per))
        client.close()
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    print_table(run(ap.parse_args().quick))
