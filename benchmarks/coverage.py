"""Coverage of the nominal 95% intervals on simulated data with known true values.

``python -m benchmarks.coverage [--datasets 1000] [--rows 1000] [--replicates 200]``

Each data set draws ``rows`` labels with P(y = 1) = 0.3 and scores from the
binormal model: ``s ~ N(0, 1)`` for a negative, ``N(d, 1)`` for a positive
(d = 1.2). The true values are those of the population:

* AUC = Phi(d / sqrt(2));
* accuracy of ``s >= t`` (t = 0.6): pi TPR + (1 - pi)(1 - FPR), with
  TPR = 1 - Phi(t - d) and FPR = 1 - Phi(t);
* F1 of ``s >= t``: 2 pi TPR / (2 pi TPR + (1 - pi) FPR + pi (1 - TPR)).

For every data set it computes the AUC's DeLong interval
(``RankAUC.finalize(ci=0.95)``) and its percentile bootstrap interval
(``Bootstrap(RankAUC())``), accuracy's Wilson interval
(``BinaryConfusion.finalize(ci=0.95)``) and F1's bootstrap interval
(``Bootstrap(BinaryConfusion(threshold=t))``), and counts how often each
covers the true value. With 1,000 data sets the Monte Carlo standard error of
a coverage near 95% is 0.7 points; nominal 95% intervals should cover in
93-97% of them. This is a benchmark-style study, not a unit test: it takes
about a minute on two cores.
"""

from __future__ import annotations

import argparse
import math
import time
from statistics import NormalDist

import numpy as np

PI, D, T = 0.3, 1.2, 0.6


def truths() -> dict:
    phi = NormalDist().cdf
    tpr, fpr = 1.0 - phi(T - D), 1.0 - phi(T)
    return {
        "auc": phi(D / math.sqrt(2.0)),
        "accuracy": PI * tpr + (1.0 - PI) * (1.0 - fpr),
        "f1": 2 * PI * tpr / (2 * PI * tpr + (1 - PI) * fpr + PI * (1 - tpr)),
    }


def simulate(rng, rows: int):
    y = (rng.random(rows) < PI).astype(np.int64)
    s = rng.normal(size=rows) + D * y
    return y, s


def study(datasets: int, rows: int, replicates: int, seed: int = 0, level: float = 0.95):
    import streammetrics as sm

    true = truths()
    methods = {
        "AUC, DeLong (RankAUC.finalize(ci))": "auc",
        "AUC, bootstrap (Bootstrap(RankAUC))": "auc",
        "accuracy, Wilson (BinaryConfusion.finalize(ci))": "accuracy",
        "F1, bootstrap (Bootstrap(BinaryConfusion))": "f1",
    }
    hits = {m: 0 for m in methods}
    widths = {m: [] for m in methods}
    rng = np.random.default_rng(seed)
    keys = np.arange(rows)
    for i in range(datasets):
        y, s = simulate(rng, rows)
        got = {
            "AUC, DeLong (RankAUC.finalize(ci))": sm.RankAUC().update(y, s).finalize(ci=level),
            "AUC, bootstrap (Bootstrap(RankAUC))": sm.Bootstrap(sm.RankAUC(), replicates=replicates, seed=i)
            .update(y, s, key=keys)
            .finalize(ci=level),
            "accuracy, Wilson (BinaryConfusion.finalize(ci))": sm.BinaryConfusion(threshold=T)
            .update(y, s)
            .finalize(ci=level),
            "F1, bootstrap (Bootstrap(BinaryConfusion))": sm.Bootstrap(
                sm.BinaryConfusion(threshold=T), replicates=replicates, seed=i
            )
            .update(y, s, key=keys)
            .finalize(ci=level),
        }
        for m, score in methods.items():
            r = got[m]
            lo, hi = r[f"{score}_ci_lower"], r[f"{score}_ci_upper"]
            hits[m] += lo <= true[score] <= hi
            widths[m].append(hi - lo)
    return [(m, methods[m], true[methods[m]], hits[m] / datasets, float(np.median(widths[m]))) for m in methods]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.coverage", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--datasets", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table = study(args.datasets, args.rows, args.replicates, args.seed)
    seconds = time.perf_counter() - t0
    se = math.sqrt(0.95 * 0.05 / args.datasets)
    print(
        f"coverage of nominal 95% intervals: {args.datasets:,} data sets of {args.rows:,} rows "
        f"(P(y=1) = {PI}, binormal d = {D}, threshold {T}), {args.replicates} bootstrap replicates"
    )
    print(f"{'interval':<50} {'true value':>10} {'coverage':>9} {'median width':>13}")
    for m, _, true, cov, width in table:
        flag = "" if 0.93 <= cov <= 0.97 else "  (outside 93-97%)"
        print(f"{m:<50} {true:>10.4f} {cov:>8.1%} {width:>13.4f}{flag}")
    print(f"(Monte Carlo standard error of a 95% coverage: {se:.1%}; {seconds:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
