"""``streammetrics demo``: synthetic shards evaluated streaming, checked against one pass."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np

from streammetrics import load_state
from streammetrics._protocol.result import jsonable
from streammetrics.io import ColumnSpec, have_pyarrow, open_source

from .common import DEFAULT_MEMORY, CommandError
from .output import check_outputs, write_plots
from .progress import Progress
from .shards import evaluate_sources, make_evaluator

__all__ = ["cmd_demo"]

#: The scores compared side by side.
_COMPARED = ("auc", "average_precision", "log_loss", "brier", "accuracy", "f1", "mcc", "tp", "fp")


def _write_demo_files(folder: str, rows: int, shards: int, kind: str, seed: int = 2024):
    """Write the shards of synthetic predictions of a decent classifier (30 % positives); return their paths."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(shards):
        size = rows // shards + (1 if i < rows % shards else 0)
        y = (rng.random(size) < 0.3).astype(np.uint8)
        logit = rng.normal(loc=np.where(y == 1, 1.1, -1.1), scale=1.3)
        # scores rounded to 4 decimals, as many models export them; p in [0, 1]
        p = np.round(1.0 / (1.0 + np.exp(-logit)), 4)
        if kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            path = os.path.join(folder, f"predictions-{i:02d}.parquet")
            pq.write_table(pa.table({"y": y, "p": p}), path, row_group_size=256 * 1024)
        else:
            path = os.path.join(folder, f"predictions-{i:02d}.npy")
            np.save(path, np.rec.fromarrays([y, p], names="y,p"))
        paths.append(path)
    return paths


def _side_by_side(a, b) -> str:
    lines = [f"  {'':<18} {'merged shards':>22} {'single pass':>22}"]
    lines += [f"  {k:<18} {a[k]!r:>22} {b[k]!r:>22}" for k in _COMPARED if k in a]
    return "\n".join(lines)


def _compare(report, single_report) -> None:
    """Say how close the merged report is to the single pass (they may differ in rounding)."""
    a, b = ({k: jsonable(v) for k, v in r.items()} for r in (report, single_report))
    gaps = [abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in a if isinstance(a[k], float) and a[k] != b[k]]
    worst = max(gaps, default=0.0)
    same_counts = all(a[k] == b[k] for k in a if isinstance(a[k], int))
    if same_counts and worst == 0:
        print("  identical: every count and every score equal")
    elif same_counts and worst <= 1e-12:
        print(f"  identical: every count equal, every score within {worst:.1e} relative")
    else:
        raise CommandError("the merged shards differ from the single pass")


def _check_state_round_trip(folder: str, shards, merged) -> None:
    """Save every shard's state, reload and merge them, as separate workers would."""
    for i, ev in enumerate(shards):
        ev.save(os.path.join(folder, f"shard-{i:02d}.state"))
    reloaded = load_state(os.path.join(folder, "shard-00.state"))
    for i in range(1, len(shards)):
        reloaded.merge(load_state(os.path.join(folder, f"shard-{i:02d}.state")))
    ok = reloaded == merged
    print(f"  saved shard states reloaded and merged: {'identical' if ok else 'DIFFERENT'}")
    if not ok:
        raise CommandError("reloaded shard states differ from the merged shards")


def _tour(args, folder: str, kind: str, watch) -> None:
    """Write the shards into ``folder``, evaluate them and check the merged states."""
    t0 = time.perf_counter()
    # what the command runs by default: the exact AUC within its memory budget
    settings = {"task": "binary", "max_bins": None, "max_memory": DEFAULT_MEMORY}
    cols = ColumnSpec("y", ("p",))
    paths = _write_demo_files(folder, args.rows, args.shards, kind)
    size = sum(os.path.getsize(p) for p in paths)
    print(
        f"wrote {args.rows:,} synthetic predictions (y: 0/1 labels, p: probabilities) "
        f"as {len(paths)} {kind} shards, {size / 2**20:.1f} MiB, to {folder}"
    )
    sources = [open_source(p, cols) for p in paths]

    print(f"\n$ streammetrics evaluate {os.path.join(folder, '*.' + kind)} --task binary --y y --p p")
    t1 = time.perf_counter()
    compiled_before = watch.seconds
    with Progress(sources, args.progress) as progress:
        merged, shards = evaluate_sources(sources, settings, 1 << 18, progress)
    dt = time.perf_counter() - t1
    compiling = watch.share(compiled_before)
    compiling = f" ({compiling})" if compiling else ""
    report = merged.finalize()
    print(report.to_text())
    print(
        f"\n({merged.n:,} rows in {dt:.2f} s{compiling}, {merged.n / dt / 1e6:.1f} M rows/s, "
        f"{len(shards)} shards evaluated separately and merged)"
    )

    # the same rows in one pass, through one Evaluator, in other chunk sizes
    single = make_evaluator(settings)
    for src in [open_source(p, cols) for p in paths]:
        for chunk in src.chunks(100_003):
            single.update(chunk.y, chunk.p, chunk.w)
    single_report = single.finalize()
    print("\nMerged shard states against one pass over all rows (other batch sizes):")
    print(_side_by_side(report, single_report))
    if merged == single:
        print("  identical: the merged state equals the single-pass state bit for bit")
    else:
        _compare(report, single_report)
    _check_state_round_trip(folder, shards, merged)
    if args.plots:
        write_plots(report, args.plots)
    print(f"\ndone in {time.perf_counter() - t0:.1f} s")


def cmd_demo(args, watch) -> int:
    """``streammetrics demo``: the files go into ``--keep DIR``, kept, or else into a
    temporary folder removed at the end (the last line says so: the commands shown name it)."""
    kind = args.format_files
    if kind == "auto":
        kind = "parquet" if have_pyarrow() else "npy"
    elif kind == "parquet" and not have_pyarrow():
        raise CommandError("parquet demo files need pyarrow: pip install 'streammetrics[io]'")
    check_outputs(args)
    folder = args.keep or tempfile.mkdtemp(prefix="streammetrics-demo-")
    os.makedirs(folder, exist_ok=True)
    try:
        _tour(args, folder, kind, watch)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if args.keep:
        print(f"files kept in {folder}; try: streammetrics merge {os.path.join(folder, 'shard-*.state')}")
    elif os.path.exists(folder):
        print(f"the temporary folder {folder} could not be removed entirely")
    else:
        print(
            f"the temporary folder {folder} has been removed; to keep the files and try "
            "the commands above on them, run: streammetrics demo --keep DIR"
        )
    return 0
