"""Regression scores streamed against scikit-learn, and exact error quantiles against a sort.

One row per family on the same 10M rows (``--quick``: 1M): streammetrics folds
the rows in batches of 1M and finalizes; scikit-learn computes the same scores
from the whole arrays in memory. ``ErrorQuantiles`` is also timed against
``np.sort`` of the errors (the errors formed, then sorted), its budget 1.5x.

    python -m benchmarks.bench_regression [--quick]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy as np

import streammetrics as sm

from ._util import median_time, print_table, row

BATCH = 1 << 20


def _data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 1.5, n) * (rng.random(n) > 0.1)  # zeros: the Tweedie power 1.5 takes them
    p = np.abs(y + rng.normal(0.0, 1.0, n)) + 0.05
    return y, p, rng.random(n) * 2


def _streamed(make, y, p, w=None, read=lambda acc: acc.finalize()):
    def go():
        acc = make()
        for i in range(0, y.shape[0], BATCH):
            acc.update(y[i : i + BATCH], p[i : i + BATCH], sample_weight=None if w is None else w[i : i + BATCH])
        return read(acc)

    return go


def _families(y, p, w):
    """``{group: (streamed, scikit-learn)}``: the same scores both ways."""
    import sklearn.metrics as skm

    alphas = [0.1, 0.5, 0.9]
    return {
        "explained variance + max error": (
            _streamed(lambda: sm.RegressionErrors(spread=True), y, p),
            lambda: (skm.explained_variance_score(y, p), skm.max_error(y, p)),
        ),
        "explained variance, weighted": (
            _streamed(lambda: sm.RegressionErrors(spread=True), y, p, w),
            lambda: skm.explained_variance_score(y, p, sample_weight=w),
        ),
        "Tweedie deviance + D², power 1.5": (
            _streamed(lambda: sm.TweedieDeviance(power=1.5), y, p),
            lambda: (skm.mean_tweedie_deviance(y, p, power=1.5), skm.d2_tweedie_score(y, p, power=1.5)),
        ),
        "Poisson deviance + D²": (
            _streamed(lambda: sm.TweedieDeviance(power=1), y, p),
            lambda: (skm.mean_poisson_deviance(y, p), skm.d2_tweedie_score(y, p, power=1)),
        ),
        "squared log error + root": (
            _streamed(sm.SquaredLogError, y, p),
            lambda: (skm.mean_squared_log_error(y, p), skm.root_mean_squared_log_error(y, p)),
        ),
        "pinball loss at 3 levels": (
            _streamed(lambda: sm.PinballLoss(alpha=alphas), y, p),
            lambda: [skm.mean_pinball_loss(y, p, alpha=a) for a in alphas],
        ),
        "median absolute error": (_streamed(sm.ErrorQuantiles, y, p), lambda: skm.median_absolute_error(y, p)),
        "median absolute error, weighted": (
            _streamed(sm.ErrorQuantiles, y, p, w),
            lambda: skm.median_absolute_error(y, p, sample_weight=w),
        ),
        "D² absolute error": (
            _streamed(lambda: sm.ErrorQuantiles(truth=True), y, p),
            lambda: skm.d2_absolute_error_score(y, p),
        ),
        "D² pinball, alpha 0.9": (
            _streamed(lambda: sm.ErrorQuantiles("signed", truth=True), y, p, read=lambda a: a.d2_pinball(0.9)),
            lambda: skm.d2_pinball_score(y, p, alpha=0.9),
        ),
    }


def run(quick: bool = False) -> list[dict]:
    n = 1_000_000 if quick else 10_000_000
    repeat = 3
    y, p, w = _data(n)
    rows = []
    for group, (ours, theirs) in _families(y, p, w).items():
        rows.append(row(group, "streammetrics (batches)", median_time(ours, repeat), n=n))
        rows.append(row(group, "scikit-learn (in memory)", median_time(theirs, repeat, warmup=0), n=n))
    # the quantiles' budget: at most 1.5x a sort of the errors
    group = "ErrorQuantiles vs np.sort"
    rows.append(
        row(
            group,
            "streammetrics ErrorQuantiles (batches)",
            median_time(_streamed(sm.ErrorQuantiles, y, p), repeat),
            n=n,
        )
    )
    binned = _streamed(lambda: sm.ErrorQuantiles(significant_bits=7), y, p, read=lambda a: a.quantile_bounds(0.5))
    rows.append(row(group, "streammetrics ErrorQuantiles(significant_bits=7)", median_time(binned, repeat), n=n))
    rows.append(row(group, "numpy sort(|y - p|)", median_time(lambda: np.sort(np.abs(y - p)), repeat), n=n))
    errors = np.abs(y - p)
    rows.append(row(group, "numpy sort of errors formed already", median_time(lambda: np.sort(errors), repeat), n=n))
    return rows


LARGE_STREAMED = r"""
import json, sys
import pyarrow.parquet as pq
import streammetrics as sm

acc = sm.ErrorQuantiles(max_memory=sys.argv[2])
pf = pq.ParquetFile(sys.argv[1])  # row group by row group (iter_batches keeps what it read)
for g in range(pf.metadata.num_row_groups):
    t = pf.read_row_group(g, columns=["y", "p"])
    acc.update(t.column("y").to_numpy(), t.column("p").to_numpy())
print(json.dumps({"median": acc.quantile(0.5), "n": acc.n, "spilled": acc.spilled}))
"""

LARGE_REFERENCE = r"""
import json, sys
import numpy as np
import pyarrow.parquet as pq

pf = pq.ParquetFile(sys.argv[1])
errors = np.empty(pf.metadata.num_rows)
at = 0
for g in range(pf.metadata.num_row_groups):
    t = pf.read_row_group(g, columns=["y", "p"])
    y, p = t.column("y").to_numpy(), t.column("p").to_numpy()
    errors[at : at + y.shape[0]] = np.abs(y - p)
    at += y.shape[0]
print(json.dumps({"median": float(np.median(errors, overwrite_input=True))}))
"""


def write_large(path: str, rows: int, seed: int = 0, chunk: int = 4_000_000) -> None:
    """Columns ``y`` and ``p`` (float64): nearly every error distinct."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema([("y", pa.float64()), ("p", pa.float64())])
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, rows, chunk):
            m = min(chunk, rows - start)
            y = rng.gamma(2.0, 1.5, m)
            writer.write_table(pa.table({"y": y, "p": y + rng.normal(0.0, 1.0, m)}, schema=schema))


def run_large(rows: int, budget: str = "1GB") -> list[dict]:
    """The exact median absolute error of a Parquet file, streamed within ``budget``."""
    import json

    from .bench_evaluate import _measured

    folder = tempfile.mkdtemp(prefix="bench-regression-large-")
    try:
        path = os.path.join(folder, "errors.parquet")
        write_large(path, rows)
        write_large(os.path.join(folder, "warm.parquet"), 100_000)
        results = {}
        for name, script in (("streamed", LARGE_STREAMED), ("reference", LARGE_REFERENCE)):
            file = os.path.join(folder, f"{name}.py")
            with open(file, "w") as fh:
                fh.write(script)
            if name == "streamed":  # compile the kernels first: no measured run compiles
                _measured([sys.executable, file, os.path.join(folder, "warm.parquet"), "64KiB"])
            out = os.path.join(folder, f"{name}.json")
            wall, mb = _measured(["sh", "-c", f"{sys.executable} {file} {path} {budget} > {out}"])
            with open(out) as fh:
                results[name] = (wall, mb, json.load(fh))
        group = f"median absolute error of a {rows / 1e6:g}M-row Parquet file, incl. start-up and reading"
        (sw, smb, s), (rw, rmb, r) = results["streamed"], results["reference"]
        return [
            row(group, f"streammetrics ErrorQuantiles(max_memory={budget})", sw, peak_rss_mb=smb,
                median=s["median"], equal_to_reference=s["median"] == r["median"], spilled=s["spilled"]),
            row(group, "reference: every error in memory, np.median", rw, peak_rss_mb=rmb, median=r["median"]),
        ]  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--large" in args:
        print_table(run_large(int(args[args.index("--rows") + 1]) if "--rows" in args else 200_000_000))
    else:
        print_table(run("--quick" in args))
