"""The report of an evaluation: one result per member, each rendering its own section,
values and plots, so the report knows no metric by name (a field two members share
is prefixed with the second one's name in the flat mapping).
"""

from __future__ import annotations

import contextlib
import html
import json
from typing import Any

from .._protocol.errors import optional
from .._protocol.result import RenderContext, Result, fmt_number, jsonable

__all__ = ["EvaluationReport", "check_targets"]

#: the operating targets a report takes
TARGET_NAMES = ("recall", "precision", "fpr")


def check_targets(targets) -> dict:
    """``targets`` as ``{name: [values in [0, 1]]}``, or ``TypeError``/``ValueError``."""
    if targets is None:
        return {}
    if not isinstance(targets, dict):
        raise TypeError(f"targets must be a dict such as {{'recall': [0.9]}}, got {type(targets).__name__}")
    out = {}
    for name, values in targets.items():
        if name not in TARGET_NAMES:
            raise ValueError(f"targets: unknown target {name!r}; known: {', '.join(TARGET_NAMES)}")
        values = [values] if isinstance(values, (int, float)) else list(values)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"targets[{name!r}]: {v!r} is not a rate in [0, 1]")
        out[name] = [float(v) for v in values]
    return out


class EvaluationReport(Result):
    """The scores of an :class:`~streammetrics.Evaluator`: a read-only mapping of name -> value.

    Values are reached as keys (``report["auc"]``) or attributes
    (``report.auc``). ``str(report)`` (or :meth:`to_text`) is a readable table,
    :meth:`to_json` a JSON document and :meth:`plot` writes the pictures.
    ``report.parts`` maps each member's name to its own result
    (``report.parts["binary"].fbeta(2)``); ``report.task`` and
    ``report.settings`` tell what was evaluated.
    """

    __slots__ = ("_parts", "_settings", "_order", "_describe", "_names")

    def __init__(self, n: int, parts: dict[str, Result], settings: dict[str, Any], order=None, describe: str = ""):
        values: dict[str, Any] = {"n": n}
        names: dict[str, dict[str, str]] = {}
        for member, part in parts.items():
            names[member] = own = {}
            for k, v in part.report_values().items():
                own[k] = key = k if k not in values else f"{member}_{k}"
                values[key] = v
        super().__init__("EvaluationReport", values)
        order = list(order) if order is not None else list(parts)
        for k, v in zip(self.__slots__, (dict(parts), dict(settings), order, describe, names)):
            object.__setattr__(self, k, v)

    def __reduce__(self):
        return (self.__class__, (self._values["n"], self._parts, self._settings, self._order, self._describe))

    @property
    def task(self) -> str | None:
        """The evaluated task (binary, multiclass, regression, clustering), or None."""
        return self._settings.get("task")

    @property
    def settings(self) -> dict[str, Any]:
        """The evaluator's settings (a copy)."""
        return dict(self._settings)

    @property
    def parts(self) -> dict[str, Result]:
        """Each member's own result, by member name (a copy of the mapping)."""
        return dict(self._parts)

    @property
    def weighted(self) -> bool:
        """Whether any member saw sample weights."""
        return any(p.weighted for p in self._parts.values())

    def _context(self, weight_column=None, sample=None, targets=None, bands=None) -> RenderContext:
        labels, targets = self._settings.get("labels"), check_targets(targets)
        return RenderContext(labels, weight_column, self._settings, sample, targets, bands or {})

    def to_json(self, indent: int | None = 2, *, weight_column: str | None = None, targets: dict | None = None) -> str:
        """The report as JSON: ``{"task", "settings", "n", "weighted", "metrics"}``.

        Arrays become (nested) lists; a non-finite float becomes ``null``.
        With class labels, ``metrics.labels`` lists them in class order;
        ``weight_column`` (if given) names the column the weights came from.
        A rank member adds ``operating_points``: the chosen threshold's, the
        best F1's and those of ``targets`` (as :meth:`to_text`).
        """
        ctx = self._context(weight_column, targets=targets)
        doc = {"task": self.task, "settings": jsonable(self._settings), "n": int(self._values["n"])}
        doc["weighted"] = self.weighted
        if weight_column is not None:
            doc["weight_column"] = weight_column
        doc["metrics"] = {k: jsonable(v) for k, v in self._values.items() if k != "n"}
        for name in self._order:
            for key, value in self._parts[name].report_extras(ctx).items():
                doc[key if key not in doc else f"{name}_{key}"] = jsonable(value)
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_text(self, *, weight_column: str | None = None, targets: dict | None = None) -> str:
        """A plain-text table of every score, one section per member.

        ``targets`` asks a rank member for the thresholds that meet targets,
        e.g. ``{"recall": [0.9], "precision": [0.8], "fpr": [0.01]}``, shown
        under "operating points" beside the chosen threshold and the best
        F1's (see :meth:`~streammetrics.RankAUC.threshold_for`).
        """
        ctx = self._context(weight_column, targets=targets)
        head = self._caption()
        if self._describe:
            head += f" {self._describe}"
        elif not self.task:
            head += f" ({', '.join(self._parts)})"
        lines = [head, "=" * len(head)]
        for name in self._order:
            part = self._parts[name]
            title = part.section_title(ctx)
            lines += ["", title if self.task else f"{name}: {title}", *part.section(ctx, self._names[name])]
        return "\n".join(lines)

    def plot(
        self,
        folder: str,
        *,
        sample=None,
        weight_column: str | None = None,
        targets: dict | None = None,
        bands: dict | None = None,
    ) -> list[str]:
        """Write every member's plots (PNG) into ``folder``; the paths written.

        ``sample`` is ``(y, p)`` of a bounded sample of rows, for the plots
        that show rows (regression); ``targets`` as for :meth:`to_text` (the
        operating points are marked on the ROC and PR curves); ``bands``
        drawn on the ROC and PR curves: ``{"roc": (*Bootstrap.roc_band(level),
        level), "pr": (*Bootstrap.pr_band(level), level)}``, and ``"auc":
        (lower, upper, level)`` for the AUC's interval in the legend. Needs
        matplotlib (the ``plot`` extra).
        """
        ctx = self._context(weight_column, sample, targets, bands)
        return [path for name in self._order for path in self._parts[name].plot(folder, ctx)]

    def __str__(self) -> str:
        return self.to_text()

    def to_frame(self, per_class: bool = False):
        """Every member's scores as a pandas ``DataFrame`` (needs pandas): one
        row per (member, score), column ``value``; with ``per_class=True`` one
        row per class and a column per per-class score of every member that has
        them (a score two members share, such as ``support``, shown once)."""
        pd = optional("pandas", "to_frame()")

        if not per_class:
            parts = [part.to_frame() for part in self._parts.values()]
            return pd.concat(parts, keys=list(self._parts), names=["member", "score"])
        frames = []
        for part in self._parts.values():
            with contextlib.suppress(ValueError):  # a member without per-class scores
                frames.append(part.to_frame(per_class=True))
        if not frames:
            raise ValueError("no member of this evaluation has per-class scores")
        # the classes: the row count most members agree on (a reliability table's bins are not classes)
        counts = [len(f) for f in frames]
        rows = max(counts, key=counts.count)
        out = pd.concat([f for f in frames if len(f) == rows], axis=1)
        return out.loc[:, ~out.columns.duplicated()]

    def _caption(self) -> str:
        return f"{self.task + ' ' if self.task else ''}evaluation of {fmt_number(self._values['n'])} rows"

    def _repr_html_(self) -> str:
        ctx = self._context()
        rows = []
        for name in self._order:
            part = self._parts[name]
            rows += [f"<tr><th colspan='2'>{html.escape(part.section_title(ctx))}</th></tr>", *part.html_rows()]
        return f"<table><caption>{html.escape(self._caption())}</caption>" + "".join(rows) + "</table>"
