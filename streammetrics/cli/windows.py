"""``evaluate --time COL --every SPAN [--keep N]``: the scores per time bucket,
the buckets whose interval leaves out the overall score marked; and
``evaluate --window N``: the scores of the last N rows (in file order)."""

from __future__ import annotations

import json
import sys
from collections import deque

import numpy as np

from streammetrics import Windowed
from streammetrics._protocol.result import jsonable
from streammetrics.over_time.buckets import take_rows

from .common import CommandError, failing, note
from .output import draw, finalize, report, save_state
from .progress import Progress
from .shards import QueryCodes, chunks_of, make_evaluator, told

__all__ = ["evaluate_over_time"]


def _every(text: str):
    """``--every``: a number (in the time column's unit) or a duration (``1d``)."""
    try:
        return float(text)
    except ValueError:
        return text.strip()


def _stamps(values, column: str, src) -> np.ndarray:
    """The time column of a chunk: numbers or datetimes (text parsed as ISO 8601)."""
    a = np.asarray(values)
    if a.dtype.kind in "Miuf":
        return a
    try:
        return a.astype("datetime64[ns]")
    except (ValueError, TypeError):
        raise CommandError(f"{src.path}: column {column!r} holds neither numbers nor timestamps") from None


def _batches(args, sources, settings):
    """Every chunk as ``(src, chunk, arrays, options)`` for an update, with the progress shown."""
    queries = QueryCodes() if settings["task"] == "ranking" else None  # the first key column
    first = queries is not None
    by = len(settings.get("by", ()))
    with Progress(sources, args.progress) as progress:
        for src in sources:
            for chunk, arrays in chunks_of(src, args.batch_rows, progress, queries):
                options = {"sample_weight": chunk.w}
                if by:
                    options["by"] = tuple(np.asarray(k) for k in chunk.keys[first : first + by])
                if args.time:
                    options["time"] = _stamps(chunk.keys[first + by], args.time, src)
                yield src, chunk, arrays, options


def evaluate_over_time(args, settings: dict, sources) -> int:
    """Evaluate ``sources`` per time bucket (``--time``) or over the last rows
    (``--window``) and print the report as ``args`` ask."""
    if args.time and args.window:
        raise CommandError("--time and --window: give one (buckets of time, or the last N rows)")
    if args.time is None and (args.every or args.keep_buckets):
        raise CommandError("--every and --keep need --time COL")
    if args.window:
        return _last_rows(args, settings, sources)
    if not args.every:
        raise CommandError("--time needs --every SPAN (e.g. 1d, 1h, 15min, or a number in the column's unit)")
    with failing((TypeError, ValueError), "--every: "):
        acc = Windowed(make_evaluator(settings), every=_every(args.every), keep=args.keep_buckets, time=True)
    for src, chunk, arrays, options in _batches(args, sources, settings):
        with told(src, chunk, settings["task"]):
            acc.update(*arrays, **options)
    if acc.n == 0:
        raise CommandError("the input holds no rows in the kept buckets: nothing to evaluate")
    _emit(acc, args)
    if args.save_state:
        save_state(acc, args.save_state)
    if args.plots:
        ci = args.ci if args.ci is not None else (0.95 if acc.intervals else None)
        plot = lambda s: acc.plot(s, args.plots, ci=ci, name=f"buckets_{s}.png")  # noqa: E731
        note("bucket plots written: " + ", ".join(draw(args.plots, lambda: [plot(s) for s in acc.headline])))
    if acc.dropped:
        note(f"{acc.dropped:,} rows older than the last {args.keep_buckets} buckets were dropped")
    return 0


def _emit(acc: Windowed, args) -> None:
    t = acc.table(args.ci)
    overall = finalize(acc, args.ci)
    heads = [h for h in acc.headline if h in t]
    if args.format == "json":
        buckets = [dict(zip(t, values)) for values in zip(*t.values())]
        for b in buckets:
            b["start"], b["end"] = _shown(b["start"]), _shown(b["end"])
        doc = dict(every=args.every, keep=args.keep_buckets, rows=acc.n, dropped=acc.dropped)
        doc.update(overall={h: overall[h] for h in heads}, buckets=buckets)
        sys.stdout.write(json.dumps(jsonable(doc), indent=2) + "\n")
        return
    level = f" ({args.ci:.0%} intervals)" if args.ci is not None else ""
    title = f"scores per bucket of {args.every}{level}: {len(t['rows'])} buckets, {acc.n:,} rows"
    lines = [title, "=" * len(title), "", f"  {'start':<20} {'rows':>9}" + "".join(f" {h:>24}" for h in heads)]
    marked = False
    for i in range(len(t["rows"])):
        cells = []
        for h in heads:
            text = f"{t[h][i]:.4f}"
            if f"{h}_ci_lower" in t:
                text += f" [{t[h + '_ci_lower'][i]:.3f}, {t[h + '_ci_upper'][i]:.3f}]"
            if "differs" in t and h in t["differs"][i]:
                text, marked = text + " *", True
            cells.append(f" {text:>24}")
        lines.append(f"  {_shown(t['start'][i]):<20} {t['rows'][i]:>9,}" + "".join(cells))
    lines.append(f"  {'(all)':<20} {acc.n:>9,}" + "".join(f" {overall[h]:>24.4f}" for h in heads))
    if marked:
        lines += ["", "  * the bucket's interval leaves out the overall score"]
    sys.stdout.write("\n".join(lines) + "\n")


def _shown(start) -> str:
    """A bucket's start as a person reads it (a day as its date)."""
    return np.datetime_as_string(start, unit="auto") if isinstance(start, np.datetime64) else f"{start:g}"


def _last_rows(args, settings: dict, sources) -> int:
    """The report of the last ``--window`` rows, kept in a ring of chunks."""
    ring: deque = deque()
    held = 0
    total = make_evaluator(settings)
    for src, chunk, arrays, options in _batches(args, sources, settings):
        with told(src, chunk, settings["task"]):
            total.prepare(*arrays, **options)  # (a bad value is told with its file and row now)
        ring.append((arrays, options))
        held += len(arrays[0])
        while held - len(ring[0][0][0]) >= args.window:
            held -= len(ring.popleft()[0][0])
    if not held:
        raise CommandError("the input holds no rows: nothing to evaluate")
    skip = held - args.window
    for arrays, options in ring:
        cut = slice(min(skip, len(arrays[0])), None)
        skip = max(0, skip - len(arrays[0]))
        total.update(*take_rows(arrays, cut), **{k: take_rows(v, cut) for k, v in options.items()})
    note(f"the last {total.n:,} rows")
    return report(total, args)
