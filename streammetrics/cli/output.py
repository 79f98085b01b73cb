"""What the commands print and write: reports, plots, state files and errors."""

from __future__ import annotations

import importlib.util
import json
import sys

from streammetrics import EvaluationReport, Evaluator
from streammetrics._protocol.result import RenderContext, jsonable

from .parser import PROG

__all__ = ["CommandError", "note", "have", "need_matplotlib", "emit", "write_plots",
           "save_state", "finalize", "report"]


class CommandError(Exception):
    """An error reported as ``streammetrics: error: <message>`` and exit status 1."""


def note(msg: str) -> None:
    """A line ``streammetrics: <msg>`` on stderr."""
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.stderr.flush()


def have(module: str) -> bool:
    """Whether ``module`` can be imported."""
    return importlib.util.find_spec(module) is not None


def need_matplotlib() -> None:
    """Fail early, before any reading, when ``--plots`` cannot be honoured."""
    if not have("matplotlib"):
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")


def emit(result, fmt: str, weight_column: str | None = None) -> None:
    """Print ``result`` (an :class:`~streammetrics.EvaluationReport` or any result) on stdout."""
    if isinstance(result, EvaluationReport):
        if fmt == "json":
            text = result.to_json(weight_column=weight_column)
        else:
            text = result.to_text(weight_column=weight_column)
    else:  # the result of one accumulator renders itself, as in a report
        ctx = RenderContext(weight_column=weight_column)
        if fmt == "json":
            doc = {"result": result.kind, "n": jsonable(result.get("n")), "weighted": result.weighted,
                   "metrics": jsonable(result.report_values())}
            if weight_column is not None:
                doc["weight_column"] = weight_column
            text = json.dumps(doc, indent=2)
        else:
            title = result.section_title(ctx)
            text = "\n".join([title, "=" * len(title), *result.section(ctx)])
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def write_plots(report: EvaluationReport, folder: str, sample=None,
                weight_column: str | None = None) -> None:
    """Write the plots of ``report`` into ``folder`` and say which (on stderr)."""
    need_matplotlib()
    try:
        paths = report.plot(folder, sample=sample, weight_column=weight_column)
    except OSError as exc:
        raise CommandError(f"{folder}: cannot write plots ({exc.strerror or exc})") from None
    if paths:
        note("plots written: " + ", ".join(paths))
    elif report.task is None:
        note(f"no plots for the members {', '.join(report.parts)}")
    else:
        note(f"no plots for task {report.task!r}"
             + (" without the data (only 'evaluate' samples it)" if report.task == "regression"
                else ""))


def save_state(acc, path: str) -> None:
    """Save the state of ``acc`` to ``path``."""
    try:
        acc.save(path)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write the state ({exc.strerror or exc})") from None


def finalize(acc):
    """The result of ``acc``; a library error becomes a :class:`CommandError`."""
    try:
        return acc.finalize()
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def report(total, args, sample=None) -> int:
    """Print the report of ``total``; save its state and plots if asked.

    ``args`` are the parsed options of ``evaluate`` or ``merge``; ``sample`` is
    a ``(y, p)`` sample of the rows for the regression plots.
    """
    weight_column = getattr(args, "weight", None)
    result = finalize(total)
    emit(result, args.format, weight_column)
    if args.save_state:
        save_state(total, args.save_state)
    if args.plots:
        if not isinstance(total, Evaluator):
            raise CommandError("--plots needs states saved by 'streammetrics evaluate --save-state'")
        write_plots(result, args.plots, sample, weight_column)
    return 0
