"""Certified bounds of a binned rank state: what the average precision's
interval costs beside the figure itself, and how wide it is.

``python -m benchmarks.bench_bounds [--quick]`` (``--quick``: n = 1M).

For ``max_bins`` of 1000 and 65536 (the command's bins), ``n`` continuous
scores streamed into four shards in batches of 100k and merged: the time of
``finalize()`` and ``average_precision()`` (the binned figure, the baseline)
against the same plus ``average_precision_bounds()``, and against
``roc_curve_bounds()`` and ``pr_curve_bounds()``. Extra columns: the AP
interval's width, whether it holds scikit-learn's exact AP, and the AUC
interval's width beside it. Target (reported, not asserted): the bounds add
at most the time of the figure itself.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

from ._util import have, print_table, row

BATCH = 100_000


def _data(n, seed=4):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + 1.2 * y
    return y, s


def _bounded_rows(n, repeat, max_bins):
    from streammetrics import RankAUC

    y, s = _data(n)
    shards = [RankAUC(max_bins=max_bins) for _ in range(4)]
    for j, i in enumerate(range(0, n, BATCH)):
        shards[j % 4].update(y[i : i + BATCH], s[i : i + BATCH])
    acc = shards[0] + shards[1] + shards[2] + shards[3]
    acc.flush()
    items = acc.state_dict()["lo"].shape[0]

    def figure():
        return acc.finalize().average_precision()

    def with_bounds():
        r = acc.finalize()
        return r.average_precision(), r.average_precision_bounds()

    def curves():
        r = acc.finalize()
        return r.roc_curve(), r.roc_curve_bounds(), r.pr_curve(), r.pr_curve_bounds()

    group = f"AP of a binned state, max_bins={max_bins}, n={n:.0e} in 4 merged shards ({items} items)"
    t_fig, t_bounds, t_curves = _alternating((figure, with_bounds, curves), repeat)
    r = acc.finalize()
    lo, hi = r.average_precision_bounds()
    extra = {"ap_width": hi - lo, "auc_width": r.auc_upper - r.auc_lower}
    if have("sklearn"):
        from sklearn.metrics import average_precision_score

        extra["holds_exact"] = bool(lo <= average_precision_score(y, s) <= hi)
    return [
        row(group, "streammetrics finalize + average_precision (the figure)", t_fig),
        row(group, "streammetrics finalize + average_precision + its bounds", t_bounds, **extra),
        row(group, "streammetrics finalize + both curves and their point bounds", t_curves),
    ]


def _alternating(fns, repeat):
    """Medians of ``fns`` timed in turn, round after round (a shared machine's load
    then weighs on each alike)."""
    for fn in fns:
        fn()  # compile, warm
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [float(np.median(t)) for t in times]


def run(quick: bool = False) -> list[dict]:
    n = 1_000_000 if quick else 4_000_000
    repeat = 9 if quick else 15
    rows = []
    for b in (1000, 65536):
        rows += _bounded_rows(n, repeat, b)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n = 1M instead of 4M")
    print_table(run(ap.parse_args().quick))
