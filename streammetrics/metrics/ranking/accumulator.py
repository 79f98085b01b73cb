"""The area under the ROC curve, ``U_pos / safe(n_pos * n_neg)`` with midranks: :class:`RankAUC` over its two state
strategies, exact (:mod:`.exact`) and bounded (:mod:`.bounded`)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ..._kernels import compensated
from ..._kernels.intervals import class_squares
from ..._protocol.errors import NoObservationsError
from ..._protocol.inputs import Finite
from ..._protocol.state import Field
from ..._protocol.validation import check_count
from ..intervals import z_of
from ..labels import BinaryLabels, PositiveLabel, positive_label
from .bounded import Bounded
from .curves import RankQueries, RankResult
from .exact import Exact
from .held import HeldRuns
from .points import Points
from .pool import MemoryPool
from .saved import check_rank_state


def check_one_mode(max_bins, max_memory, what: str = "the") -> None:
    if max_bins is not None and max_memory is not None:
        raise ValueError(
            f"max_bins and max_memory exclude each other: max_bins bounds {what} state (approximate), max_memory "
            "keeps it exact and spills sorted runs to disk past the budget; give one of them"
        )


def check_max_bins(max_bins):
    return None if max_bins is None else check_count(max_bins, "max_bins", 1, True)


class RankAUC(RankQueries, HeldRuns):
    """Streaming, mergeable AUC (the Mann–Whitney U), exact or in bounded memory.

    ``update(y, s)`` takes 0/1 labels (or the n x 2 one-hot matrix) and finite scores, higher meaning "more likely
    positive"; ``sample_weight`` counts each pair with the product of its weights.

    Parameters
    ----------
    max_bins : int, optional
        ``None`` (the default) keeps every distinct score (24 bytes each), exact. ``B`` bounds the state to ``2 B``
        entries and reports a certified interval holding the exact AUC.
    max_memory : int or str, optional
        A memory budget for the exact state (bytes, or ``"1GB"``, ``"512MiB"``; at least 4096): past a quarter of it
        sorted runs spill to temporary files, read back in chunks, with the in-memory results (the average precision
        to 1e-13 relative). Excludes ``max_bins``. The budget is shared by this accumulator and every copy made from
        it (a :class:`~streammetrics.Sliced`'s slices, an Evaluator's copies): together they keep at most half of it
        in runs and pending rows (:attr:`memory_used`), those holding the most spilling first (:mod:`.pool`). A
        loaded or unpickled accumulator has a budget of its own.
    pos_label : hashable, optional
        The positive class of labels of any kind (``"spam"``, ``2``): ``y == pos_label`` is positive, every other
        label negative. ``None`` (the default) takes 0/1 labels.
    spill_dir : str or os.PathLike, optional
        The existing folder of those files (default ``tempfile.gettempdir()``); needs ``max_memory``, not saved. The
        files go on :meth:`reset`, :meth:`close`, leaving ``with``, garbage collection and normal exit; a killed
        process's with the next spill.

    ``finalize()`` gives ``auc`` (0 when a class is absent, where scikit-learn returns NaN), ``n_pos``, ``n_neg`` (sums
    of weights once weights were seen), ``auc_lower`` and ``auc_upper`` (``auc`` while exact) and ``n`` (rows);
    ``finalize(ci=level)`` adds DeLong's ``auc_ci_lower``, ``auc_ci_upper`` and ``auc_se`` (Kish's effective class sizes
    with weights; widened by a binned state's bounds). The result answers the curves, average precision and threshold
    queries of the state it was read from.

    >>> from streammetrics import RankAUC
    >>> shard_a = RankAUC().update([0, 0, 0, 1], [0.1, 0.35, 0.3, 0.8])
    >>> shard_b = RankAUC().update([1, 1, 1], [0.4, 0.9, 0.2])
    >>> r = (shard_a + shard_b).finalize(ci=0.95)
    >>> round(r.auc, 6), r.n_pos, r.n_neg, round(r.auc_ci_lower, 6)
    (0.833333, 4, 3, 0.468116)
    >>> b = RankAUC(max_bins=2).update([0, 0, 0, 1, 1, 1, 1], [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]).finalize()
    >>> bool(b.auc_lower <= r.auc <= b.auc_upper)
    True
    """

    inputs = (
        BinaryLabels("y", "pass pos_label= (one class against the rest), or use MulticlassRankAUC", onehot=True),
        Finite("s", "scores"),
    )
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="custom"),
        Field("lo", np.float64, (None,), merge="custom", nonneg=False, doc="scores, or bins' lower edges"),
        Field("hi", np.float64, (None,), merge="custom", nonneg=False, doc="bins' upper edges"),
        Field("counts", np.int64, (2, None), merge="custom", rows=True, doc="positives, negatives (no weights)"),
        Field("weights", np.float64, (2, None), merge="custom", doc="positive, negative weights"),
        Field("pairs", np.float64, (2, None), merge="custom", doc="bins' known and unknown pairs"),
        Field("wsq", np.float64, (2, 2), merge="custom", nonneg=False, optional=True, doc="squared weights per class"),
        Field("wsq_rows", np.int64, (1,), merge="custom", optional=True, doc="rows counted in wsq"),
        Field("score_bits", np.int64, (1,), merge="custom", optional=True, doc="widest float width of the scores"),
    )
    headline = ("auc",)
    intervals = True
    _FIXED_BYTES = 16

    def __init__(self, max_bins: int | None = None, *, max_memory=None, spill_dir=None, pos_label=None):
        self.pos_label = positive_label(pos_label)
        if self.pos_label is not None:
            self.inputs = (PositiveLabel("y", self.pos_label), self.inputs[1])
        self.max_bins = check_max_bins(max_bins)
        self._init_budget(max_memory, spill_dir)
        check_one_mode(self.max_bins, self.max_memory)
        self._n = 0
        self._strategy = self._new_strategy(weighted=False)
        self._pending = None
        self._ops = None  # the query engine of the current state, once asked for
        self._wsq = np.zeros((2, 2))  # each class's compensated sum of squared weights, and the rows it counts
        self._wsq_rows = 0
        self._bits = 0  # the widest float width of the scores seen (16, 32 or 64; 0 before any)
        #: the budget shared with the copies (None without max_memory)
        self._pool = None if self.max_memory is None else MemoryPool(self.max_memory)
        self._note()

    def _new_strategy(self, weighted: bool):
        return super()._new_strategy(weighted) if self.max_bins is None else Bounded(self.max_bins, weighted)

    def _settings(self):
        optional = {k: getattr(self, k) for k in ("max_memory", "pos_label") if getattr(self, k) is not None}
        return {"max_bins": self.max_bins} | optional

    @classmethod
    def from_settings(cls, settings):
        if "spill_dir" in settings:
            raise TypeError("spill_dir is not a saved setting")
        return cls(**settings)

    @property
    def memory_used(self) -> int:
        """Bytes held in memory by every state sharing this one's ``max_memory`` (its :attr:`nbytes` without)."""
        return self.nbytes if self._pool is None else self._pool.total

    def spill(self, *, wait: bool = True) -> bool:
        """Write the pending rows and the runs in memory to temporary files now, as past the budget (``max_memory``);
        return whether it did: ``False`` without a budget, or with ``wait=False`` while another thread holds this
        accumulator. A failed write raises ``OSError`` and leaves the state in memory as it was."""
        if self._pool is None or not self._guard.acquire(blocking=wait):
            return False
        try:
            self._ops = None
            self._flush()
            self._strategy.spill()
            self._note()
        finally:
            self._guard.release()
        return True

    @property
    def spilled_bytes(self) -> int:
        """Bytes of the state held in temporary files (16 or 24 per entry; 0 in memory)."""
        return self._strategy.disk_bytes if isinstance(self._strategy, Exact) else 0

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
    def weighted(self) -> bool:
        """Whether weights were seen: the state's masses are then sums of weights."""
        return self._strategy.weighted

    def _fold(self, arrays, w):
        y, s = arrays
        n = y.shape[0]
        self._ops = None
        if self._strategy.weighted and w.shape[0] == 0:
            w = np.ones(n)
        before, buf = None, self._pending
        if w.shape[0] and not self._strategy.weighted:  # the rows so far, each of weight 1
            before = self._strategy.masses() + (0 if buf is None else (buf.front, buf.keys.shape[0] - buf.back))
        self._reserve(n * (16 if w.shape[0] else 8))
        status = self._append(y, s, w)
        self._note()
        if not status:
            if before is not None:
                self._add_squares(before, self._n)
            if w.shape[0]:
                class_squares(y, w, self._wsq)
                self._wsq_rows += n
            self._n += n
            source = (s.dtype.metadata or {}).get("source")
            self._bits = max(self._bits, 64 if source is None else 8 * source.itemsize)
        return status

    def _add_squares(self, squares, rows: int) -> None:
        compensated.merge(self._wsq, np.array([[squares[0], 0.0], [squares[1], 0.0]]))
        self._wsq_rows += int(rows)

    def flush(self):
        """Sort the pending rows in and (exact mode) merge the runs into one; return ``self``."""
        with self._guard:
            self._flush()
            self._strategy.compact()
            self._note()
        return self

    def _fields(self):
        st = super()._fields()
        st["score_bits"][0] = self._bits
        if self._strategy.weighted:
            st["wsq"][:] = self._wsq
            st["wsq_rows"][0] = self._wsq_rows
        return st

    def _load(self, state):
        super()._load(state)
        weighted = self._strategy.weighted
        self._ops = None
        self._wsq = state["wsq"].copy() if weighted else np.zeros((2, 2))
        self._wsq_rows = int(state["wsq_rows"][0]) if weighted else 0
        self._bits = _bits_of(state)
        self._note()

    def _merge_state(self, other, disk=None):
        self._ops = None
        squares = self._wsq.copy(), self._wsq_rows
        try:
            super()._merge_state(other, disk)
        except BaseException:
            self._wsq, self._wsq_rows = squares
            raise
        self._bits = max(self._bits, _bits_of(other))

    def _merge_side(self, other, disk, floats: bool) -> None:
        """The squared weights: of this state's rows when they become weighted, and of ``other``'s."""
        if floats:
            self._add_squares(self._strategy.masses(), self._n)
        if not (floats or self._strategy.weighted):
            return
        if other["weighted"][0]:
            compensated.merge(self._wsq, other["wsq"])
            self._wsq_rows += int(other["wsq_rows"][0])
        else:  # unweighted rows: each squared weight is 1
            masses = other["counts"].sum(axis=1).astype(np.float64)
            if disk is not None:
                masses = masses + disk.disk_masses()
            self._add_squares(masses, int(other["n"][0]))

    def _clone(self):
        out = RankAUC.__new__(RankAUC)  # with its own lock
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_guard"})
        buf = None if self._pending is None else self._pending.clone()
        out.__dict__.update(_strategy=self._strategy.clone(), _ops=None, _wsq=self._wsq.copy(), _pending=buf)
        if self._pool is not None:  # the copy shares the budget
            self._pool.note(out, out.nbytes)
        return out

    def _check_state(self, state):
        check_rank_state(state, self.max_bins)

    def _engine(self) -> Points:
        """The query engine of the current state, built once per state."""
        with self._guard:
            if self._n == 0:
                raise NoObservationsError("RankAUC has no observations: call update() first")
            if self._ops is None:
                self._reserve(0 if self._pending is None else 2 * self._pending.nbytes)  # (rows become entries)
                buf, self._pending = self._pending, None
                self._strategy.compact(buf)
                self._ops = self._strategy.points(self._n)
                self._ops.source = SCORE_DTYPES.get(self._bits)
                self._note()
            return self._ops

    def _compute(self, ci=None) -> RankResult:
        if isinstance(self._strategy, Exact):
            points = self._engine()
            value, n_pos, n_neg = points.auc()
            lower = upper = value
            make = lambda: points  # noqa: E731 - a snapshot: the run is never changed in place
        else:
            value, lower, upper, n_pos, n_neg, make = self._strategy.result(self._pending, self._n)
            make = functools.cache(make)
        values = {"auc": float(value)}
        meta = {
            "weighted": self._strategy.weighted,
            "max_bins": self.max_bins,
            "exact": self.max_bins is None or not make().binned,
        }
        if ci is not None:
            squares = self._class_squares() if self._strategy.weighted else None
            sums = make().delong_sums(float(value))
            values.update(delong_interval(sums, float(lower), float(upper), ci, squares))
            meta["ci"] = ci
        values.update(n_pos=n_pos, n_neg=n_neg, auc_lower=float(lower), auc_upper=float(upper), n=self._n)
        return RankResult("AUCScores", values, meta, make)

    def _class_squares(self):
        if self._wsq_rows != self._n:
            raise ValueError(
                f"{self._n - self._wsq_rows} weighted rows of this state were saved without their squared weights, "
                "which the AUC's interval needs (Kish's effective sample size); fold those rows again"
            )
        return compensated.values(self._wsq)

    def average_precision(self) -> float:
        """Average precision ``sum_k (R_k - R_{k-1}) P_k`` (0 with no positive).

        >>> from streammetrics import RankAUC
        >>> RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).average_precision()
        0.833...
        """
        return self._engine().average_precision()

    def average_precision_bounds(self):
        """``(lower, upper)``: a certified interval holding the exact average precision (both
        :meth:`average_precision` while the state is exact).

        >>> import numpy as np
        >>> from streammetrics import RankAUC
        >>> y = np.tile([0, 1, 1, 0, 1], 200)
        >>> s = np.linspace(0, 1, 1000) + 0.3 * y
        >>> lower, upper = RankAUC(max_bins=10).update(y, s).average_precision_bounds()
        >>> from sklearn.metrics import average_precision_score
        >>> bool(lower <= average_precision_score(y, s) <= upper)
        True
        """
        return self._compute().average_precision_bounds()


def delong_interval(sums, lower: float, upper: float, level: float, squares=None) -> dict:
    """``auc_ci_lower``, ``auc_ci_upper`` and ``auc_se`` from DeLong's sums ``(theta, P, N, ss_pos, ss_neg)`` and,
    with weights, each class's sum of squared weights ``squares``.
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


#: the float dtype a threshold is rounded to, by the widest score width seen (numpy's promotion)
SCORE_DTYPES = {16: np.dtype(np.float16), 32: np.dtype(np.float32)}


def _bits_of(state) -> int:
    """The widest score width of a state (0 with rows: saved before the width was kept, so float64)."""
    bits = int(state["score_bits"][0]) if "score_bits" in state else 0
    return 64 if bits == 0 and int(state["n"][0]) else bits
