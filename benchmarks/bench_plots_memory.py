"""``streammetrics evaluate --plots`` within ``--memory``: peak RSS and wall time with and without the plots.

The command evaluates a binary Parquet file of distinct float scores (5M rows; quick: 1M) with ``--memory 256MB``
(the exact rank state spills to disk) once without ``--plots`` and once with it, each in its own subprocess
(``ru_maxrss`` of that child). The plots draw curves of at most ``report.plots.MAX_CURVE_POINTS`` points, read from
the state's run a block at a time, so the peak with plots stays near the peak without (the aim: at most 1.2x).

Run ``python -m benchmarks.bench_plots_memory [--quick] [--rows N] [--memory SIZE]``. The file is generated in a temporary folder and
deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

from ._util import evaluate_command, have, print_table, row
from .bench_evaluate import _measured, write_parquet

REPEATS = 3


def run(quick: bool, rows_n: int | None = None, memory: str = "256MB") -> list[dict]:
    if not (have("pyarrow") and have("matplotlib")):
        print("bench_plots_memory: pyarrow and matplotlib are needed; skipped", file=sys.stderr)
        return []
    n = rows_n or (1_000_000 if quick else 5_000_000)
    repeats = 1 if quick else REPEATS
    out: list[dict] = []
    folder = tempfile.mkdtemp(prefix="bench-plots-")
    try:
        warm = os.path.join(folder, "warm.parquet")
        write_parquet(warm, 10_000)
        _measured(evaluate_command(warm, "--plots", os.path.join(folder, "warm-plots")))  # compile once
        path = os.path.join(folder, "scores.parquet")
        write_parquet(path, n)
        group = f"evaluate --memory {memory}, binary Parquet, {n / 1e6:g}M distinct scores"
        base = evaluate_command(path, "--memory", memory)
        runs = {"streammetrics without --plots": base, "with --plots": [*base, "--plots", os.path.join(folder, "p")]}
        got = {impl: [_measured(argv) for _ in range(repeats)] for impl, argv in runs.items()}
        peaks = {impl: float(np.median([mb for _, mb in r])) for impl, r in got.items()}
        plain = peaks["streammetrics without --plots"]
        for impl, r in got.items():
            wall = float(np.median([w for w, _ in r]))
            out.append(row(group, impl, wall, peak_rss_mb=peaks[impl], rss_ratio=peaks[impl] / plain))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_plots_memory")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", type=int, default=None, help="rows of the file (default 5M; quick 1M)")
    ap.add_argument("--memory", default="256MB", help="the command's --memory (default 256MB)")
    args = ap.parse_args()
    print_table(run(args.quick, args.rows, args.memory))
