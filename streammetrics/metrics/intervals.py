"""Analytic confidence intervals read from the states, so they merge for free.

Every function takes the sufficient statistics a state already holds (counts,
sums of weights, sums of squared weights) and a confidence level in (0, 1):

* :func:`wilson` and :func:`clopper_pearson`: a binomial proportion (the
  Clopper-Pearson bounds are beta quantiles, computed here by inverting the
  incomplete beta function; SciPy is not needed);
* :func:`mover_mean`: the mean of two independent proportions from their own
  intervals (Zou and Donner's method of variance estimates recovery, as in
  Newcombe's interval for a difference), for balanced accuracy;
* :func:`multinomial_delta`: the delta-method (Wald) interval of a smooth
  function of the four confusion cells, for F1 and MCC;
* :func:`kish`: Kish's effective sample size ``(sum w)**2 / sum w**2``, which
  stands for ``n`` when the rows were weighted;
* :func:`normal_quantile`: the standard normal quantile, by bisection on
  ``erfc`` (no table, no SciPy).

>>> from streammetrics.metrics.intervals import wilson, clopper_pearson, normal_quantile
>>> round(normal_quantile(0.975), 12)
1.959963984540
>>> [round(v, 6) for v in wilson(8, 10, 0.95)]
[0.490162, 0.943318]
>>> [round(v, 6) for v in clopper_pearson(8, 10, 0.95)]
[0.443905, 0.974789]
"""

from __future__ import annotations

import math

from .._kernels.intervals import beta_quantile
from .._protocol.result import safe

#: the interval methods of a proportion
METHODS = ("wilson", "clopper-pearson")


def normal_quantile(p: float) -> float:
    """The ``z`` with ``P(Z <= z) = p`` for a standard normal ``Z``, ``0 < p < 1``.

    Found by bisection on the tail ``erfc(|z| / sqrt 2) / 2`` (computed without
    cancellation) down to adjacent floats, so it is correct to the last digit
    or two.
    """
    if not (0.0 < p < 1.0):
        raise ValueError(f"p must lie strictly between 0 and 1, got {p!r}")
    tail = min(p, 1.0 - p)
    if tail == 0.5:
        return 0.0
    lo, hi = 0.0, 40.0  # erfc(40 / sqrt 2) / 2 is far below any float tail
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if 0.5 * math.erfc(mid / math.sqrt(2.0)) > tail:
            lo = mid
        else:
            hi = mid
    z = 0.5 * (lo + hi)
    return z if p > 0.5 else -z


def z_of(level: float) -> float:
    """The two-sided normal critical value of a confidence level (1.96 for 0.95)."""
    return normal_quantile(0.5 + level / 2.0)


def kish(total: float, squares: float) -> float:
    """Kish's effective sample size ``total**2 / squares`` (0 when there is no weight)."""
    if squares <= 0.0 or total <= 0.0:
        return 0.0
    return total * total / squares


def wilson(x: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's score interval of ``x`` successes in ``n`` trials.

    ``(c - h, c + h)`` with ``c = (x + z²/2) / (n + z²)`` and
    ``h = z sqrt(x (n - x) / n + z²/4) / (n + z²)``; ``n`` and ``x`` may be
    real (an effective sample size). With ``n = 0`` nothing is known: (0, 1).
    """
    if n <= 0.0:
        return 0.0, 1.0
    z = z_of(level)
    z2 = z * z
    x = min(max(x, 0.0), n)
    centre = (x + z2 / 2.0) / (n + z2)
    half = z * math.sqrt(x * (n - x) / n + z2 / 4.0) / (n + z2)
    lower = 0.0 if x == 0.0 else max(centre - half, 0.0)
    upper = 1.0 if x == n else min(centre + half, 1.0)
    return lower, upper


def clopper_pearson(x: float, n: float, level: float) -> tuple[float, float]:
    """The Clopper-Pearson ("exact") interval of ``x`` successes in ``n`` trials.

    The bounds are beta quantiles, ``B(alpha/2; x, n - x + 1)`` and
    ``B(1 - alpha/2; x + 1, n - x)``, 0 at ``x = 0`` and 1 at ``x = n``; real
    ``x`` and ``n`` (effective sizes) are used as they are. With ``n = 0``:
    (0, 1).
    """
    if n <= 0.0:
        return 0.0, 1.0
    alpha = 1.0 - level
    x = min(max(x, 0.0), n)
    lower = 0.0 if x == 0.0 else float(beta_quantile(alpha / 2.0, x, n - x + 1.0))
    upper = 1.0 if x == n else float(beta_quantile(1.0 - alpha / 2.0, x + 1.0, n - x))
    return lower, upper


def proportion(hits: float, total: float, n_eff: float, level: float, method: str):
    """The interval of the proportion ``hits / total`` seen as ``n_eff`` trials.

    Without weights ``n_eff = total`` (counts); with weights ``n_eff`` is
    Kish's effective size of the rows in ``total`` and the successes are
    ``n_eff * hits / total``.
    """
    if total <= 0.0 or n_eff <= 0.0:
        return 0.0, 1.0
    x = n_eff * (hits / total) if n_eff != total else hits
    if method == "wilson":
        return wilson(x, n_eff, level)
    return clopper_pearson(x, n_eff, level)


def mover_mean(a: float, ia, b: float, ib) -> tuple[float, float]:
    """The interval of ``(a + b) / 2`` from intervals ``ia``, ``ib`` of two independent
    estimates (the method of variance estimates recovery, Zou and Donner 2008):
    ``mean -/+ sqrt(d_a² + d_b²) / 2`` with ``d`` each estimate's distance to its
    own lower (upper) bound."""
    m = (a + b) / 2.0
    lower = m - math.sqrt((a - ia[0]) ** 2 + (b - ib[0]) ** 2) / 2.0
    upper = m + math.sqrt((ia[1] - a) ** 2 + (ib[1] - b) ** 2) / 2.0
    return max(lower, 0.0), min(upper, 1.0)


def multinomial_delta(cells, gradient, value: float, n_eff: float, level: float, bounds: tuple) -> tuple:
    """The delta-method (Wald) interval of a function of multinomial proportions.

    ``cells`` are the cells' masses (any scale), ``gradient`` the function's
    partial derivatives at the proportions ``cells / sum(cells)``; the variance
    is ``(sum p g² - (sum p g)²) / n_eff``. The interval ``value -/+ z se`` is
    clipped to ``bounds``.
    """
    total = float(sum(cells))
    if total <= 0.0 or n_eff <= 0.0:
        return bounds
    p = [c / total for c in cells]
    mean = sum(pi * gi for pi, gi in zip(p, gradient))
    var = max(sum(pi * gi * gi for pi, gi in zip(p, gradient)) - mean * mean, 0.0) / n_eff
    half = z_of(level) * math.sqrt(var)
    return max(value - half, bounds[0]), min(value + half, bounds[1])


#: the scores given an interval by ``finalize(ci=...)``, in the result's order
INTERVAL_SCORES = ("accuracy", "precision", "recall", "specificity", "f1", "mcc", "balanced_accuracy")


def beside(values: dict) -> dict:
    """``values`` with each ``<score>_ci_lower``/``_ci_upper`` moved right after its score."""
    out = {}
    for k, v in values.items():
        if k.endswith(("_ci_lower", "_ci_upper")):
            continue
        out[k] = v
        for end in ("_ci_lower", "_ci_upper"):
            if k + end in values:
                out[k + end] = values[k + end]
    return out


def binary_intervals(counts, squares, level: float, method: str = "wilson") -> dict:
    """The interval fields of the binary scores from the four cells.

    ``counts`` are the ``(tp, fp, fn, tn)`` masses and ``squares`` the sums of
    the squared weights in each cell (equal to ``counts`` without weights);
    a group of cells is seen as Kish's effective number of rows
    ``(sum w)**2 / sum w**2``, which is its count when unweighted.

    * accuracy, precision, recall, specificity: the ``method``'s interval
      (Wilson or Clopper-Pearson) of the proportion;
    * balanced accuracy: the mean of the recall's and the specificity's
      intervals by the method of variance estimates recovery (MOVER);
    * f1, mcc: the delta-method (Wald) interval under multinomial sampling of
      the four cells, clipped to [0, 1] and [-1, 1]; it has zero width where
      the score's gradient vanishes (F1 of 0 or 1, a perfect MCC). Where the
      score is undefined (the guard made it 0: no positive cell for F1, a
      zero margin for MCC) the interval is the whole range.

    A proportion whose denominator is empty (precision with nothing
    predicted positive) has the whole range [0, 1] as its interval.
    """
    tp, fp, fn, tn = (float(c) for c in counts)
    qtp, qfp, qfn, qtn = (float(q) for q in squares)

    def n_eff(total, square):
        return total if total == square else kish(total, square)

    def rate(hits, cells, sq):
        return proportion(hits, cells, n_eff(cells, sq), level, method)

    total = tp + fp + fn + tn
    intervals = {
        "accuracy": rate(tp + tn, total, qtp + qfp + qfn + qtn),
        "precision": rate(tp, tp + fp, qtp + qfp),
        "recall": rate(tp, tp + fn, qtp + qfn),
        "specificity": rate(tn, tn + fp, qtn + qfp),
    }
    recall = tp / safe(tp + fn)
    spec = tn / safe(tn + fp)
    intervals["balanced_accuracy"] = mover_mean(recall, intervals["recall"], spec, intervals["specificity"])
    n_all = n_eff(total, qtp + qfp + qfn + qtn)
    d = 2 * tp + fp + fn
    if tp > 0 and d > 0:
        a, b, c = tp / total, fp / total, fn / total
        dd = (2 * a + b + c) ** 2
        grad = (2 * (b + c) / dd, -2 * a / dd, -2 * a / dd, 0.0)
        f1 = 2 * tp / d
        intervals["f1"] = multinomial_delta((tp, fp, fn, tn), grad, f1, n_all, level, (0.0, 1.0))
    else:
        intervals["f1"] = (0.0, 1.0)
    margins = (tp + fp, fn + tn, tp + fn, fp + tn)
    if all(m > 0 for m in margins):
        a, b, c, e = tp / total, fp / total, fn / total, tn / total
        p1, p0, a1, a0 = (m / total for m in margins)
        root = math.sqrt(p1 * p0 * a1 * a0)
        phi = (a * e - b * c) / root
        grad = (
            e / root - phi / 2 * (1 / p1 + 1 / a1),
            -c / root - phi / 2 * (1 / p1 + 1 / a0),
            -b / root - phi / 2 * (1 / p0 + 1 / a1),
            a / root - phi / 2 * (1 / p0 + 1 / a0),
        )
        intervals["mcc"] = multinomial_delta((tp, fp, fn, tn), grad, phi, n_all, level, (-1.0, 1.0))
    else:
        intervals["mcc"] = (-1.0, 1.0)
    ends = ("_ci_lower", "_ci_upper")
    return {name + end: float(v) for name in INTERVAL_SCORES for end, v in zip(ends, intervals[name])}
