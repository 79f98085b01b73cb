"""The states of many slices of one accumulator kind as tables.

A :class:`Tables` spec says, for an accumulator class whose state is a few
fixed-shape arrays (:class:`~streammetrics.BinaryConfusion`,
:class:`~streammetrics.ProbabilityScores`,
:class:`~streammetrics.RegressionErrors`), how a checked batch is folded
into every slice's row of the tables at once (one group-indexed kernel, one
pass) and how another accumulator's tables merge in. A slice's own state is
its row of every table, so its result is the class's own ``_compute`` of it.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import grouped as K
from ..metrics.binary import BinaryConfusion
from ..metrics.probability import ProbabilityScores
from ..metrics.regression import RegressionErrors

__all__ = ["Tables", "tables_for"]


class Tables:
    """How slices of one group-able accumulator are held as tables (see the module)."""

    def __init__(self, template):
        self.template = template
        self.shapes = {f.name: f.shape_for(template) for f in template.fields}
        self.dtypes = {f.name: f.dtype for f in template.fields}
        self.rules = {f.name: f.merge for f in template.fields}

    def empty(self, rows: int) -> dict[str, np.ndarray]:
        return {k: np.zeros((rows, *s), self.dtypes[k]) for k, s in self.shapes.items()}

    def grown(self, tables: dict, used: int, rows: int) -> dict:
        out = self.empty(rows)
        for k, t in tables.items():
            out[k][:used] = t[:used]
        return out

    #: whether :meth:`fold` takes the rows' integer keys with an offset (``glob``
    #: then indexed by value), not only their codes
    takes_values = False

    #: the field counting the rows whose second moments (for the intervals) the
    #: state keeps, ``None`` when it keeps none: the batch's are folded into the
    #: tables only when the overall accumulator, folded first, kept them (they
    #: overflow float64 there first: its totals bound every slice's)
    second = None

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True) -> None:
        raise NotImplementedError

    def merge(self, tables, idx, other) -> None:
        """Fold the rows of ``other`` (``{field: table}``) into rows ``idx`` of ``tables``."""
        for k, rule in self.rules.items():
            if rule == "sum":
                tables[k][idx] += other[k]
            elif rule == "pairs":
                K.group_merge_pairs(tables[k], idx, other[k])
            else:  # pragma: no cover - the custom rules are the subclasses'
                raise AssertionError(f"no table merge for field {k!r}")

    def state_of(self, tables, g: int) -> dict[str, np.ndarray]:
        """Slice ``g``'s own state (copies)."""
        return {k: t[g].copy() for k, t in tables.items()}

    #: whether the overall state is read off the tables (:meth:`overall_state`)
    #: instead of every row being folded a second time into an overall
    #: accumulator; only where every field merges linearly and the tables keep
    #: every field the overall state needs (the binary confusion's, while the
    #: rows are unweighted: the tables keep no squared weights)
    derives = False

    def overall_state(self, tables, used: int, order=None) -> dict[str, np.ndarray]:
        """The state of all ``used`` slices merged: counts summed (exactly), pairs
        merged slice after slice in ``order`` (the key order, so that equal
        contents give equal states) by the compensated merge."""
        out = {}
        for k, rule in self.rules.items():
            t = tables[k][:used]
            if rule == "sum":
                out[k] = t.sum(axis=0, dtype=self.dtypes[k]).reshape(self.shapes[k])
            elif rule == "pairs":
                into = np.zeros((1, *self.shapes[k]), self.dtypes[k])
                if used and t.any():
                    src = t if order is None else t[order]
                    K.group_merge_pairs(into, np.zeros(used, np.int64), np.ascontiguousarray(src))
                out[k] = into[0]
            else:  # pragma: no cover - only linear specs derive
                raise AssertionError(f"no overall for field {k!r}")
        return out


class _BinaryTables(Tables):
    takes_values = True
    derives = True
    second = "wsq_rows"  # the squared weights of weighted rows

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        t = self.template.threshold
        if w.shape[0] == 0:
            K.group_count(y, p, math.nan if t is None else float(t), local, offset, glob,
                          tables["n"], tables["counts"])
        elif t is None:
            K.group_sum_labels(y, p, w, local, offset, glob, tables["n"], tables["weighted"],
                               tables["wsums"], keep, tables["wsq"], tables["wsq_rows"])
        else:
            K.group_sum_scores(y, p, t, w, local, offset, glob, tables["n"], tables["weighted"],
                               tables["wsums"], keep, tables["wsq"], tables["wsq_rows"])


class _ProbabilityTables(Tables):
    takes_values = True
    second = "squares_rows"

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        K.group_probability(y, p, w, local, offset, glob, tables["n"], tables["sums"], keep,
                            tables["squares"], tables["squares_rows"])


class _RegressionTables(Tables):
    second = "squares_rows"

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        K.group_regression(y, p, w, local, glob, tables["n"], tables["moments"], tables["sums"], keep,
                           tables["squares"], tables["squares_rows"])

    def merge(self, tables, idx, other):
        tables["n"][idx] += other["n"]
        K.group_merge_regression(tables["moments"], tables["sums"], idx, other["moments"], other["sums"])
        tables["squares_rows"][idx] += other["squares_rows"]
        K.group_merge_pairs(tables["squares"], idx, other["squares"])


_BY_CLASS = {
    BinaryConfusion: _BinaryTables,
    ProbabilityScores: _ProbabilityTables,
    RegressionErrors: _RegressionTables,
}


def tables_for(template):
    """The table spec of ``template``'s exact class, or ``None`` (fold slice by slice)."""
    spec = _BY_CLASS.get(type(template))
    return None if spec is None else spec(template)
