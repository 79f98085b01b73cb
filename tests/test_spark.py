"""streammetrics.spark on a local Spark (``local[2]``): the single-process results, exactly."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from streammetrics import spark as sms  # noqa: E402

from .engines import LABELS, assert_same, assert_same_slices, single, table  # noqa: E402

PARTITIONS = 6

# pyspark checks the pandas version before any Arrow UDF (pandas is not used here)
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")


@pytest.fixture(scope="session")
def spark():
    try:
        sms.check_java()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    session = sms.local_session(2, spark_sql_shuffle_partitions=4)
    yield session
    session.stop()


def frame(spark, cols, partitions=PARTITIONS):
    arrays = {k: list(v) if v.dtype == object or v.ndim > 1 else v for k, v in cols.items()}
    return spark.createDataFrame(pa.table(arrays)).repartition(partitions)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_single_process_result(spark, task, weighted):
    cols = table(task, seed=1)
    df = frame(spark, cols)
    labels = LABELS if task == "multiclass" else None
    got = sms.evaluate(df, "label", "prob", task=task, labels=labels, weight="w" if weighted else None, ci=0.95)
    assert type(got) is type(single(cols, task)) and got.n == len(cols["label"])
    assert_same(got, single(cols, task, weighted, ci=0.95), exact_auc=not weighted)


@pytest.mark.parametrize("by", [["g"], ["g", "h"]])
def test_slices_are_those_of_sliced(spark, by):
    cols = table("binary", seed=2)
    got = sms.evaluate(frame(spark, cols), by=by if len(by) > 1 else by[0])
    assert_same_slices(got, single(cols, "binary", by=by), exact_auc=True)


def test_an_evaluator_of_any_members(spark):
    cols = table("binary", seed=3)
    ev = sm.Evaluator({"auc": sm.RankAUC(), "strict": sm.BinaryConfusion(threshold=0.8)})
    got = sms.evaluate(frame(spark, cols), evaluator=ev)
    want = ev.copy().update(cols["label"], cols["prob"]).finalize()
    assert_same(got, want, exact_auc=True)
    assert ev.n == 0  # the template is not changed


def test_a_bad_value_is_the_library_s_error_naming_column_and_row(spark):
    cols = table("binary", seed=4)
    cols["prob"][1234] = 1.5
    df = frame(spark, cols, 1)
    with pytest.raises(sm.BadValueError, match=r"partition 0, column 'prob': p\[1234\] = 1.5") as info:
        sms.evaluate(df)
    assert info.value.argument == "p" and info.value.row == 1234 and info.value.value == 1.5


def test_a_null_is_refused(spark):
    df = spark.createDataFrame([(1, 0.5), (0, None)], "label int, prob double").coalesce(1)
    with pytest.raises(sm.BadValueError, match=r"column 'prob': p\[1\]"):
        sms.evaluate(df)


def test_many_partitions_merge_in_a_second_stage(spark, monkeypatch):
    monkeypatch.setattr(sms, "MERGE_EVERY", 1)  # (8 partitions fold in 2 tasks, one per core)
    cols = table("binary", seed=5, rows=800)
    got = sms.evaluate(frame(spark, cols, 8), weight="w")
    assert_same(got, single(cols, "binary", weighted=True), exact_auc=False)


def test_arguments_are_checked_before_any_job(spark):
    df = spark.createDataFrame([(1, 0.5)], "label int, prob double")
    with pytest.raises(ValueError, match="no column 'score'"):
        sms.evaluate(df, "label", "score")
    with pytest.raises(ValueError, match="evaluator= or task="):
        sms.evaluate(df, task="binary", evaluator=sm.Evaluator("binary"))
    with pytest.raises(ValueError, match="ci must lie strictly between"):
        sms.evaluate(df, ci=95)
    with pytest.raises(ValueError, match=r"cuts\[1\] = nan: cut points must be finite"):
        sms.exact_auc(df, cuts=[0.1, float("nan")])
    with pytest.raises(ValueError, match=r"cuts\[1\] = 0.1: cut points must be strictly increasing"):
        sms.exact_auc(df, cuts=[0.2, 0.1])


@pytest.mark.parametrize("weighted", [False, True])
def test_exact_auc_by_ranges_is_rank_auc_s(spark, weighted):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 4000)
    s = np.round(rng.normal(size=4000) + y, 2)  # many ties, some across the cuts
    w = rng.random(4000)
    df = frame(spark, {"label": y, "prob": s, "w": w}, 4)
    if weighted:  # cuts given, among them a tied score
        r = sms.exact_auc(df, weight="w", cuts=[-1.0, 0.0, 0.5, 2.0])
    else:  # cuts from the quantiles
        r = sms.exact_auc(df, ranges=5)
    one = sm.RankAUC().update(y, s, sample_weight=w if weighted else None)
    if weighted:
        assert r.auc == pytest.approx(one.finalize().auc, rel=1e-12)
    else:
        assert r.auc == one.finalize().auc and (r.n_pos, r.n_neg) == (one.finalize().n_pos, one.finalize().n_neg)
    assert r.average_precision == pytest.approx(one.average_precision(), rel=1e-12)
    assert r.meta["ranges"] == 5 and max(r.meta["distinct"]) < len(np.unique(s))


def test_exact_auc_names_a_bad_row(spark):
    df = spark.createDataFrame([(1, 0.5), (2, 0.1)], "label int, prob double").coalesce(1)
    with pytest.raises(sm.BadValueError, match=r"partition 0.*y\[1\] = 2"):
        sms.exact_auc(df)


@pytest.fixture
def small_batches(spark):
    """Arrow batches of 300 rows: a partition reaches a task in several."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "300")
    yield
    spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


@pytest.mark.parametrize("weighted", [False, True])
def test_exact_auc_counts_a_partition_batch_by_batch(spark, small_batches, weighted):
    rng = np.random.default_rng(7)
    y, s, w = rng.integers(0, 2, 3000), np.round(rng.normal(size=3000), 2), rng.random(3000)
    df = frame(spark, {"label": y, "prob": s, "w": w}, 2)
    r = sms.exact_auc(df, weight="w" if weighted else None, ranges=4)
    one = sm.RankAUC().update(y, s, sample_weight=w if weighted else None)
    assert r.auc == pytest.approx(one.finalize().auc, rel=1e-12 if weighted else 0)
    assert r.average_precision == pytest.approx(one.average_precision(), rel=1e-12)
    y[2500] = 3  # the 9th batch of the only partition
    df = spark.createDataFrame(pa.table({"label": y, "prob": s})).coalesce(1)
    with pytest.raises(sm.BadValueError, match=r"partition 0.*y\[2500\] = 3"):
        sms.exact_auc(df)


CONNECT = """
import numpy as np, pyarrow as pa
from pyspark.sql import SparkSession
import streammetrics as sm, streammetrics.spark as sms
spark = SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false").getOrCreate()
assert spark.__class__.__module__.startswith("pyspark.sql.connect")
rng = np.random.default_rng(8)
y, p, c = rng.integers(0, 2, 3000), np.round(rng.random(3000), 3), rng.choice(["a", "b"], 3000)
df = spark.createDataFrame(pa.table({"label": y, "prob": p, "c": c}).to_pandas()).repartition(3)
one = sm.RankAUC().update(y, p).finalize()
assert sms.evaluate(df, "label", "prob").auc == one.auc
assert sms.exact_auc(df, "label", "prob", ranges=3).auc == one.auc
sliced = sms.evaluate(df, "label", "prob", by="c")
assert len(sliced.slices) == 2 and sliced.overall.auc == one.auc
print("connect ok")
"""


def test_spark_connect_needs_no_rdd(spark):
    pytest.importorskip("grpc", reason="the Spark Connect client (pyspark[connect]) is not installed")
    import os
    import subprocess
    import sys

    # a process of its own: a Connect session cannot share one with a classic session. SPARK_TESTING makes
    # the local server take a free port (Spark's own tests do the same), not the default one another
    # suite on the machine may hold
    env = dict(os.environ, SPARK_TESTING="1")
    done = subprocess.run([sys.executable, "-c", CONNECT], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0 and "connect ok" in done.stdout, done.stderr[-3000:]


def test_a_missing_java_is_one_line(monkeypatch):
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    with pytest.raises(RuntimeError, match=r"^a local Spark needs a Java runtime 17 or newer and none was found"):
        sms.check_java()
