"""Binary classification: the confusion counts and every rate built from them."""

from __future__ import annotations

import math

import numpy as np

from ._base import Accumulator
from ._kernels.binary import binary_update, binary_update_scores
from ._result import Result, safe
from ._validation import (
    as_labels01,
    as_reals,
    as_weights,
    check_same_length,
    raise_bad_labels,
    raise_nonfinite,
)

__all__ = ["BinaryConfusion", "BinaryResult", "binary_result"]


class BinaryResult(Result):
    """Scores of a binary confusion matrix; also offers :meth:`fbeta`."""

    __slots__ = ()

    def fbeta(self, b: float) -> float:
        """F-beta at ``b`` (> 0) from the same counts, guarded like ``f1``."""
        return _fbeta(self.precision, self.recall, _check_beta(b))


def _check_beta(b) -> float:
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
        raise TypeError(f"b must be a real number, got {type(b).__name__}")
    b = float(b)
    if not (b > 0 and math.isfinite(b)):
        raise ValueError(f"b must be a finite number > 0, got {b!r}")
    return b


def _fbeta(precision: float, recall: float, b: float) -> float:
    b2 = b * b
    return (1 + b2) * precision * recall / safe(b2 * precision + recall)


def binary_result(tp, fp, fn, tn, n: int) -> BinaryResult:
    """The guarded scores of the specification from the four counts.

    This is the only place these formulas are written: the one-shot functions
    and :class:`BinaryConfusion` both come here. Counts are Python ``int``
    when unweighted (products exact, then rounded once to float) and ``float``
    with weights.
    """
    total = tp + fp + fn + tn
    if total == 0:
        raise ValueError("the sample weights sum to zero: every score is undefined")
    precision = tp / safe(tp + fp)
    recall = tp / safe(tp + fn)
    specificity = tn / safe(tn + fp)
    f1 = 2 * precision * recall / safe(precision + recall)
    # numerator and the product of the margins: exact Python integers when
    # unweighted (they overflow int64 near n = 1e5), float64 otherwise
    top = tp * tn - fp * fn
    under = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    mcc = float(top) / math.sqrt(float(safe(max(under, 0))))
    return BinaryResult(
        "BinaryScores",
        {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "tn": tn,
            "n": n,
            "accuracy": float((tp + tn) / total),
            "precision": float(precision),
            "recall": float(recall),
            "specificity": float(specificity),
            "f1": float(f1),
            "mcc": mcc,
            "balanced_accuracy": float((recall + specificity) / 2),
        },
    )


def _raise_batch_error(status: int, y, p, p_name: str, scores: bool) -> None:
    raise_bad_labels("y", y)
    if scores:
        raise_nonfinite(p_name, p, "scores")
    else:
        raise_bad_labels(p_name, p)
    raise AssertionError(f"kernel reported status {status} but no bad value found")


def _prepare(y, p, sample_weight, threshold):
    y = as_labels01(y, "y")
    p = as_reals(p, "p") if threshold is not None else as_labels01(p, "p")
    n = check_same_length(y=y, p=p)
    w = as_weights(sample_weight, n)
    return y, p, w, n


class BinaryConfusion(Accumulator):
    """Streaming binary confusion counts and the guarded rates built from them.

    Parameters
    ----------
    threshold : float, optional
        Without a threshold, ``p`` must hold hard 0/1 predictions. With one,
        ``p`` may hold any finite real scores (probabilities or logits) and
        ``p >= threshold`` counts as a positive prediction.

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
    """

    _headline = ("accuracy", "f1")

    def __init__(self, threshold: float | None = None):
        if threshold is not None:
            if isinstance(threshold, (bool, np.bool_)) or not isinstance(
                threshold, (int, float, np.integer, np.floating)
            ):
                raise TypeError(
                    f"threshold must be a real number or None, got {type(threshold).__name__}"
                )
            threshold = float(threshold)
            if not math.isfinite(threshold):
                raise ValueError(f"threshold must be finite, got {threshold!r}")
        self.threshold = threshold
        self._init_state()

    def _settings(self):
        return {"threshold": self.threshold}

    def _new_state(self):
        return {
            "n": np.zeros(1, np.int64),
            "counts": np.zeros(4, np.int64),
            "wsums": np.zeros((4, 2), np.float64),
            "weighted": np.zeros(1, np.int64),
        }

    def _check_state(self, state):
        if np.any(state["counts"] < 0) or np.any(state["wsums"][:, 0] < 0):
            raise ValueError("negative counts")
        if state["counts"].sum() > state["n"][0]:
            raise ValueError("counts exceed the observation count")

    def update(self, y, p, sample_weight=None):
        """Fold in one batch of labels ``y`` and predictions (or scores) ``p``.

        The whole batch is checked before the state changes: a bad value raises
        ``ValueError`` naming the argument and its first offending position, and
        leaves the accumulator exactly as it was. Returns ``self``.
        """
        y, p, w, n = _prepare(y, p, sample_weight, self.threshold)
        return self._fold_prepared(y, p, w)

    def _fold_prepared(self, y, p, w):
        """Fold arrays already converted as :meth:`update` converts them."""
        n = y.shape[0]
        if n == 0:
            return self
        st = self._state
        if self.threshold is None:
            status = binary_update(y, p, w, st["counts"], st["wsums"])
        else:
            status = binary_update_scores(y, p, self.threshold, w, st["counts"], st["wsums"])
        if status:
            _raise_batch_error(status, y, p, "p", self.threshold is not None)
        st["n"][0] += n
        if w.shape[0]:
            st["weighted"][0] += n
        return self

    def _merge_state(self, other):
        st = self._state
        st["n"] += other["n"]
        st["counts"] += other["counts"]
        st["weighted"] += other["weighted"]
        from ._kernels.common import pairs_merge

        pairs_merge(st["wsums"], other["wsums"])

    def _compute(self) -> BinaryResult:
        return binary_result(*_counts_of(self._state), n=self.n)


def _counts_of(state):
    """(tp, fp, fn, tn) as Python ints, or floats once weights were seen."""
    counts = [int(c) for c in state["counts"]]
    if state["weighted"][0] == 0:
        return counts
    ws = state["wsums"]
    return [c + float(ws[k, 0] + ws[k, 1]) for k, c in enumerate(counts)]


def binary_counts(y, p, sample_weight=None):
    """One-shot ``(tp, fp, fn, tn, n)`` of hard 0/1 labels (used by the functions)."""
    acc = BinaryConfusion()
    acc.update(y, p, sample_weight=sample_weight)
    if acc.n == 0:
        raise ValueError("y and p are empty: the scores need at least one observation")
    return (*_counts_of(acc._state), acc.n)
