"""The area under the ROC curve: the Mann–Whitney U of the positive class.

``AUC = U_pos / safe(n_pos * n_neg)`` with midranks, so tied scores count one
half and a single-class input gives 0 (the specification's guard; scikit-learn
warns and returns NaN instead). :class:`RankAUC` is a thin accumulator over
two state strategies with one interface, :class:`~.exact.Exact` (sorted runs
of every distinct score) and :class:`~.bounded.Bounded` (at most ``2 B``
items with a certified interval), fed through a buffer of pending rows
(:mod:`.pending`); the one-shot functions sort once and count.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..._kernels import rank as K
from ..._protocol.base import Accumulator
from ..._protocol.errors import NoObservationsError
from ..._protocol.inputs import Finite, Labels01, convert, raise_rejected
from ..._protocol.result import safe
from ..._protocol.state import Field, empty_state
from .bounded import Bounded
from .curves import RankResult, average_precision_of, curve_from_points, pr, roc
from .exact import INT64_LIMIT, Exact, auc_of_run, run_of_sorted, sorted_run
from .pending import Pending
from .sorting import split_sorted

__all__ = ["RankAUC", "auc", "roc_curve", "pr_curve", "average_precision"]


def _check_max_bins(max_bins):
    if max_bins is None:
        return None
    if isinstance(max_bins, (bool, np.bool_)) or not isinstance(max_bins, numbers.Integral):
        raise TypeError(f"max_bins must be an int or None, got {type(max_bins).__name__}")
    max_bins = int(max_bins)
    if max_bins < 1:
        raise ValueError(f"max_bins must be at least 1, got {max_bins}")
    return max_bins


def auc(y, s, *, sample_weight=None) -> float:
    """Area under the ROC curve: the Mann–Whitney U of the positives over ``safe(n_pos n_neg)``.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 2)
        0/1 labels (1 = positive), or the specification's one-hot membership
        matrix ``g`` whose column 1 marks the positives and column 0 the
        negatives (a row that is not ``[1, 0]`` or ``[0, 1]`` is a
        ``ValueError`` naming it).
    s : array-like of shape (n,)
        Finite real scores, higher meaning "more likely positive".
    sample_weight : array-like of shape (n,), optional
        Non-negative finite weights: each pair counts with the product of its
        weights.

    Returns
    -------
    float
        The probability that a random positive outscores a random negative,
        ties counting one half. With a single class present it is 0 (the
        specification's guard ``safe(x) = x + [x == 0]``), where
        ``sklearn.metrics.roc_auc_score`` warns and returns NaN (older
        versions raise).

    Notes
    -----
    The scores are split by label and each class is radix-sorted (as 64-bit
    keys of the float bits; both classes at once, on two threads, for large
    inputs on two cores or more); one merge pass then counts ``2U`` exactly as an
    integer. No threshold sweep and no trapezoid rule, so the result is the
    exact rational U / (n_pos n_neg) rounded once.

    Examples
    --------
    The specification's example, as a one-hot matrix and as 0/1 labels:

    >>> from streammetrics import auc
    >>> g = [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]]
    >>> s = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]
    >>> round(auc(g, s), 6)
    0.833333
    >>> auc([0, 0, 0, 1, 1, 1, 1], s) == auc(g, s) == 10 / 12
    True
    >>> auc([1, 1, 1], [0.2, 0.5, 0.9])  # one class only: the guard gives 0
    0.0
    """
    inputs = RankAUC.inputs
    (y, s), w, n = convert(inputs, (y, s), sample_weight)
    if n == 0:
        raise NoObservationsError("y and s are empty: the AUC needs at least one observation")
    if w.shape[0]:
        run = _weighted_run(y, s, w)
        return auc_of_run(run[1] if run is not None else np.zeros((2, 0)), True)[0]
    split = split_sorted(y, s)
    if split is None:
        raise_rejected(inputs, (y, s))
    keys, n_pos = split
    n_neg = n - n_pos
    if 2 * n_pos * n_neg < INT64_LIMIT:
        u2 = int(K.u2_sorted(keys[:n_pos], keys[n_pos:]))
        return u2 / (2 * safe(n_pos * n_neg))
    _, ab = run_of_sorted(keys[:n_pos], keys[n_pos:])
    return auc_of_run(ab, False)[0]


def _weighted_run(y, s, w):
    """The run of one weighted batch, sorted at once; ``None`` if every weight is 0."""
    keys = np.empty(y.shape[0], np.uint64)
    vals = np.empty(y.shape[0], np.float64)
    status, front, back = K.split_keys_weighted(y, s, w, keys, vals)
    if status:
        raise_rejected(RankAUC.inputs, (y, s))
    if front == 0 and back == y.shape[0]:
        return None
    return sorted_run(keys, front, back, vals)


def _one_shot(y, s, sample_weight) -> "RankAUC":
    acc = RankAUC().update(y, s, sample_weight=sample_weight)
    if acc.n == 0:
        raise NoObservationsError("y and s are empty: the curve needs at least one observation")
    return acc


def roc_curve(y, s, *, sample_weight=None):
    """ROC curve ``(fpr, tpr, thresholds)``: one point per distinct score.

    Thresholds decrease from ``+inf`` (the leading point ``(0, 0)``) through
    every distinct score, with no thinning of collinear points: the output of
    ``sklearn.metrics.roc_curve(y, s, drop_intermediate=False)``. Rows of weight
    0 are dropped, as scikit-learn does. When a class is absent its rate is 0
    everywhere (the guard), where scikit-learn warns and returns NaN.

    >>> from streammetrics import roc_curve
    >>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr, tpr
    (array([0. , 0. , 0.5, 0.5, 1. ]), array([0. , 0.5, 0.5, 1. , 1. ]))
    >>> thresholds
    array([ inf, 0.8 , 0.4 , 0.35, 0.1 ])
    """
    return _one_shot(y, s, sample_weight).roc_curve()


def pr_curve(y, s, *, sample_weight=None):
    """Precision-recall curve ``(precision, recall, thresholds)``.

    In the order of ``sklearn.metrics.precision_recall_curve``: thresholds
    increase over the distinct scores, and ``precision``/``recall`` have one
    more entry, the final point ``(1, 0)``. With no positive at all, recall is
    0 everywhere (the guard), where scikit-learn warns and sets it to 1.

    >>> from streammetrics import pr_curve
    >>> precision, recall, thresholds = pr_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> precision
    array([0.5 , 0.666..., 0.5 , 1. , 1. ])
    >>> recall
    array([1. , 1. , 0.5, 0.5, 0. ])
    >>> thresholds
    array([0.1 , 0.35, 0.4 , 0.8 ])
    """
    return _one_shot(y, s, sample_weight).pr_curve()


def average_precision(y, s, *, sample_weight=None) -> float:
    """Average precision: the step integral ``sum_k (R_k - R_{k-1}) P_k``.

    scikit-learn's ``average_precision_score`` definition (no interpolation).
    With no positive it is 0.

    >>> from streammetrics import average_precision
    >>> round(average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 6)
    0.833333
    """
    return _one_shot(y, s, sample_weight).average_precision()



class RankAUC(Accumulator):
    """Streaming, mergeable AUC (Mann–Whitney U), exact or in bounded memory.

    Parameters
    ----------
    max_bins : int, optional
        ``None`` (the default) keeps every distinct score: the AUC, the curves
        and the average precision are exact, and memory grows with the number
        of distinct scores (24 bytes each). A number ``B`` bounds the state to
        at most ``2 B`` entries (48 bytes each: under 100 KB for ``B = 1000``)
        and reports a certified interval ``[auc_lower, auc_upper]`` that always
        contains the exact AUC.

    Notes
    -----
    **Pending rows.** ``update`` validates a batch and appends its rows (the
    64-bit sort keys of their scores, split by label, and their weights) to a
    buffer of *pending* rows, which is sorted into the state in bulk when it is
    full and before the state is read; appending costs a few microseconds
    whatever the state holds. Its bounds, 8 bytes a row (16 with weights):

    * exact mode: at most ``max(2**22, 3 m)`` rows, ``m`` the distinct scores
      already sorted in (the runs' entries). Without weights that is never
      more than 32 MiB or the runs' own size (24 bytes an entry), so the
      memory stays proportional to the distinct scores. Since the buffer
      grows with the state, a long stream is sorted in a few large pieces.
    * bounded mode: at most ``max(2**14, 32 B)`` rows, 256 KiB for ``B =
      1000`` (twice that with weights), beside the bins' at most ``2 B x 48``
      bytes.

    A batch too large for the buffer is sorted on its own, at once: in
    bounded mode it then takes its keys and the sort's scratch (16 bytes a
    row, 32 with weights) beyond its own arrays, since it is grouped straight
    from its sorted keys and never expanded into entries. Saving, pickling,
    comparing with ``==`` and merging into another accumulator read the state
    with the pending rows sorted in (into a temporary copy), so any state that
    leaves an accumulator is the canonical one described below, and none of
    them changes either accumulator; ``copy`` copies the pending rows as they
    are. ``finalize`` and the curves leave the buffer alone too, except that
    ``finalize`` without weights sorts the exact mode's pending rows in place
    and leaves them pending (see below), which changes no result, only the
    time later calls take. :meth:`flush` sorts the pending rows into the state
    now and frees the buffer: the one step that changes how the state is
    held. A buffer is made as large as its bound at once for a batch of ``2**16`` rows or more (such a
    stream would fill it), so it is never copied to grow; memory the rows
    have not reached yet is reserved but not touched.

    **Exact mode.** The pending rows are radix-sorted (on the scores' bits,
    per class) into a *run* of distinct scores with the positive and negative
    count at each (float64 weights once any batch was weighted). Runs are
    merged log-structured: a run is merged into its predecessor only when that
    one is at most twice as long (a new run is merged into the last one in the
    same pass that builds it), so folding ``n`` rows costs ``O(n log n)`` in
    all and no update re-merges one big array. ``merge`` takes over the other
    accumulator's run. ``finalize`` merges the runs into one and counts ``2U``
    exactly in int64 (in 128-bit integers past ``2 n_pos n_neg = 2**63``, so
    billions of merged rows stay exact); with weights it is a compensated
    float64 sum. Without weights and below that bound, ``finalize`` counts
    ``2U`` across the run and the sorted pending rows in one pass instead of
    writing their merged run; the rows stay pending, marked sorted, and the
    next update or read of the state makes them a run without sorting them
    again. Any batching, sharding and merge order gives the identical AUC
    without weights. On two cores or more, large sorts do the two classes
    at the same time (the smaller on a worker thread; the kernels release the
    GIL), and a large count cuts the scores at a middle key and counts the
    two sides at the same time; both give the same result as one thread.

    **Bounded mode.** Once the state would hold more than ``2 B`` entries it
    is compacted to at most ``B`` *bins*: scores are cut along the dyadic cells
    of their 64-bit keys (halves, quarters, ... of the float line, so the
    cells follow the data's spread at every scale), and the entries of a cell
    become one bin once the cell's ``pos x neg`` mass is at most ``3 P N /
    B**2`` and its total mass at most ``6 (P + N) / B`` (both raised until at
    most ``B`` bins remain). Sorted pending rows are first grouped along the
    same cells at a quarter of those limits, never across the edge of a bin
    (in time linear in the rows), and the groups are then compacted with the
    bins; while the state and the rows hold at most ``2 B`` distinct scores
    they are kept as points. Bins keep their tight score range ``[lo, hi]``.
    A bin remembers the concordance of its own pairs that was known when it
    was formed, and the mass of its pairs whose order is unknown: later rows
    that fall inside a bin's range cannot be ranked against its contents. A bin
    is never split; when new data piles up inside it, the new data is binned
    beneath it at finer cells. Two cells are nested or disjoint, so the bins
    of merged shards overlap only within a cell and never chain into wide
    ranges. ``auc`` counts each unknown pair one half, ``auc_lower`` counts it
    0 and ``auc_upper`` 1, so the exact AUC always lies in between. (With
    weights, or once ``2 P N`` passes ``2**53``, the pair masses are rounded
    float sums, and the interval is widened by a relative 1e-9 to cover the
    rounding.) While nothing has been binned the three are equal and exact.
    With ``B = 1000`` a stream of a million distinct continuous scores gives
    an interval about 0.001 wide (a little wider for 16 merged shards or for
    drifting scores), in a state under 100 KB.
    Curves and the average precision of a binned state are those of the binned
    scores: every bin counts as one score, its lower edge ``lo``.

    The state saved by ``save`` (and pickled) is the single merged run, or the
    bins: ``lo``/``hi`` score ranges, ``counts`` (int64) or ``weights``
    (float64) of positives and negatives, and ``pairs`` (twice the known
    concordance and the unknown mass of each bin's own pairs).

    Examples
    --------
    >>> from streammetrics import RankAUC
    >>> shard_a = RankAUC().update([0, 0, 0, 1], [0.1, 0.35, 0.3, 0.8])
    >>> shard_b = RankAUC().update([1, 1, 1], [0.4, 0.9, 0.2])
    >>> r = (shard_a + shard_b).finalize()
    >>> round(r.auc, 6), r.n_pos, r.n_neg, r.n
    (0.833333, 4, 3, 7)
    >>> r.auc_lower == r.auc == r.auc_upper
    True

    Bounded memory: one million scores in 100 batches, a state of at most
    2000 bins, and an interval that holds the exact AUC:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> exact, bounded = RankAUC(), RankAUC(max_bins=1000)
    >>> for _ in range(100):
    ...     y = rng.integers(0, 2, 10_000)
    ...     s = rng.normal(size=10_000) + y
    ...     _ = exact.update(y, s), bounded.update(y, s)
    >>> e, b = exact.finalize(), bounded.finalize()
    >>> bool(b.auc_lower <= e.auc <= b.auc_upper), b.auc_upper - b.auc_lower < 0.01
    (True, True)
    >>> sum(a.nbytes for a in bounded.state_dict().values()) < 100_000
    True
    """

    inputs = (Labels01("y", onehot=True), Finite("s", "scores"))
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lo", np.float64, (None,), merge="custom", nonneg=False, doc="scores, or bins' lower edges"),
        Field("hi", np.float64, (None,), merge="custom", nonneg=False, doc="bins' upper edges"),
        Field("counts", np.int64, (2, None), merge="custom", doc="positives, negatives (no weights)"),
        Field("weights", np.float64, (2, None), merge="custom", doc="positive, negative weights"),
        Field("pairs", np.float64, (2, None), merge="custom", doc="bins' known and unknown pairs"),
    )
    headline = ("auc",)

    #: a new buffer is made as large as the limit at once for a batch of this many rows
    _PREALLOCATE_BATCH = 1 << 16

    def __init__(self, max_bins: int | None = None):
        self.max_bins = _check_max_bins(max_bins)
        self._n = 0
        self._strategy = self._new_strategy(weighted=False)
        self._pending: Pending | None = None

    def _new_strategy(self, weighted: bool):
        """The empty state: every distinct score, or at most ``2 max_bins`` items."""
        return Exact(weighted) if self.max_bins is None else Bounded(self.max_bins, weighted)

    def _settings(self):
        return {"max_bins": self.max_bins}

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def _weighted(self) -> bool:
        return self._strategy.weighted

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's arrays and the pending rows."""
        return 16 + (0 if self._pending is None else self._pending.nbytes) + self._strategy.nbytes

    # -------------------------------------------------------------- pending rows
    def _limit(self) -> int:
        """How many rows the pending buffer may hold."""
        return self._strategy.pending_limit()

    def _fold(self, arrays, w):
        y, s = arrays
        n = y.shape[0]
        if self._strategy.weighted and w.shape[0] == 0:
            w = np.ones(n)
        status = self._append(y, s, w)
        if not status:
            self._n += n
        return status

    def _append(self, y, s, w) -> int:
        """Append one batch (``w`` empty without weights) to the pending rows;
        the kernel's status (nonzero: a bad value, nothing changed)."""
        n = y.shape[0]
        weighted = w.shape[0] > 0
        limit = self._limit()
        buf = self._pending
        if buf is not None and buf.weighted == weighted and not buf.sorted and buf.rows + n <= limit:
            return buf.append(y, s, w, limit)
        # a new buffer takes the batch (a bad batch is refused here, before
        # any change); then the old rows are sorted in
        if n > limit:
            capacity = n
        elif n >= self._PREALLOCATE_BATCH:
            capacity = limit  # a stream of large batches fills it: no copies growing it
        else:  # as large as the buffer it replaces: a stream does not grow it again
            capacity = min(limit, max(n, 1024, 0 if buf is None else buf.keys.shape[0]))
        new = Pending(capacity, weighted)
        status = new.append(y, s, w, limit)
        if status:
            return status
        self._flush()
        if weighted and not self._strategy.weighted:
            self._strategy.to_float()
        self._pending = new
        limit = self._limit()
        if new.rows > limit:
            self._flush()  # exact mode: a batch larger than the buffer is sorted at once
        elif n >= self._PREALLOCATE_BATCH and new.keys.shape[0] < limit:
            new.resize(limit)  # the limit rose with the rows sorted in: one batch to move
        return 0

    def _flush(self) -> None:
        buf, self._pending = self._pending, None
        if buf is not None and buf.rows:
            self._strategy.take(buf)

    def flush(self):
        """Sort the pending rows into the state now, free their buffer, and (exact
        mode) merge the runs into one; return ``self``.

        Nothing a result shows changes: this only changes how the state is
        held, as a state read back from a file or a pickle is held, so that
        later reads of the state (saving, pickling, merging into another
        accumulator) need no sorting or merging.
        """
        self._flush()
        self._strategy.compact()
        return self

    # ------------------------------------------------------------------- state
    @property
    def _state(self):
        """The state as its declared fields, pending rows sorted in (a temporary copy)."""
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._strategy.weighted)
        self._strategy.export(self._pending, st)
        return st

    def _load(self, state):
        self._n = int(state["n"][0])
        weighted = bool(state["weighted"][0])
        self._strategy = self._new_strategy(weighted)
        self._strategy.load(state)
        self._pending = None

    def _merge_state(self, other):
        if other["weighted"][0] and not self._strategy.weighted:
            self._flush()
            self._strategy.to_float()
        self._strategy.add(other)
        self._n += int(other["n"][0])

    def _clone(self):
        out = RankAUC(self.max_bins)
        out._n = self._n
        out._strategy = self._strategy.clone()
        out._pending = None if self._pending is None else self._pending.clone()
        return out

    def _check_state(self, state):
        _check_rank_state(state, self.max_bins)

    # ---------------------------------------------------------------- results
    def _compute(self) -> RankResult:
        value, lower, upper, n_pos, n_neg, points = self._strategy.result(self._pending, self._n)
        return RankResult(
            "AUCScores",
            {
                "auc": float(value),
                "n_pos": n_pos,
                "n_neg": n_neg,
                "auc_lower": float(lower),
                "auc_upper": float(upper),
                "n": self._n,
            },
            {"weighted": self._strategy.weighted, "max_bins": self.max_bins},
            points,
        )

    def _points(self):
        """Distinct scores and their masses (a bin counts as its lower edge); no change."""
        return self._strategy.points(self._pending)

    def _curve(self):
        if self._n == 0:
            raise NoObservationsError("RankAUC has no observations: call update() first")
        return curve_from_points(*self._points())

    def roc_curve(self):
        """ROC curve ``(fpr, tpr, thresholds)`` of the state, highest threshold first.

        One point per distinct score after a leading ``(0, 0)`` at threshold
        ``+inf``, with no thinning: ``sklearn.metrics.roc_curve(...,
        drop_intermediate=False)`` of the same rows (zero-weight rows dropped).
        An absent class gives a rate of 0 everywhere (scikit-learn: NaN). For a
        binned state (``max_bins`` reached) this is the curve of the binned
        scores, every bin counting as its lower edge.

        >>> from streammetrics import RankAUC
        >>> fpr, tpr, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).roc_curve()
        >>> fpr, tpr, th
        (array([0. , 0. , 0.5, 1. ]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.9, 0.5, 0.2]))
        """
        return roc(*self._curve())

    def pr_curve(self):
        """Precision-recall curve ``(precision, recall, thresholds)`` of the state.

        The order of ``sklearn.metrics.precision_recall_curve``: thresholds
        increasing, and a final point ``(precision 1, recall 0)``. With no
        positive, recall is 0 everywhere (scikit-learn: 1, with a warning). For
        a binned state this is the curve of the binned scores.

        >>> from streammetrics import RankAUC
        >>> p, r, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).pr_curve()
        >>> p, r, th
        (array([0.5 , 0.666..., 1. , 1. ]), array([1. , 1. , 0.5, 0. ]), array([0.2, 0.5, 0.9]))
        """
        return pr(*self._curve())

    def average_precision(self) -> float:
        """Average precision of the state, scikit-learn's step definition.

        ``sum_k (R_k - R_{k-1}) P_k`` over the thresholds; 0 with no positive.
        For a binned state it is that of the binned scores.

        >>> from streammetrics import RankAUC
        >>> RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).average_precision()
        0.833...
        """
        return average_precision_of(*self._curve())


def _check_rank_state(state, max_bins):
    """The invariants of a saved rank state (exact when ``max_bins`` is None)."""
    n = int(state["n"][0])
    flag = int(state["weighted"][0])
    if flag not in (0, 1):
        raise ValueError(f"entry 'weighted' must be 0 or 1, got {flag}")
    weighted = bool(flag)
    lo, hi, pairs = state["lo"], state["hi"], state["pairs"]
    name, other = ("weights", "counts") if weighted else ("counts", "weights")
    ab = state[name]
    if lo.ndim != 1:
        raise ValueError(f"entry 'lo' must be 1-D, got shape {lo.shape}")
    m = lo.shape[0]
    if ab.shape != (2, m):
        raise ValueError(f"entry {name!r} has shape {ab.shape}, expected (2, {m})")
    if state[other].shape != (2, 0):
        raise ValueError(f"entry {other!r} must be empty in this state")
    if m > n:
        raise ValueError(f"{m} entries but only {n} observations")
    if m:
        if np.any(ab < 0):
            raise ValueError(f"entry {name!r} holds negative values")
        if np.any(ab[0] + ab[1] <= 0) if weighted else np.any((ab[0] == 0) & (ab[1] == 0)):
            raise ValueError("an entry holds no observation")
        if not weighted and (np.any(ab > n) or int(ab.sum()) != n):
            raise ValueError("the counts do not add up to the observation count")
    if max_bins is None:
        if hi.shape != (0,) or pairs.shape != (2, 0):
            raise ValueError("an exact state holds no bins ('hi', 'pairs' must be empty)")
        if np.any(np.diff(lo) <= 0):
            raise ValueError("the scores are not strictly increasing")
        return
    if hi.shape != (m,) or pairs.shape != (2, m):
        raise ValueError(f"entries 'hi' and 'pairs' must have shapes ({m},) and (2, {m})")
    if m > 2 * max_bins:
        raise ValueError(f"{m} bins, more than 2 * max_bins = {2 * max_bins}")
    if np.any(hi < lo):
        raise ValueError("a bin's upper edge is below its lower edge")
    dl, dh = np.diff(lo), np.diff(hi)
    point = hi == lo
    if np.any((dl < 0) | ((dl == 0) & (dh < 0)) | ((dl == 0) & (dh == 0) & point[:-1])):
        raise ValueError("the bins are not sorted by (lo, hi) with distinct points")
    if np.any(pairs < 0):
        raise ValueError("entry 'pairs' holds negative values")
    pn = ab[0].astype(np.float64) * ab[1]
    tol = 1e-9 * pn + 1e-300
    if np.any(pairs[0] + 2 * pairs[1] > 2 * pn + 2 * tol):
        raise ValueError("a bin's pair masses exceed its positive x negative mass")
    if np.any(point & ((pairs[1] != 0) | (np.abs(pairs[0] - pn) > tol))):
        raise ValueError("a single-score entry must hold ties only")
