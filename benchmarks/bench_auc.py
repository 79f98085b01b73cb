"""AUC: one-shot at n = 10M against scikit-learn and against sorting the scores,
streaming 10M rows in batches of 100k (exact and bounded memory), per-update
latency of small batches and the amortized cost of a stream of them, and
merging 16 shard states, and threshold queries on an exact state.

``python -m benchmarks.bench_auc [--quick]`` (``--quick``: n = 1M).

Targets (reported, not asserted): one-shot ``auc`` and the streamed exact AUC
at 10M at least 20x faster than ``sklearn.metrics.roc_auc_score`` and within
1.5x of ``np.sort`` of the scores, in the same run; exact streaming at least 10x faster than torchmetrics' exact
``BinaryAUROC``; bounded mode (``max_bins=1000``) within 2x of the exact
throughput, with a state of at most 100 KB (a row with 65536 bins, the command's
``--max-bins 65536``, bins every batch of 1M); an update of 256 rows in about
10 us. ``RankAUC`` appends each batch to a buffer of pending rows and sorts
them in bulk (when the buffer is full, or at ``finalize``), so the latency
rows time the append alone; the "batches of 256" streaming rows include the
bulk sorting, amortized. ``held_bytes`` is what the accumulator holds after
the updates, pending rows included (the buffer's whole capacity: it grows
fourfold as rows arrive, up to its bound); ``state_bytes`` is its saved state. In exact mode
``finalize`` sorts the pending rows into the state's run and counts U over
it, on one thread. ``RankAUC(max_memory=...)`` is the exact mode within a
memory budget (sorted runs spilled to temporary files past it); the memory
rows measure, in a fresh process each, the peak of numpy's allocations
(tracemalloc) while streaming and finalizing, in bytes per distinct score
and against ``2 x (state + one batch)``; ``--only memory --large`` adds 50M.
The spilled
report rows (``--only report-memory``) trace what a binary report asks of a
spilled state (finalize, average precision, five operating points), read from
its runs chunk by chunk, against building its merged run in memory.
Target: 100 threshold queries after an exact pass over
10M rows take at most 25% of the pass (``share_of_pass``; the rows also give
the first query's share, which reads the state, and partial_auc's, which
walks the scores down to its ``max_fpr``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ._util import have, median_time, per_call_time, print_table, row

BATCH = 100_000
MAX_BINS = 1000


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + 1.2 * y  # continuous: n distinct scores
    return y, s


def _one_shot_rows(n, repeat):
    from streammetrics import auc

    y, s = _data(n)
    group = f"AUC one-shot, n={n:.0e} distinct float64 scores"
    rows = [row(group, "streammetrics auc", median_time(lambda: auc(y, s), repeat))]
    rows.append(row(group, "numpy np.sort(s) (floor: sorting alone)", median_time(lambda: np.sort(s), repeat)))
    rows.append(row(group, "numpy np.argsort(s)", median_time(lambda: np.argsort(s), max(1, repeat // 2))))
    if have("sklearn"):
        from sklearn.metrics import roc_auc_score

        rows.append(
            row(group, "sklearn roc_auc_score", median_time(lambda: roc_auc_score(y, s), max(1, repeat // 3), warmup=0))
        )
    w = np.random.default_rng(1).random(n)
    group = f"AUC one-shot with sample_weight, n={n:.0e}"
    rows.append(row(group, "streammetrics auc", median_time(lambda: auc(y, s, sample_weight=w), max(1, repeat // 2))))
    if have("sklearn"):
        rows.append(
            row(
                group,
                "sklearn roc_auc_score",
                median_time(lambda: roc_auc_score(y, s, sample_weight=w), max(1, repeat // 3), warmup=0),
            )
        )
    return rows


def _peak_child(n, budget, batch):
    """Run in a fresh process: stream n distinct scores, finalize, report peak
    traced bytes (numpy's allocations) and the time."""
    import json
    import tracemalloc

    from streammetrics import RankAUC

    y, s = _data(n, seed=8)
    warm = RankAUC(max_memory=None if budget is None else 1 << 20)
    for i in range(0, min(n, 4 * batch), batch):
        warm.update(y[i : i + batch], s[i : i + batch])
    warm.finalize()
    warm.close()
    acc = RankAUC(max_memory=budget)
    tracemalloc.start()
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        acc.update(y[i : i + batch], s[i : i + batch])
    r = acc.finalize()
    t = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    acc.close()
    print(json.dumps({"peak": peak, "t": t, "auc": r.auc}))


def _memory_rows(sizes, batch=BATCH):
    """Peak bytes per distinct score while streaming and finalizing, each run in
    its own process (the data are made before tracing starts)."""
    import json
    import os
    import subprocess
    import sys

    rows = []
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for n in sizes:
        group = (
            f"AUC exact peak memory, n={n:.0e} distinct scores in batches of {batch:.0e} "
            "(update all + finalize; state = 24 B per distinct score)"
        )
        state = 24 * n
        for label, budget in (("in memory", None), ("max_memory = state / 8 (spills)", state // 8)):
            code = f"from benchmarks.bench_auc import _peak_child; _peak_child({n}, {budget!r}, {batch})"
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=1800
            )
            if out.returncode:
                raise RuntimeError(out.stderr)
            d = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(
                row(
                    group,
                    f"streammetrics RankAUC() {label}",
                    d["t"],
                    peak_bytes_per_score=d["peak"] / n,
                    peak_over_2x_state_plus_batch=d["peak"] / (2 * (state + 16 * batch)),
                    budget_bytes=budget if budget is not None else "none",
                )
            )
    return rows


def _report_child(n, budget, batch, merged, weighted=False):
    """Run in a fresh process: stream n distinct scores into a spilled state,
    then finalize and answer what a binary report asks (AUC, average precision
    and its bounds, the operating points at 0.5, the best F1, recall >= 0.9,
    precision >= 0.8, fpr <= 0.1), reading the runs chunk by chunk, or with
    ``merged`` from the merged run built in memory (what reading them did
    before); with ``weighted``, uniform random weights. Reports the peak
    traced bytes from the end of the updates (what the accumulator holds
    then included) and the report's time."""
    import json
    import tracemalloc

    from streammetrics import RankAUC
    from streammetrics.metrics.ranking.points import Points

    y, s = _data(n, seed=9)
    w = np.random.default_rng(2).random(n) if weighted else None
    cut = (lambda i, j: None) if w is None else (lambda i, j: w[i:j])
    warm = RankAUC(max_memory=1 << 16)
    for i in range(0, 20_000, 5_000):
        warm.update(y[i : i + 5_000], s[i : i + 5_000], sample_weight=cut(i, i + 5_000))
    r = warm.finalize()
    r.average_precision(), r.best_threshold("f1"), r.threshold_for(precision=0.8)
    r.at_threshold(0.5), r.threshold_for(recall=0.9), r.threshold_for(fpr=0.1)
    warm.close()
    acc = RankAUC(max_memory=budget)
    tracemalloc.start()
    for i in range(0, n, batch):
        acc.update(y[i : i + batch], s[i : i + batch], sample_weight=cut(i, i + batch))
    assert acc._strategy.spilled
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    r = acc.finalize()
    if merged:
        ops = Points(acc._strategy.run(), r.n, weighted)
        ap = ops.average_precision()
    else:
        ap = r.average_precision()
        r.average_precision_bounds()
        ops = r
    answers = [
        ops.at_threshold(0.5),
        ops.best_threshold("f1"),
        ops.threshold_for(recall=0.9),
        ops.threshold_for(precision=0.8),
        ops.threshold_for(fpr=0.1),
    ]
    t = time.perf_counter() - t0
    report_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    acc.close()
    print(json.dumps({"peak": report_peak, "t": t, "ap": ap, "best": answers[1].threshold}))


def _report_memory_rows(n=5_000_000, budget=16 << 20, batch=BATCH, repeat=1, weighted=False):
    """The report's figures of a spilled state: peak traced bytes and time of
    finalize + average precision + the operating points, read chunk by chunk
    against the merged run built in memory (the baseline), each in a fresh
    process, alternated ``repeat`` times (medians)."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    group = (
        f"AUC spilled state's report, n={n:.0e} distinct scores{', weighted' if weighted else ''}, "
        f"max_memory={budget >> 20} MB, batches of {batch:.0e} (finalize + AP + 5 operating "
        "points; traced peak of those, the state held included)"
    )
    got = {False: [], True: []}
    for _ in range(repeat):
        for merged in (True, False):
            code = (
                f"from benchmarks.bench_auc import _report_child; "
                f"_report_child({n}, {budget}, {batch}, {merged}, {weighted})"
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, timeout=3600
            )
            if out.returncode:
                raise RuntimeError(out.stderr)
            got[merged].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = []
    for merged, label in (
        (False, "streammetrics streamed from the runs"),
        (True, "merged run built in memory (baseline)"),
    ):
        ds = got[merged]
        peak = float(np.median([d["peak"] for d in ds]))
        rows.append(
            row(
                group,
                label,
                float(np.median([d["t"] for d in ds])),
                peak_bytes=int(peak),
                peak_over_budget_plus_batch=peak / (budget + 16 * batch),
                peak_bytes_per_score=peak / n,
            )
        )
    same = all(a["best"] == b["best"] for a, b in zip(got[False], got[True]))
    rel = max(abs(a["ap"] - b["ap"]) / b["ap"] for a, b in zip(got[False], got[True]))
    rows[0]["same_best_f1_threshold"] = same
    rows[0]["ap_rel_diff"] = rel
    return rows


def _state_bytes(acc) -> int:
    return int(sum(a.nbytes for a in acc.state_dict().values()))


def _timed_stream(make, batches, repeat):
    """Median time of folding ``batches`` into ``make()`` and finalizing; also
    the last accumulator, its result and the bytes it held before finalize."""
    last = {}

    def go():
        acc = make()
        for yb, sb in batches:
            acc.update(yb, sb)
        last["held"] = acc.nbytes
        last["acc"], last["r"] = acc, acc.finalize()

    t = median_time(go, repeat)
    return t, last["acc"], last["r"], last["held"]


def _streaming_rows(n, repeat):
    from streammetrics import RankAUC, auc

    y, s = _data(n, seed=2)
    exact_value = auc(y, s)
    batches = [(y[i : i + BATCH], s[i : i + BATCH]) for i in range(0, n, BATCH)]
    group = f"AUC streaming, n={n:.0e} in batches of {BATCH:.0e}, update all + finalize"
    rows = []
    for impl, make in (
        ("streammetrics RankAUC() exact", lambda: RankAUC()),
        (f"streammetrics RankAUC(max_bins={MAX_BINS})", lambda: RankAUC(max_bins=MAX_BINS)),
        (f"streammetrics RankAUC(max_memory={3 * n}) exact, spills (state / 8)", lambda: RankAUC(max_memory=3 * n)),
    ):
        t, acc, r, held = _timed_stream(make, batches, repeat)
        extra = {"rows_per_s": n / t, "held_bytes": held, "state_bytes": _state_bytes(acc)}
        if acc.max_bins is not None:
            extra["width"] = r.auc_upper - r.auc_lower
            extra["holds_exact"] = bool(r.auc_lower <= exact_value <= r.auc_upper)
        else:
            extra["equals_one_shot"] = r.auc == exact_value
            extra["spilled_bytes"] = acc.spilled_bytes
        acc.close()
        rows.append(row(group, impl, t, **extra))
    rows.append(row(group, "numpy np.sort(s) (floor: sorting alone)", median_time(lambda: np.sort(s), repeat)))
    if have("sklearn"):
        from sklearn.metrics import roc_auc_score

        rows.append(
            row(
                group,
                "sklearn roc_auc_score (one-shot, in memory)",
                median_time(lambda: roc_auc_score(y, s), max(1, repeat // 3), warmup=0),
            )
        )
    if have("torch") and have("torchmetrics"):
        import torch
        from torchmetrics.classification import BinaryAUROC

        tb = [(torch.from_numpy(sb), torch.from_numpy(yb)) for yb, sb in batches]

        def tm():
            m = BinaryAUROC(thresholds=None)
            for sb, yb in tb:
                m.update(sb, yb)
            return m.compute()

        rows.append(row(group, "torchmetrics BinaryAUROC(thresholds=None)", median_time(tm, max(1, repeat // 2))))
    if have("torch") and have("torcheval"):
        import torch
        from torcheval.metrics import BinaryAUROC as EvalAUROC

        tb = [(torch.from_numpy(sb), torch.from_numpy(yb)) for yb, sb in batches]

        def te():
            m = EvalAUROC()
            for sb, yb in tb:
                m.update(sb, yb)
            return m.compute()

        rows.append(row(group, "torcheval BinaryAUROC", median_time(te, max(1, repeat // 2))))
    return rows


def _fine_bins_rows(n, repeat):
    """Bounded with the command's ``--max-bins 65536``: every batch is binned, against the exact state."""
    from streammetrics import RankAUC

    y, s = _data(n, seed=4)
    batch = n // 8
    batches = [(y[i : i + batch], s[i : i + batch]) for i in range(0, n, batch)]
    group = f"AUC streaming, n={n:.0e} in batches of {batch:.0e}, update all + finalize, 65536 bins"
    rows = []
    for impl, make in (
        ("streammetrics RankAUC() exact", RankAUC),
        ("streammetrics RankAUC(max_bins=65536)", lambda: RankAUC(65536)),
    ):
        t, _, r, held = _timed_stream(make, batches, repeat)
        rows.append(row(group, impl, t, rows_per_s=n / t, held_bytes=held, width=r.auc_upper - r.auc_lower))
    return rows


def _latency_rows(batch=256):
    from streammetrics import RankAUC

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, batch)
    group = f"AUC per-update latency, batch={batch} (fresh scores each call)"
    pool = [rng.normal(size=batch) for _ in range(64)]
    rows = []
    for impl, acc in (
        ("streammetrics RankAUC().update", RankAUC()),
        (f"streammetrics RankAUC(max_bins={MAX_BINS}).update", RankAUC(max_bins=MAX_BINS)),
    ):
        it = iter(range(10**9))
        rows.append(
            row(group, impl, per_call_time(lambda acc=acc, it=it: acc.update(y, pool[next(it) % 64]), calls=1000))
        )
    return rows


def _small_batch_rows(n, repeat, batch=256):
    from streammetrics import RankAUC

    y, s = _data(n, seed=5)
    batches = [(y[i : i + batch], s[i : i + batch]) for i in range(0, n, batch)]
    group = f"AUC streaming, n={n:.0e} in batches of {batch}, update all + finalize (amortized per update)"
    rows = []
    for impl, make in (
        ("streammetrics RankAUC() exact", lambda: RankAUC()),
        (f"streammetrics RankAUC(max_bins={MAX_BINS})", lambda: RankAUC(max_bins=MAX_BINS)),
    ):
        t, _, _, held = _timed_stream(make, batches, repeat)
        rows.append(row(group, impl, t / len(batches), rows_per_s=n / t, held_bytes=held))
    return rows


def _bounded_size_rows(n=1_000_000, batch=1_000):
    """A bounded state fed ``n`` distinct scores in small batches: what it holds (target: at most 100 KB at
    ``max_bins=1000``) and its saved state."""
    from streammetrics import RankAUC

    y, s = _data(n, seed=6)
    acc = RankAUC(max_bins=MAX_BINS)
    t0 = time.perf_counter()
    for i in range(0, n, batch):
        acc.update(y[i : i + batch], s[i : i + batch])
    t = time.perf_counter() - t0
    group = f"AUC bounded state size, n={n:.0e} distinct scores in batches of {batch}"
    impl = f"streammetrics RankAUC(max_bins={MAX_BINS})"
    return [row(group, impl, t, rows_per_s=n / t, held_bytes=acc.nbytes, state_bytes=_state_bytes(acc))]


def _merge_rows(n, repeat, shards=16):
    from streammetrics import RankAUC, auc

    y, s = _data(n, seed=4)
    exact_value = auc(y, s)
    rows = []
    group = f"merge {shards} shard states ({n:.0e} rows in all) + finalize"
    for impl, make in (
        ("streammetrics RankAUC() exact", lambda: RankAUC()),
        (f"streammetrics RankAUC(max_bins={MAX_BINS})", lambda: RankAUC(max_bins=MAX_BINS)),
    ):
        parts = []
        for k in range(shards):
            acc = make()
            ys, ss = y[k::shards], s[k::shards]
            for i in range(0, ys.shape[0], BATCH):
                acc.update(ys[i : i + BATCH], ss[i : i + BATCH])
            acc.flush()  # each shard ships one merged run (as it would when pickled)
            parts.append(acc)
        last = {}

        def go(parts=parts, make=make, last=last):
            merged = make()
            for p in parts:
                merged.merge(p)
            last["acc"], last["r"] = merged, merged.finalize()

        t = median_time(go, repeat)
        extra = {"shard_state_bytes": _state_bytes(parts[0]), "merged_state_bytes": _state_bytes(last["acc"])}
        if last["acc"].max_bins is not None:
            r = last["r"]
            extra["width"] = r.auc_upper - r.auc_lower
            extra["holds_exact"] = bool(r.auc_lower <= exact_value <= r.auc_upper)
        rows.append(row(group, impl, t, **extra))
    return rows


def _operating_rows(n, repeat, queries=100):
    """One exact pass over ``n`` rows (update all + finalize), then ``queries``
    threshold queries on its state: 22% each at_threshold, threshold_for
    recall / precision / fpr, and the rest split between best_threshold (f1,
    mcc, youden, balanced_accuracy, accuracy, jaccard in turn) and partial_auc
    (max_fpr drawn from [0.01, 0.2]). The first query after a change builds
    what the queries read, so every timing of the queries starts from a state
    that has none: on the state as the pass leaves it (finalize sorted the
    pending rows into its run) and on the same state flushed into one run. The
    queries' time is also split: building, partial_auc, the others."""
    from streammetrics import RankAUC

    y, s = _data(n, seed=6)
    batches = [(y[i : i + BATCH], s[i : i + BATCH]) for i in range(0, n, BATCH)]
    rng = np.random.default_rng(7)
    each = queries * 22 // 100
    rest = queries - 4 * each
    ts = rng.normal(size=each) + 0.6
    rates = rng.uniform(0.05, 0.95, size=each)
    scores = ("f1", "mcc", "youden", "balanced_accuracy", "accuracy", "jaccard")
    best = [scores[i % len(scores)] for i in range(rest // 2)]
    fprs = rng.uniform(0.01, 0.2, size=rest - len(best))

    def ask(acc):
        """Seconds: building, partial_auc, every other query."""
        acc._ops = None  # as after an update: built again
        t0 = time.perf_counter()
        acc.at_threshold(ts[0])
        t1 = time.perf_counter()
        for t in ts[1:]:
            acc.at_threshold(t)
        for r in rates:
            acc.threshold_for(recall=r)
            acc.threshold_for(precision=min(r + 0.3, 0.99))
            acc.threshold_for(fpr=r)
        for name in best:
            acc.best_threshold(name)
        t2 = time.perf_counter()
        for f in fprs:
            acc.partial_auc(f)
        t3 = time.perf_counter()
        first = t1 - t0  # the build and one query
        return first, t3 - t2, t2 - t1

    def timed(fn, *args):
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0

    ask(_timed_stream(RankAUC, batches[:2], 1)[1])  # compile
    passes, left, flushed = [], [], []

    def one_pass(acc):
        for yb, sb in batches:
            acc.update(yb, sb)
        acc.finalize()

    for _ in range(max(3, repeat)):
        acc = RankAUC()
        passes.append(timed(one_pass, acc))
        left.append(ask(acc))
        acc.flush()
        flushed.append(ask(acc))
        del acc
    t_pass = float(np.median(passes))
    group = f"{queries} threshold queries after one exact pass over n={n:.0e} ({n:.0e} distinct scores)"
    rows = []
    for what, parts in (("on the state as the pass leaves it", left), ("on the state flushed into one run", flushed)):
        parts = np.array(parts)
        total = float(np.median(parts.sum(axis=1)))
        build, partial, other = (float(v) for v in np.median(parts, axis=0))
        rows.append(
            row(
                group,
                f"streammetrics RankAUC: {queries} queries {what}",
                total,
                share_of_pass=total / t_pass,
                first_query_ms=build * 1e3,
                partial_auc_ms=partial * 1e3,
                others_ms=other * 1e3,
            )
        )
    rows.append(row(group, "streammetrics RankAUC: the exact pass (update all + finalize)", t_pass))
    if have("sklearn"):
        from sklearn.metrics import precision_recall_curve

        def sk():
            precision, recall, thresholds = precision_recall_curve(y, s)
            for r in rates:
                np.flatnonzero(recall[:-1] >= r)[-1]
            return thresholds

        rows.append(
            row(
                group,
                "sklearn precision_recall_curve + numpy searches (one-shot, in memory)",
                median_time(sk, max(1, repeat // 3), warmup=0),
            )
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    n = 1_000_000 if quick else 10_000_000
    repeat = 3 if quick else 5
    rows = []
    rows += _one_shot_rows(n, repeat)
    rows += _streaming_rows(n, repeat)
    rows += _fine_bins_rows(8 * n // 10, repeat)
    rows += _latency_rows()
    rows += _small_batch_rows(n // 10, max(1, repeat // 2))
    rows += _bounded_size_rows()
    rows += _merge_rows(n, repeat)
    rows += _operating_rows(n, repeat)
    rows += _memory_rows([1_000_000] if quick else [1_000_000, 10_000_000])
    rows += _report_memory_rows(1_000_000 if quick else 5_000_000)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="n = 1M instead of 10M")
    ap.add_argument(
        "--only",
        choices=["core", "queries", "memory", "report-memory"],
        help="core: the one-shot and streaming rows only; queries: the threshold queries on an exact "
        "state; memory: the peak-memory rows only (1M, 10M, and 50M with --large)",
    )
    ap.add_argument("--large", action="store_true", help="with --only memory: also 50M distinct scores")
    args = ap.parse_args()
    n = 1_000_000 if args.quick else 10_000_000
    if args.only == "core":
        print_table(_one_shot_rows(n, 3) + _streaming_rows(n, 3) + _bounded_size_rows())
    elif args.only == "queries":
        print_table(_operating_rows(n, 3))
    elif args.only == "report-memory":
        size = 1_000_000 if args.quick else 5_000_000
        print_table(_report_memory_rows(size, repeat=3) + _report_memory_rows(size, repeat=3, weighted=True))
    elif args.only == "memory":
        print_table(_memory_rows([1_000_000, 10_000_000] + ([50_000_000] if args.large else [])))
    else:
        print_table(run(args.quick))
