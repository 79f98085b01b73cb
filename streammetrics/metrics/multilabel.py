"""Multilabel classification: every row carries a set of labels out of ``L``.

:class:`MultilabelConfusion` keeps ``L`` binary confusion cells and the per-row
compensated sums of the sample-wise scores; :class:`MultilabelRankAUC` one rank
state per label and one of the flattened matrix.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import compensated
from .._kernels.multilabel import first_nonfinite_matrix, label_terms
from .._protocol.base import Accumulator
from .._protocol.inputs import LabelMatrix, LabelScores, first_not01_matrix
from .._protocol.result import LabeledResult, Result, safe
from .._protocol.state import Field, count_total, empty_state
from .._protocol.terms import RowTerms, add_pairs
from .._protocol.validation import cut_point
from .multiclass import class_settings
from .multiclass_bounded import (
    bound_notes,
    check_joined,
    join_states,
    member_fields,
    member_settings,
    shown_fields,
    split_states,
)
from .ranking import RankAUC
from .ranking.accumulator import check_max_bins
from .ranking.spill import parse_memory
from .rates import (
    check_average,
    check_beta,
    check_jaccard_zero_division,
    check_threshold,
    check_zero_division,
    class_rates,
    fbeta_average,
    jaccard_average,
)

__all__ = ["MultilabelConfusion", "MultilabelRankAUC", "MultilabelRankResult", "MultilabelResult", "label_settings"]


def label_settings(owner: str, n_labels, labels) -> tuple[int, list | None]:
    """``(n_labels, labels)`` checked: labels give L, or must agree with it."""
    return class_settings(owner, n_labels, labels, "n_labels")


class MultilabelResult(LabeledResult):
    """Multilabel scores; per-label rows are named by the labels."""

    __slots__ = ()
    title = "Multilabel"
    counts = ("tp", "fp", "fn", "tn", "support", "n_pos", "n_neg")

    def fbeta(self, b: float, average: str | None = "macro", zero_division=0.0):
        """F-beta at ``b`` (> 0) of a :class:`MultilabelConfusion`'s per-label counts, averaged (``"macro"``,
        ``"micro"``, ``"weighted"``) or per label (``None``); ``zero_division`` 0, 1 or ``np.nan`` (left out of the
        averages), as scikit-learn's ``fbeta_score``. ``"samples"`` is the mean of the rows' F-beta, kept for
        the betas declared in ``MultilabelConfusion(samples_betas=...)`` (1 always); a row whose two sets are
        empty scores ``zero_division`` (``nan``: left out).

        >>> from streammetrics import MultilabelConfusion
        >>> r = MultilabelConfusion(3).update([[1, 0, 1], [0, 1, 0]], [[1, 1, 0], [0, 1, 0]]).finalize()
        >>> r.fbeta(1) == r.macro_f1, r.fbeta(2, average=None)
        (True, array([1.        , 0.83333333, 0.        ]))
        """
        b, zd = check_beta(b), check_zero_division(zero_division)
        if average == "samples":
            kept = self.meta.get("samples_fbeta", {1.0: self.samples_f1})
            if b not in kept:
                raise ValueError(
                    f"average='samples' at b={b!r} needs its per-row sums: declare it in "
                    f"MultilabelConfusion(samples_betas=...) (kept: {sorted(kept)})"
                )
            return self._samples(kept[b], zd)
        return fbeta_average(self.tp, self.fp, self.fn, b, check_average(average, allow_binary=False), zd)

    def jaccard(self, average: str | None = "macro", zero_division=0):
        """The Jaccard index of a :class:`MultilabelConfusion`'s per-label counts, as scikit-learn's
        ``jaccard_score``: averaged (``"macro"``, ``"micro"``, ``"weighted"``, ``"samples"``: the state's per-row
        mean, with ``zero_division=0``) or per label (``None``); ``zero_division`` 0 or 1.

        >>> from streammetrics import MultilabelConfusion
        >>> r = MultilabelConfusion(3).update([[1, 0, 1], [0, 1, 0]], [[1, 1, 0], [0, 1, 0]]).finalize()
        >>> r.jaccard(average=None), r.jaccard("micro")
        (array([1. , 0.5, 0. ]), 0.5)
        """
        zd = check_jaccard_zero_division(zero_division)
        if average == "samples":
            return self._samples(self.samples_jaccard, zd)
        return jaccard_average(self.tp, self.fp, self.fn, check_average(average, allow_binary=False), zd)

    def _samples(self, mean: float, zd: float) -> float:
        """A mean over rows (0 for rows whose sets are both empty) with those rows
        scoring ``zd`` instead (``nan``: left out, as scikit-learn's ``_nanaverage``)."""
        if zd == 0.0:
            return mean
        empty = self.meta.get("samples_empty")
        if empty is None:
            raise ValueError(
                "this state was saved before the weight of rows with empty label sets was kept: "
                "average='samples' takes zero_division=0 only"
            )
        if math.isnan(zd):
            rest = self.meta["samples_nonempty"]
            return mean / rest if rest > 0 else math.nan
        return min(mean + zd * empty, 1.0)


class MultilabelRankResult(MultilabelResult):
    """Per-label AUCs and their averages; per-label rows are named by the labels."""

    __slots__ = ()
    title = "Multilabel ranking"

    def report_values(self):
        # the label names name its table's rows; beside a MultilabelConfusion
        # (the multilabel task) the report lists them once, from that member
        return Result.report_values(self)

    def _notes(self, values):
        notes = bound_notes(values)  # a bounded state's averages show their bounds on their line
        return shown_fields(values, notes), notes


# ---------------------------------------------------------------- confusion
_SAMPLES = ("precision", "recall", "f1", "jaccard")

#: the absent one of the kernels' two prediction forms (0/1 labels, scores)
_NO_SCORES = np.zeros((0, 0), np.float64)


class MultilabelConfusion(Accumulator):
    """Streaming per-label confusion counts and the multilabel scores built from them.

    ``update(Y, P)`` takes ``n x L`` 0/1 matrices of true and predicted labels
    (with ``threshold``, ``P`` holds finite scores, ``P >= threshold`` a positive).

    Parameters
    ----------
    n_labels : int, optional
        L, the number of labels (columns).
    threshold : float, optional
        Cut scores at ``P >= threshold``, in the scores' own precision as numpy
        compares (see :class:`BinaryConfusion`); ``None`` takes 0/1 predictions.
    labels : sequence of hashable, optional
        Names of the columns, in order (``n_labels`` defaults to their number).
    samples_betas : sequence of float, default ``(1.0,)``
        The betas at which the result's ``fbeta(b, average="samples")`` is
        kept (each a sum over rows of the row's F-beta; 1 always), for every
        ``zero_division`` (the weight of rows whose two sets are empty is
        kept); a state saved before these sums takes ``b=1`` and
        ``zero_division=0`` only. Another beta raises ``ValueError``.

    ``finalize()`` gives per-label ``tp``, ``fp``, ``fn``, ``tn``, ``support``
    (``int64``, or sums of weights once weights are seen), ``precision``,
    ``recall`` and ``f1``; their ``micro_*``, ``macro_*`` (over all ``L``
    labels, present or not) and ``weighted_*`` averages as scikit-learn's
    ``precision_recall_fscore_support``; ``samples_precision``,
    ``samples_recall``, ``samples_f1``, ``samples_jaccard`` (means over rows),
    ``subset_accuracy``, ``hamming_loss`` and ``n``. Rates use the guard
    ``safe(x)`` (scikit-learn's ``zero_division=0``): an empty row scores 0.

    Examples
    --------
    >>> from streammetrics import MultilabelConfusion
    >>> Y = [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]]
    >>> P = [[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 0, 0]]
    >>> r = MultilabelConfusion(3).update(Y, P).finalize()
    >>> r.tp, r.fp, r.fn
    (array([2, 1, 0]), array([0, 0, 1]), array([0, 1, 1]))
    >>> r.f1
    array([1.        , 0.66666667, 0.        ])
    >>> round(r.micro_f1, 4), round(r.macro_f1, 4), round(r.samples_f1, 4)
    (0.6667, 0.5556, 0.5417)
    >>> r.subset_accuracy, round(r.hamming_loss, 4)
    (0.5, 0.25)

    F2 averaged over rows, the empty last row scoring 0 or 1 (``zero_division``):

    >>> r = MultilabelConfusion(3, samples_betas=[2]).update(Y, P).finalize()
    >>> round(r.fbeta(2, average="samples"), 4), round(r.fbeta(2, average="samples", zero_division=1), 4)
    (0.5139, 0.7639)

    Scores cut at a threshold, in two shards merged:

    >>> a = MultilabelConfusion(2, threshold=0.5).update([[1, 0], [0, 1]], [[0.9, 0.2], [0.6, 0.7]])
    >>> b = MultilabelConfusion(2, threshold=0.5).update([[1, 1]], [[0.4, 0.8]])
    >>> r = (a + b).finalize()
    >>> r.precision, r.recall
    (array([0.5, 1. ]), array([0.5, 1. ]))
    """

    argument_names = ("Y", "P")
    fields = (
        Field("n", np.int64, (1,)),
        Field("counts", np.int64, ("n_labels", 4), rows=True, doc="unweighted tp, fp, fn, tn per label"),
        # (4 L, 2) compensated pairs once a weighted batch arrives, else (0, 2)
        Field("wsum", np.float64, (None, 2), merge="pairs", doc="weights of weighted rows per cell"),
        Field("rows", np.int64, (3,), doc="unweighted exact matches, unweighted wrong cells, weighted rows"),
        Field(
            "sums",
            np.float64,
            (7, 2),
            merge="pairs",
            doc="per-row precision, recall, F1, Jaccard (times weight); weighted rows' weight, "
            "exact-match weight, wrong cells times weight",
        ),
        Field(
            "samples",
            np.float64,
            ("n_samples", 2),
            merge="pairs",
            optional=True,
            doc="weights of rows with both sets empty and of the others, per-row F-beta (times weight) at "
            "each declared beta but 1",
        ),
        Field("samples_rows", np.int64, (1,), rows=True, optional=True, doc="rows counted in samples"),
    )
    headline = ("micro_f1", "macro_f1", "samples_f1")

    def __init__(self, n_labels: int | None = None, threshold: float | None = None, labels=None, samples_betas=(1.0,)):
        self.n_labels, self.labels = label_settings("MultilabelConfusion", n_labels, labels)
        self.threshold = check_threshold(threshold)
        if isinstance(samples_betas, (str, bytes)) or not np.iterable(samples_betas):
            raise TypeError(f"samples_betas must be a sequence of numbers, got {type(samples_betas).__name__}")
        betas = {check_beta(b, "samples_betas") for b in samples_betas} | {1.0}
        self.samples_betas = tuple(sorted(betas))
        self._b2 = np.array([b * b for b in self.samples_betas if b != 1.0])
        self.n_samples = 2 + self._b2.shape[0]
        k = self.n_labels
        self.inputs = (LabelMatrix("Y", k), LabelMatrix("P", k) if self.threshold is None else LabelScores("P", k))
        self._init_state()

    def _settings(self):
        out = {"n_labels": self.n_labels, "threshold": self.threshold, "labels": self.labels}
        if self.samples_betas != (1.0,):
            out["samples_betas"] = self.samples_betas
        return out

    def _check_state(self, state):
        k = self.n_labels
        if state["wsum"].shape not in ((0, 2), (4 * k, 2)):
            raise ValueError(f"entry 'wsum' has shape {state['wsum'].shape}")
        n = int(state["n"][0])
        exact, wrong, weighted = (int(v) for v in state["rows"])
        unweighted = n - weighted
        if weighted > n or exact > unweighted or wrong > unweighted * k:
            raise ValueError("entry 'rows' does not fit the observation count")
        per_label = state["counts"].sum(axis=1)
        if np.any(per_label != unweighted):
            raise ValueError("counts do not add up to the unweighted rows for every label")
        # the wrong cells are the fp and fn counts; a row with none is an exact match
        cells = int(state["counts"][:, 1:3].sum())
        if wrong != cells or exact < unweighted - wrong:
            raise ValueError(
                f"entry 'rows' ({exact} exact matches, {wrong} wrong cells) does not fit "
                f"the counts ({cells} false positives and negatives over {unweighted} rows)"
            )
        if weighted == 0 and (np.any(state["wsum"] != 0) or np.any(state["sums"][4:] != 0)):
            raise ValueError("the state holds weights but no row came with weights")
        sums = compensated.values(state["sums"])
        total = unweighted + sums[4]
        slack = 1 + 1e-9
        if np.any(sums[:4] > total * slack) or sums[5] > sums[4] * slack or sums[6] > sums[4] * k * slack:
            raise ValueError("entry 'sums' exceeds what the rows can hold")
        empty, rest, *fbeta = compensated.values(state["samples"])
        whole = state["samples_rows"][0] == n and abs(empty + rest - total) > (slack - 1) * total
        if whole or empty + rest > total * slack or any(f > rest * slack for f in fbeta):
            raise ValueError("entry 'samples' does not fit the rows' weight")

    def _fold(self, arrays, w):
        Y, P = arrays
        if first_not01_matrix(Y) >= 0:
            return 1
        if (first_not01_matrix(P) if self.threshold is None else first_nonfinite_matrix(P)) >= 0:
            return 2
        terms = self.row_terms()
        return self._fold_terms(label_terms, self._term_args(Y, P), w, terms.size, terms.width)

    def row_terms(self) -> RowTerms:
        """Each row adds 1 to its exact or inexact count, its four set scores, its
        weight and wrong cells, 1 to the cell of each label, whether both its sets
        are empty and its F-beta at each declared beta but 1 (see
        :func:`~.._kernels.multilabel.label_terms`)."""
        L, m = self.n_labels, self.n_samples
        return RowTerms(8 + 4 * L + m, 6 + L + m, self._terms, rows=2, counted=range(8, 8 + 4 * L))

    def _term_args(self, Y, P):
        """The arguments of :func:`~.._kernels.multilabel.label_terms` before ``lo``."""
        if self.threshold is None:
            return Y, P, _NO_SCORES, 0.0, self._b2
        return Y, Y[:0], P, cut_point(self.threshold, P), self._b2  # in the scores' own precision

    def _terms(self, batch, lo, slots, values, col, base):
        return label_terms(*self._term_args(*batch.arrays_for(self.inputs)), lo, slots, values, col, base)

    def _add_sums(self, sums, st):
        L = self.n_labels
        st["n"].T[0] += sums.rows
        add_pairs(st["sums"][..., :4, :], sums.pairs[..., 2:6, :])
        add_pairs(st["samples"], sums.pairs[..., 8 + 4 * L :, :])
        st["samples_rows"].T[0] += sums.rows
        if not sums.weighted:
            cells = sums.ints[..., 8 : 8 + 4 * L].reshape(*sums.ints.shape[:-1], L, 4)
            st["counts"] += cells
            st["rows"].T[0] += sums.ints.T[0]
            st["rows"].T[1] += cells[..., 1:3].sum(axis=(-2, -1))
            return
        if st["wsum"].shape[-2] == 0:  # the first weighted rows
            st["wsum"] = np.zeros((*np.shape(sums.rows), 4 * L, 2))
        add_pairs(st["wsum"], sums.pairs[..., 8 : 8 + 4 * L, :])
        st["rows"].T[2] += sums.rows
        add_pairs(st["sums"][..., 4:, :], sums.pairs[..., [6, 0, 7], :])  # the weight, exact matches' and wrong cells'

    def _cells(self) -> np.ndarray:
        """``(L, 4)`` tp, fp, fn, tn: ``int64``, or ``float64`` once weights were seen."""
        counts, wsum = self._arrays["counts"], self._arrays["wsum"]
        if wsum.shape[0] == 0:
            return counts.copy()
        return compensated.values(wsum).reshape(self.n_labels, 4) + counts

    def _compute(self) -> Result:
        st = self._arrays
        cells = self._cells()
        exact_rows, wrong_cells, weighted_rows = (int(v) for v in st["rows"])
        sums = compensated.values(st["sums"])
        unweighted = self.n - weighted_rows
        total = unweighted + float(sums[4]) if weighted_rows else float(unweighted)
        if total == 0:
            raise ValueError("the sample weights sum to zero: every score is undefined")
        tp, fp, fn, tn = (cells[:, c] for c in range(4))
        support = tp + fn
        ftp, ffp, ffn = (x.astype(np.float64) for x in (tp, fp, fn))
        precision, recall, f1 = class_rates(ftp, ftp + ffp, ftp + ffn)
        stp = float(ftp.sum())
        micro = (float(v) for v in class_rates(stp, stp + float(ffp.sum()), stp + float(ffn.sum())))
        fsupport = support.astype(np.float64)
        total_support = safe(float(fsupport.sum()))
        L = self.n_labels
        rates = {"precision": precision, "recall": recall, "f1": f1}
        values = {"n": self.n, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "support": support, **rates}
        values.update(zip(("micro_precision", "micro_recall", "micro_f1"), micro))
        values.update({f"macro_{f}": float(x.mean()) for f, x in rates.items()})
        values.update({f"weighted_{f}": float(np.dot(fsupport, x) / total_support) for f, x in rates.items()})
        for i, name in enumerate(_SAMPLES):
            values[f"samples_{name}"] = min(float(sums[i]) / total, 1.0)
        values["subset_accuracy"] = min((exact_rows + float(sums[5])) / total, 1.0)
        values["hamming_loss"] = min((wrong_cells + float(sums[6])) / (total * L), 1.0)
        meta = {"labels": self.labels, "weighted": weighted_rows > 0, "threshold": self.threshold}
        if st["samples_rows"][0] == self.n:  # else saved before the samples terms were kept
            kept = compensated.values(st["samples"]) / total
            meta["samples_empty"], meta["samples_nonempty"] = (min(float(v), 1.0) for v in kept[:2])
            extra = dict(zip((b for b in self.samples_betas if b != 1.0), (min(float(v), 1.0) for v in kept[2:])))
            meta["samples_fbeta"] = {**extra, 1.0: values["samples_f1"]}
        return MultilabelResult("MultilabelScores", values, meta)


# ---------------------------------------------------------------------- AUC


class MultilabelRankAUC(Accumulator):
    """Streaming, mergeable, exact per-label AUC from an ``n x L`` score matrix.

    ``update(Y, S)`` takes an ``n x L`` 0/1 matrix of true labels and one of
    finite scores.

    Parameters
    ----------
    n_labels : int, optional
        L, the number of labels (columns).
    labels : sequence of hashable, optional
        Names of the columns, in order (for reports).
    max_bins : int, optional
        Every member a bounded ``RankAUC(max_bins=B)``.
    max_memory : int or str, optional
        A budget shared by exact members spilling past it (not with ``max_bins``).

    ``finalize()`` gives per-label ``auc``, ``n_pos`` and ``n_neg``, and
    ``macro_auc``, ``weighted_auc`` (by ``n_pos``) and ``micro_auc`` as
    scikit-learn's ``roc_auc_score(Y, S, average=...)``, and ``n``; with
    ``max_bins`` every AUC field also has ``_lower`` and ``_upper`` bounds. A
    label with one class only has AUC 0 and still enters the macro mean.

    Examples
    --------
    >>> from streammetrics import MultilabelRankAUC
    >>> Y = [[1, 0], [0, 1], [1, 1], [0, 0]]
    >>> S = [[0.9, 0.1], [0.3, 0.8], [0.6, 0.4], [0.2, 0.5]]
    >>> r = MultilabelRankAUC(2).update(Y, S).finalize()
    >>> r.auc
    array([1.  , 0.75])
    >>> float(r.macro_auc), float(r.micro_auc)
    (0.875, 0.9375)
    >>> b = MultilabelRankAUC(2, max_bins=16).update(Y, S).finalize()  # few scores: still exact
    >>> b.auc_lower, b.auc_upper, b.micro_auc_lower
    (array([1.  , 0.75]), array([1.  , 0.75]), 0.9375)
    """

    argument_names = ("Y", "S")
    fields = member_fields("per label, then the flattened matrix", optional=True)
    headline = ("macro_auc", "micro_auc")

    def __init__(self, n_labels: int | None = None, labels=None, max_bins: int | None = None, *, max_memory=None):
        self.n_labels, self.labels = label_settings("MultilabelRankAUC", n_labels, labels)
        self.max_bins = check_max_bins(max_bins)
        self.max_memory = parse_memory(max_memory)
        k = self.n_labels
        self.n_members = k + 1  # one rank state per label, and the flattened matrix's
        self._member = member_settings(self.max_bins, self.max_memory, self.n_members, "label")
        self.inputs = (LabelMatrix("Y", k), LabelScores("S", k))
        # the empty state is sized by the settings: a state file's settings may
        # not declare more members than its arrays hold (the allocation budget)
        empty_state(self.fields, self)
        self._members = [RankAUC(**self._member) for _ in range(self.n_members)]
        self._n = 0

    def _member_of(self, state) -> RankAUC:
        return RankAUC(**self._member).with_state({f: np.array(a, copy=True) for f, a in state.items()})

    def _settings(self):
        names = ("n_labels", "labels", "max_bins", "max_memory")
        return {k: getattr(self, k) for k in names if getattr(self, k) is not None or k == "labels"}

    @property
    def n(self) -> int:
        return self._n

    def _fold(self, arrays, w):
        Y, S = arrays
        if first_not01_matrix(Y) >= 0:
            return 1
        if first_nonfinite_matrix(S) >= 0:
            return 2
        # the whole batch is valid: no member can refuse its part
        k, n = self.n_labels, Y.shape[0]
        for j in range(k):
            self._members[j].fold_status((np.ascontiguousarray(Y[:, j]), np.ascontiguousarray(S[:, j])), w, n)
        flat_w = np.repeat(w, k) if w.shape[0] else w
        self._members[k].fold_status((Y.reshape(-1), S.reshape(-1)), flat_w, n * k)
        self._n += n
        return 0

    def _check_room(self, rows: int, what: str = "folding") -> None:
        super()._check_room(rows * self.n_labels, what)  # the flattened state counts cells

    # ------------------------------------------------------------------- state
    @property
    def _state(self):
        states = [m.state_dict() for m in self._members]
        head = {"n": np.array([self._n], np.int64), "weighted": np.array([int(states[0]["weighted"][0])], np.int64)}
        return join_states(head, states)

    def _split(self, state):
        n = int(state["n"][0])
        return split_states(state, [n] * self.n_labels + [n * self.n_labels])

    def _load(self, state):
        self._n = int(state["n"][0])
        for member, st in zip(self._members, self._split(state)):  # into the members: they keep a shared budget
            member.load_state_dict(st)

    def _check_state(self, state):
        k = self.n_labels
        check_joined(state)
        if int(state["n"][0]) > np.iinfo(np.int64).max // k:
            raise ValueError("the observation count times n_labels passes the int64 range")
        for m, st in enumerate(self._split(state)):
            RankAUC(**self._member).load_state_dict(st)
            if m < k and count_total(st["counts"]) > int(st["n"][0]):
                raise ValueError("a label's counts exceed the observation count")

    def _merge_state(self, other):
        for member, st in zip(self._members, self._split(other)):
            # the rows still pending are sorted in first, so a merge adds one
            # run to another whether this side was folded or loaded: the same
            # shards merged in the same order give identical sums of weights
            member.flush()
            member.merge(self._member_of(st))
        self._n += int(other["n"][0])

    def _clone(self):
        out = self._empty_like()
        vars(out).update(_n=self._n, _members=[m.copy() for m in self._members])
        return out

    def flush(self):
        """Sort the pending rows of every label into the state; return ``self``."""
        with self._guard:
            for m in self._members:
                m.flush()
        return self

    def average_precision(self, average: str | None = "macro"):
        """Average precision per label (``average=None``; 0 for a label with no positive) or its ``"macro"`` mean,
        its ``"weighted"`` mean (by ``n_pos``) or the ``"micro"`` average precision of every cell: scikit-learn's
        ``average_precision_score(Y, S, average=...)``, read from the exact (or binned) states.

        >>> from streammetrics import MultilabelRankAUC
        >>> Y, S = [[1, 0], [0, 1], [1, 1], [0, 0]], [[0.9, 0.1], [0.3, 0.8], [0.6, 0.4], [0.2, 0.5]]
        >>> acc = MultilabelRankAUC(2).update(Y, S)
        >>> acc.average_precision(None), acc.average_precision()
        (array([1.        , 0.83333333]), 0.916...)
        """
        average = check_average(average, allow_binary=False)
        with self._guard:
            if average == "micro":
                return float(self._members[-1].average_precision())
            ap = np.array([m.average_precision() for m in self._members[:-1]])
            n_pos = np.array([m.finalize().n_pos for m in self._members[:-1]], np.float64)
        if average is None:
            return ap
        if average == "weighted":
            return float(np.dot(n_pos, ap) / safe(float(n_pos.sum())))
        return float(ap.mean())

    # ----------------------------------------------------------------- results
    def _compute(self) -> Result:
        k = self.n_labels
        results = [m.finalize() for m in self._members]
        n_pos = np.array([r.n_pos for r in results[:k]])
        fpos = n_pos.astype(np.float64)
        values, meta = {"n": self._n}, {"labels": self.labels, "weighted": bool(self._members[0].weighted)}
        # with max_bins, bounds of every label's AUC and of the averages (non-negative
        # coefficients of the supports: the averages of the bounds)
        for end in ("", "_lower", "_upper") if self.max_bins is not None else ("",):
            values["auc" + end] = auc = np.array([getattr(r, "auc" + end) for r in results[:k]], np.float64)
            if not end:
                values.update(n_pos=n_pos, n_neg=np.array([r.n_neg for r in results[:k]]))
            values["macro_auc" + end] = float(auc.mean())
            values["weighted_auc" + end] = float(np.dot(fpos, auc) / safe(float(fpos.sum())))
            values["micro_auc" + end] = float(getattr(results[k], "auc" + end))
        if self.max_bins is not None:
            meta["max_bins"] = self.max_bins
        return MultilabelRankResult("MultilabelAUCScores", values, meta)
