"""Exact AUC past one worker's memory: ``spark.exact_auc`` under a capped Python worker.

A local Spark (``local[2]``) whose Python workers may map at most ``--cap`` of
address space (``spark.executor.pyspark.memory``, an ``RLIMIT_AS`` limit) scores
``--rows`` distinct scores, written once to Parquet. The check, in three steps:

1. control: one task asked to hold the whole exact state under the same cap
   must fail, so the cap is really below what one process would need;
2. ``streammetrics.spark.exact_auc(df, ranges=R)`` on the same rows;
3. the reference: ``RankAUC`` fed the same Parquet file in this process.

The AUC must agree bit for bit and the average precision to 1e-12.

``python -m benchmarks.check_spark_ranges [--rows 30000000] [--cap 1100m] [--ranges 32]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def _whole_state(batches):
    """Every row of the task into one exact state (expected to fail under the cap)."""
    import pyarrow as pa

    import streammetrics as sm

    acc = sm.RankAUC()
    for b in batches:
        acc.update(b.column("label").to_numpy(), b.column("prob").to_numpy())
    yield pa.RecordBatch.from_pylist([{"n": acc.finalize().n}])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=30_000_000)
    ap.add_argument("--cap", default="1400m", help="address space of each Python worker")
    ap.add_argument("--ranges", type=int, default=32)
    ap.add_argument("--no-control", action="store_true", help="skip step 1")
    args = ap.parse_args(argv)

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    import streammetrics as sm
    import streammetrics.spark as sms

    n = args.rows
    # An RLIMIT_AS cap counts reserved address space, not memory used: keep OpenBLAS
    # (loaded by Numba through scipy), glibc and Arrow from reserving per-thread
    # arenas. The workers inherit this process's environment.
    os.environ.update(OPENBLAS_NUM_THREADS="1", MALLOC_ARENA_MAX="2", ARROW_DEFAULT_MEMORY_POOL="system")
    conf = {"spark.executor.pyspark.memory": args.cap, "spark.driver.memory": "2g"}
    spark = sms.local_session(2, **conf, **{"spark.python.worker.faulthandler.enabled": "true"})
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scores.parquet")
        # a permutation of 0..n-1 (7919 is prime to n's factors 2, 3, 5): every score distinct
        prob = ((F.col("id") * 7919) % n) / n
        label = (F.rand(1) < 0.2 + 0.6 * prob).cast("int")
        spark.range(n, numPartitions=32).select(label.alias("label"), prob.alias("prob")).write.parquet(path)
        df = spark.read.parquet(path)
        state_mb = 24 * n / 2**20  # a RankAUC state holds 24 bytes per distinct score
        print(f"{n:,} distinct scores; a whole exact state is about {state_mb:,.0f} MiB; worker cap {args.cap}")

        t0 = time.perf_counter()
        try:
            if args.no_control:
                raise MemoryError("skipped")
            df.coalesce(1).mapInArrow(_whole_state, "n long").collect()
            print("control: one worker held the whole state: the cap is too high to prove anything")
            return 1
        except Exception as exc:  # the JVM wraps the worker's MemoryError
            reason = "MemoryError" if "MemoryError" in str(exc) else type(exc).__name__
            print(f"control: one worker holding the whole state fails ({reason}) in {time.perf_counter() - t0:.0f} s")

        t0 = time.perf_counter()
        got = sms.exact_auc(df, "label", "prob", ranges=args.ranges)
        print(f"spark.exact_auc, {args.ranges} ranges: {time.perf_counter() - t0:.0f} s")

        table = pq.read_table(path)
        y, s = table.column("label").to_numpy(), table.column("prob").to_numpy()
        assert np.unique(s).size == n
        ref = sm.RankAUC().update(y, s).finalize()
        ap = ref.average_precision()
        print(f"auc {got.auc!r} vs {ref.auc!r}; average precision {got.average_precision!r} vs {ap!r}")
        same = got.auc == ref.auc and (got.n_pos, got.n_neg) == (ref.n_pos, ref.n_neg)
        close = abs(got.average_precision - ap) <= 1e-12 * abs(ap)
        print("exact: AUC bit for bit, AP within 1e-12" if same and close else "MISMATCH")
    spark.stop()
    return 0 if same and close else 1


if __name__ == "__main__":
    raise SystemExit(main())
