"""Core scores: binary, probabilistic and regression at n = 10M, binary
confusion per slice (1000 slices), the binary Evaluator per slice (1000
slices, against unsliced and pandas + scikit-learn), binary confusion over
100k slices, 200 bootstrap replicates of the binary preset's scores (1M rows,
and 10M without --quick), per-update latency of small batches, and first-use
time in a fresh process.

``python -m benchmarks.bench_core [--quick] [--sliced] [--latency]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from ._util import have, median_time, per_call_time, print_table, row


def _binary_rows(n, repeat):
    import streammetrics as sm

    rng = np.random.default_rng(0)
    y = rng.random(n) < 0.3
    p = rng.random(n) < 0.4
    f = rng.random(n)
    rows = []
    group = f"binary confusion + all scores, n={n:.0e}"

    def ours():
        return sm.BinaryConfusion().update(y, p).finalize()

    rows.append(row(group, "streammetrics BinaryConfusion", median_time(ours, repeat)))
    rows.append(row(group, "numpy np.sum(float64 array) (floor)", median_time(lambda: np.sum(f), repeat)))

    def numpy_expr():
        tp = np.count_nonzero(y & p)
        fp = np.count_nonzero(~y & p)
        fn = np.count_nonzero(y & ~p)
        return tp, fp, fn, n - tp - fp - fn

    rows.append(row(group, "numpy boolean expressions", median_time(numpy_expr, repeat)))
    if have("sklearn"):
        from sklearn import metrics as skm

        def sk():
            cm = skm.confusion_matrix(y, p)
            skm.precision_recall_fscore_support(y, p, average="binary", zero_division=0)
            skm.matthews_corrcoef(y, p)
            return cm

        rows.append(row(group, "sklearn confusion_matrix + prf + mcc", median_time(sk, max(1, repeat // 3), warmup=0)))
    return rows


def _probability_rows(n, repeat):
    import streammetrics as sm

    rng = np.random.default_rng(1)
    y = rng.random(n) < 0.3
    p = rng.random(n)
    group = f"log loss + brier, n={n:.0e}"
    rows = [
        row(
            group,
            "streammetrics ProbabilityScores",
            median_time(lambda: sm.ProbabilityScores().update(y, p).finalize(), repeat),
        )
    ]

    def numpy_expr():
        q = np.where(y, p, 1 - p)
        ll = -np.mean(np.log(np.maximum(q, 1e-12)))
        return ll, np.mean((p - y) ** 2)

    rows.append(row(group, "numpy expressions", median_time(numpy_expr, repeat)))
    if have("sklearn"):
        from sklearn import metrics as skm

        rows.append(
            row(group, "sklearn log_loss", median_time(lambda: skm.log_loss(y, p), max(1, repeat // 3), warmup=0))
        )
        rows.append(
            row(
                group,
                "sklearn log_loss + brier_score_loss",
                median_time(lambda: (skm.log_loss(y, p), skm.brier_score_loss(y, p)), max(1, repeat // 3), warmup=0),
            )
        )
    return rows


def _calibration_rows(n, repeat, n_bins=15):
    import streammetrics as sm

    rng = np.random.default_rng(4)
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    group = f"calibration, {n_bins} uniform bins (table + ECE), n={n:.0e}"
    rows = [
        row(
            group,
            "streammetrics Calibration",
            median_time(lambda: sm.Calibration(n_bins).update(y, p).finalize(), repeat),
        )
    ]
    if have("sklearn"):
        from sklearn.calibration import calibration_curve

        rows.append(
            row(
                group,
                "sklearn calibration_curve (table only)",
                median_time(lambda: calibration_curve(y, p, n_bins=n_bins, strategy="uniform"), max(1, repeat // 2)),
            )
        )
    if have("torch") and have("torchmetrics"):
        import torch
        from torchmetrics.classification import BinaryCalibrationError

        tp, ty = torch.from_numpy(p), torch.from_numpy(y)

        def tm():
            m = BinaryCalibrationError(n_bins=n_bins, norm="l1")
            m.update(tp, ty)
            return m.compute()

        rows.append(row(group, "torchmetrics BinaryCalibrationError", median_time(tm, max(1, repeat // 2))))
    return rows


def _regression_rows(n, repeat):
    import streammetrics as sm

    rng = np.random.default_rng(2)
    y = rng.normal(size=n) * 10 + 5
    p = y + rng.normal(size=n)
    group = f"mse+rmse+mae+mape+r2, n={n:.0e}"
    rows = [
        row(
            group,
            "streammetrics RegressionErrors",
            median_time(lambda: sm.RegressionErrors().update(y, p).finalize(), repeat),
        )
    ]

    def numpy_expr():
        r = y - p
        return np.mean(r * r), np.mean(np.abs(r)), np.mean(np.abs(r) / np.maximum(np.abs(y), 1e-12)), np.var(y)

    rows.append(row(group, "numpy expressions (uncompensated)", median_time(numpy_expr, repeat)))
    if have("sklearn"):
        from sklearn import metrics as skm

        def sk():
            return (
                skm.mean_squared_error(y, p),
                skm.root_mean_squared_error(y, p),
                skm.mean_absolute_error(y, p),
                skm.mean_absolute_percentage_error(y, p),
                skm.r2_score(y, p),
            )

        rows.append(row(group, "sklearn 5 functions", median_time(sk, max(1, repeat // 3), warmup=0)))
    return rows


def _sliced_rows(n, repeat, slices=1000, sk_n=None):
    """Binary confusion per slice: one Sliced pass against one accumulator per
    slice driven from Python, and against pandas groupby (+ scikit-learn per
    group, on ``sk_n`` rows when that is slow)."""
    import streammetrics as sm

    rng = np.random.default_rng(5)
    y = rng.random(n) < 0.3
    p = rng.random(n) < 0.4
    keys = rng.integers(0, slices, n)
    group = f"binary confusion per slice, {slices} slices, n={n:.0e}"

    def ours():
        return sm.Sliced(sm.BinaryConfusion()).update(y, p, by=keys).finalize()

    rows = [row(group, "streammetrics Sliced(BinaryConfusion)", median_time(ours, repeat))]

    def per_slice_from_python():
        order = np.argsort(keys, kind="stable")
        k, ys, ps = keys[order], y[order], p[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        ends = np.r_[starts[1:], n]
        return {int(k[a]): sm.BinaryConfusion().update(ys[a:b], ps[a:b]).finalize() for a, b in zip(starts, ends)}

    rows.append(
        row(
            group,
            "one BinaryConfusion per slice (sort once, update each from Python)",
            median_time(per_slice_from_python, max(1, repeat // 2)),
        )
    )
    if have("pandas"):
        import pandas as pd

        frame = pd.DataFrame({"k": keys, "y": y, "p": p})

        def pandas_counts():
            f = frame.assign(tp=frame.y & frame.p)
            g = f.groupby("k")[["y", "p", "tp"]].sum()
            size = f.groupby("k").size()
            tp = g["tp"]
            return tp, g["p"] - tp, g["y"] - tp, size - g["y"] - g["p"] + tp

        rows.append(
            row(
                group,
                "pandas groupby sums (the four counts only, no scores)",
                median_time(pandas_counts, max(1, repeat // 2)),
            )
        )
    m = sk_n or n
    ys, ss, ks = y[:m], rng.random(m), keys[:m]
    group_auc = f"exact AUC per slice (one accumulator per slice), {slices} slices, n={m:.0e}"
    rows.append(
        row(
            group_auc,
            "streammetrics Sliced(RankAUC)",
            median_time(lambda: sm.Sliced(sm.RankAUC()).update(ys, ss, by=ks).finalize(), max(1, repeat // 2)),
        )
    )

    def auc_per_slice_from_python():
        order = np.argsort(ks, kind="stable")
        k, yy, sc = ks[order], ys[order], ss[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        ends = np.r_[starts[1:], m]
        return {int(k[a]): sm.RankAUC().update(yy[a:b], sc[a:b]).finalize() for a, b in zip(starts, ends)}

    rows.append(
        row(
            group_auc,
            "one RankAUC per slice (sort once, update each from Python)",
            median_time(auc_per_slice_from_python, max(1, repeat // 2)),
        )
    )
    if have("pandas") and have("sklearn"):
        import pandas as pd
        from sklearn import metrics as skm

        group_sk = f"binary confusion + scores per slice, {slices} slices, n={m:.0e}"
        ys, ps, ks = y[:m], p[:m], keys[:m]
        rows.append(
            row(
                group_sk,
                "streammetrics Sliced(BinaryConfusion)",
                median_time(lambda: sm.Sliced(sm.BinaryConfusion()).update(ys, ps, by=ks).finalize(), repeat),
            )
        )
        frame = pd.DataFrame({"k": ks, "y": ys, "p": ps})

        def sk_per_group():
            out = {}
            for key, part in frame.groupby("k"):
                yy, pp = part["y"].to_numpy(), part["p"].to_numpy()
                cm = skm.confusion_matrix(yy, pp, labels=[False, True])
                prf = skm.precision_recall_fscore_support(yy, pp, average="binary", zero_division=0)
                out[key] = (cm, prf, skm.matthews_corrcoef(yy, pp))
            return out

        rows.append(
            row(
                group_sk,
                "pandas groupby + sklearn confusion_matrix + prf + mcc per group",
                median_time(sk_per_group, 1, warmup=0),
            )
        )
    return rows


def _alternated(fns: dict, repeat: int, warmup: int = 1) -> dict:
    """Wall and CPU seconds of each of ``fns`` (name -> callable), the callables
    run in turn round after round (so a spell of load from other jobs hits
    every one of them alike): name -> (wall times, CPU times), one per round."""
    import gc

    for _ in range(warmup):
        for fn in fns.values():
            fn()
    out = {name: ([], []) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            out[name][0].append(time.perf_counter() - t0)
            out[name][1].append(time.process_time() - c0)
    return out


def _sliced_evaluator_rows(n, repeat, slices=1000, sk_n=None):
    """The binary preset (exact AUC, probability scores, calibration, confusion)
    per slice: sliced against unsliced on the same rows, run in turn round
    after round (``ratio`` is the median of the rounds' ratios), and against
    pandas groupby + scikit-learn per group (on ``sk_n`` rows when given, the
    group's label then says so). ``finalize()`` builds no slice's result until
    it is read: a third row reads every slice's result too."""
    import streammetrics as sm

    rng = np.random.default_rng(6)
    y = (rng.random(n) < 0.3).astype(np.int64)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    keys = rng.integers(0, slices, n)
    group = f"Evaluator(task='binary') per slice, {slices} slices, n={n:.0e}"

    def sliced():
        return sm.Sliced(sm.Evaluator(task="binary")).update(y, p, by=keys).finalize()

    def sliced_read():
        r = sliced()
        r.slice_auc  # every slice's result computed
        return r

    def unsliced():
        return sm.Evaluator(task="binary").update(y, p).finalize()

    t = _alternated({"sliced": sliced, "read": sliced_read, "unsliced": unsliced}, repeat)
    med = {k: float(np.median(v[0])) for k, v in t.items()}
    cpu = {k: float(np.median(v[1])) for k, v in t.items()}
    ratio = [a / b for a, b in zip(t["sliced"][0], t["unsliced"][0])]
    ratio_read = [a / b for a, b in zip(t["read"][0], t["unsliced"][0])]
    rows = [
        row(
            group,
            "streammetrics Sliced(Evaluator('binary')) update + finalize",
            med["sliced"],
            ratio_to_unsliced=float(np.median(ratio)),
            ratios=" ".join(f"{r:.2f}" for r in ratio),
            cpu_s=cpu["sliced"],
        ),
        row(
            group,
            "  the same and every slice's result read",
            med["read"],
            ratio_to_unsliced=float(np.median(ratio_read)),
            cpu_s=cpu["read"],
        ),
        row(group, "Evaluator('binary') unsliced, same rows", med["unsliced"], cpu_s=cpu["unsliced"]),
    ]
    if not (have("pandas") and have("sklearn")):
        return rows
    import pandas as pd
    from sklearn import metrics as skm

    m = sk_n or n
    ys, ps, ks = y[:m], p[:m], keys[:m]
    group_sk = group if m == n else f"Evaluator(task='binary') per slice, {slices} slices, n={m:.0e}"
    if m < n:  # on fewer rows: the sliced pass on those rows is the comparison
        rows.append(
            row(
                group_sk,
                "streammetrics Sliced(Evaluator('binary')), every slice read",
                median_time(
                    lambda: sm.Sliced(sm.Evaluator(task="binary")).update(ys, ps, by=ks).finalize().slice_auc, repeat
                ),
            )
        )
    frame = pd.DataFrame({"k": ks, "y": ys, "p": ps})

    def sk_per_group():
        out = {}
        for key, part in frame.groupby("k"):
            yy, pp = part["y"].to_numpy(), part["p"].to_numpy()
            hard = pp >= 0.5
            out[key] = (
                skm.roc_auc_score(yy, pp),
                skm.confusion_matrix(yy, hard, labels=[0, 1]),
                skm.precision_recall_fscore_support(yy, hard, average="binary", zero_division=0),
                skm.matthews_corrcoef(yy, hard),
                skm.log_loss(yy, pp, labels=[0, 1]),
                skm.brier_score_loss(yy, pp),
            )
        return out

    c0, t0 = time.process_time(), time.perf_counter()
    sk_per_group()
    wall, cpu_sk = time.perf_counter() - t0, time.process_time() - c0
    extra = {"cpu_s": cpu_sk}
    if m == n:  # the same rows, in the same run
        extra.update(vs_sliced=wall / med["sliced"], vs_sliced_every_slice_read=wall / med["read"])
    rows.append(
        row(group_sk, "pandas groupby + sklearn AUC, confusion, prf, mcc, log loss, Brier per group", wall, **extra)
    )
    return rows


def _many_slices_rows(n, repeat, slices=100_000):
    """BinaryConfusion(threshold=0.5) over many slices against one unsliced
    pass, run in turn round after round (``ratio`` the median of the rounds'
    ratios), the size of the sliced state, and its save, load and pickle round trip."""
    import streammetrics as sm

    rng = np.random.default_rng(7)
    y = rng.random(n) < 0.3
    p = rng.random(n)
    keys = rng.integers(0, slices, n)
    group = f"BinaryConfusion(threshold=0.5) per slice, {slices} slices, n={n:.0e}"

    def ours():
        return sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=slices).update(y, p, by=keys)

    def unsliced():
        return sm.BinaryConfusion(threshold=0.5).update(y, p)

    sparse = keys * 1_000_003 + 12_345  # the same slices named by sparse integers (ids): hashed

    def ours_sparse():
        return sm.Sliced(sm.BinaryConfusion(threshold=0.5), max_slices=slices).update(y, p, by=sparse)

    acc = ours()
    state = acc.state_dict()
    state_bytes = sum(a.nbytes for a in state.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state")
        acc.save(path)
        file_bytes = os.path.getsize(path)
        io_rows = [
            row(group, "  save(), the state file", median_time(lambda: acc.save(path), max(1, repeat // 3))),
            row(
                group,
                "  load_state(), every slice checked",
                median_time(lambda: sm.load_state(path), max(1, repeat // 3)),
            ),
            row(
                group,
                "  pickle.dumps + pickle.loads",
                median_time(lambda: pickle.loads(pickle.dumps(acc)), max(1, repeat // 3)),
            ),
        ]
    t = _alternated({"sliced": ours, "unsliced": unsliced}, repeat)
    # apart from the rounds: its large temporaries would weigh on the rounds after it
    sparse_s = median_time(ours_sparse, max(1, repeat // 3))
    med = {k: float(np.median(v[0])) for k, v in t.items()}
    ratio = [a / b for a, b in zip(t["sliced"][0], t["unsliced"][0])]

    def read_all():
        return acc.finalize().slice_f1  # every slice's result computed

    rows = [
        row(
            group,
            "streammetrics Sliced(BinaryConfusion(0.5)).update",
            med["sliced"],
            ratio_to_unsliced=float(np.median(ratio)),
            ratios=" ".join(f"{r:.1f}" for r in ratio),
            cpu_s=float(np.median(t["sliced"][1])),
            state_mb=state_bytes / 1e6,
            file_mb=file_bytes / 1e6,
        ),
        row(group, "  the same slices keyed by sparse integers (ids, hashed)", sparse_s),
        row(group, "  and .finalize() (each slice's result built when read)", median_time(acc.finalize, repeat)),
        row(group, "  and .finalize() with every slice's result read", median_time(read_all, max(1, repeat // 3))),
        row(
            group, "BinaryConfusion(0.5) unsliced, same rows", med["unsliced"], cpu_s=float(np.median(t["unsliced"][1]))
        ),
        *io_rows,
    ]
    return rows


def _bootstrap_rows(n, repeat, replicates=200, warmup=1, compare=True):
    import streammetrics as sm

    rng = np.random.default_rng(5)
    y = rng.random(n) < 0.3
    p = rng.random(n)
    keys = np.arange(n, dtype=np.int64)
    group = f"bootstrap, {replicates} replicates of the binary preset's counts and probabilistic scores, n={n:.0e}"

    def preset():
        return sm.Evaluator({"binary": sm.BinaryConfusion(threshold=0.5), "probability": sm.ProbabilityScores()})

    def ours():
        return sm.Bootstrap(preset(), replicates=replicates).update(y, p, key=keys).finalize()

    wall = median_time(ours, repeat, warmup=warmup)
    cpu = time.process_time()
    ours()
    cpu = time.process_time() - cpu  # every thread's: what the run costs when the cores are shared
    rows = [row(group, "streammetrics Bootstrap (keyed Poisson weights)", wall, cpu_s=cpu)]
    rows.append(
        row(
            group,
            "streammetrics Evaluator, no bootstrap (floor / replicates)",
            median_time(lambda: preset().update(y, p).finalize(), repeat),
        )
    )
    if compare and have("torch") and have("torchmetrics"):  # torchmetrics on the same rows
        import torch
        from torchmetrics.classification import BinaryF1Score
        from torchmetrics.wrappers import BootStrapper

        tp, ty = torch.from_numpy(p), torch.from_numpy(y.astype(np.int64))

        def tm():
            m = BootStrapper(BinaryF1Score(), num_bootstraps=replicates, sampling_strategy="poisson")
            m.update(tp, ty)
            return m.compute()

        rows.append(row(group, "torchmetrics BootStrapper(BinaryF1Score), poisson", median_time(tm, 1, warmup=0)))
    return rows


def _bootstrap_calibration_rows(n, repeat, replicates=200):
    """Calibration in the one-pass fold against the same Bootstrap with the table
    folded replicate by replicate (the fold it replaced), runs alternated; alone
    and as the binary Evaluator's member (whose AUC member is folded replicate
    by replicate either way)."""
    import streammetrics as sm

    rng = np.random.default_rng(6)
    y = rng.random(n) < 0.3
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    keys = np.arange(n, dtype=np.int64)

    def run(make, one_pass):
        b = sm.Bootstrap(make(), replicates=replicates)
        if not one_pass:  # every replicate folded on its own
            b._linear = None
        return b.update(y, p, key=keys).finalize()

    rows = []
    for what, make in (
        ("Calibration(15 bins)", lambda: sm.Calibration()),
        ("Evaluator(task='binary')", lambda: sm.Evaluator(task="binary")),
    ):
        group = f"bootstrap, {replicates} replicates of {what}, n={n:.0e}"
        run(make, True), run(make, False)  # compiled
        times = {True: [], False: []}
        for _ in range(repeat):  # alternated: a busy spell hits both
            for one_pass in (True, False):
                t0 = time.perf_counter()
                run(make, one_pass)
                times[one_pass].append(time.perf_counter() - t0)
        rows.append(
            row(group, "streammetrics Bootstrap, calibration in the one-pass fold", float(np.median(times[True])))
        )
        rows.append(row(group, "calibration folded replicate by replicate (before)", float(np.median(times[False]))))
    return rows


def _bootstrap_rank_rows(n, repeat, replicates=200):
    """The binary preset with its exact AUC: every replicate's AUC and average
    precision from one walk over the rows kept, against a rank state per
    replicate (as before: each replicate's RankAUC folded and sorted on its
    own, ``replicates`` x 24 bytes per distinct score), runs alternated; CPU
    time beside the wall clock (the cores are shared)."""
    import streammetrics as sm
    from streammetrics.bootstrap.accumulator import _linear_terms

    rng = np.random.default_rng(8)
    y = rng.random(n) < 0.3
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    keys = np.arange(n, dtype=np.int64)

    def run(walk):
        b = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=replicates)
        if not walk:  # every replicate keeps its own rank state
            b._ranked, b._replica_template = None, b.template
            b._replica_fields = b.template.state_dict()
            b._linear = _linear_terms(b._replica_template)
            b._init_parts()
        return b.update(y, p, key=keys).finalize()

    group = f"bootstrap, {replicates} replicates of Evaluator(task='binary') with exact AUC, n={n:.0e}"
    run(True), run(False)  # compiled
    wall, cpu = {True: [], False: []}, {True: [], False: []}
    for _ in range(repeat):
        for walk in (True, False):
            t0, c0 = time.perf_counter(), time.process_time()
            run(walk)
            wall[walk].append(time.perf_counter() - t0)
            cpu[walk].append(time.process_time() - c0)
    return [
        row(
            group,
            "streammetrics Bootstrap, AUC replicates in one walk over the rows kept",
            float(np.median(wall[True])),
            cpu_s=float(np.median(cpu[True])),
        ),
        row(
            group,
            "a rank state per replicate (before)",
            float(np.median(wall[False])),
            cpu_s=float(np.median(cpu[False])),
        ),
    ]


def _bootstrap_band_rows(n, repeat, replicates=200):
    """A keyed bootstrap of the exact AUC with its ROC and PR bands (every
    replicate's curves from one walk of the rows sorted once) against the same
    bootstrap's scores alone, runs alternated; CPU time beside the wall clock."""
    import streammetrics as sm

    rng = np.random.default_rng(9)
    y = rng.random(n) < 0.3
    s = rng.normal(size=n) + y
    keys = np.arange(n, dtype=np.int64)

    def run(bands):
        b = sm.Bootstrap(sm.RankAUC(), replicates=replicates).update(y, s, key=keys)
        b.finalize()
        if bands:
            b.roc_band(), b.pr_band()

    group = f"bootstrap, {replicates} replicates of RankAUC() with ROC and PR bands, n={n:.0e}"
    run(True)  # compiled
    wall, cpu = {True: [], False: []}, {True: [], False: []}
    for _ in range(repeat):
        for bands in (True, False):
            t0, c0 = time.perf_counter(), time.process_time()
            run(bands)
            wall[bands].append(time.perf_counter() - t0)
            cpu[bands].append(time.process_time() - c0)
    return [
        row(
            group,
            "streammetrics Bootstrap, finalize + roc_band + pr_band",
            float(np.median(wall[True])),
            cpu_s=float(np.median(cpu[True])),
        ),
        row(group, "finalize alone (no band)", float(np.median(wall[False])), cpu_s=float(np.median(cpu[False]))),
    ]


def _bootstrap_only(quick):
    """The bootstrap rows alone: 1M rows beside torchmetrics and with bands, then 10M rows (not with --quick)."""
    rows = _bootstrap_rows(1_000_000, 3)
    rows += _bootstrap_band_rows(1_000_000, 3)
    if not quick:
        rows += _bootstrap_rows(10_000_000, 3, warmup=0, compare=False)
        rows += _bootstrap_band_rows(10_000_000, 1)
    return rows


def _latency_rows(batch=256):
    import streammetrics as sm

    rng = np.random.default_rng(3)
    y = rng.random(batch) < 0.5
    p = rng.random(batch)
    yr = rng.normal(size=batch)
    rows = []
    group = f"per-update latency, batch={batch}"
    acc = sm.BinaryConfusion(threshold=0.5)
    rows.append(row(group, "streammetrics BinaryConfusion(threshold).update", per_call_time(lambda: acc.update(y, p))))
    pacc = sm.ProbabilityScores()
    rows.append(row(group, "streammetrics ProbabilityScores.update", per_call_time(lambda: pacc.update(y, p))))
    racc = sm.RegressionErrors()
    rows.append(row(group, "streammetrics RegressionErrors.update", per_call_time(lambda: racc.update(yr, p))))
    sacc = sm.Sliced(sm.BinaryConfusion(threshold=0.5))
    skeys = rng.integers(0, 8, batch)
    rows.append(
        row(
            group,
            "streammetrics Sliced(BinaryConfusion(threshold)).update, 8 slices",
            per_call_time(lambda: sacc.update(y, p, by=skeys), calls=500),
        )
    )
    from streammetrics._kernels.binary import count_scores

    counts, seen = np.zeros(4, np.int64), np.zeros(1, np.int64)
    yu = y.view(np.uint8)
    rows.append(
        row(group, "bare Numba kernel call (floor)", per_call_time(lambda: count_scores(yu, p, 0.5, seen, counts)))
    )
    guard = acc._guard  # what sharing an accumulator between threads costs each update

    def locked():
        with guard:
            pass

    rows.append(row(group, "the accumulator's lock, taken and released", per_call_time(locked)))
    bare = sm.BinaryConfusion(threshold=0.5)
    bare._guard = contextlib.nullcontext()  # the same update with no lock to take
    calls = 2000
    both = _alternated(
        {k: lambda a=a: [a.update(y, p) for _ in range(calls)] for k, a in (("on", acc), ("off", bare))}, 15
    )
    on, off = (np.array(both[k][0]) / calls for k in ("on", "off"))
    rows.append(row(group, "BinaryConfusion(threshold).update, lock held (in turn)", float(np.median(on))))
    rows.append(row(group, "the same update without its lock (in turn)", float(np.median(off))))
    rows += _evaluator_latency_rows(y, p, batch)
    if have("torch") and have("torchmetrics"):
        import torch
        import torchmetrics

        m = torchmetrics.classification.BinaryF1Score()
        ty, tp = torch.from_numpy(y.astype(np.int64)), torch.from_numpy(p)
        rows.append(row(group, "torchmetrics BinaryF1Score.update", per_call_time(lambda: m.update(tp, ty), calls=300)))
    if have("torch") and have("torcheval"):
        import torch
        from torcheval.metrics import BinaryF1Score

        m2 = BinaryF1Score()
        ty, tp = torch.from_numpy(y.astype(np.int64)), torch.from_numpy(p)
        rows.append(row(group, "torcheval BinaryF1Score.update", per_call_time(lambda: m2.update(tp, ty), calls=300)))
    return rows


def _evaluator_latency_rows(y, p, batch):
    """The binary preset against the sum of its members' own updates, same data."""
    import streammetrics as sm

    group = f"Evaluator(task='binary') per update, batch={batch}"
    ev = sm.Evaluator(task="binary")
    t_ev = per_call_time(lambda: ev.update(y, p))
    members = {
        "BinaryConfusion(threshold=0.5)": sm.BinaryConfusion(threshold=0.5),
        "ProbabilityScores": sm.ProbabilityScores(),
        "Calibration": sm.Calibration(),
        "RankAUC": sm.RankAUC(),
    }
    times = {name: per_call_time(lambda m=m: m.update(y, p)) for name, m in members.items()}
    rows = [row(group, "streammetrics Evaluator(task='binary').update", t_ev)]
    rows.append(row(group, "sum of its members' own updates", sum(times.values())))
    rows += [row(group, f"  {name}.update", t) for name, t in times.items()]
    return rows


_FIRST_USE = """
import sys, time
t0 = time.perf_counter()
import numpy as np
import streammetrics as sm
y = np.array([1, 0, 1, 1, 0]); p = np.array([0.9, 0.2, 0.4, 0.8, 0.6])
{call}
print(time.perf_counter() - t0)
"""

#: what a first use does, for each accumulator or function
FIRST_USES = {
    "BinaryConfusion(threshold)": "sm.BinaryConfusion(threshold=0.5).update(y, p).finalize()",
    "ProbabilityScores": "sm.ProbabilityScores().update(y, p).finalize()",
    "RegressionErrors": "sm.RegressionErrors().update(p, 2 * p).finalize()",
    "auc (one shot)": "sm.auc(y, p)",
    "RankAUC": "sm.RankAUC().update(y, p).finalize()",
    # five scores into at most 2 * 2 items: the bounded state bins the rows
    "RankAUC(max_bins), binned": "sm.RankAUC(max_bins=2).update(y, p).finalize()",
    "RankAUC threshold queries": "a = sm.RankAUC().update(y, p); a.threshold_for(recall=0.9); a.best_threshold('f1')",
    "Calibration": "sm.Calibration().update(y, p).finalize()",
    "multiclass_auc": "sm.multiclass_auc([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1)",
    "top_k_accuracy": "sm.top_k_accuracy([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1, 2)",
    "MultilabelConfusion": "sm.MultilabelConfusion(2).update([[0, 1], [1, 1]], [[0, 1], [1, 0]]).finalize()",
    "Sliced(BinaryConfusion(threshold)), integer array keys": "sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=y).finalize()",
    "MulticlassConfusion": "sm.MulticlassConfusion(3).update([0, 1, 2], [0, 2, 1]).finalize()",
    "ClusterContingency": "sm.ClusterContingency().update([0, 1, 2], [0, 2, 1]).finalize()",
    "Evaluator(task='binary')": "sm.Evaluator(task='binary').update(y, p).finalize()",
    # what a notebook or a script shows: the report rendered (its best-F1 row is a threshold query)
    "Evaluator(task='binary'), report printed": "print(sm.Evaluator(task='binary').update(y, p).finalize())",
    "Sliced(BinaryConfusion(threshold)), keys a list": "sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=[1, 2, 1, 2, 1]).finalize()",
    "silhouette_score, 50 points": "sm.silhouette_score(np.random.rand(50, 3), np.arange(50) % 3)",
    "ClassProbabilityScores": "sm.ClassProbabilityScores(3).update([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1).finalize()",
    "ClassCalibration": "sm.ClassCalibration(3).update([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1).finalize()",
    "TopKAccuracy": "sm.TopKAccuracy(2, n_classes=3).update([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1).finalize()",
    "MulticlassRankAUC": "sm.MulticlassRankAUC(3).update([0, 1, 2, 1], np.eye(3)[[0, 1, 2, 0]] * 0.7 + 0.1).finalize()",
    "MultilabelRankAUC": "sm.MultilabelRankAUC(2).update([[0, 1], [1, 1], [1, 0]], [[0.2, 0.9], [0.7, 0.6], [0.8, 0.1]]).finalize()",
    "Bootstrap(BinaryConfusion(threshold))": "sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=20).update(y, p).finalize()",
    "Rolling(RankAUC)": "sm.Rolling(sm.RankAUC(), window=3).update(y, p).finalize()",
    "Rolling(BinaryConfusion(threshold))": "sm.Rolling(sm.BinaryConfusion(threshold=0.5), window=3).update(y, p).finalize()",
    "Windowed(BinaryConfusion(threshold))": "sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=2, keep=2).update(y, p).finalize()",
    "Decayed(BinaryConfusion(threshold))": "sm.Decayed(sm.BinaryConfusion(threshold=0.5), half_life=2).update(y, p).finalize()",
    "History(BinaryConfusion(threshold))": "sm.History(sm.BinaryConfusion(threshold=0.5)).update(y, p, step=1).finalize()",
    "RetrievalScores": "sm.RetrievalScores(k=(1, 3)).update([0, 0, 1, 1, 1], [1, 0, 2, 0, 1], p).finalize()",
    "ndcg_score": "sm.ndcg_score([[3, 2, 0, 1]], [[0.9, 0.8, 0.1, 0.4]], k=2)",
    "ErrorQuantiles": "sm.ErrorQuantiles().update(p, 2 * p).finalize()",
    "TweedieDeviance": "sm.TweedieDeviance(power=1.5).update(p, 2 * p).finalize()",
    "QuantileCalibration": "sm.QuantileCalibration().update(y, p).finalize()",
    # the command's output goes to a pipe, as when its stdout is not a terminal
    "streammetrics demo (5M rows)": "from streammetrics.cli import main; main(['demo'])",
    # every task's kernels compiled ahead (cold), or found compiled (warm)
    "streammetrics compile": "from streammetrics.cli import main; main(['compile'])",
}


def _first_use_rows(quick: bool):
    """Import + first use in a fresh process, with an empty (cold) and a filled
    (warm) Numba cache, for each accumulator or function; beside them the
    floor no change of the package can cut: a fresh process that imports numpy
    and Numba and calls one small cached kernel (Numba's first kernel load
    sets up its compiler and, where SciPy is installed, imports it). Each row
    also carries the processes' CPU seconds (``cpu_s``), steadier than the
    wall clock on a shared machine."""
    import compileall
    import resource

    import streammetrics

    # the package's bytecode, as an installation has it (pip compiles it; a
    # checkout run with PYTHONDONTWRITEBYTECODE would compile every module
    # from source in each fresh process, about 0.1-0.4 s)
    compileall.compile_dir(os.path.dirname(streammetrics.__file__), quiet=1)
    rows = []
    cache = tempfile.mkdtemp(prefix="sm-numba-cache-")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    repeat = 1 if quick else 3

    def once(script):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return float(out.stdout.strip().splitlines()[-1]), cpu

    def fresh_cache():
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)

    def timed(script, runs):
        wall, cpu = zip(*runs)
        return float(np.median(wall)), float(np.median(cpu))

    try:
        fresh_cache()
        floor_script = _FIRST_USE.replace("import streammetrics as sm\n", "").format(
            call="from streammetrics._kernels.checks import first_nonfinite; first_nonfinite(p)"
        )
        once(floor_script)  # fills the cache
        floor, floor_cpu = timed(floor_script, [once(floor_script) for _ in range(repeat)])
        for name, call in FIRST_USES.items():
            script = _FIRST_USE.format(call=call)
            cold = []
            for _ in range(repeat):
                fresh_cache()
                cold.append(once(script))
            warm = timed(script, [once(script) for _ in range(repeat)])
            cold = timed(script, cold)
            group = f"first use in a fresh process (import + update + finalize): {name}"
            rows.append(row(group, "streammetrics, warm Numba cache", warm[0], cpu_s=warm[1]))
            rows.append(row(group, "streammetrics, cold Numba cache", cold[0], cpu_s=cold[1]))
            rows.append(
                row(group, "floor: numpy + Numba imported, one small cached kernel called", floor, cpu_s=floor_cpu)
            )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return rows


def _sliced_rows_more(quick: bool, sklearn_full: bool = False) -> list[dict]:
    """The sliced Evaluator and 100k-slice rows; scikit-learn per group runs on
    a tenth of the rows unless ``sklearn_full`` (minutes at 10M rows)."""
    n = 1_000_000 if quick else 10_000_000
    repeat = 3 if quick else 5
    # the 100k-slice rounds take milliseconds and their ratios vary twofold on a
    # shared machine: fifteen of them for a steadier median
    return _sliced_evaluator_rows(n, repeat, sk_n=None if sklearn_full else n // 10) + _many_slices_rows(n, 3 * repeat)


def run(quick: bool = False) -> list[dict]:
    n = 1_000_000 if quick else 10_000_000
    repeat = 3 if quick else 7
    rows = []
    rows += _binary_rows(n, repeat)
    rows += _probability_rows(n, repeat)
    rows += _calibration_rows(n, repeat)
    rows += _regression_rows(n, repeat)
    rows += _sliced_rows(n, repeat, sk_n=n // 10)
    rows += _sliced_rows_more(quick)
    rows += _bootstrap_rows(1_000_000, 3)
    rows += _bootstrap_rank_rows(50_000 if quick else 200_000, 1 if quick else 3)
    rows += _bootstrap_band_rows(200_000 if quick else 1_000_000, 3)
    if not quick:
        rows += _bootstrap_rows(n, 1, warmup=0, compare=False)  # compiled by the 1M rows
    rows += _latency_rows()
    rows += _first_use_rows(quick)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sliced", action="store_true", help="only the rows of the sliced Evaluator and of 100k slices")
    ap.add_argument(
        "--bootstrap",
        action="store_true",
        help="only the bootstrap rows (1M rows beside torchmetrics' BootStrapper and with ROC and PR bands, then 10M)",
    )
    ap.add_argument(
        "--bootstrap-calibration",
        action="store_true",
        help="only the rows of Calibration in the one-pass bootstrap fold against "
        "replicate by replicate, alone and in the binary Evaluator (1M rows)",
    )
    ap.add_argument(
        "--bootstrap-rank",
        action="store_true",
        help="only the rows of the binary preset's exact AUC replicates in one walk "
        "against a rank state per replicate (200k rows)",
    )
    ap.add_argument("--latency", action="store_true", help="only the rows of per-update latency (the lock's cost)")
    ap.add_argument(
        "--first-use", action="store_true", help="only the rows of first use in a fresh process, cold and warm"
    )
    ap.add_argument(
        "--sklearn-full",
        action="store_true",
        help="with --sliced: pandas + scikit-learn per group on every row, not a tenth",
    )
    args = ap.parse_args()
    if args.latency:
        print_table(_latency_rows())
    elif args.first_use:
        print_table(_first_use_rows(args.quick))
    elif args.bootstrap:
        print_table(_bootstrap_only(args.quick))
    elif args.bootstrap_rank:
        print_table(_bootstrap_rank_rows(50_000 if args.quick else 200_000, 3))
    elif args.bootstrap_calibration:
        print_table(_bootstrap_calibration_rows(100_000 if args.quick else 1_000_000, 3))
    else:
        print_table(_sliced_rows_more(args.quick, args.sklearn_full) if args.sliced else run(args.quick))
