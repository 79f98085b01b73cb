"""The ``evaluate`` and ``merge`` commands."""

from __future__ import annotations

import numpy as np

from streammetrics import SettingsMismatchError, StateFileError, load_state
from streammetrics._protocol.errors import a_an
from streammetrics.io import OS_PROBLEMS, InputError, expand_paths, open_source

from .bootstrapping import cmd_evaluate_bootstrap
from .common import AUTO_LABELS, CommandError, Reservoir, failing, note
from .output import check_outputs, report, save_state
from .progress import Progress
from .shards import columns_of, evaluate_sources, make_evaluator
from .windows import evaluate_over_time

__all__ = ["cmd_evaluate", "cmd_merge", "read_labels", "settings_from"]


#: the options of some tasks only (by attribute, checked in this order): their tasks
_ONLY = {"n_labels": ("multilabel",), "threshold": ("binary", "multilabel"), "scores": ("binary",)}
_ONLY.update(dict.fromkeys(("n_classes", "labels", "top_k", "auc"), ("multiclass",)))
_ONLY.update(dict.fromkeys(("query", "relevance", "score", "k", "grouped"), ("ranking",)))


def settings_from(args) -> dict:
    """The Evaluator settings of ``evaluate``'s options; splits ``--p a,b`` in place."""
    task = args.task
    args.p = [c for arg in (args.p or ["p"]) for c in arg.split(",") if c] or ["p"]
    for attr, tasks in _ONLY.items():
        if task not in tasks and getattr(args, attr) not in (None, False):
            raise CommandError(f"--{attr.replace('_', '-')} applies to --task {' and '.join(tasks)} only")
    if task == "clustering" and args.weight is not None:
        raise CommandError("--weight does not apply to --task clustering")
    if len(args.p) > 1 and task not in ("multiclass", "multilabel"):
        raise CommandError(f"--p takes several columns for --task multiclass and multilabel only (task is {task})")
    settings = {"task": task}
    if task == "ranking":  # --y and --p are the relevance and score columns
        if args.query is None:
            raise CommandError("--task ranking needs --query COL (the column of query ids)")
        args.y, args.p = args.relevance or "relevance", [args.score or "score"]
        settings.update(grouped=bool(args.grouped), max_memory=args.memory)
        if args.k is not None:
            settings["k"] = _cut_offs(args.k)
    if task in ("binary", "multiclass"):
        settings["calibration_bins"] = args.calibration_bins
    # the AUC: exact within the memory budget, or bounded by --max-bins
    rank = {"max_bins": args.max_bins, "max_memory": None if args.max_bins is not None else args.memory}
    if task == "binary":
        settings.update(threshold=args.threshold, scores=args.scores, **rank)
    elif task == "multilabel":
        # --y names the label columns (or one list column), in label order
        args.y = tuple(c for c in str(args.y).split(",") if c) or ("y",)
        n_labels = args.n_labels
        if len(args.y) > 1:
            if n_labels is not None and n_labels != len(args.y):
                raise CommandError(f"--n-labels {n_labels} but --y names {len(args.y)} columns")
            if len(args.p) not in (1, len(args.y)):
                raise CommandError(
                    f"--y names {len(args.y)} label columns but --p {len(args.p)}: "
                    "give one --p column per label (or one list column)"
                )
            settings["labels"] = list(args.y)
        elif n_labels is None:
            if len(args.p) == 1:
                raise CommandError(
                    "--task multilabel needs the label columns, as --y y0,y1,y2, "
                    "or --n-labels L with one list column --y"
                )
            n_labels = len(args.p)
        if n_labels is not None:
            settings["n_labels"] = n_labels
        settings["threshold"] = args.threshold
        if args.threshold is not None:  # scores: their AUC is exact (or bounded) as binary's is
            settings.update(rank)
    elif task == "multiclass":
        labels = args.labels
        if args.n_classes is None and labels is None:
            raise CommandError(
                "--task multiclass needs --n-classes K, --labels A,B,... or --labels auto (read from the files)"
            )
        if labels not in (None, AUTO_LABELS) and args.n_classes not in (None, len(labels)):
            raise CommandError(f"--n-classes {args.n_classes} but --labels names {len(labels)} classes")
        given = {"n_classes": args.n_classes, "labels": labels, "top_k": args.top_k}  # labels 'auto': read first
        settings.update({k: v for k, v in given.items() if v is not None})
        if args.auc:
            settings.update(auc=True, max_bins=args.max_bins)
    by = tuple(args.by or ())
    if len(set(by)) != len(by):
        raise CommandError(f"--by names a column twice ({', '.join(by)})")
    if by:
        settings.update(by=by, max_slices=args.max_slices)
    else:
        for opt, v in (("--max-slices", args.max_slices), ("--top", args.top)):
            if v is not None:
                raise CommandError(f"{opt} applies to sliced reports (--by COL) only")
    return settings


def _cut_offs(text: str) -> tuple:
    """``--k 1,5,10`` as ``(1, 5, 10)``."""
    try:
        ks = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        ks = ()
    if not ks or min(ks) < 1:
        raise CommandError(f"--k takes positive integers separated by commas, such as 1,5,10; got {text!r}")
    return ks


#: the most labels ``--labels auto`` collects
MAX_AUTO_LABELS = 10_000


def _shown(labels, limit: int = 20) -> str:
    text = ", ".join(str(v) for v in labels[:limit])
    return text + (f", ... ({len(labels)} in all)" if len(labels) > limit else "")


def _plain(v):
    """A label as JSON keeps it: a float holding an integer (CSV numbers) as an int."""
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def read_labels(sources, chunk_rows: int) -> list:
    """``--labels auto``: the sorted distinct values of ``y`` (and of a ``p`` of labels), in a first pass."""
    seen: set = set()
    for src in sources:
        for chunk in src.chunks(chunk_rows):
            arrays = [chunk.y] + ([chunk.p] if np.ndim(chunk.p) == 1 else [])
            for col, arr in zip((src.columns.y, src.columns.p[0]), arrays):
                arr = np.asarray(arr)
                if arr.dtype.kind == "f":
                    bad = np.flatnonzero(~(np.isfinite(arr) & (arr == np.floor(arr))))
                    if bad.size:
                        raise CommandError(
                            f"{src.path}: {src.where(chunk.start + int(bad[0]))}, column {col!r}: value "
                            f"{arr[bad[0]].item()!r} is not a class label (--labels auto "
                            "collects labels: integers or text)"
                        )
                seen.update(_plain(v) for v in set(arr.tolist()))
                if len(seen) > MAX_AUTO_LABELS:
                    raise CommandError(
                        f"--labels auto: the files hold more than {MAX_AUTO_LABELS:,} distinct "
                        "labels: are these class labels?"
                    )
    try:
        return sorted(seen)
    except TypeError:
        raise CommandError(
            "--labels auto: the files mix text and numbers as labels; pass --labels A,B,... in class order"
        ) from None


def cmd_evaluate(args, watch) -> int:
    """``streammetrics evaluate PATH...``: evaluate the files as shards and merge them
    (per slice of the ``--by`` columns too); a last line on stderr tells the rows,
    seconds, rate, files and the time ``watch`` saw spent compiling (:meth:`CompileWatch.summary`)."""
    settings = settings_from(args)
    over_time = any(getattr(args, k) for k in ("time", "every", "keep_buckets", "window"))
    if args.bootstrap:
        if over_time:
            raise CommandError("--bootstrap does not combine with --time, --every, --keep or --window")
        return cmd_evaluate_bootstrap(args, settings, watch)
    check_outputs(args)
    classes = settings["task"] == "multiclass"
    keys = tuple(c for c in (args.query, *settings.get("by", ()), args.time) if c)  # the key columns, in this order
    cols = columns_of(args, args.p, settings.get("labels"), classes, by=keys)
    try:
        sources = [open_source(f, cols) for f in expand_paths(args.paths)]
        if settings.get("labels") == AUTO_LABELS:
            settings["labels"] = read_labels(sources, args.batch_rows)
            if "n_classes" in settings and settings["n_classes"] != len(settings["labels"]):
                raise CommandError(
                    f"--n-classes {settings['n_classes']} but the files hold "
                    f"{len(settings['labels'])} labels: {_shown(settings['labels'])}"
                )
            note(f"labels read from the files: {_shown(settings['labels'])}")
    except InputError as exc:
        if classes and "labels" not in settings and ("expected numbers" in str(exc) or "is not a number" in str(exc)):
            raise CommandError(f"{exc} (for text class labels, pass --labels A,B,... or --labels auto)") from None
        if args.save_state and settings.get("labels") != AUTO_LABELS:
            save_state(make_evaluator(settings), args.save_state)
            note(f"no shard completed; an empty state was written to {args.save_state}")
        raise CommandError(str(exc)) from None
    if over_time:
        return evaluate_over_time(args, settings, sources)
    sample = Reservoir() if args.plots and settings["task"] == "regression" else None
    with Progress(sources, args.progress) as progress:
        try:
            total, _ = evaluate_sources(sources, settings, args.batch_rows, progress, sample, keep_shards=False)
        except (CommandError, KeyboardInterrupt) as exc:
            progress.close()
            if args.save_state:
                partial, done = getattr(exc, "partial", (None, 0))
                if partial is not None:
                    save_state(partial, args.save_state)
                    note(f"state of the {done} completed shard(s) ({partial.n:,} rows) written to {args.save_state}")
            raise
    if total.n == 0:
        raise CommandError("the input holds no rows: nothing to evaluate")
    code = report(total, args, sample.sample() if sample else None)
    watch.summary(total.n, len(sources))
    return code


def _load(path: str):
    try:
        return load_state(path)
    except tuple(OS_PROBLEMS) as exc:
        raise CommandError(f"{path}: {OS_PROBLEMS[type(exc)]}") from None
    except (StateFileError, ValueError) as exc:
        # a bad file, or settings its class refuses; the message quotes the path
        raise CommandError(str(exc).replace(repr(path), path, 1)) from None


def cmd_merge(args, watch=None) -> int:
    """``streammetrics merge STATE...``: merge saved states and report them (no summary line)."""
    check_outputs(args)
    first = args.states[0]
    total = _load(first)
    for path in args.states[1:]:
        acc = _load(path)
        if type(acc) is not type(total):
            raise CommandError(
                f"{path}: holds {a_an(type(acc).__name__)} state; {first} holds "
                f"{a_an(type(total).__name__)}: only states of one kind merge"
            )
        with failing((SettingsMismatchError, ValueError), f"{path}: cannot merge with {first}: "):
            total.merge(acc)
    if total.n == 0:
        raise CommandError("the states hold no observations: nothing to report")
    return report(total, args)
