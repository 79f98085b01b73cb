"""Multiclass classification: the K x K confusion matrix and its one-vs-rest scores."""

from __future__ import annotations

import math

import numpy as np

from .._kernels.multiclass import class_terms, count_classes, sum_classes
from .._protocol.base import Accumulator
from .._protocol.errors import BadShapeError, BadValueError, NoObservationsError
from .._protocol.inputs import ClassIndices, ClassLabels, refuse_labels
from .._protocol.result import LabeledResult, RenderContext, Result, safe
from .._protocol.state import Field, count_total
from .._protocol.terms import RowTerms, add_pairs
from .._protocol.validation import as_1d, check_count, check_same_length, squeeze_column, to_numpy
from .rates import (
    averaged_rates,
    check_average,
    check_beta,
    check_jaccard_zero_division,
    check_zero_division,
    class_rates,
    jaccard_average,
    one_shot,
    plain,
)

__all__ = ["MulticlassConfusion", "MulticlassResult", "class_settings", "confusion_matrix", "multiclass_scores"]


class MulticlassResult(LabeledResult):
    """The scores of a confusion matrix; per-class rows are named by the labels."""

    __slots__ = ()
    title = "Confusion"
    counts = ("matrix", "support")

    def fbeta(self, b: float, average: str | None = "macro", zero_division=0.0):
        """F-beta at ``b`` (> 0) from the same matrix, averaged (``"macro"``,
        ``"micro"``, ``"weighted"``) or per class (``None``); ``zero_division``
        0, 1 or ``np.nan`` (left out of the averages, as scikit-learn).

        >>> from streammetrics import multiclass_scores
        >>> r = multiclass_scores([0, 1, 2, 2], [0, 2, 2, 1])
        >>> r.fbeta(1) == r.macro_f1, r.fbeta(2, average=None)
        (True, array([1. , 0. , 0.5]))
        """
        b = check_beta(b)
        average = check_average(average, allow_binary=False)
        present = self._meta.get("present")
        if present is None:
            present = np.ones(self.matrix.shape[0], bool)
        return averaged_rates(self.matrix, np.asarray(present, bool), b, average, check_zero_division(zero_division))[2]

    def jaccard(self, average: str | None = "macro", zero_division=0):
        """The Jaccard index ``TP / (TP + FP + FN)`` of each class of the matrix, averaged (``"macro"`` over every
        class, ``"micro"``, ``"weighted"``) or per class (``None``), as scikit-learn's ``jaccard_score``;
        ``zero_division`` 0 or 1 for a class neither true nor predicted.

        >>> from streammetrics import multiclass_scores
        >>> r = multiclass_scores([0, 1, 2, 2], [0, 2, 2, 1])
        >>> r.jaccard(average=None), r.jaccard("micro")
        (array([1.        , 0.        , 0.33333333]), 0.333...)
        """
        zd = check_jaccard_zero_division(zero_division)
        m = self.matrix
        tp = np.diagonal(m)
        return jaccard_average(tp, m.sum(axis=0) - tp, m.sum(axis=1) - tp, check_average(average, False), zd)

    def plot(self, folder: str, ctx: RenderContext) -> list[str]:
        from ..report import plots

        headline = f"accuracy = {self.accuracy:.4f}, macro F1 = {self.macro_f1:.4f}"
        labels = self._meta.get("labels") or ctx.labels
        return [plots.confusion(self.matrix, folder, "Confusion matrix", headline, labels=labels)]


# ----------------------------------------------------------------- the scores
def _others(x: np.ndarray) -> np.ndarray:
    """``sum(x) - x[j]`` for each ``j`` as the sum of the other entries (no cancellation for ``x >= 0``)."""
    below = np.concatenate(([0.0], np.cumsum(x)[:-1]))
    above = np.concatenate((np.cumsum(x[::-1])[::-1][1:], [0.0]))
    return below + above


def multiclass_result(matrix: np.ndarray, present: np.ndarray, n: int, meta=None, beta=None) -> MulticlassResult:
    """The scores of a confusion matrix (``int64``: products in exact Python
    integers, or ``float64``); ``present``: the classes of the macro averages."""
    exact = matrix.dtype.kind in "iu"
    # per-class totals read from the matrix as it is: no float copy of a K x K
    # matrix (at K = 30,000 one copy is 7.2 GB)
    tp = np.diagonal(matrix).astype(np.float64)
    support = matrix.sum(axis=1).astype(np.float64)  # true totals per class
    called = matrix.sum(axis=0).astype(np.float64)  # predicted totals per class
    total = float(support.sum())
    if total == 0:
        raise ValueError("the sample weights sum to zero: every score is undefined")

    precision, recall, f1 = class_rates(tp, called, support)
    accuracy = float(tp.sum() / total)

    def macro(x):
        return float(np.mean(x[present]))

    def weighted(x):
        return float(np.dot(support, x) / safe(total))

    # scikit-learn's balanced accuracy: mean recall over the classes in y
    in_y = support > 0
    balanced = float(np.mean(recall[in_y]))

    if exact:
        t = [int(v) for v in matrix.sum(axis=1)]
        c = [int(v) for v in matrix.sum(axis=0)]
        s = sum(t)
        hit = int(np.trace(matrix))
        tc = sum(a * b for a, b in zip(t, c))
        tt = sum(a * a for a in t)
        cc = sum(b * b for b in c)
        cov_tc = hit * s - tc
        under = (s * s - cc) * (s * s - tt)
        kappa_under = s * s - tc
    else:
        # weights as fractions of their total: the same ratios, and products
        # of weights near 1e80 no longer overflow (they made the MCC 0 and the
        # kappa NaN); 1 - sum(c_j^2) as sum(c_j * (the other c's)), terms >= 0,
        # so a class holding nearly all the weight cancels no digits
        t, c = support / total, called / total
        cov_tc = float(tp.sum()) / total - float(np.dot(t, c))
        under = float(np.dot(c, _others(c))) * float(np.dot(t, _others(t)))
        kappa_under = float(np.dot(t, _others(c)))
    # Gorodkin's K-category correlation, as scikit-learn's matthews_corrcoef;
    # exact integers when unweighted (s**4 overflows int64 past ~55k rows)
    mcc = float(cov_tc / math.sqrt(under)) if under > 0 else 0.0
    # Cohen's kappa (po - pe) / (1 - pe), written as counts
    kappa = float(cov_tc / safe(kappa_under))

    rates = {"precision": precision, "recall": recall, "f1": f1}
    values = {"n": n, "matrix": matrix, "support": support if not exact else matrix.sum(axis=1), "accuracy": accuracy}
    values.update(balanced_accuracy=balanced, **rates)
    values.update({f"macro_{f}": macro(x) for f, x in rates.items()})
    values.update({f"micro_{f}": accuracy for f in rates})
    values.update({f"weighted_{f}": weighted(x) for f, x in rates.items()})
    values.update(mcc=mcc, cohen_kappa=kappa)
    meta = dict(meta or {})
    meta["present"] = np.array(present, bool)  # the classes of the macro averages
    if beta is not None:
        fb = class_rates(tp, called, support, beta)[2]
        values.update(fbeta_per_class=fb, macro_fbeta=macro(fb), micro_fbeta=accuracy, weighted_fbeta=weighted(fb))
        meta["beta"] = beta
    return MulticlassResult("MulticlassScores", values, meta)


# ------------------------------------------------------------------ settings
def class_settings(owner: str, n_classes, labels, name: str = "n_classes") -> tuple[int, list | None]:
    """``(n_classes, labels)`` checked: labels give K, or must agree with it
    (``name``: the count's keyword, ``n_classes`` or ``n_labels``)."""
    if labels is not None:
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
            raise TypeError(f"labels must be a sequence, got {type(labels).__name__}")
        labels = [plain(v) for v in labels]
        ClassLabels("labels", labels)  # checks: hashable, no repeats
        if n_classes is None:
            n_classes = len(labels)
        elif check_count(n_classes, name) != len(labels):
            raise ValueError(f"{name}={n_classes} but {len(labels)} labels were given")
    elif n_classes is None:
        raise TypeError(f"{owner} needs {name} or labels")
    return check_count(n_classes, name), labels


def class_inputs(n_classes: int, labels, names=("y", "p")):
    """The declared inputs of class codes: indices ``0..K-1``, or ``labels``."""
    if labels is None:
        return tuple(ClassIndices(n, n_classes) for n in names)
    return tuple(ClassLabels(n, labels) for n in names)


# ---------------------------------------------------------------- accumulator
class MulticlassConfusion(Accumulator):
    """Streaming K x K confusion matrix and the multiclass scores built from it.

    Parameters
    ----------
    n_classes : int, optional
        K: ``update`` then takes integer classes in ``0..K-1``.
    labels : sequence of hashable, optional
        The class labels in matrix order, which ``update`` then takes
        (``n_classes`` defaults to their number).

    ``finalize()`` gives ``matrix`` (rows the truth; ``int64``, or ``float64``
    once weights are seen), per-class ``support``, ``precision``, ``recall``
    and ``f1`` (guarded: scikit-learn's ``zero_division=0``), their
    ``macro_*`` (over the classes seen in ``y`` or ``p``), ``micro_*`` and
    ``weighted_*`` averages, ``accuracy``, ``balanced_accuracy`` (mean recall
    over the classes in ``y``, as scikit-learn), ``mcc``, ``cohen_kappa`` (0
    where scikit-learn gives NaN) and ``n``.

    Examples
    --------
    Two shards of a 3-class stream, merged:

    >>> from streammetrics import MulticlassConfusion
    >>> a = MulticlassConfusion(3).update([0, 1, 2, 2], [0, 2, 2, 2])
    >>> b = MulticlassConfusion(3).update([1, 0], [1, 0])
    >>> r = (a + b).finalize()
    >>> r.matrix
    array([[2, 0, 0],
           [0, 1, 1],
           [0, 0, 2]])
    >>> r.recall
    array([1. , 0.5, 1. ])
    >>> round(r.macro_f1, 4), round(r.accuracy, 4), round(r.mcc, 4)
    (0.8222, 0.8333, 0.7833)

    String labels are mapped to their positions:

    >>> acc = MulticlassConfusion(labels=["cat", "dog", "bird"])
    >>> acc.update(["cat", "dog", "dog"], ["cat", "dog", "cat"]).finalize().precision
    array([0.5, 1. , 0. ])
    """

    _totals_unchecked = True  # its weighted fold does not check that its totals stay finite
    argument_names = ("y", "p")
    fields = (
        Field("n", np.int64, (1,)),
        Field("counts", np.int64, ("n_classes", "n_classes"), rows=True, doc="unweighted rows"),
        # (k*k, 2) compensated pairs once a weighted batch arrives, else (0, 2)
        Field("wsum", np.float64, (None, 2), merge="pairs", doc="weights of weighted rows"),
        Field("seen", np.int64, (2, "n_classes"), rows=True, doc="weighted rows per class in y and in p"),
    )
    headline = ("accuracy", "macro_f1")

    def __init__(self, n_classes: int | None = None, labels=None):
        self.n_classes, self.labels = class_settings("MulticlassConfusion", n_classes, labels)
        self.inputs = class_inputs(self.n_classes, self.labels)
        self._init_state()

    def _settings(self):
        return {"n_classes": self.n_classes, "labels": self.labels}

    def _check_state(self, state):
        k = self.n_classes
        if state["wsum"].shape not in ((0, 2), (k * k, 2)):
            raise ValueError(f"entry 'wsum' has shape {state['wsum'].shape}")
        seen_y, seen_p = count_total(state["seen"][0]), count_total(state["seen"][1])
        if seen_y != seen_p or count_total(state["counts"]) + seen_y != int(state["n"][0]):
            raise ValueError("counts do not add up to the observation count")
        if seen_y == 0 and np.any(state["wsum"] != 0):
            raise ValueError("entry 'wsum' holds weights but no row came with weights")

    def _fold(self, arrays, w):
        y, p = arrays
        st = self._arrays
        k = self.n_classes
        if not w.shape[0]:
            return count_classes(y, p, k, st["n"], st["counts"])
        wsum = st["wsum"]
        if wsum.shape[0] == 0:
            wsum = np.zeros((k * k, 2), np.float64)  # installed only on success
        status = sum_classes(y, p, w, k, st["n"], wsum, st["seen"])
        if not status:
            st["wsum"] = wsum
        return status

    def row_terms(self) -> RowTerms:
        """Each row's weight goes to its cell; its classes in ``y`` and ``p`` are
        counted (for the weighted rows' ``seen``)."""
        k = self.n_classes
        return RowTerms(k * k + 2 * k, 3, self._terms, rows=k * k, counted=range(k * k + 2 * k), counts_only=True)

    def _terms(self, batch, lo, slots, values, col, base):
        y, p = batch.arrays_for(self.inputs)
        return class_terms(y, p, self.n_classes, lo, slots, values, col, base)

    def _add_sums(self, sums, st):
        k = self.n_classes
        st["n"][:, 0] += sums.rows
        if not sums.weighted:
            st["counts"] += sums.ints[:, : k * k].reshape(-1, k, k)
            return
        if st["wsum"].shape[1] == 0:  # the first weighted rows
            st["wsum"] = np.zeros((sums.rows.shape[0], k * k, 2))
        add_pairs(st["wsum"], sums.pairs[:, : k * k])
        st["seen"] += sums.ints[:, k * k :].reshape(-1, 2, k)

    def matrix(self) -> np.ndarray:
        """The current confusion matrix (a copy), without computing the scores."""
        with self._guard:
            counts, wsum = self._arrays["counts"], self._arrays["wsum"]
            if wsum.shape[0] == 0:
                return counts.copy()
            # one K x K float array, added into in place (no temporaries of its size)
            out = np.add(wsum[:, 0], wsum[:, 1])
            overflowed = ~np.isfinite(wsum[:, 0])
            if overflowed.any():
                out[overflowed] = wsum[overflowed, 0]
            out += counts.ravel()
            return out.reshape(self.n_classes, self.n_classes)

    def present(self) -> np.ndarray:
        """Which classes occurred in ``y`` or ``p`` (zero-weight rows included)."""
        st = self._arrays
        return (st["counts"].sum(axis=0) + st["counts"].sum(axis=1) + st["seen"].sum(axis=0)) > 0

    def _compute(self, beta: float | None = None) -> Result:
        meta = {"labels": self.labels, "weighted": self._arrays["wsum"].shape[0] > 0}
        return multiclass_result(self.matrix(), self.present(), self.n, meta, beta=beta)


# ------------------------------------------------------------------ one-shot
#: Largest n_classes inferred from the data (a 10^4 x 10^4 matrix is 800 MB).
_MAX_INFERRED = 10_000


def label_union(yy: np.ndarray, pp: np.ndarray):
    """``(labels, codes)``: the sorted distinct labels of two 1-D label arrays
    (scikit-learn's ``unique_labels``) and every value's index among them, ``y``'s
    then ``p``'s; labels of two kinds (strings and numbers) are refused."""
    strings = [a.dtype.kind in "US" for a in (yy, pp)]
    numbers = [a.dtype.kind in "biuf" for a in (yy, pp)]
    if (strings[0] and numbers[1]) or (numbers[0] and strings[1]):
        raise TypeError(
            f"y holds {'strings' if strings[0] else 'numbers'} and p "
            f"{'strings' if strings[1] else 'numbers'}: labels must be of one kind"
        )
    objects = "O" in (yy.dtype.kind, pp.dtype.kind)
    both = np.concatenate([yy.astype(object), pp.astype(object)] if objects else [yy, pp])
    try:
        labels, codes = np.unique(both, return_inverse=True)
    except TypeError:
        raise TypeError(
            "y and p mix labels that do not sort together (e.g. strings and numbers): labels must be of one kind"
        ) from None
    if labels.size > _MAX_INFERRED:
        raise ValueError(
            f"y and p hold {labels.size:,} distinct labels (more than "
            f"{_MAX_INFERRED:,}): are they scores rather than class labels?"
        )
    return labels, codes.reshape(-1)


def _one_shot(y, p, n_classes, labels, sample_weight) -> MulticlassConfusion:
    if n_classes is None and labels is None:
        yy, pp = to_numpy(y, "y"), to_numpy(p, "p")
        if any(a.dtype.kind in "USO" for a in (yy, pp)):  # class labels: their sorted union, as scikit-learn
            yy, pp = squeeze_column(yy), squeeze_column(pp)
            for name, arr in (("y", yy), ("p", pp)):
                if arr.ndim != 1:
                    raise BadShapeError(f"{name} must be a 1-D array of labels, got shape {arr.shape}", name)
            found, _ = label_union(yy, pp)
            labels = [v.item() if isinstance(v, np.generic) else v for v in found]
            return _one_shot(yy, pp, len(labels), labels, sample_weight)
        refuse_labels(yy, "y")
        refuse_labels(pp, "p")
        yy, pp = as_1d(yy, "y"), as_1d(pp, "p")
        check_same_length(["y", "p"], [yy, pp])
        if yy.size == 0:
            raise NoObservationsError("y and p are empty: the scores need at least one observation")
        for name, arr in (("y", yy), ("p", pp)):  # K is read from the values: check them first
            with np.errstate(invalid="ignore", over="ignore"):  # 2**63 is inf in float16
                bad = np.flatnonzero(
                    ~((arr >= 0) & (arr < 2.0**63) & (arr == np.floor(arr))) if arr.dtype.kind == "f" else arr < 0
                )
            if bad.size:
                i = int(bad[0])
                raise BadValueError(name, i, arr[i], "classes must be integers >= 0")
        top = max(yy.max(), pp.max())
        n_classes = int(top) + 1
        if n_classes > _MAX_INFERRED:
            raise ValueError(
                f"the largest class is {top!r}, so n_classes would be {n_classes}: pass "
                "n_classes (or labels) explicitly for a matrix that large"
            )
        y, p = yy, pp
    return one_shot(MulticlassConfusion(n_classes, labels=labels), y, p, sample_weight=sample_weight)


def confusion_matrix(y, p, n_classes=None, sample_weight=None, *, labels=None) -> np.ndarray:
    """The K x K confusion matrix of true classes ``y`` and predictions ``p``.

    ``n_classes`` is inferred as ``max(y.max(), p.max()) + 1`` when omitted
    (:class:`MulticlassConfusion` holds the matrix).

    >>> from streammetrics import confusion_matrix
    >>> confusion_matrix([0, 1, 2, 2], [0, 2, 2, 1])
    array([[1, 0, 0],
           [0, 0, 1],
           [0, 1, 1]])
    >>> confusion_matrix(["b", "a"], ["b", "b"], labels=["a", "b"])
    array([[0, 1],
           [0, 1]])
    """
    return _one_shot(y, p, n_classes, labels, sample_weight).matrix()


def multiclass_scores(y, p, n_classes=None, sample_weight=None, *, labels=None, beta: float | None = None) -> Result:
    """Every multiclass score of one batch, as :meth:`MulticlassConfusion.finalize`.

    ``n_classes`` is inferred as ``max + 1`` when omitted; class labels that are
    strings (or other objects) are taken as scikit-learn takes them, the sorted
    union of the labels of ``y`` and ``p`` (``r.meta["labels"]``). With ``beta`` (> 0)
    the result also holds ``fbeta_per_class``, ``macro_fbeta``, ``micro_fbeta``
    and ``weighted_fbeta``; ``r.fbeta(b, average=...)`` gives any other.

    >>> from streammetrics import multiclass_scores
    >>> r = multiclass_scores([0, 1, 2, 2], [0, 2, 2, 1])
    >>> r.f1
    array([1. , 0. , 0.5])
    >>> r.macro_f1, r.balanced_accuracy
    (0.5, 0.5)
    >>> multiclass_scores([0, 1, 2, 2], [0, 2, 2, 1], beta=2).fbeta_per_class
    array([1. , 0. , 0.5])
    >>> r = multiclass_scores(["cat", "dog", "cat"], ["cat", "cat", "cat"])
    >>> r.meta["labels"], r.recall
    (['cat', 'dog'], array([1., 0.]))
    """
    if beta is not None:
        beta = check_beta(beta, "beta")
    return _one_shot(y, p, n_classes, labels, sample_weight)._finalize(beta=beta)
