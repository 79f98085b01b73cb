"""Probability scores with their D², and calibration, streamed against scikit-learn.

One row per family on the same 10M rows (``--quick``: 1M): streammetrics folds
the rows in batches of 1M and finalizes (log loss, Brier and both D² from one
pass; the equal-mass calibration table from the exact sorted runs); scikit-learn
computes each (the D² scores, ``calibration_curve``) from the whole arrays in memory.

    python -m benchmarks.bench_probability [--quick]
"""

from __future__ import annotations

import sys

import numpy as np

import streammetrics as sm

from ._util import median_time, print_table, row

BATCH = 1 << 20


def _streamed(make, y, p, w=None):
    def go():
        acc = make()
        for i in range(0, y.shape[0], BATCH):
            acc.update(y[i : i + BATCH], p[i : i + BATCH], sample_weight=None if w is None else w[i : i + BATCH])
        return acc.finalize()

    return go


def run(quick: bool = False) -> list[dict]:
    import sklearn.metrics as skm
    from sklearn.calibration import calibration_curve

    n = 1_000_000 if quick else 10_000_000
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    w = rng.random(n) * 2
    k = 5
    yk = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n)
    families = {
        "binary D² log loss + D² Brier": (
            _streamed(sm.ProbabilityScores, y, p),
            lambda: (skm.d2_log_loss_score(y, p), skm.d2_brier_score(y, p)),
        ),
        "binary D² log loss + D² Brier, weighted": (
            _streamed(sm.ProbabilityScores, y, p, w),
            lambda: (skm.d2_log_loss_score(y, p, sample_weight=w), skm.d2_brier_score(y, p, sample_weight=w)),
        ),
        f"{k}-class D² log loss + D² Brier": (
            _streamed(lambda: sm.ClassProbabilityScores(k), yk, P),
            lambda: (skm.d2_log_loss_score(yk, P), skm.d2_brier_score(yk, P)),
        ),
        "calibration, 15 equal-mass bins (exact)": (
            _streamed(lambda: sm.Calibration(15, strategy="quantile"), y, p),
            lambda: calibration_curve(y, p, n_bins=15, strategy="quantile"),
        ),
    }
    rows = []
    for group, (ours, theirs) in families.items():
        rows.append(row(group, "streammetrics (batches)", median_time(ours, 3), n=n))
        rows.append(row(group, "scikit-learn (in memory)", median_time(theirs, 3, warmup=0), n=n))
    return rows


if __name__ == "__main__":
    print_table(run("--quick" in sys.argv[1:]))
