"""Exact multiclass AUC (one-vs-rest and one-vs-one) from an n x K score matrix.

(With ``max_bins`` the state is instead a set of bounded binary rank states,
one per class and per ordered class pair: see :mod:`.multiclass_bounded`.)

The state keeps, for every score column ``c`` and every true class ``t``, the
distinct scores ``P[i, c]`` of the rows of class ``t`` in increasing order,
with their count (or weight): ``K * K`` sorted *blocks* (see
:mod:`streammetrics._kernels.multirank`). Every pairwise Mann–Whitney count
is read from two blocks of one column at finalize, so both averaging schemes
come from the same exact, mergeable state:

* one-vs-one (Hand & Till 2001): ``AUC(a | b)`` ranks the rows of classes
  ``a`` and ``b`` by column ``a``: blocks ``(a, a)`` against ``(a, b)``;
* one-vs-rest: class ``c`` against every other row, ranked by column ``c``;
  the negatives' pairs are the sum over the other classes' blocks.

Batches are first copied into a buffer of *pending* rows (checked at once),
which is sorted into a block run in bulk once it holds as many rows as the
runs do (at least 65536); runs are merged log-structured (as
:class:`~streammetrics.RankAUC` merges its runs), so folding ``n`` rows costs
``O(K n log n)`` and any batching, sharding and merge order gives the same
state. A batch larger than the buffer is sorted on its own, without a copy.
Reading the state (``finalize``, saving, pickling, merging into another
accumulator) sorts the pending rows into a temporary run and changes nothing;
``flush()`` sorts them in for good. Memory is ``16 K`` bytes per distinct
(row score, column) pair: the exact state of ``K`` binary AUCs.
"""

from __future__ import annotations

import math
import numpy as np

from .._kernels import multirank as M
from .._protocol.base import Accumulator
from .._protocol.errors import NoObservationsError, WeightOverflowError
from .._protocol.inputs import (
    ClassIndices,
    ClassLabels,
    ClassScores,
    convert,
    raise_rejected,
)
from .._protocol.result import RenderContext, Result, class_names, grid, safe
from .._protocol.runs import RunStack
from .._protocol.state import Field, empty_state
from .multiclass import class_settings
from .multiclass_bounded import BOUNDED_FIELDS, RankMembers, bound_notes, n_members, shown_fields
from .ranking.accumulator import check_max_bins
from .ranking.spill import MIN_MEMORY, parse_memory
from .ranking.curves import average_precision_of, curve_from_points, pr, roc
from .._threads import CORES, helper_pool

__all__ = ["MulticlassRankAUC", "MulticlassRankResult", "multiclass_auc"]

_MULTI_CLASS = ("ovr", "ovo")
_AVERAGE = ("macro", "weighted")
#: below this many rows a batch's blocks are radix-sorted in one kernel
_NUMPY_SORT_MIN = 1 << 15
#: up to this many classes the blocks are sorted by numpy whatever the batch's
#: size: k * k sorts of a few microseconds each, and nothing to compile on
#: first use (the radix kernel takes over a second to compile)
_NUMPY_SORT_CLASSES = 8
#: 2 U of a pair of classes fits an int64 while (total rows)**2 / 2 stays below this
_INT64_LIMIT = 2**63
#: the classes whose curves a bounded result keeps for its plots
_PLOTTED = 20


class MulticlassRankResult(Result):
    """The AUCs of a multiclass rank state (fields in :class:`MulticlassRankAUC`)."""

    # the state's block run when finalized (runs are never changed in place):
    # the per-class curves of the plots are read from it on demand
    # the per-class one-vs-rest points ``c -> (scores, masses)`` of the state
    # when finalized (exact runs and bounded members are never changed in
    # place): the per-class curves of the plots are read from them on demand
    __slots__ = ("_points_of",)
    title = "Multiclass ranking"
    counts = ("support",)

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        """One figure of one-vs-rest ROC curves and one of PR curves, a curve
        per class named by its label (the first
        :data:`~streammetrics.report.plots.MAX_CLASS_CURVES` classes)."""
        from ..report import plots

        points_of = getattr(self, "_points_of", None)
        auc = self._values.get("per_class_auc")
        if points_of is None or auc is None:  # unpickled, or no per-class scores
            return []
        ap = self._values["per_class_average_precision"]
        k = auc.shape[0]
        names = class_names(self._meta.get("labels") or ctx.labels, k)
        rocs, prs = [], []
        for c in range(min(k, plots.MAX_CLASS_CURVES)):
            points = curve_from_points(*points_of(c))
            fpr, tpr, _ = roc(*points)
            precision, recall, _ = pr(*points)
            rocs.append((names[c], fpr, tpr, float(auc[c])))
            prs.append((names[c], precision, recall, float(ap[c])))
        return [plots.class_roc(rocs, k, folder), plots.class_pr(prs, k, folder)]

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        # a bounded state's scores show their bounds on their line, as RankAUC's do
        notes = bound_notes(values)
        fields = [f for f in shown_fields(values, notes) if not f.startswith("pair_auc")]
        lines = self._scalar_lines(fields, names, notes) + self._array_lines(fields, ctx, names)
        m = self._values.get("pair_auc")
        if m is not None and m.shape[0] <= 20:
            row_names = class_names(self._meta.get("labels") or ctx.labels, m.shape[0])
            caption = (f"  {self._shown('pair_auc', names)} (row a, column b: class a's rows "
                       "against class b's, ranked by column a)")
            lines += ["", caption]
            lines += grid(m.tolist(), row_names, row_names)
        return lines



# ------------------------------------------------------------------ block runs
def _entries(run) -> int:
    return run[0].shape[0]


def _merge(a, b):
    """One block run holding two, the columns merged on two threads when large."""
    k = a[2].shape[0]
    o1, o2 = _offsets(a[2]), _offsets(b[2])
    cap = a[0].shape[0] + b[0].shape[0]
    keys = np.empty(cap, np.uint64)
    mass = np.empty(cap, a[1].dtype)
    lengths = np.empty_like(a[2])
    starts = o1[::k] + o2[::k]  # column c written from starts[c]: room for both runs' entries
    written = np.zeros(k, np.int64)

    def work(c, scratch):
        lo1, hi1, lo2, hi2 = o1[c * k], o1[(c + 1) * k], o2[c * k], o2[(c + 1) * k]
        written[c] = M.merge_block_runs(a[0][lo1:hi1], a[1][lo1:hi1], a[2][c:c + 1],
                                        b[0][lo2:hi2], b[1][lo2:hi2], b[2][c:c + 1],
                                        keys[starts[c]:], mass[starts[c]:], lengths[c:c + 1])

    _on_two_threads(k, work, cap >= k * _NUMPY_SORT_MIN)
    keys, mass = _close_gaps(keys, mass, starts, written)
    return keys, mass, lengths


def _close_gaps(keys, mass, starts, written):
    """Move column ``c``'s ``written[c]`` entries from ``starts[c]`` down to
    follow the previous column's, and trim to the entries written."""
    m = 0
    for c in range(written.shape[0]):
        w_c, s_c = int(written[c]), int(starts[c])
        if m != s_c:
            keys[m:m + w_c] = keys[s_c:s_c + w_c]
            mass[m:m + w_c] = mass[s_c:s_c + w_c]
        m += w_c
    return _trimmed(keys, mass, m)


def _trimmed(keys, mass, m):
    if m == keys.shape[0]:
        return keys, mass
    return keys[:m].copy(), mass[:m].copy()


def _on_two_threads(k: int, work, big: bool) -> None:
    """``work(c, scratch)`` for every column ``c``: the even columns on the sort
    pool's worker thread and the odd ones here when there are two cores and
    the work is ``big`` (the kernels and numpy's sort release the GIL);
    ``scratch`` is one dict per thread, for buffers reused across columns."""
    if CORES < 2 or k < 2 or not big:
        scratch: dict = {}
        for c in range(k):
            work(c, scratch)
        return

    def part(cols):
        scratch: dict = {}
        for c in cols:
            work(c, scratch)

    job = helper_pool().submit(part, range(0, k, 2))
    try:
        part(range(1, k, 2))
    finally:
        job.result()


def _buffer(scratch, name, n, dtype):
    buf = scratch.get(name)
    if buf is None or buf.shape[0] < n or buf.dtype != dtype:
        buf = scratch[name] = np.empty(n, dtype)
    return buf[:n]


def _accs(scratch, k, dtype):
    """:func:`~._kernels.multirank.column_scores`' ``k x 4`` scratch of ``dtype``."""
    return _buffer(scratch, f"acc-{np.dtype(dtype).char}", 4 * k, dtype).reshape(k, 4)


class _Columns:
    """One batch's classes counted once, then each column's keys gathered by
    class and sorted block by block on demand (:meth:`sorted_column`)."""

    def __init__(self, y, P, w, k, inputs):
        n = y.shape[0]
        self.n, self.k, self.P, self.inputs, self.y, self.w = n, k, P, inputs, y, w
        self.bits = P.view(np.uint64)
        self.starts = np.empty(k + 1, np.int64)
        if M.class_starts(y, k, self.starts):
            raise_rejected(inputs, (y, P))
        self.weighted = w.shape[0] > 0
        self.largest = int(np.max(np.diff(self.starts)))
        self.big = n >= _NUMPY_SORT_MIN
        self.numpy_sort = self.big or k <= _NUMPY_SORT_CLASSES

    def sorted_column(self, c, scratch, into=None):
        """``(keys, vals)``: column ``c``'s keys in class blocks, each sorted,
        in ``into`` or else this thread's scratch (``vals`` the weights, or
        empty); ``None`` when the column holds a score NaN or infinite."""
        n, starts = self.n, self.starts
        keys = _buffer(scratch, "keys", n, np.uint64) if into is None else into
        vals = _buffer(scratch, "vals", n, np.float64) if self.weighted else _NO_VALS
        pos = _buffer(scratch, "pos", self.k, np.int64)
        if M.gather_column(self.y, self.bits, self.w, c, starts, pos, keys, vals):
            return None
        if self.weighted:
            M.sort_column_payload(keys, vals, starts, _buffer(scratch, "tk", self.largest, np.uint64),
                                  _buffer(scratch, "tv", self.largest, np.float64))
            return keys, vals
        if self.numpy_sort:
            for t in range(self.k):
                keys[starts[t]:starts[t + 1]].sort()
        else:
            M.sort_column(keys, starts, _buffer(scratch, "tk", self.largest, np.uint64))
        return keys, _NO_MASS

    def rejected(self):
        raise_rejected(self.inputs, (self.y, self.P))


_NO_VALS = np.zeros(0, np.float64)
_NO_MASS = np.zeros(0, np.int64)


def batch_run(y, P, w, k, inputs):
    """The block run ``(keys, mass, lengths)`` of one converted batch; raises
    the first bad value's error (nothing else changes) when the batch is bad."""
    cols = _Columns(y, P, w, k, inputs)
    n = cols.n
    keys = np.empty(k * n, np.uint64)
    mass = np.empty(k * n, np.float64 if cols.weighted else np.int64)
    lengths = np.zeros((k, k), np.int64)
    written = np.zeros(k, np.int64)
    bad = []

    def work(c, scratch):
        if bad:
            return
        region = keys[c * n:(c + 1) * n]  # the column's keys are gathered, sorted and run in place
        got = cols.sorted_column(c, scratch, into=region)
        if got is None:
            bad.append(c)
            return
        ck, cv = got
        written[c] = M.column_run(ck, cv, cols.starts, region, mass[c * n:(c + 1) * n], lengths[c])

    _on_two_threads(k, work, cols.big)
    if bad:
        cols.rejected()
    keys, mass = _close_gaps(keys, mass, np.arange(k, dtype=np.int64) * n, written)
    return keys, mass, lengths


# --------------------------------------------------------------------- scores
def _check_choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def _offsets(lengths):
    return np.concatenate(([0], np.cumsum(lengths.reshape(-1)))).astype(np.int64)


def _u2_exact(weighted: bool, n: int) -> bool:
    """Whether pair counts are exact int64 integers (unweighted, ``n**2 / 2 < 2**63``)."""
    return not weighted and n * n < _INT64_LIMIT


def scores_of_run(run, k: int, n: int, weighted: bool, multi_class: str, average: str, meta):
    """The :class:`MulticlassRankResult` of one block run."""
    keys, mass, lengths = run
    exact = _u2_exact(weighted, n)
    if not exact and mass.dtype != np.float64:
        mass = mass.astype(np.float64)
    e = _exponent(mass) if weighted else 0
    if e:
        mass = np.ldexp(mass, -e)
    offs = _offsets(lengths)
    u2 = np.zeros((k, k), np.int64 if exact else np.float64)
    ap = np.zeros(k)

    def work(c, scratch):
        o = offs[c * k:(c + 1) * k + 1]
        ap[c] = M.column_scores(keys, mass, o, c, u2[c], _buffer(scratch, "ptr", k, np.int64),
                                _accs(scratch, k, u2.dtype))

    _on_two_threads(k, work, keys.shape[0] >= k * _NUMPY_SORT_MIN)
    if weighted:
        support = np.zeros(k)
        M.class_mass(mass, lengths, support)
    else:
        support = np.array([int(mass[offs[t]:offs[t + 1]].sum()) for t in range(k)], np.int64)
    return _scores(u2, support, ap, exact, n, multi_class, average, meta, e)


#: masses whose largest lies outside ``2**±SCALED_ABOVE`` are scaled by a power
#: of two before their pairs are counted (see :func:`_exponent`)
SCALED_ABOVE = 200


def _exponent(w: np.ndarray) -> int:
    """The power of two by which weighted masses are divided before their pairs
    are counted: 0 (not scaled) unless the largest is beyond ``2**±200``, where
    products of two masses would overflow or vanish (weights near 1e160 made
    the AUCs NaN, near 1e-200 zero). A power of two changes no rounding, so
    a scaled state's scores are those of the weights as given."""
    if not w.shape[0]:
        return 0
    top = float(w.max())
    if not 0.0 < top < math.inf or 2.0**-SCALED_ABOVE <= top <= 2.0**SCALED_ABOVE:
        return 0
    return int(np.frexp(top)[1])


def _check_weighted_support(support) -> None:
    """Refuse weighted class supports whose total is past float64 or zero."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(support))
    if math.isinf(total) or math.isnan(total):
        raise WeightOverflowError(scores="the weighted supports of the classes")
    if not total > 0:
        raise ValueError("the sample weights sum to zero: the scores are undefined")


def _scores(u2, support, ap, exact: bool, n: int, multi_class: str, average: str, meta, e: int = 0):
    """Every AUC average from the pair counts ``u2`` and the supports (one formula
    path); weighted, both are in units of ``2**e`` (:func:`_exponent`)."""
    k = u2.shape[0]
    if meta.get("weighted"):
        _check_weighted_support(support)
    if exact:
        u2l = u2.tolist()
        sup = [int(v) for v in support]
        total = sum(sup)
        per_class = np.array([sum(u2l[c]) / (2 * safe(sup[c] * (total - sup[c]))) for c in range(k)])
        pair = np.array([[u2l[a][b] / (2 * safe(sup[a] * sup[b])) if a != b else 0.0 for b in range(k)]
                         for a in range(k)]).reshape(k, k)
    else:
        sup = support.astype(np.float64)
        rest = float(sup.sum()) - sup
        with np.errstate(over="ignore", invalid="ignore"):
            # the masses divided one at a time: their products overflow first
            per_class = u2.sum(axis=1) / 2 / safe(sup) / safe(rest)
            pair = u2 / 2 / safe(sup)[:, None] / safe(sup)[None, :]
        if not (np.isfinite(per_class).all() and np.isfinite(pair).all()):
            # the pair masses themselves (weights near 1e154)
            raise WeightOverflowError(scores="the weighted pair counts of the AUCs")
        per_class = np.clip(per_class, 0.0, 1.0)
        pair = np.clip(pair, 0.0, 1.0)
        np.fill_diagonal(pair, 0.0)
    values = _averages(per_class, pair, support, multi_class, average)
    sup_f = support.astype(np.float64)
    total_f = float(sup_f.sum())
    values.update({
        "per_class_average_precision": ap,
        "macro_average_precision": float(np.mean(ap)),
        "weighted_average_precision": float(np.dot(sup_f, ap) / safe(total_f)),
        "support": np.ldexp(support, e) if e else support,
        "n": n,
    })
    return MulticlassRankResult("MulticlassRankScores", values, meta)


def _averages(per_class, pair, support, multi_class: str, average: str, suffix: str = "") -> dict:
    """Every AUC field from the per-class and pair AUCs (each name ending in
    ``suffix``). Every average has non-negative coefficients that depend on
    the supports only, so the averages of lower (upper) bounds bound the
    averages; floating-point sums are monotone in their terms, so the
    bounds computed stay on their side of the value computed."""
    k = per_class.shape[0]
    sup_f = support.astype(np.float64)
    total_f = float(sup_f.sum())
    ovr_macro = float(np.mean(per_class))
    ovr_weighted = float(np.dot(sup_f, per_class) / safe(total_f))
    iu, ju = np.triu_indices(k, 1)
    hand_till = (pair[iu, ju] + pair[ju, iu]) / 2
    prevalence = sup_f[iu] + sup_f[ju]
    ovo_macro = float(np.mean(hand_till)) if hand_till.size else 0.0
    ovo_weighted = float(np.dot(prevalence, hand_till) / safe(float(prevalence.sum())))
    if multi_class == "ovr":
        macro, weighted_avg = ovr_macro, ovr_weighted
    else:
        macro, weighted_avg = ovo_macro, ovo_weighted
    values = {
        "auc": macro if average == "macro" else weighted_avg,
        "macro_auc": macro,
        "weighted_auc": weighted_avg,
        "per_class_auc": per_class,
        "ovr_macro_auc": ovr_macro,
        "ovr_weighted_auc": ovr_weighted,
        "ovo_macro_auc": ovo_macro,
        "ovo_weighted_auc": ovo_weighted,
        "pair_auc": pair,
    }
    return {key + suffix: v for key, v in values.items()}


def scores_of_batch(y, P, w, k: int, inputs, multi_class: str, average: str, meta):
    """The result of one batch, column by column from its sorted keys (no
    run is built: equal scores are counted where they repeat)."""
    e = _exponent(w)
    if e:
        w = np.ldexp(w, -e)
    cols = _Columns(y, P, w, k, inputs)
    n = cols.n
    exact = _u2_exact(cols.weighted, n)
    u2 = np.zeros((k, k), np.int64 if exact else np.float64)
    ap = np.zeros(k)
    bad = []

    def work(c, scratch):
        if bad:
            return
        got = cols.sorted_column(c, scratch)
        if got is None:
            bad.append(c)
            return
        ck, cv = got
        if not exact and not cols.weighted:
            cv = _buffer(scratch, "ones", n, np.float64)
            cv[:] = 1.0
        ap[c] = M.column_scores(ck, cv, cols.starts, c, u2[c], _buffer(scratch, "ptr", k, np.int64),
                                _accs(scratch, k, u2.dtype))

    _on_two_threads(k, work, cols.big)
    if bad:
        cols.rejected()
    if cols.weighted:
        support = np.zeros(k)
        M.weight_sums(w, y, support)
    else:
        support = np.diff(cols.starts)
    return _scores(u2, support, ap, exact, n, multi_class, average, meta, e)


def _ovr_points(run, c: int):
    """Distinct scores of column ``c`` (increasing) and the positive (class ``c``)
    and negative masses at each: the points of the binary curves."""
    keys, mass, lengths = run
    k = lengths.shape[0]
    offs = np.concatenate(([0], np.cumsum(lengths.reshape(-1))))
    lo, hi = offs[c * k], offs[(c + 1) * k]
    ck = keys[lo:hi]
    cm = mass[lo:hi]
    is_pos = np.zeros(hi - lo, bool)
    is_pos[offs[c * k + c] - lo:offs[c * k + c + 1] - lo] = True
    uniq, inverse = np.unique(ck, return_inverse=True)
    ab = np.zeros((2, uniq.shape[0]), mass.dtype)
    np.add.at(ab[0], inverse[is_pos], cm[is_pos])
    np.add.at(ab[1], inverse[~is_pos], cm[~is_pos])
    scores = np.empty(uniq.shape[0], np.float64)
    M.keys_as_scores(uniq, scores.view(np.uint64))
    return scores, ab


class _Pending:
    """Rows folded in and checked, not yet sorted into a block run: copies of
    their classes, scores and weights, sorted in bulk when the buffer is full
    (so a stream of small batches is not merged run by run)."""

    __slots__ = ("P", "rows", "w", "y")

    def __init__(self, capacity: int, k: int, weighted: bool):
        self.y = np.empty(capacity, np.int64)
        self.P = np.empty((capacity, k), np.float64)
        self.w = np.empty(capacity if weighted else 0, np.float64)
        self.rows = 0

    @property
    def weighted(self) -> bool:
        return self.w.shape[0] > 0

    @property
    def nbytes(self) -> int:
        return self.y.nbytes + self.P.nbytes + self.w.nbytes

    def append(self, y, P, w, limit: int) -> None:
        r, n = self.rows, y.shape[0]
        if r + n > self.y.shape[0]:
            self._resize(min(max(r + n, 2 * self.y.shape[0]), max(limit, r + n)))
        self.y[r:r + n] = y
        self.P[r:r + n] = P
        if self.weighted:
            self.w[r:r + n] = w
        self.rows = r + n

    def _resize(self, capacity: int) -> None:
        r = self.rows
        out = _Pending(capacity, self.P.shape[1], self.weighted)
        out.y[:r], out.P[:r] = self.y[:r], self.P[:r]
        if self.weighted:
            out.w[:r] = self.w[:r]
        self.y, self.P, self.w = out.y, out.P, out.w

    def arrays(self):
        r = self.rows
        return self.y[:r], self.P[:r], (self.w[:r] if self.weighted else _NO_VALS)

    def clone(self) -> _Pending:
        out = _Pending(self.rows, self.P.shape[1], self.weighted)
        out.y[:], out.P[:] = self.y[:self.rows], self.P[:self.rows]
        if self.weighted:
            out.w[:] = self.w[:self.rows]
        out.rows = self.rows
        return out


# ---------------------------------------------------------------- accumulator
class MulticlassRankAUC(Accumulator):
    """Streaming, mergeable multiclass AUC (one-vs-rest, one-vs-one), exact or bounded.

    ``update(y, P)`` takes classes ``0..K-1`` (or ``labels``) and an n x K
    matrix of finite scores, one column per class, higher meaning "more
    likely that class" (probabilities, logits, decision values: only each
    column's order matters, and rows need not sum to 1, where scikit-learn
    requires probabilities).

    Parameters
    ----------
    n_classes : int, optional
        K.
    multi_class : {"ovr", "ovo"}
        Which average ``auc`` reports: one-vs-rest (scikit-learn's
        ``roc_auc_score(multi_class="ovr")``) or one-vs-one (Hand & Till 2001,
        scikit-learn's ``multi_class="ovo"``). Both are always in the result.
    average : {"macro", "weighted"}
        The unweighted mean over classes (pairs), or the mean weighted by
        prevalence: class ``c``'s support for one-vs-rest, the pair's joint
        support ``n_a + n_b`` for one-vs-one (as scikit-learn weights them).
    labels : sequence of hashable, optional
        The class labels in column order; ``y`` then holds those labels.
    max_bins : int, optional
        ``None`` (the default) keeps the exact state described below, whose
        memory grows with the distinct scores. A number ``B`` keeps instead
        one bounded binary rank state (``RankAUC(max_bins=B)``, at most
        ``2 B`` entries of 48 bytes) per class, ranking class ``c`` against
        the rest by column ``c``, and with ``multi_class="ovo"`` one more per
        ordered pair of classes ``(a, b)``, ranking class ``a`` against class
        ``b`` by column ``a``: ``K`` states, or ``K**2`` with pairs. Every AUC
        field then comes with certified bounds (below) that contain the exact
        value; a state whose scores fit its bins stays exact (the bounds
        equal the value). A bounded one-vs-rest state keeps no pairs: its
        result has no one-vs-one fields and no ``pair_auc``. The average precision and
        the curves are those of the binned scores (a bin at its lower edge).
    max_memory : int or str, optional
        A memory budget (bytes, or a string such as ``"1GB"``) within which
        every AUC stays exact: the state is then the binary states of
        ``max_bins`` (per class, and per ordered pair with
        ``multi_class="ovo"``), each an exact ``RankAUC(max_memory=...)`` with
        an equal share of the budget that spills its sorted runs to
        temporary files past it. The AUCs equal the in-memory exact state's;
        as with ``max_bins``, a one-vs-rest state keeps no pairs (no
        one-vs-one fields). Excludes ``max_bins``.

    Returns (``finalize()``)
    ------------------------
    auc : float
        The average chosen by ``multi_class`` and ``average``.
    macro_auc, weighted_auc : float
        Both averages of the chosen ``multi_class``.
    per_class_auc : ndarray (K,)
        One-vs-rest AUC of each class: the Mann–Whitney U of its rows against
        all others, ranked by its column, over ``safe(n_c (n - n_c))``.
    ovr_macro_auc, ovr_weighted_auc, ovo_macro_auc, ovo_weighted_auc : float
        Every average, whatever the settings.
    pair_auc : ndarray (K, K)
        ``pair_auc[a, b]``: the AUC of class ``a``'s rows against class
        ``b``'s, both ranked by column ``a`` (diagonal 0). Hand & Till's
        pair score is ``(pair_auc[a, b] + pair_auc[b, a]) / 2``.
    per_class_average_precision : ndarray (K,)
        One-vs-rest average precision of each class (scikit-learn's
        ``average_precision_score`` of ``y == c`` against ``P[:, c]``);
        ``macro_average_precision``, ``weighted_average_precision`` average it.
    support : ndarray (K,)
        Rows of each class (sums of weights once weights were seen).
    n : int
        Rows folded in, zero-weight rows included.
    <field>_lower, <field>_upper
        With ``max_bins`` only: bounds on ``auc``, ``macro_auc``,
        ``weighted_auc``, ``per_class_auc``, the four ``ovr_``/``ovo_``
        averages and ``pair_auc``. Each per-class (pair) bound is its binary
        state's ``auc_lower``/``auc_upper``; each average has non-negative
        coefficients that depend only on the supports, which are exact, so
        the same average of the lower (upper) bounds bounds it.

    Notes
    -----
    AUCs are the specification's Mann–Whitney statistic with midranks (ties
    count one half) over ``safe(n_pos n_neg)``, so a class absent from ``y``
    has a one-vs-rest AUC of 0 and the pairs it belongs to score 0, and these
    zeros enter the macro averages; scikit-learn instead raises (or warns and
    returns NaN) when a class of the score matrix never occurs.

    How it stays exact and mergeable: for every column ``c`` and true class
    ``t`` the state keeps the sorted distinct scores ``P[i, c]`` of the rows
    of class ``t`` with their count (a block). ``AUC(a | b)`` counts pairs
    between blocks ``(a, a)`` and ``(a, b)``; the one-vs-rest count of class
    ``c`` is the sum of its pairs with every other class, since those rows
    are its negatives. Merging adds blocks score by score, so any batching,
    sharding and merge order gives the identical state; unweighted pair
    counts are exact int64 integers (while ``n**2 / 2 < 2**63``, about three
    billion rows; beyond that they are float sums). With weights every pair
    counts with the product of its rows' weights, in compensated float sums,
    and rows of weight 0 are dropped from the blocks. scikit-learn's
    one-vs-one AUC takes no ``sample_weight``; here the weighted one-vs-one
    scores are the same formulas over weighted pair counts and weighted
    supports. Memory: 16 bytes per distinct (score, class) in each of the K
    columns, i.e. ``16 K`` bytes a row for continuous scores.

    :meth:`roc_curve` and :meth:`pr_curve` give one class's one-vs-rest
    curves from the same state. How batches become sorted runs (pending
    rows, :meth:`flush`) is told in :mod:`streammetrics.metrics.multiclass_rank`.

    Examples
    --------
    >>> from streammetrics import MulticlassRankAUC
    >>> P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
    ...      [0.4, 0.3, 0.3], [0.2, 0.2, 0.6], [0.5, 0.2, 0.3]]
    >>> y = [0, 1, 2, 0, 1, 2, 2]
    >>> shard_a = MulticlassRankAUC(3).update(y[:4], P[:4])
    >>> shard_b = MulticlassRankAUC(3).update(y[4:], P[4:])
    >>> r = (shard_a + shard_b).finalize()
    >>> round(r.auc, 6), r.per_class_auc, r.support
    (0.841667, array([0.8  , 0.85 , 0.875]), array([2, 2, 3]))
    >>> round(r.ovo_macro_auc, 6), round(r.ovo_weighted_auc, 6)
    (0.833333, 0.839286)
    >>> r.per_class_average_precision.round(4)
    array([0.75  , 0.75  , 0.8333])

    Bounded memory: 200,000 rows of 5 classes in 40 shards merged, 64 bins per
    class, and bounds that hold the exact one-vs-rest AUC:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 5, 200_000)
    >>> P = rng.random((200_000, 5)) + 0.5 * np.eye(5)[y]
    >>> exact = MulticlassRankAUC(5).update(y, P).finalize()
    >>> shards = [MulticlassRankAUC(5, max_bins=64).update(y[i:i + 5000], P[i:i + 5000])
    ...           for i in range(0, 200_000, 5000)]
    >>> b = sum(shards[1:], shards[0]).finalize()
    >>> bool(b.auc_lower <= exact.auc <= b.auc_upper), bool(0 < b.auc_upper - b.auc_lower < 0.02)
    (True, True)
    >>> bool(np.all((b.per_class_auc_lower <= exact.per_class_auc)
    ...             & (exact.per_class_auc <= b.per_class_auc_upper)))
    True
    """

    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lengths", np.int64, ("n_classes", "n_classes"), merge="custom",
              doc="entries of each (column, true class) block"),
        Field("scores", np.float64, (None,), merge="custom", nonneg=False,
              doc="the blocks' distinct scores, column-major"),
        Field("counts", np.int64, (None,), merge="custom", doc="rows at each score (no weights)"),
        Field("weights", np.float64, (None,), merge="custom", doc="weight at each score"),
    )
    headline = ("auc",)

    def __init__(self, n_classes: int | None = None, multi_class: str = "ovr", average: str = "macro",
                 labels=None, max_bins: int | None = None, *, max_memory=None):
        self.n_classes, self.labels = class_settings("MulticlassRankAUC", n_classes, labels)
        self.multi_class = _check_choice("multi_class", multi_class, _MULTI_CLASS)
        self.average = _check_choice("average", average, _AVERAGE)
        self.max_bins = check_max_bins(max_bins)
        self.max_memory = parse_memory(max_memory)
        if self.max_bins is not None and self.max_memory is not None:
            raise ValueError("max_bins and max_memory exclude each other: max_bins bounds every "
                             "class's state (approximate), max_memory keeps them exact and spills "
                             "past the budget; give one of them")
        k = self.n_classes
        y = ClassIndices("y", k) if self.labels is None else ClassLabels("y", self.labels)
        self.inputs = (y, ClassScores("P", k))
        self._n = 0
        self._weighted = False
        self._stack = RunStack(_merge, _entries)
        self._pending: _Pending | None = None
        self._members: RankMembers | None = None
        if self.max_bins is not None or self.max_memory is not None:
            pairs = self.multi_class == "ovo"
            self.n_members = n_members(k, pairs)
            self.fields = BOUNDED_FIELDS
            # the empty state is sized by the settings: a state file's settings may
            # not declare more members than its arrays hold (the allocation budget)
            empty_state(self.fields, self)
            if self.max_bins is not None:
                member = {"max_bins": self.max_bins}
            else:  # the budget shared by the members: each exact, spilling past its share
                member = {"max_memory": max(MIN_MEMORY, self.max_memory // self.n_members)}
            self._members = RankMembers(k, member, pairs)

    def _settings(self):
        out = {"n_classes": self.n_classes, "multi_class": self.multi_class, "average": self.average}
        if self.labels is not None:
            out["labels"] = self.labels
        if self.max_bins is not None:
            out["max_bins"] = self.max_bins
        if self.max_memory is not None:
            out["max_memory"] = self.max_memory
        return out

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's blocks and the pending rows."""
        if self._members is not None:
            return self._members.nbytes
        pending = 0 if self._pending is None else self._pending.nbytes
        return pending + sum(a.nbytes + b.nbytes + c.nbytes for a, b, c in self._stack)

    # -------------------------------------------------------------- folding
    def _to_float(self):
        self._flush()  # pending rows without weights become a run of counts first
        self._stack = RunStack(_merge, _entries,
                               [(a, b.astype(np.float64), c) for a, b, c in self._stack])
        self._weighted = True

    #: rows the pending buffer holds at least before it is sorted into a run
    _PENDING_MIN = 1 << 16

    def _pending_limit(self) -> int:
        """Pending rows at most: as many as the runs hold, and at least
        :attr:`_PENDING_MIN` (so the pending rows take at most the runs' memory
        and a stream builds runs of doubling size)."""
        pending = 0 if self._pending is None else self._pending.rows
        return max(self._PENDING_MIN, self._n - pending)

    def _fold(self, arrays, w):
        y, P = arrays
        n = y.shape[0]
        if self._members is not None:
            for inp, arr in zip(self.inputs, arrays):  # refused before any change
                inp.check(arr)
            self._members.fold(y, P, w)
            self._weighted = self._members.weighted
            self._n += n
            return 0
        if self._weighted and w.shape[0] == 0:
            w = np.ones(n)
        weighted = w.shape[0] > 0
        limit = self._pending_limit()
        buf = self._pending
        if n >= limit:  # sorted at once, not copied (a bad batch raises here, changing nothing)
            run = batch_run(y, P, w, self.n_classes, self.inputs)
            self._flush()
            if weighted and not self._weighted:
                self._to_float()
            self._stack.push(run)
        else:
            for inp, arr in zip(self.inputs, arrays):  # refused before any change
                inp.check(arr)
            if buf is None or buf.weighted != weighted or buf.rows + n > limit:
                self._flush()
                if weighted and not self._weighted:
                    self._to_float()
                buf = self._pending = _Pending(max(n, 1024), self.n_classes, weighted)
            buf.append(y, P, w, limit)
        self._n += n
        return 0

    def _flush(self) -> None:
        buf, self._pending = self._pending, None
        if buf is not None and buf.rows:
            self._stack.push(batch_run(*buf.arrays(), self.n_classes, self.inputs))

    def flush(self):
        """Sort the pending rows in and merge the state's runs into one now;
        return ``self``.

        Nothing a result shows changes: this only changes how the state is
        held (as a state read back from a file is held), so that later
        ``finalize`` calls, saving and merging into another accumulator need
        no merging.
        """
        with self._guard:
            if self._members is not None:
                self._members.flush()
                return self
            self._flush()
            self._stack.collapse()
        return self

    # ---------------------------------------------------------------- state
    def _run(self):
        """The single block run of the state, pending rows included (the
        accumulator is not changed)."""
        run = self._stack.merged()
        if self._pending is not None and self._pending.rows:
            rows = batch_run(*self._pending.arrays(), self.n_classes, self.inputs)
            run = rows if run is None else _merge(run, rows)
        if run is None:
            k = self.n_classes
            run = (np.zeros(0, np.uint64), np.zeros(0, np.float64 if self._weighted else np.int64),
                   np.zeros((k, k), np.int64))
        return run

    @property
    def _state(self):
        if self._members is not None:
            return self._members.join(self._n)
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._weighted)
        keys, mass, lengths = self._run()
        scores = np.empty(keys.shape[0], np.float64)
        M.keys_as_scores(keys, scores.view(np.uint64))
        st["scores"] = scores
        st["lengths"] = lengths.copy()
        st["weights" if self._weighted else "counts"] = mass.copy()
        return st

    def _load(self, state):
        self._n = int(state["n"][0])
        self._weighted = bool(state["weighted"][0])
        if self._members is not None:
            self._members.load(state)
            return
        self._stack = RunStack(_merge, _entries)
        self._pending = None
        run = self._run_of_state(state)
        if run[0].shape[0]:
            self._stack.push(run)

    def _run_of_state(self, state):
        scores = state["scores"]
        keys = np.empty(scores.shape[0], np.uint64)
        M.scores_as_keys(np.ascontiguousarray(scores).view(np.uint64), keys)
        mass = state["weights"] if state["weighted"][0] else state["counts"]
        if self._weighted:
            mass = mass.astype(np.float64)
        return keys, mass, state["lengths"].copy()

    def _merge_state(self, other):
        if self._members is not None:
            self._members.merge(other)
            self._weighted = self._members.weighted
            self._n += int(other["n"][0])
            return
        if other["weighted"][0] and not self._weighted:
            self._to_float()
        run = self._run_of_state(other)
        if run[0].shape[0]:
            self._stack.push(run)
        self._n += int(other["n"][0])

    def _clone(self):
        out = type(self).__new__(type(self))  # with its own lock
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_guard"})
        out.__dict__.update(_stack=self._stack.copy(),
                            _pending=None if self._pending is None else self._pending.clone(),
                            _members=None if self._members is None else self._members.clone())
        return out

    def _check_state(self, state):
        if self._members is not None:
            self._members.check(state)
            return
        n = int(state["n"][0])
        flag = int(state["weighted"][0])
        if flag not in (0, 1):
            raise ValueError(f"entry 'weighted' must be 0 or 1, got {flag}")
        lengths, scores = state["lengths"], state["scores"]
        name, other = ("weights", "counts") if flag else ("counts", "weights")
        mass = state[name]
        m = scores.shape[0]
        if int(lengths.sum()) != m:
            raise ValueError(f"the block lengths add up to {int(lengths.sum())}, not the {m} scores")
        if mass.shape != (m,):
            raise ValueError(f"entry {name!r} has shape {mass.shape}, expected ({m},)")
        if state[other].shape != (0,):
            raise ValueError(f"entry {other!r} must be empty in this state")
        if np.any(mass <= 0):
            raise ValueError(f"entry {name!r} holds an entry of no observation")
        edges = np.concatenate(([0], np.cumsum(lengths.reshape(-1))))
        inc = np.diff(scores) > 0
        inc_ok = np.ones(m, bool)
        inc_ok[1:] = inc
        inc_ok[edges[:-1][edges[:-1] < m]] = True  # a block's first entry starts afresh
        if not inc_ok.all():
            raise ValueError("a block's scores are not strictly increasing")
        k = self.n_classes
        # each entry of a column holds one row at least (weighted or not)
        most = max(int(edges[(c + 1) * k] - edges[c * k]) for c in range(k))
        if most > n:
            raise ValueError(f"a column holds {most} entries but only {n} observations")
        per_col = [int(mass[edges[c * k]:edges[(c + 1) * k]].sum()) if not flag else
                   float(mass[edges[c * k]:edges[(c + 1) * k]].sum()) for c in range(k)]
        if not flag:
            if n and any(v != n for v in per_col):
                raise ValueError("every column's counts must add up to the observation count")
            if not n and m:
                raise ValueError(f"{m} entries but no observations")
            sup = [[int(mass[edges[c * k + t]:edges[c * k + t + 1]].sum()) for t in range(k)]
                   for c in range(k)]
        else:
            sup = [[float(mass[edges[c * k + t]:edges[c * k + t + 1]].sum()) for t in range(k)]
                   for c in range(k)]
        ref = np.array(sup[0], np.float64)
        for c in range(1, k):
            if not np.allclose(np.array(sup[c], np.float64), ref, rtol=1e-9, atol=0):
                raise ValueError("the columns disagree on the rows of a class")

    # --------------------------------------------------------------- results
    def _meta(self):
        meta = {"labels": self.labels, "weighted": self._weighted,
                "multi_class": self.multi_class, "average": self.average}
        if self.max_bins is not None:
            meta["max_bins"] = self.max_bins
        if self.max_memory is not None:
            meta["max_memory"] = self.max_memory
        return meta

    def _compute(self) -> MulticlassRankResult:
        if self._members is not None:
            return self._bounded_result()
        run = self._run()
        out = scores_of_run(run, self.n_classes, self._n, self._weighted, self.multi_class,
                            self.average, self._meta())
        object.__setattr__(out, "_points_of", lambda c: _ovr_points(run, c))  # the plots' curves
        return out

    def _bounded_result(self) -> MulticlassRankResult:
        """The result of the bounded members: every AUC field with ``_lower``
        and ``_upper`` bounds (no one-vs-one fields without pair members)."""
        members, k = self._members, self.n_classes
        value, lower, upper, n_pos, _ = members.results()
        support = n_pos[:k]
        if self._weighted:
            support = support.astype(np.float64)
            _check_weighted_support(support)
        else:
            support = support.astype(np.int64)
        values = {}
        for arr, suffix in ((value, ""), (lower, "_lower"), (upper, "_upper")):
            values.update(_averages(arr[:k].copy(), members.pair_matrix(arr), support,
                                    self.multi_class, self.average, suffix))
        if not members.pairs:  # a bounded one-vs-rest state keeps no pairs: no such fields
            values = {f: v for f, v in values.items() if not f.startswith(("ovo_", "pair_auc"))}
        ap = np.array([members.average_precision(c) for c in range(k)])
        sup_f = support.astype(np.float64)
        values.update({
            "per_class_average_precision": ap,
            "macro_average_precision": float(np.mean(ap)),
            "weighted_average_precision": float(np.dot(sup_f, ap) / safe(float(sup_f.sum()))),
            "support": support,
            "n": self._n,
        })
        out = MulticlassRankResult("MulticlassRankScores", values, self._meta())
        snapshot = [members.class_points(c) for c in range(min(k, _PLOTTED))]
        object.__setattr__(out, "_points_of", lambda c: snapshot[c])
        return out

    def _class_index(self, cls) -> int:
        if self.labels is not None:
            if cls in self.labels:
                return self.labels.index(cls)
            raise ValueError(f"class {cls!r} is not one of the labels {self.labels!r}")
        if isinstance(cls, (bool, np.bool_)) or not isinstance(cls, (int, np.integer)):
            raise TypeError(f"class must be an integer in 0..{self.n_classes - 1}, got {cls!r}")
        if not 0 <= int(cls) < self.n_classes:
            raise ValueError(f"class must be in 0..{self.n_classes - 1}, got {cls}")
        return int(cls)

    def _curve(self, cls):
        c = self._class_index(cls)
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("MulticlassRankAUC has no observations: call update() first")
            if self._members is not None:
                return curve_from_points(*self._members.class_points(c))
            run = self._run()
        return curve_from_points(*_ovr_points(run, c))

    def roc_curve(self, cls):
        """One-vs-rest ROC curve ``(fpr, tpr, thresholds)`` of class ``cls``
        (an index, or a label), ranked by its column: as
        :meth:`RankAUC.roc_curve` of ``y == cls`` against ``P[:, cls]``.

        >>> from streammetrics import MulticlassRankAUC
        >>> acc = MulticlassRankAUC(2).update([0, 1, 1], [[0.8, 0.2], [0.4, 0.6], [0.6, 0.4]])
        >>> acc.roc_curve(1)
        (array([0., 0., 0., 1.]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.6, 0.4, 0.2]))
        """
        return roc(*self._curve(cls))

    def pr_curve(self, cls):
        """One-vs-rest precision-recall curve ``(precision, recall, thresholds)``
        of class ``cls``, in scikit-learn's order (as :meth:`RankAUC.pr_curve`)."""
        return pr(*self._curve(cls))

    def average_precision(self, cls) -> float:
        """One-vs-rest average precision of class ``cls`` (as
        ``finalize().per_class_average_precision[cls]``, from the curve)."""
        return average_precision_of(*self._curve(cls))


def multiclass_auc(y, P, *, multi_class="ovr", average="macro", n_classes=None, labels=None,
                   sample_weight=None, max_bins=None) -> MulticlassRankResult:
    """Exact multiclass AUC of class scores ``P`` (n x K): a result whose
    ``auc`` is the average chosen by ``multi_class`` ("ovr" or "ovo") and
    ``average`` ("macro" or "weighted"); see :class:`MulticlassRankAUC` for
    every field and the definitions.

    ``n_classes`` defaults to the number of columns of ``P``. With a class
    absent from ``y`` its AUCs are 0 (the specification's guard; scikit-learn
    raises). scikit-learn's one-vs-one AUC takes no ``sample_weight``; here
    it weighs each pair by the product of its rows' weights. ``max_bins``
    gives the bounded result of ``MulticlassRankAUC(max_bins=...)`` (with
    ``_lower``/``_upper`` bounds), in that accumulator's memory.

    >>> from streammetrics import multiclass_auc
    >>> P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
    ...      [0.4, 0.3, 0.3], [0.2, 0.2, 0.6], [0.5, 0.2, 0.3]]
    >>> y = ["cat", "dog", "bird", "cat", "dog", "bird", "bird"]
    >>> r = multiclass_auc(y, P, labels=["cat", "dog", "bird"])
    >>> round(r.auc, 6)
    0.841667
    >>> round(multiclass_auc(y, P, multi_class="ovo", labels=["cat", "dog", "bird"]).auc, 6)
    0.833333
    """
    if n_classes is None and labels is None:
        P = ClassScores("P", None).convert(P)  # the shape error of anything not n x K
        n_classes = P.shape[1]
    acc = MulticlassRankAUC(n_classes, multi_class=multi_class, average=average, labels=labels,
                            max_bins=max_bins)
    (yc, Pc), w, n = convert(acc.inputs, (y, P), sample_weight, True, acc)
    if n == 0:
        raise NoObservationsError("y and P are empty: the AUC needs at least one observation")
    if acc.max_bins is not None:
        return acc.update(y, P, sample_weight=sample_weight).finalize()
    weighted = w.shape[0] > 0
    return scores_of_batch(yc, Pc, w, acc.n_classes, acc.inputs, acc.multi_class, acc.average,
                           {"labels": acc.labels, "weighted": weighted, "multi_class": acc.multi_class,
                            "average": acc.average})
