"""PNG drawing primitives: each result type decides what to draw (``Result.plot``)
and calls these. Only matplotlib's object-oriented API is used, drawn off-screen
with Agg (no ``pyplot``): drawing never touches a global backend or opens a window.
"""

from __future__ import annotations

import os

import numpy as np

from .._protocol.errors import optional

__all__ = ["roc", "pr", "figure_label", "class_curves", "confusion", "regression", "reliability"]
__all__ += ["threshold_curves", "slice_scores", "MAX_CLASS_CURVES", "MAX_CURVE_POINTS", "gain_lift", "at_k"]
__all__ += ["figure", "save", "finish", "spread", "series"]

#: Curves with more points are thinned for drawing (``spread``; the scores are unaffected).
MAX_CURVE_POINTS = 4000

#: Per-class figures draw the curves of at most this many classes (the first).
MAX_CLASS_CURVES = 20

#: the axes of ROC and of precision-recall curves
_ROC_AXES = {"xlim": (0, 1), "ylim": (0, 1.01), "aspect": "equal", "xlabel": "false positive rate (1 - specificity)"}
_ROC_AXES["ylabel"] = "true positive rate (recall)"
_PR_AXES = {"xlim": (0, 1), "ylim": (0, 1.01), "xlabel": "recall", "ylabel": "precision"}


def figure(width=6.0, height=5.0):
    """A matplotlib figure drawn off-screen (Agg), of ``width`` x ``height`` inches."""
    optional("matplotlib", "plot()")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _axes(width=6.0, height=5.0):
    """A :func:`figure` and its one plot."""
    fig = figure(width, height)
    return fig, fig.add_subplot()


def save(fig, folder: str, name: str) -> str:
    """Save ``fig`` as ``folder/name`` (the folder made if missing); its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    fig.savefig(path)
    return path


def finish(fig, ax, folder: str, name: str, **legend) -> str:
    """Grid and legend on ``ax``; the figure saved into ``folder`` as ``name``."""
    ax.grid(True, alpha=0.3)
    ax.legend(**legend)
    return save(fig, folder, name)


def spread(n: int, limit: int = MAX_CURVE_POINTS) -> np.ndarray:
    """The indices of the points of an ``n``-point curve that a plot keeps: at most ``limit``, evenly spread, the ends
    included (every index when ``n <= limit``).

    >>> spread(10, 4)
    array([0, 3, 6, 9])
    """
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def _count(n) -> str:
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n) if isinstance(n, (int, np.integer)) else f"{float(n):.4g}"


def _prevalence(n_pos, n_neg) -> float:
    return float(n_pos) / max(float(n_pos) + float(n_neg), 1e-300)


def figure_label(name: str, value: float, lower: float, upper: float, exact=None) -> str:
    """``"AUC = 0.8550 (exact)"`` or ``"AUC = 0.8550 (bounds 0.8540 .. 0.8560)"``: a
    figure of a binned state always shows its interval, and only an exact state's
    says so (``exact=None``: the interval when it is not a point, nothing else)."""
    text = f"{name} = {value:.4f}"
    if exact:
        return text + " (exact)"
    if exact is False or upper != lower:
        text += f" (bounds {lower:.4f} .. {upper:.4f})"
    return text


def _band(ax, band, colour: str, what: str) -> None:
    """A shaded pointwise band ``(x, lower, upper, level)`` under a curve."""
    if band is None:
        return
    x, lo, hi, level = band
    x, lo, hi = (np.asarray(a, float) for a in (x, lo, hi))
    ax.fill_between(x, lo, hi, color=colour, alpha=0.25, lw=0, label=f"{level:.0%} bootstrap band of {what}")


def roc(fpr, tpr, auc, lower, upper, n_pos, n_neg, folder, marks=(), exact=None, band=None, interval=None) -> str:
    """The ROC curve and its AUC (``exact`` as for :func:`figure_label`); ``marks``:
    ``(fpr, tpr, label)`` operating points; ``band``: a pointwise band ``(fpr,
    tpr_lower, tpr_upper, level)``; ``interval``: the AUC's ``(lower, upper, level)``."""
    fig, ax = _axes()
    label = "ROC, " + figure_label("AUC", auc, lower, upper, exact)
    if interval is not None:
        label += f"\n{interval[2]:.0%} interval {interval[0]:.4f} .. {interval[1]:.4f}"
    _band(ax, band, "C0", "the TPR")
    ax.plot(fpr, tpr, color="C0", lw=2, label=label, drawstyle="default")
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="chance, AUC = 0.5")
    _marks(ax, marks)
    ax.set(**_ROC_AXES, title=f"ROC curve ({_count(n_pos)} positives, {_count(n_neg)} negatives)")
    return finish(fig, ax, folder, "roc.png", loc="lower right")


def pr(precision, recall, average_precision, n_pos, n_neg, folder, marks=(), bounds=None, exact=None, band=None) -> str:
    """The precision-recall curve, its average precision (``bounds``: ``(lower, upper)``)
    and the chance level; ``marks``, ``exact`` and ``band`` as for :func:`roc`."""
    prevalence = _prevalence(n_pos, n_neg)
    fig, ax = _axes()
    _band(ax, band, "C1", "the precision")
    lower, upper = bounds if bounds is not None else (average_precision, average_precision)
    label = "PR, " + figure_label("average precision", average_precision, lower, upper, exact)
    ax.plot(recall, precision, color="C1", lw=2, drawstyle="steps-post", label=label)
    ax.axhline(prevalence, color="0.6", lw=1, ls="--", label=f"chance (prevalence) = {prevalence:.4f}")
    _marks(ax, marks)
    ax.set(**_PR_AXES, title="Precision-recall curve")
    return finish(fig, ax, folder, "pr.png", loc="lower left")


def class_curves(curves, total: int, folder: str, roc: bool) -> str:
    """One-vs-rest ROC (``roc``) or precision-recall curves in one figure, one per class: ``curves`` are ``(name, fpr,
    tpr, auc)`` or ``(name, precision, recall, average_precision)``, drawn as given; ``total`` is the number of
    classes (a note says when fewer are drawn)."""
    from matplotlib import colormaps

    fig, ax = _axes(7.0, 6.0)
    cmap = colormaps["tab10" if len(curves) <= 10 else "tab20"]
    for i, (name, a, b, value) in enumerate(curves):
        x, y = (a, b) if roc else (b, a)
        style = "default" if roc else "steps-post"
        label = f"{name}: {'AUC' if roc else 'AP'} = {value:.4f}"
        ax.plot(x, y, lw=1.6, color=cmap(i % cmap.N), drawstyle=style, label=label)
    shown = "" if len(curves) >= total else f"\n(the first {len(curves)} of {total} classes drawn)"
    if roc:
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="chance, AUC = 0.5")
    what = "ROC curves" if roc else "Precision-recall curves"
    ax.set(**(_ROC_AXES if roc else _PR_AXES), title=f"{what}, each class against the rest{shown}")
    name, loc = ("roc_per_class.png", "lower right") if roc else ("pr_per_class.png", "lower left")
    return finish(fig, ax, folder, name, loc=loc, fontsize=8 if len(curves) <= 10 else 6)


def _marks(ax, marks) -> None:
    for i, (x, y, label) in enumerate(marks):
        ax.plot([x], [y], marker="o", ms=7, ls="none", color=f"C{3 + i}", label=label, zorder=5)


def threshold_curves(thresholds, precision, recall, f1, marks, folder: str) -> str:
    """Precision, recall and F1 against the threshold (highest threshold first);
    ``marks`` are ``(threshold, label)`` vertical lines."""
    fig, ax = _axes(7.0, 4.5)
    for values, colour, label in ((precision, "C1", "precision"), (recall, "C0", "recall"), (f1, "C2", "F1")):
        ax.plot(thresholds, values, color=colour, lw=2, drawstyle="steps-post", label=label)
    for i, (x, label) in enumerate(marks):
        ax.axvline(x, color=f"C{3 + i}", lw=1, ls="--", label=label)
    ax.set(
        ylim=(0, 1.01),
        xlabel="threshold (rows with s >= threshold are called positive)",
        ylabel="rate",
        title="Precision, recall and F1 by threshold",
    )
    return finish(fig, ax, folder, "threshold.png", loc="best")


def gain_lift(fraction, gains, n_pos, n_neg, folder: str) -> str:
    """The cumulative gain curve above (with chance and the perfect ranking) and the lift below, against the share of
    the rows called positive."""
    x, g = np.asarray(fraction, float), np.asarray(gains, float)
    prevalence = _prevalence(n_pos, n_neg)
    fig = figure(6.0, 7.0)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    top.plot(x, g, color="C0", lw=2, label="model")
    top.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="chance")
    top.plot([0, prevalence, 1], [0, 1, 1], color="C2", lw=1, ls=":", label="perfect ranking")
    top.set(xlim=(0, 1), ylim=(0, 1.01), ylabel="share of the positives found", title="Cumulative gain and lift")
    held = x > 0
    bottom.plot(x[held], g[held] / x[held], color="C0", lw=2)
    bottom.axhline(1.0, color="0.6", lw=1, ls="--")
    bottom.set(xlabel="share of the rows called positive (highest scores first)", ylabel="lift")
    bottom.grid(True, alpha=0.3)
    return finish(fig, top, folder, "gain.png", loc="lower right")


def reliability(
    edges, counts, mean_predicted, fraction_positive, ece, folder, what="positive class", name="reliability.png"
):
    """Reliability diagram: each bin's positive fraction against its mean probability,
    ECE in the legend, and the rows per bin as a histogram below."""
    edges = np.asarray(edges, float)
    counts = np.asarray(counts)
    held = counts > 0
    fig = figure(6.0, 6.5)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    top.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfectly calibrated")
    x, y = np.asarray(mean_predicted)[held], np.asarray(fraction_positive)[held]
    top.plot(x, y, marker="o", color="C0", lw=2, label=f"{what}, ECE = {ece:.4f}")
    top.set(xlim=(0, 1), ylim=(0, 1.01), ylabel="observed fraction", title=f"Reliability diagram ({len(counts)} bins)")
    bottom.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="C0", alpha=0.6)
    bottom.set(xlabel="predicted probability", ylabel="rows")
    return finish(fig, top, folder, name, loc="upper left")


def confusion(matrix: np.ndarray, folder: str, title: str, headline: str, labels=None) -> str:
    """Heatmap of a confusion matrix, colours normalised by row (recall)."""
    m = np.asarray(matrix, dtype=float)
    k = m.shape[0]
    rows = m.sum(axis=1, keepdims=True)
    share = m / np.where(rows == 0, 1, rows)
    size = min(max(4.5, 0.5 * k + 2.5), 14.0)
    fig, ax = _axes(size + 1.2, size)
    im = ax.imshow(share, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    cbar = fig.colorbar(im, ax=ax, shrink=0.8)
    cbar.set_label("share of the actual class (row)")
    labels = [str(x) for x in (labels if labels is not None else range(k))]
    if k <= 30:
        ax.set_xticks(range(k), labels=labels, rotation=45 if k > 8 else 0)
        ax.set_yticks(range(k), labels=labels)
    if k <= 12:
        integer = np.all(m == np.round(m))
        for i in range(k):
            for j in range(k):
                text = f"{int(m[i, j]):,}" if integer else f"{m[i, j]:.4g}"
                colour = "white" if share[i, j] > 0.6 else "black"
                label = f"{text}\n{share[i, j]:.1%}"
                ax.text(j, i, label, ha="center", va="center", fontsize=9 if k <= 6 else 7, color=colour)
    ax.set(xlabel="predicted class", ylabel="actual class", title=f"{title}\n{headline}")
    return save(fig, folder, "confusion.png")


def regression(y: np.ndarray, p: np.ndarray, report, folder: str, total: int) -> str:
    """Predicted vs actual, and residuals vs predicted, from a sample of pairs."""
    fig = figure(11, 5)
    ax1, ax2 = fig.subplots(1, 2)
    n = y.shape[0]
    alpha = 0.5 if n < 2000 else 0.2 if n < 10000 else 0.1
    shown = f"{_count(n)} sampled of {_count(total)} rows" if n < total else f"all {_count(n)} rows"
    ax1.scatter(y, p, s=4, alpha=alpha, color="C0", edgecolors="none", rasterized=True)
    lo = float(min(y.min(), p.min())) if n else 0.0
    hi = float(max(y.max(), p.max())) if n else 1.0
    label = f"p = y;  R² = {report['r2']:.4f}, RMSE = {report['rmse']:.4g}"
    ax1.plot([lo, hi], [lo, hi], color="C3", lw=1.5, label=label)
    ax1.set(xlabel="actual y", ylabel="predicted p", title=f"Predicted vs actual ({shown})")
    ax1.legend(loc="upper left")
    ax1.grid(True, alpha=0.3)
    ax2.scatter(p, y - p, s=4, alpha=alpha, color="C2", edgecolors="none", rasterized=True)
    ax2.axhline(0, color="C3", lw=1.5, label=f"zero;  MAE = {report['mae']:.4g}")
    ax2.set(xlabel="predicted p", ylabel="residual y - p", title="Residuals vs predicted")
    return finish(fig, ax2, folder, "regression.png", loc="upper left")


def slice_scores(labels, values, lower, upper, flagged, overall, score, rows, folder, title, note, name="slices.png"):
    """A dot chart of one score per slice, top to bottom: whiskers from ``lower`` to
    ``upper``, the ``flagged`` slices (their interval leaves out the ``overall``
    score, a vertical line) in another colour, ``rows`` as sizes, ``note`` below."""
    k = len(labels)
    fig, ax = _axes(7.0, max(2.5, 1.2 + 0.28 * k))
    y = np.arange(k)[::-1].astype(float)
    values = np.asarray(values, float)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    defined = np.isfinite(values)
    whisk = defined & np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
    if whisk.any():
        err = np.vstack([values[whisk] - lower[whisk], upper[whisk] - values[whisk]])
        style = dict(fmt="none", ecolor="0.55", elinewidth=1.2, capsize=2.5, zorder=2)
        ax.errorbar(values[whisk], y[whisk], xerr=np.clip(err, 0, None), **style)
    plain = defined & ~np.asarray(flagged, bool)
    odd = defined & np.asarray(flagged, bool)
    if plain.any():  # a legend entry only for what is drawn
        ax.plot(values[plain], y[plain], "o", color="C0", ms=5, zorder=3, label="slice")
    if odd.any():
        ax.plot(values[odd], y[odd], "D", color="C3", ms=5, zorder=3, label="interval leaves out the overall score")
    if np.isfinite(overall):
        ax.axvline(overall, color="0.25", lw=1.2, ls="--", zorder=1, label=f"overall = {overall:.4g}")
    ax.set_yticks(y, [f"{lab} (n={r})" for lab, r in zip(labels, rows)], fontsize=8)
    ax.set_ylim(-0.7, k - 0.3)
    ax.set(xlabel=score, title=title)
    ax.grid(axis="x", color="0.9")
    ax.legend(loc="best", fontsize=8)
    if note:
        fig.text(0.01, 0.005, note, fontsize=8, color="0.35", ha="left", va="bottom")
    return save(fig, folder, name)


def at_k(ks, scores: dict, queries: int, folder: str) -> str:
    """Ranking scores (name -> one value per cut-off) against the cut-off ``ks``."""
    fig, ax = _axes(7.0, 4.5)
    for i, (name, values) in enumerate(scores.items()):
        ax.plot(ks, values, color=f"C{i}", lw=2, marker="o", label=name)
    ax.set(ylim=(0, 1.01), xlabel="k (items ranked highest)", ylabel="mean over queries")
    ax.set_title(f"Ranking scores at k ({_count(queries)} queries)")
    if len(ks) > 1 and ks[-1] / ks[0] > 20:
        ax.set_xscale("log")
    return finish(fig, ax, folder, "ranking_at_k.png", loc="best")


def series(curves, score: str, folder, name: str, title: str, xlabel: str, overall=None) -> str:
    """One line per curve ``(label, x, values, lower, upper, flagged)`` with its
    band where ``lower``/``upper`` are given, ``flagged`` points marked, and
    the ``overall`` score as a dashed line; saved as ``folder/name``."""
    fig, ax = _axes(7.0, 4.2)
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
    return finish(fig, ax, folder, name, loc="best", fontsize=8)
