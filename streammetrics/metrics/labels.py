"""Class labels of any kind (integers or strings) read from the data, for the
one-shot functions' ``average=`` and ``pos_label=`` keywords."""

from __future__ import annotations

import math

import numpy as np

from .._protocol.errors import BadShapeError, BadValueError, NoObservationsError
from .._protocol.inputs import Labels01
from .._protocol.validation import as_1d, check_same_length, objects_as_numbers, squeeze_column, to_numpy
from .multiclass import MulticlassConfusion, label_union, multiclass_result


class LabelKindError(TypeError, ValueError):
    """Labels of a kind the function does not read (strings where 0/1 numbers are needed, a ragged list): a
    ``TypeError`` and, as scikit-learn raises for such labels, a ``ValueError``."""


def labels_as_array(x, name: str) -> np.ndarray:
    """``x`` as a numpy array of labels (a ragged list: :class:`LabelKindError`), an ``n x 1`` column as its vector."""
    try:
        return squeeze_column(to_numpy(x, name))
    except TypeError as exc:
        raise LabelKindError(str(exc)) from None


def label_array(x, name: str) -> np.ndarray:
    """``x`` as a 1-D array of class labels (numbers holding integers, or strings)."""
    arr = objects_as_numbers(labels_as_array(x, name))  # strings stay labels
    if arr.dtype.kind not in "OUS":
        arr = as_1d(arr, name)
        if arr.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = np.flatnonzero(~(np.isfinite(arr) & (arr == np.floor(arr))))
            if bad.size:
                i, hint = int(bad[0]), "for scores or probabilities, cut them into labels first"
                raise BadValueError(name, i, arr[i], "class labels must be integers or strings", hint=hint)
    elif arr.ndim != 1:
        raise BadShapeError(f"{name} must be a 1-D array, got shape {arr.shape}", name)
    return arr


def label_matrix(y, p, sample_weight):
    """``(labels, matrix)``: the sorted distinct labels of ``y`` and ``p`` and
    their confusion matrix (rows the truth), as scikit-learn's ``unique_labels``."""
    yy, pp = label_array(y, "y"), label_array(p, "p")
    check_same_length(["y", "p"], [yy, pp])
    if yy.size == 0:
        raise NoObservationsError("y and p are empty: the scores need at least one observation")
    labels, codes = label_union(yy, pp)
    n = yy.shape[0]
    acc = MulticlassConfusion(int(labels.size)).update(codes[:n], codes[n:], sample_weight=sample_weight)
    return [v.item() if isinstance(v, np.generic) else v for v in labels], acc.matrix()


def _whole(value) -> bool:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(v) and v == math.floor(v)


def class_result(y, p, sample_weight, refusal: Exception):
    """The multiclass result of ``y`` and ``p`` whose labels are not 0/1 (any kind: the sorted union, as
    scikit-learn's ``unique_labels``), for the binary one-shot scores that scikit-learn also defines on classes;
    ``refusal`` (the binary scores' error) is raised again for data that are not labels either."""
    if isinstance(refusal, NoObservationsError):
        raise refusal
    try:
        labels, m = label_matrix(y, p, sample_weight)
    except (ValueError, TypeError):
        if isinstance(refusal, BadValueError) and not _whole(refusal.value):
            raise refusal from None  # a score or a NaN among 0/1 labels: the binary message says what to do
        raise
    return multiclass_result(m, np.ones(len(labels), bool), len(label_array(y, "y")), {"labels": labels})


def cohen_kappa_score(y1, y2, *, labels=None, weights=None, sample_weight=None, replace_undefined_by=0.0) -> float:
    """Cohen's kappa, the agreement of two labelings beyond chance: ``1 - sum(W C) / sum(W E)`` of the confusion
    matrix ``C``, the product of its margins over its total ``E``, and disagreement weights ``W`` (``None``: 1 off the
    diagonal; ``"linear"``: ``|i - j|``; ``"quadratic"``: ``(i - j)**2`` over the labels' sorted order, or the order
    of ``labels``), as ``sklearn.metrics.cohen_kappa_score``.

    Labels of any kind; ``labels`` names the classes (a row with another label is an error, where scikit-learn
    drops it). When the kappa is undefined (every weight or all chance disagreement zero: a single label in common)
    the result is ``replace_undefined_by``, 0.0 by default as the library guards undefined scores (scikit-learn's
    default is NaN with a warning: pass ``replace_undefined_by=np.nan`` for it).

    >>> from streammetrics import cohen_kappa_score
    >>> cohen_kappa_score(["cat", "dog", "dog", "bird"], ["cat", "dog", "bird", "bird"])
    0.636...
    >>> round(cohen_kappa_score([0, 1, 2, 2], [0, 2, 2, 1], weights="quadratic"), 6)
    0.6
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    if labels is None:
        _, m = label_matrix(y1, y2, sample_weight)
    else:
        m = MulticlassConfusion(len(labels), labels=labels).update(y1, y2, sample_weight=sample_weight).matrix()
    m = m.astype(np.float64)
    k = m.shape[0]
    if weights is None:
        w = 1.0 - np.eye(k)
    else:
        i = np.arange(k, dtype=np.float64)
        w = np.abs(i[None, :] - i[:, None]) if weights == "linear" else (i[None, :] - i[:, None]) ** 2
    total = m.sum()
    expected = np.outer(m.sum(axis=0), m.sum(axis=1)) / total if total else None
    under = float(np.sum(w * expected)) if total else 0.0
    if under == 0.0:
        return replace_undefined_by
    return float(1 - np.sum(w * m) / under)


class PosLabelError(ValueError):
    """``pos_label`` is not one of the labels of two-label data."""


def two_label_counts(y, p, sample_weight, pos_label):
    """``(tp, fp, fn, tn)`` of two-label data whose positive label is ``pos_label``."""
    labels, m = label_matrix(y, p, sample_weight)
    if len(labels) > 2:
        shown = ", ".join(repr(v) for v in labels[:5]) + (", ..." if len(labels) > 5 else "")
        raise ValueError(
            f"y and p hold {len(labels)} labels ({shown}), but average='binary' "
            "scores two: pass average='macro', 'micro', 'weighted' or None"
        )
    cast = int if m.dtype.kind in "iu" else float
    total = cast(m.sum())
    if pos_label not in labels:
        if len(labels) == 2:
            raise PosLabelError(
                f"pos_label={pos_label!r} is not one of the labels {labels!r}: pass pos_label=, the positive class"
            )
        return cast(0), cast(0), cast(0), total
    j = labels.index(pos_label)
    tp = cast(m[j, j])
    fp = cast(m[:, j].sum()) - tp
    fn = cast(m[j, :].sum()) - tp
    return tp, fp, fn, total - tp - fp - fn


def positives(y, pos_label):
    """``y`` as it is (``pos_label=None``: 0/1 labels), or ``y == pos_label`` of labels of any kind."""
    if pos_label is None:
        return y
    return label_array(y, "y") == pos_label


class BinaryLabels(Labels01):
    """0/1 labels whose refusal of a class label (an integer other than 0 and 1) says where such labels go:
    ``elsewhere``, e.g. "use MulticlassConfusion"."""

    def __init__(self, name: str, elsewhere: str, onehot: bool = False):
        super().__init__(name, onehot)
        self.elsewhere = elsewhere

    def convert(self, x):
        try:
            return super().convert(x)
        except TypeError as exc:  # strings, objects, a ragged list
            raise LabelKindError(f"{exc}; {self.elsewhere}") from None

    def hinted(self, arr: np.ndarray, i: int) -> str | None:
        v = arr[i]
        if arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and np.isfinite(v) and v == np.floor(v)):
            return f"{self.name} holds class labels other than 0/1: {self.elsewhere}"
        return super().hinted(arr, i)


class PositiveLabel(Labels01):
    """Labels of any kind (integers, strings, any hashable values) read as ``label == pos_label`` (0/1)."""

    def __init__(self, name: str, pos_label):
        super().__init__(name)
        self.pos_label = pos_label
        self.domain = ("positive", repr(pos_label))

    def convert(self, x):
        return label_array(x, self.name) == self.pos_label


def positive_label(pos_label):
    """``pos_label`` checked: ``None`` or a hashable label."""
    if pos_label is not None:
        try:
            hash(pos_label)
        except TypeError:
            raise TypeError(f"pos_label must be a hashable label, got {type(pos_label).__name__}") from None
    return pos_label.item() if isinstance(pos_label, np.generic) else pos_label
