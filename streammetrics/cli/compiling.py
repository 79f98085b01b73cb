"""Compiling the kernels: saying so when it happens, and ``streammetrics compile``.

Numba compiles a kernel at its first call into its on-disk cache, so the first
run of an installation spends seconds that later runs do not; :class:`CompileWatch`
says so and counts them. ``streammetrics compile`` pays them ahead (an image's
build): worker processes, one per core at most, run small batches through what
each task uses, in arrays of their own and read-only ones (as Arrow columns are:
Numba compiles those apart). What it cannot reach compiles at first use: an exact
AUC's spill, the parallel silhouette (never cached), unusual dtypes.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np
from numba.core import event

import streammetrics as sm

from .._threads import CORES
from .common import DEFAULT_MEMORY_BYTES, CommandError, note

__all__ = ["CompileWatch", "COMPILING_NOTE", "UNITS", "COST", "cmd_compile", "run_units"]


#: the line on stderr at the first compilation of a run
COMPILING_NOTE = (
    "compiling kernels on first use (once per installation, or ahead with "
    "'streammetrics compile'); later runs start at once"
)

#: compilations shorter than this (in all) go unmentioned in the summaries
_WORTH_SAYING = 1.0


class CompileWatch(event.Listener):
    """A listener to Numba's ``"numba:compile"`` events while it is entered (a context
    manager): it prints :data:`COMPILING_NOTE` at the first compilation and counts
    in ``seconds`` the outermost compilations (a kernel compiles those it calls).
    A command's run is timed from the watch's making (:meth:`summary`)."""

    kind = "numba:compile"

    def __init__(self):
        self.started = time.perf_counter()
        self.seconds = 0.0
        self.announced = False
        self._depth = 0
        self._since = 0.0

    def on_start(self, event):
        if self._depth == 0:
            if not self.announced:
                self.announced = True
                note(COMPILING_NOTE)
            self._since = time.perf_counter()
        self._depth += 1

    def on_end(self, event):
        if self._depth == 0:  # begun before the listener was registered
            return
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._since

    def __enter__(self) -> CompileWatch:
        event.register(self.kind, self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister(self.kind, self)

    def share(self, since: float = 0.0) -> str:
        """``"of which 3.4 s compiling kernels, once"``: the compiling done since
        :attr:`seconds` was ``since``, when it took over a second; else ``""``."""
        spent = self.seconds - since
        return f"of which {spent:.1f} s compiling kernels, once" if spent > _WORTH_SAYING else ""

    def summary(self, rows: int, files: int) -> None:
        """The last line of a run on stderr: ``"1,234,567 rows in 2.31 s (0.53 M rows/s) from 3 files"``
        (a rate under 10,000 rows a second in rows a second) since the watch was made (the report and
        plots timed too), then its compiling (:meth:`share`) in parentheses."""
        seconds = time.perf_counter() - self.started
        rate = rows / max(seconds, 1e-9)
        rate_text = f"{rate / 1e6:.2f} M rows/s" if rate >= 1e4 else f"{rate:,.0f} rows/s"
        text = f"{rows:,} rows in {seconds:.2f} s ({rate_text}) from {files:,} file{'' if files == 1 else 's'}"
        compiling = self.share()
        note(f"{text} ({compiling})" if compiling else text)


#: rows of each synthetic batch
ROWS = 600

#: rows of the larger shards: past the size from which an exact AUC marks the
#: blocks of its threshold queries, and from which it sorts on two threads
LARGER = (1 << 14, 1 << 18)


def _inputs(frozen: bool, *arrays):
    """``arrays``, read-only when ``frozen``."""
    if frozen:
        for a in arrays:
            a.setflags(write=False)
    return arrays if len(arrays) > 1 else arrays[0]


def _weights(rng, frozen):
    return _inputs(frozen, rng.random(ROWS) + 0.5)


def _round_trip(acc):
    """``acc`` merged with a copy, reported, saved, loaded twice and merged (as ``merge`` does), pickled."""
    twice = acc + acc.copy()
    twice.finalize().to_text()
    with tempfile.TemporaryDirectory(prefix="streammetrics-compile-") as tmp:
        path = os.path.join(tmp, "state")
        twice.save(path)
        (sm.load_state(path) + sm.load_state(path)).finalize().to_text()
    pickle.loads(pickle.dumps(twice)).finalize()


def _binary(rng, frozen):
    y = (rng.random(ROWS) < 0.4).astype(np.int64)
    p = np.clip(0.3 * y + 0.7 * rng.random(ROWS), 0.0, 1.0)
    y, p = _inputs(frozen, y.astype(bool) if frozen else y, p)
    for options in ({}, {"max_bins": 1024}):
        _round_trip(sm.Evaluator(task="binary", **options).update(y, p))
    _round_trip(sm.Evaluator(task="binary").update(y, p, sample_weight=_weights(rng, frozen)))
    _round_trip(sm.Evaluator(task="binary", scores="score").update(y, 4 * p - 2))
    # shards as large as the sorts that take two threads, within the command's memory budget
    for rows in LARGER:
        big = _inputs(frozen, *(np.tile(a, rows // ROWS + 1)[:rows] for a in (y, p)))
        _round_trip(sm.Evaluator(task="binary", max_memory=DEFAULT_MEMORY_BYTES).update(*big))
    ranked = sm.RankAUC().update(y, p)
    ranked.threshold_for(recall=0.9)
    ranked.best_threshold("f1")
    ranked.finalize()
    sm.auc(y, p)
    for labels in (y, _inputs(frozen, y.astype(bool))):
        sm.BinaryConfusion(threshold=0.5).update(labels, p).finalize()
        sm.BinaryConfusion().update(labels, _inputs(frozen, p >= 0.5)).finalize()
        sm.ProbabilityScores().update(labels, p).finalize()
        sm.Calibration().update(labels, p).finalize()


def _binary_slices(rng, frozen):
    y = (rng.random(ROWS) < 0.4).astype(np.int64)
    p = rng.random(ROWS)
    keys = rng.integers(0, 8, ROWS)
    names = np.array(["north", "south", "east"])[keys % 3]
    y, p, keys, names = _inputs(frozen, y.astype(bool) if frozen else y, p, keys, names)
    _round_trip(sm.Sliced(sm.Evaluator(task="binary")).update(y, p, by=keys))
    for by in (keys, names, (keys, names)):
        _round_trip(sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=by))
    sm.Sliced(sm.BinaryConfusion()).update(y, _inputs(frozen, p >= 0.5), by=keys).finalize()
    sm.Bootstrap(sm.Evaluator(task="binary"), replicates=10).update(y, p, key=np.arange(ROWS)).finalize()
    sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=10).update(y, p).finalize()


def _multiclass(rng, frozen):
    k = 3
    y = rng.integers(0, k, ROWS)
    P = rng.random((ROWS, k))
    P /= P.sum(axis=1, keepdims=True)
    y, P = _inputs(frozen, y, P)
    _round_trip(sm.Evaluator(task="multiclass", n_classes=k, top_k=2, auc=True).update(y, P))
    _round_trip(sm.Evaluator(task="multiclass", n_classes=k).update(y, _inputs(frozen, P.argmax(axis=1))))
    _round_trip(sm.Evaluator(task="multiclass", n_classes=k).update(y, P, sample_weight=_weights(rng, frozen)))
    sm.multiclass_auc(y, P)
    sm.top_k_accuracy(y, P, 2)
    sm.MulticlassConfusion(k).update(y, _inputs(frozen, P.argmax(axis=1))).finalize()
    sm.MulticlassRankAUC(k).update(y, P).finalize()


def _multilabel(rng, frozen):
    L = 3
    Y = (rng.random((ROWS, L)) < 0.4).astype(np.int64)
    S = rng.random((ROWS, L))
    Y, S, called = _inputs(frozen, Y, S, (S >= 0.5).astype(np.int64))
    w = _weights(rng, frozen)
    for weights in (None, w):  # 0/1 predictions, and scores cut at a threshold
        _round_trip(sm.Evaluator(task="multilabel", n_labels=L).update(Y, called, sample_weight=weights))
        _round_trip(sm.Evaluator(task="multilabel", n_labels=L, threshold=0.5).update(Y, S, sample_weight=weights))
    sm.MultilabelRankAUC(L).update(Y, S).finalize()


def _regression(rng, frozen):
    y, p = _inputs(frozen, rng.normal(size=ROWS), rng.normal(size=ROWS))
    _round_trip(sm.Evaluator(task="regression").update(y, p))
    _round_trip(sm.Evaluator(task="regression").update(y, p, sample_weight=_weights(rng, frozen)))
    sm.RegressionErrors().update(y, p).finalize()


def _clustering(rng, frozen):
    a, b = _inputs(frozen, rng.integers(0, 4, ROWS), rng.integers(0, 5, ROWS))
    _round_trip(sm.Evaluator(task="clustering").update(a, b))
    sm.adjusted_rand_score(a, b)
    sm.adjusted_mutual_info_score(a, b)
    X, labels = _inputs(frozen, rng.random((60, 3)), np.arange(60) % 3)
    sm.silhouette_score(X, labels)


def _ranking(rng, frozen):
    q, rel, s = _inputs(frozen, np.arange(ROWS) // 7, rng.integers(0, 3, ROWS), rng.random(ROWS))
    for grouped in (False, True):
        _round_trip(sm.Evaluator(task="ranking", grouped=grouped).update(q, rel, s))
    sm.ndcg_score(rng.integers(0, 3, (9, 7)), rng.random((9, 7)))


#: the units of work by task (a task's units share kernels: they go to one worker)
UNITS = {
    "binary": [("binary", _binary), ("binary slices and bootstrap", _binary_slices)],
    "multiclass": [("multiclass", _multiclass)],
    "multilabel": [("multilabel", _multilabel)],
    "clustering": [("clustering", _clustering)],
    "regression": [("regression", _regression)],
    "ranking": [("ranking", _ranking)],
}

#: the weights :func:`_shares` balances: each task's seconds of compiling from an empty cache
COST = {"binary": 38.0, "multiclass": 13.0, "multilabel": 14.0, "clustering": 8.0, "regression": 4.0, "ranking": 5.0}


def _shares(tasks: list[str], jobs: int) -> list[list[str]]:
    """The tasks dealt to at most ``jobs`` workers, the costliest first to the least loaded."""
    order = sorted(dict.fromkeys(tasks), key=lambda t: -COST[t])
    shares: list[list[str]] = [[] for _ in range(min(jobs, len(order)))]
    loads = [0.0] * len(shares)
    for task in order:
        i = loads.index(min(loads))
        shares[i].append(task)
        loads[i] += COST[task]
    return shares


def run_units(tasks: list[str]) -> list[dict]:
    """Run the units of ``tasks`` here: ``[{"unit", "compiling"}]``, each one's seconds of compiling."""
    out = []
    rng = np.random.default_rng(0)
    for task in tasks:
        for name, unit in UNITS[task]:
            with CompileWatch() as watch:  # (its note goes to the worker's stderr)
                for frozen in (False, True):  # arrays of one's own, and read-only ones
                    unit(rng, frozen)
            out.append({"unit": name, "compiling": watch.seconds})
    return out


#: a worker process: the units of the tasks of argv[1] (a JSON list), their seconds as JSON on stdout
_WORKER = (
    "import json, sys; from streammetrics.cli.compiling import run_units; "
    "print(json.dumps(run_units(json.loads(sys.argv[1]))))"
)


def cmd_compile(args, watch=None) -> int:
    """``streammetrics compile [--task T ...] [--jobs N]``."""
    tasks = list(dict.fromkeys(args.task or UNITS))
    shares = _shares(tasks, args.jobs or CORES)
    note(f"compiling the kernels of {', '.join(tasks)} on {len(shares)} process{'es' if len(shares) > 1 else ''}")
    t0 = time.perf_counter()
    pipes = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, json.dumps(share)], **pipes) for share in shares]
    done, failed = [], []
    try:
        for share, proc in zip(shares, procs):
            out, err = proc.communicate()
            if proc.returncode:
                last = err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}"
                failed.append(f"{', '.join(share)}: {last}")
            else:
                done += json.loads(out)
    finally:
        for proc in procs:
            if proc.poll() is None:  # interrupted: stop the others
                proc.kill()
                proc.wait()
    wall = time.perf_counter() - t0
    if failed:
        raise CommandError("compiling failed for " + "; ".join(failed))
    compiling = sum(d["compiling"] for d in done)
    if compiling < 1.0:
        note(f"nothing to compile: the kernels of {', '.join(tasks)} were already compiled ({wall:.1f} s)")
    else:
        note(f"compiled in {wall:.1f} s ({compiling:.1f} s of compiling in all); later runs start at once")
    return 0
