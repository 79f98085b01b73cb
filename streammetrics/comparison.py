"""Paired comparison of two models scored on the same rows.

* :func:`compare` takes two :class:`~streammetrics.Bootstrap` accumulators of
  the same template, replicates and seed fed the same rows (same ``key``
  column, or same order): every row weighs the same in replicate ``r`` of
  both, so each replicate's difference of a score is one bootstrap draw of
  the difference. Streaming and mergeable like the bootstraps.
* :func:`paired_delong` is DeLong, DeLong and Clarke-Pearson's (1988) test of
  two AUCs from the joint placement values of every row: it needs the rows
  together (rank states lose which positive of one model is which of the
  other).
"""

from __future__ import annotations

import math

import numpy as np

from ._protocol.base import check_ci
from ._protocol.inputs import Finite, Labels01, prepare
from ._protocol.result import Result, fmt_interval, fmt_number, text_table
from ._protocol.validation import as_1d
from .bootstrap import Bootstrap
from .bootstrap.accumulator import interval

__all__ = ["compare", "paired_delong"]

_DELONG_INPUTS = (Labels01("y"), Finite("p_a", "scores"), Finite("p_b", "scores"))
#: the fields of a score's row of a comparison (:meth:`ComparisonResult.rows`, :func:`table`)
ROW_FIELDS = ("a", "b", "diff", "diff_ci_lower", "diff_ci_upper", "p_value")


def _level(ci) -> float:
    level = check_ci(ci)
    return 0.95 if level is None else level


def table(rows: dict, names=("a", "b"), ci: float = 0.95) -> list[str]:
    """Lines of a comparison table: ``rows`` maps a score to its ``a``, ``b``, ``diff``, ``diff_ci_lower``,
    ``diff_ci_upper``, ``p_value``, ``resolution`` and ``method``; a p-value below its ``resolution``
    (``1 / replicates`` for the bootstrap) is shown as ``< resolution``."""
    head = ("score", *names, "difference", f"{ci:.0%} interval", "p-value", "method")
    cells = [head]
    for k, r in rows.items():
        values = (fmt_number(r[e]) for e in ("a", "b", "diff"))
        p, least = r["p_value"], r["resolution"]
        p = "nan" if math.isnan(p) else f"< {least:.2g}" if p < least else f"{p:.4f}"
        cells.append((k, *values, fmt_interval(r, "diff"), p, r["method"]))
    return text_table(cells, left=(0, 6))


class ComparisonResult(Result):
    """The result of :func:`compare`: ``print()`` gives a table of every score's difference."""

    __slots__ = ()

    def rows(self) -> dict:
        """``score -> {a, b, diff, diff_ci_lower, diff_ci_upper, p_value, resolution, method}``."""
        scores = [k[: -len("_diff")] for k in self._values if k.endswith("_diff")]
        extra = {"resolution": 1.0 / self._values["replicates"], "method": "bootstrap"}
        return {k: {e: self._values[f"{k}_{e}"] for e in ROW_FIELDS} | extra for k in scores}

    def __str__(self) -> str:
        v = self._values
        title = f"comparison of a - b on {v['n']:,} rows"
        return "\n".join(
            [
                title,
                "=" * len(title),
                "",
                *table(self.rows(), ci=v["ci"]),
                "",
                f"  paired: {v['replicates_used']} of {v['replicates']} Poisson bootstrap replicates;"
                f" p-values two-sided, of no difference, resolving 1/{v['replicates']}",
            ]
        )


def compare(a: Bootstrap, b: Bootstrap, ci: float = 0.95) -> ComparisonResult:
    """Differences of every score of two bootstraps fed the same rows: ``a - b``.

    ``a`` and ``b`` are bootstraps of the same template, ``replicates`` and
    ``seed``, fed the same rows (same ``key`` column, or same order: the row
    counts are checked, the keys cannot be). For each scalar float score
    ``s`` the result holds ``s_a``, ``s_b``, ``s_diff``, the percentile
    interval ``s_diff_ci_lower``/``s_diff_ci_upper`` at level ``ci`` and
    ``s_p_value``, ``min(1, 2 min(P*(d <= 0), P*(d >= 0)))`` over the
    replicate differences (resolution ``1 / replicates``); also
    ``replicates_used`` and ``ci``.

    Examples
    --------
    >>> import numpy as np
    >>> from streammetrics import Bootstrap, BinaryConfusion, compare
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(4000) < 0.5).astype(int)
    >>> good = np.where(rng.random(4000) < 0.85, y, 1 - y)
    >>> poor = np.where(rng.random(4000) < 0.75, y, 1 - y)
    >>> boot = lambda p: Bootstrap(BinaryConfusion(), replicates=200, seed=7).update(y, p, key=np.arange(4000))
    >>> r = compare(boot(good), boot(poor))
    >>> 0.05 < r.accuracy_diff < 0.15, r.accuracy_p_value < 0.01
    (True, True)
    >>> print(str(r).splitlines()[3])
      score          a         b  difference      95% interval  p-value  method
    >>> same = compare(boot(good), boot(good))
    >>> same.accuracy_diff, same.accuracy_p_value
    (0.0, 1.0)
    """
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, Bootstrap):
            raise TypeError(f"{name} must be a Bootstrap, got {type(x).__name__}")
    level = _level(ci)
    if a.settings != b.settings:
        raise ValueError(f"a and b must be bootstraps of the same template, replicates and seed (a: {a!r}; b: {b!r})")
    na, pa, scores, ra = a.replicate_scores()
    nb, pb, _, rb = b.replicate_scores()
    if na != nb:
        raise ValueError(f"a holds {na} rows and b {nb}: a paired comparison needs the same rows")
    pairs = [(x, y) for x, y in zip(ra, rb) if x is not None and y is not None]
    values: dict = {}
    for k in scores:
        va, vb = float(pa[k]), float(pb[k])
        values.update({f"{k}_a": va, f"{k}_b": vb, f"{k}_diff": va - vb})
        d = np.array([x[k] - y[k] for x, y in pairs if k in x and k in y], np.float64)
        lower, upper = interval(d, level)
        d = d[~np.isnan(d)]
        p = float(min(1.0, 2.0 * min(np.mean(d <= 0.0), np.mean(d >= 0.0)))) if d.size else math.nan  # two-sided
        values.update({f"{k}_diff_ci_lower": lower, f"{k}_diff_ci_upper": upper, f"{k}_p_value": p})
    values.update(n=na, replicates=a.replicates, replicates_used=len(pairs), ci=level)
    return ComparisonResult("Comparison", values, meta={"method": "paired keyed Poisson bootstrap"})


def _placements(y1: np.ndarray, s: np.ndarray, w: np.ndarray):
    """DeLong's placement values: of each positive among the negatives' weight
    (``V10``) and of each negative among the positives' (``V01``), ties half."""
    pos, neg = s[y1], s[~y1]
    wp, wn = w[y1], w[~y1]
    op, on = np.argsort(pos, kind="stable"), np.argsort(neg, kind="stable")
    sp, sn = pos[op], neg[on]
    cp = np.concatenate([[0.0], np.cumsum(wp[op])])
    cn = np.concatenate([[0.0], np.cumsum(wn[on])])
    P, N = cp[-1], cn[-1]
    below, upto = np.searchsorted(sn, pos, "left"), np.searchsorted(sn, pos, "right")
    v10 = (cn[below] + 0.5 * (cn[upto] - cn[below])) / N
    above, upto = np.searchsorted(sp, neg, "right"), np.searchsorted(sp, neg, "left")
    v01 = ((P - cp[above]) + 0.5 * (cp[above] - cp[upto])) / P
    return v10, v01


def paired_delong(y, p_a, p_b, *, sample_weight=None, ci: float = 0.95) -> Result:
    """DeLong's paired test of two AUCs on the same rows: ``auc_a - auc_b``.

    The covariance of the two AUCs is that of the rows' placement values in
    both models (DeLong, DeLong and Clarke-Pearson, 1988); with weights the
    means are weighted and the class sizes Kish's effective sizes. The result
    holds ``auc_a``, ``auc_b``, ``auc_diff``, ``auc_diff_se``, the normal
    interval ``auc_diff_ci_lower``/``auc_diff_ci_upper`` at level ``ci``,
    ``z``, the two-sided ``p_value`` (1 when both rank every pair alike) and
    ``n``.

    Examples
    --------
    >>> from streammetrics import paired_delong
    >>> r = paired_delong([0, 0, 1, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.2, 0.9],
    ...                   [0.2, 0.3, 0.6, 0.7, 0.5, 0.1])
    >>> round(r.auc_a, 4), round(r.auc_b, 4), round(r.p_value, 4)
    (0.8889, 0.6667, 0.593)
    >>> paired_delong([0, 1, 0, 1], [0.1, 0.9, 0.3, 0.4], [0.1, 0.9, 0.3, 0.4]).p_value
    1.0
    """
    level = _level(ci)
    arrays = [as_1d(x, name) for name, x in (("y", y), ("p_a", p_a), ("p_b", p_b))]
    n = arrays[0].shape[0]
    for name, arr in zip(("p_a", "p_b"), arrays[1:]):
        if arr.shape[0] != n:
            raise ValueError(f"{name} has {arr.shape[0]} rows but y has {n}")
    batch = prepare(_DELONG_INPUTS, arrays, sample_weight)
    yy, arrays = batch.arrays[0], batch.arrays[1:]
    w = batch.weights if batch.weighted else np.ones(n)
    keep = w > 0
    y1 = (yy == 1) & keep
    y0 = (yy == 0) & keep
    if not y1.any() or not y0.any():
        raise ValueError("y needs rows of both classes (with positive weight) for an AUC")
    y1, w = y1[keep], w[keep]
    placed = [_placements(y1, s[keep], w) for s in arrays]
    wp, wn = w[y1], w[~y1]
    P, N = wp.sum(), wn.sum()
    m, k = P * P / (wp @ wp), N * N / (wn @ wn)
    aucs = [float(wp @ v10 / P) for v10, _ in placed]
    if m <= 1 or k <= 1:
        raise ValueError("each class needs an effective size above 1 for DeLong's variance")
    d10 = [v10 - a for (v10, _), a in zip(placed, aucs)]
    d01 = [v01 - a for (_, v01), a in zip(placed, aucs)]
    diff10, diff01 = d10[0] - d10[1], d01[0] - d01[1]
    s10 = float(wp @ (diff10 * diff10)) / P * m / (m - 1)
    s01 = float(wn @ (diff01 * diff01)) / N * k / (k - 1)
    var = max(s10 / m + s01 / k, 0.0)
    diff = aucs[0] - aucs[1]
    se = math.sqrt(var)
    if se > 0:
        z = diff / se
        p = math.erfc(abs(z) / math.sqrt(2.0))
    else:  # the models order every pair alike (placements equal row by row)
        z = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        p = 1.0 if diff == 0 else 0.0
    from statistics import NormalDist

    q = NormalDist().inv_cdf((1.0 + level) / 2.0)
    values = dict(auc_a=aucs[0], auc_b=aucs[1], auc_diff=diff, auc_diff_se=se)
    values.update(auc_diff_ci_lower=diff - q * se, auc_diff_ci_upper=diff + q * se, z=z, p_value=p)
    values.update(n=int(keep.sum()), ci=level)
    return Result("PairedDeLong", values, meta={"method": "DeLong paired test", "weighted": sample_weight is not None})
