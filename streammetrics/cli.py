"""The ``streammetrics`` command: evaluate prediction files in bounded memory.

::

    streammetrics evaluate PATH... --task binary --y label --p score
    streammetrics merge STATE...
    streammetrics demo

``evaluate`` reads Parquet, CSV, ``.npy`` and ``.npz`` files batch by batch.
Several paths (or a glob, or a directory) are shards: each is evaluated on its
own and the shard states are merged, exactly as separate workers would. Every
problem with the input is reported as one line on stderr naming the file, the
column and the row (0-based, within that file), with exit status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np

__all__ = ["main"]

PROG = "streammetrics"
DEFAULT_BATCH_ROWS = 1 << 18
#: ``--max-bins`` used when the option is not given: RankAUC stays exact up to
#: this many distinct scores and bounded (with reported error bounds) beyond.
DEFAULT_MAX_BINS = 1 << 16
#: Pairs kept for the regression plots.
SAMPLE_SIZE = 20_000
DEMO_ROWS = 5_000_000
DEMO_SHARDS = 5


class CommandError(Exception):
    """An error reported as ``streammetrics: error: <message>`` and exit status 1."""


# -------------------------------------------------------------------- progress
class _SimpleBar:
    """A minimal progress line for when tqdm is not installed."""

    def __init__(self, total, unit, stream):
        self.total, self.unit, self.stream = total, unit, stream
        self.n = 0
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.width = 0

    def update(self, k):
        self.n += k
        now = time.perf_counter()
        if now - self.last < 0.2:
            return
        self.last = now
        rate = self.n / max(now - self.t0, 1e-9)
        text = f"{_human(self.n)} {self.unit}  {_human(rate)} {self.unit}/s"
        if self.total:
            left = (self.total - self.n) / rate if rate > 0 else float("inf")
            eta = f"{int(left // 60)}:{int(left % 60):02d}" if math.isfinite(left) else "?"
            text = f"{100 * self.n / self.total:5.1f}%  {text}  ETA {eta}"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def close(self):
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


class _NoBar:
    def update(self, k):
        pass

    def close(self):
        pass


def _human(x: float) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= div:
            return f"{x / div:.2f}{unit}"
    return f"{x:.0f}"


class Progress:
    """One bar over every shard: rows when the row counts are known, else bytes."""

    def __init__(self, sources, enabled: bool, stream=None):
        stream = stream or sys.stderr
        units = {s.unit for s in sources}
        self.unit = units.pop() if len(units) == 1 else "rows"
        totals = [s.total for s in sources] if self.unit != "rows" or all(
            s.total_rows is not None for s in sources) else [None]
        total = None if any(t is None for t in totals) else sum(totals)
        self._bar = _NoBar()
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self._bar = _SimpleBar(total, self.unit, stream)
            return
        if self.unit == "bytes":
            self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                             file=stream, dynamic_ncols=True, smoothing=0.1, leave=False)
        else:
            self._bar = tqdm(total=total, unit=" rows", unit_scale=True, file=stream,
                             dynamic_ncols=True, smoothing=0.1, leave=False)

    def advance(self, k: int) -> None:
        if k > 0:
            self._bar.update(k)

    def close(self) -> None:
        self._bar.close()


def _progress_enabled(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# ------------------------------------------------------------------- sampling
class Reservoir:
    """A uniform sample of at most ``size`` (y, p) pairs from a stream (Algorithm R)."""

    def __init__(self, size: int = SAMPLE_SIZE, seed: int = 0):
        self.size = size
        self.seen = 0
        self.y = np.empty(size, np.float64)
        self.p = np.empty(size, np.float64)
        self.rng = np.random.default_rng(seed)

    def add(self, y, p) -> None:
        y = np.asarray(y, dtype=np.float64).ravel()
        p = np.asarray(p, dtype=np.float64).ravel()
        n = y.shape[0]
        if n == 0:
            return
        fill = max(0, min(self.size - self.seen, n))
        if fill:
            self.y[self.seen:self.seen + fill] = y[:fill]
            self.p[self.seen:self.seen + fill] = p[:fill]
        if fill < n:
            idx = np.arange(self.seen + fill, self.seen + n, dtype=np.int64)
            slot = self.rng.integers(0, idx + 1)
            keep = np.flatnonzero(slot < self.size)
            # later rows overwrite earlier ones in the same slot, as in sequential order
            self.y[slot[keep]] = y[fill:][keep]
            self.p[slot[keep]] = p[fill:][keep]
        self.seen += n

    def sample(self):
        k = min(self.seen, self.size)
        return self.y[:k].copy(), self.p[:k].copy()


# --------------------------------------------------------------------- parser
def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {v}")
    return v


def _max_bins(text: str):
    if text.lower() in ("exact", "none", "0"):
        return None
    return _positive_int(text)


def _finite_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Streaming, mergeable model evaluation of prediction files.",
        epilog="Run 'streammetrics demo' for a tour, or 'streammetrics evaluate -h'.",
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--format", choices=("text", "json"), default="text",
                     help="report format on stdout (default: text)")
    out.add_argument("--plots", metavar="DIR",
                     help="write PNG plots (ROC, PR, confusion matrix, regression) into DIR")
    out.add_argument("--save-state", metavar="FILE",
                     help="save the merged state to FILE (for 'streammetrics merge' "
                          "or streammetrics.load_state)")

    ev = sub.add_parser(
        "evaluate", parents=[out], help="evaluate prediction files",
        description="Evaluate predictions stored in Parquet, CSV, .npy or .npz files, "
                    "batch by batch in bounded memory. Several paths, a glob or a "
                    "directory are shards: each is evaluated on its own and merged.",
    )
    ev.add_argument("paths", nargs="+", metavar="PATH", help="files, globs or directories")
    ev.add_argument("--task", choices=("binary", "multiclass", "regression", "clustering"),
                    default="binary", help="what to evaluate (default: binary)")
    ev.add_argument("--y", default="y", metavar="COL",
                    help="column of the truth (default: y); for a 2-D .npy, a column index")
    ev.add_argument("--p", action="append", metavar="COL",
                    help="column of the predictions (default: p); for multiclass class "
                         "probabilities, one list column or one column per class, as "
                         "--p p0,p1,p2 or --p p0 --p p1 --p p2")
    ev.add_argument("--weight", metavar="COL", help="column of sample weights")
    ev.add_argument("--threshold", type=_finite_float, metavar="T",
                    help="binary: p >= T is a positive prediction "
                         "(default 0.5 for probabilities, 0 for scores)")
    ev.add_argument("--scores", choices=("probability", "score"),
                    help="binary: 'probability' (p in [0, 1], adds log loss and Brier; "
                         "the default) or 'score' (any finite reals, e.g. logits)")
    ev.add_argument("--n-classes", type=_positive_int, metavar="K",
                    help="multiclass: the number of classes (classes are 0..K-1)")
    ev.add_argument("--max-bins", type=_max_bins, default=DEFAULT_MAX_BINS, metavar="B",
                    help=f"binary: AUC bins, bounding memory (default {DEFAULT_MAX_BINS}; "
                         "'exact' keeps every distinct score)")
    ev.add_argument("--batch-rows", type=_positive_int, default=DEFAULT_BATCH_ROWS, metavar="N",
                    help=f"rows per batch (default {DEFAULT_BATCH_ROWS})")
    ev.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                    help="progress bar on stderr (default: when stderr is a terminal)")

    mg = sub.add_parser(
        "merge", parents=[out], help="merge saved states and print the report",
        description="Load states saved with --save-state (or Accumulator.save), merge "
                    "them and print the report.",
    )
    mg.add_argument("states", nargs="+", metavar="STATE", help="state files")

    dm = sub.add_parser(
        "demo", help="evaluate a synthetic data set, streaming and sharded",
        description="Write a synthetic binary-classification prediction file in shards "
                    "into a temporary folder, evaluate it streaming, and check that the "
                    "merged shard states equal a single pass.",
    )
    dm.add_argument("--rows", type=_positive_int, default=DEMO_ROWS, help=argparse.SUPPRESS)
    dm.add_argument("--shards", type=_positive_int, default=DEMO_SHARDS, help=argparse.SUPPRESS)
    dm.add_argument("--format-files", choices=("auto", "parquet", "npy"), default="auto",
                    help=argparse.SUPPRESS)
    dm.add_argument("--keep", metavar="DIR", help="write the files into DIR and keep them")
    dm.add_argument("--plots", metavar="DIR", help="also write the plots into DIR")
    dm.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                    help=argparse.SUPPRESS)
    return ap


# ------------------------------------------------------------------ reporting
def _emit(report_or_result, fmt: str) -> None:
    from .report import EvaluationReport

    if isinstance(report_or_result, EvaluationReport):
        text = report_or_result.to_json() if fmt == "json" else report_or_result.to_text()
    else:
        from ._protocol.result import jsonable as _jsonable
        import json

        d = report_or_result.as_dict()
        if fmt == "json":
            text = json.dumps({k: _jsonable(v) for k, v in d.items()}, indent=2)
        else:
            width = max(len(k) for k in d)
            text = "\n".join(f"{k:<{width}}  {v}" for k, v in d.items())
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _note(msg: str) -> None:
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.stderr.flush()


def _write_plots(evaluator, report, folder, sample=None) -> None:
    from .report.plots import have_matplotlib

    if not have_matplotlib():
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")
    try:
        paths = report.plot(folder, sample=sample)
    except OSError as exc:
        raise CommandError(f"{folder}: cannot write plots ({exc.strerror or exc})") from None
    if paths:
        _note("plots written: " + ", ".join(paths))
    else:
        _note(f"no plots for task {evaluator.task!r}"
              + (" without the data (only 'evaluate' samples it)" if evaluator.task == "regression" else ""))


def _save_state(acc, path: str) -> None:
    try:
        acc.save(path)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write the state ({exc.strerror or exc})") from None


# ------------------------------------------------------------------- evaluate
_BAD_VALUE = re.compile(
    r"^(y|p|sample_weight|labels_true|labels_pred)\[(\d+)(?:, (\d+))?\](.*)$", re.S
)
_ROLE = {"y": "y", "labels_true": "y", "p": "p", "labels_pred": "p", "sample_weight": "w"}


def _translate(exc: Exception, src, batch) -> CommandError:
    """A member's ``ValueError`` about ``p[17]`` as a message about the file's row."""
    msg = str(exc)
    m = _BAD_VALUE.match(msg)
    cols = src.columns
    if m:
        role = _ROLE[m.group(1)]
        row = batch.start + int(m.group(2))
        j = m.group(3)
        col = cols.column_of(role, int(j) if j is not None and len(cols.p) > 1 else None)
        if j is not None and len(cols.p) == 1:
            col = f"{col}[{j}]"
        rest = m.group(4)
        rest = "value " + rest[3:] if rest.startswith(" = ") else rest.strip()
        hint = ""
        if "probabilities must lie in [0, 1]" in rest and role == "p":
            hint = " (for unbounded scores such as logits, pass --scores score)"
        return CommandError(f"{src.path}: row {row}, column {col!r}: {rest}{hint}")
    last = batch.start + len(batch.y) - 1
    return CommandError(f"{src.path}: rows {batch.start}..{last}: {msg}")


def _settings_from(args) -> dict:
    task = args.task
    args.p = [c for arg in (args.p or ["p"]) for c in arg.split(",") if c] or ["p"]
    settings = {"task": task}
    given = {"--threshold": args.threshold, "--scores": args.scores}
    if task == "binary":
        settings.update(threshold=args.threshold, scores=args.scores, max_bins=args.max_bins)
    else:
        for opt, v in given.items():
            if v is not None:
                raise CommandError(f"{opt} applies to --task binary only")
    if task == "multiclass":
        if args.n_classes is None:
            raise CommandError("--task multiclass needs --n-classes K")
        settings["n_classes"] = args.n_classes
    elif args.n_classes is not None:
        raise CommandError("--n-classes applies to --task multiclass only")
    if task == "clustering" and args.weight is not None:
        raise CommandError("--weight does not apply to --task clustering")
    if len(args.p) > 1 and task != "multiclass":
        raise CommandError(f"--p takes several columns for --task multiclass only (task is {task})")
    return settings


def _make_evaluator(settings):
    from .evaluator import Evaluator

    try:
        return Evaluator(**settings)
    except ImportError as exc:
        raise CommandError(
            f"task {settings['task']!r} is not available in this installation ({exc})"
        ) from None
    except (TypeError, ValueError) as exc:
        raise CommandError(str(exc)) from None


def _evaluate_sources(sources, settings, batch_rows, progress, sample=None, on_shard=None):
    """Evaluate each source into its own Evaluator and merge them in order.

    Returns ``(total, shards)``. On an error, ``CommandError`` carries the
    merged state of the completed shards as ``.partial``.
    """
    from ._io import InputError

    total = _make_evaluator(settings)
    shards = []
    try:
        for src in sources:
            ev = _make_evaluator(settings)
            seen = 0
            for batch in src.batches(batch_rows):
                try:
                    ev.update(batch.y, batch.p, batch.w)
                except (ValueError, TypeError) as exc:
                    raise _translate(exc, src, batch) from None
                if sample is not None:
                    sample.add(batch.y, batch.p)
                progress.advance(batch.done - seen)
                seen = batch.done
            total.merge(ev)
            shards.append(ev)
            if on_shard is not None:
                on_shard(src, ev)
    except InputError as exc:
        err = CommandError(str(exc))
        err.partial = (total, len(shards))
        raise err from None
    except CommandError as exc:
        exc.partial = (total, len(shards))
        raise
    except KeyboardInterrupt as exc:
        exc.partial = (total, len(shards))
        raise
    return total, shards


def cmd_evaluate(args) -> int:
    from ._io import ColumnSpec, InputError, expand_paths, open_source

    settings = _settings_from(args)
    if args.plots and not _have("matplotlib"):
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")
    cols = ColumnSpec(args.y, tuple(args.p), args.weight)
    try:
        files = expand_paths(args.paths)
        sources = [open_source(f, cols) for f in files]
    except InputError as exc:
        if args.save_state:
            _save_state(_make_evaluator(settings), args.save_state)
            _note(f"no shard completed; an empty state was written to {args.save_state}")
        raise CommandError(str(exc)) from None
    sample = Reservoir() if args.plots and settings["task"] == "regression" else None
    progress = Progress(sources, _progress_enabled(args.progress))
    try:
        total, _ = _evaluate_sources(sources, settings, args.batch_rows, progress, sample)
    except (CommandError, KeyboardInterrupt) as exc:
        progress.close()
        if args.save_state:
            partial, done = getattr(exc, "partial", (None, 0))
            if partial is not None:
                _save_state(partial, args.save_state)
                _note(f"state of the {done} completed shard(s) ({partial.n:,} rows) "
                      f"written to {args.save_state}")
        raise
    progress.close()
    if total.n == 0:
        raise CommandError("the input holds no rows: nothing to evaluate")
    return _report(total, args, sample.sample() if sample else None)


def _finalize(acc):
    try:
        return acc.finalize()
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _report(total, args, sample=None) -> int:
    """Print the report of ``total``; save its state and plots if asked."""
    report = _finalize(total)
    _emit(report, args.format)
    if args.save_state:
        _save_state(total, args.save_state)
    if args.plots:
        from .evaluator import Evaluator

        if not isinstance(total, Evaluator):
            raise CommandError("--plots needs states saved by 'streammetrics evaluate --save-state'")
        _write_plots(total, report, args.plots, sample)
    return 0


# ---------------------------------------------------------------------- merge
def cmd_merge(args) -> int:
    from ._protocol.base import load_state
    from . import evaluator  # noqa: F401  (registers Evaluator for load_state)

    total = None
    first = None
    for path in args.states:
        try:
            acc = load_state(path)
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise CommandError(f"{path}: is a directory") from None
        except PermissionError:
            raise CommandError(f"{path}: permission denied") from None
        except ValueError as exc:
            raise CommandError(str(exc).replace(repr(path), path, 1)) from None
        if total is None:
            total, first = acc, path
            continue
        if type(acc) is not type(total):
            raise CommandError(
                f"{path}: holds a {type(acc).__name__} state; {first} holds a "
                f"{type(total).__name__}: only states of one kind merge"
            )
        try:
            total.merge(acc)
        except ValueError as exc:
            raise CommandError(f"{path}: cannot merge with {first}: {exc}") from None
    if total.n == 0:
        raise CommandError("the states hold no observations: nothing to report")
    return _report(total, args)


# ----------------------------------------------------------------------- demo
def _demo_shard(rng, rows: int):
    """Synthetic predictions of a decent classifier: 30 % positives."""
    y = (rng.random(rows) < 0.3).astype(np.uint8)
    logit = rng.normal(loc=np.where(y == 1, 1.1, -1.1), scale=1.3)
    # scores rounded to 4 decimals, as many models export them; p in [0, 1]
    p = np.round(1.0 / (1.0 + np.exp(-logit)), 4)
    return y, p


def _write_demo_files(folder: str, rows: int, shards: int, kind: str, seed: int = 2024):
    rng = np.random.default_rng(seed)
    sizes = [rows // shards + (1 if i < rows % shards else 0) for i in range(shards)]
    paths = []
    for i, size in enumerate(sizes):
        y, p = _demo_shard(rng, size)
        if kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            path = os.path.join(folder, f"predictions-{i:02d}.parquet")
            pq.write_table(pa.table({"y": y, "p": p}), path, row_group_size=256 * 1024)
        else:
            path = os.path.join(folder, f"predictions-{i:02d}.npy")
            rec = np.empty(size, dtype=[("y", np.uint8), ("p", np.float64)])
            rec["y"], rec["p"] = y, p
            np.save(path, rec)
        paths.append(path)
    return paths


def _side_by_side(a, b) -> str:
    keys = ("auc", "average_precision", "log_loss", "brier", "accuracy", "f1", "mcc", "tp", "fp")
    lines = [f"  {'':<18} {'merged shards':>22} {'single pass':>22}"]
    for k in keys:
        if k in a:
            lines.append(f"  {k:<18} {a[k]!r:>22} {b[k]!r:>22}")
    return "\n".join(lines)


def cmd_demo(args) -> int:
    from ._io import ColumnSpec, have_pyarrow, open_source

    kind = args.format_files
    if kind == "auto":
        kind = "parquet" if have_pyarrow() else "npy"
    elif kind == "parquet" and not have_pyarrow():
        raise CommandError("parquet demo files need pyarrow: pip install 'streammetrics[io]'")
    if args.plots and not _have("matplotlib"):
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")
    folder = args.keep or tempfile.mkdtemp(prefix="streammetrics-demo-")
    os.makedirs(folder, exist_ok=True)
    t0 = time.perf_counter()
    try:
        paths = _write_demo_files(folder, args.rows, args.shards, kind)
        size = sum(os.path.getsize(p) for p in paths)
        print(f"wrote {args.rows:,} synthetic predictions (y: 0/1 labels, p: probabilities) "
              f"as {len(paths)} {kind} shards, {size / 2**20:.1f} MiB, to {folder}")
        settings = {"task": "binary", "max_bins": None}
        cols = ColumnSpec("y", ("p",))
        sources = [open_source(p, cols) for p in paths]

        print(f"\n$ streammetrics evaluate {os.path.join(folder, '*.' + kind)} "
              "--task binary --y y --p p --max-bins exact")
        t1 = time.perf_counter()
        progress = Progress(sources, _progress_enabled(args.progress))
        shard_times = []

        def on_shard(src, ev):
            shard_times.append(ev.n)

        merged, shards = _evaluate_sources(sources, settings, 1 << 18, progress, on_shard=on_shard)
        progress.close()
        dt = time.perf_counter() - t1
        report = merged.finalize()
        print(report.to_text())
        print(f"\n({merged.n:,} rows in {dt:.2f} s, {merged.n / dt / 1e6:.1f} M rows/s, "
              f"{len(shards)} shards evaluated separately and merged)")

        # the same rows in one pass, through one Evaluator, in other batch sizes
        single = _make_evaluator(settings)
        for src in [open_source(p, cols) for p in paths]:
            for batch in src.batches(100_003):
                single.update(batch.y, batch.p, batch.w)
        single_report = single.finalize()
        print("\nMerged shard states against one pass over all rows (other batch sizes):")
        print(_side_by_side(report, single_report))
        if merged == single:
            print("  identical: the merged state equals the single-pass state bit for bit")
        else:
            from ._protocol.result import jsonable as _jsonable

            a = {k: _jsonable(v) for k, v in report.items()}
            b = {k: _jsonable(v) for k, v in single_report.items()}
            worst = max(
                (abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in a
                 if isinstance(a[k], float) and a[k] != b[k]),
                default=0.0,
            )
            same_counts = all(a[k] == b[k] for k in a if isinstance(a[k], int))
            if same_counts and worst == 0:
                print("  identical: every count and every score equal")
            elif same_counts and worst <= 1e-12:
                print(f"  identical: every count equal, every score within {worst:.1e} relative")
            else:
                raise CommandError("the merged shards differ from the single pass")
        # a state round trip, as separate workers would do it
        state_paths = []
        for i, ev in enumerate(shards):
            sp = os.path.join(folder, f"shard-{i:02d}.state")
            ev.save(sp)
            state_paths.append(sp)
        from ._protocol.base import load_state

        reloaded = load_state(state_paths[0])
        for sp in state_paths[1:]:
            reloaded.merge(load_state(sp))
        ok = reloaded == merged
        print(f"  saved shard states reloaded and merged: {'identical' if ok else 'DIFFERENT'}")
        if not ok:
            raise CommandError("reloaded shard states differ from the merged shards")
        if args.plots:
            _write_plots(merged, report, args.plots)
        print(f"\ndone in {time.perf_counter() - t0:.1f} s")
        if args.keep:
            print(f"files kept in {folder}; try: streammetrics merge {os.path.join(folder, 'shard-*.state')}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


# ----------------------------------------------------------------------- main
def main(argv=None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler = {"evaluate": cmd_evaluate, "merge": cmd_merge, "demo": cmd_demo}[args.command]
    try:
        return handler(args)
    except CommandError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a traceback
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
