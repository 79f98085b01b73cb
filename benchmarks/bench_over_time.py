"""Rolling windows: the exact rolling AUC as a monitor reads it, and a rolling confusion.

``python -m benchmarks.bench_over_time [--quick] [--verify]``

* AUC of the last W rows, W = 1,000, 100,000 and 1,000,000: one stream (a
  fifth of it positives, continuous scores) fed in batches of 1,000 rows,
  the AUC read after every batch, by ``Rolling(RankAUC(), window=W)``,
  river's ``RollingROCAUC`` (fed row by row, as it takes rows) and
  torcheval's ``WindowedBinaryAUROC`` (fed the batches as tensors). The
  stream is 200k rows, and W + 200k for W = 1,000,000 (so that rows leave
  the window). Target: at least 10x river's rows per second. The anchors'
  runs at W >= 100,000 are timed once (torcheval recomputes the window at
  each read: minutes); ``--skip-slow`` leaves torcheval out at W = 1,000,000.
* ``Rolling(BinaryConfusion(threshold=0.5), window=W)`` against a plain
  ``BinaryConfusion`` on the same batches, per row. Target: at most 2x.

``--verify`` checks the rolling AUC against ``sklearn.metrics.roc_auc_score``
on the last W rows after every batch of a 1M-row stream (W = 1,000 and
100,000; random batch sizes, tied scores, weights) and prints the largest
difference. Times are medians of repeats on a shared machine: read the ratios.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ._util import have, median_time, print_table, row

BATCH = 1000


def _stream(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.2).astype(np.int64)
    s = rng.normal(size=n) + y
    return y, s


def _ours(y, s, window):
    from streammetrics import RankAUC, Rolling

    acc = Rolling(RankAUC(), window=window)
    last = 0.0
    for lo in range(0, y.shape[0], BATCH):
        acc.update(y[lo : lo + BATCH], s[lo : lo + BATCH])
        last = acc.finalize().auc
    return last


def _river(y, s, window):
    from river.metrics import RollingROCAUC

    m = RollingROCAUC(window_size=window)
    last = 0.0
    ys, ss = y.astype(bool).tolist(), s.tolist()
    for lo in range(0, len(ys), BATCH):
        for yi, si in zip(ys[lo : lo + BATCH], ss[lo : lo + BATCH]):
            m.update(yi, si)
        last = m.get()
    return last


def _torcheval(y, s, window):
    import torch
    from torcheval.metrics import WindowedBinaryAUROC

    m = WindowedBinaryAUROC(max_num_samples=window)
    ty, ts = torch.from_numpy(y.astype(np.float64)), torch.from_numpy(s)
    last = 0.0
    for lo in range(0, y.shape[0], BATCH):
        m.update(ts[lo : lo + BATCH], ty[lo : lo + BATCH])
        last = float(m.compute())
    return last


def _auc_rows(windows, rows, repeat, skip_slow=False):
    out = []
    for window in windows:
        n = rows if window < rows else window + rows
        y, s = _stream(n)
        group = f"rolling AUC, W={window:,}, {n:,} rows in batches of {BATCH:,}, AUC read after each"
        runs = [("streammetrics Rolling(RankAUC)", _ours)]
        runs += [("river RollingROCAUC", _river)] if have("river") else []
        runs += [("torcheval WindowedBinaryAUROC", _torcheval)] if have("torcheval") else []
        values = {}
        for name, fn in runs:
            slow = not name.startswith("streammetrics") and window >= 100_000
            if skip_slow and name.startswith("torcheval") and window >= 1_000_000:
                continue
            t = median_time(lambda fn=fn: values.__setitem__(name, fn(y, s, window)), 1 if slow else repeat, 0)
            out.append(row(group, name, t, rows_per_s=f"{n / t / 1e6:.2f}M", auc=f"{values[name]:.6f}"))
    return out


def _confusion_rows(windows, rows, repeat):
    from streammetrics import BinaryConfusion, Rolling

    y, s = _stream(rows, 1)
    out = []
    for window in windows:
        group = f"BinaryConfusion(threshold=0.5) per row, {rows:,} rows in batches of {BATCH:,}, W={window:,}"
        for name, make in (
            ("streammetrics Rolling(BinaryConfusion)", lambda: Rolling(BinaryConfusion(threshold=0.5), window=window)),
            ("plain BinaryConfusion", lambda: BinaryConfusion(threshold=0.5)),
        ):

            def feed(make=make):
                acc = make()
                for lo in range(0, rows, BATCH):
                    acc.update(y[lo : lo + BATCH], s[lo : lo + BATCH])

            t = median_time(feed, repeat)
            out.append(row(group, name, t, ns_per_row=f"{t / rows * 1e9:.0f}"))
    return out


def verify(n=1_000_000, windows=(1000, 100_000), seed=3) -> None:
    """The rolling AUC against scikit-learn on the last W rows after every batch."""
    from sklearn.metrics import roc_auc_score

    from streammetrics import RankAUC, Rolling

    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = np.round(rng.normal(size=n) + y, 2)  # ties
    w = rng.random(n) * 2
    for window in windows:
        for weighted in (False, True):
            acc = Rolling(RankAUC(), window=window)
            worst, checks, lo = 0.0, 0, 0
            t0 = time.perf_counter()
            while lo < n:
                hi = min(n, lo + int(rng.integers(1, 2 * BATCH)))
                acc.update(y[lo:hi], s[lo:hi], sample_weight=w[lo:hi] if weighted else None)
                a = max(0, hi - window)
                ref = roc_auc_score(y[a:hi], s[a:hi], sample_weight=w[a:hi] if weighted else None)
                worst = max(worst, abs(acc.finalize().auc - ref))
                checks += 1
                lo = hi
            print(
                f"W={window:,} weighted={weighted}: {checks} batches, largest |auc - sklearn| = {worst:.2e} "
                f"({time.perf_counter() - t0:.0f} s)"
            )


def run(quick: bool = False, skip_slow: bool = False) -> list[dict]:
    windows = (1000, 100_000) if quick else (1000, 100_000, 1_000_000)
    rows = 200_000
    confusion = _confusion_rows((1000, 100_000), 1_000_000 if not quick else rows, 5)
    return confusion + _auc_rows(windows, rows, 3, skip_slow)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="W = 1,000 and 100,000 only")
    ap.add_argument("--verify", action="store_true", help="check against scikit-learn on a 1M-row stream")
    ap.add_argument("--skip-slow", action="store_true", help="no torcheval at W = 1,000,000")
    args = ap.parse_args(argv)
    if args.verify:
        verify()
        return
    print_table(run(args.quick, args.skip_slow))


if __name__ == "__main__":
    main()
