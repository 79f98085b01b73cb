"""Spark and Ray: a whole binary evaluation where the data lives, against the engines' own tools.

On one local Spark session (``local[2]``) and one cached DataFrame of ``--rows``
rows in ``--partitions`` partitions, ``streammetrics.spark.evaluate`` (exact
AUC, average precision, the binary scores, calibration and 95% intervals)
against ``BinaryClassificationEvaluator(numBins=1000)`` (AUC alone), a bare
``df.agg(F.sum("prob"))`` and a ``pandas_udf`` grouped aggregate calling
scikit-learn's ``roc_auc_score``; then, on a local Ray (``num_cpus=2``) and
one materialized Dataset of the same rows, ``streammetrics.ray.evaluate``
against a bare ``ds.sum()`` of the same columns. The targets: at most 1/10 of
the Spark evaluator, 10x the bare sum and 1/5 of the pandas UDF; on Ray at
most 1.5x the bare sum.

``python -m benchmarks.bench_engines [--rows 10000000] [--partitions 32] [--repeat 3] [--only spark ray]``
"""

from __future__ import annotations

import argparse
import time
import warnings

from ._util import have, median_time, print_table
from ._util import row as _row


def row(group: str, impl: str, median_s: float) -> dict:
    """A row, printed as soon as it is measured (the whole run takes minutes)."""
    print(f"{impl}: {median_s:.3f} s", flush=True)
    return _row(group, impl, median_s)


def _spark_rows(n: int, parts: int, repeat: int, slow_repeat: int) -> list[dict]:
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.sql import functions as F

    import streammetrics.spark as sms

    spark = sms.local_session(2, spark_driver_memory="8g", spark_sql_execution_arrow_maxRecordsPerBatch=100_000)
    label = (F.rand(1) < 0.3).cast("int")
    df = spark.range(n, numPartitions=parts).select(label.alias("label"), F.rand(2).alias("u"))
    df = df.select("label", (0.3 * F.col("label") + 0.7 * F.col("u")).alias("prob")).cache()
    df.count()
    group = f"spark binary evaluation, n={n:.0e}, {parts} partitions, local[2]"
    rows = []
    t = median_time(lambda: sms.evaluate(df, "label", "prob", ci=0.95), repeat)
    rows.append(row(group, "streammetrics.spark.evaluate (exact AUC, AP, scores, 95% CI)", t))
    bce = BinaryClassificationEvaluator(rawPredictionCol="prob", labelCol="label", numBins=1000)
    t = median_time(lambda: bce.evaluate(df), slow_repeat, warmup=0)
    rows.append(row(group, "BinaryClassificationEvaluator(numBins=1000), AUC only", t))
    t = median_time(lambda: df.agg(F.sum("prob")).collect(), repeat)
    rows.append(row(group, 'bare df.agg(F.sum("prob"))', t))
    if have("sklearn") and have("pandas"):
        import pandas as pd
        from pyspark.sql.functions import pandas_udf
        from sklearn.metrics import roc_auc_score

        def auc(y, p):  # a grouped aggregate: the whole column at once
            return float(roc_auc_score(y, p))

        auc.__annotations__ = {"y": pd.Series, "p": pd.Series, "return": float}
        auc = pandas_udf("double")(auc)
        t = median_time(lambda: df.agg(auc("label", "prob")).collect(), slow_repeat, warmup=0)
        rows.append(row(group, "pandas_udf grouped aggregate, sklearn roc_auc_score", t))
    df.unpersist()
    spark.stop()
    return rows


def _ray_rows(n: int, parts: int, repeat: int) -> list[dict]:
    import numpy as np
    import ray

    import streammetrics.ray as smr

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False

    def columns(batch):
        rng = np.random.default_rng(int(batch["id"][0]))
        y = (rng.random(batch["id"].shape[0]) < 0.3).astype(np.int64)
        return {"label": y, "prob": 0.3 * y + 0.7 * rng.random(y.shape[0])}

    ds = ray.data.range(n, override_num_blocks=parts).map_batches(columns, batch_format="numpy").materialize()
    group = f"ray binary evaluation, n={n:.0e}, {parts} blocks, num_cpus=2"
    rows = [
        row(
            group,
            "streammetrics.ray.evaluate (exact AUC, AP, scores, 95% CI)",
            median_time(lambda: smr.evaluate(ds, ci=0.95), repeat),
        ),
        row(group, 'bare ds.sum(["label", "prob"])', median_time(lambda: ds.sum(["label", "prob"]), repeat)),
    ]
    ray.shutdown()
    return rows


def run(quick: bool = False, rows: int | None = None, partitions: int = 32, repeat: int = 3, only=("spark", "ray")):
    n = rows or (1_000_000 if quick else 10_000_000)
    out = []
    if "spark" in only and have("pyspark"):
        out += _spark_rows(n, partitions, repeat, 1 if repeat < 3 else 2)
    if "ray" in only and have("ray"):
        out += _ray_rows(n, partitions, repeat)
    return out


#: (engine, anchor's name starts with, the most streammetrics may take as a multiple of the anchor)
TARGETS = [
    ("spark", "BinaryClassificationEvaluator", 1 / 10),
    ("spark", "bare df.agg", 10.0),
    ("spark", "pandas_udf", 1 / 5),
    ("ray", "bare ds.sum", 1.5),
]


def print_targets(rows: list[dict]) -> None:
    """Each target: streammetrics' time as a multiple of the anchor's, and the bound."""
    print()
    for engine, anchor, bound in TARGETS:
        ours = next((r for r in rows if r["group"].startswith(engine) and r["impl"].startswith("streammetrics")), None)
        theirs = next((r for r in rows if r["group"].startswith(engine) and r["impl"].startswith(anchor)), None)
        if ours and theirs:
            ratio = ours["median_s"] / theirs["median_s"]
            verdict = "met" if ratio <= bound else "MISSED"
            print(f"{engine}: streammetrics / {anchor} = {ratio:.3g} (target <= {bound:.3g}): {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1M rows")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3, help="runs of the fast ones (the slow anchors: fewer)")
    ap.add_argument("--only", nargs="+", default=["spark", "ray"], choices=["spark", "ray"])
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # pyspark on pandas 3
    start = time.perf_counter()
    rows = run(args.quick, args.rows, args.partitions, args.repeat, args.only)
    print_table(rows)
    print_targets(rows)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
