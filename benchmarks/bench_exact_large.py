"""Exact AUC and average precision of ``streammetrics evaluate`` on a file larger than memory.

One binary Parquet file of ``--rows`` rows (default 200M) with a fresh random
float64 score per row (so nearly every score is distinct) and a label drawn
with that probability. Three subprocesses, each with its own peak RSS:

* ``streammetrics evaluate`` as the command runs by default (exact, within its
  memory budget);
* the same command with ``--max-bins 65536`` (the approximate mode);
* an independent sort-based reference: ``numpy.argsort`` of all scores in
  memory, the tie groups, ``2U`` summed in int64 (an exact rational AUC) and
  the average precision summed with ``math.fsum``.

The row checks that the default command's AUC equals the reference's exact
rational rounded once, and that its AP is within 1e-12 of the reference's.

Run ``python -m benchmarks.bench_exact_large [--rows N] [--keep FILE]``; it is
not part of ``python -m benchmarks`` (at 200M rows the file is about 1.9 GB
and the run takes minutes). ``--quick`` uses 5M rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np

from ._util import have, print_table, row
from .bench_evaluate import _measured

REFERENCE_SCRIPT = r"""
import json, math, sys
from fractions import Fraction
import numpy as np
import pyarrow.parquet as pq

table = pq.read_table(sys.argv[1], columns=["y", "p"])
y = table.column("y").to_numpy().astype(np.int64)
p = table.column("p").to_numpy()
del table
order = np.argsort(p, kind="stable")
ps = p[order]
ys = y[order]
del p, y, order
starts = np.flatnonzero(np.concatenate(([True], ps[1:] != ps[:-1])))
distinct = int(starts.shape[0])
del ps
pos = np.add.reduceat(ys, starts)
size = np.diff(np.append(starts, ys.shape[0]))
del ys, starts
neg = size - pos
n_pos = int(pos.sum())
n_neg = int(neg.sum())
below = np.cumsum(neg) - neg  # negatives strictly below each tie group
u2 = int(np.sum(pos * (2 * below + neg)))  # fits int64 while 2 n_pos n_neg < 2**63
auc = Fraction(u2, 2 * n_pos * n_neg) if n_pos and n_neg else Fraction(0)
# descending thresholds: cumulative positives and rows at and above each group
tp = np.cumsum(pos[::-1])
rows = np.cumsum(size[::-1])
terms = (tp / rows) * (pos[::-1] / n_pos)
ap = math.fsum(terms.tolist()) if n_pos else 0.0
print(json.dumps({"auc": float(auc), "auc_num": u2, "auc_den": 2 * n_pos * n_neg,
                  "average_precision": ap, "n_pos": n_pos, "n_neg": n_neg,
                  "distinct": distinct}))
"""


def write_file(path: str, rows: int, seed: int = 0, chunk: int = 4_000_000) -> None:
    """``y`` (int8) drawn with probability ``p`` (float64, uniform)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema([("y", pa.int8()), ("p", pa.float64())])
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            p = rng.random(n)
            y = (rng.random(n) < p).astype(np.int8)
            writer.write_table(pa.table({"y": y, "p": p}, schema=schema), row_group_size=1 << 20)


def _command(path: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "streammetrics", "evaluate", path, "--task", "binary",
            "--format", "json", "--progress", "never", *extra]


def _json_of(argv):
    """Run ``argv`` measured; return (wall, peak MB, parsed JSON of its stdout)."""
    out = tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False)
    out.close()
    try:
        wall, mb = _measured(["sh", "-c", " ".join(_quote(a) for a in argv) + " > " + _quote(out.name)])
        with open(out.name) as fh:
            return wall, mb, json.load(fh)
    finally:
        os.unlink(out.name)


def _quote(a: str) -> str:
    import shlex

    return shlex.quote(a)


def run(quick: bool = False, rows: int | None = None, keep: str | None = None) -> list[dict]:
    if not have("pyarrow"):
        print("bench_exact_large: pyarrow is not installed; skipped", file=sys.stderr)
        return []
    n = rows or (5_000_000 if quick else 200_000_000)
    folder = tempfile.mkdtemp(prefix="bench-exact-large-")
    out: list[dict] = []
    try:
        path = keep or os.path.join(folder, f"exact-{n}.parquet")
        if not os.path.exists(path):
            print(f"# writing {n:,} rows to {path}", file=sys.stderr, flush=True)
            write_file(path, n)
        small = os.path.join(folder, "warm.parquet")
        write_file(small, 10_000)
        _json_of(_command(small))  # fill the kernel cache: no run below compiles
        script = os.path.join(folder, "reference.py")
        with open(script, "w") as fh:
            fh.write(REFERENCE_SCRIPT)
        print("# reference", file=sys.stderr, flush=True)
        ref_wall, ref_mb, ref = _json_of([sys.executable, script, path])
        print("# exact command", file=sys.stderr, flush=True)
        ex_wall, ex_mb, ex = _json_of(_command(path))
        print("# --max-bins 65536", file=sys.stderr, flush=True)
        bd_wall, bd_mb, bd = _json_of(_command(path, "--max-bins", "65536"))
        group = (f"exact AUC/AP of a {n / 1e6:g}M-row Parquet file "
                 f"({ref['distinct']:,} distinct scores), incl. start-up and reading")
        m = ex["metrics"]
        out.append(row(group, "streammetrics evaluate (default)", ex_wall, peak_rss_mb=ex_mb,
                       auc=m["auc"], average_precision=m["average_precision"],
                       auc_equals_reference=m["auc"] == ref["auc"],
                       ap_rel_error=abs(m["average_precision"] - ref["average_precision"])
                       / ref["average_precision"],
                       wall_vs_max_bins=ex_wall / bd_wall))
        b = bd["metrics"]
        out.append(row(group, "streammetrics evaluate --max-bins 65536", bd_wall, peak_rss_mb=bd_mb,
                       auc=b["auc"], average_precision=b["average_precision"]))
        out.append(row(group, "reference: numpy argsort in memory + exact sums", ref_wall,
                       peak_rss_mb=ref_mb, auc=ref["auc"],
                       average_precision=ref["average_precision"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_exact_large")
    ap.add_argument("--quick", action="store_true", help="5M rows instead of 200M")
    ap.add_argument("--rows", type=int, default=None, help="rows in the file")
    ap.add_argument("--keep", default=None, help="write the file here (or reuse it) instead of a temp folder")
    args = ap.parse_args()
    rows = run(args.quick, args.rows, args.keep)
    print_table(rows)
    for r in rows:
        print(json.dumps(r))
