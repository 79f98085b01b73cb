"""The states of many slices of a linear accumulator as rows of tables.

A template of declared row terms (:mod:`streammetrics._protocol.terms`) and
fixed field shapes keeps each slice's state as a row of one table per field:
a batch's terms are summed per slice (:func:`sum_terms`) and added by the
template's ``add_sums``; the overall state is the slices' merged.
"""

from __future__ import annotations

import numpy as np

from .._kernels.grouped import group_merge_pairs, group_terms
from .._protocol.state import check_float_sums, within
from .._protocol.terms import Sums
from .._threads import CORES, on_threads

#: rows whose terms are formed at once (their slots and values stay in cache)
CHUNK = 1 << 16
#: rows counted into ``int32`` cells before they are added to the ``int64`` counts
#: (a counted value is a small integer: the cells stay far from 2**31)
FLUSH = 1 << 23

#: rows from which a batch described by counts alone is counted in two halves
#: at once (each into counts of its own: the same counts)
THREADED_ROWS = 1 << 20


def sum_terms(terms, batch, groups: int, local, offset: int = 0, second: bool = False):
    """``(status, sums)``: the terms of ``batch`` summed per group (see
    :func:`~.._kernels.grouped.group_terms` for ``local`` and ``offset``),
    with their second moments when ``second``. A status other than 0 is the
    code of a bad value (``sums`` is then ``None``)."""
    n, size = batch.n, terms.size
    summed = batch.weighted or not terms.counts_only  # (else the counts describe the rows)
    pairs = np.zeros((groups if summed else 0, size, 2))
    squares = np.zeros((groups if summed and second and terms.second is not None else 0, size, 2))
    args = (groups, terms, batch, local, offset, pairs, squares)
    if summed or n < THREADED_ROWS or CORES < 2:
        status, ints = _sum_rows(0, n, *args)
    else:
        (status, ints), (other, theirs) = on_threads(_sum_rows, [(0, n // 2, *args), (n // 2, n, *args)])
        status = status or other
        ints = ints + theirs if not status else None
    if status:
        return status, None
    rows = ints[:, : terms.rows].sum(axis=1, dtype=np.int64)
    return 0, Sums(ints, pairs if pairs.shape[0] else None, squares if squares.shape[0] else None, rows, batch.weighted)


def _sum_rows(start: int, stop: int, groups, terms, batch, local, offset, pairs, squares):
    """``(status, counts)``: the terms of rows ``start .. stop - 1`` summed into
    ``pairs`` and ``squares`` and counted (see :func:`sum_terms`)."""
    powers = terms.second if terms.second is not None else np.zeros(terms.size, np.uint8)
    # int32 counts: half the cache of int64, added to int64 ones before they could pass 2**31
    cells, counts = np.zeros((groups, terms.size), np.int32), None
    m = max(1, min(stop - start, CHUNK))
    slots, values = np.empty((m, terms.width), np.int32), np.empty((m, terms.width))
    for lo in range(start, stop, m):
        k = min(m, stop - lo)
        s, v = (slots, values) if k == m else (slots[:k], values[:k])
        status = terms.fill(batch, lo, s, v, 0, 0)
        if status:
            return status, None
        group_terms(s, v, lo, batch.weights, local, offset, terms.counted, powers, cells, pairs, squares)
        if (lo - start + k) % FLUSH < k and lo + k < stop:
            counts = cells.astype(np.int64) if counts is None else counts + cells
            cells[...] = 0
    return 0, (cells if counts is None else counts + cells)


def select(sums: Sums, rows: np.ndarray) -> Sums:
    """The sums of the groups ``rows`` only."""
    if rows.shape[0] == sums.rows.shape[0]:  # (every group)
        return sums
    pairs, second = (None if a is None else a[rows] for a in (sums.pairs, sums.second))
    return Sums(sums.ints[rows], pairs, second, sums.rows[rows], sums.weighted)


class Tables:
    """Every slice's state of a linear template as rows of tables (see the module)."""

    def __init__(self, template, terms):
        self.template = template
        self.terms = terms
        self.fields = tuple(template.fields)
        self.shapes = {f.name: f.shape_for(template) for f in self.fields}
        self.dtypes = {f.name: f.dtype for f in self.fields}
        self.rules = {f.name: f.merge for f in self.fields}

    def empty(self, rows: int) -> dict[str, np.ndarray]:
        return {k: np.zeros((rows, *s), self.dtypes[k]) for k, s in self.shapes.items()}

    def with_room(self, tables: dict, used: int, total: int) -> dict:
        """``tables``, or new ones holding their first ``used`` rows, with room for
        ``total`` rows (twice as many rows as before: grown now and then)."""
        rows = tables["n"].shape[0]
        if total <= rows:
            return tables
        out = self.empty(max(total, 2 * rows))
        for k, t in tables.items():
            out[k][:used] = t[:used]
        return out

    def add(self, tables: dict, used: int, ids: np.ndarray, sums: Sums) -> None:
        """Add ``sums`` (one group per id) into the rows ``ids`` (those from ``used``
        on are new slices, zeros); ``WeightOverflowError``, the tables
        unchanged, where a total passes float64's range."""
        m, lo = ids.shape[0], int(ids[0]) if ids.shape[0] else 0
        if m and (lo == used or sums.pairs is None) and ids[-1] == lo + m - 1 and (np.diff(ids) == 1).all():
            # one run of rows, new slices (put back to zeros on a refusal) or counts (never
            # refused): added where they lie
            states = {k: t[lo : lo + m] for k, t in tables.items()}
            try:
                self.template.add_sums(sums, state=states)
            except BaseException:
                if lo == used:
                    for a in states.values():
                        a[...] = 0
                raise
            return
        old = ids < used
        states = {}
        for k, t in tables.items():
            a = np.zeros((m, *self.shapes[k]), self.dtypes[k])
            a[old] = t[ids[old]]
            states[k] = a
        self.template.add_sums(sums, state=states)
        for k, t in tables.items():
            t[ids] = states[k]

    def merge(self, tables, idx, other) -> None:
        """Fold the rows of ``other`` (``{field: table}``) into rows ``idx`` of ``tables``."""
        for k, rule in self.rules.items():
            if rule == "sum":
                tables[k][idx] += other[k]
            elif rule == "pairs":
                group_merge_pairs(tables[k], idx, other[k])
            else:
                tables[k][idx] = np.maximum(tables[k][idx], other[k])

    def merge_far(self, tables, used: int, other, theirs: int) -> bool:
        """Whether merging any rows of ``other`` into ``tables`` is far from
        overflowing float64: one pass over both (the common case)."""
        floats = [k for k in self.rules if self.dtypes[k].kind == "f"]
        return within([tables[k][:used] for k in floats] + [other[k][:theirs] for k in floats], 1e300)

    def merge_check(self, tables, rows, other, their_rows) -> None:
        """Raise what :meth:`merge` of rows ``their_rows`` of ``other`` into rows
        ``rows`` of ``tables`` would give the template's merge to refuse (float
        sums past float64), changing nothing."""
        check_float_sums(
            self.fields, {k: t[rows] for k, t in tables.items()}, [{k: t[their_rows] for k, t in other.items()}]
        )

    @staticmethod
    def state_of(tables, g: int) -> dict[str, np.ndarray]:
        """Slice ``g``'s own state (copies)."""
        return {k: t[g].copy() for k, t in tables.items()}

    def overall_state(self, tables, used: int, order=None) -> dict[str, np.ndarray]:
        """The state of all ``used`` slices merged: counts summed (exactly), pairs
        merged slice after slice in ``order`` (the key order, so that equal
        contents give equal states) by the compensated merge, maxima taken."""
        out = {}
        for k, rule in self.rules.items():
            t = tables[k][:used]
            if rule == "sum":
                out[k] = t.sum(axis=0, dtype=self.dtypes[k]).reshape(self.shapes[k])
            elif rule == "pairs":
                into = np.zeros((1, *self.shapes[k]), self.dtypes[k])
                if used and t.any():
                    src = t if order is None else t[order]
                    group_merge_pairs(into, np.zeros(used, np.int64), np.ascontiguousarray(src))
                out[k] = into[0]
            else:
                out[k] = t.max(axis=0, initial=0).astype(self.dtypes[k]).reshape(self.shapes[k])
        return out


def tables_for(template):
    """The :class:`Tables` of ``template`` when it declares row terms that describe
    its whole state, of fixed shapes merged by sums, pairs or maxima; else
    ``None`` (its slices are folded one by one)."""
    terms = template.row_terms()
    fields = template.fields
    if terms is None or not terms.complete or not fields:
        return None
    if any(f.merge not in ("sum", "pairs", "max") or None in f.shape for f in fields):
        return None
    return Tables(template, terms)
