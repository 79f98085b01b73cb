"""Binary classification: the four confusion counts and every rate built from them.

:func:`binary_result` is the one place the specification's formulas are
written; :class:`BinaryConfusion` and the one-shot functions (:func:`f1`,
:func:`matthews`, ...) all read their scores from it, so they cannot disagree.
Adding a score computed from the four counts is one line there (and one row
in the tests' reference table).
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import compensated
from .._kernels.binary import binary_terms, count_labels, count_scores
from .._kernels.checks import first_nonfinite
from .._kernels.row_sums import sum_terms
from .._protocol.base import Accumulator, check_ci
from .._protocol.errors import NoObservationsError, WeightOverflowError
from .._protocol.inputs import Finite, Labels01
from .._protocol.result import RenderContext, Result, grid, safe
from .._protocol.state import Field, count_total
from .._protocol.terms import RowTerms, add_pairs, add_second
from .._protocol.validation import check_choice, cut_point
from . import intervals as I
from . import rates
from .intervals import beside, binary_intervals
from .labels import BinaryLabels, PosLabelError, class_result, label_matrix, two_label_counts
from .rates import averaged_rates, check_average, check_beta, check_threshold, check_zero_division, class_rates

__all__ = [
    "BinaryConfusion",
    "BinaryResult",
    "binary_result",
    "hits",
    "false_calls",
    "missed",
    "rejected",
    "called",
    "actual",
    "accuracy",
    "precision_score",
    "recall_score",
    "specificity",
    "f1",
    "fbeta",
    "matthews",
    "balanced_accuracy",
]


def fbeta_of(precision: float, recall: float, b: float) -> float:
    """The specification's guarded F-beta of a precision and a recall."""
    b2 = b * b
    return (1 + b2) * precision * recall / safe(b2 * precision + recall)


class BinaryResult(Result):
    """Scores of a binary confusion matrix; also offers :meth:`fbeta`."""

    __slots__ = ()
    title = "Confusion"
    counts = ("tp", "fp", "fn", "tn")

    def fbeta(self, b: float) -> float:
        """F-beta at ``b`` (> 0) from the same counts, guarded like ``f1``."""
        return fbeta_of(self.precision, self.recall, check_beta(b))

    def section_title(self, ctx: RenderContext) -> str:
        t = self._meta.get("threshold")
        return self.title if t is None else f"{self.title} at p >= {t:g}"

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        v = self._values
        lines = grid(
            [[v["tp"], v["fn"]], [v["fp"], v["tn"]]],
            ["actual 1", "actual 0"],
            ["predicted 1", "predicted 0"],
            self.weighted,
        )
        if self.weighted:
            column = f" (column {ctx.weight_column!r})" if ctx.weight_column else ""
            lines.append(f"  counts are sums of sample weights{column}")
        rates = [k for k in self.report_values() if k not in self.counts]
        return lines + self._scalar_lines(rates, names)

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        from ..report import plots

        v = self._values
        t = self._meta.get("threshold")
        title = "Confusion matrix" + (f" at p >= {t:g}" if t is not None else "")
        return [
            plots.confusion(
                np.array([[v["tn"], v["fp"]], [v["fn"], v["tp"]]]),
                folder,
                title,
                f"accuracy = {v['accuracy']:.4f}, F1 = {v['f1']:.4f}, MCC = {v['mcc']:.4f}",
                labels=["0", "1"],
            )
        ]


def score_formulas(tp, fp, fn, tn, total, to_float, sqrt) -> dict:
    """The guarded scores of the specification, written once for Python numbers
    (``to_float=float, sqrt=math.sqrt``) and for numpy arrays of them alike:
    the same operations in the same order, so each element of an array is the
    number the scalars give, bit for bit."""
    precision = tp / safe(tp + fp)
    recall = tp / safe(tp + fn)
    specificity = tn / safe(tn + fp)
    f1 = 2 * precision * recall / safe(precision + recall)
    # numerator and the product of the margins: exact integers when unweighted
    # (Python ints, as they overflow int64 near n = 1e5), float64 otherwise;
    # the margins' product is never negative (times False it is zero)
    top = tp * tn - fp * fn
    under = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {
        "accuracy": to_float((tp + tn) / total),
        "precision": to_float(precision),
        "recall": to_float(recall),
        "specificity": to_float(specificity),
        "f1": to_float(f1),
        "mcc": to_float(top) / sqrt(to_float(safe(under * (under > 0)))),
        "balanced_accuracy": to_float((recall + specificity) / 2),
        "jaccard": to_float(tp / safe(tp + fp + fn)),
        "youden": to_float(recall + specificity - 1),
    }


def binary_result(tp, fp, fn, tn, n: int, meta=None) -> BinaryResult:
    """The guarded scores of the specification from the four counts (Python
    ``int`` when unweighted: products exact, rounded once; ``float`` with
    weights), by :func:`score_formulas`, for every binary score."""
    counts = (tp, fp, fn, tn)
    if any(isinstance(c, float) for c in counts):
        # sums of weights: scaled by a power of two (exactly), so the rates are
        # the same for any scale of the weights, and products of the counts
        # neither overflow (weights near 1e200) nor underflow (near 1e-200)
        top = max(counts)
        if top > 0 and math.isfinite(top):
            e = math.frexp(top)[1]
            tp, fp, fn, tn = (math.ldexp(float(c), -e) for c in counts)
    total = tp + fp + fn + tn
    if total == 0:
        raise ValueError("the sample weights sum to zero: every score is undefined")
    values = {"tp": counts[0], "fp": counts[1], "fn": counts[2], "tn": counts[3], "n": n}
    values.update(score_formulas(tp, fp, fn, tn, total, float, math.sqrt))
    return BinaryResult("BinaryScores", values, meta)


#: each row's cell takes its weight and its squared weight
_SQUARED_WEIGHTS = np.full(4, 2, np.uint8)

#: rows of counts whose total is below this have every product of four
#: margins within int64 (46340**4 < 2**63)
_INT64_PRODUCTS = 46_340


def binary_score_columns(counts: np.ndarray) -> dict[str, np.ndarray]:
    """The fields of :func:`binary_result` (but ``n``) for ``G`` rows of unweighted
    counts ``int64[G, 4]`` at once, element ``g`` bit for bit
    ``binary_result(*counts[g])``'s: products in ``int64`` where they fit,
    else in Python integers."""
    counts = np.asarray(counts, np.int64).reshape(-1, 4)
    total = counts.sum(axis=1)
    if counts.shape[0] and total.min() < 1:
        raise ValueError("every row of counts needs at least one observation")
    out = {name: counts[:, j].copy() for j, name in enumerate(("tp", "fp", "fn", "tn"))}
    small = total < _INT64_PRODUCTS
    for rows, c in ((small, counts[small]), (~small, counts[~small].astype(object))):
        for name, v in score_formulas(*c.T, c.sum(axis=1), _as_float, np.sqrt).items():
            out.setdefault(name, np.empty(counts.shape[0], np.float64))[rows] = v
    return out


def _as_float(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


class BinaryConfusion(Accumulator):
    """Streaming binary confusion counts and the guarded rates built from them.

    Parameters
    ----------
    threshold : float, optional
        Without a threshold, ``p`` must hold hard 0/1 predictions. With one,
        ``p`` may hold any finite real scores (probabilities or logits) and
        ``p >= threshold`` counts as a positive prediction, compared as numpy
        compares it: in the scores' own precision (float16 and float32 scores
        against the threshold rounded to their dtype, so a float32 score of 0.7
        reaches 0.7), integer and float64 scores in float64.

    Returns (``finalize()``)
    ------------------------
    tp, fp, fn, tn : int or float
        The four counts (sums of weights once weights were seen).
    n : int
        Rows folded in, zero-weight rows included.
    accuracy, precision, recall, specificity, f1, mcc, balanced_accuracy, jaccard : float
        The guarded rates; ``fbeta(b)`` gives F-beta from the same counts.
    <score>_ci_lower, <score>_ci_upper : float
        With ``finalize(ci=level)`` only, for accuracy, precision, recall,
        specificity, f1, mcc and balanced_accuracy (not jaccard): Wilson
        score intervals of the four proportions (Clopper-Pearson with
        ``method="clopper-pearson"``, its beta quantiles computed here by
        bisection on the incomplete beta function, so SciPy is not needed),
        the MOVER combination of the recall's and the specificity's for
        balanced accuracy, and delta-method intervals under multinomial
        sampling for F1 and MCC (see :func:`binary_intervals`). With weights,
        a rate's ``n`` is Kish's effective size ``(sum w)**2 / sum w**2`` of
        the rows in its denominator, from the squared weights the state keeps
        per cell.

    Notes
    -----
    The rates follow the specification's guards, ``safe(x) = x + [x == 0]``: a
    zero denominator makes the rate 0, never NaN. scikit-learn agrees for
    precision/recall/F with ``zero_division=0``; for ``balanced_accuracy`` it
    averages only the classes present, while here a missing class contributes a
    guarded 0 (so all-positive data with perfect predictions gives 0.5, not 1).

    Unweighted counts are exact ``int64`` (merged counts past 2**32 stay
    exact); weighted counts are compensated float64 sums. ``n`` counts rows,
    zero-weight rows included.

    Examples
    --------
    Two batches, a second shard, a merge, and the scores:

    >>> from streammetrics import BinaryConfusion
    >>> shard_a = BinaryConfusion()
    >>> shard_a.update([1, 1, 1, 0], [1, 1, 0, 1]).update([0, 0, 0, 0], [0, 0, 0, 0])
    BinaryConfusion(threshold=None): n=8 accuracy=0.75 f1=0.666667
    >>> shard_b = BinaryConfusion().update([1, 0], [1, 0])
    >>> r = (shard_a + shard_b).finalize()
    >>> r.tp, r.fp, r.fn, r.tn
    (3, 1, 1, 5)
    >>> round(r.mcc, 6), round(r.fbeta(2), 6)
    (0.583333, 0.75)

    Scores cut at a threshold:

    >>> BinaryConfusion(threshold=0.5).update([1, 0, 1], [0.9, 0.2, 0.4]).finalize().recall
    0.5

    95 % intervals (Wilson's for the recall, 3 of 4 positives found):

    >>> r = (shard_a + shard_b).finalize(ci=0.95)
    >>> round(r.recall_ci_lower, 6), round(r.recall_ci_upper, 6)
    (0.300642, 0.954413)
    >>> r = (shard_a + shard_b).finalize(ci=0.95, method="clopper-pearson")
    >>> round(r.recall_ci_lower, 6), round(r.recall_ci_upper, 6)
    (0.19412, 0.99369)
    """

    _fixed_settings = True  # copies share the settings

    argument_names = ("y", "p")
    fields = (
        Field("n", np.int64, (1,)),
        Field("counts", np.int64, (4,), rows=True, doc="unweighted (tp, fp, fn, tn)"),
        Field("wsums", np.float64, (4, 2), merge="pairs", doc="weighted (tp, fp, fn, tn) pairs"),
        Field("weighted", np.int64, (1,), rows=True, doc="rows that came with weights"),
        Field("wsq", np.float64, (4, 2), merge="pairs", optional=True, doc="squared weights per cell, pairs"),
        Field("wsq_rows", np.int64, (1,), rows=True, optional=True, doc="weighted rows counted in wsq"),
    )
    headline = ("accuracy", "f1")
    intervals = True

    def __init__(self, threshold: float | None = None):
        self.threshold = check_threshold(threshold)
        y = BinaryLabels("y", "use MulticlassConfusion, or pass average='macro' (or another) to the one-shot scores")
        if self.threshold is None:
            self.inputs = (
                y,
                Labels01("p").advised(
                    "for scores or probabilities, pass threshold=, e.g. BinaryConfusion(threshold=0.5)"
                ),
            )
        else:
            self.inputs = (y, Finite("p", "scores"))
        self._init_state()

    def _settings(self):
        return {"threshold": self.threshold}

    def _check_state(self, state):
        # every row is counted once: in a cell of 'counts', or in 'weighted'
        # (its weight then in 'wsums'); the cells are non-negative (declared),
        # so every rate lies in [0, 1]
        rows, n = count_total(state["counts"]) + int(state["weighted"][0]), int(state["n"][0])
        if rows != n:
            raise ValueError(
                f"the counts hold {rows} rows, which "
                f"{'exceeds' if rows > n else 'falls short of'} the observation count {n}"
            )
        if state["weighted"][0] == 0 and np.any(state["wsums"] != 0):
            raise ValueError("entry 'wsums' holds weights but no row came with weights")
        if state["wsq_rows"][0] > state["weighted"][0]:
            raise ValueError("more rows counted in 'wsq' than came with weights")

    @staticmethod
    def _screen_states(st):
        # :meth:`_check_state` over a leading axis of states; totals near the
        # int64 range are flagged, to be counted exactly one by one
        g = st["n"].shape[0]
        counts, weighted, n = st["counts"], st["weighted"][:, 0], st["n"][:, 0]
        bad = counts.sum(axis=1, dtype=np.float64) + weighted >= 2.0**62
        bad |= counts.sum(axis=1) + weighted != n
        bad |= (weighted == 0) & (st["wsums"].reshape(g, -1) != 0).any(axis=1)
        bad |= st["wsq_rows"][:, 0] > weighted
        return bad

    def _fold(self, arrays, w):
        y, p = arrays
        st = self._arrays
        t = self.threshold if self.threshold is None else cut_point(self.threshold, p)
        if not w.shape[0]:  # the unweighted kernel alone: a first call compiles only it
            fold = count_labels if t is None else count_scores
            return fold(y, p, 0.0 if t is None else t, st["n"], st["counts"])
        part, part_sq = np.zeros((4, 2)), np.zeros((4, 2))
        args = (y, p, math.nan if t is None else t)
        status = sum_terms(binary_terms, args, w, 1, np.zeros(4, np.int64), part, part_sq, _SQUARED_WEIGHTS)
        if status:
            return status
        wsums, wsq = st["wsums"].copy(), st["wsq"].copy()
        add_pairs(wsums, part)
        add_pairs(wsq, part_sq)
        if first_nonfinite(wsums.reshape(-1)) >= 0:
            raise WeightOverflowError()
        # the squared weights serve the intervals only: past float64, none
        kept = first_nonfinite(wsq.reshape(-1)) < 0
        st["wsums"][:] = wsums
        if kept:
            st["wsq"][:] = wsq
        for name in ("n", "weighted") + ("wsq_rows",) * kept:
            st[name][0] += y.shape[0]
        return 0

    def row_terms(self) -> RowTerms:
        """Each row's weight goes to its cell; unweighted rows are counted."""
        return RowTerms(4, 1, self._terms, rows=4, counts_only=True, second=(2, 2, 2, 2))

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        t = math.nan if self.threshold is None else cut_point(self.threshold, p)
        return binary_terms(y, p, t, lo, slots, values, col, base)

    def _add_sums(self, sums, st):
        st["n"].T[0] += sums.rows
        if not sums.weighted:
            st["counts"] += sums.ints
            return
        add_pairs(st["wsums"], sums.pairs)
        st["weighted"].T[0] += sums.rows
        if sums.second is not None:  # (squared weights that overflow: no intervals)
            st["wsq_rows"].T[0] += add_second(st["wsq"], sums.second, sums.rows)

    def result_columns(self, stacked):
        # sums of weights, or a state of no rows (its scores undefined): one by one
        counts = stacked["counts"]
        if stacked["weighted"].any() or (counts.shape[0] and counts.sum(axis=1).min() < 1):
            return None
        return binary_score_columns(counts)

    def counts(self):
        """``(tp, fp, fn, tn)``: Python ints, or floats once weights were seen."""
        with self._guard:
            st = self._arrays
            counts = [int(c) for c in st["counts"]]
            if st["weighted"][0] == 0:
                return counts
            return [c + float(v) for c, v in zip(counts, compensated.values(st["wsums"]))]

    def finalize(self, ci=None, *, method: str = "wilson") -> BinaryResult:
        """The scores of the current state; with ``ci`` (e.g. 0.95), their intervals.

        ``ci`` adds ``<score>_ci_lower`` and ``<score>_ci_upper`` for
        accuracy, precision, recall, specificity, balanced_accuracy, f1 and
        mcc (see the class docstring for the methods). ``method`` is
        ``"wilson"`` (the default) or ``"clopper-pearson"``, for the five
        proportions. The state is not changed; ``ValueError`` with no
        observations, or for a ``ci`` outside (0, 1).
        """
        return self._finalize(ci=check_ci(ci), method=check_choice("method", method, I.METHODS))

    def squared_weights(self):
        """``(tp, fp, fn, tn)`` sums of squared weights (counts without weights).

        ``ValueError`` when part of the weighted rows came from a state saved
        before these sums were kept (they cannot be recovered from it).
        """
        with self._guard:
            st = self._arrays
            counts = [float(c) for c in st["counts"]]
            if st["weighted"][0] == 0:
                return counts
            if st["wsq_rows"][0] != st["weighted"][0]:
                raise ValueError(
                    f"{st['weighted'][0] - st['wsq_rows'][0]} weighted rows of this state were saved "
                    "without their squared weights, which intervals of weighted counts need "
                    "(Kish's effective sample size); fold those rows again to get intervals"
                )
            return [c + float(v) for c, v in zip(counts, compensated.values(st["wsq"]))]

    def _compute(self, ci=None, method="wilson") -> BinaryResult:
        meta = {"threshold": self.threshold, "weighted": bool(self._arrays["weighted"][0])}
        counts = self.counts()
        r = binary_result(*counts, n=self.n, meta=meta)
        if ci is None:
            return r
        values = r.as_dict()
        values.update(binary_intervals(counts, self.squared_weights(), ci, method))
        meta.update(ci=ci, ci_method=method)
        return BinaryResult(r.kind, beside(values), meta)


# ------------------------------------------------------------------ one-shot
def _counts(y, p, sample_weight):
    return rates.one_shot(BinaryConfusion(), y, p, sample_weight=sample_weight).counts()


def _scores(y, p, sample_weight) -> BinaryResult:
    return binary_result(*_counts(y, p, sample_weight), n=0)


def _binary_counts(y, p, sample_weight, pos_label):
    """The four counts with ``pos_label`` positive: 0/1 data read directly, any
    other two-label data through its labels."""
    if isinstance(pos_label, (bool, np.bool_)) or not (isinstance(pos_label, (int, np.integer)) and pos_label == 1):
        return two_label_counts(y, p, sample_weight, pos_label)
    try:
        return _counts(y, p, sample_weight)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, NoObservationsError):
            raise
        try:  # two labels other than 0/1 (1 and 2, or strings): read by label
            return two_label_counts(y, p, sample_weight, pos_label)
        except PosLabelError:
            raise
        except (ValueError, TypeError):
            raise exc from None


def _rates(y, p, sample_weight, average, pos_label, zero_division, beta: float = 1.0):
    """``(precision, recall, fbeta)`` of the one-shot functions' keywords."""
    average = check_average(average)
    zd = check_zero_division(zero_division)
    if average != "binary":
        labels, m = label_matrix(y, p, sample_weight)
        if float(m.sum()) == 0:
            raise ValueError("the sample weights sum to zero: every score is undefined")
        out = averaged_rates(m, np.ones(len(labels), bool), beta, average, zd)
        return out if average is None else tuple(float(v) for v in out)
    counts = _binary_counts(y, p, sample_weight, pos_label)
    if zd == 0:
        r = binary_result(*counts, n=0)
        f = r.f1 if beta == 1.0 else fbeta_of(r.precision, r.recall, beta)
        return r.precision, r.recall, f
    if sum(counts) == 0:
        raise ValueError("the sample weights sum to zero: every score is undefined")
    tp, fp, fn, _ = counts
    return tuple(float(v) for v in class_rates(tp, tp + fp, tp + fn, beta, zd))


_KEYWORDS_DOC = """
    Keywords as scikit-learn's:

    * ``average``: ``"binary"`` (the default) scores the positive class of
      two-label data; ``"macro"`` (the mean over the labels of ``y`` and
      ``p``), ``"weighted"`` (weighted by support) and ``"micro"`` (counts
      pooled) score multiclass data too, with labels of any kind (integers
      or strings); ``None`` gives an array per class, in sorted label order.
    * ``pos_label``: the positive class for ``average="binary"`` (default 1).
      0/1 data are read as they are; other two-label data (``1``/``2``,
      ``"spam"``/``"ham"``) need ``pos_label`` to be one of their labels.
      Ignored by the other averages.
    * ``zero_division``: the value of a rate whose denominator is zero: 0
      (the specification's guard, the default), 1, or ``np.nan`` (left out of
      the ``"macro"``/``"weighted"`` averages, as scikit-learn does). With a
      value other than 0, F is ``(1 + b²) TP / (b² (TP + FN) + (TP + FP))``,
      which is ``zero_division`` only when nothing is in the truth nor
      predicted.
"""


def hits(y, p, *, sample_weight=None):
    """True positives: ``TP = sum_i y_i p_i``.

    ``y`` and ``p`` are hard 0/1 labels (bool, int, or float holding exactly
    0.0/1.0). Unweighted counts are ``int``; with ``sample_weight`` the weighted
    count is a ``float``.

    >>> hits([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    2
    """
    return _counts(y, p, sample_weight)[0]


def false_calls(y, p, *, sample_weight=None):
    """False positives: ``FP = sum_i (1 - y_i) p_i``.

    >>> false_calls([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return _counts(y, p, sample_weight)[1]


def missed(y, p, *, sample_weight=None):
    """False negatives: ``FN = sum_i y_i (1 - p_i)``.

    >>> missed([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return _counts(y, p, sample_weight)[2]


def rejected(y, p, *, sample_weight=None):
    """True negatives: ``TN = sum_i (1 - y_i)(1 - p_i)``.

    >>> rejected([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    1
    """
    return _counts(y, p, sample_weight)[3]


def called(y, p, *, sample_weight=None):
    """Predicted positives: ``TP + FP = sum_i p_i``.

    >>> called([1, 1, 1, 0, 0], [1, 1, 0, 1, 0])
    3
    """
    tp, fp, _, _ = _counts(y, p, sample_weight)
    return tp + fp


def actual(y, *, sample_weight=None):
    """Actual positives: ``sum_i y_i``.

    >>> actual([1, 1, 1, 0, 0])
    3
    """
    tp, _, fn, _ = _counts(y, y, sample_weight)
    return tp + fn


def _scored(y, p, sample_weight):
    """The binary result of 0/1 labels, else the multiclass result of class labels of any kind."""
    try:
        return _scores(y, p, sample_weight)
    except (ValueError, TypeError) as exc:
        return class_result(y, p, sample_weight, exc)


def accuracy(y, p, *, sample_weight=None) -> float:
    """Share of observations predicted correctly: ``(TP + TN) / n``; labels other than 0/1 (any kind): the share of
    ``y == p``, as scikit-learn's ``accuracy_score``.

    >>> accuracy([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.75
    >>> accuracy(["cat", "dog", "bird"], ["cat", "dog", "dog"])
    0.666...
    """
    return _scored(y, p, sample_weight).accuracy


def precision_score(y, p, *, sample_weight=None, average="binary", pos_label=1, zero_division=0):
    """Precision ``TP / safe(TP + FP)``: 0 when nothing is predicted positive.

    Agrees with scikit-learn's ``precision_score(..., zero_division=0)``, and
    takes its keywords (below).

    >>> precision_score([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    >>> precision_score([1, 1, 1, 0], [0, 0, 0, 0])
    0.0
    >>> precision_score([1, 1, 1, 0], [0, 0, 0, 0], zero_division=1)
    1.0
    >>> precision_score(["spam", "ham", "spam"], ["spam", "spam", "ham"], pos_label="spam")
    0.5
    >>> precision_score([0, 1, 2, 2], [0, 2, 2, 1], average=None)
    array([1. , 0. , 0.5])
    """
    return _rates(y, p, sample_weight, average, pos_label, zero_division)[0]


def recall_score(y, p, *, sample_weight=None, average="binary", pos_label=1, zero_division=0):
    """Recall (sensitivity) ``TP / safe(TP + FN)``: 0 when there are no positives.

    Agrees with scikit-learn's ``recall_score(..., zero_division=0)``, and
    takes its keywords (below).

    >>> recall_score([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    >>> recall_score(["cat", "dog", "bird", "dog"], ["cat", "dog", "dog", "dog"], average="macro")
    0.666...
    """
    return _rates(y, p, sample_weight, average, pos_label, zero_division)[1]


def specificity(y, p, *, sample_weight=None) -> float:
    """Specificity ``TN / safe(TN + FP)``: 0 when there are no negatives.

    >>> specificity([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.8
    """
    return _scores(y, p, sample_weight).specificity


def f1(y, p, *, sample_weight=None, average="binary", pos_label=1, zero_division=0):
    """F1 ``2PR / safe(P + R)``: 0 when precision and recall are both 0.

    Agrees with scikit-learn's ``f1_score(..., zero_division=0)``, and takes
    its keywords (below).

    >>> f1([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.666...
    >>> round(f1([0, 1, 2, 2], [0, 2, 2, 1], average="weighted"), 6)
    0.5
    """
    return _rates(y, p, sample_weight, average, pos_label, zero_division)[2]


def fbeta(y, p, b, *, sample_weight=None, average="binary", pos_label=1, zero_division=0):
    """F-beta ``(1 + b²) P R / safe(b² P + R)``; ``b`` > 0 weights recall.

    Agrees with scikit-learn's ``fbeta_score(..., beta=b, zero_division=0)``,
    and takes its keywords (below).

    >>> fbeta([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0], 2)
    0.666...
    >>> fbeta([0, 1, 2, 2], [0, 2, 2, 1], 0.5, average=None)
    array([1. , 0. , 0.5])
    """
    b = check_beta(b)
    return _rates(y, p, sample_weight, average, pos_label, zero_division, b)[2]


for _f in (precision_score, recall_score, f1, fbeta):
    _f.__doc__ = _f.__doc__.rstrip() + "\n" + _KEYWORDS_DOC
del _f


def matthews(y, p, *, sample_weight=None) -> float:
    """Matthews correlation ``(TP TN - FP FN) / sqrt(safe(product of margins))``.

    A zero margin gives 0 (scikit-learn agrees). The product of the four
    margins is formed exactly, never in overflowing int64. Labels other than
    0/1 (any kind): Gorodkin's K-category coefficient, as scikit-learn's
    ``matthews_corrcoef`` (0 where it is undefined).

    >>> round(matthews([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0]), 6)
    0.466667
    >>> round(matthews([0, 1, 2, 2], [0, 2, 2, 1]), 6)
    0.2
    """
    return _scored(y, p, sample_weight).mcc


def balanced_accuracy(y, p, *, sample_weight=None, adjusted: bool = False) -> float:
    """``(recall + specificity) / 2`` with the guarded rates; labels other than
    0/1 (any kind): scikit-learn's mean recall over the classes in ``y``.
    ``adjusted=True`` rescales it so that chance scores 0 (``(score - 1/K) /
    safe(1 - 1/K)`` over ``K`` classes), as ``balanced_accuracy_score(...,
    adjusted=True)``.

    Differs from scikit-learn when one class of 0/1 data is absent from ``y``:
    scikit-learn averages only the classes present, here the absent class's
    rate is a guarded 0 (and a single class adjusts by ``safe(0)``, not NaN).

    >>> balanced_accuracy([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
    0.733...
    >>> round(balanced_accuracy(["a", "b", "c", "c"], ["a", "c", "c", "b"], adjusted=True), 6)
    0.25
    """
    if not isinstance(adjusted, (bool, np.bool_)):
        raise TypeError(f"adjusted must be a bool, got {type(adjusted).__name__}")
    r = _scored(y, p, sample_weight)
    score, k = r.balanced_accuracy, 2 if isinstance(r, BinaryResult) else int(np.count_nonzero(r.support))
    if not adjusted:
        return score
    chance = 1 / k
    return float((score - chance) / safe(1 - chance))
