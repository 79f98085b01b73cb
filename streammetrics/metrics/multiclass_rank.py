"""Multiclass AUC (one-vs-rest and one-vs-one) from an n x K score matrix: ``K * K`` sorted blocks, one per column
and true class (:mod:`.multiclass_runs`), or with ``max_bins``/``max_memory`` binary rank states
(:mod:`.multiclass_bounded`).
"""

from __future__ import annotations

import numpy as np

from .._kernels.keys import key_bits, keys_as_bits
from .._protocol.base import Accumulator
from .._protocol.errors import NoObservationsError
from .._protocol.inputs import ClassScores
from .._protocol.runs import RunStack
from .._protocol.state import Field, empty_state
from .._protocol.validation import check_choice
from . import multiclass_runs as MR
from .multiclass import class_inputs, class_settings
from .multiclass_bounded import BOUNDED_FIELDS, RankMembers, member_settings, n_members
from .multiclass_runs import MulticlassRankResult
from .ranking.accumulator import check_max_bins
from .ranking.curves import curve_from_points, pr, roc
from .ranking.exact import entries
from .ranking.points import Points
from .ranking.saved import mass_entry
from .ranking.spill import parse_memory

__all__ = ["MulticlassRankAUC", "MulticlassRankResult", "multiclass_auc"]

_PLOTTED = 20  # the classes whose curves a bounded result keeps for its plots


class MulticlassRankAUC(Accumulator):
    """Streaming, mergeable multiclass AUC (one-vs-rest, one-vs-one), exact or bounded.

    ``update(y, P)`` takes classes ``0..K-1`` (or ``labels``) and an n x K matrix
    of finite scores (only each column's order matters).

    Parameters
    ----------
    n_classes : int, optional
        K.
    multi_class : {"ovr", "ovo"}
        Which average ``auc`` reports: one-vs-rest, or one-vs-one (Hand & Till
        2001), as scikit-learn's ``roc_auc_score(multi_class=...)``.
    average : {"macro", "weighted"}
        The mean over classes (pairs), or weighted by class support (a pair's
        ``n_a + n_b``).
    labels : sequence of hashable, optional
        The class labels in column order; ``y`` then holds those labels.
    max_bins : int, optional
        One ``RankAUC(max_bins=B)`` per class (and, with ``"ovo"``, per ordered
        pair) instead of the exact state: every AUC field then has ``_lower``
        and ``_upper`` bounds (a bounded one-vs-rest state has no ``ovo_`` fields).
    max_memory : int or str, optional
        A budget shared by exact members spilling past it (not with ``max_bins``).

    ``finalize()`` gives ``auc``, ``macro_auc``, ``weighted_auc``, the four
    ``ovr_``/``ovo_`` averages, ``per_class_auc``, ``pair_auc`` (``[a, b]``:
    class ``a``'s rows against class ``b``'s by column ``a``),
    ``per_class_average_precision`` and its ``macro_``/``weighted_`` averages,
    ``support`` and ``n``. An absent class scores 0 and enters the macro averages.

    Examples
    --------
    >>> from streammetrics import MulticlassRankAUC
    >>> P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
    ...      [0.4, 0.3, 0.3], [0.2, 0.2, 0.6], [0.5, 0.2, 0.3]]
    >>> y = [0, 1, 2, 0, 1, 2, 2]
    >>> shard_a = MulticlassRankAUC(3).update(y[:4], P[:4])
    >>> shard_b = MulticlassRankAUC(3).update(y[4:], P[4:])
    >>> r = (shard_a + shard_b).finalize()
    >>> round(r.auc, 6), r.per_class_auc, r.support
    (0.841667, array([0.8  , 0.85 , 0.875]), array([2, 2, 3]))
    >>> round(r.ovo_macro_auc, 6), round(r.ovo_weighted_auc, 6)
    (0.833333, 0.839286)
    >>> r.per_class_average_precision.round(4)
    array([0.75  , 0.75  , 0.8333])
    """

    argument_names = ("y", "P")
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lengths", np.int64, ("n_classes", "n_classes"), merge="custom", doc="entries of each block"),
        Field("scores", np.float64, (None,), merge="custom", nonneg=False, doc="the blocks' scores, column-major"),
        Field("counts", np.int64, (None,), merge="custom", doc="rows at each score (no weights)"),
        Field("weights", np.float64, (None,), merge="custom", doc="weight at each score"),
    )
    headline = ("auc",)

    def __init__(
        self,
        n_classes: int | None = None,
        multi_class: str = "ovr",
        average: str = "macro",
        labels=None,
        max_bins: int | None = None,
        *,
        max_memory=None,
    ):
        self.n_classes, self.labels = class_settings("MulticlassRankAUC", n_classes, labels)
        self.multi_class = check_choice("multi_class", multi_class, ("ovr", "ovo"))
        self.average = check_choice("average", average, ("macro", "weighted"))
        self.max_bins = check_max_bins(max_bins)
        self.max_memory = parse_memory(max_memory)
        pairs = self.multi_class == "ovo"
        self.n_members = n_members(self.n_classes, pairs)
        member = member_settings(self.max_bins, self.max_memory, self.n_members, "class")
        k = self.n_classes
        self.inputs = (*class_inputs(k, self.labels, ("y",)), ClassScores("P", k))
        self._n = 0
        self._weighted = False
        self._stack = RunStack(MR.merge_block_runs, entries)
        self._pending: list | None = None  # copies of checked batches not yet sorted into a run
        self._pending_rows = 0
        self._members: RankMembers | None = None
        if self.max_bins is not None or self.max_memory is not None:
            self.fields = BOUNDED_FIELDS
            empty_state(self.fields, self)  # a file's settings may not declare more members than its budget
            self._members = RankMembers(k, member, pairs)

    def _settings(self):
        names = ("n_classes", "multi_class", "average", "labels", "max_bins", "max_memory")
        return {k: getattr(self, k) for k in names if getattr(self, k) is not None}

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's blocks and the pending rows."""
        if self._members is not None:
            return self._members.nbytes
        return sum(a.nbytes for part in (*(self._pending or ()), *self._stack) for a in part)

    def _to_float(self):
        self._flush()  # pending rows without weights become a run of counts first
        self._stack = RunStack(MR.merge_block_runs, entries, [(a, b.astype(np.float64), c) for a, b, c in self._stack])
        self._weighted = True

    #: rows the pending batches hold at least before they are sorted into a run
    _PENDING_MIN = 1 << 16

    def _fold(self, arrays, w):
        y, P = arrays
        n = y.shape[0]
        if self._members is None and self._weighted and w.shape[0] == 0:
            w = np.ones(n)
        # pending rows at most as many as the runs hold: a stream builds runs of doubling size
        limit = max(self._PENDING_MIN, self._n - self._pending_rows)
        run = None
        if self._members is None and n >= limit:  # sorted at once, not copied
            run = MR.batch_run(y, P, w, self.n_classes, self.inputs)  # a bad batch raises here
        else:
            for inp, arr in zip(self.inputs, arrays):  # refused before any change
                inp.check(arr)
        self._n += n
        if self._members is not None:
            self._members.fold(y, P, w)
            self._weighted = self._members.weighted
            return 0
        if w.shape[0] and not self._weighted:
            self._to_float()
        if run is not None or self._pending_rows + n > limit:
            self._flush()
        if run is not None:
            self._stack.push(run)
        else:
            self._pending = self._pending or []
            self._pending.append((y.copy(), P.copy(), w.copy()))
            self._pending_rows += n
        return 0

    def _pending_run(self):
        y, P, w = (np.concatenate(a) for a in zip(*self._pending))
        return MR.batch_run(y, P, w, self.n_classes, self.inputs)

    def _flush(self) -> None:
        if self._pending:
            self._stack.push(self._pending_run())
        self._pending, self._pending_rows = None, 0

    def flush(self):
        """Sort the pending rows in and merge the state's runs into one now; return ``self``."""
        with self._guard:
            if self._members is not None:
                self._members.flush()
            else:
                self._flush()
                self._stack.collapse()
        return self

    def _run(self):
        """The state's single block run, pending rows included."""
        run = self._stack.merged()
        if self._pending:
            rows = self._pending_run()
            run = rows if run is None else MR.merge_block_runs(run, rows)
        if run is None:
            k, dtype = self.n_classes, np.float64 if self._weighted else np.int64
            run = (np.zeros(0, np.uint64), np.zeros(0, dtype), np.zeros((k, k), np.int64))
        return run

    @property
    def _state(self):
        if self._members is not None:
            return self._members.join(self._n)
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._weighted)
        keys, mass, lengths = self._run()
        st["scores"] = np.empty(keys.shape[0], np.float64)
        keys_as_bits(keys, st["scores"].view(np.uint64))
        st["lengths"] = lengths.copy()
        st["weights" if self._weighted else "counts"] = mass.copy()
        return st

    def _load(self, state):
        self._n = int(state["n"][0])
        self._weighted = bool(state["weighted"][0])
        if self._members is not None:
            self._members.load(state)
            return
        self._stack = RunStack(MR.merge_block_runs, entries)
        self._pending, self._pending_rows = None, 0
        self._merge_run(state)

    def _merge_run(self, state):
        if state["scores"].shape[0]:
            keys = key_bits(np.ascontiguousarray(state["scores"]).view(np.uint64))
            mass = state["weights"] if state["weighted"][0] else state["counts"]
            self._stack.push(
                (keys, mass.astype(np.float64) if self._weighted else mass.copy(), state["lengths"].copy())
            )

    def _merge_state(self, other):
        if self._members is not None:
            self._members.merge(other)
            self._weighted = self._members.weighted
        else:
            if other["weighted"][0] and not self._weighted:
                self._to_float()
            self._merge_run(other)
        self._n += int(other["n"][0])

    def _clone(self):
        out = type(self).__new__(type(self))  # with its own lock
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_guard"})
        pending, members = self._pending and list(self._pending), self._members and self._members.clone()
        out.__dict__.update(_stack=self._stack.copy(), _pending=pending, _members=members)  # runs: never changed
        return out

    def _check_state(self, state):
        if self._members is not None:
            self._members.check(state)
            return
        n, lengths, scores, k = int(state["n"][0]), state["lengths"], state["scores"], self.n_classes
        m = scores.shape[0]
        if np.any(lengths < 0) or int(lengths.sum()) != m:
            raise ValueError(f"the block lengths add up to {int(lengths.sum())}, not the {m} scores")
        flag, name, mass = mass_entry(state, (m,))
        if np.any(mass <= 0):
            raise ValueError(f"entry {name!r} holds an entry of no observation")
        edges = np.concatenate(([0], np.cumsum(lengths.reshape(-1))))
        starts = np.zeros(m, bool)
        starts[edges[:-1][edges[:-1] < m]] = True  # a block's first entry starts afresh
        if not (starts[1:] | (np.diff(scores) > 0)).all():
            raise ValueError("a block's scores are not strictly increasing")
        most = int(lengths.sum(axis=1).max())  # each entry of a column holds a row at least
        if most > n:
            raise ValueError(f"a column holds {most} entries but only {n} observations")
        sums = np.add.reduceat(np.append(mass, 0), edges[:-1])
        sums[lengths.reshape(-1) == 0] = 0  # (reduceat gives an empty block the next entry)
        sup = sums.reshape(k, k)
        if not flag and np.any(sup.sum(axis=1) != n):
            raise ValueError("every column's counts must add up to the observation count")
        if not np.allclose(sup, sup[0], rtol=1e-9, atol=0):
            raise ValueError("the columns disagree on the rows of a class")

    def _meta(self):
        meta = {"labels": self.labels, "weighted": self._weighted, "multi_class": self.multi_class}
        return meta | {k: v for k, v in self._settings().items() if k == "average" or k.startswith("max_")}

    def _compute(self) -> MulticlassRankResult:
        if self._members is not None:
            return self._bounded_result()
        run = self._run()
        out = MR.scores_of_run(
            run, self.n_classes, self._n, self._weighted, self.multi_class, self.average, self._meta()
        )
        object.__setattr__(out, "_points_of", lambda c: MR.ovr_points(run, c))  # the plots' curves
        return out

    def _bounded_result(self) -> MulticlassRankResult:
        members, k = self._members, self.n_classes
        value, lower, upper, n_pos, _ = members.results()
        support = n_pos[:k].astype(np.float64 if self._weighted else np.int64)
        if self._weighted:
            MR.check_weighted_support(support)
        values = {}
        for arr, suffix in ((value, ""), (lower, "_lower"), (upper, "_upper")):
            values.update(
                MR.averages(arr[:k].copy(), members.pair_matrix(arr), support, self.multi_class, self.average, suffix)
            )
        if not members.pairs:
            values = {f: v for f, v in values.items() if not f.startswith(("ovo_", "pair_auc"))}
        ap = np.array([members.average_precision(c) for c in range(k)])
        values.update(MR.precision_fields(ap, support), support=support, n=self._n)
        out = MulticlassRankResult("MulticlassRankScores", values, self._meta())
        snapshot = [members.class_points(c) for c in range(min(k, _PLOTTED))]
        object.__setattr__(out, "_points_of", lambda c: snapshot[c])
        return out

    def _points(self, cls):
        """Class ``cls``'s one-vs-rest points (``cls`` a label, or an index without labels)."""
        if self.labels is not None:
            if cls not in self.labels:
                raise ValueError(f"class {cls!r} is not one of the labels {self.labels!r}")
            c = self.labels.index(cls)
        elif isinstance(cls, (bool, np.bool_)) or not isinstance(cls, (int, np.integer)):
            raise TypeError(f"class must be an integer in 0..{self.n_classes - 1}, got {cls!r}")
        else:
            c = int(cls)
            if not 0 <= c < self.n_classes:
                raise ValueError(f"class must be in 0..{self.n_classes - 1}, got {cls}")
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("MulticlassRankAUC has no observations: call update() first")
            if self._members is not None:
                return self._members.class_points(c)
            run = self._run()
        return MR.ovr_points(run, c)

    def roc_curve(self, cls):
        """One-vs-rest ROC curve ``(fpr, tpr, thresholds)`` of class ``cls`` (an index, or a label).

        >>> from streammetrics import MulticlassRankAUC
        >>> acc = MulticlassRankAUC(2).update([0, 1, 1], [[0.8, 0.2], [0.4, 0.6], [0.6, 0.4]])
        >>> acc.roc_curve(1)
        (array([0., 0., 0., 1.]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.6, 0.4, 0.2]))
        """
        return roc(*curve_from_points(*self._points(cls)))

    def pr_curve(self, cls):
        """One-vs-rest ``(precision, recall, thresholds)`` of class ``cls`` (as ``RankAUC.pr_curve``)."""
        return pr(*curve_from_points(*self._points(cls)))

    def average_precision(self, cls) -> float:
        """One-vs-rest average precision of class ``cls``, from its curve."""
        scores, ab = self._points(cls)
        return Points((scores, ab), 0, ab.dtype.kind == "f").average_precision()


def multiclass_auc(
    y, P, *, multi_class="ovr", average="macro", n_classes=None, labels=None, sample_weight=None, max_bins=None
) -> MulticlassRankResult:
    """The result of :class:`MulticlassRankAUC` over these rows (``n_classes`` by default ``P``'s columns).

    >>> from streammetrics import multiclass_auc
    >>> P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
    ...      [0.4, 0.3, 0.3], [0.2, 0.2, 0.6], [0.5, 0.2, 0.3]]
    >>> y = ["cat", "dog", "bird", "cat", "dog", "bird", "bird"]
    >>> r = multiclass_auc(y, P, labels=["cat", "dog", "bird"])
    >>> round(r.auc, 6), round(r.ovo_macro_auc, 6)
    (0.841667, 0.833333)
    """
    if n_classes is None and labels is None:
        P = ClassScores("P", None).convert(P)  # the shape error of anything not n x K
        n_classes = P.shape[1]
    acc = MulticlassRankAUC(n_classes, multi_class=multi_class, average=average, labels=labels, max_bins=max_bins)
    if acc.update(y, P, sample_weight=sample_weight).n == 0:
        raise NoObservationsError("y and P are empty: the AUC needs at least one observation")
    return acc.finalize()
