"""Top-k accuracy of an n x K score matrix: streaming, exact, weighted."""

from __future__ import annotations

import numpy as np

from .._kernels import compensated
from .._kernels.topk import top_k_terms
from .._protocol.base import Accumulator
from .._protocol.errors import BadValueError
from .._protocol.inputs import ClassCodes, ClassScores
from .._protocol.result import Result
from .._protocol.state import Field
from .._protocol.terms import RowTerms, add_pairs
from .multiclass import check_count, class_inputs, class_settings
from .rates import one_shot

__all__ = ["TopKAccuracy", "top_k_accuracy"]


class TopKResult(Result):
    __slots__ = ()
    title = "Top-k accuracy"
    counts = ("hits", "total")


class TopKAccuracy(Accumulator):
    """Streaming top-k accuracy: the share of rows whose true class is among
    the row's ``k`` highest scores (``update(y, P)``, ``P`` n x K finite scores).

    Parameters
    ----------
    k : int
        How many of the highest-scored classes count as a hit (``k >= 1``).
    n_classes : int, optional
        K; without it (and ``labels``) each batch's columns give K.
    labels : sequence of hashable, optional
        The class labels in column order; ``y`` then holds those labels.

    ``finalize()`` gives ``top_k_accuracy = hits / total`` (sums of weights once
    weights are seen), ``hits``, ``total``, ``k`` and ``n``. Among equal scores
    the higher class index comes first, as scikit-learn's
    ``top_k_accuracy_score``; a two-column matrix is ranked like any other.

    Examples
    --------
    >>> from streammetrics import TopKAccuracy
    >>> P = [[0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]
    >>> acc = TopKAccuracy(2).update([0, 1], P[:2]).update([2, 2], P[2:])
    >>> r = acc.finalize()
    >>> r.top_k_accuracy, r.hits, r.total
    (0.75, 3, 4)
    >>> TopKAccuracy(1).update([0, 1, 2, 2], P).finalize().top_k_accuracy
    0.25
    """

    argument_names = ("y", "P")
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="max"),
        Field("hits", np.int64, (1,), doc="rows that were hits"),
        Field("sums", np.float64, (2, 2), merge="pairs", doc="hit weight, total weight"),
    )
    headline = ("top_k_accuracy",)

    def __init__(self, k: int, n_classes: int | None = None, labels=None):
        self.k = check_count(k, "k")
        if n_classes is None and labels is None:
            self.n_classes, self.labels = None, None
            self.inputs = (ClassCodes("y"), ClassScores("P", None))
        else:
            self.n_classes, self.labels = class_settings("TopKAccuracy", n_classes, labels)
            self.inputs = (*class_inputs(self.n_classes, self.labels, ("y",)), ClassScores("P", self.n_classes))
        self._init_state()

    def _settings(self):
        return {k: getattr(self, k) for k in ("k", "n_classes", "labels") if getattr(self, k) is not None}

    def prepare(self, *arrays, sample_weight=None, **named):
        batch = super().prepare(*arrays, sample_weight=sample_weight, **named)
        if self.n_classes is None and batch.n:
            _check_columns(*batch.arrays)
        return batch

    def _fold(self, arrays, w):
        y, P = arrays
        status = self._fold_terms(top_k_terms, (y, P, self.k), w, 3, 2)
        if status == 1 and self.n_classes is None:
            _check_columns(y, P)
        return status

    def row_terms(self) -> RowTerms:
        """Each row adds 1 to its row and to its hits or misses, all counted."""
        return RowTerms(3, 2, self._terms, rows=1, counted=(1, 2))

    def _terms(self, batch, lo, slots, values, col, base):
        y, P = batch.arrays_for(self.inputs)
        status = top_k_terms(y, P, self.k, lo, slots, values, col, base)
        if status == 1 and self.n_classes is None:
            _check_columns(y, P)
        return status

    def _add_sums(self, sums, st):
        st["n"].T[0] += sums.rows
        st["hits"].T[0] += sums.ints.T[1]
        add_pairs(st["sums"], sums.pairs[..., [1, 0], :])  # (hit weight, total weight)
        if sums.weighted:
            st["weighted"].T[0] = 1

    def _check_state(self, state):
        n, hits = int(state["n"][0]), int(state["hits"][0])
        if int(state["weighted"][0]) not in (0, 1):
            raise ValueError("entry 'weighted' must be 0 or 1")
        if hits > n:
            raise ValueError(f"{hits} hits but only {n} observations")
        hw, tw = compensated.values(state["sums"])
        if hw > tw * (1 + 1e-12):
            raise ValueError("the hit weight exceeds the total weight")
        if not int(state["weighted"][0]) and (hw != hits or tw != n):
            # unweighted rows weigh 1 each: the sums are the counts (a weighted
            # merge later reads them as such)
            raise ValueError(
                f"entry 'sums' ({hw:.6g}, {tw:.6g}) of unweighted rows is not their {hits} hits and {n} rows"
            )

    def _compute(self) -> Result:
        st = self._arrays
        n = int(st["n"][0])
        weighted = bool(st["weighted"][0])
        if weighted:
            hw, tw = (float(v) for v in compensated.values(st["sums"]))
            if tw == 0:
                raise ValueError("the sample weights sum to zero: the score is undefined")
            values = {"top_k_accuracy": min(hw / tw, 1.0), "hits": hw, "total": tw}
        else:
            hits = int(st["hits"][0])
            values = {"top_k_accuracy": hits / n, "hits": hits, "total": n}
        values.update(k=self.k, n=n)
        return TopKResult("TopKAccuracy", values, {"weighted": weighted, "labels": self.labels})


def _check_columns(y, P) -> None:
    """Classes beyond the score matrix's columns: the error of the first."""
    k = P.shape[1]
    bad = np.flatnonzero(y >= k)
    if bad.size:
        i = int(bad[0])
        raise BadValueError("y", i, y[i], f"classes must be integers in 0..{k - 1}: P has {k} columns")


def top_k_accuracy(y, P, k, *, n_classes=None, labels=None, sample_weight=None) -> float:
    """Top-k accuracy of these rows (see :class:`TopKAccuracy`).

    >>> from streammetrics import top_k_accuracy
    >>> P = [[0.5, 0.3, 0.2], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1]]
    >>> top_k_accuracy([0, 1, 2, 2], P, k=2)
    0.75

    A tie at the cut-off goes to the higher class index:

    >>> top_k_accuracy([0, 1], [[0.4, 0.4, 0.2], [0.4, 0.4, 0.2]], k=1)
    0.5
    """
    acc = TopKAccuracy(k, n_classes=n_classes, labels=labels)
    return one_shot(acc, y, P, sample_weight=sample_weight).finalize().top_k_accuracy
