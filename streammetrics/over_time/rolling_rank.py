"""The window of a :class:`~streammetrics.Rolling` exact :class:`~streammetrics.RankAUC`: its
rows in a ring and sorted levels of their scores (kernels in
:mod:`streammetrics._kernels.order_stats`)."""

from __future__ import annotations

import math

import numpy as np

from .._kernels.order_stats import leaving, merge_base, push_rows
from .._protocol.errors import StateFileError
from .._protocol.state import Field
from ..metrics.ranking.accumulator import SCORE_DTYPES, delong_interval
from ..metrics.ranking.curves import RankResult
from ..metrics.ranking.points import Points
from .rolling_terms import Ring, window_fields

#: the largest window: counts below it keep ``2U`` an exact integer in float64
MAX_WINDOW = 10**8


class RankWindow(Ring):
    """The last ``window`` rows of an exact RankAUC, their U kept row by row."""

    fields = window_fields(
        Field("y", np.int8, (None,), merge="custom", doc="each row's label"),
        Field("s", np.float64, (None,), merge="custom", nonneg=False, doc="each row's score"),
        Field(
            "score_bits", np.uint8, (None,), merge="custom", nonneg=False, optional=True, doc="each row's score width"
        ),
    )
    columns = ("y", "s", "weights", "weighted", "score_bits")

    def __init__(self, template, window: int):
        if window > MAX_WINDOW:
            raise ValueError(f"window must be at most {MAX_WINDOW:,} rows for RankAUC, got {window}")
        self.template, self.window = template, window
        # each row's class (0 positive), score, weight, whether it came with one, and score width (16, 32 or 64)
        self.rings = tuple(np.zeros(window, dtype) for dtype in (np.int8, np.float64, np.float64, np.uint8, np.uint8))
        self.ring_c, self.ring_s, self.ring_w, _, self.ring_b = self.rings
        self.meta = np.zeros(6, np.int64)
        self.u2 = np.zeros((1, 2))
        self.tot = np.zeros((2, 2))
        # the base (a window's entries), the pending entries (two windows'), and a scratch the base merges into
        self.levels = [
            (np.zeros(size), np.zeros((2, size)), np.zeros((2, size), np.int32), np.zeros((2, size + 1)))
            for size in (window, 2 * window)
        ]
        self.scratch = (np.zeros(window), np.zeros((2, window)), np.zeros((2, window), np.int32))

    def _push(self, y, s, w, flags, bits) -> None:
        cls = (1 - y).astype(np.int8)
        base, pend = self.levels
        gone = np.argsort(leaving(self.ring_s, self.meta, y.shape[0]))
        order = np.argsort(s)
        m, meta = y.shape[0], self.meta
        if meta[3] + gone.shape[0] + m > pend[0].shape[0]:  # room for the batch's pending entries
            self._merge()
        push_rows(cls, s, w, flags, order, gone, *self.rings[:4], *base, *pend, meta, self.u2, self.tot)
        # into the base past sqrt(window * m) pending entries, or once the last weighted row left
        if meta[3] > math.sqrt(float(self.window) * m) or (meta[5] and not meta[4]):
            self._merge()
        start = (self.head + self.n - m) % self.window  # the pushed rows' slots: at most two runs
        cut = min(m, self.window - start)
        self.ring_b[start : start + cut] = bits[:cut]
        self.ring_b[: m - cut] = bits[cut:]

    def _merge(self) -> None:
        """Merge the pending entries into the base (``2U`` and the totals summed afresh): into the scratch,
        which becomes the base, the old base the scratch."""
        base = self.levels[0]
        merge_base(*base, *self.levels[1], *self.scratch, self.meta, self.u2, self.tot)
        self.levels[0], self.scratch = (*self.scratch, base[3]), base[:3]

    def rows_of(self, batch, lo: int) -> dict:
        """Rows ``lo ..`` of a checked batch, as :meth:`export` gives rows."""
        y, s = batch.arrays_for(self.template.inputs)
        source = (s.dtype.metadata or {}).get("source")
        return {
            "y": y[lo:].astype(np.int8),
            "s": np.ascontiguousarray(s[lo:], np.float64),
            **self.weights_of(batch, lo),
            "score_bits": np.full(batch.n - lo, 64 if source is None else 8 * source.itemsize, np.uint8),
        }

    def source(self):
        """The float dtype a threshold is rounded to: that of the widest scores in the window, as
        :class:`~streammetrics.RankAUC` fed the window's rows keeps it (None: float64)."""
        bits = int(self.ring_b[self.order()].max()) if self.n else 64
        return SCORE_DTYPES.get(bits)

    # ----------------------------------------------------------------- queries
    def masses(self):
        """``(n_pos, n_neg, weighted)``: counts (ints) while no row of the window came with a weight."""
        weighted = bool(self.meta[4])
        p, q = (float(self.tot[c, 0] + self.tot[c, 1]) for c in (0, 1))
        return (p, q, True) if weighted else (round(p), round(q), False)

    def auc(self) -> float:
        p, q, weighted = self.masses()
        if not (p > 0 and q > 0):
            return 0.0
        u2 = float(self.u2[0, 0] + self.u2[0, 1])
        if not weighted:  # 2U and n_pos n_neg are exact integers: one rounding, as RankAUC's
            return round(u2) / (2 * (p * q))
        return min(max(u2 / (2.0 * p * q), 0.0), 1.0)

    def run(self):
        """``((scores, ab), source)`` of the window (:meth:`source`): without weights, the counts of its entries
        merged into the base (``2U`` and the totals kept as they were); with
        weights, each score's weights summed from the rows (those that left
        cancel in the entries only to rounding)."""
        if self.meta[4]:
            j = self.order()
            order = np.argsort(self.ring_s[j], kind="stable")
            s, c, w = self.ring_s[j][order], self.ring_c[j][order], self.ring_w[j][order]
            starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
            ab = np.vstack([np.add.reduceat(np.where(c == k, w, 0.0), starts) for k in (0, 1)])
            held = ab.any(axis=0)  # (a score of rows of weight 0 only is no point, as in RankAUC)
            return (s[starts][held], ab[:, held]), self.source()
        kept = self.u2.copy(), self.tot.copy()
        self._merge()
        self.u2[:], self.tot[:] = kept
        n = int(self.meta[2])
        return (self.levels[0][0][:n].copy(), np.rint(self.levels[0][1][:, :n]).astype(np.int64)), self.source()

    def result(self, make, ci=None) -> RankResult:
        """The window's RankAUC result; ``make()`` gives its points when a query asks."""
        value = self.auc()
        p, q, weighted = self.masses()
        values = {"auc": value}
        meta = {"weighted": weighted, "max_bins": None, "exact": True}
        if ci is not None:
            sums = make().delong_sums(value)
            values.update(delong_interval(sums, value, value, ci, self._squares() if weighted else None))
            meta["ci"] = ci
        values.update(n_pos=p, n_neg=q, auc_lower=value, auc_upper=value, n=self.n)
        return RankResult("AUCScores", values, meta, make)

    def points(self, snapshot) -> Points:
        """The query engine of a :meth:`run` snapshot."""
        run, source = snapshot
        points = Points(run, self.n, bool(self.meta[4]))
        points.source = source
        return points

    def _squares(self) -> np.ndarray:
        j = self.order()
        w2 = self.ring_w[j] ** 2
        c = self.ring_c[j]
        return np.array([w2[c == 0].sum(), w2[c == 1].sum()])

    def accumulator(self):
        """A RankAUC holding the window's rows."""
        rows = self.export()
        acc = self.template.copy()
        for bits in np.unique(rows["score_bits"]):  # each row's score in its own width (exact: it was one)
            dtype = SCORE_DTYPES.get(int(bits), np.float64)
            for weighted in (0, 1):
                on = (rows["score_bits"] == bits) & (rows["weighted"] == weighted)
                if on.any():
                    w = rows["weights"][on] if weighted else None
                    acc.update(rows["y"][on], rows["s"][on].astype(dtype), sample_weight=w)
        return acc

    # ------------------------------------------------------------ rows as arrays
    def export(self) -> dict:
        rows = super().export()
        rows["y"] = (1 - rows["y"]).astype(np.int8)  # (the ring holds the class: 0 positive)
        return rows

    @staticmethod
    def default(name: str, n: int) -> np.ndarray:
        """An optional entry a state saved before it lacks: its rows' scores were float64."""
        return np.full(n, 64, np.uint8)

    def check(self, rows: dict, n: int) -> None:
        y, s = rows["y"], rows["s"]
        if n and ((y < 0).any() or (y > 1).any()):
            raise StateFileError("entry 'y' must hold labels 0 or 1")
        if not np.isfinite(s).all():
            raise StateFileError("entry 's' holds NaN or infinite scores")
        bits = rows["score_bits"]
        if n and not np.isin(bits, (16, 32, 64)).all():
            raise StateFileError("entry 'score_bits' must hold 16, 32 or 64")
        for width, dtype in SCORE_DTYPES.items():
            on = s[bits == width]
            with np.errstate(over="ignore"):
                if (on.astype(dtype).astype(np.float64) != on).any():
                    raise StateFileError(f"entry 's' holds a score that is no float{width}, as 'score_bits' says")
        self.check_weights(rows, n)
