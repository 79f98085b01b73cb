"""ROC and precision-recall curves, and average precision, from sorted points.

The *points* of a rank state are its distinct scores (increasing) with the
positive and negative mass at each; a bin of a bounded state counts as its
lower edge. :class:`RankResult` (what ``RankAUC.finalize`` gives) carries its
points, so the curves, average precision and the report's plots come from the
result alone.
"""

from __future__ import annotations

import numpy as np

from ..._kernels.curves import ap_terms
from ..._protocol.result import RenderContext, Result, fmt_number, safe
from .operating import OperatingPoints

__all__ = ["RankResult", "curve_from_points", "roc", "pr", "average_precision_of", "average_precision_of_points"]


def curve_from_points(scores, ab):
    """Thresholds (decreasing) and the cumulative tps, fps (float64) at each."""
    thresholds = scores[::-1].copy()
    tps = np.cumsum(ab[0, ::-1]).astype(np.float64)
    fps = np.cumsum(ab[1, ::-1]).astype(np.float64)
    return thresholds, tps, fps


def roc(thresholds, tps, fps):
    tps = np.concatenate(([0.0], tps))
    fps = np.concatenate(([0.0], fps))
    fpr = fps / safe(fps[-1])
    tpr = tps / safe(tps[-1])
    return fpr, tpr, np.concatenate(([np.inf], thresholds))


def pr(thresholds, tps, fps):
    ps = tps + fps
    precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
    recall = tps / safe(tps[-1]) if tps.size else tps
    return (
        np.concatenate((precision[::-1], [1.0])),
        np.concatenate((recall[::-1], [0.0])),
        thresholds[::-1].copy(),
    )


def average_precision_of(thresholds, tps, fps) -> float:
    precision, recall, _ = pr(thresholds, tps, fps)
    return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))


def average_precision_of_points(scores, ab) -> float:
    """:func:`average_precision_of` the curve of the points ``(scores, ab)``,
    without building the curve: the same value, bit for bit (see
    :func:`streammetrics._kernels.curves.ap_terms`)."""
    terms = np.empty(ab.shape[1], np.float64)
    ap_terms(ab, terms)
    return float(max(0.0, -np.sum(terms)))



class RankResult(Result):
    """The AUC of a rank state, with its curves.

    Fields: ``auc``, ``n_pos``, ``n_neg``, ``auc_lower``, ``auc_upper``
    (equal to ``auc`` while the state is exact) and ``n``; with
    ``finalize(ci=...)`` also ``auc_ci_lower``, ``auc_ci_upper`` and
    ``auc_se`` (DeLong). :meth:`roc_curve`,
    :meth:`pr_curve` and :meth:`average_precision` read the points the state
    held when it was finalized (a result that was pickled has no points).
    """

    __slots__ = ("_points", "_cache")
    title = "Ranking"
    counts = ("n_pos", "n_neg")

    def __init__(self, kind, values, meta=None, points=None):
        super().__init__(kind, values, meta)
        object.__setattr__(self, "_points", points)
        object.__setattr__(self, "_cache", {})

    def _curve(self):
        if "curve" not in self._cache:
            if self._points is None:
                raise ValueError("this result holds no points (it was unpickled): take the "
                                 "curves from the accumulator")
            points = self._points() if callable(self._points) else self._points
            self._cache["curve"] = curve_from_points(*points)
        return self._cache["curve"]

    def roc_curve(self):
        """``(fpr, tpr, thresholds)`` as :meth:`RankAUC.roc_curve`."""
        return roc(*self._curve())

    def pr_curve(self):
        """``(precision, recall, thresholds)`` as :meth:`RankAUC.pr_curve`."""
        return pr(*self._curve())

    def average_precision(self) -> float:
        """Average precision, as :meth:`RankAUC.average_precision`."""
        if "ap" not in self._cache:
            if "curve" in self._cache:
                self._cache["ap"] = average_precision_of(*self._cache["curve"])
            else:  # the value alone: no curve built for it
                if self._points is None:
                    raise ValueError("this result holds no points (it was unpickled): take the "
                                     "curves from the accumulator")
                points = self._points() if callable(self._points) else self._points
                self._cache["ap"] = average_precision_of_points(*points)
        return self._cache["ap"]

    def _operating(self) -> OperatingPoints:
        if "operating" not in self._cache:
            if self._points is None:
                raise ValueError("this result holds no points (it was unpickled): ask the "
                                 "accumulator for its operating points")
            make = getattr(self._points, "operating", None)
            if make is not None:  # a bounded state's snapshot: its bins give the bounds
                ops = make(self._values["n"])
            else:
                points = self._points() if callable(self._points) else self._points
                ops = OperatingPoints(*points, self._values["n"], self.weighted,
                                      bounded=self._meta.get("max_bins") is not None)
            self._cache["operating"] = ops
        return self._cache["operating"]

    def at_threshold(self, t):
        """The binary result at ``s >= t``, as :meth:`RankAUC.at_threshold`."""
        return self._operating().at_threshold(t)

    def threshold_for(self, *, recall=None, precision=None, fpr=None, specificity=None):
        """The threshold meeting one target, as :meth:`RankAUC.threshold_for`."""
        return self._operating().threshold_for(recall=recall, precision=precision, fpr=fpr,
                                               specificity=specificity)

    def best_threshold(self, score=None, *, cost=None):
        """The best threshold by a score or a cost, as :meth:`RankAUC.best_threshold`."""
        return self._operating().best_threshold(score, cost)

    def partial_auc(self, max_fpr, *, mcclish: bool = False) -> float:
        """The area under the ROC curve up to ``max_fpr``, as :meth:`RankAUC.partial_auc`."""
        return self._operating().partial_auc(max_fpr, mcclish)

    def report_values(self):
        out = {k: v for k, v in self._values.items() if k != "n"}
        if self._points is not None:
            out["average_precision"] = self.average_precision()
        return out

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        lo, hi = values["auc_lower"], values["auc_upper"]
        note = "  (exact)" if lo == hi else f"  (bounds {fmt_number(lo)} .. {fmt_number(hi)})"
        order = ["auc"] + (["average_precision"] if "average_precision" in values else [])
        order += [k for k in values if k not in order and k not in ("auc_lower", "auc_upper")]
        return self._scalar_lines(order, names, {"auc": note}) + self._operating_lines(ctx)

    # -------------------------------------------------- operating points in reports
    def operating_points(self, ctx: RenderContext) -> list[tuple[str, object]]:
        """``(label, result or None)`` of the report's operating points: the
        chosen threshold (a binary evaluation's), the best F1's, and each
        target of ``ctx.targets`` (``None`` when no threshold reaches it)."""
        if self._points is None or self._values["n"] == 0:
            return []
        ops = self._operating()
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
        return {"threshold": r.threshold, "precision": r.precision, "recall": r.recall,
                "f1": r.f1, "fpr": 1.0 - r.specificity if r.tn + r.fp else 0.0,
                "tp": r.tp, "fp": r.fp, "fn": r.fn, "tn": r.tn}

    def _operating_lines(self, ctx: RenderContext) -> list[str]:
        points = self.operating_points(ctx)
        if not points:
            return []
        width = max(len(label) for label, _ in points) + 2
        head = "  " + f"{'operating point':<{width}}" + "".join(f"{c:>11}" for c in self._COLUMNS)
        lines = ["", head]
        for label, r in points:
            if r is None:
                lines.append("  " + f"{label:<{width}}" + f"{'not reached':>11}")
                continue
            row = self._row(r)
            lines.append("  " + f"{label:<{width}}"
                         + "".join(f"{fmt_number(row[c]):>11}" for c in self._COLUMNS))
        lines.append("  (rows with s >= threshold are called positive; fpr = 1 - specificity)")
        return lines

    def report_extras(self, ctx: RenderContext) -> dict:
        points = self.operating_points(ctx)
        if not points:
            return {}
        return {"operating_points": [
            {"point": label, "reached": r is not None, **(self._row(r) if r is not None else {})}
            for label, r in points]}

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        from ...report import plots

        fpr, tpr, _ = self.roc_curve()
        precision, recall, _ = self.pr_curve()
        v = self._values
        points = [(label, self._row(r)) for label, r in self.operating_points(ctx) if r is not None]
        roc_marks = [(p["fpr"], p["recall"], f"{label} ({p['threshold']:.4g})") for label, p in points]
        pr_marks = [(p["recall"], p["precision"], f"{label} ({p['threshold']:.4g})") for label, p in points]
        out = [
            plots.roc(fpr, tpr, v["auc"], v["auc_lower"], v["auc_upper"], v["n_pos"], v["n_neg"], folder,
                      marks=roc_marks),
            plots.pr(precision, recall, self.average_precision(), v["n_pos"], v["n_neg"], folder,
                     marks=pr_marks),
        ]
        ops = self._operating()
        if ops.m:
            out.append(plots.threshold_curves(*ops.curves(),
                                              [(p["threshold"], label) for label, p in points], folder))
        return out

    def __reduce__(self):
        return (_rebuild, (self._kind, self._values, self._meta))


def _rebuild(kind, values, meta):
    return RankResult(kind, values, meta)
