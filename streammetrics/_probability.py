"""Probabilistic scores of 0/1 labels: log loss and the Brier score."""

from __future__ import annotations

import numpy as np

from ._base import Accumulator
from ._kernels.common import pairs_merge
from ._kernels.probability import probability_update
from ._result import Result
from ._validation import (
    as_labels01,
    as_reals,
    as_weights,
    check_same_length,
    raise_bad_labels,
    raise_bad_probabilities,
)

__all__ = ["ProbabilityScores", "probability_result"]


def _pair(sums, k) -> float:
    s, c = float(sums[k, 0]), float(sums[k, 1])
    return s + c if np.isfinite(s) else s


def probability_result(sums: np.ndarray, n: int) -> Result:
    """``log_loss`` and ``brier`` from the compensated totals (one formula path)."""
    total = _pair(sums, 0)
    if total == 0:
        raise ValueError("the sample weights sum to zero: the scores are undefined")
    return Result(
        "ProbabilityScores",
        {"n": n, "log_loss": _pair(sums, 1) / total, "brier": _pair(sums, 2) / total},
    )


class ProbabilityScores(Accumulator):
    """Streaming log loss and Brier score of predicted probabilities.

    ``update(y, p)`` takes 0/1 labels and the predicted probabilities of the
    positive class, which must lie in [0, 1].

    Notes
    -----
    Log loss floors the probability given to the observed outcome at 1e-12
    (``max(p, 1e-12)`` for a positive, ``max(1 - p, 1e-12)`` for a negative), as
    the specification does, so one certain-and-wrong prediction costs
    ``-ln(1e-12) = 27.63`` rather than infinity. scikit-learn clips at the
    float64 machine epsilon instead (about 2.2e-16, a cost of 36.04), so the two
    differ only on predictions within 1e-12 of 0 or 1. Totals are compensated
    sums, so 1e7 streamed terms agree with ``math.fsum`` to about 1e-15.

    Examples
    --------
    >>> from streammetrics import ProbabilityScores
    >>> acc = ProbabilityScores().update([1, 0], [0.9, 0.2]).update([1, 0], [0.6, 0.4])
    >>> r = acc.finalize()
    >>> round(r.log_loss, 6), round(r.brier, 6)
    (0.337539, 0.0925)
    """

    _headline = ("log_loss", "brier")

    def __init__(self):
        self._init_state()

    def _new_state(self):
        return {"n": np.zeros(1, np.int64), "sums": np.zeros((3, 2), np.float64)}

    def _check_state(self, state):
        if np.any(state["sums"][:, 0] < 0):
            raise ValueError("negative totals")

    def update(self, y, p, sample_weight=None):
        """Fold in labels ``y`` (0/1) and probabilities ``p``; return ``self``.

        A bad value raises ``ValueError`` naming its argument and first
        offending position, and leaves the state unchanged.
        """
        y = as_labels01(y, "y")
        p = as_reals(p, "p")
        n = check_same_length(y=y, p=p)
        w = as_weights(sample_weight, n)
        return self._fold_prepared(y, p, w)

    def _fold_prepared(self, y, p, w):
        """Fold arrays already converted as :meth:`update` converts them."""
        n = y.shape[0]
        if n == 0:
            return self
        status = probability_update(y, p, w, self._state["sums"])
        if status:
            raise_bad_labels("y", y)
            raise_bad_probabilities("p", p)
            raise AssertionError(f"kernel status {status} without a bad value")
        self._state["n"][0] += n
        return self

    def _merge_state(self, other):
        self._state["n"] += other["n"]
        pairs_merge(self._state["sums"], other["sums"])

    def _compute(self) -> Result:
        return probability_result(self._state["sums"], self.n)
