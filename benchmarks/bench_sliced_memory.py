"""One memory budget for a whole ``Sliced(RankAUC(max_memory=...))``.

500 slices of 10,000 rows each (distinct float64 scores, rows in random slice
order, batches of 100,000 rows), then every slice's AUC: ``max_memory="1MiB"``
shared by the 500 slices and the overall state, against no budget. The rows
give the time (median of the repeats), the largest in-memory bytes the states
held after any batch (their own ``nbytes``, summed; the budget's count), and
whether the results are equal bit for bit.

Run ``python -m benchmarks.bench_sliced_memory [--quick]`` (``--quick``: 1,000
rows a slice).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ._util import print_table, row

SLICES = 500
BATCH = 100_000
BUDGET = 1 << 20


def _one(budget, y, s, keys):
    import streammetrics as sm
    from tests.harness import rank_states  # (the test suite's walk over the states)

    t0 = time.perf_counter()
    acc = sm.Sliced(sm.RankAUC(max_memory=budget), max_slices=SLICES)
    peak = 0
    for a in range(0, y.shape[0], BATCH):
        acc.update(y[a : a + BATCH], s[a : a + BATCH], by=keys[a : a + BATCH])
        peak = max(peak, sum(st.nbytes for st in rank_states(acc)))
    r = acc.finalize()
    aucs = [r.slices[k].auc for k in range(SLICES)]
    seconds = time.perf_counter() - t0
    return seconds, peak, aucs


def run(quick: bool) -> list[dict]:
    per = 1_000 if quick else 10_000
    repeat = 1 if quick else 3
    rng = np.random.default_rng(0)
    n = SLICES * per
    keys = rng.permutation(np.repeat(np.arange(SLICES), per))
    y = rng.integers(0, 2, n)
    s = rng.random(n)
    group = f"Sliced(RankAUC): {SLICES} slices x {per:,} rows, update + every slice's AUC"
    out, base = [], None
    for impl, budget in (("streammetrics, max_memory=1MiB (one budget)", BUDGET), ("no budget (in memory)", None)):
        runs = [_one(budget, y, s, keys) for _ in range(repeat)]
        seconds = float(np.median([r[0] for r in runs]))
        peak = max(r[1] for r in runs)
        if base is None:
            base = runs[0][2]
            same = True
        else:
            same = runs[0][2] == base
        out.append(row(group, impl, seconds, peak_in_memory_MB=peak / 1e6, same_aucs=same))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_sliced_memory", description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print_table(run(args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
