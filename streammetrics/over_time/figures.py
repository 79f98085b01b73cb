"""Scores per bucket or step drawn with interval bands (matplotlib, drawn
off-screen with Agg and its object-oriented API, as :mod:`..report.plots`)."""

from __future__ import annotations

import numpy as np

from ..report import plots


def series(curves, score: str, folder, name: str, title: str, xlabel: str, overall=None) -> str:
    """One line per curve ``(label, x, values, lower, upper, flagged)`` with its
    band where ``lower``/``upper`` are given, ``flagged`` points marked, and
    the ``overall`` score as a dashed line; saved as ``folder/name``."""
    fig = plots.figure(7.0, 4.2)
    ax = fig.add_subplot()
    for i, (label, x, values, lower, upper, flagged) in enumerate(curves):
        colour = f"C{i}"
        values = np.asarray(values, float)
        ax.plot(x, values, "o-", color=colour, ms=3.5, lw=1.5, label=label)
        if lower is not None:
            ax.fill_between(x, np.asarray(lower, float), np.asarray(upper, float), color=colour, alpha=0.2, lw=0)
        if flagged is not None and np.any(flagged):
            odd = np.asarray(flagged, bool)
            leaves = "interval leaves out the overall score"
            ax.plot(np.asarray(x)[odd], values[odd], "D", color="C3", ms=6, zorder=3, label=leaves)
    if overall is not None and np.isfinite(overall):
        ax.axhline(overall, color="0.25", lw=1.1, ls="--", label=f"overall = {overall:.4g}")
    if curves and np.asarray(curves[0][1]).dtype.kind == "M":
        fig.autofmt_xdate()
    ax.set(xlabel=xlabel, ylabel=score, title=title)
    return plots.finish(fig, ax, folder, name, loc="best", fontsize=8)
