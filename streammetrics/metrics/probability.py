"""Probabilistic scores: log loss and the Brier score, binary and multiclass."""

from __future__ import annotations

import math

import numpy as np

from .._kernels import compensated
from .._kernels import probability as KP
from .._kernels.checks import first_nonfinite
from .._kernels.row_sums import sum_rows, sum_terms
from .._protocol.base import Accumulator
from .._protocol.errors import WeightOverflowError
from .._protocol.inputs import ROW_SUM_TOLERANCE, ClassProbabilities, Probabilities
from .._protocol.result import Result, safe
from .._protocol.state import Field
from .._protocol.terms import RowTerms, add_pairs, add_second
from . import intervals as I
from .labels import BinaryLabels, PositiveLabel, positive_label
from .multiclass import class_inputs, class_settings
from .rates import one_shot

__all__ = [
    "ProbabilityScores",
    "ClassProbabilityScores",
    "probability_result",
    "log_loss",
    "brier",
    "class_probability_scores",
    "d2_log_loss_score",
    "d2_brier_score",
]


class ProbabilityResult(Result):
    __slots__ = ()
    title = "Probabilities"


def null_losses(w: np.ndarray) -> tuple[float, float]:
    """The log loss and the Brier score (summed over the classes) of the null
    model, which predicts the class shares ``w / sum(w)`` for every row, per
    unit of weight; ``w`` holds the class weight totals. The shares are floored
    at 1e-12 before the logarithm; ``1 - share`` is the other classes' weight
    (prefix and suffix sums), so a share near 1 loses no digits."""
    ahead = np.concatenate(([0.0], np.cumsum(w)[:-1]))
    behind = np.concatenate((np.cumsum(w[::-1])[-2::-1], [0.0]))
    others = ahead + behind
    total = w + others
    with np.errstate(all="ignore"):
        share = w / total
        logs = np.where(share < KP.LOG_FLOOR, math.log(KP.LOG_FLOOR), -np.log1p(others / w))
        log_null = -float(np.sum(np.where(w > 0, share * logs, 0.0)))
        brier_null = float(np.sum(share * (others / total)))  # sum_k share_k (1 - share_k)
    return log_null, brier_null


def probability_result(
    sums: np.ndarray, n: int, kind: str = "ProbabilityScores", meta=None, classes=None, brier_scale=1.0
) -> Result:
    """``log_loss`` and ``brier`` from the compensated totals (one formula path),
    and their D² where the class totals ``classes`` are given: ``1 - loss /
    safe(null loss)``, the null model's Brier score times ``brier_scale``."""
    total, loss, brier_total = (float(v) for v in compensated.values(sums))
    if total == 0:
        raise ValueError("the sample weights sum to zero: the scores are undefined")
    # weights seen: the total weight is not the row count (weights of 1 are no weights)
    meta = {**(meta or {}), "weighted": total != n}
    values = {"n": n, "log_loss": loss / total, "brier": brier_total / total}
    if classes is not None:
        log_null, brier_null = null_losses(compensated.values(classes))
        values["d2_log_loss"] = 1.0 - values["log_loss"] / safe(log_null)
        values["d2_brier"] = 1.0 - values["brier"] / safe(brier_scale * brier_null)
    return ProbabilityResult(kind, values, meta)


_SUMS = (
    Field("n", np.int64, (1,)),
    Field("sums", np.float64, (3, 2), merge="pairs", doc="weight, log-loss and Brier totals"),
)


def _class_fields(k):
    return (
        Field("classes", np.float64, (k, 2), merge="pairs", optional=True, doc="weight totals per class"),
        Field("classes_rows", np.int64, (1,), rows=True, optional=True, doc="rows counted in classes"),
    )


#: the largest log loss of one row: the probability is floored at 1e-12
MAX_LOSS = -math.log(1e-12)
#: rounding allowed in the bounds of a total (relative to the weight total)
_SLACK = 1e-9


def check_sums(state, max_brier: float) -> None:
    """The totals a real stream gives: per unit of weight, the log loss in
    ``[0, -ln 1e-12]`` and the Brier score in ``[0, max_brier]``; no rows, no
    weight; class totals that add up to at most the weight total, and to it
    where every row was counted in them. (The values are non-negative: declared.)"""
    total, loss, brier_total = (float(v) for v in compensated.values(state["sums"]))
    if int(state["n"][0]) == 0 and (total or loss or brier_total):
        raise ValueError("entry 'sums' holds totals but there are no observations")
    if loss > total * MAX_LOSS * (1 + _SLACK):
        raise ValueError(
            f"entry 'sums': the log-loss total {loss!r} exceeds {MAX_LOSS:.4f} times the weight total {total!r}"
        )
    if brier_total > total * max_brier * (1 + _SLACK):
        raise ValueError(
            f"entry 'sums': the Brier total {brier_total!r} exceeds {max_brier:g} times the weight total {total!r}"
        )
    classes = float(compensated.values(state["classes"]).sum())
    if classes > total * (1 + _SLACK) or (state["classes_rows"][0] == state["n"][0] and classes < total * (1 - _SLACK)):
        raise ValueError(
            f"entry 'classes': the class totals add up to {classes!r}, which does not match the weight total {total!r}"
        )


def screen_sums(st, max_brier: float) -> np.ndarray:
    """:func:`check_sums` of states stacked on a leading axis: a boolean mask of
    the states it refuses."""
    v = compensated.values(st["sums"])
    total, loss, brier_total = v[:, 0], v[:, 1], v[:, 2]
    bad = (st["n"][:, 0] == 0) & ((total != 0) | (loss != 0) | (brier_total != 0))
    bad |= loss > total * MAX_LOSS * (1 + _SLACK)
    bad |= brier_total > total * max_brier * (1 + _SLACK)
    classes = compensated.values(st["classes"]).sum(axis=1)
    bad |= classes > total * (1 + _SLACK)
    return bad | ((st["classes_rows"][:, 0] == st["n"][:, 0]) & (classes < total * (1 - _SLACK)))


def check_second_moments(st) -> None:
    """Refuse intervals for a state some of whose rows lack the second moments."""
    missing = int(st["n"][0]) - int(st["squares_rows"][0])
    if missing:
        raise ValueError(
            f"{missing} rows of this state have no second moments, which the intervals need "
            "(the state was saved before they were kept, or they overflow float64); fold "
            "those rows again to get intervals"
        )


def mean_interval(
    total: float,
    value_sum: float,
    square_sum: float,
    weight_squares: float,
    level: float,
    lower: float = 0.0,
    upper: float = math.inf,
) -> tuple[float, float]:
    """The normal-approximation interval of a (weighted) mean of per-row terms.

    ``total`` is the sum of the weights (the row count without weights),
    ``value_sum`` and ``square_sum`` the weighted sums of the terms and of
    their squares, ``weight_squares`` the sum of the squared weights. The
    effective size is Kish's ``n = total**2 / weight_squares`` (the row count
    without weights), the variance of the terms
    ``(square_sum / total - mean**2) * n / (n - 1)`` and the interval
    ``mean -/+ z sqrt(variance / n)``, clipped to ``[lower, upper]``. With an
    effective size of at most 1 it is the whole ``[lower, upper]``.
    """
    n = I.kish(total, weight_squares)
    if not n > 1.0:
        return lower, upper
    mean = value_sum / total
    var = max(square_sum / total - mean * mean, 0.0) * n / (n - 1.0)
    half = I.z_of(level) * math.sqrt(var / n)
    return max(mean - half, lower), min(mean + half, upper)


def _result(st, n, kind, meta=None, brier_scale=1.0) -> Result:
    """The scores of a state; D² where every row was counted in the class
    totals (not in a state saved before they were kept)."""
    classes = st["classes"] if st["classes_rows"][0] == n else None
    return probability_result(st["sums"], n, kind, meta, classes, brier_scale)


class _Probabilities(Accumulator):
    """What both accumulators share: the weight, log-loss and Brier totals, and the class totals."""

    _fixed_settings = True  # copies share the settings
    headline = ("log_loss", "brier")

    def _add_sums(self, sums, st):
        st["n"].T[0] += sums.rows
        st["classes_rows"].T[0] += sums.rows
        add_pairs(st["sums"], sums.pairs[..., :3, :])
        add_pairs(st["classes"], sums.pairs[..., 3:, :])
        if sums.second is not None:  # (w, loss, d2) squared: the state keeps loss², d2², w²
            st["squares_rows"].T[0] += add_second(st["squares"], sums.second[..., [1, 2, 0], :], sums.rows)


class ProbabilityScores(_Probabilities):
    """Streaming log loss and Brier score of predicted probabilities.

    ``update(y, p)`` takes 0/1 labels and the predicted probabilities of the
    positive class, which must lie in [0, 1] (a vector, or scikit-learn's
    n x 2 ``predict_proba`` matrix, whose second column is read).

    Returns (``finalize()``)
    ------------------------
    log_loss : float
        The mean binary cross-entropy (nats).
    brier : float
        The mean of ``(p - y)**2``.
    d2_log_loss, d2_brier : float
        scikit-learn's ``d2_log_loss_score`` and ``d2_brier_score``: ``1 -
        loss / safe(null loss)``, the null model predicting the weighted share
        of positives for every row (see :func:`d2_log_loss_score`). Absent for
        a state saved before the class totals were kept.
    n : int
        Rows folded in.
    log_loss_ci_lower, log_loss_ci_upper, brier_ci_lower, brier_ci_upper : float
        With ``finalize(ci=level)`` only: normal intervals of the two means
        (:func:`mean_interval`), clipped to [0, inf) (Brier to [0, 1]). A
        state saved before the second moments were kept refuses ``ci``.

    Notes
    -----
    Log loss floors the probability of the observed outcome at 1e-12, as the
    specification does (a certain-and-wrong row costs 27.63, not infinity);
    scikit-learn clips at the float64 epsilon, so the two differ only within
    1e-12 of 0 or 1.

    Examples
    --------
    >>> from streammetrics import ProbabilityScores
    >>> acc = ProbabilityScores().update([1, 0], [0.9, 0.2]).update([1, 0], [0.6, 0.4])
    >>> r = acc.finalize()
    >>> round(r.log_loss, 6), round(r.brier, 6)
    (0.337539, 0.0925)
    >>> r = acc.finalize(ci=0.95)  # mean -/+ 1.96 s / 2 of the terms 0.01, 0.04, 0.16, 0.16
    >>> round(r.brier_ci_lower, 6), round(r.brier_ci_upper, 6)
    (0.015181, 0.169819)
    """

    inputs = (
        BinaryLabels("y", "pass pos_label=, or use ClassProbabilityScores"),
        Probabilities("p", predict_proba=True),
    )
    fields = (
        _SUMS
        + (
            Field("squares", np.float64, (3, 2), merge="pairs", optional=True, doc="w loss², w (p - y)⁴, w² totals"),
            Field("squares_rows", np.int64, (1,), optional=True, doc="rows counted in squares"),
        )
        + _class_fields(2)
    )
    intervals = True

    def __init__(self, *, pos_label=None):
        self.pos_label = positive_label(pos_label)
        if self.pos_label is not None:
            self.inputs = (PositiveLabel("y", self.pos_label), self.inputs[1])
        self._init_state()

    def _settings(self):
        return {} if self.pos_label is None else {"pos_label": self.pos_label}

    def _check_state(self, state):
        check_sums(state, 1.0)  # (p - y)**2 <= 1
        if state["squares_rows"][0] > state["n"][0]:
            raise ValueError("more rows counted in 'squares' than observations")

    @staticmethod
    def _screen_states(st):
        return screen_sums(st, 1.0) | (st["squares_rows"][:, 0] > st["n"][:, 0])

    def _fold(self, arrays, w):
        y, p = arrays
        st = self._arrays
        # the state's pairs in the order of the batch's totals, added into a copy
        into = np.concatenate([st["sums"], st["classes"], st["squares"]])
        status = sum_rows(KP.probability_terms, (y, p), w, 5, ((1, 1), (2, 1), (0, 2)), into)[0]
        if status:
            return status
        if first_nonfinite(into[:3].reshape(-1)) >= 0:
            raise WeightOverflowError()
        if first_nonfinite(into[5:].reshape(-1)) < 0:  # (second moments past float64: no intervals)
            st["squares"][:] = into[5:]
            st["squares_rows"][0] += y.shape[0]
        st["sums"][:] = into[:3]
        st["classes"][:] = into[3:5]  # each at most the weight total: finite
        for name in ("n", "classes_rows"):
            st[name][0] += y.shape[0]
        return 0

    def row_terms(self) -> RowTerms:
        """Each row adds 1, its log loss and its squared error (and their squares), ``1 - y`` and ``y``."""
        return RowTerms(5, 5, self._terms, rows=1, second=(2, 1, 1, 0, 0))

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        return KP.probability_terms(y, p, lo, slots, values, col, base)

    def _compute(self, ci=None) -> Result:
        st = self._arrays
        r = _result(st, self.n, "ProbabilityScores", brier_scale=0.5)  # one column of the two
        if ci is None:
            return r
        check_second_moments(st)
        total, loss, brier_total = (float(v) for v in compensated.values(st["sums"]))
        loss2, brier2, wsq = (float(v) for v in compensated.values(st["squares"]))
        values = r.as_dict()
        values["log_loss_ci_lower"], values["log_loss_ci_upper"] = mean_interval(total, loss, loss2, wsq, ci)
        values["brier_ci_lower"], values["brier_ci_upper"] = mean_interval(
            total, brier_total, brier2, wsq, ci, upper=1.0
        )
        return ProbabilityResult(r.kind, I.beside(values), {"ci": ci, "weighted": r.weighted})


class ClassProbabilityScores(_Probabilities):
    """Streaming multiclass log loss and Brier score of an n x K probability matrix.

    Parameters
    ----------
    n_classes : int, optional
        K. ``update(y, P)`` then takes classes ``0..K-1`` and an n x K matrix
        whose rows are the predicted class probabilities (entries in [0, 1],
        each row summing to 1 within 1e-3).
    labels : sequence of hashable, optional
        The class labels in column order; ``y`` then holds those labels.

    Returns (``finalize()``)
    ------------------------
    log_loss, brier : float
        As defined below.
    d2_log_loss, d2_brier : float
        scikit-learn's ``d2_log_loss_score`` and ``d2_brier_score`` (see
        :func:`d2_log_loss_score`); absent for a state saved before the class
        totals were kept.
    n : int
        Rows folded in.

    Notes
    -----
    ``log_loss`` is the mean of ``-ln(max(P[i, y_i], 1e-12))`` (the
    specification's floor). ``brier`` is the mean over rows of
    ``sum_k (P[i, k] - [y_i == k])**2``, Brier's multiclass score (twice the
    binary one for two classes).

    Examples
    --------
    >>> from streammetrics import ClassProbabilityScores
    >>> acc = ClassProbabilityScores(labels=["cat", "dog", "bird"])
    >>> r = acc.update(["cat", "bird"], [[0.7, 0.2, 0.1], [0.2, 0.2, 0.6]]).finalize()
    >>> round(r.log_loss, 6), round(r.brier, 6)
    (0.43375, 0.19)
    """

    argument_names = ("y", "p")
    fields = _SUMS + _class_fields("n_classes")

    def __init__(self, n_classes: int | None = None, labels=None):
        self.n_classes, self.labels = class_settings("ClassProbabilityScores", n_classes, labels)
        self.inputs = (*class_inputs(self.n_classes, self.labels, ("y",)), ClassProbabilities("p", self.n_classes))
        self._init_state()

    def _settings(self):
        return {"n_classes": self.n_classes} | ({} if self.labels is None else {"labels": self.labels})

    def _check_state(self, state):
        check_sums(state, 2.0)  # sum_k (P[i, k] - [y_i == k])**2 <= 2

    def _fold(self, arrays, w):
        y, m = arrays
        st, size = self._arrays, 3 + self.n_classes
        pairs = np.zeros((size, 2))
        args = (y, m, self.n_classes, ROW_SUM_TOLERANCE)
        status = sum_terms(KP.class_probability_terms, args, w, 4, np.zeros(size, np.int64), pairs)
        if status:
            return status
        sums = st["sums"].copy()
        add_pairs(sums, pairs[:3])
        if first_nonfinite(sums.reshape(-1)) >= 0:
            raise WeightOverflowError()
        st["sums"][:] = sums
        add_pairs(st["classes"], pairs[3:])  # each at most the weight total: finite
        for name in ("n", "classes_rows"):
            st[name][0] += y.shape[0]
        return 0

    def row_terms(self) -> RowTerms:
        """Each row adds 1, its log loss, its Brier score and 1 to its class."""
        return RowTerms(3 + self.n_classes, 4, self._terms, rows=1)

    def _terms(self, batch, lo, slots, values, col, base):
        y, m = batch.arrays_for(self.inputs)
        return KP.class_probability_terms(y, m, self.n_classes, ROW_SUM_TOLERANCE, lo, slots, values, col, base)

    def _compute(self) -> Result:
        return _result(self._arrays, self.n, "ClassProbabilityScores", {"labels": self.labels})


# ------------------------------------------------------------------ one-shot
def _once(acc, *arrays, sample_weight=None) -> Result:
    return one_shot(acc, *arrays, sample_weight=sample_weight).finalize()


def log_loss(y, p, *, sample_weight=None, pos_label=None) -> float:
    """Binary cross-entropy, probabilities floored at 1e-12 on both sides.

    ``-mean(y ln max(p, 1e-12) + (1 - y) ln max(1 - p, 1e-12))``. scikit-learn
    clips at the float64 epsilon instead, so the two differ only for
    probabilities within 1e-12 of 0 or 1. ``p`` may be scikit-learn's n x 2
    ``predict_proba`` matrix: its second column, the positive class, is read.
    ``pos_label``: the positive class of labels of any kind (``p`` its probability).

    >>> round(log_loss([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]), 6)
    0.337539
    >>> round(log_loss([1, 0], [[0.1, 0.9], [0.8, 0.2]]), 6) == round(log_loss([1, 0], [0.9, 0.2]), 6)
    True
    """
    return _once(ProbabilityScores(pos_label=pos_label), y, p, sample_weight=sample_weight).log_loss


def brier(y, p, *, sample_weight=None, pos_label=None) -> float:
    """Brier score ``mean((p - y)²)``; ``p`` as for :func:`log_loss`.

    >>> brier([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4])
    0.0925
    """
    return _once(ProbabilityScores(pos_label=pos_label), y, p, sample_weight=sample_weight).brier


def class_probability_scores(y, P, n_classes=None, *, labels=None, sample_weight=None) -> Result:
    """Multiclass ``log_loss`` and ``brier`` of class probabilities ``P`` (n x K).

    ``n_classes`` defaults to the number of columns of ``P``; see
    :class:`ClassProbabilityScores` for the definitions.

    >>> from streammetrics import class_probability_scores
    >>> r = class_probability_scores([0, 2], [[0.7, 0.2, 0.1], [0.2, 0.2, 0.6]])
    >>> round(r.log_loss, 6), round(r.brier, 6)
    (0.43375, 0.19)
    """
    if n_classes is None and labels is None:
        n_classes = np.shape(P)[1] if np.ndim(P) == 2 else None
    return _once(ClassProbabilityScores(n_classes, labels=labels), y, P, sample_weight=sample_weight)


def _d2_member(p, pos_label, labels):
    """The accumulator scikit-learn's D² functions amount to: binary for a vector
    of positive-class probabilities, by class for a matrix (columns in the
    sorted order of ``labels``, or classes ``0..K-1``)."""
    if np.ndim(p) < 2:
        if pos_label is None and labels is not None:
            pos_label = sorted(labels)[-1]  # scikit-learn's positive: the greater label
        return ProbabilityScores(pos_label=pos_label)
    if labels is None:
        return ClassProbabilityScores(np.shape(p)[1])
    return ClassProbabilityScores(labels=sorted(labels))


def d2_log_loss_score(y, p, *, sample_weight=None, labels=None) -> float:
    """D² of the log loss: ``1 - log_loss / safe(null log loss)``, as
    scikit-learn's ``d2_log_loss_score``.

    The null model predicts, for every row, the (weighted) share of each class.
    ``p`` is a vector of positive-class probabilities (labels 0/1, or the
    greater of ``labels``) or an n x K matrix (classes ``0..K-1``, or
    ``labels`` in sorted order). Both log losses floor the probabilities at
    1e-12, the null model's class shares too (scikit-learn clips at the
    float64 epsilon: the two differ only for probabilities, or shares of
    the weight, within 1e-12 of 0 or 1). Where the null loss is 0 (a
    single class in ``y``, or a single row) the specification's guard
    gives ``1 - log_loss``; scikit-learn raises for a single class and
    returns NaN for fewer than two rows. scikit-learn's keywords are taken
    (``y_true=``, ``y_proba=``, ``y_pred=``).

    >>> from streammetrics import d2_log_loss_score
    >>> round(d2_log_loss_score([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]), 6)
    0.513034
    >>> round(d2_log_loss_score(y_true=[0, 2, 1], y_proba=[[0.8, 0.1, 0.1], [0.2, 0.2, 0.6], [0.3, 0.4, 0.3]]), 6)
    0.49929
    >>> d2_log_loss_score([1, 1], [1.0, 1.0])
    1.0
    """
    return _once(_d2_member(p, None, labels), y, p, sample_weight=sample_weight).d2_log_loss


def d2_brier_score(y, p, *, sample_weight=None, pos_label=None, labels=None) -> float:
    """D² of the Brier score (the Brier skill score): ``1 - brier / safe(null
    Brier)``, as scikit-learn's ``d2_brier_score`` (and with its keywords);
    the null model and ``p`` as for :func:`d2_log_loss_score`, ``pos_label``
    the positive class of a vector. Where the null Brier score is 0 (a
    single class in ``y``, or a single row) the specification's guard gives ``1 -
    brier``; scikit-learn divides by zero there (-inf or NaN) and returns NaN
    for fewer than two rows.

    >>> from streammetrics import d2_brier_score
    >>> round(d2_brier_score([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]), 6)
    0.63
    """
    return _once(_d2_member(p, pos_label, labels), y, p, sample_weight=sample_weight).d2_brier
