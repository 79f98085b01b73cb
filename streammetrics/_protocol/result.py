"""Read-only results of ``finalize()`` and how each kind renders itself.

A :class:`Result` is a read-only mapping of score names to values (``r.f1``
or ``r["f1"]``) that renders its report section (:meth:`Result.section`,
:meth:`Result.report_values`, :meth:`Result.plot`); the defaults render any
result, so a new accumulator appears in every report without code there.
The formatting primitives live here too.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import optional


def safe(x):
    """The specification's guard: ``x + [x == 0]``, so a zero denominator is 1."""
    return x + (x == 0)


# ------------------------------------------------------------------ formatting
def _fmt_repr(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, separator=", ", threshold=20)
    return repr(v.item() if isinstance(v, (np.bool_, np.integer)) else v)


def fmt_number(v: Any, weighted: bool = False) -> str:
    """A number as the text report shows it.

    Integers get thousands separators (``1,234,567``). With ``weighted``,
    a float *count* (a sum of weights) is shown with two decimals and
    separators (``12,345.68``), so weighted and unweighted counts read alike;
    one that two decimals would not show (from 1e15, or below 0.01) in
    exponent form.
    """
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return str(v)
        if weighted:  # beyond what two decimals show (1e15, 0.001): 1.0000e+300, 1.0000e-300
            return f"{v:,.2f}" if v == 0 or 0.01 <= abs(v) < 1e15 else f"{v:.4e}"
        if v == int(v) and abs(v) < 1e15 and not (0 < abs(v) < 1):
            return f"{v:,.1f}" if abs(v) >= 1e4 else f"{v:g}"
        return f"{v:.6g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.4e}"
    return str(v)


def text_table(rows, left=(0,)) -> list[str]:
    """Rows of text cells as lines two spaces in, each column as wide as its widest cell: the columns ``left`` aligned
    left, the others right (trailing blanks dropped)."""
    widths = [max(map(len, column)) for column in zip(*rows)]
    return [
        ("  " + "  ".join(c.ljust(w) if j in left else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths)))).rstrip()
        for r in rows
    ]


def _even(rows, least: int = 0) -> list[list[str]]:
    """``rows`` with every cell but the first right-aligned to the widest of them (at least ``least``)."""
    w = max([least] + [len(c) for r in rows for c in r[1:]])
    return [[r[0], *(c.rjust(w) for c in r[1:])] for r in rows]


def fmt_interval(values, name: str) -> str:
    """``[lower, upper]``: the interval ``<name>_ci_lower``, ``<name>_ci_upper`` of ``values``."""
    return f"[{fmt_number(values[f'{name}_ci_lower'])}, {fmt_number(values[f'{name}_ci_upper'])}]"


def html_row(cells, tag: str = "td") -> str:
    """A ``<tr>`` of the text ``cells``, each escaped, in ``tag`` elements."""
    return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"


def grid(cells, row_labels, col_labels, weighted: bool = False) -> list[str]:
    """A labelled table of numbers, two spaces in, every column of numbers as wide as the widest."""
    rows = [[label, *(fmt_number(c, weighted) for c in row)] for label, row in zip(row_labels, cells)]
    return text_table(_even([["", *col_labels], *rows]))


def class_names(labels, k: int) -> list[str]:
    """The names of ``k`` classes: their labels, or ``0..k-1``."""
    return [str(v) for v in labels] if labels is not None else [str(i) for i in range(k)]


def per_class(names, arrays, row_names) -> list[str]:
    """A table with one row per class (named ``row_names``) and one column per array."""
    k = arrays[0].shape[0]
    shown = range(k) if k <= 50 else list(range(25)) + [None] + list(range(k - 25, k))
    rows = [["class", *names]]
    for i in shown:
        rows.append(["...", *[""] * len(arrays)] if i is None else [row_names[i], *(fmt_number(a[i]) for a in arrays)])
    return text_table(_even(rows, len("class")), left=())


def _by_length(fields, values) -> dict[int, list]:
    """The 1-D arrays ``values[f]`` of ``fields`` grouped by length, in order."""
    out: dict[int, list] = {}
    for f in fields:
        out.setdefault(values[f].shape[0], []).append(f)
    return out


def _tables(fields, values, labels) -> list[tuple[list, list[str]]]:
    """``(fields, row names)`` of the tables of the 1-D arrays ``values[f]``, one per
    length: the class labels name the rows of a table of their count (a
    bootstrapped reliability table has B + 1 edges beside its B bins), else 0..k-1."""
    return [
        (group, class_names(labels if labels is not None and len(labels) == k else None, k))
        for k, group in _by_length(fields, values).items()
    ]


def jsonable(v: Any) -> Any:
    """``v`` as plain JSON types: arrays as (nested) lists, non-finite floats as None."""
    if isinstance(v, np.ndarray):
        return [jsonable(x) for x in v.tolist()] if v.ndim else jsonable(v.item())
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (np.bool_, np.integer)):
        return v.item()
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    return v


@dataclass(frozen=True)
class RenderContext:
    """What a report knows beyond the scores: class names and the weight column."""

    #: class labels, in class order (None: classes are 0..K-1)
    labels: list | None = None
    #: the name of the column the weights came from (None: not known)
    weight_column: str | None = None
    #: extra settings of the evaluation (threshold, ...)
    settings: dict = field(default_factory=dict)
    #: a sample of ``(y, p)`` pairs, for plots that show rows (regression)
    sample: tuple | None = None
    #: operating targets asked for: ``{"recall": [0.9], "precision": [...], "fpr": [...]}``
    targets: dict = field(default_factory=dict)
    #: bootstrap bands on the curves: ``{"roc": (fpr, lower, upper, level), "pr": ..., "auc": (lower, upper, level)}``
    bands: dict = field(default_factory=dict)


# ---------------------------------------------------------------------- result
class Result(Mapping):
    """Scores computed from an accumulator's state: read-only, dict-like.

    Values are reached as attributes (``r.f1``) or keys (``r["f1"]``);
    :meth:`as_dict` returns a plain ``dict`` copy. Arrays inside are read-only.
    ``meta`` holds what the producing accumulator knew beyond the scores
    (its settings, class labels, whether weights were seen); it is not a score.
    """

    __slots__ = ("_values", "_kind", "_meta")

    #: the section title in a text report (default: the result's kind)
    title: str | None = None

    def __init__(self, kind: str, values: dict[str, Any], meta: dict[str, Any] | None = None):
        for v in values.values():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_meta", dict(meta or {}))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{self._kind} has no field {name!r}; fields: {', '.join(self._values)}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._values))

    def __reduce__(self):
        return (self.__class__, (self._kind, self._values, self._meta))

    @property
    def kind(self) -> str:
        """The result's name, e.g. ``"BinaryScores"``."""
        return self._kind

    @property
    def meta(self) -> dict[str, Any]:
        """What the producing accumulator knew beyond the scores (a copy)."""
        return dict(self._meta)

    @property
    def weighted(self) -> bool:
        """Whether sample weights were seen (counts are then sums of weights)."""
        return bool(self._meta.get("weighted", False))

    def as_dict(self) -> dict[str, Any]:
        """A plain ``dict`` of every field (arrays are copied)."""
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._values.items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={_fmt_repr(v)}" for k, v in self._values.items())
        return f"{self._kind}({body})"

    # --------------------------------------------------------------- rendering
    #: fields that are counts: sums of weights once weights were seen
    counts: tuple[str, ...] = ()

    def report_values(self) -> dict[str, Any]:
        """The values this result adds to a report (every field but ``n``)."""
        return {k: v for k, v in self._values.items() if k != "n"}

    def section_title(self, ctx: RenderContext) -> str:
        return self.title or self._kind

    def section(self, ctx: RenderContext, names: dict[str, str] | None = None) -> list[str]:
        """The lines of this result's section of a text report.

        ``names`` maps a field to the key it has in the report (a member's
        field is prefixed there when another member has a field of the same
        name); by default every field keeps its name.
        """
        fields = list(self.report_values())
        return self._scalar_lines(fields, names) + self._array_lines(fields, ctx, names)

    def _shown(self, field, names) -> str:
        return field if names is None else names.get(field, field)

    def _scalar_lines(self, fields, names=None, notes=None) -> list[str]:
        """``name  value`` lines; a score with ``<score>_ci_lower`` and
        ``<score>_ci_upper`` fields shows them on its line, ``[lower, upper]``."""
        notes = notes or {}
        values = self.report_values()
        fields = [f for f in fields if not isinstance(values[f], np.ndarray)]
        bounded = {f for f in fields if f"{f}_ci_lower" in values and f"{f}_ci_upper" in values}
        fields = [f for f in fields if not (f.endswith(("_ci_lower", "_ci_upper")) and f[:-9] in bounded)]
        width = max([len(self._shown(f, names)) for f in fields] + [8])
        out = []
        for f in fields:
            weighted = self.weighted and f in self.counts
            text = fmt_number(values[f], weighted)
            if f in bounded:
                text += " " + fmt_interval(values, f)
            out.append(f"  {self._shown(f, names):<{width}}  {text}{notes.get(f, '')}")
        return out

    def _array_lines(self, fields, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        arrays = [f for f in fields if isinstance(values[f], np.ndarray)]
        vectors = [f for f in arrays if values[f].ndim == 1]
        matrices = [f for f in arrays if values[f].ndim == 2]
        labels = self._meta.get("labels") or ctx.labels
        out: list[str] = []
        for group, rows in _tables(vectors, values, labels):
            out += ["", *per_class([self._shown(f, names) for f in group], [values[f] for f in group], rows)]
        for f in matrices:
            m = values[f]
            out += ["", f"  {self._shown(f, names)} (rows: actual class, columns: predicted class)"]
            if m.shape[0] > 20:
                out.append(f"  ({m.shape[0]} x {m.shape[1]}: too large to print; see to_json())")
            else:
                row_names = class_names(labels, m.shape[0])
                out.extend(grid(m.tolist(), row_names, row_names, self.weighted and f in self.counts))
        return out

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        """Draw this result's plots into ``folder``; the paths written (none by default)."""
        return []

    def report_extras(self, ctx: RenderContext) -> dict[str, Any]:
        """Entries this result adds to a report's JSON beside the scores (none by default)."""
        return {}

    # --------------------------------------------------------------- notebooks
    def _scalars(self) -> dict[str, Any]:
        return {k: v for k, v in self.report_values().items() if not isinstance(v, (np.ndarray, list))}

    def _per_class(self) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.report_values().items() if isinstance(v, np.ndarray) and v.ndim == 1}

    def to_frame(self, per_class: bool = False):
        """The scores as a pandas ``DataFrame`` (needs pandas).

        One row per score (column ``value``); with ``per_class=True`` instead
        one row per class (named by its label) and one column per per-class
        score, for results that have them.
        """
        pd = optional("pandas", "to_frame()")
        if per_class:
            arrays = self._per_class()
            if not arrays:
                raise ValueError(f"{self._kind} has no per-class scores")
            labels = self._meta.get("labels")
            groups = _by_length(list(arrays), arrays)
            # one row per class: the arrays of the labels' length, else of the most
            # common length (B + 1 bin edges beside B bins are left out)
            fits = labels is not None and len(labels) in groups
            k = len(labels) if fits else max(groups, key=lambda n: len(groups[n]))
            index = pd.Index(labels if fits else range(k), name="class")
            return pd.DataFrame({name: arrays[name] for name in groups[k]}, index=index)
        scalars = self._scalars()
        return pd.DataFrame({"value": list(scalars.values())}, index=pd.Index(list(scalars), name="score"))

    def html_rows(self) -> list[str]:
        rows = [html_row([k, fmt_number(v, self.weighted and k in self.counts)]) for k, v in self._scalars().items()]
        vectors = self._per_class()
        for group, names in _tables(list(vectors), vectors, self._meta.get("labels")):
            shown = range(min(len(names), 50))
            table = [html_row(["class", *group], "th")]
            table += [html_row([names[i], *(fmt_number(vectors[f][i]) for f in group)]) for i in shown]
            rows.append(f"<tr><td colspan='2'><table>{''.join(table)}</table></td></tr>")
        return rows

    def _repr_html_(self) -> str:
        return f"<table><caption>{html.escape(self._kind)}</caption>" + "".join(self.html_rows()) + "</table>"


class LabeledResult(Result):
    """A result of per-class (or per-label) arrays whose rows are named by ``meta["labels"]``."""

    __slots__ = ()

    def report_values(self):
        out = super().report_values()
        labels = self._meta.get("labels")
        if labels is not None:
            out["labels"] = list(labels)
        return out

    def _notes(self, values) -> tuple[list, dict | None]:
        """``(fields, notes)``: the fields a section shows, and notes to their lines."""
        return [k for k in values if k != "labels"], None

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        fields, notes = self._notes(self.report_values())
        lines = self._scalar_lines(fields, names, notes) + self._array_lines(fields, ctx, names)
        if self.weighted:
            column = f" (column {ctx.weight_column!r})" if ctx.weight_column else ""
            lines.append(f"  counts are sums of sample weights{column}")
        return lines
