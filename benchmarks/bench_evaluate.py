"""The ``streammetrics evaluate`` command on large Parquet files: memory and speed.

* **Bounded memory**: peak RSS of ``streammetrics evaluate`` (a subprocess;
  ``ru_maxrss`` of that child) on binary-classification Parquet files of two
  sizes (5M and 50M rows; quick: 1M and 5M). The exact AUC's state (24 bytes
  per distinct score) is held within the command's ``--memory`` budget (1 GB
  by default) and spilled beyond it, so the peak stays near the budget plus
  the reading buffers however large the file grows.
* **Throughput**: rows/s of the command on a 20M-row file (quick: 2M) against
  pandas ``read_parquet`` + scikit-learn computing the same scores (confusion
  rates, ROC-AUC, average precision, log loss, Brier), each in its own
  subprocess, with its peak RSS. Times include process start-up and reading.

Run ``python -m benchmarks.bench_evaluate [--quick]``. Files are generated in a
temporary folder and deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from ._util import evaluate_command, have, print_table, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SKLEARN_SCRIPT = r"""
import sys
import numpy as np
import pandas as pd
from sklearn import metrics as M

df = pd.read_parquet(sys.argv[1], columns=["y", "p"])
y = df["y"].to_numpy()
p = df["p"].to_numpy()
pred = (p >= 0.5).astype(np.int8)
tn, fp, fn, tp = M.confusion_matrix(y, pred, labels=[0, 1]).ravel()
out = {
    "accuracy": M.accuracy_score(y, pred),
    "precision": M.precision_score(y, pred, zero_division=0),
    "recall": M.recall_score(y, pred, zero_division=0),
    "f1": M.f1_score(y, pred, zero_division=0),
    "mcc": M.matthews_corrcoef(y, pred),
    "auc": M.roc_auc_score(y, p),
    "average_precision": M.average_precision_score(y, p),
    "log_loss": M.log_loss(y, p),
    "brier": M.brier_score_loss(y, p),
}
print(out["auc"])
"""


def write_parquet(path: str, rows: int, seed: int = 0, chunk: int = 2_000_000) -> None:
    """A binary predictions file: y (int8 0/1), p (float64 probabilities)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema([("y", pa.int8()), ("p", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            y = (rng.random(n) < 0.3).astype(np.int8)
            logit = rng.normal(loc=np.where(y == 1, 1.1, -1.1), scale=1.3)
            p = 1.0 / (1.0 + np.exp(-logit))
            writer.write_table(pa.table({"y": y, "p": p}, schema=schema), row_group_size=1 << 20)


def _measured(argv):
    """Run ``argv`` in a fresh wrapper so that RUSAGE_CHILDREN sees only that run."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t0 = time.perf_counter()\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
        "wall = time.perf_counter() - t0\n"
        "if done.returncode:\n"
        "    sys.stderr.write(done.stderr.decode()[-2000:]); sys.exit(done.returncode)\n"
        "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(wall, ru.ru_maxrss)\n"
    )
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, env=env)
    if done.returncode:
        raise RuntimeError(f"{argv[:4]} failed: {done.stderr.decode()}")
    wall, kb = done.stdout.split()
    return float(wall), int(kb) / 1024.0


def run(quick: bool) -> list[dict]:
    if not have("pyarrow"):
        print("bench_evaluate: pyarrow is not installed; skipped", file=sys.stderr)
        return []
    rss_sizes = (1_000_000, 5_000_000) if quick else (5_000_000, 50_000_000)
    speed_rows = 2_000_000 if quick else 20_000_000
    rows: list[dict] = []
    folder = tempfile.mkdtemp(prefix="bench-evaluate-")
    try:
        # warm the Numba cache once so no measurement includes compilation
        small = os.path.join(folder, "warm.parquet")
        write_parquet(small, 10_000)
        _measured(evaluate_command(small))

        for n in rss_sizes:
            path = os.path.join(folder, f"rss-{n}.parquet")
            write_parquet(path, n)
            wall, mb = _measured(evaluate_command(path))
            rows.append(
                row(
                    "evaluate peak RSS, binary Parquet",
                    f"streammetrics {n / 1e6:g}M rows",
                    wall,
                    rows_per_s=n / wall,
                    peak_rss_mb=mb,
                    file_mb=os.path.getsize(path) / 2**20,
                )
            )
            os.unlink(path)

        path = os.path.join(folder, f"speed-{speed_rows}.parquet")
        write_parquet(path, speed_rows, seed=1)
        wall, mb = _measured(evaluate_command(path))
        group = f"binary Parquet, {speed_rows / 1e6:g}M rows, all scores, incl. start-up"
        rows.append(row(group, "streammetrics evaluate", wall, rows_per_s=speed_rows / wall, peak_rss_mb=mb))
        if have("pandas") and have("sklearn"):
            script = os.path.join(folder, "sk.py")
            with open(script, "w") as fh:
                fh.write(SKLEARN_SCRIPT)
            wall, mb = _measured([sys.executable, script, path])
            rows.append(
                row(group, "pandas read_parquet + scikit-learn", wall, rows_per_s=speed_rows / wall, peak_rss_mb=mb)
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_evaluate")
    ap.add_argument("--quick", action="store_true")
    print_table(run(ap.parse_args().quick))
