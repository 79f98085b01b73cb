"""The block runs of an exact multiclass rank state, and the AUCs read from them.

A *block run* is ``(keys[m], mass[m], lengths[k, k])``: for every score column
``c`` and true class ``t`` the distinct score keys of column ``c`` over the rows
of class ``t``, increasing, with their count (or weight), the blocks laid end to
end column-major (see :mod:`streammetrics._kernels.multirank`). A batch becomes
a block run column by column (:func:`batch_run`); two merge block by block
(:func:`merge_block_runs`); :func:`scores_of_run` reads every pairwise
Mann–Whitney count and the per-class average precision, one column at a time,
the columns on two threads when large.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import multirank as M
from .._protocol.errors import WeightOverflowError
from .._protocol.inputs import raise_rejected
from .._protocol.result import RenderContext, Result, class_names, grid, safe
from .multiclass_bounded import bound_notes, shown_fields
from .ranking.curves import curve_from_points, pr, roc
from .ranking.sorting import NUMPY_MAX, sort_part
from .._kernels.keys import keys_as_bits

__all__ = ["MulticlassRankResult", "batch_run", "merge_block_runs", "scores_of_run", "averages",
           "check_weighted_support", "ovr_points", "PendingRows", "entries"]

#: 2 U of a pair of classes fits an int64 while (total rows)**2 / 2 stays below this
_INT64_LIMIT = 2**63


class MulticlassRankResult(Result):
    """The AUCs of a multiclass rank state (fields in :class:`MulticlassRankAUC`)."""

    # the per-class one-vs-rest points ``c -> (scores, masses)`` of the state
    # when finalized, for the plots' curves (runs are never changed in place)
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
def entries(run) -> int:
    return run[0].shape[0]


def merge_block_runs(a, b):
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

    scratch: dict = {}  # buffers reused from column to column
    for c in range(k):
        work(c, scratch)
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

    def sorted_column(self, c, scratch, into=None):
        """``(keys, vals)``: column ``c``'s keys in class blocks, each sorted,
        in ``into`` or else the scratch (``vals`` the weights, or
        empty); ``None`` when the column holds a score NaN or infinite."""
        n, starts = self.n, self.starts
        keys = _buffer(scratch, "keys", n, np.uint64) if into is None else into
        vals = _buffer(scratch, "vals", n, np.float64) if self.weighted else _NO_VALS
        pos = _buffer(scratch, "pos", self.k, np.int64)
        if M.gather_column(self.y, self.bits, self.w, c, starts, pos, keys, vals):
            return None
        tk = _buffer(scratch, "tk", self.largest, np.uint64)
        tv = _buffer(scratch, "tv", self.largest, np.float64) if self.weighted else None
        for t in range(self.k):
            a, b = starts[t], starts[t + 1]
            sort_part(keys[a:b], vals[a:b] if self.weighted else None, tk, tv, n <= NUMPY_MAX)
        return keys, vals if self.weighted else _NO_MASS

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

    scratch: dict = {}  # buffers reused from column to column
    for c in range(k):
        work(c, scratch)
    if bad:
        cols.rejected()
    keys, mass = _close_gaps(keys, mass, np.arange(k, dtype=np.int64) * n, written)
    return keys, mass, lengths


# --------------------------------------------------------------------- scores
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

    scratch: dict = {}  # buffers reused from column to column
    for c in range(k):
        work(c, scratch)
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


def check_weighted_support(support) -> None:
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
        check_weighted_support(support)
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
    values = averages(per_class, pair, support, multi_class, average)
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


def averages(per_class, pair, support, multi_class: str, average: str, suffix: str = "") -> dict:
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


def ovr_points(run, c: int):
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
    keys_as_bits(uniq, scores.view(np.uint64))
    return scores, ab


class PendingRows:
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
        out = PendingRows(capacity, self.P.shape[1], self.weighted)
        out.y[:r], out.P[:r] = self.y[:r], self.P[:r]
        if self.weighted:
            out.w[:r] = self.w[:r]
        self.y, self.P, self.w = out.y, out.P, out.w

    def arrays(self):
        r = self.rows
        return self.y[:r], self.P[:r], (self.w[:r] if self.weighted else _NO_VALS)

    def clone(self) -> "PendingRows":
        out = PendingRows(self.rows, self.P.shape[1], self.weighted)
        out.y[:], out.P[:] = self.y[:self.rows], self.P[:self.rows]
        if self.weighted:
            out.w[:] = self.w[:self.rows]
        out.rows = self.rows
        return out
