"""Exact AUC and average precision of ``streammetrics evaluate`` on a file larger than memory.

One binary Parquet file of ``--rows`` rows (default 200M) with a fresh random
float64 score per row (so nearly every score is distinct) and a label drawn
with that probability. Three subprocesses, each with its own peak RSS:

* ``streammetrics evaluate`` as the command runs by default (exact, within its
  memory budget);
* the same command with ``--max-bins 65536`` (the approximate mode);
* an independent sort-based reference: each class's scores read into memory
  and sorted by ``np.sort``, ``2U`` from binary searches of the positives
  among the negatives (an exact rational AUC), and the average precision over
  the distinct positive scores summed with ``math.fsum`` (8 bytes a row: it
  fits the shared machine, where an ``argsort`` of all rows took 23 GB).

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

from ._util import evaluate_command, have, print_table, row
from .bench_evaluate import _measured

REFERENCE_SCRIPT = r"""
import json, math, sys
from fractions import Fraction
import numpy as np
import pyarrow.parquet as pq

# two passes over the row groups: count the positives, then fill each class's
# scores (8 bytes a row in all: the reference fits a shared machine)
pf = pq.ParquetFile(sys.argv[1])
groups = range(pf.metadata.num_row_groups)
n_pos = sum(int(np.count_nonzero(pf.read_row_group(g, columns=["y"]).column("y").to_numpy()))
            for g in groups)
n = pf.metadata.num_rows
n_neg = n - n_pos
pos = np.empty(n_pos)
neg = np.empty(n_neg)
a = b = 0
for g in groups:
    t = pf.read_row_group(g, columns=["y", "p"])
    y = t.column("y").to_numpy() == 1
    p = t.column("p").to_numpy() + 0.0  # -0.0 is +0.0
    k = int(np.count_nonzero(y))
    pos[a:a + k] = p[y]
    neg[b:b + p.shape[0] - k] = p[~y]
    a += k
    b += p.shape[0] - k
del t, y, p
pos.sort()
neg.sort()
step = 1 << 22
u2 = 0  # sum over positives of (negatives below) + (negatives at or below)
for i in range(0, n_pos, step):
    c = pos[i:i + step]
    u2 += int(np.searchsorted(neg, c, "left").sum()) + int(np.searchsorted(neg, c, "right").sum())
auc = Fraction(u2, 2 * n_pos * n_neg) if n_pos and n_neg else Fraction(0)
# average precision over the distinct positive scores, highest first:
# (positives at t / n_pos) * (positives >= t) / (rows >= t)
first = np.flatnonzero(np.concatenate(([True], pos[1:] != pos[:-1])))
ends = np.append(first[1:], n_pos)
parts = []
for i in range(0, first.shape[0], step):
    f, e = first[i:i + step], ends[i:i + step]
    tp = n_pos - f
    rows = tp + n_neg - np.searchsorted(neg, pos[f], "left")
    parts.append(math.fsum(((e - f) / n_pos * (tp / rows)).tolist()))
ap = math.fsum(parts) if n_pos else 0.0
distinct = int(np.unique(np.concatenate((pos[first], neg))).shape[0]) if n < 50_000_000 else None
print(json.dumps({"auc": float(auc), "auc_num": u2, "auc_den": 2 * n_pos * n_neg,
                  "average_precision": ap, "n_pos": n_pos, "n_neg": n_neg,
                  "distinct": distinct, "distinct_positive_scores": int(first.shape[0])}))
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
        # fill the kernel cache: no run below compiles (a compile in a measured run
        # adds LLVM's memory to its peak RSS); the small budget spills, as the
        # default budget does on the large file
        for extra in ((), ("--memory", "64KiB"), ("--max-bins", "65536")):
            _json_of(evaluate_command(small, *extra))
        script = os.path.join(folder, "reference.py")
        with open(script, "w") as fh:
            fh.write(REFERENCE_SCRIPT)
        print("# reference", file=sys.stderr, flush=True)
        ref_wall, ref_mb, ref = _json_of([sys.executable, script, path])
        print("# exact command", file=sys.stderr, flush=True)
        ex_wall, ex_mb, ex = _json_of(evaluate_command(path))
        print("# --max-bins 65536", file=sys.stderr, flush=True)
        bd_wall, bd_mb, bd = _json_of(evaluate_command(path, "--max-bins", "65536"))
        distinct = f"{ref['distinct']:,}" if ref["distinct"] is not None else "nearly all"
        group = (
            f"exact AUC/AP of a {n / 1e6:g}M-row Parquet file ({distinct} distinct scores), incl. start-up and reading"
        )
        m = ex["metrics"]
        out.append(
            row(
                group,
                "streammetrics evaluate (default)",
                ex_wall,
                peak_rss_mb=ex_mb,
                auc=m["auc"],
                average_precision=m["average_precision"],
                auc_equals_reference=m["auc"] == ref["auc"],
                ap_rel_error=abs(m["average_precision"] - ref["average_precision"]) / ref["average_precision"],
                wall_vs_max_bins=ex_wall / bd_wall,
            )
        )
        b = bd["metrics"]
        out.append(
            row(
                group,
                "streammetrics evaluate --max-bins 65536",
                bd_wall,
                peak_rss_mb=bd_mb,
                auc=b["auc"],
                average_precision=b["average_precision"],
            )
        )
        out.append(
            row(
                group,
                "reference: np.sort of each class in memory + exact sums",
                ref_wall,
                peak_rss_mb=ref_mb,
                auc=ref["auc"],
                average_precision=ref["average_precision"],
            )
        )
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
