"""Pending rows: folded in, validated, not yet sorted into the state."""

from __future__ import annotations

import numpy as np

from ..._kernels import keys as K
from .sorting import sort_classes, sorted_run

_U64 = np.dtype(np.uint64)


class Pending:
    """Rows folded in, not yet sorted: positives' keys in ``keys[:front]``, negatives' in ``keys[back:]``
    (:func:`~streammetrics._kernels.keys.append_split`), weights in ``vals``; the slots between are free.
    """

    __slots__ = ("keys", "vals", "front", "back")

    def __init__(self, capacity: int, weighted: bool):
        self.keys = np.empty(capacity, np.uint64)
        self.vals = np.empty(capacity, np.float64) if weighted else None
        self.front = 0
        self.back = capacity

    @property
    def rows(self) -> int:
        return self.front + self.keys.shape[0] - self.back

    @property
    def weighted(self) -> bool:
        return self.vals is not None

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + (0 if self.vals is None else self.vals.nbytes)

    def resize(self, new: int):
        """Move the rows into buffers of capacity ``new`` (at least :attr:`rows`)."""
        tail = self.keys.shape[0] - self.back
        for name in ("keys", "vals"):
            old = getattr(self, name)
            if old is not None:
                arr = np.empty(new, old.dtype)
                arr[: self.front] = old[: self.front]
                arr[new - tail :] = old[self.back :]
                setattr(self, name, arr)
        self.back = new - tail

    def append(self, y, s, w, limit: int) -> int:
        """Validate and write one batch, growing fourfold up to ``limit``; the kernel's status."""
        n = y.shape[0]
        if self.back - self.front < n:
            need = self.rows + n
            self.resize(max(need, min(4 * self.keys.shape[0], max(limit, need))))
        ws = None if self.vals is None else w
        status, front, back = K.append_split(y, s.view(_U64), ws, self.keys, self.vals, self.front, self.back)
        if not status:
            self.front, self.back = front, back
        return status

    def run(self, merged_with=None, in_place: bool = True):
        """The run of the pending rows, merged with a run if given; ``in_place`` uses up the buffer."""
        keys, vals, front, back = self.keys, self.vals, self.front, self.back
        if not in_place:
            keys = np.concatenate((keys[:front], keys[back:]))
            vals = None if vals is None else np.concatenate((vals[:front], vals[back:]))
            back = front
        return sorted_run(keys, front, back, vals, merged_with)

    def release(self) -> None:
        """Drop the buffer's arrays once its rows were made a run."""
        self.keys = np.empty(0, np.uint64)
        self.vals = None if self.vals is None else np.empty(0, np.float64)
        self.front = self.back = 0

    def sorted_keys(self):
        """``(kp, vp, kn, vn, pre_p, pre_n)``: sorted keys, weights and their prefix sums (``None`` unweighted); the
        buffer is used up."""
        keys, vals, front, back = self.keys, self.vals, self.front, self.back
        tail = keys.shape[0] - back
        tk, tv = sort_classes(keys, front, back, vals)
        if vals is None:
            return keys[:front], None, keys[back:], None, None, None
        # the sort's scratch, free again, holds the prefix sums
        with np.errstate(over="ignore"):  # weights near 1e308: infinite, refused by the caller
            pre_p = np.cumsum(vals[:front], out=tv[:front])
            pre_n = np.cumsum(vals[back:], out=tk.view(np.float64)[:tail])
        return keys[:front], vals[:front], keys[back:], vals[back:], pre_p, pre_n

    def clone(self) -> Pending:
        """A copy holding the same rows, with no spare room."""
        out = Pending(0, self.weighted)
        out.keys, out.vals, out.front, out.back = self.keys, self.vals, self.front, self.back
        out.resize(self.rows)  # into new arrays
        return out
