"""Evaluate a Spark DataFrame where it lives, with the single-process result.

:func:`evaluate` folds each partition's Arrow record batches into one state
through ``mapInArrow`` (no pandas, no RDD: it runs on Spark Connect), one task
per core, sends the states back as bytes (checked like files), merges them
(past :data:`MERGE_EVERY` partitions, in a second stage first) and finalizes
on the driver. :func:`exact_auc` computes the exact AUC and average precision
by score ranges, as :func:`streammetrics.dask.exact_auc`. A bad value raises
the library's own exception naming the partition, the column and the row.

Requires the ``spark`` extra (``pip install 'streammetrics[spark]'``) and, for
a local Spark, a Java runtime 17 or newer (:func:`local_session` says so when
it is missing).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

try:
    import pyarrow as pa
    from pyspark.sql import functions as F
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("streammetrics.spark needs pyspark: pip install 'streammetrics[spark]'") from exc

import numpy as np

from ._engines import check_columns, make_plan, merged_bytes, numpy_column, pack_error, unpack
from ._protocol.errors import NoObservationsError
from .metrics.ranking import RankAUC
from .metrics.ranking.accumulator import check_count
from .metrics.ranking.ranges import check_cuts, folded, range_result, range_stats, range_totals, route_rows, run_of

__all__ = ["MERGE_EVERY", "evaluate", "exact_auc", "local_session"]

#: the most partitions whose states the driver merges itself; past it a second
#: stage merges them in groups of this many first
MERGE_EVERY = 256

#: what a partition sends back: its index and its state's (or error's) bytes
_SCHEMA = "part int, state binary"
#: the first byte of the statistics a partition of :func:`exact_auc` sends
_JSON = b"J"

JAVA_HINT = (
    "a local Spark needs a Java runtime 17 or newer{found}: install one (apt-get install openjdk-17-jre-headless, "
    "brew install openjdk@17, or conda install -c conda-forge openjdk=17) and set JAVA_HOME to it"
)


def _partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _one(part: int, value: bytes):
    return pa.RecordBatch.from_arrays([pa.array([part], pa.int32()), pa.array([value], pa.binary())], ["part", "state"])


def _task(work):
    """A function ``mapInArrow`` runs on each partition: ``work(batches, where)``, the
    bytes it sends back (an error met is sent as such)."""

    def run(batches):
        part = _partition()
        try:
            value = work(batches, f"partition {part}")
        except (ValueError, TypeError) as exc:
            value = pack_error(exc)
        yield _one(part, value)

    return run


def _merge(batches):
    """The function of the second stage: a group of states into one (an error passes on)."""
    rows = sorted((p, bytes(v)) for b in batches for p, v in zip(*b.to_pydict().values()))
    if rows:
        yield _one(rows[0][0], merged_bytes([v for _, v in rows]))


def _num_partitions(df) -> int | None:
    """The partitions of ``df``, where Spark tells them without a job (not on Spark Connect)."""
    try:
        return df.rdd.getNumPartitions()
    except Exception:  # Spark Connect has no RDD: unknown
        return None


def _tasks(df) -> int | None:
    """How many tasks run at once (the default parallelism), where Spark says so."""
    spark = df.sparkSession
    try:
        return spark.sparkContext.defaultParallelism
    except Exception:  # Spark Connect: the setting, where it is set
        try:
            value = spark.conf.get("spark.default.parallelism", None)
        except Exception:
            return None
        return int(value) if value else None


def _collect(states) -> list:
    """``[(part, bytes)]`` of a DataFrame of states, in partition order."""
    table = states.toArrow()
    return sorted((p, bytes(v)) for p, v in zip(table.column("part").to_pylist(), table.column("state").to_pylist()))


def evaluate(df, y="label", p="prob", *, task=None, evaluator=None, weight=None, by=None, labels=None, ci=None):
    """Evaluate the columns ``y`` (truths) and ``p`` (predictions) of a Spark DataFrame.

    The result is what ``Evaluator(task=...).update(y, p).finalize(ci=ci)``
    gives on the whole table in one process (with ``by=``, that of
    ``Sliced(Evaluator(...))``): counts and the exact AUC identical, sums to
    1e-12. ``task`` is a preset of :class:`~streammetrics.Evaluator`
    (``"binary"`` by default, ``"multiclass"`` when ``labels`` are given);
    ``evaluator`` an empty Evaluator of any members instead; ``weight`` a
    column of sample weights; ``by`` a column or a list of columns whose
    values are the slices; ``ci`` a confidence level for the intervals. Class
    probabilities come as an ``array<double>`` column (``vector_to_array`` of
    an ML vector). A bad value raises the library's exception (``BadValueError``)
    naming the partition of the task that met it, the column, and the row's
    position among the rows that task read.

    >>> from streammetrics.spark import evaluate, local_session
    >>> spark = local_session(2)  # doctest: +SKIP
    >>> rows = [(i % 2, (i % 7) / 7) for i in range(100)]
    >>> df = spark.createDataFrame(rows, "label int, prob double")  # doctest: +SKIP
    >>> r = evaluate(df, "label", "prob", ci=0.95)  # doctest: +SKIP
    >>> round(r.auc, 6), r.n  # doctest: +SKIP
    (0.503, 100)
    """
    plan = make_plan(y, p, task=task, evaluator=evaluator, weight=weight, by=by, labels=labels, ci=ci)
    check_columns(df.columns, plan.columns, "the DataFrame")
    rows = df.select(*plan.columns)
    parts, tasks = _num_partitions(df), _tasks(df)
    if parts and tasks and parts > tasks:
        # one Python task per core, each folding several partitions: a Python
        # task costs far more to start than folding a partition's rows
        rows, parts = rows.coalesce(tasks), tasks
    states = rows.mapInArrow(_task(plan.state_of), _SCHEMA)
    if parts is None or parts > MERGE_EVERY:
        groups = 1 + (parts or MERGE_EVERY) // MERGE_EVERY
        states = states.repartition(groups).mapInArrow(_merge, _SCHEMA)
    return plan.finish([v for _, v in _collect(states)])


# ---------------------------------------------------------------------------
# a local session


def _java_major(java: str) -> int | None:
    """The major version of the Java runtime ``java`` (``None`` if unreadable)."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8" is Java 8


def check_java() -> None:
    """``RuntimeError`` in one line when no Java 17 or newer is found (``JAVA_HOME``, then the ``PATH``)."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        raise RuntimeError(JAVA_HINT.format(found=" and none was found"))
    major = _java_major(java)
    if major is None or major < 17:
        raise RuntimeError(JAVA_HINT.format(found=f" ({java} is {'unreadable' if major is None else major})"))


def local_session(cores: int = 2, **conf):
    """A local Spark session on ``cores`` cores (``local[cores]``), its UI off;
    ``conf`` more settings (``spark.driver.memory="4g"``, written with
    underscores for dots: ``spark_driver_memory="4g"``). Checks for Java first.
    """
    check_java()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(f"local[{int(cores)}]").appName("streammetrics")
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2 * int(cores), 2)),
    }
    settings.update({k.replace("_", "."): str(v) for k, v in conf.items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


# ---------------------------------------------------------------------------
# exact AUC by score ranges


def exact_auc(df, y="label", p="prob", *, weight=None, ranges: int = 16, cuts=None):
    """Exact AUC and average precision of a DataFrame, by score ranges.

    As :func:`streammetrics.dask.exact_auc`: the scores are cut into ranges
    (``cuts``, or ``ranges`` near-equal ones from ``approxQuantile``), a first
    pass counts each range's positives and negatives in every partition, the
    rows are then shuffled by range and each range's exact state is built and
    reduced where it lands (to ``2U``, its share of the average precision and
    its distinct scores), so no process holds more than a few ranges' scores.
    Without weights ``auc`` is bit for bit ``RankAUC``'s; with them within
    1e-12. Returns a :class:`~streammetrics.dask.RangeResult`-like result
    (``auc``, ``average_precision``, ``n_pos``, ``n_neg``, ``n``).

    >>> from streammetrics.spark import exact_auc, local_session
    >>> spark = local_session(2)  # doctest: +SKIP
    >>> rows = [(i % 2, (i % 7) / 7) for i in range(100)]
    >>> df = spark.createDataFrame(rows, "label int, prob double")  # doctest: +SKIP
    >>> r = exact_auc(df, "label", "prob", ranges=4)  # doctest: +SKIP
    >>> r.auc, r.n_pos, r.n_neg  # doctest: +SKIP
    (0.503, 50, 50)
    """
    columns = [y, p] + ([weight] if weight else [])
    check_columns(df.columns, columns, "the DataFrame")
    df = df.select(*columns)
    if cuts is None:
        ranges = check_count(ranges, "ranges", 1, True)
        probs = [i / ranges for i in range(1, ranges)]
        found = df.approxQuantile(p, probs, 1.0 / (20 * ranges)) if probs else []
        cuts = np.unique(np.asarray([c for c in found if c is not None and np.isfinite(c)], np.float64) + 0.0)
    else:
        cuts = check_cuts(cuts)
    weighted = weight is not None
    parts = _collect(df.mapInArrow(_ranger(cuts, weighted, columns), _SCHEMA))
    # (rows, masses) of every partition with rows
    infos = [(rows, np.asarray(m)) for rows, m in (_payload(v) for _, v in parts) if rows]
    if not infos:
        raise NoObservationsError(f"{y} and {p} are empty: the AUC needs at least one observation")
    totals = range_totals(weighted, *infos)
    keyed = df.withColumn("_range", _range_of(F.col(p), cuts))
    R = cuts.shape[0] + 1
    reduced = keyed.repartition(R, "_range").mapInArrow(_range_reducer(cuts, totals, weighted, columns), _SCHEMA)
    stats = {r: st for _, v in _collect(reduced) for r, *st in _payload(v)}  # (2U, share, distinct) by range
    return range_result(totals, weighted, [stats.get(r, (0, 0.0, 0)) for r in range(R)], cuts=cuts, ranges=R)


def _range_of(score, cuts):
    """The range of each row's score: how many cuts are at or below it (as ``np.searchsorted(cuts, s, "right")``)."""
    out = F.lit(0)
    for c in cuts:
        out = out + F.when(score >= F.lit(float(c)), 1).otherwise(0)
    return out


def _ranger(cuts, weighted, columns):
    """First pass: each partition's rows and per-range masses (:func:`route_rows`),
    batch by batch, so that a task holds one batch's rows, not its partition's."""

    def masses(batches, where):
        infos, rows = [(0, np.zeros((cuts.shape[0] + 1, 2), np.int64))], 0
        for batch in batches:
            arrays = [numpy_column(batch.column(c), c) for c in columns]
            (info,) = route_rows(cuts, 0, 0, where, arrays, weighted, offset=rows)
            infos.append(info)
            rows += info[0]
        totals = range_totals(weighted, *infos)  # each cell exact, or correctly rounded
        return _JSON + json.dumps([rows, totals["masses"]]).encode()

    return _task(masses)


def _range_reducer(cuts, totals, weighted, columns):
    """Second pass: the ranges a partition holds, each reduced to its statistics."""

    def reduce(batches, where):
        accs = {}
        for batch in batches:
            arrays = [numpy_column(batch.column(c), c) for c in columns]
            which = batch.column("_range").to_numpy(zero_copy_only=False)
            for r in np.unique(which):
                rows = which == r
                folded(accs.setdefault(int(r), RankAUC()), [a[rows] for a in arrays], weighted, where)
        out = [[r, *range_stats(totals, r, weighted, run_of(acc, weighted))] for r, acc in sorted(accs.items())]
        return _JSON + json.dumps(out).encode()

    return _task(reduce)


def _payload(value):
    """The JSON a partition sent, or its error raised."""
    if value[:1] != _JSON:
        unpack(value)  # (an error: raised as the library's own)
    return json.loads(value[1:].decode())
