"""The result of a rank state: its AUC, curves, average precision and operating points, answered by a snapshot of the
state's points (:class:`~.points.Points`)."""

from __future__ import annotations

import numpy as np

from ..._protocol.result import RenderContext, Result, fmt_number, safe
from ..binary import BinaryResult
from .bounded import average_precision_bounds, straddling_of_items
from .points import Points, is_binned, score_columns


def curve_from_points(scores, ab):
    """Thresholds (decreasing) and the cumulative tps, fps (float64) at each."""
    tps, fps = np.cumsum(ab[:, ::-1], axis=1).astype(np.float64)
    return scores[::-1].copy(), tps, fps


def roc(thresholds, tps, fps):
    tps = np.concatenate(([0.0], tps))
    fps = np.concatenate(([0.0], fps))
    return fps / safe(fps[-1]), tps / safe(tps[-1]), np.concatenate(([np.inf], thresholds))


def _precision(tp, fp):
    """``tp / (tp + fp)``, 0 where nothing is called."""
    return np.divide(tp, tp + fp, out=np.zeros_like(tp), where=tp + fp != 0)


def pr(thresholds, tps, fps):
    precision = _precision(tps, fps)
    recall = tps / safe(tps[-1]) if tps.size else tps
    return (np.concatenate((precision[::-1], [1.0])), np.concatenate((recall[::-1], [0.0])), thresholds[::-1].copy())


def det(thresholds, tps, fps, drop_intermediate=False):
    """scikit-learn's ``det_curve`` points, the rates guarded (one class: 0, where scikit-learn raises)."""
    tps, fps = np.concatenate(([0.0], tps)), np.concatenate(([0.0], fps))
    thresholds = np.concatenate(([np.inf], thresholds))
    if drop_intermediate and fps.shape[0] > 2:  # keep the points where the true positives change
        keep = np.concatenate(([True], (np.diff(tps[:-1]) != 0) | (np.diff(tps[1:]) != 0), [True]))
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    first = np.searchsorted(fps, fps[0], side="right") - 1  # false positives start at zero
    last = np.searchsorted(tps, tps[-1]) + 1  # false negatives end at zero
    span = slice(first, last)
    fnr = (tps[-1] - tps[span]) / safe(tps[-1])
    return (fps[span] / safe(fps[-1]))[::-1], fnr[::-1], thresholds[span][::-1]


def gain(thresholds, tps, fps):
    """``(fraction, gain, thresholds)`` from ``(0, 0, inf)``: the shares of the mass called and of the positives."""
    tps, called = np.concatenate(([0.0], tps)), np.concatenate(([0.0], tps + fps))
    return called / safe(called[-1]), tps / safe(tps[-1]), np.concatenate(([np.inf], thresholds))


def thinned(points: Points, limit: int) -> dict:
    """The curves a plot draws, each the points ``report.plots.spread`` keeps of the full curve (``limit`` at most),
    read from ``points`` a few blocks at a time: ``"roc"`` ``(fpr, tpr)``, ``"pr"`` ``(precision, recall)``, ``"gain"``
    ``(fraction, gain)`` and ``"threshold"`` ``(thresholds, precision, recall, f1)`` (every threshold but ``+inf``)."""
    from ...report.plots import spread

    m = points.m
    along = spread(m + 1, limit)  # of the roc, pr and gain curves: point r of roc and gain is boundary m - r
    by_threshold = m - 1 - spread(m, limit)
    wanted = np.unique(np.concatenate((m - along, along, by_threshold)))
    cells, thresholds = points.at(wanted)
    P, N = safe(float(points.P)), safe(float(points.N))

    def pick(boundaries):
        k = np.searchsorted(wanted, boundaries)
        return cells[:, k].astype(np.float64)

    tp, fp, _, _ = pick(m - along)
    out = {"roc": (fp / N, tp / P), "gain": ((tp + fp) / safe(float(points.P) + float(points.N)), tp / P)}
    tp, fp, _, _ = pick(along)
    out["pr"] = (np.where(along == m, 1.0, _precision(tp, fp)), np.where(along == m, 0.0, tp / P))
    cols = score_columns(pick(by_threshold), points.N)
    at = thresholds[np.searchsorted(wanted, by_threshold)]
    out["threshold"] = (at, *(cols[k] for k in ("precision", "recall", "f1")))
    return out


class RankQueries:
    """The curves and threshold queries of a rank state (``self._curve()``, ``self._engine()``): :class:`RankAUC`'s
    and its result's."""

    __slots__ = ()

    def _curve(self):
        return curve_from_points(*self._engine().materialized())

    def roc_curve(self):
        """ROC curve ``(fpr, tpr, thresholds)``: ``sklearn.metrics.roc_curve(..., drop_intermediate=False)`` of the
        same rows (an absent class's rate 0, not NaN); a bin sits at its lower edge.

        >>> from streammetrics import RankAUC
        >>> fpr, tpr, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).roc_curve()
        >>> fpr, tpr, th
        (array([0. , 0. , 0.5, 1. ]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.9, 0.5, 0.2]))
        """
        return roc(*self._curve())

    def pr_curve(self):
        """Precision-recall curve ``(precision, recall, thresholds)`` in
        ``sklearn.metrics.precision_recall_curve``'s order (no positive: recall 0).

        >>> from streammetrics import RankAUC
        >>> p, r, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).pr_curve()
        >>> p, r, th
        (array([0.5 , 0.666..., 1. , 1. ]), array([1. , 1. , 0.5, 0. ]), array([0.2, 0.5, 0.9]))
        """
        return pr(*self._curve())

    def confusion_matrix_at_thresholds(self):
        """``(tns, fps, fns, tps, thresholds)`` at every distinct score, highest first (``float64`` counts):
        ``sklearn.metrics.confusion_matrix_at_thresholds`` of the same rows; a bin sits at its lower edge.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> tns, fps, fns, tps, th = acc.confusion_matrix_at_thresholds()
        >>> tns, fps, fns, tps
        (array([2., 1., 1., 0.]), array([0., 1., 1., 2.]), array([1., 1., 0., 0.]), array([1., 1., 2., 2.]))
        >>> th
        array([0.8 , 0.4 , 0.35, 0.1 ])
        """
        thresholds, tps, fps = self._curve()
        tp_all, fp_all = (tps[-1], fps[-1]) if tps.size else (0.0, 0.0)
        return fp_all - fps, fps, tp_all - tps, tps, thresholds

    def det_curve(self, *, drop_intermediate: bool = False):
        """Detection error tradeoff curve ``(fpr, fnr, thresholds)``: ``sklearn.metrics.det_curve`` of the same rows
        (one class gives guarded rates, where scikit-learn raises); a bin sits at its lower edge.

        >>> from streammetrics import RankAUC
        >>> fpr, fnr, th = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).det_curve()
        >>> fpr, fnr, th
        (array([0.5, 0.5, 0. ]), array([0. , 0.5, 0.5]), array([0.35, 0.4 , 0.8 ]))
        """
        return det(*self._curve(), drop_intermediate=bool(drop_intermediate))

    def gain_curve(self):
        """Cumulative gain curve ``(fraction, gain, thresholds)``: at each threshold (``+inf`` first, then every
        distinct score, highest first) the share of the rows called positive (``s >= t``; of the weight, with
        weights) and the share of the positives among them (the recall; 0 with no positive). Tied rows are called
        together, so the curve has a point per distinct score, not per row.

        >>> from streammetrics import RankAUC
        >>> fraction, gain, th = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).gain_curve()
        >>> fraction, gain
        (array([0.  , 0.25, 0.5 , 0.75, 1.  ]), array([0. , 0.5, 0.5, 1. , 1. ]))
        """
        return gain(*self._curve())

    def lift_curve(self):
        """Lift curve ``(fraction, lift, thresholds)``: :meth:`gain_curve`'s ``gain / fraction`` at every distinct
        score (the ``+inf`` point, where nothing is called, left out), the positives' rate among the rows called
        over their rate overall.

        >>> from streammetrics import RankAUC
        >>> fraction, lift, th = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).lift_curve()
        >>> lift
        array([2.        , 1.        , 1.33333333, 1.        ])
        """
        fraction, gains, thresholds = gain(*self._curve())
        return fraction[1:], gains[1:] / safe(fraction[1:]), thresholds[1:]

    def thinned_curves(self, limit: int | None = None) -> dict:
        """The curves a plot draws, read a few blocks at a time (never the whole run, spilled or not): of each of
        :meth:`roc_curve` ``(fpr, tpr)`` (key ``"roc"``), :meth:`pr_curve` ``(precision, recall)`` (``"pr"``),
        :meth:`gain_curve` ``(fraction, gain)`` (``"gain"``) and of precision, recall and F1 by threshold
        ``(thresholds, precision, recall, f1)`` (``"threshold"``, every threshold but ``+inf``) at most ``limit``
        points (``report.plots.MAX_CURVE_POINTS`` by default), evenly spread along the full curve, ends included.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> fpr, tpr = acc.thinned_curves(limit=3)["roc"]
        >>> fpr, tpr  # points 0, 2 and 4 of roc_curve()
        (array([0. , 0.5, 1. ]), array([0. , 0.5, 1. ]))
        """
        from ...report.plots import MAX_CURVE_POINTS

        return thinned(self._engine(), MAX_CURVE_POINTS if limit is None else int(limit))

    def ks_statistic(self) -> BinaryResult:
        """The Kolmogorov–Smirnov statistic of the scores of the two classes, ``max_t |tpr(t) - fpr(t)|`` (the
        two-sample statistic of ``scipy.stats.ks_2samp``, weighted with weights; 0 with one class), and its
        threshold: :meth:`at_threshold` at the highest threshold reaching it (within a relative 1e-12), with fields
        ``ks``, ``ks_sign`` (1 when the positives score higher there, else -1) and ``ks_lower``, ``ks_upper`` (a
        certified interval of the exact statistic; ``ks`` itself while the state is exact).

        >>> from streammetrics import RankAUC
        >>> r = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9]).ks_statistic()
        >>> r.ks, r.threshold, r.ks_sign
        (0.5, 0.4, 1)
        """
        return self._engine().ks_statistic()

    def at_threshold(self, t) -> BinaryResult:
        """The binary result at the threshold ``t`` (rows with ``s >= t`` called positive): what
        ``BinaryConfusion(threshold=t)`` gives on the same rows, plus ``threshold``. As numpy compares, ``t`` takes
        the scores' own precision: float16 or float32 scores (all of them) are compared with ``t`` rounded to it.
        With ``max_bins`` a bin counts as its lower edge and the result adds certified bounds ``tp_lower``,
        ``tp_upper``, ``fp_lower``, ``fp_upper`` and ``<rate>_lower``/``_upper``, which differ only when ``t`` falls
        inside a bin.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.at_threshold(0.5)
        >>> r.tp, r.fp, r.fn, r.tn, r.recall
        (2, 1, 1, 1, 0.666...)
        """
        return self._engine().at_threshold(t)

    def threshold_for(self, *, recall=None, precision=None, fpr=None, specificity=None) -> BinaryResult:
        """The threshold meeting one target in ``[0, 1]`` (candidates ``+inf`` and every distinct score), and
        :meth:`at_threshold` there with ``target`` and ``target_value``: ``recall``, the highest threshold
        reaching it; ``precision`` and ``specificity``, the lowest reaching it; ``fpr``, the lowest within it. An
        unreachable target is a ``ValueError`` saying the best reached.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.threshold_for(recall=0.9)
        >>> r.threshold, r.recall, r.fp
        (0.4, 1.0, 1)
        >>> acc.threshold_for(precision=1.0).threshold
        0.9
        """
        return self._engine().threshold_for(recall=recall, precision=precision, fpr=fpr, specificity=specificity)

    def best_threshold(self, score=None, *, cost=None) -> BinaryResult:
        """The threshold maximising ``score`` (``"f1"`` by default, or another binary score but the targets; fields
        ``score`` and ``best``), or minimising ``cost``, a 2 x 2 matrix ``[[tn, fp], [fn, tp]]`` of one row's cost
        per cell (field ``cost``). Ties within a relative 1e-12 take the highest threshold.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.best_threshold("f1")
        >>> r.threshold, round(r.f1, 4)
        (0.4, 0.8571)
        >>> acc.best_threshold(cost=[[0, 1], [5, 0]]).threshold  # a miss costs 5 false alarms
        0.4
        """
        return self._engine().best_threshold(score, cost)

    def partial_auc(self, max_fpr, *, mcclish: bool = False) -> float:
        """The area under the ROC curve for false positive rates up to ``max_fpr`` in ``(0, 1]`` (the curve linear
        between its points; ``max_fpr=1`` gives the AUC). ``mcclish=True`` standardises it as ``roc_auc_score(y,
        s, max_fpr=...)`` does; 0 with one class only.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> acc.partial_auc(0.5), acc.partial_auc(1.0) == acc.finalize().auc
        (0.25, True)
        >>> acc.partial_auc(0.5, mcclish=True)  # roc_auc_score(..., max_fpr=0.5)
        0.666...
        """
        return self._engine().partial_auc(max_fpr, mcclish)


class RankResult(RankQueries, Result):
    """The AUC of a rank state, with the curves, average precision and threshold queries of the points the state held
    when finalized (none once pickled); :attr:`exact` tells whether the state was exact.

    >>> import numpy as np
    >>> from streammetrics import RankAUC
    >>> rng = np.random.default_rng(1)
    >>> y = rng.integers(0, 2, 5000)
    >>> s = rng.normal(size=5000) + y
    >>> r = RankAUC(max_bins=50).update(y, s).finalize()
    >>> r.exact, bool(r.average_precision_lower <= r.average_precision() <= r.average_precision_upper)
    (False, True)
    """

    __slots__ = ("_points", "_cache")
    title = "Ranking"
    counts = ("n_pos", "n_neg")

    def __init__(self, kind, values, meta=None, points=None):
        super().__init__(kind, values, meta)
        object.__setattr__(self, "_points", points)
        object.__setattr__(self, "_cache", {})

    def _cached(self, key, make):
        return self._cache[key] if key in self._cache else self._cache.setdefault(key, make())

    def _engine(self) -> Points:
        if self._points is None:
            raise ValueError("this result holds no points (it was unpickled): ask the accumulator")
        return self._cached("points", self._points)

    def _curve(self):
        return self._cached("curve", super()._curve)

    def average_precision(self) -> float:
        """Average precision, as :meth:`RankAUC.average_precision`."""
        return self._cached("ap", lambda: self._engine().average_precision())

    def _curve_bounds(self):
        """``(tps_lower, tps_upper, fps_lower, fps_upper)`` along :meth:`_curve`'s thresholds."""

        def make():
            thresholds, tps, fps = self._curve()
            items = self._engine().items
            if self.exact or not is_binned(items):
                return tps, tps, fps, fps
            up, un = straddling_of_items(items, thresholds[::-1], self.weighted)
            return tps, tps + up[::-1], fps, fps + un[::-1]

        return self._cached("curve_bounds", make)

    def roc_curve_bounds(self):
        """``(fpr_lower, fpr_upper, tpr_lower, tpr_upper)`` along :meth:`roc_curve`: the exact rates of the rows ``s >=
        t`` lie between them (a bin with ``lo < t <= hi`` may hold rows on either side).

        >>> from streammetrics import RankAUC
        >>> r = RankAUC(max_bins=2).update([0, 1, 0, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.5]).finalize()
        >>> fpr, tpr, _ = r.roc_curve()
        >>> fpr_lower, fpr_upper, tpr_lower, tpr_upper = r.roc_curve_bounds()
        >>> bool((fpr_lower <= fpr).all() and (fpr <= fpr_upper).all()), tpr_upper
        (True, array([0.        , 0.33333333, 0.66666667, 1.        , 1.        ]))
        """
        tl, tu, fl, fu = self._curve_bounds()
        _, tps, fps = self._curve()
        p, q = safe(tps[-1]) if tps.size else 1.0, safe(fps[-1]) if fps.size else 1.0
        return tuple(np.concatenate(([0.0], v)) / d for v, d in ((fl, q), (fu, q), (tl, p), (tu, p)))

    def pr_curve_bounds(self):
        """``(precision_lower, precision_upper, recall_lower, recall_upper)`` along :meth:`pr_curve`."""
        tl, tu, fl, fu = self._curve_bounds()
        _, tps, _ = self._curve()
        p = safe(tps[-1]) if tps.size else 1.0
        ends = ((_precision(tl, fu), 1.0), (_precision(tu, fl), 1.0), (tl / p, 0.0), (tu / p, 0.0))
        return tuple(np.concatenate((v[::-1], [e])) for v, e in ends)

    @property
    def exact(self) -> bool:
        """Whether the state was exact (no bin): every figure of this result is then exact."""
        return bool(self._meta["exact"]) if "exact" in self._meta else self._meta.get("max_bins") is None

    def average_precision_bounds(self):
        """``(lower, upper)``: a certified interval holding the exact average precision."""

        def make():
            value = self.average_precision()
            items = None if self.exact else self._engine().items
            if not is_binned(items):
                return value, value
            return average_precision_bounds(items[0], items[1], items[2], self.weighted, value)[1:]

        return self._cached("ap_bounds", make)

    @property
    def average_precision_lower(self) -> float:
        """The lower end of :meth:`average_precision_bounds`."""
        return self.average_precision_bounds()[0]

    @property
    def average_precision_upper(self) -> float:
        """The upper end of :meth:`average_precision_bounds`."""
        return self.average_precision_bounds()[1]

    def report_values(self):
        out = super().report_values()
        if self._points is not None:
            out["average_precision"] = self.average_precision()
            out["average_precision_lower"], out["average_precision_upper"] = self.average_precision_bounds()
        return out

    def _note(self, lower, upper) -> str:
        """``(exact)`` for an exact state's figure, else its certified interval."""
        return "  (exact)" if self.exact else f"  (bounds {fmt_number(lower)} .. {fmt_number(upper)})"

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        bounded = [f for f in ("auc", "average_precision") if f in values]
        notes = {f: self._note(values[f + "_lower"], values[f + "_upper"]) for f in bounded}
        hidden = {f + end for f in bounded for end in ("_lower", "_upper")}
        order = bounded + [k for k in values if k not in notes and k not in hidden]
        return self._scalar_lines(order, names, notes) + self._operating_lines(ctx)

    def operating_points(self, ctx: RenderContext) -> list[tuple[str, object]]:
        """``(label, result or None)``: the chosen threshold, the best F1 and each target reached."""
        if self._points is None or self._values["n"] == 0:
            return []
        ops = self._engine()
        out = []
        chosen = ctx.settings.get("threshold")
        if isinstance(chosen, (int, float)):
            out.append((f"chosen, s >= {chosen:g}", ops.at_threshold(chosen)))
        out.append(("best F1", ops.best_threshold("f1")))
        for name, values in ctx.targets.items():
            for v in values:
                label = f"{name} {'<=' if name == 'fpr' else '>='} {v:g}"
                try:
                    out.append((label, ops.threshold_for(**{name: v})))
                except ValueError:
                    out.append((label, None))
        return out

    _COLUMNS = ("threshold", "precision", "recall", "f1", "fpr")

    @staticmethod
    def _row(r) -> dict:
        has_neg = r.tn + r.fp
        row = {k: r[k] for k in ("threshold", "precision", "recall", "f1")}
        row["fpr"] = 1.0 - r.specificity if has_neg else 0.0
        row.update((k, r[k]) for k in ("tp", "fp", "fn", "tn"))
        if "tp_lower" in r:  # a bounded state's: the certified bounds of each figure
            ends = ("lower", "upper")
            row.update((f"{k}_{e}", r[f"{k}_{e}"]) for k in ("precision", "recall", "f1") for e in ends)
            row["fpr_lower"] = 1.0 - r.specificity_upper if has_neg else 0.0
            row["fpr_upper"] = 1.0 - r.specificity_lower if has_neg else 0.0
            row.update((f"{k}_{e}", r[f"{k}_{e}"]) for k in ("tp", "fp") for e in ends)
        return row

    _BOUNDED = ("precision", "recall", "f1", "fpr")

    def _operating_lines(self, ctx: RenderContext) -> list[str]:
        points = self.operating_points(ctx)
        if not points:
            return []
        width = max(len(label) for label, _ in points) + 2
        line = lambda label, cells: f"  {label:<{width}}" + "".join(f"{c:>11}" for c in cells)  # noqa: E731
        lines = ["", line("operating point", self._COLUMNS)]
        for label, r in points:
            if r is None:
                lines.append(line(label, ["not reached"]))
                continue
            row = self._row(r)
            lines.append(line(label, [fmt_number(row[c]) for c in self._COLUMNS]))
            if r.meta.get("bounds"):  # a bin straddles the threshold: the figures' intervals
                for end in ("lower", "upper"):
                    cells = [fmt_number(row[f"{c}_{end}"]) if c in self._BOUNDED else "" for c in self._COLUMNS]
                    lines.append(line(f"  {end} bound", cells))
        if not self.exact:
            lines.append("  (binned state: a row's figures are exact at its threshold unless bounds follow it)")
        lines.append("  (rows with s >= threshold are called positive; fpr = 1 - specificity)")
        return lines

    def report_extras(self, ctx: RenderContext) -> dict:
        """``ranking_exact`` and the ``operating_points``."""
        out = {"ranking_exact": self.exact}
        if points := self.operating_points(ctx):
            row = lambda r: {"reached": r is not None, **(self._row(r) if r is not None else {})}  # noqa: E731
            out["operating_points"] = [{"point": label, **row(r)} for label, r in points]
        return out

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        from ...report import plots

        curves, v, band = self.thinned_curves(), self._values, ctx.bands.get
        points = [(label, self._row(r)) for label, r in self.operating_points(ctx) if r is not None]
        roc_marks = [(p["fpr"], p["recall"], f"{label} ({p['threshold']:.4g})") for label, p in points]
        pr_marks = [(p["recall"], p["precision"], f"{label} ({p['threshold']:.4g})") for label, p in points]
        masses = (v["n_pos"], v["n_neg"])
        roc = (*curves["roc"], v["auc"], v["auc_lower"], v["auc_upper"], *masses, folder)
        pr = (*curves["pr"], self.average_precision(), *masses, folder)
        out = [
            plots.roc(*roc, marks=roc_marks, exact=self.exact, band=band("roc"), interval=band("auc")),
            plots.pr(*pr, marks=pr_marks, bounds=self.average_precision_bounds(), exact=self.exact, band=band("pr")),
            plots.gain_lift(*curves["gain"], *masses, folder),
        ]
        if self._engine().m:
            marks = [(p["threshold"], label) for label, p in points]
            out.append(plots.threshold_curves(*curves["threshold"], marks, folder))
        return out

    def __reduce__(self):
        return (_rebuild, (self._kind, self._values, self._meta))


def _rebuild(kind, values, meta):
    return RankResult(kind, values, meta)
