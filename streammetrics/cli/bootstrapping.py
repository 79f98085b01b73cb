"""``evaluate --bootstrap N [--key COL] [--plots DIR]`` and the ``compare`` command.

Both fold the files with the keyed Poisson bootstrap (:class:`~streammetrics.Bootstrap`):
row ``i``'s weight in replicate ``r`` depends on ``(seed, key, r)`` only,
``key`` being the ``--key`` column or, without one, the row's position in the
files taken in the order given. ``compare`` feeds the same rows and keys to
one bootstrap per model, so the differences are paired, and adds DeLong's
paired test of the two AUCs from the columns it keeps in memory.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from streammetrics import BinaryConfusion, Bootstrap, Evaluator, ProbabilityScores, compare, paired_delong
from streammetrics._protocol.result import fmt_interval, fmt_number, jsonable, text_table
from streammetrics.comparison import ROW_FIELDS, table
from streammetrics.io import InputError, expand_paths, open_source
from streammetrics.metrics.ranking.curves import RankResult

from .common import AUTO_LABELS, CommandError, failing, note
from .output import check_outputs, finalize, save_state, targets_of, write_plots
from .progress import Progress
from .shards import QueryCodes, chunks_of, columns_of, make_evaluator, told

__all__ = ["cmd_evaluate_bootstrap", "cmd_compare"]


def _row_keys(src, chunk, args, offset: int) -> np.ndarray:
    """The chunk's row keys: the ``--key`` column, or the rows' positions."""
    if not args.key:
        return np.arange(offset, offset + len(chunk.y), dtype=np.int64)
    col = np.asarray(chunk.keys[-1])
    if col.dtype.kind in "iu":
        return col
    i = 0  # the first value that is not an integer
    if col.dtype.kind == "f":
        ok = np.isfinite(col) & (col == np.floor(col)) & (np.abs(col) < 2.0**63)
        if ok.all():
            return col.astype(np.int64)
        i = int(np.argmin(ok))
    raise CommandError(
        f"{src.path}: {src.where(chunk.start + i)}, column {args.key!r}: value "
        f"{col[i].item() if hasattr(col[i], 'item') else col[i]!r} is not an "
        "integer row id (--key takes integer ids)"
    )


def _sources(args, p_columns, labels=None, classes=False):
    """The sources of the command's files (:func:`columns_of`; the ``--query`` column first, then ``--key``)."""
    by = tuple(c for c in (getattr(args, "query", None), args.key) if c)
    cols = columns_of(args, p_columns, labels, classes, by=by)
    with failing(InputError):
        return [open_source(f, cols) for f in expand_paths(args.paths)]


def _keyed_chunks(sources, args, progress, queries=None):
    """``(src, chunk, keys, arrays)`` of every chunk of every source, in order (:func:`chunks_of`): with ``queries``
    (a :class:`QueryCodes`) the arrays are ``(query, relevance, score)`` and, without ``--key``, a query's rows share
    its id as their key (whole queries are resampled)."""
    offset = 0
    for src in sources:
        for chunk, arrays in chunks_of(src, args.batch_rows, progress, queries):
            keys = arrays[0] if queries is not None and not args.key else _row_keys(src, chunk, args, offset)
            yield src, chunk, keys, arrays
            offset += len(chunk.y)


def cmd_evaluate_bootstrap(args, settings: dict, watch) -> int:
    """``evaluate ... --bootstrap N``: one bootstrap of the task's Evaluator per
    file, merged; the report holds every score with its interval."""
    if settings.get("by"):
        raise CommandError("--bootstrap does not combine with --by (bootstrap one slice's rows instead)")
    if settings.get("labels") == AUTO_LABELS:
        raise CommandError("--bootstrap needs the labels: pass --labels A,B,... rather than auto")
    check_outputs(args)
    sources = _sources(args, args.p, labels=settings.get("labels"), classes=settings["task"] == "multiclass")
    template = make_evaluator(settings)
    make = lambda: Bootstrap(template, replicates=args.bootstrap, seed=args.seed)  # noqa: E731
    with failing(TypeError, "--bootstrap: "):  # e.g. a member without sample weights
        total = make()
    shard, current = None, None
    with Progress(sources, args.progress) as progress:
        queries = QueryCodes() if settings["task"] == "ranking" else None
        for src, chunk, keys, arrays in _keyed_chunks(sources, args, progress, queries):
            if src is not current:  # one bootstrap per file, merged in order
                if shard is not None:
                    total.merge(shard)
                shard, current = make(), src
            with told(src, chunk, settings["task"]):
                shard.update(*arrays, sample_weight=chunk.w, key=keys)
        if shard is not None:
            total.merge(shard)
    if total.n == 0:
        raise CommandError("the input holds no rows: nothing to evaluate")
    result = finalize(total, args.ci if args.ci is not None else 0.95)
    _print_bootstrap(result, total, args)
    if args.save_state:
        save_state(total, args.save_state)
    if args.plots:
        _write_plots(total, result, args)
    watch.summary(total.n, len(sources))
    return 0


def _write_plots(total, result, args) -> None:
    """The plots of the rows as given (every member's), the ROC and PR curves with the replicates' pointwise bands at
    the intervals' level."""
    report, level = total.point_result(), result.ci
    ranked = any(isinstance(p, RankResult) and p.n_pos > 0 and p.n_neg > 0 for p in report.parts.values())
    try:
        bands = {"roc": (*total.roc_band(level), level), "pr": (*total.pr_band(level), level)} if ranked else None
    except ValueError as exc:  # no replicate holds both classes
        note(f"no bootstrap band on the curves: {exc}")
        bands = None
    if bands and "auc_ci_lower" in result:
        bands["auc"] = (result.auc_ci_lower, result.auc_ci_upper, level)
    write_plots(report, args.plots, weight_column=args.weight, targets=targets_of(args), bands=bands)
    if bands:
        note(f"{level:.0%} bootstrap bands of {result.replicates_used} replicates drawn on the ROC and PR curves")


def _json(doc, result, args) -> None:
    """Print a JSON document of ``doc``'s kind and fields beside the run's bootstrap settings."""
    head = {"result": doc.pop("result"), "n": result.n, **doc.pop("models", {}), "ci": result.ci}
    head.update(replicates=result.replicates, replicates_used=result.replicates_used, seed=args.seed, key=args.key)
    head["weight_column"] = args.weight
    sys.stdout.write(json.dumps(jsonable({**head, **doc}), indent=2) + "\n")


def _keyed(args) -> str:
    query = getattr(args, "query", None)
    by = repr(args.key) if args.key else f"query {query!r}" if query else "row position"
    return f"keyed by {by}, seed {args.seed}"


def _per_k(result) -> dict:
    """``score@k`` of every array of scores per cut-off ``k`` with an interval (the ranking task's), as scalars."""
    ks = result.get("k")
    if not isinstance(ks, np.ndarray) or ks.ndim != 1:
        return {}
    out = {}
    for name, v in result.items():
        if isinstance(v, np.ndarray) and v.shape == ks.shape and f"{name}_ci_lower" in result:
            for e in ("", "_ci_lower", "_ci_upper"):
                out.update((f"{name}@{int(k)}{e}", float(x)) for k, x in zip(ks, result[f"{name}{e}"]))
    return out


def _print_bootstrap(result, total, args) -> None:
    """The scores with their bootstrap intervals (``auc 0.8713 [0.8690, 0.8736]``; a score per cut-off as ``ndcg@10``),
    then the other scalar fields; other arrays (curves, bins) are left to ``evaluate`` without ``--bootstrap``."""
    scalars = {**_per_k(result), **{k: v for k, v in result.items() if np.ndim(v) == 0 and k != "ci"}}
    scored = [k for k in scalars if f"{k}_ci_lower" in scalars]
    skip = {f"{k}_ci_{e}" for k in scored for e in ("lower", "upper")} | {"n", "replicates", "replicates_used"}
    other = [k for k in scalars if k not in scored and k not in skip]
    if args.format == "json":
        fields = ("value", "ci_lower", "ci_upper")
        metrics = {k: {e: scalars[f"{k}_{e}" if e != "value" else k] for e in fields} for k in scored}
        _json({"result": "Bootstrap", "metrics": metrics, "counts": {k: scalars[k] for k in other}}, result, args)
        return
    title = f"{total.template.task or 'members'} evaluation of {result.n:,} rows, {result.ci:.0%} bootstrap intervals"
    cells = [(k, f"{fmt_number(scalars[k])} {fmt_interval(scalars, k)}") for k in scored]
    rows = text_table(cells + [(k, fmt_number(scalars[k])) for k in other], left=(0, 1))
    lines = [title, "=" * len(title), "", *rows[: len(scored)]]
    if other:
        lines += ["", *rows[len(scored) :]]
    lines += [
        "",
        f"  percentile intervals of {result.replicates_used} of {result.replicates} keyed "
        f"Poisson bootstrap replicates ({_keyed(args)})",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def cmd_compare(args, watch) -> int:
    """``streammetrics compare PATH... --p A --p B``: the paired differences of A and B."""
    names = [c for arg in args.p for c in arg.split(",") if c]
    if len(names) != 2 or names[0] == names[1]:
        raise CommandError(f"compare takes two different --p columns, got {', '.join(names) or 'none'}")
    sources = _sources(args, names)
    members = {"binary": BinaryConfusion(threshold=args.threshold)}
    if args.scores == "probability":
        members["probability"] = ProbabilityScores()
    template = Evaluator(members)
    boots = [Bootstrap(template, replicates=args.bootstrap, seed=args.seed) for _ in names]
    ys, ps, ws = [], [], []  # the rows DeLong's test reads
    with Progress(sources, args.progress) as progress:
        for src, chunk, keys, _ in _keyed_chunks(sources, args, progress):
            p = np.asarray(chunk.p)
            batches = []
            for j, b in enumerate(boots):
                with told(src, chunk, "binary", p_column=names[j]):
                    batches.append(b.prepare(chunk.y, p[:, j], sample_weight=chunk.w, key=keys))
            for b, batch in zip(boots, batches):  # both checked before either folds
                b.fold(batch)
            ys.append(np.asarray(chunk.y))
            ps.append(np.asarray(p, np.float64))
            ws.append(None if chunk.w is None else np.asarray(chunk.w, np.float64))
    if boots[0].n == 0:
        raise CommandError("the input holds no rows: nothing to compare")
    with failing(ValueError):
        result = compare(boots[0], boots[1], ci=args.ci)
    y, p = np.concatenate(ys), np.concatenate(ps)
    w = None if ws[0] is None else np.concatenate(ws)
    try:
        auc = paired_delong(y, p[:, 0], p[:, 1], sample_weight=w, ci=args.ci)
    except ValueError as exc:
        auc = None
        note(f"no AUC comparison: {exc}")
    _print_comparison(result, auc, names, args)
    watch.summary(boots[0].n, len(sources))
    return 0


#: the scores a comparison reports, in this order (those the template has)
_SHOWN = ("accuracy", "precision", "recall", "specificity", "balanced_accuracy", "f1", "mcc", "log_loss", "brier")


def _print_comparison(result, auc, names, args) -> None:
    a, b = names
    scores, rows = {}, result.rows()
    if auc is not None:
        delong = {e: auc[e if e == "p_value" else f"auc_{e}"] for e in ROW_FIELDS}
        scores["auc"] = delong | {"resolution": 1e-4, "method": "DeLong"}
    scores.update((k, rows[k]) for k in _SHOWN if k in rows)
    if args.format == "json":
        scores = {k: {e: v for e, v in r.items() if e != "resolution"} for k, r in scores.items()}
        _json({"result": "Comparison", "models": {"models": [a, b]}, "scores": scores}, result, args)
        return
    title = f"comparison of {a} - {b} on {result.n:,} rows"
    lines = [title, "=" * len(title), "", *table(scores, (a, b), result.ci)]
    lines += [
        "",
        f"  paired: both models see the same {result.replicates} Poisson bootstrap "
        f"replicates ({_keyed(args)}); AUC by DeLong's paired test",
        f"  p-value: two-sided, of no difference (bootstrap p-values resolve 1/{result.replicates})",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
