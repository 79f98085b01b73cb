"""The block runs of an exact multiclass rank state (:mod:`streammetrics._kernels.multirank`) and their AUCs."""

from __future__ import annotations

import math

import numpy as np

from .._kernels import multirank as M
from .._kernels.keys import keys_as_bits
from .._kernels.sort import sort_blocks
from .._protocol.errors import WeightOverflowError
from .._protocol.inputs import raise_rejected
from .._protocol.result import RenderContext, Result, class_names, grid, safe
from .multiclass_bounded import bound_notes, shown_fields
from .ranking.curves import thinned
from .ranking.points import Points
from .ranking.sorting import NUMPY_MAX


class MulticlassRankResult(Result):
    """The AUCs of a multiclass rank state (fields in :class:`MulticlassRankAUC`)."""

    __slots__ = ("_points_of",)  # c -> class c's one-vs-rest points when finalized, for the plots
    title = "Multiclass ranking"
    counts = ("support",)

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        """Figures of one-vs-rest ROC and PR curves (the first ``plots.MAX_CLASS_CURVES`` classes)."""
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
            scores, ab = points_of(c)
            curves = thinned(Points((scores, ab), 0, ab.dtype.kind == "f"), plots.MAX_CURVE_POINTS)
            rocs.append((names[c], *curves["roc"], float(auc[c])))
            prs.append((names[c], *curves["pr"], float(ap[c])))
        return [plots.class_curves(rocs, k, folder, roc=True), plots.class_curves(prs, k, folder, roc=False)]

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        notes = bound_notes(values)  # a bounded state's scores show their bounds on their line
        fields = [f for f in shown_fields(values, notes) if not f.startswith("pair_auc")]
        lines = self._scalar_lines(fields, names, notes) + self._array_lines(fields, ctx, names)
        m = self._values.get("pair_auc")
        if m is not None and m.shape[0] <= 20:
            row_names = class_names(self._meta.get("labels") or ctx.labels, m.shape[0])
            caption = (
                f"  {self._shown('pair_auc', names)} (row a, column b: class a's rows against class b's, by column a)"
            )
            lines += ["", caption, *grid(m.tolist(), row_names, row_names)]
        return lines


def _trimmed(keys, mass, m, lengths):
    """The first ``m`` entries, the buffers (made by the caller, nothing else reading them) reallocated to
    their length: no copy into fresh memory, which runs at page-fault speed for a large run."""
    keys.resize(m, refcheck=False)
    mass.resize(m, refcheck=False)
    return keys, mass, lengths


def merge_block_runs(a, b):
    """One block run holding two."""
    cap = a[0].shape[0] + b[0].shape[0]
    keys, mass, lengths = np.empty(cap, np.uint64), np.empty(cap, a[1].dtype), np.empty_like(a[2])
    return _trimmed(keys, mass, M.merge_block_runs(*a, *b, keys, mass, lengths), lengths)


_NO_VALS = np.zeros(0, np.float64)


def batch_run(y, P, w, k, inputs):
    """The block run ``(keys, mass, lengths)`` of one converted batch (a bad batch raises)."""
    n, weighted = y.shape[0], w.shape[0] > 0
    if n and (y.min() < 0 or y.max() >= k):
        raise_rejected(inputs, (y, P))
    starts = np.zeros(k + 1, np.int64)  # class t's block of a column is starts[t]:starts[t + 1]
    np.cumsum(np.bincount(y, minlength=k), out=starts[1:])
    keys = np.empty(k * n, np.uint64)
    mass = np.empty(k * n, np.float64 if weighted else np.int64)
    vals = np.empty(n) if weighted else _NO_VALS
    lengths = np.zeros((k, k), np.int64)
    tk, tv, pos = np.empty(int(np.max(np.diff(starts))), np.uint64), np.empty(n), np.empty(k, np.int64)
    # numpy's stable sort when small (no radix kernel compiled at first use), by class then key: one call per column
    block_of = np.repeat(np.arange(k), np.diff(starts)) if n <= NUMPY_MAX else None
    m = 0
    for c in range(k):  # column c is gathered, sorted block by block and run in place at m
        region = keys[m : m + n]
        if M.gather_column(y, P.view(np.uint64), w, c, starts, pos, region, vals):
            raise_rejected(inputs, (y, P))
        if block_of is None:
            sort_blocks(region, tk, vals if weighted else None, tv, starts)
        else:
            order = np.lexsort((region, block_of))
            region[:] = region[order]
            if weighted:
                vals[:] = vals[order]
        m += M.column_run(region, vals, starts, region, mass[m:], lengths[c])
    return _trimmed(keys, mass, m, lengths)


def scores_of_run(run, k: int, n: int, weighted: bool, multi_class: str, average: str, meta):
    """The :class:`MulticlassRankResult` of one block run."""
    keys, mass, lengths = run
    exact = not weighted and n * n < 2**63  # 2U of every pair of classes fits an int64
    mass = mass if exact else mass.astype(np.float64, copy=False)
    e = _exponent(mass) if weighted else 0
    if e:
        mass = np.ldexp(mass, -e)
    u2 = np.zeros((k, k), np.int64 if exact else np.float64)
    ap = np.zeros(k)
    ptr, acc, offs = np.empty(k, np.int64), np.empty((k, 4), u2.dtype), np.empty(k + 1, np.int64)
    for c in range(k):  # column c's blocks start where column c - 1's end
        offs[0] = offs[k] if c else 0
        np.cumsum(lengths[c], out=offs[1:])
        offs[1:] += offs[0]
        ap[c] = M.column_scores(keys, mass, offs, c, u2[c], ptr, acc)
        if c == 0:
            blocks = [mass[offs[t] : offs[t + 1]] for t in range(k)]  # column 0's: the classes' masses
    support = np.array([math.fsum(b) if weighted else int(b.sum()) for b in blocks])
    if weighted:
        check_weighted_support(support)
    if exact:
        per_class, pair = _quotients(u2, support, out=u2.view(np.float64))  # K * K numbers held once
    else:
        sup = support.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):  # divided one at a time: products overflow first
            per_class = u2.sum(axis=1) / 2 / safe(sup) / safe(float(sup.sum()) - sup)
            pair = u2  # divided in place: K * K numbers held once
            pair /= 2
            pair /= safe(sup)[:, None]
            pair /= safe(sup)[None, :]
        if not (np.isfinite(per_class).all() and np.isfinite(pair).all()):  # weights near 1e154
            raise WeightOverflowError(scores="the weighted pair counts of the AUCs")
        per_class = np.clip(per_class, 0.0, 1.0)
        np.clip(pair, 0.0, 1.0, out=pair)
        np.fill_diagonal(pair, 0.0)
    values = averages(per_class, pair, support, multi_class, average)
    values.update(precision_fields(ap, support), support=np.ldexp(support, e) if e else support, n=n)
    return MulticlassRankResult("MulticlassRankScores", values, meta)


def _exponent(w: np.ndarray) -> int:
    """The power of two weighted masses are divided by before their pairs are counted: 0 unless the largest is beyond
    ``2**±200``, where products of two masses would overflow or vanish (a power of two changes no rounding)."""
    top = float(w.max()) if w.shape[0] else 0.0
    if not 0.0 < top < math.inf or 2.0**-200 <= top <= 2.0**200:
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


def precision_fields(ap, support) -> dict:
    """The per-class average precisions and their averages."""
    sup = support.astype(np.float64)
    return {
        "per_class_average_precision": ap,
        "macro_average_precision": float(np.mean(ap)),
        "weighted_average_precision": float(np.dot(sup, ap) / safe(float(sup.sum()))),
    }


def _quotients(u2, support, out=None):
    """The per-class and pair AUCs of exact pair counts, each a quotient of integers rounded once (as RankAUC's);
    the pair AUCs are written into ``out`` (which may be ``u2`` itself, seen as float64: each row is read first)."""
    k = u2.shape[0]
    sup = support.astype(np.int64)
    total = int(sup.sum())
    if total * total < 2**54:  # every count and denominator is below 2**53: exact in float64, one rounding
        per_class = u2.sum(axis=1) / (2 * safe(sup * (total - sup)))
        pair = np.empty((k, k)) if out is None else out
        for a in range(k):
            den = sup[a] * sup
            den += den == 0
            den *= 2
            np.divide(u2[a].copy(), den, out=pair[a])
        np.fill_diagonal(pair, 0.0)
        return per_class, pair
    # past 2**53, Python integers divide with one rounding: one row at a time (K numbers held as objects, not K**2)
    per_class, pair, sl = np.empty(k), np.empty((k, k)) if out is None else out, sup.tolist()
    for a in range(k):
        row = u2[a].tolist()
        per_class[a] = sum(row) / (2 * safe(sl[a] * (total - sl[a])))
        pair[a] = [row[b] / (2 * safe(sl[a] * sl[b])) if b != a else 0.0 for b in range(k)]
    return per_class, pair


def averages(per_class, pair, support, multi_class: str, average: str, suffix: str = "") -> dict:
    """Every AUC field from the per-class and pair AUCs (names ending in ``suffix``); the coefficients depend on the
    supports only, so the averages of lower (upper) bounds bound the averages."""
    k = per_class.shape[0]
    sup_f = support.astype(np.float64)
    total_f = float(sup_f.sum())
    ovr_macro = float(np.mean(per_class))
    ovr_weighted = float(np.dot(sup_f, per_class) / safe(total_f))
    sums, dots = [], []
    for a in range(k - 1):  # Hand & Till's pair AUCs above the diagonal, a row at a time (no K * K copy)
        r = pair[a, a + 1 :] + pair[a + 1 :, a]
        r *= 0.5
        sums.append(float(r.sum()))
        dots.append(float(np.dot(sup_f[a] + sup_f[a + 1 :], r)))
    ovo_macro = math.fsum(sums) / (k * (k - 1) // 2) if k > 1 else 0.0
    ovo_weighted = math.fsum(dots) / safe(float((k - 1) * total_f))
    macro, weighted_avg = (ovr_macro, ovr_weighted) if multi_class == "ovr" else (ovo_macro, ovo_weighted)
    values = {"auc": macro if average == "macro" else weighted_avg, "macro_auc": macro, "weighted_auc": weighted_avg}
    values.update(per_class_auc=per_class, ovr_macro_auc=ovr_macro, ovr_weighted_auc=ovr_weighted)
    values.update(ovo_macro_auc=ovo_macro, ovo_weighted_auc=ovo_weighted, pair_auc=pair)
    return {key + suffix: v for key, v in values.items()}


def ovr_points(run, c: int):
    """Column ``c``'s distinct scores (increasing) with class ``c``'s mass and the other classes' at each."""
    keys, mass, lengths = run
    k = lengths.shape[0]
    offs = np.zeros(lengths.size + 1, np.int64)  # one array of K * K + 1 numbers, no temporaries
    np.cumsum(lengths.reshape(-1), out=offs[1:])
    lo, hi = offs[c * k], offs[(c + 1) * k]
    pos = np.zeros(hi - lo, bool)
    pos[offs[c * k + c] - lo : offs[c * k + c + 1] - lo] = True
    uniq, inverse = np.unique(keys[lo:hi], return_inverse=True)
    ab = np.zeros((2, uniq.shape[0]), mass.dtype)
    np.add.at(ab[0], inverse[pos], mass[lo:hi][pos])
    np.add.at(ab[1], inverse[~pos], mass[lo:hi][~pos])
    scores = np.empty(uniq.shape[0])
    keys_as_bits(uniq, scores.view(np.uint64))
    return scores, ab
