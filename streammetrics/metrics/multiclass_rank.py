"""Exact multiclass AUC (one-vs-rest and one-vs-one) from an n x K score matrix.

The state keeps, for every score column ``c`` and every true class ``t``, the
distinct scores ``P[i, c]`` of the rows of class ``t`` in increasing order with
their count (or weight): ``K * K`` sorted *blocks* (see
:mod:`streammetrics._kernels.multirank`). Every pairwise Mann–Whitney count is
read from two blocks of one column, so both averages come from one exact,
mergeable state: one-vs-one (Hand & Till 2001) ranks classes ``a`` and ``b``
by column ``a`` (blocks ``(a, a)`` against ``(a, b)``); one-vs-rest ranks
class ``c`` against every other row by column ``c``.

Batches are copied into a buffer of pending rows, sorted into a block run
(the radix sort of :mod:`.ranking.sorting`) once it holds as many rows as the
runs do, and runs are merged log-structured as :class:`~streammetrics.RankAUC`
merges its runs, so any batching, sharding and merge order gives the same
state. With ``max_bins`` or ``max_memory`` the state is instead a set of
binary rank states (:mod:`.multiclass_bounded`).
"""

from __future__ import annotations

import numpy as np

from .._kernels.keys import key_bits, keys_as_bits
from .._protocol.base import Accumulator
from .._protocol.errors import NoObservationsError
from .._protocol.inputs import ClassIndices, ClassLabels, ClassScores
from .._protocol.result import safe
from .._protocol.runs import RunStack
from .._protocol.state import Field, empty_state
from .multiclass import class_settings
from .multiclass_bounded import BOUNDED_FIELDS, RankMembers, n_members
from .multiclass_runs import (MulticlassRankResult, PendingRows, averages, batch_run, check_weighted_support,
                              entries, merge_block_runs, ovr_points, scores_of_run)
from .ranking.accumulator import check_max_bins
from .ranking.curves import average_precision_of, curve_from_points, pr, roc
from .ranking.spill import MIN_MEMORY, parse_memory

__all__ = ["MulticlassRankAUC", "MulticlassRankResult", "multiclass_auc"]

_MULTI_CLASS = ("ovr", "ovo")
_AVERAGE = ("macro", "weighted")
#: the classes whose curves a bounded result keeps for its plots
_PLOTTED = 20


def _check_choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


# ---------------------------------------------------------------- accumulator
class MulticlassRankAUC(Accumulator):
    """Streaming, mergeable multiclass AUC (one-vs-rest, one-vs-one), exact or bounded.

    ``update(y, P)`` takes classes ``0..K-1`` (or ``labels``) and an n x K
    matrix of finite scores, one column per class, higher meaning "more
    likely that class" (probabilities, logits, decision values: only each
    column's order matters, and rows need not sum to 1, where scikit-learn
    requires probabilities).

    Parameters
    ----------
    n_classes : int, optional
        K.
    multi_class : {"ovr", "ovo"}
        Which average ``auc`` reports: one-vs-rest (scikit-learn's
        ``roc_auc_score(multi_class="ovr")``) or one-vs-one (Hand & Till 2001,
        scikit-learn's ``multi_class="ovo"``). Both are always in the result.
    average : {"macro", "weighted"}
        The unweighted mean over classes (pairs), or the mean weighted by
        prevalence: class ``c``'s support for one-vs-rest, the pair's joint
        support ``n_a + n_b`` for one-vs-one (as scikit-learn weights them).
    labels : sequence of hashable, optional
        The class labels in column order; ``y`` then holds those labels.
    max_bins : int, optional
        ``None`` (the default) keeps the exact state, whose memory grows with
        the distinct scores (16 bytes per distinct score and class in each of
        the K columns). A number ``B`` keeps instead one bounded binary rank
        state (``RankAUC(max_bins=B)``) per class, ranking class ``c`` against
        the rest by column ``c``, and with ``multi_class="ovo"`` one per ordered
        pair ``(a, b)``, ranking class ``a`` against class ``b`` by column
        ``a``. Every AUC field then comes with certified bounds (below); a
        bounded one-vs-rest state keeps no pairs, so its result has no
        one-vs-one fields and no ``pair_auc``. The average precision and the
        curves are those of the binned scores (a bin at its lower edge).
    max_memory : int or str, optional
        A memory budget (bytes, or a string such as ``"1GB"``): the binary
        states of ``max_bins`` are then each an exact ``RankAUC(max_memory=...)``
        with an equal share of the budget, spilling past it; the AUCs equal
        the in-memory state's (no pairs for one-vs-rest). Excludes ``max_bins``.

    ``finalize()`` gives ``auc`` (the average ``multi_class`` and ``average``
    choose), ``macro_auc``, ``weighted_auc``, every average (``ovr_macro_auc``,
    ``ovr_weighted_auc``, ``ovo_macro_auc``, ``ovo_weighted_auc``),
    ``per_class_auc`` (each class against the rest, by its column), ``pair_auc``
    (``[a, b]``: class ``a``'s rows against class ``b``'s by column ``a``; Hand &
    Till's pair score is ``(pair_auc[a, b] + pair_auc[b, a]) / 2``),
    ``per_class_average_precision`` and its ``macro_``/``weighted_`` averages,
    ``support`` and ``n``. With ``max_bins``, ``<field>_lower`` and
    ``<field>_upper`` bound the AUC fields: each class's (pair's) are its binary
    state's, and every average has non-negative coefficients of the exact
    supports, so the same average of the bounds bounds it.

    Notes
    -----
    AUCs are the Mann–Whitney statistic with midranks over ``safe(n_pos
    n_neg)``: a class absent from ``y`` has a one-vs-rest AUC of 0, its pairs
    score 0, and these zeros enter the macro averages (scikit-learn raises or
    returns NaN). Unweighted pair counts are exact int64 integers (while
    ``n**2 / 2 < 2**63``; beyond, float sums); with weights every pair counts
    with the product of its rows' weights, in compensated sums, and rows of
    weight 0 are dropped (scikit-learn's one-vs-one AUC takes no weights; here
    the same formulas over weighted counts). :meth:`roc_curve` and
    :meth:`pr_curve` give one class's one-vs-rest curves.

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

    Bounded memory: 200,000 rows of 5 classes in 40 shards merged, 64 bins per
    class, and bounds that hold the exact one-vs-rest AUC:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 5, 200_000)
    >>> P = rng.random((200_000, 5)) + 0.5 * np.eye(5)[y]
    >>> exact = MulticlassRankAUC(5).update(y, P).finalize()
    >>> shards = [MulticlassRankAUC(5, max_bins=64).update(y[i:i + 5000], P[i:i + 5000])
    ...           for i in range(0, 200_000, 5000)]
    >>> b = sum(shards[1:], shards[0]).finalize()
    >>> bool(b.auc_lower <= exact.auc <= b.auc_upper), bool(0 < b.auc_upper - b.auc_lower < 0.02)
    (True, True)
    >>> bool(np.all((b.per_class_auc_lower <= exact.per_class_auc)
    ...             & (exact.per_class_auc <= b.per_class_auc_upper)))
    True
    """

    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lengths", np.int64, ("n_classes", "n_classes"), merge="custom",
              doc="entries of each (column, true class) block"),
        Field("scores", np.float64, (None,), merge="custom", nonneg=False,
              doc="the blocks' distinct scores, column-major"),
        Field("counts", np.int64, (None,), merge="custom", doc="rows at each score (no weights)"),
        Field("weights", np.float64, (None,), merge="custom", doc="weight at each score"),
    )
    headline = ("auc",)

    def __init__(self, n_classes: int | None = None, multi_class: str = "ovr", average: str = "macro",
                 labels=None, max_bins: int | None = None, *, max_memory=None):
        self.n_classes, self.labels = class_settings("MulticlassRankAUC", n_classes, labels)
        self.multi_class = _check_choice("multi_class", multi_class, _MULTI_CLASS)
        self.average = _check_choice("average", average, _AVERAGE)
        self.max_bins = check_max_bins(max_bins)
        self.max_memory = parse_memory(max_memory)
        if self.max_bins is not None and self.max_memory is not None:
            raise ValueError("max_bins and max_memory exclude each other: max_bins bounds every "
                             "class's state (approximate), max_memory keeps them exact and spills "
                             "past the budget; give one of them")
        k = self.n_classes
        y = ClassIndices("y", k) if self.labels is None else ClassLabels("y", self.labels)
        self.inputs = (y, ClassScores("P", k))
        self._n = 0
        self._weighted = False
        self._stack = RunStack(merge_block_runs, entries)
        self._pending: PendingRows | None = None
        self._members: RankMembers | None = None
        if self.max_bins is not None or self.max_memory is not None:
            pairs = self.multi_class == "ovo"
            self.n_members = n_members(k, pairs)
            self.fields = BOUNDED_FIELDS
            # the empty state is sized by the settings: a state file's settings may
            # not declare more members than its arrays hold (the allocation budget)
            empty_state(self.fields, self)
            if self.max_bins is not None:
                member = {"max_bins": self.max_bins}
            else:  # the budget shared by the members: each exact, spilling past its share
                member = {"max_memory": max(MIN_MEMORY, self.max_memory // self.n_members)}
            self._members = RankMembers(k, member, pairs)

    def _settings(self):
        out = {"n_classes": self.n_classes, "multi_class": self.multi_class, "average": self.average}
        if self.labels is not None:
            out["labels"] = self.labels
        if self.max_bins is not None:
            out["max_bins"] = self.max_bins
        if self.max_memory is not None:
            out["max_memory"] = self.max_memory
        return out

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's blocks and the pending rows."""
        if self._members is not None:
            return self._members.nbytes
        pending = 0 if self._pending is None else self._pending.nbytes
        return pending + sum(a.nbytes + b.nbytes + c.nbytes for a, b, c in self._stack)

    # -------------------------------------------------------------- folding
    def _to_float(self):
        self._flush()  # pending rows without weights become a run of counts first
        self._stack = RunStack(merge_block_runs, entries,
                               [(a, b.astype(np.float64), c) for a, b, c in self._stack])
        self._weighted = True

    #: rows the pending buffer holds at least before it is sorted into a run
    _PENDING_MIN = 1 << 16

    def _pending_limit(self) -> int:
        """Pending rows at most: as many as the runs hold, and at least
        :attr:`_PENDING_MIN` (so the pending rows take at most the runs' memory
        and a stream builds runs of doubling size)."""
        pending = 0 if self._pending is None else self._pending.rows
        return max(self._PENDING_MIN, self._n - pending)

    def _fold(self, arrays, w):
        y, P = arrays
        n = y.shape[0]
        if self._members is not None:
            for inp, arr in zip(self.inputs, arrays):  # refused before any change
                inp.check(arr)
            self._members.fold(y, P, w)
            self._weighted = self._members.weighted
            self._n += n
            return 0
        if self._weighted and w.shape[0] == 0:
            w = np.ones(n)
        weighted = w.shape[0] > 0
        limit = self._pending_limit()
        buf = self._pending
        if n >= limit:  # sorted at once, not copied (a bad batch raises here, changing nothing)
            run = batch_run(y, P, w, self.n_classes, self.inputs)
            self._flush()
            if weighted and not self._weighted:
                self._to_float()
            self._stack.push(run)
        else:
            for inp, arr in zip(self.inputs, arrays):  # refused before any change
                inp.check(arr)
            if buf is None or buf.weighted != weighted or buf.rows + n > limit:
                self._flush()
                if weighted and not self._weighted:
                    self._to_float()
                buf = self._pending = PendingRows(max(n, 1024), self.n_classes, weighted)
            buf.append(y, P, w, limit)
        self._n += n
        return 0

    def _flush(self) -> None:
        buf, self._pending = self._pending, None
        if buf is not None and buf.rows:
            self._stack.push(batch_run(*buf.arrays(), self.n_classes, self.inputs))

    def flush(self):
        """Sort the pending rows in and merge the state's runs into one now;
        return ``self``.

        Nothing a result shows changes: this only changes how the state is
        held (as a state read back from a file is held), so that later
        ``finalize`` calls, saving and merging into another accumulator need
        no merging.
        """
        with self._guard:
            if self._members is not None:
                self._members.flush()
                return self
            self._flush()
            self._stack.collapse()
        return self

    # ---------------------------------------------------------------- state
    def _run(self):
        """The single block run of the state, pending rows included (the
        accumulator is not changed)."""
        run = self._stack.merged()
        if self._pending is not None and self._pending.rows:
            rows = batch_run(*self._pending.arrays(), self.n_classes, self.inputs)
            run = rows if run is None else merge_block_runs(run, rows)
        if run is None:
            k = self.n_classes
            run = (np.zeros(0, np.uint64), np.zeros(0, np.float64 if self._weighted else np.int64),
                   np.zeros((k, k), np.int64))
        return run

    @property
    def _state(self):
        if self._members is not None:
            return self._members.join(self._n)
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._weighted)
        keys, mass, lengths = self._run()
        scores = np.empty(keys.shape[0], np.float64)
        keys_as_bits(keys, scores.view(np.uint64))
        st["scores"] = scores
        st["lengths"] = lengths.copy()
        st["weights" if self._weighted else "counts"] = mass.copy()
        return st

    def _load(self, state):
        self._n = int(state["n"][0])
        self._weighted = bool(state["weighted"][0])
        if self._members is not None:
            self._members.load(state)
            return
        self._stack = RunStack(merge_block_runs, entries)
        self._pending = None
        run = self._run_of_state(state)
        if run[0].shape[0]:
            self._stack.push(run)

    def _run_of_state(self, state):
        keys = key_bits(np.ascontiguousarray(state["scores"]).view(np.uint64))
        mass = state["weights"] if state["weighted"][0] else state["counts"]
        if self._weighted:
            mass = mass.astype(np.float64)
        return keys, mass, state["lengths"].copy()

    def _merge_state(self, other):
        if self._members is not None:
            self._members.merge(other)
            self._weighted = self._members.weighted
            self._n += int(other["n"][0])
            return
        if other["weighted"][0] and not self._weighted:
            self._to_float()
        run = self._run_of_state(other)
        if run[0].shape[0]:
            self._stack.push(run)
        self._n += int(other["n"][0])

    def _clone(self):
        out = type(self).__new__(type(self))  # with its own lock
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_guard"})
        out.__dict__.update(_stack=self._stack.copy(),
                            _pending=None if self._pending is None else self._pending.clone(),
                            _members=None if self._members is None else self._members.clone())
        return out

    def _check_state(self, state):
        if self._members is not None:
            self._members.check(state)
            return
        n = int(state["n"][0])
        flag = int(state["weighted"][0])
        if flag not in (0, 1):
            raise ValueError(f"entry 'weighted' must be 0 or 1, got {flag}")
        lengths, scores = state["lengths"], state["scores"]
        name, other = ("weights", "counts") if flag else ("counts", "weights")
        mass = state[name]
        m = scores.shape[0]
        if int(lengths.sum()) != m:
            raise ValueError(f"the block lengths add up to {int(lengths.sum())}, not the {m} scores")
        if mass.shape != (m,):
            raise ValueError(f"entry {name!r} has shape {mass.shape}, expected ({m},)")
        if state[other].shape != (0,):
            raise ValueError(f"entry {other!r} must be empty in this state")
        if np.any(mass <= 0):
            raise ValueError(f"entry {name!r} holds an entry of no observation")
        edges = np.concatenate(([0], np.cumsum(lengths.reshape(-1))))
        inc = np.diff(scores) > 0
        inc_ok = np.ones(m, bool)
        inc_ok[1:] = inc
        inc_ok[edges[:-1][edges[:-1] < m]] = True  # a block's first entry starts afresh
        if not inc_ok.all():
            raise ValueError("a block's scores are not strictly increasing")
        k = self.n_classes
        # each entry of a column holds one row at least (weighted or not)
        most = max(int(edges[(c + 1) * k] - edges[c * k]) for c in range(k))
        if most > n:
            raise ValueError(f"a column holds {most} entries but only {n} observations")
        per_col = [int(mass[edges[c * k]:edges[(c + 1) * k]].sum()) if not flag else
                   float(mass[edges[c * k]:edges[(c + 1) * k]].sum()) for c in range(k)]
        if not flag:
            if n and any(v != n for v in per_col):
                raise ValueError("every column's counts must add up to the observation count")
            if not n and m:
                raise ValueError(f"{m} entries but no observations")
            sup = [[int(mass[edges[c * k + t]:edges[c * k + t + 1]].sum()) for t in range(k)]
                   for c in range(k)]
        else:
            sup = [[float(mass[edges[c * k + t]:edges[c * k + t + 1]].sum()) for t in range(k)]
                   for c in range(k)]
        ref = np.array(sup[0], np.float64)
        for c in range(1, k):
            if not np.allclose(np.array(sup[c], np.float64), ref, rtol=1e-9, atol=0):
                raise ValueError("the columns disagree on the rows of a class")

    # --------------------------------------------------------------- results
    def _meta(self):
        meta = {"labels": self.labels, "weighted": self._weighted,
                "multi_class": self.multi_class, "average": self.average}
        if self.max_bins is not None:
            meta["max_bins"] = self.max_bins
        if self.max_memory is not None:
            meta["max_memory"] = self.max_memory
        return meta

    def _compute(self) -> MulticlassRankResult:
        if self._members is not None:
            return self._bounded_result()
        run = self._run()
        out = scores_of_run(run, self.n_classes, self._n, self._weighted, self.multi_class,
                            self.average, self._meta())
        object.__setattr__(out, "_points_of", lambda c: ovr_points(run, c))  # the plots' curves
        return out

    def _bounded_result(self) -> MulticlassRankResult:
        """The result of the bounded members: every AUC field with ``_lower``
        and ``_upper`` bounds (no one-vs-one fields without pair members)."""
        members, k = self._members, self.n_classes
        value, lower, upper, n_pos, _ = members.results()
        support = n_pos[:k]
        if self._weighted:
            support = support.astype(np.float64)
            check_weighted_support(support)
        else:
            support = support.astype(np.int64)
        values = {}
        for arr, suffix in ((value, ""), (lower, "_lower"), (upper, "_upper")):
            values.update(averages(arr[:k].copy(), members.pair_matrix(arr), support,
                                    self.multi_class, self.average, suffix))
        if not members.pairs:  # a bounded one-vs-rest state keeps no pairs: no such fields
            values = {f: v for f, v in values.items() if not f.startswith(("ovo_", "pair_auc"))}
        ap = np.array([members.average_precision(c) for c in range(k)])
        sup_f = support.astype(np.float64)
        values.update({
            "per_class_average_precision": ap,
            "macro_average_precision": float(np.mean(ap)),
            "weighted_average_precision": float(np.dot(sup_f, ap) / safe(float(sup_f.sum()))),
            "support": support,
            "n": self._n,
        })
        out = MulticlassRankResult("MulticlassRankScores", values, self._meta())
        snapshot = [members.class_points(c) for c in range(min(k, _PLOTTED))]
        object.__setattr__(out, "_points_of", lambda c: snapshot[c])
        return out

    def _class_index(self, cls) -> int:
        if self.labels is not None:
            if cls in self.labels:
                return self.labels.index(cls)
            raise ValueError(f"class {cls!r} is not one of the labels {self.labels!r}")
        if isinstance(cls, (bool, np.bool_)) or not isinstance(cls, (int, np.integer)):
            raise TypeError(f"class must be an integer in 0..{self.n_classes - 1}, got {cls!r}")
        if not 0 <= int(cls) < self.n_classes:
            raise ValueError(f"class must be in 0..{self.n_classes - 1}, got {cls}")
        return int(cls)

    def _curve(self, cls):
        c = self._class_index(cls)
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("MulticlassRankAUC has no observations: call update() first")
            if self._members is not None:
                return curve_from_points(*self._members.class_points(c))
            run = self._run()
        return curve_from_points(*ovr_points(run, c))

    def roc_curve(self, cls):
        """One-vs-rest ROC curve ``(fpr, tpr, thresholds)`` of class ``cls``
        (an index, or a label), ranked by its column: as
        :meth:`RankAUC.roc_curve` of ``y == cls`` against ``P[:, cls]``.

        >>> from streammetrics import MulticlassRankAUC
        >>> acc = MulticlassRankAUC(2).update([0, 1, 1], [[0.8, 0.2], [0.4, 0.6], [0.6, 0.4]])
        >>> acc.roc_curve(1)
        (array([0., 0., 0., 1.]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.6, 0.4, 0.2]))
        """
        return roc(*self._curve(cls))

    def pr_curve(self, cls):
        """One-vs-rest precision-recall curve ``(precision, recall, thresholds)``
        of class ``cls``, in scikit-learn's order (as :meth:`RankAUC.pr_curve`)."""
        return pr(*self._curve(cls))

    def average_precision(self, cls) -> float:
        """One-vs-rest average precision of class ``cls`` (as
        ``finalize().per_class_average_precision[cls]``, from the curve)."""
        return average_precision_of(*self._curve(cls))


def multiclass_auc(y, P, *, multi_class="ovr", average="macro", n_classes=None, labels=None,
                   sample_weight=None, max_bins=None) -> MulticlassRankResult:
    """Exact multiclass AUC of class scores ``P`` (n x K): the result of
    :class:`MulticlassRankAUC` (``n_classes`` by default ``P``'s columns) over
    these rows; ``max_bins`` gives its bounded result.

    >>> from streammetrics import multiclass_auc
    >>> P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3],
    ...      [0.4, 0.3, 0.3], [0.2, 0.2, 0.6], [0.5, 0.2, 0.3]]
    >>> y = ["cat", "dog", "bird", "cat", "dog", "bird", "bird"]
    >>> r = multiclass_auc(y, P, labels=["cat", "dog", "bird"])
    >>> round(r.auc, 6)
    0.841667
    >>> round(multiclass_auc(y, P, multi_class="ovo", labels=["cat", "dog", "bird"]).auc, 6)
    0.833333
    """
    if n_classes is None and labels is None:
        P = ClassScores("P", None).convert(P)  # the shape error of anything not n x K
        n_classes = P.shape[1]
    acc = MulticlassRankAUC(n_classes, multi_class=multi_class, average=average, labels=labels,
                            max_bins=max_bins)
    if acc.update(y, P, sample_weight=sample_weight).n == 0:
        raise NoObservationsError("y and P are empty: the AUC needs at least one observation")
    return acc.finalize()
