"""Dask: a binary task over 50M rows on a 2-worker LocalCluster vs one process,
and the per-partition overhead of the accumulator graph.

``python -m benchmarks.bench_dask [--quick]``
"""

from __future__ import annotations

import argparse
import time

from ._util import have, median_time, print_table, read_peak_rss, row, track_peak_rss


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
        return [evaluate(sm.BinaryConfusion(threshold=0.5), y, s), evaluate(sm.ProbabilityScores(), y, s)]

    def dask_expr():
        p = s >= 0.5
        q = da.where(y, s, 1 - s)
        return [(y & p).sum(), (~y & p).sum(), (y & ~p).sum(), -da.log(da.maximum(q, 1e-12)).mean()]

    rows = []
    with dask.config.set(scheduler="sync"):
        rows.append(
            row(
                group, "streammetrics, one process (sync scheduler)", median_time(lambda: dask.compute(graph()), repeat)
            )
        )
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        t = median_time(lambda: dask.compute(graph()), repeat)
        rows.append(row(group, "streammetrics, LocalCluster 2 workers", t))
        rows.append(
            row(
                group,
                "dask.array expressions, LocalCluster 2 workers",
                median_time(lambda: dask.compute(dask_expr()), repeat),
            )
        )
        # overhead per partition: many tiny partitions, nearly no data
        parts = 400
        ty = da.zeros(parts * 100, chunks=100, dtype=bool)
        ts = da.zeros(parts * 100, chunks=100)
        t0 = time.perf_counter()
        evaluate(sm.BinaryConfusion(threshold=0.5), ty, ts).compute()
        per = (time.perf_counter() - t0) / parts
        rows.append(row("dask per-partition overhead (400 tiny partitions, 2 workers)", "streammetrics", per))
        client.close()
    return rows + run_ranges(quick)


# ------------------------------------------------- exact AUC by score ranges
def run_ranges(quick: bool = False) -> list[dict]:
    """The range-partitioned exact AUC on two workers each limited to well
    under the full exact state, against the tree merge of ``RankAUC`` states
    (whose last merge holds every distinct score in one worker) and the
    single-process exact value.

    Rows: the tree merge and ``exact_auc`` in one pass on two unlimited
    workers (same conditions: the time ratio), then ``exact_auc`` in
    ``passes`` passes on two workers limited to ``limit`` each. Each row
    gives the workers' peak RSS (sampled every 20 ms) and whether the AUC
    equals the single-process exact value bit for bit.
    """
    if not (have("dask") and have("distributed") and have("psutil")):
        return []
    import dask
    import dask.array as da
    import distributed

    import streammetrics as sm
    from streammetrics.dask import evaluate, exact_auc

    n = 4_000_000 if quick else 32_000_000
    chunk = 1_000_000
    ranges = 16 if quick else 32
    passes = 4 if quick else 6
    repeat = 1
    state = 24 * n  # the exact state: a float64 score and two int64 counts per distinct score
    # an idle worker (interpreter, numpy, numba, dask, the kernels) takes about 200 MiB
    limit = (320 if quick else 450) * 2**20
    rng = da.random.default_rng(0)
    s = rng.random(n, chunks=chunk)
    y = rng.random(n, chunks=chunk) < s  # distinct scores, AUC about 0.83

    # the single-process exact reference, and a first use of every kernel in
    # this process (the workers then load them from the cache)
    y_np, s_np = dask.compute(y, s, scheduler="threads")
    one = sm.RankAUC().update(y_np, s_np)
    want_auc, want_ap = one.finalize().auc, one.average_precision()
    exact_auc(y[:1000], s[:1000], ranges=2, scheduler="sync")
    del one, y_np, s_np
    group = (
        f"exact AUC + AP on 2 workers, n={n:.1e} distinct scores, {n // chunk} partitions, "
        f"full state {state / 2**20:.0f} MiB"
    )
    rows = []

    def cluster(memory_limit):
        return distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=50,
            memory_limit=memory_limit,
        )

    def peak_mib(client):
        return max(client.run(read_peak_rss).values()) / 2**20

    def ranged(client, label, **kw):
        got = []
        t = median_time(lambda: got.append(exact_auc(y, s, ranges=ranges, **kw)), repeat, warmup=0)
        r = got[-1]
        rows.append(
            row(
                group,
                label,
                t,
                auc_equal=r.auc == want_auc,
                ap_rel_diff=abs(r.average_precision - want_ap) / want_ap,
                worker_peak_mib=peak_mib(client),
                largest_range_mib=24 * max(r.meta["distinct"]) / 2**20,
            )
        )

    with cluster(0) as c, distributed.Client(c) as client:
        client.run(track_peak_rss)
        evaluate(sm.RankAUC(), y[:10_000], s[:10_000]).compute()  # workers load the kernels
        exact_auc(y[:10_000], s[:10_000], ranges=2)
        idle = peak_mib(client)
        got = []
        t = median_time(lambda: got.append(evaluate(sm.RankAUC(), y, s).compute().finalize()), repeat, warmup=0)
        rows.append(
            row(
                group,
                "tree merge of RankAUC states (evaluate), workers unlimited",
                t,
                auc_equal=got[-1].auc == want_auc,
                worker_peak_mib=peak_mib(client),
                worker_idle_mib=idle,
            )
        )
        ranged(client, f"streammetrics exact_auc, ranges={ranges}, 1 pass, workers unlimited")
    with cluster(limit) as c, distributed.Client(c) as client:
        client.run(track_peak_rss)
        exact_auc(y[:10_000], s[:10_000], ranges=2)
        peak_mib(client)
        ranged(
            client,
            f"streammetrics exact_auc, ranges={ranges}, passes={passes}, workers limited to {limit / 2**20:.0f} MiB",
            passes=passes,
        )
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--ranges-only", action="store_true", help="only the exact AUC by score ranges against the tree merge"
    )
    args = ap.parse_args()
    print_table(run_ranges(args.quick) if args.ranges_only else run(args.quick))
