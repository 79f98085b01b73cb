"""The area under the ROC curve: the Mann–Whitney U of the positive class.

``AUC = U_pos / safe(n_pos * n_neg)`` with midranks, so tied scores count one
half and a single-class input gives 0 (the specification's guard; scikit-learn
warns and returns NaN instead). :class:`RankAUC` is a thin accumulator over
two state strategies with one interface, :class:`~.exact.Exact` (sorted runs
of every distinct score) and :class:`~.bounded.Bounded` (at most ``2 B``
items with a certified interval), fed through a buffer of pending rows
(:mod:`.pending`) and read by one query engine (:class:`~.points.Points`).
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from ..._kernels import compensated
from ..._kernels.intervals import class_squares
from ..._kernels.keys import split_keys_weighted
from ..._kernels.pairs import u2_sorted
from ..._protocol.base import Accumulator
from ..._protocol.errors import NoObservationsError
from ..._protocol.inputs import Finite, Labels01, convert, raise_rejected
from ..._protocol.result import safe
from ..._protocol.state import Field, count_total, empty_state
from ..binary import BinaryResult
from ..intervals import z_of
from .bounded import Bounded
from .curves import RankResult
from .exact import Exact
from .pending import Pending
from .points import INT64_LIMIT, Points, auc_of_chunks, curve_from_points, pr, roc
from .sorting import run_of_sorted, sorted_run, split_sorted
from .spill import parse_memory

__all__ = ["RankAUC", "auc", "roc_curve", "pr_curve", "average_precision", "partial_auc", "check_max_bins"]


def _check_spill_dir(spill_dir):
    if spill_dir is None:
        return None
    if not isinstance(spill_dir, (str, os.PathLike)):
        raise TypeError(f"spill_dir must be a folder path or None, got {type(spill_dir).__name__}")
    folder = os.path.abspath(os.fspath(spill_dir))
    if not os.path.isdir(folder):
        raise ValueError(f"spill_dir must be an existing folder, got {os.fspath(spill_dir)!r}")
    return folder


def check_max_bins(max_bins):
    """``max_bins`` checked: ``None`` or an int of at least 1."""
    if max_bins is None:
        return None
    if isinstance(max_bins, (bool, np.bool_)) or not isinstance(max_bins, numbers.Integral):
        raise TypeError(f"max_bins must be an int or None, got {type(max_bins).__name__}")
    max_bins = int(max_bins)
    if max_bins < 1:
        raise ValueError(f"max_bins must be at least 1, got {max_bins}")
    return max_bins


_check_max_bins = check_max_bins  # the name the other families import


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
    The scores are split by label and each class's keys are radix-sorted (the
    two classes on two threads when large); one merge pass then counts ``2U``
    exactly as an integer. No threshold sweep and no trapezoid rule, so the
    result is the exact rational U / (n_pos n_neg) rounded once.

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
        keys, vals = np.empty(n, np.uint64), np.empty(n, np.float64)
        status, front, back = split_keys_weighted(y, s.view(np.uint64), w, keys, vals)
        if status:
            raise_rejected(inputs, (y, s))
        run = sorted_run(keys, front, back, vals)
        return auc_of_chunks(lambda: iter([run]), True)[0]
    split = split_sorted(y, s)
    if split is None:
        raise_rejected(inputs, (y, s))
    keys, n_pos = split
    if n * n < 2 * INT64_LIMIT:  # 2 n_pos n_neg <= n**2 / 2 fits an int64
        return int(u2_sorted(keys[:n_pos], keys[n_pos:])) / (2 * safe(n_pos * (n - n_pos)))
    run = run_of_sorted(keys[:n_pos], keys[n_pos:])
    return auc_of_chunks(lambda: iter([run]), False)[0]


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


def partial_auc(y, s, max_fpr, *, mcclish: bool = False, sample_weight=None) -> float:
    """Area under the ROC curve for false positive rates up to ``max_fpr``.

    See :meth:`RankAUC.partial_auc`; ``mcclish=True`` gives
    ``sklearn.metrics.roc_auc_score(y, s, max_fpr=max_fpr)``.

    >>> from streammetrics import partial_auc
    >>> partial_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.5)
    0.25
    """
    return _one_shot(y, s, sample_weight).partial_auc(max_fpr, mcclish=mcclish)


class RankAUC(Accumulator):
    """Streaming, mergeable AUC (the Mann–Whitney U), exact or in bounded memory.

    ``update(y, s)`` takes 0/1 labels (or the specification's n x 2 one-hot
    matrix) and finite real scores, higher meaning "more likely positive";
    ``sample_weight`` counts each pair with the product of its weights.

    Parameters
    ----------
    max_bins : int, optional
        ``None`` (the default) keeps every distinct score: the AUC, the curves
        and the average precision are exact, and memory grows with the number
        of distinct scores (24 bytes each). A number ``B`` bounds the state to
        at most ``2 B`` entries (48 bytes each: under 100 KB for ``B = 1000``)
        and reports a certified interval that always contains the exact AUC.
    max_memory : int or str, optional
        A memory budget for the exact state, in bytes or as a string such as
        ``"1GB"`` or ``"512MiB"`` (at least 4096 bytes). The state stays exact:
        once its sorted runs take more than a quarter of the budget they are
        written to temporary files (*spilled*, 16 bytes per distinct score on
        disk, 24 with weights or counts past ``2**32``) and memory holds only
        the pending rows (a sixteenth of the budget), the runs not yet spilled
        and the chunks a read streams through. ``finalize()``, the average
        precision, the interval and the threshold queries merge the files
        into one and read it in chunks; the curves, saving, pickling and
        merging into another accumulator build the merged run in memory (24
        bytes per distinct score; a saved file or a pickle holds that run
        too). The results and the state equal those of ``RankAUC()`` on the
        same rows, to the bit (with weights, up to the order in which the
        weights of one tied score are added; the average precision to 1e-13
        relative). Budgeted and unbudgeted accumulators merge. Excludes
        ``max_bins``.
    spill_dir : str or os.PathLike, optional
        The existing folder for the temporary files (default: the system's,
        ``tempfile.gettempdir()``); needs ``max_memory``. The files are named
        ``.streammetrics-<host>.<pid>.<random>.smspill`` and removed on
        :meth:`reset`, :meth:`close`, at the end of a ``with`` block, when the
        accumulator is garbage-collected and at normal exit; those a killed
        process left are removed by the next spill on the same host. It is
        not saved with the state (a loaded accumulator spills to the default
        folder).

    Returns (``finalize()``)
    ------------------------
    auc : float
        ``U / safe(n_pos n_neg)`` with midranks (ties count one half); 0 when a
        class is absent (the specification's guard; scikit-learn returns NaN).
    n_pos, n_neg : int or float
        Positives and negatives (sums of weights once weights were seen).
    auc_lower, auc_upper : float
        Bounds on the exact AUC: equal to ``auc`` while the state is exact.
    n : int
        Rows folded in, zero-weight rows included.
    auc_ci_lower, auc_ci_upper, auc_se : float
        With ``finalize(ci=level)`` only: DeLong's confidence interval and
        standard error, described below.

    Confidence interval (``finalize(ci=0.95)``)
    -------------------------------------------
    DeLong, DeLong and Clarke-Pearson (1988): with ``P`` and ``N`` the
    positive and negative mass, the placement value of a positive ``i`` is
    its share of negatives below it, ``V10_i = sum_j v_j psi(s_i, s_j) / N``,
    and of a negative ``j`` the share of positives above it,
    ``V01_j = sum_i w_i psi(s_i, s_j) / P`` (``psi`` is 1 for a concordant
    pair, 1/2 for a tie, 0 otherwise; ``w``, ``v`` the rows' weights, 1
    without weights), so ``auc = sum_i w_i V10_i / P``. The variance is

        ``se**2 = sum_i w_i (V10_i - auc)**2 / (P (m - 1))
        + sum_j v_j (V01_j - auc)**2 / (N (k - 1))``

    where ``m`` and ``k`` are the class sizes: the row counts without
    weights (DeLong's ``S10 / m + S01 / k``), and with weights Kish's
    effective sizes ``m = P**2 / sum_i w_i**2``, ``k = N**2 / sum_j v_j**2``
    (so scaling every weight changes nothing, and equal weights give the
    unweighted interval). All rows at one distinct score share their
    placement value, so the sums are read from the state's points in
    O(distinct scores), and merged states give the interval of all their
    rows. The interval is ``auc -/+ z se`` (``z`` the normal quantile of
    the level), clipped to [0, 1]. With at most one positive or one negative
    (in effective size) the variance is undefined: ``auc_se`` is NaN and
    the interval [0, 1].

    With ``max_bins`` the placement values are those of the binned points
    (a bin at its lower edge, as in the curves), and the interval is
    widened by the certified bounds: ``[auc_lower - z se, auc_upper + z se]``.
    The two coincide with the exact ones while the state is exact.
    Weighted intervals need each class's sum of squared weights, kept since
    it was added to the state; a weighted state saved before refuses
    ``ci`` with a ``ValueError`` (its scores still load).

    The result also gives ``roc_curve()``, ``pr_curve()`` and
    ``average_precision()`` of the state it was read from, as this accumulator
    does. How the state is kept, exact and bounded, is told in
    :mod:`streammetrics.metrics.ranking`.

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

    Within a memory budget, exact: four batches of 2000 distinct scores pass
    a budget of 16 KiB, so the runs are spilled to temporary files, and the
    AUC is the in-memory one to the bit:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> in_memory = RankAUC()
    >>> with RankAUC(max_memory="16KiB", spill_dir=folder) as budgeted:
    ...     for k in range(4):
    ...         y = rng.integers(0, 2, 2000)
    ...         s = rng.normal(size=2000) + y
    ...         _ = budgeted.update(y, s), in_memory.update(y, s)
    ...     budgeted.spilled, budgeted.nbytes <= 16 * 1024
    ...     (budgeted + RankAUC().update([0, 1], [0.5, 0.7])).n  # they merge
    ...     budgeted.finalize().auc == in_memory.finalize().auc
    (True, True)
    8002
    True
    >>> import os
    >>> os.listdir(folder)  # the files went with the block
    []

    A 95 % confidence interval (DeLong), which merges like the AUC:

    >>> r = (shard_a + shard_b).finalize(ci=0.95)
    >>> abs(r.auc_se - (5 / 144) ** 0.5) < 1e-15  # S10 / 4 + S01 / 3 = (1/9) / 4 + (1/48) / 3
    True
    >>> round(r.auc_ci_lower, 6), r.auc_ci_upper
    (0.468116, 1.0)
    >>> e = exact.finalize(ci=0.95)
    >>> bool(e.auc_ci_lower < e.auc < e.auc_ci_upper), round(e.auc_se, 5)
    (True, 0.00047)
    """

    inputs = (Labels01("y", onehot=True), Finite("s", "scores"))
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lo", np.float64, (None,), merge="custom", nonneg=False, doc="scores, or bins' lower edges"),
        Field("hi", np.float64, (None,), merge="custom", nonneg=False, doc="bins' upper edges"),
        Field("counts", np.int64, (2, None), merge="custom", rows=True,
              doc="positives, negatives (no weights)"),
        Field("weights", np.float64, (2, None), merge="custom", doc="positive, negative weights"),
        Field("pairs", np.float64, (2, None), merge="custom", doc="bins' known and unknown pairs"),
        Field("wsq", np.float64, (2, 2), merge="custom", nonneg=False, optional=True,
              doc="squared weights of positives, negatives (pairs; once weights were seen)"),
        Field("wsq_rows", np.int64, (1,), merge="custom", optional=True, doc="rows counted in wsq"),
    )
    headline = ("auc",)
    intervals = True

    #: a new buffer is made as large as the limit at once for a batch of this many rows
    _PREALLOCATE_BATCH = 1 << 16
    #: ... with room for this many rows at most (32 MB of keys)
    _PREALLOCATE_ROWS = 1 << 22

    def __init__(self, max_bins: int | None = None, *, max_memory=None, spill_dir=None):
        self.max_bins = check_max_bins(max_bins)
        self.max_memory = parse_memory(max_memory)
        self.spill_dir = _check_spill_dir(spill_dir)
        if self.max_bins is not None and self.max_memory is not None:
            raise ValueError(
                "max_bins and max_memory exclude each other: max_bins bounds the state to "
                "2 * max_bins bins (approximate, in memory), max_memory keeps it exact and "
                "spills sorted runs to disk past the budget; give one of them")
        if self.spill_dir is not None and self.max_memory is None:
            raise ValueError("spill_dir is where runs are spilled past max_memory: give max_memory too")
        self._n = 0
        self._strategy = self._new_strategy(weighted=False)
        self._pending: Pending | None = None
        self._ops = None  # the query engine of the current state, once asked for
        # once weights were seen: each class's sum of squared weights (compensated
        # pairs) and the rows it counts (all rows, unless a part came from a state
        # saved before these sums were kept)
        self._wsq = np.zeros((2, 2))
        self._wsq_rows = 0

    def _new_strategy(self, weighted: bool):
        """The empty state: every distinct score, or at most ``2 max_bins`` items."""
        if self.max_bins is None:
            return Exact(weighted, self.max_memory, self.spill_dir)
        return Bounded(self.max_bins, weighted)

    def _settings(self):
        out = {"max_bins": self.max_bins}
        if self.max_memory is not None:
            out["max_memory"] = self.max_memory
        return out

    @classmethod
    def _from_settings(cls, settings):
        # the folder for temporary files is never saved, and never read from a file
        if "spill_dir" in settings:
            raise TypeError("spill_dir is not a saved setting")
        return cls(**settings)

    def _check_compatible(self, other) -> None:
        # the memory budget changes how the state is held, never what it holds:
        # budgeted and unbudgeted accumulators merge
        if type(other) is type(self) and other.max_bins == self.max_bins:
            return
        super()._check_compatible(other)

    @property
    def spilled(self) -> bool:
        """Whether part of the state is held in temporary files (``max_memory``)."""
        return isinstance(self._strategy, Exact) and self._strategy.spilled

    @property
    def spilled_bytes(self) -> int:
        """Bytes of the state held in temporary files (16 per entry, 24 with weights
        or counts past ``2**32``; 0 in memory)."""
        return self._strategy.disk_bytes if isinstance(self._strategy, Exact) else 0

    def close(self) -> None:
        """Forget every observation and remove the temporary files now (as
        :meth:`reset` does); the accumulator stays usable. Also on leaving a
        ``with`` block."""
        with self._guard:
            self._load(empty_state(self.fields, self))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __getstate__(self):
        d = super().__getstate__()
        d["spill_dir"] = self.spill_dir
        return d

    def __setstate__(self, d):
        super().__setstate__(d)
        if d.get("spill_dir") is not None:
            self.spill_dir = d["spill_dir"]
            if isinstance(self._strategy, Exact):
                self._strategy.spill_dir = self.spill_dir

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def weighted(self) -> bool:
        """Whether weights were seen: the state's masses are then sums of weights."""
        return self._strategy.weighted

    _weighted = weighted

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's arrays and the pending rows."""
        return 16 + (0 if self._pending is None else self._pending.nbytes) + self._strategy.nbytes

    # -------------------------------------------------------------- pending rows
    def _fold(self, arrays, w):
        y, s = arrays
        n = y.shape[0]
        self._ops = None
        if self._strategy.weighted and w.shape[0] == 0:
            w = np.ones(n)
        before = None
        if w.shape[0] and not self._strategy.weighted:
            before = self._unweighted_masses()  # the rows so far, each of weight 1
        status = self._append(y, s, w)
        if not status:
            if before is not None:
                self._add_squares(before, self._n)
            if w.shape[0]:
                class_squares(y, w, self._wsq)
                self._wsq_rows += n
            self._n += n
        return status

    def _unweighted_masses(self):
        """``[positives, negatives]`` of an unweighted state, pending rows included."""
        out = self._strategy.masses()
        buf = self._pending
        if buf is not None:
            out += (buf.front, buf.keys.shape[0] - buf.back)
        return out

    def _add_squares(self, squares, rows: int) -> None:
        """Count ``rows`` more rows whose squared weights per class are ``squares``."""
        compensated.merge(self._wsq, np.array([[squares[0], 0.0], [squares[1], 0.0]]))
        self._wsq_rows += int(rows)

    def _append(self, y, s, w) -> int:
        """Append one batch (``w`` empty without weights) to the pending rows;
        the kernel's status (nonzero: a bad value, nothing changed)."""
        n = y.shape[0]
        weighted = w.shape[0] > 0
        limit = self._strategy.pending_limit()
        buf = self._pending
        if buf is not None and buf.weighted == weighted and buf.rows + n <= limit:
            return buf.append(y, s, w, limit)
        # a new buffer takes the batch (a bad batch is refused here, before
        # any change); then the old rows are sorted in
        if n > limit:
            capacity = n
        elif n >= self._PREALLOCATE_BATCH:
            # a stream of large batches fills it: made large at once (up to
            # _PREALLOCATE_ROWS; past that it doubles as rows arrive)
            capacity = min(limit, max(n, self._PREALLOCATE_ROWS))
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
        limit = self._strategy.pending_limit()
        if new.rows > limit:
            self._flush()  # exact mode: a batch larger than the buffer is sorted at once
        elif n >= self._PREALLOCATE_BATCH and new.keys.shape[0] < min(limit, self._PREALLOCATE_ROWS):
            # the limit rose with the rows sorted in: one batch to move
            new.resize(min(limit, self._PREALLOCATE_ROWS))
        return 0

    def _flush(self) -> None:
        buf, self._pending = self._pending, None
        if buf is not None and buf.rows:
            self._strategy.take(buf)

    def flush(self):
        """Sort the pending rows into the state now, free their buffer, and (exact
        mode) merge the runs into one; return ``self``.

        Nothing a result shows changes: this only changes how the state is held,
        as a state read back from a file or a pickle is held (``finalize`` and
        the threshold queries of an exact state do it too).
        """
        with self._guard:
            self._flush()
            if isinstance(self._strategy, Exact):
                self._strategy.compact()
        return self

    # ------------------------------------------------------------------- state
    @property
    def _state(self):
        """The state as its declared fields, pending rows sorted in (a temporary copy)."""
        st = self._fields()
        self._strategy.export(self._pending, st)
        return st

    def _fields(self):
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._strategy.weighted)
        if self._strategy.weighted:
            st["wsq"][:] = self._wsq
            st["wsq_rows"][0] = self._wsq_rows
        return st

    def _load(self, state):
        self._n = int(state["n"][0])
        weighted = bool(state["weighted"][0])
        old = getattr(self, "_strategy", None)
        if isinstance(old, Exact):
            old.close()  # its temporary files go now
        self._strategy = self._new_strategy(weighted)
        self._strategy.load(state)
        self._pending = None
        self._ops = None
        self._wsq = state["wsq"].copy() if weighted else np.zeros((2, 2))
        self._wsq_rows = int(state["wsq_rows"][0]) if weighted else 0

    def spilled_parts(self):
        """``(state, strategy)``: the state held in memory (pending rows sorted in,
        a copy) and the exact strategy whose files hold the rest, for
        :meth:`merge` to copy them in chunks."""
        st = self._fields()
        self._strategy.export(self._pending, st, memory_only=True)
        return st, self._strategy

    def merge(self, other):
        """Fold ``other`` into ``self`` (see :meth:`Accumulator.merge`).

        When both have a memory budget and ``other`` has spilled, its files are
        copied into this accumulator's in chunks, never read into memory at once.
        """
        if type(other) is not RankAUC or other is self or self.max_memory is None or not other.spilled:
            return super().merge(other)
        self._check_compatible(other)
        with other._guard, self._guard:
            self._check_room(other.n, "merging")
            self._merge_state(*other.spilled_parts())
        return self

    def _merge_state(self, other, disk=None):
        """Fold the state ``other`` (and the runs on disk of the exact state ``disk``)."""
        self._ops = None
        theirs = bool(other["weighted"][0])
        if theirs and not self._strategy.weighted:
            self._flush()
            self._add_squares(self._strategy.masses(), self._n)
            self._strategy.to_float()
        if self._strategy.weighted:
            if theirs:
                compensated.merge(self._wsq, other["wsq"])
                self._wsq_rows += int(other["wsq_rows"][0])
            else:  # unweighted rows: each squared weight is 1
                masses = other["counts"].sum(axis=1).astype(np.float64)
                if disk is not None:
                    masses = masses + disk.disk_masses()
                self._add_squares(masses, int(other["n"][0]))
        self._strategy.add(other)
        if disk is not None:
            self._strategy.add_disk(disk)
        self._n += int(other["n"][0])

    def _clone(self):
        out = RankAUC.__new__(RankAUC)  # with its own lock
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_guard"})
        out.__dict__.update(_strategy=self._strategy.clone(), _ops=None, _wsq=self._wsq.copy(),
                            _pending=None if self._pending is None else self._pending.clone())
        return out

    def _check_state(self, state):
        _check_rank_state(state, self.max_bins)

    # ---------------------------------------------------------------- results
    def _engine(self) -> Points:
        """The query engine of the current state, built once per state. An exact
        state takes its pending rows and merges its runs into one first (in
        memory, or into one file once spilled: only how it is held changes)."""
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("RankAUC has no observations: call update() first")
            if self._ops is None:
                if isinstance(self._strategy, Exact):
                    buf, self._pending = self._pending, None
                    self._strategy.compact(buf)
                    self._ops = self._strategy.points(self._n)
                else:
                    self._ops = self._strategy.points(self._pending, self._n)
            return self._ops

    def _compute(self, ci=None) -> RankResult:
        if isinstance(self._strategy, Exact):
            points = self._engine()
            value, n_pos, n_neg = points.auc()
            lower = upper = value
            make = lambda: points  # noqa: E731 - a snapshot: the run is never changed in place
        else:
            value, lower, upper, n_pos, n_neg, make = self._strategy.result(self._pending, self._n)
            make = _once(make)
        values = {"auc": float(value)}
        meta = {"weighted": self._strategy.weighted, "max_bins": self.max_bins,
                "exact": self.max_bins is None or make().bins is None}
        if ci is not None:
            squares = self._class_squares() if self._strategy.weighted else None
            sums = make().delong_sums(float(value))
            values.update(delong_interval(sums, float(lower), float(upper), ci, squares))
            meta["ci"] = ci
        values.update(n_pos=n_pos, n_neg=n_neg, auc_lower=float(lower), auc_upper=float(upper), n=self._n)
        return RankResult("AUCScores", values, meta, make)

    def _class_squares(self):
        """Each class's sum of squared weights; ``ValueError`` when some rows' are unknown."""
        if self._wsq_rows != self._n:
            raise ValueError(
                f"{self._n - self._wsq_rows} weighted rows of this state were saved without their "
                "squared weights, which the AUC's interval needs for weighted rows (Kish's "
                "effective sample size); fold those rows again to get intervals"
            )
        return compensated.values(self._wsq)

    def _curve(self):
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("RankAUC has no observations: call update() first")
            points = self._strategy.run(self._pending)
        return curve_from_points(*points)


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
        For a binned state it is that of the binned scores. A spilled state
        (``max_memory``) reads it from its runs in chunks: the same value to
        1e-13 relative, not always to the last bit.

        >>> from streammetrics import RankAUC
        >>> RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).average_precision()
        0.833...
        """
        return self._engine().average_precision()

    def average_precision_bounds(self):
        """``(lower, upper)``: a certified interval holding the exact average precision.

        Equal to :meth:`average_precision` while the state is exact. For a
        binned state, the worst and best case over every order the rows of
        each bin could have (bins whose ranges overlap taken as one), so the
        AP of the rows themselves always lies within:
        ``finalize().average_precision_lower`` and ``_upper``.

        >>> import numpy as np
        >>> from streammetrics import RankAUC
        >>> y = np.tile([0, 1, 1, 0, 1], 200)
        >>> s = np.linspace(0, 1, 1000) + 0.3 * y
        >>> lower, upper = RankAUC(max_bins=10).update(y, s).average_precision_bounds()
        >>> from sklearn.metrics import average_precision_score
        >>> bool(lower <= average_precision_score(y, s) <= upper)
        True
        >>> RankAUC().update(y, s).average_precision_bounds()[0] == average_precision_score(y, s)
        True
        """
        return self._compute().average_precision_bounds()

    def at_threshold(self, t) -> BinaryResult:
        """The binary result at the threshold ``t``: rows with ``s >= t`` are called positive.

        Exactly what ``BinaryConfusion(threshold=t)`` gives on the same rows
        (counts, every guarded rate, ``n``), plus the field ``threshold``. The
        first query after a change sorts the pending rows in (as :meth:`flush`)
        and sums the counts of blocks of the distinct scores once; a query then
        reads the few blocks it needs (:mod:`.points`). ``t`` may be any real
        number, infinities included.

        With ``max_bins`` set, a bin counts as its lower edge (as in the
        curves), and the result also has certified bounds: ``tp_lower``,
        ``tp_upper``, ``fp_lower``, ``fp_upper`` and ``<rate>_lower``,
        ``<rate>_upper`` for accuracy, precision, recall, specificity, f1,
        balanced accuracy and jaccard (not MCC, which is not monotone in the
        counts). They differ only when ``t`` falls inside a bin.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.at_threshold(0.5)
        >>> r.tp, r.fp, r.fn, r.tn, r.recall
        (2, 1, 1, 1, 0.666...)
        """
        return self._engine().at_threshold(t)

    def threshold_for(self, *, recall=None, precision=None, fpr=None, specificity=None) -> BinaryResult:
        """The threshold that meets one target, and the binary result there.

        Give exactly one target in ``[0, 1]``; the candidates are the distinct
        scores and ``+inf`` (nothing called positive):

        * ``recall=r``: the highest threshold whose recall is at least ``r``
          (of those, the one with the fewest false positives);
        * ``precision=p``: the lowest threshold whose precision is at least
          ``p`` (the most true positives at that precision);
        * ``fpr=f``: the lowest threshold whose false positive rate is at
          most ``f`` (the most true positives within it: Neyman-Pearson);
        * ``specificity=s``: the lowest threshold whose specificity is at
          least ``s``.

        The result is :meth:`at_threshold` at that threshold (field
        ``threshold``) with the fields ``target`` and ``target_value``. A
        target that no threshold reaches (a precision above every one seen,
        a recall with no positive) raises ``ValueError`` saying the best
        reached.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.threshold_for(recall=0.9)
        >>> r.threshold, r.recall, r.fp
        (0.4, 1.0, 1)
        >>> acc.threshold_for(precision=1.0).threshold
        0.9
        """
        return self._engine().threshold_for(
            recall=recall, precision=precision, fpr=fpr, specificity=specificity)

    def best_threshold(self, score=None, *, cost=None) -> BinaryResult:
        """The threshold that maximises a score, or minimises a cost, and the result there.

        ``score`` is one of ``"f1"`` (the default), ``"mcc"``, ``"youden"``
        (recall + specificity - 1), ``"balanced_accuracy"``, ``"accuracy"``,
        ``"jaccard"``; the result (:meth:`at_threshold` there) also has
        ``score`` and ``best``, its value. ``cost`` instead is a 2 x 2 matrix
        ``[[tn, fp], [fn, tp]]`` (rows: actual 0, 1; columns: predicted 0, 1,
        as ``confusion_matrix`` lays them out) of the cost of one row in each
        cell; the threshold minimises the total, given as the field ``cost``.
        Every distinct score and ``+inf`` are candidates; of equally good
        ones (equal to a relative 1e-12, as the same fraction rounded two ways
        is) the highest threshold is taken.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1, 1], [0.1, 0.6, 0.4, 0.6, 0.9])
        >>> r = acc.best_threshold("f1")
        >>> r.threshold, round(r.f1, 4)
        (0.4, 0.8571)
        >>> acc.best_threshold(cost=[[0, 1], [5, 0]]).threshold  # a miss costs 5 false alarms
        0.4
        """
        return self._engine().best_threshold(score, cost)

    def partial_auc(self, max_fpr, *, mcclish: bool = False) -> float:
        """The area under the ROC curve for false positive rates up to ``max_fpr``.

        ``max_fpr`` lies in ``(0, 1]``; the curve is linear between its points
        (tied scores give a diagonal segment, as the midrank AUC counts them),
        so ``max_fpr=1`` gives the AUC. With ``mcclish=True`` the area is
        standardised as McClish (1989) does and
        ``sklearn.metrics.roc_auc_score(y, s, max_fpr=...)`` reports it:
        ``(1 + (A - min) / (max - min)) / 2`` with ``min = max_fpr**2 / 2``
        (the chance curve's area) and ``max = max_fpr``, so 0.5 is chance and
        1 is perfect. With one class only it is 0 (the guard; scikit-learn
        raises). For a binned state it is the area under the binned curve.
        Without weights each step's doubled trapezoid is an integer count of
        pairs: they are summed exactly and divided once (the cut step at
        ``max_fpr`` adds one float), so the area is the exact one to a few
        roundings whichever way the state is held (in memory, unmerged,
        spilled), and ``max_fpr=1`` gives the AUC's bits.

        >>> from streammetrics import RankAUC
        >>> acc = RankAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
        >>> acc.partial_auc(0.5), acc.partial_auc(1.0) == acc.finalize().auc
        (0.25, True)
        >>> acc.partial_auc(0.5, mcclish=True)  # roc_auc_score(..., max_fpr=0.5)
        0.666...
        """
        return self._engine().partial_auc(max_fpr, mcclish)


def _once(make):
    """``make``, called at most once: its value kept."""
    got = []

    def once():
        if not got:
            got.append(make())
        return got[0]
    return once


def delong_interval(sums, lower: float, upper: float, level: float, squares=None) -> dict:
    """``auc_ci_lower``, ``auc_ci_upper`` and ``auc_se`` from DeLong's sums
    ``(theta, P, N, ss_pos, ss_neg)`` of a rank state's points
    (:meth:`~.points.Points.delong_sums`) and, for weighted rows, each class's
    sum of squared weights ``squares``.

    The variance is ``ss_pos / (P (m - 1)) + ss_neg / (N (k - 1))``, with ``P``,
    ``N`` the class masses and ``m``, ``k`` the classes' sizes: their row
    counts, or with weights Kish's effective sizes ``P**2 / sum w**2`` and
    ``N**2 / sum v**2``. The interval is ``[lower - z se, upper + z se]``
    clipped to [0, 1], ``z`` the normal quantile of the level. With a class
    of effective size at most 1 the variance is undefined: ``auc_se`` is NaN
    and the interval [0, 1].
    """
    _, total_pos, total_neg, ss_pos, ss_neg = sums
    if squares is None:
        m, k = total_pos, total_neg
    else:
        m = total_pos * total_pos / squares[0] if squares[0] > 0 else 0.0
        k = total_neg * total_neg / squares[1] if squares[1] > 0 else 0.0
    if not (m > 1.0 and k > 1.0):
        return {"auc_ci_lower": 0.0, "auc_ci_upper": 1.0, "auc_se": float("nan")}
    var = ss_pos / (total_pos * (m - 1.0)) + ss_neg / (total_neg * (k - 1.0))
    se = math.sqrt(max(var, 0.0))
    half = z_of(level) * se
    return {"auc_ci_lower": max(lower - half, 0.0), "auc_ci_upper": min(upper + half, 1.0), "auc_se": se}


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
        if not weighted and (np.any(ab > n) or count_total(ab) != n):
            raise ValueError("the counts do not add up to the observation count")
    if state["wsq_rows"][0] > n:
        raise ValueError("more rows counted in 'wsq' than observations")
    if np.any(compensated.values(state["wsq"]) < 0):
        raise ValueError("entry 'wsq' holds negative sums")
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
    with np.errstate(over="ignore", invalid="ignore"):  # masses near 1e308: compared as infinities
        pn = ab[0].astype(np.float64) * ab[1]
        tol = 1e-9 * pn + 1e-300
        if np.any(pairs[0] + 2 * pairs[1] > 2 * pn + 2 * tol):
            raise ValueError("a bin's pair masses exceed its positive x negative mass")
        if np.any(point & ((pairs[1] != 0) | (np.abs(pairs[0] - pn) > tol))):
            raise ValueError("a single-score entry must hold ties only")
