"""What the commands print and write: reports, plots, state files and errors."""

from __future__ import annotations

import json
import os
import sys

from streammetrics import EvaluationReport, Evaluator, Sliced, SlicedResult
from streammetrics._protocol.result import RenderContext, jsonable

from .common import CommandError, failing, need_matplotlib, note

__all__ = ["check_outputs", "targets_of", "emit", "draw", "write_plots", "save_state", "finalize", "report"]


def _parent(path: str) -> str:
    return os.path.dirname(os.path.normpath(path)) or os.curdir


def _existing(path: str) -> tuple[str, str | None]:
    """``path`` if it exists, else the nearest folder above it that does, and why files
    cannot be written into it (``"is not a directory"``, ``"is not writable"``) or None."""
    while not os.path.lexists(path) and _parent(path) != path:
        path = _parent(path)
    if not os.path.isdir(path):
        return path, "is not a directory"
    return path, None if os.access(path, os.W_OK | os.X_OK) else "is not writable"


def _dir_problem(path: str) -> str | None:
    """Why files cannot be written into the folder ``path`` (made if missing: the
    nearest existing folder above it is checked), or None."""
    found, what = _existing(path)
    if found != path:
        return what and f"cannot create the directory: {found} {what}"
    return what and ("not a directory" if what == "is not a directory" else "the directory is not writable")


def _file_problem(path: str) -> str | None:
    """Why a state cannot be written (as a new file renamed into place) at ``path``, or None."""
    if os.path.isdir(path):
        return "is a directory"
    folder = _parent(path)
    found, what = _existing(folder)
    if found != folder and what != "is not a directory":
        return f"cannot write the state: no such directory {folder}"
    return what and f"cannot write the state: {found} {what}"


def check_outputs(args) -> None:
    """Fail early, before any reading, when ``--plots`` needs matplotlib, or a folder
    (``--plots DIR``, ``--keep DIR``) or a file (``--save-state FILE``) that ``args`` names cannot be written."""
    if getattr(args, "plots", None):
        need_matplotlib()
    for attr, problem in (("plots", _dir_problem), ("keep", _dir_problem), ("save_state", _file_problem)):
        path = getattr(args, attr, None)
        what = problem(path) if path else None
        if what:
            raise CommandError(f"--{attr.replace('_', '-')} {path}: {what}")


def targets_of(args) -> dict:
    """The operating targets of ``--target-recall/--target-precision/--target-fpr``."""
    targets = {name: getattr(args, f"target_{name}", None) for name in ("recall", "precision", "fpr")}
    return {name: values for name, values in targets.items() if values}


def emit(result, fmt: str, weight_column: str | None = None, targets=None, top=None) -> None:
    """Print ``result`` (an :class:`~streammetrics.EvaluationReport` or any result) on stdout;
    ``top`` limits the text of a :class:`~streammetrics.SlicedResult` to its largest slices."""
    ctx = RenderContext(weight_column=weight_column, targets=targets or {})
    if isinstance(result, EvaluationReport):
        text = (result.to_json if fmt == "json" else result.to_text)(weight_column=weight_column, targets=targets)
    elif fmt == "json":
        if isinstance(result, SlicedResult):  # every slice, whatever top
            doc = {"result": result.kind, "weighted": result.weighted, **json.loads(result.to_json(None))}
        else:  # the result of one accumulator renders itself, as in a report
            doc = {"result": result.kind, "n": jsonable(result.get("n")), "weighted": result.weighted}
            doc.update(metrics=jsonable(result.report_values()), **jsonable(result.report_extras(ctx)))
        if weight_column is not None:
            doc["weight_column"] = weight_column
        text = json.dumps(doc, indent=2)
    elif isinstance(result, SlicedResult):
        text = result.to_text(top=top)
    else:
        title = result.section_title(ctx)
        text = "\n".join([title, "=" * len(title), *result.section(ctx)])
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def draw(folder: str, plot):
    """``plot()``, the paths of the plots it writes into ``folder``; an unwritable folder is a
    :class:`CommandError`."""
    need_matplotlib()
    try:
        return plot()
    except OSError as exc:
        raise CommandError(f"{folder}: cannot write plots ({exc.strerror or exc})") from None


def write_plots(
    report: EvaluationReport, folder: str, sample=None, weight_column: str | None = None, targets=None, bands=None
) -> None:
    """Write the plots of ``report`` into ``folder`` (``bands`` drawn on its curves, as
    :meth:`~streammetrics.EvaluationReport.plot` takes them) and say which (on stderr)."""
    options = {"sample": sample, "weight_column": weight_column, "targets": targets, "bands": bands}
    paths = draw(folder, lambda: report.plot(folder, **options))
    if paths:
        note("plots written: " + ", ".join(paths))
    elif report.task is None:
        note(f"no plots for the members {', '.join(report.parts)}")
    else:
        regression = " without the data (only 'evaluate' samples it)" if report.task == "regression" else ""
        note(f"no plots for task {report.task!r}{regression}")


def save_state(acc, path: str) -> None:
    """Save the state of ``acc`` to ``path``."""
    try:
        acc.save(path)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write the state ({exc.strerror or exc})") from None


def finalize(acc, ci=None):
    """The result of ``acc`` (with intervals at level ``ci``, when given); a
    library error becomes a :class:`CommandError`."""
    with failing(ValueError), failing(TypeError, "--ci: "):  # (an accumulator without intervals)
        return acc.finalize(ci=ci) if ci is not None else acc.finalize()


def report(total, args, sample=None) -> int:
    """Print the report of ``total`` as ``args`` of ``evaluate`` or ``merge`` ask; save
    its state and plots (``sample``: ``(y, p)`` rows for the regression plots) if asked."""
    weight_column = getattr(args, "weight", None)
    top = getattr(args, "top", None)
    if top is not None and not isinstance(total, Sliced):
        raise CommandError("--top applies to sliced reports (--by COL) only")
    result = finalize(total, getattr(args, "ci", None))
    targets = targets_of(args)
    emit(result, args.format, weight_column, targets, top)
    if args.save_state:
        save_state(total, args.save_state)
    if args.plots:
        sliced = isinstance(total, Sliced) and isinstance(total.template, Evaluator)
        if not (isinstance(total, Evaluator) or sliced):
            raise CommandError("--plots needs states saved by 'streammetrics evaluate --save-state'")
        write_plots(result.overall if sliced else result, args.plots, sample, weight_column, targets)
        if sliced:
            most = {} if top is None else {"max_slices": top}  # the plot follows --top as the text does
            note("slice plots written: " + ", ".join(draw(args.plots, lambda: result.plot(args.plots, **most))))
    return 0
