"""The window of a :class:`~streammetrics.Rolling` linear template: its rows' declared terms
in a ring and their sums (kernels in :mod:`streammetrics._kernels.rolling`)."""

from __future__ import annotations

import numpy as np

from .._kernels.rolling import push_terms
from .._protocol.errors import StateFileError
from .._protocol.state import Field
from .._protocol.terms import Sums

_NO_FLAGS = np.zeros(0, np.uint8)  # every row of a batch in the group its weights tell


def window_fields(*rows: Field) -> tuple:
    """The entries of a saved window whose rows are ``rows`` (keys: when rows come with keys), oldest first."""
    return (
        Field("n", np.int64, (1,)),
        *rows,
        Field("weights", np.float64, (None,), merge="custom", doc="each row's weight (1 without)"),
        Field("weighted", np.uint8, (None,), merge="custom", nonneg=False, doc="whether each row came with a weight"),
        Field("keys", np.float64, (None,), merge="custom", nonneg=False, doc="each row's key, or none"),
    )


class Ring:
    """What both windows share: rows in a ring of ``window`` slots, ``meta[0]`` the oldest's slot, ``meta[1]`` the
    rows held; ``rings`` holds the ring of each of the ``columns``."""

    window: int
    meta: np.ndarray
    columns: tuple
    rings: tuple

    @property
    def n(self) -> int:
        return int(self.meta[1])

    @property
    def head(self) -> int:
        """Where the oldest row lies in the ring."""
        return int(self.meta[0])

    def order(self) -> np.ndarray:
        """The ring slots of the rows, oldest first."""
        return (self.head + np.arange(self.n)) % self.window

    @staticmethod
    def weights_of(batch, lo: int) -> dict:
        """Rows ``lo ..`` of a batch: their weights (1 without) and whether each came with one."""
        m = batch.n - lo
        weighted = batch.weights.shape[0] > 0
        return {"weights": batch.weights[lo:] if weighted else np.ones(m), "weighted": np.full(m, weighted, np.uint8)}

    def push(self, batch, lo: int) -> int:
        """Push rows ``lo ..`` of a checked batch of the template's inputs: 0 (:class:`TermsWindow`'s own
        push refuses a bad value)."""
        rows = self.rows_of(batch, lo)
        self._push(*(rows[k] for k in self.columns))
        return 0

    def export(self) -> dict:
        """The window's rows, oldest first: each column (its terms or scores, weights, whether it came with one)."""
        j = self.order()
        return {k: ring[j] for k, ring in zip(self.columns, self.rings)}

    def take(self, rows: dict, idx: np.ndarray) -> None:
        """Push rows ``idx`` of ``rows`` (as :meth:`export` gives them)."""
        if idx.shape[0]:
            self._push(*(rows[k][idx] for k in self.columns))

    @staticmethod
    def check_weights(rows: dict, n: int) -> None:
        """Refuse flags other than 0 and 1, and a weight other than 1 for a row that came without."""
        w, flag = rows["weights"], rows["weighted"]
        if n and (flag > 1).any():
            raise StateFileError("entry 'weighted' must hold 0 or 1")
        if n and (w[flag == 0] != 1.0).any():
            raise StateFileError("a row that came without a weight has a weight other than 1")


class TermsWindow(Ring):
    """The last ``window`` rows of a template that declares its row terms."""

    fields = window_fields(
        Field("slots", np.int32, (None, None), merge="custom", doc="each row's term slots"),
        Field("values", np.float64, (None, None), merge="custom", nonneg=False, doc="each row's term values"),
    )
    columns = ("slots", "values", "weights", "weighted")

    def __init__(self, template, window: int):
        terms = template.row_terms()
        self.template, self.terms, self.window = template, terms, window
        size, width = terms.size, terms.width
        self.counted = terms.counted
        self.powers = terms.second if terms.second is not None else np.zeros(size, np.uint8)
        #: whether each group's float sums are kept (rows without weights: not when counts describe them)
        self.summed = np.array([not terms.counts_only, 1], np.uint8)
        self.ring_s = np.zeros((window, width), np.int32)
        self.ring_v = np.zeros((window, width))
        self.ring_w = np.zeros(window)
        self.ring_g = np.zeros(window, np.uint8)
        self.rings = self.ring_s, self.ring_v, self.ring_w, self.ring_g
        self.flat = self.ring_s.reshape(-1), self.ring_v.reshape(-1)  # (views: the kernel's flat rings)
        self.meta = np.zeros(3, np.int64)
        self.ints = np.zeros((2, size), np.int64)
        self.rows = np.zeros(2, np.int64)
        self.pairs = np.zeros((2, size, 2))
        self.second = np.zeros((2 if terms.second is not None else 0, size, 2))
        self.scratch = np.empty((0, width), np.int32), np.empty((0, width))

    def _push(self, slots, values, w, flags) -> None:
        push_terms(
            slots.reshape(-1), values.reshape(-1), w, flags, self.powers, self.summed, *self.flat,
            self.ring_w, self.ring_g, self.meta, self.ints, self.rows, self.pairs, self.second,
        )  # fmt: skip

    def push(self, batch, lo: int) -> int:
        """Push rows ``lo ..`` of a batch: 0, or 1 where the terms kernel finds a bad value (nothing pushed).
        The terms are formed in a scratch kept between batches, the rows' group told by ``w`` alone."""
        m = batch.n - lo
        if self.scratch[0].shape[0] < m:
            self.scratch = np.empty((m, self.terms.width), np.int32), np.empty((m, self.terms.width))
        slots, values = self.scratch[0][:m], self.scratch[1][:m]
        if self.terms.fill(batch, lo, slots, values, 0, 0):
            return 1
        self._push(slots, values, batch.weights[lo:], _NO_FLAGS)  # (no weights: still empty)
        return 0

    def rows_of(self, batch, lo: int) -> dict | None:
        """Rows ``lo ..`` of a batch, as :meth:`export` gives rows; ``None`` where the terms kernel
        finds a bad value."""
        m = batch.n - lo
        slots, values = np.empty((m, self.terms.width), np.int32), np.empty((m, self.terms.width))
        if self.terms.fill(batch, lo, slots, values, 0, 0):
            return None
        return {"slots": slots, "values": values, **self.weights_of(batch, lo)}

    def accumulator(self):
        """The template holding the window's rows (its sums added, by group)."""
        acc = self.template.copy()
        for g in np.flatnonzero(self.rows):  # each group holding rows: those without weights, with
            summed = bool(self.summed[g])
            pairs = self.pairs[g : g + 1].copy() if summed else None
            second = self.second[g : g + 1].copy() if summed and self.second.shape[0] else None
            acc.add_sums(Sums(self.ints[g : g + 1] * self.counted, pairs, second, self.rows[g : g + 1].copy(), bool(g)))
        return acc

    def check(self, rows: dict, n: int) -> None:
        """Refuse rows (untrusted, of the declared dtypes and lengths) no row of the template gives."""
        t = self.terms
        slots, values = rows["slots"], rows["values"]
        if slots.shape != (n, t.width) or values.shape != (n, t.width):
            raise StateFileError(f"entries 'slots' and 'values' must be {n} x {t.width}")
        if n and ((slots < 0).any() or (slots >= t.size).any()):
            raise StateFileError(f"entry 'slots' holds a slot outside 0 .. {t.size - 1}")
        if n and not ((slots < t.rows).sum(axis=1) == 1).all():
            raise StateFileError("a row of entry 'slots' is not counted as exactly one row")
        if not np.isfinite(values).all():
            raise StateFileError("entry 'values' holds NaN or infinite values")
        self.check_weights(rows, n)
