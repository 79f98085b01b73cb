"""Curves read from a rank state: DET, the counts at every threshold, gain and lift, and the KS statistic of a
10M-row ``RankAUC`` (streamed in batches of 100k, exact) against scikit-learn's ``det_curve`` and
``confusion_matrix_at_thresholds``, scipy's ``ks_2samp`` and a NumPy sort-and-cumsum gain curve on the arrays.

``python -m benchmarks.bench_curves [--quick]`` (``--quick``: n = 1M).

Each streammetrics row times the query on a state already filled (the stream itself is its own row: the one pass
every query shares); the anchors need every row in memory at once and sort them per call. Two data sets: scores
rounded to 1e-5 (many ties, a state of about 1M distinct scores) and continuous scores (n distinct). The KS row's first query
on a state builds its query engine (a pass over the run): timed on a fresh copy each repeat.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ._util import have, median_time, print_table, row

BATCH = 100_000


def _data(n, tied: bool, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + 1.2 * y
    return y, np.round(s, 5) if tied else s  # rounded: about 1M distinct scores; else n


def _fresh_query(acc, query, repeat):
    """The median time of ``query`` on a fresh copy of ``acc`` (the copy not timed)."""
    times = []
    for _ in range(repeat):
        c = acc.copy()
        t0 = time.perf_counter()
        query(c)
        times.append(time.perf_counter() - t0)
        del c
    return float(np.median(times))


def _numpy_gain(y, s):
    order = np.argsort(-s, kind="stable")
    ys, ss = y[order], s[order]
    last = np.append(ss[1:] != ss[:-1], True)
    found = np.cumsum(ys)[last]
    return np.flatnonzero(last) + 1.0, found / found[-1]


def run(quick: bool = False, repeat: int = 3) -> list[dict]:
    n = 1_000_000 if quick else 10_000_000
    return _rows(n, True, repeat) + _rows(n, False, repeat)


def _rows(n, tied, repeat):
    from streammetrics import RankAUC

    y, s = _data(n, tied)
    what = f"n={n:.0e}, {'scores rounded to 1e-5' if tied else 'distinct scores'}"

    def stream():
        acc = RankAUC()
        for i in range(0, n, BATCH):
            acc.update(y[i : i + BATCH], s[i : i + BATCH])
        return acc.flush()

    rows = [row(f"RankAUC stream, {what}, batches of {BATCH:,}", "streammetrics update + flush", 0.0)]
    rows[0]["median_s"] = median_time(stream, repeat, warmup=0)
    acc = stream()
    sk = have("sklearn")
    if sk:
        from sklearn import metrics as skm
    groups = [
        ("DET curve", lambda: acc.det_curve(), sk and (lambda: skm.det_curve(y, s)), "sklearn det_curve"),
        (
            "confusion matrix at thresholds",
            lambda: acc.confusion_matrix_at_thresholds(),
            sk and (lambda: skm.confusion_matrix_at_thresholds(y, s)),
            "sklearn confusion_matrix_at_thresholds",
        ),
        ("gain curve", lambda: acc.gain_curve(), lambda: _numpy_gain(y, s), "numpy argsort + cumsum"),
        ("lift curve", lambda: acc.lift_curve(), lambda: _numpy_gain(y, s), "numpy argsort + cumsum (gain)"),
    ]
    for name, ours, theirs, who in groups:
        group = f"{name}, {what}"
        rows.append(row(group, "streammetrics RankAUC", median_time(ours, repeat)))
        if theirs:
            rows.append(row(group, who, median_time(theirs, repeat, warmup=0)))
    group = f"KS statistic and threshold, {what}"
    rows.append(row(group, "streammetrics RankAUC (first query)", _fresh_query(acc, RankAUC.ks_statistic, repeat)))
    rows.append(row(group, "streammetrics RankAUC (again)", median_time(acc.ks_statistic, repeat)))
    if have("scipy"):
        from scipy.stats import ks_2samp

        pos, neg = s[y == 1], s[y == 0]
        rows.append(row(group, "scipy ks_2samp", median_time(lambda: ks_2samp(pos, neg), repeat, warmup=0)))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n = 1M instead of 10M")
    print_table(run(ap.parse_args().quick))
