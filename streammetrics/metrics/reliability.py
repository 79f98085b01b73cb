"""What every reliability table reports: its figures (ECE, MCE, RMSCE, the Murphy
decomposition of the binned Brier score) and the result that shows them, for
uniform and equal-mass bins alike."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._protocol.result import RenderContext, Result, fmt_number, safe

__all__ = ["MAX_BINS", "CalibrationResult", "calibration_table", "check_n_bins"]

#: the most bins a table may have
MAX_BINS = 100_000


def check_n_bins(n_bins) -> int:
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, numbers.Integral):
        raise TypeError(f"n_bins must be an int, got {type(n_bins).__name__}")
    n_bins = int(n_bins)
    if not 1 <= n_bins <= MAX_BINS:
        raise ValueError(f"n_bins must lie in [1, {MAX_BINS:,}], got {n_bins}")
    return n_bins


def calibration_table(counts, weight, predicted, observed, edges) -> dict:
    """The figures of one reliability table (its four arrays as values, not pairs).

    Bins that hold no row report a count of 0 and, by the guard
    ``safe(x) = x + [x == 0]``, a mean probability and a positive fraction
    of 0.
    """
    total = math.fsum(weight.tolist())
    if total == 0:
        raise ValueError("the sample weights sum to zero: the calibration is undefined")
    mean_predicted = predicted / safe(weight)
    fraction_positive = observed / safe(weight)
    gap = np.abs(fraction_positive - mean_predicted)
    share = weight / total
    held = counts > 0
    base = math.fsum(observed.tolist()) / total
    reliability = math.fsum((share * gap * gap).tolist())
    resolution = math.fsum((share * (fraction_positive - base) ** 2).tolist())
    uncertainty = base * (1.0 - base)
    return {
        "bin_edges": edges.copy(),
        "bin_count": counts.copy(),
        "bin_weight": weight,
        "mean_predicted": mean_predicted,
        "fraction_positive": fraction_positive,
        "ece": math.fsum((share * gap).tolist()),
        "mce": float(gap[held].max()) if held.any() else 0.0,
        "rmsce": math.sqrt(reliability),
        "reliability": reliability,
        "resolution": resolution,
        "uncertainty": uncertainty,
        "binned_brier": reliability - resolution + uncertainty,
    }


class CalibrationResult(Result):
    """A reliability table (``bin_*``, ``mean_predicted``, ``fraction_positive``)
    and its figures (``ece``, ``mce``, ``rmsce``, the Brier decomposition)."""

    __slots__ = ()
    title = "Calibration"
    _TABLE = ("bin_edges", "bin_count", "bin_weight", "mean_predicted", "fraction_positive")

    def section_title(self, ctx: RenderContext) -> str:
        what = self._meta.get("what")
        return self.title if what is None else f"{self.title} ({what})"

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        values = self.report_values()
        scalars = [k for k, v in values.items() if not isinstance(v, np.ndarray)]
        lines = self._scalar_lines(scalars, names)
        lines.append("")
        lines.extend(self._table_lines())
        per = [k for k, v in values.items() if isinstance(v, np.ndarray) and k not in self._TABLE]
        if per:
            lines.extend(self._array_lines(per, ctx, names))
        return lines

    def _table_lines(self) -> list[str]:
        v = self._values
        edges, count = v["bin_edges"], v["bin_count"]
        head = f"  {'bin':>15}  {'rows':>12}  {'mean p':>8}  {'observed':>8}"
        out = [head]
        for b in range(count.shape[0]):
            if count[b] == 0:
                continue
            span = f"({edges[b]:.3g}, {edges[b + 1]:.3g}]" if b else f"[{edges[0]:.3g}, {edges[1]:.3g}]"
            out.append(
                f"  {span:>15}  {fmt_number(int(count[b])):>12}  "
                f"{v['mean_predicted'][b]:>8.4f}  {v['fraction_positive'][b]:>8.4f}"
            )
        empty = int((count == 0).sum())
        if empty:
            out.append(f"  ({empty} of {count.shape[0]} bins hold no row)")
        return out

    def _per_class(self):
        return {k: v for k, v in super()._per_class().items() if k not in self._TABLE}

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        from ..report import plots

        v = self._values
        return [
            plots.reliability(
                v["bin_edges"],
                v["bin_count"],
                v["mean_predicted"],
                v["fraction_positive"],
                v["ece"],
                folder,
                self._meta.get("what", "positive class"),
                self._meta.get("file", "reliability.png"),
            )
        ]
