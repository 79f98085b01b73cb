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
import threading

import numpy as np

from .._kernels import grouped as K
from .._threads import CORES, helper_pool
from .keys import MIN_SPAN
from ..metrics.binary import BinaryConfusion, binary_score_columns
from ..metrics.probability import ProbabilityScores
from .._protocol.state import check_float_sums, within
from ..metrics.regression import OVERFLOW_MESSAGE as REGRESSION_OVERFLOW
from ..metrics.regression import RegressionErrors

__all__ = ["Tables", "tables_for", "commit_counted"]

#: rows from which a batch counted by key is split between two threads
THREADED_ROWS = 1 << 16


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

    #: whether :meth:`count_batch` checks and counts an unweighted batch by its
    #: integer keys in one pass (no codes, no distinct keys found first)
    counts_by_key = False

    def count_batch(self, arrays, keys, known=None):
        """An unweighted batch counted by its integer keys (a :class:`Counted`),
        or ``None`` when they are too sparse for a table."""
        raise NotImplementedError

    def columns_of(self, tables, rows: np.ndarray):
        """A callable giving every scalar field of the results of slices ``rows``
        at once (see :meth:`~.result.LazySlices.field_arrays`), or ``None`` (or
        a callable giving ``None``) where only the results, one by one, give
        them. ``tables`` is a snapshot: it never changes."""
        return None

    def merge(self, tables, idx, other) -> None:
        """Fold the rows of ``other`` (``{field: table}``) into rows ``idx`` of ``tables``."""
        for k, rule in self.rules.items():
            if rule == "sum":
                tables[k][idx] += other[k]
            elif rule == "pairs":
                K.group_merge_pairs(tables[k], idx, other[k])
            else:  # pragma: no cover - the custom rules are the subclasses'
                raise AssertionError(f"no table merge for field {k!r}")

    #: table entries below this in magnitude cannot overflow when merged
    far = 1e300

    def merge_far(self, tables, used: int, other, theirs: int) -> bool:
        """Whether merging any rows of ``other`` into ``tables`` is far from
        overflowing float64: one pass over both (the common case)."""
        floats = [k for k in self.rules if self.dtypes[k].kind == "f"]
        return within([tables[k][:used] for k in floats] + [other[k][:theirs] for k in floats], self.far)

    def merge_check(self, tables, rows, other, their_rows) -> None:
        """Raise what :meth:`merge` of rows ``their_rows`` of ``other`` into rows
        ``rows`` of ``tables`` would give the template's merge to refuse (float
        sums past float64), changing nothing."""
        check_float_sums(self.template.fields, {k: t[rows] for k, t in tables.items()},
                         [{k: t[their_rows] for k, t in other.items()}])

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
    counts_by_key = True

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        t = self.template.threshold
        if w.shape[0] == 0:
            K.group_count(y, p, math.nan if t is None else float(t), local, offset, glob,
                          tables["n"], tables["counts"], np.zeros(4 * glob.shape[0], np.int32))
        elif t is None:
            K.group_sum_labels(y, p, w, local, offset, glob, tables["n"], tables["weighted"],
                               tables["wsums"], keep, tables["wsq"], tables["wsq_rows"])
        else:
            K.group_sum_scores(y, p, t, w, local, offset, glob, tables["n"], tables["weighted"],
                               tables["wsums"], keep, tables["wsq"], tables["wsq_rows"])

    def columns_of(self, tables, rows):
        def columns():
            counts = tables["counts"][rows]
            # sums of weights, or a slice of no rows (its scores undefined): read slice by slice
            if tables["weighted"][rows].any() or (counts.shape[0] and counts.sum(axis=1).min() < 1):
                return None
            return binary_score_columns(counts)

        return columns

    def count_batch(self, arrays, keys, known=None):
        """Check and count the rows ``(y, p)`` of ``keys`` (``int64`` or ``int32``, fewer than
        ``2**31`` rows) in tables over the keys' values: a :class:`Counted`
        (``status`` 0 or the code of :func:`~._kernels.grouped.count_keys`, and
        the ``parts``), or ``None`` when the keys look too sparse for a table (a
        range of more values than half the rows and :data:`.keys.MIN_SPAN`).

        The table spans the range of a sample of the keys (all of them, in a
        small batch) and of ``known`` (the ``(min, max)`` of the keys seen
        before, when not far wider), widened by a sixteenth on each side, so
        the batch is read once; the few rows whose key falls outside are
        counted apart, and when they are more than one in
        :data:`SPILL_SHARE` the exact range is read and the batch counted
        again. A large batch is split in halves counted at once on two
        threads, each into a table of its own, added at the end: the same
        counts."""
        y, p = arrays
        n = keys.shape[0]
        if n <= _SAMPLE:
            lo, hi = (int(v) for v in K.key_range(keys, 0, n))
        else:
            sample = keys[:: n // _SAMPLE]
            lo, hi = int(sample.min()), int(sample.max())
        widest = max(n // 2, MIN_SPAN)
        if known is not None and max(hi, known[1]) - min(lo, known[0]) < widest // 2:
            lo, hi = min(lo, known[0]), max(hi, known[1])  # (keys seen far out are counted apart)
        margin = (hi - lo) // 16 + 1
        lo, hi = max(lo - margin, _INT64_MIN), min(hi + margin, _INT64_MAX)
        if hi - lo + 1 > widest:
            return None
        t = self.template.threshold
        threshold = math.nan if t is None else float(t)
        two = CORES > 1 and n >= THREADED_ROWS
        out = Counted()
        # one slot more than the keys: the rows outside
        tables = out.take(4 * (hi - lo + 2), two)
        out.status, spilled, wraps = _count_halves(y, p, threshold, keys, lo, tables, two,
                                                   max(n // SPILL_SHARE, MIN_ROOM))
        if out.status == 3:  # many keys outside the sampled range: read the exact one
            lo, hi = _key_range(keys, two)
            if hi - lo + 1 > widest:
                out.__exit__()
                return None
            tables = out.take(4 * (hi - lo + 2), two)
            out.status, spilled, wraps = _count_halves(y, p, threshold, keys, lo, tables, two, 0)
        if not out.status:
            words = tables[0].view(np.uint32)
            values = K.present_keys(words, tables[1].view(np.uint32), lo)
            wraps = wraps[wraps < tables[0].shape[0] - 4]  # (those of the rows outside dropped)
            if wraps.shape[0]:  # a key whose every cell wrapped around to 0 still holds rows
                values = np.union1d(values, wraps // 4 + lo)
            out.parts = [(values, (*tables, wraps, values, lo))]
            if spilled.shape[0]:
                out.parts.append(_count_apart(y, p, threshold, keys, spilled))
        return out


#: rows a sample of a batch's keys takes to guess their range
_SAMPLE = 4096

#: a batch whose rows outside the sampled range are more than one in this
#: many (and :data:`MIN_ROOM`) is counted again over the keys' exact range
SPILL_SHARE = 64
MIN_ROOM = 1024

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _by_halves(n: int, two: bool, run):
    """``[run(0, 0, n)]``, or when ``two`` ``[run(0, 0, mid), run(1, mid, n)]``
    for the two halves of ``n`` rows, the second on the helper thread (always
    waited for: it may write the caller's arrays)."""
    if not two:
        return [run(0, 0, n)]
    mid = n // 2
    job = helper_pool().submit(run, 1, mid, n)
    try:
        first = run(0, 0, mid)
    finally:
        second = job.result()
    return [first, second]


def _key_range(keys, two: bool):
    """``(min, max)`` of the keys, on two threads when ``two``."""
    parts = _by_halves(keys.shape[0], two, lambda half, start, stop: K.key_range(keys, start, stop))
    return min(int(lo) for lo, _ in parts), max(int(hi) for _, hi in parts)


#: cells of the count tables each calling thread keeps zeroed between batches
#: (16 MB a table); a batch needing larger ones makes its own
SCRATCH_CELLS = 1 << 24

_scratch = threading.local()


class Counted:
    """A batch counted by key (:meth:`_BinaryTables.count_batch`): ``status``, and
    its ``parts`` ``(values, (tab, other, wraps, index, lo))`` (see
    :func:`commit_counted`): the cells of key ``values[j]`` (the parts' values
    distinct) are ``4 (index[j] - lo) + k`` of the two ``uint8`` tables added
    (``index`` ascending), and :data:`~._kernels.grouped.CELL_WRAP` more for
    each cell of ``wraps``.

    A context: the count tables are valid inside it, then zeroed and kept
    for the thread's next batch (fresh memory costs its first touch, a page
    fault a page)."""

    __slots__ = ("status", "parts", "_held")

    def __init__(self):
        self.status, self.parts, self._held = 0, None, []

    def take(self, size: int, two: bool):
        """Two zeroed ``uint8`` tables of ``size`` cells (the second counted into only
        when ``two``: else it stays zeros)."""
        if size > SCRATCH_CELLS:
            return np.zeros(size, np.uint8), np.zeros(size, np.uint8)
        held = getattr(_scratch, "tables", None)
        _scratch.tables = None  # taken (a second take makes its own)
        if held is None or held[0].shape[0] < size:
            cells = min(SCRATCH_CELLS, 1 << (size - 1).bit_length())
            held = (np.zeros(cells, np.uint8), np.zeros(cells, np.uint8))
        self._held.append((held, size, two))
        return held[0][:size], held[1][:size]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for held, size, two in self._held:
            held[0][:size].fill(0)
            if two:
                held[1][:size].fill(0)
            _scratch.tables = held
        self._held = []


#: rows of the blocks that the two threads counting a batch take in turn
_STRIDE = 1 << 18


def _count_halves(y, p, threshold, keys, lo, tables, two, room):
    """:func:`~._kernels.grouped.count_keys` of the batch into ``tables`` (over keys
    from ``lo``): ``(status, spilled rows, wrapped cells)``.

    The batch is counted in blocks of :data:`_STRIDE` rows. When ``two``, the
    calling thread and the helper each count into a table of their own and
    take the blocks in turn until none is left: a thread slowed by other
    work on its core (or a helper busy elsewhere) takes fewer, where fixed
    halves would leave the other waiting. Each thread holds ``room`` spilled
    rows."""
    n = keys.shape[0]
    blocks = iter(range(0, n, _STRIDE))
    lock = threading.Lock()
    failed = []

    def run(t):
        # the wraps of a thread's table: fewer than its rows over CELL_WRAP in all
        spill, wraps = np.empty(room, np.int64), np.empty(n // K.CELL_WRAP + 1, np.int64)
        m = w = 0
        while not failed:
            with lock:
                start = next(blocks, n)
            if start == n:
                break
            stop = min(start + _STRIDE, n)
            status, dm, dw = K.count_keys(y, p, threshold, keys, lo, tables[t], spill[m:], wraps[w:],
                                          start, stop)
            m, w = m + dm, w + dw
            if status:
                failed.append(status)
        return spill[:m], wraps[:w]

    if not two:
        spilled, wrapped = run(0)
        return (failed[0] if failed else 0), spilled, wrapped
    job = helper_pool().submit(run, 1)
    try:
        first = run(0)
    finally:
        second = job.result()  # always waited for: it writes the caller's arrays
    status = failed[0] if failed else 0
    return status, np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]])


#: keys from which a batch's counts are added to the state on two threads
THREADED_KEYS = 1 << 15


def commit_counted(parts, glob, start: int, rows, counts) -> None:
    """Add the parts of a :class:`Counted` to the state's ``rows`` and ``counts``:
    part ``i``'s keys at the state's rows ``glob[at:at + len]`` (``at`` the keys of
    the parts before it), or from ``start + at`` on when ``glob`` is ``None`` (every
    key new). A part of many keys is added in two halves at once on two threads:
    most of the time is the first touch of the state's fresh rows, which the
    kernel's page faults serve on each core."""
    at = 0
    for values, (tab, other, wraps, index, lo) in parts:
        m = values.shape[0]
        ids = _NO_IDS if glob is None else glob[at:at + m]
        if CORES > 1 and m >= THREADED_KEYS:
            h = m // 2
            job = helper_pool().submit(K.commit_keys, tab, other, index[:h], lo, ids[:h], start + at,
                                       rows, counts)
            try:
                K.commit_keys(tab, other, index[h:], lo, ids[h:], start + at + h, rows, counts)
            finally:
                job.result()  # always waited for: it writes the state
        else:
            K.commit_keys(tab, other, index, lo, ids, start + at, rows, counts)
        if wraps.shape[0]:  # each wrap of a cell around to 0 is CELL_WRAP rows more
            j = np.searchsorted(index, wraps // 4 + lo)
            g = start + at + j if glob is None else ids[j]
            np.add.at(counts, (g, wraps % 4), K.CELL_WRAP)
            np.add.at(rows[:, 0], g, K.CELL_WRAP)
        at += m


_NO_IDS = np.empty(0, np.int64)


def _count_apart(y, p, threshold, keys, rows):
    """The part ``(values, commit arguments)`` of the (checked) ``rows`` counted
    apart (see :class:`Counted`): their cells indexed by the key's place."""
    values, inverse = np.unique(keys[rows], return_inverse=True)
    pr = p[rows]
    called = pr == 1 if math.isnan(threshold) else pr >= threshold
    cells = 4 * inverse.reshape(-1) + 2 * ~called + (y[rows] != 1)
    counts = np.bincount(cells, minlength=4 * values.shape[0])
    wraps = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts // K.CELL_WRAP)
    table = (counts % K.CELL_WRAP).astype(np.uint8)
    index = np.arange(values.shape[0], dtype=np.int64)
    return values.astype(np.int64, copy=False), (table, np.zeros_like(table), wraps, index, 0)


class _ProbabilityTables(Tables):
    takes_values = True
    second = "squares_rows"

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        K.group_probability(y, p, w, local, offset, glob, tables["n"], tables["sums"], keep,
                            tables["squares"], tables["squares_rows"])


class _RegressionTables(Tables):
    second = "squares_rows"
    far = 1e100  # (a merge adds squared differences of means, times row counts)

    def fold(self, tables, arrays, w, local, glob, offset=0, keep=True):
        y, p = arrays
        K.group_regression(y, p, w, local, glob, tables["n"], tables["moments"], tables["sums"], keep,
                           tables["squares"], tables["squares_rows"])

    def merge_check(self, tables, rows, other, their_rows):
        moments, sums = tables["moments"][rows], tables["sums"][rows]  # copies
        K.group_merge_regression(moments, sums, np.arange(rows.shape[0]), other["moments"][their_rows],
                                 other["sums"][their_rows])
        if not (np.all(np.isfinite(moments)) and np.all(np.isfinite(sums))):
            raise ValueError(REGRESSION_OVERFLOW.format(what="the merged state"))

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
