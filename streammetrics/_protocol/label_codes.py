"""Labels looked up as class codes: a label's position in a fixed list.

:class:`LabelCodes` encodes a 1-D array of labels (integers, strings, any
hashable objects) as the codes ``0..k-1`` of a list of labels, ``-1`` for a
value that is none of them. Integer labels are looked up in a sorted table,
numpy strings in a kernel's hash table, and an object column through a hash
of the objects' addresses, each distinct object looked up once; a column of
any other kind goes through a dict row by row.
"""

from __future__ import annotations

import ctypes
import numbers
from collections.abc import Hashable

import numpy as np

from .._kernels import labels as L

__all__ = ["LabelCodes"]

_INT64_MAX = np.iinfo(np.int64).max


class LabelCodes:
    """The codes of the labels of ``labels`` (hashable, none repeated).

    Raises ``TypeError`` for an unhashable label, ``ValueError`` for a repeat.
    """

    def __init__(self, labels):
        self.labels = list(labels)
        lookup: dict = {}
        for i, lab in enumerate(self.labels):
            if not isinstance(lab, Hashable):
                raise TypeError(f"labels[{i}] = {lab!r} is not hashable")
            if lab in lookup:
                raise ValueError(f"labels[{i}] = {lab!r} repeats labels[{lookup[lab]}]")
            lookup[lab] = i
        self.lookup = lookup
        #: the integer labels sorted, and their codes (when every label is an int64)
        self.ints = None
        if all(isinstance(v, numbers.Integral) and -(2**63) <= int(v) < 2**63 for v in self.labels):
            vals = np.array([int(v) for v in self.labels], dtype=np.int64)
            order = np.argsort(vals, kind="stable")
            self.ints = (vals[order], order.astype(np.int64))
        #: whether every label is a ``str``
        self.all_text = bool(self.labels) and all(type(v) is str for v in self.labels)
        self.fixed: dict = {}  # string width -> the kernel's label table

    def encode(self, arr: np.ndarray) -> np.ndarray:
        """The codes of the 1-D array ``arr``: a label's position in the list, -1 for a value that is none."""
        kind = arr.dtype.kind
        if self.ints is not None and kind in "iub":
            vals, order = self.ints
            if kind == "u" and arr.dtype.itemsize == 8:
                over = arr > _INT64_MAX
                a = np.where(over, 0, arr).astype(np.int64)
            else:
                over = None
                a = arr.astype(np.int64, copy=False)
            pos = np.minimum(np.searchsorted(vals, a), vals.size - 1)
            ok = vals[pos] == a
            if over is not None:
                ok &= ~over
            return np.where(ok, order[pos], -1)
        if self.all_text and kind == "U":
            return self._encode_fixed(np.ascontiguousarray(arr))
        if kind == "O":
            codes = self._encode_objects(np.ascontiguousarray(arr))
            if codes is not None:
                return codes
        return np.fromiter(map(self._code, arr.tolist() if kind != "O" else arr), np.int64, arr.size)

    def _code(self, v) -> int:
        try:
            return self.lookup.get(v, -1)
        except TypeError:  # an unhashable value is not a label
            return -1

    def _encode_fixed(self, arr: np.ndarray) -> np.ndarray:
        """Codes of a numpy string array, in a kernel (labels all ``str``)."""
        width = arr.dtype.itemsize // 4
        table = self.fixed.get(width)
        if table is None:
            fits = [i for i, lab in enumerate(self.labels) if len(lab) <= width]
            rows = np.zeros((len(fits), max(width, 1)), np.uint32)
            for r, i in enumerate(fits):
                rows[r, : len(self.labels[i])] = np.frombuffer(self.labels[i].encode("utf-32-le"), np.uint32)
            positions = L.key_positions(rows) if rows.shape[0] else np.zeros(1, np.int64)
            slots, mask = L.label_table(rows, positions)
            table = self.fixed[width] = (rows, positions, slots, mask, np.array(fits + [-1], np.int64))
        rows, positions, slots, mask, index = table
        found = np.empty(arr.shape[0], np.int64)
        L.encode_fixed(arr.view(np.uint32).reshape(arr.shape[0], max(width, 1)) if width else
                       np.zeros((arr.shape[0], 1), np.uint32), rows, positions, slots, mask, found)
        return index[found]  # -1 stays -1 (the last entry)

    #: an object column with more distinct objects than this is looked up row by row
    DISTINCT_OBJECTS = 4096

    def _encode_objects(self, arr: np.ndarray):
        """Codes of an object array whose rows repeat a few objects, or ``None``.

        Each distinct object (by address: the array holds them alive) is looked
        up once; see :func:`streammetrics._kernels.labels.encode_pointers`.
        """
        n = arr.shape[0]
        ptrs = np.ctypeslib.as_array((ctypes.c_ssize_t * n).from_address(arr.ctypes.data))
        room = self.DISTINCT_OBJECTS
        keys = np.zeros(4 * room, np.int64)
        codes = np.full(4 * room, -1, np.int64)
        out = np.empty(n, np.int64)
        new_rows = np.empty(room, np.int64)
        new_slots = np.empty(room, np.int64)
        for _ in range(room + 1):
            status, count = L.encode_pointers(ptrs, keys, codes, out, new_rows, new_slots)
            if status == 0:
                return out
            if status == 2:
                return None
            for i, s in zip(new_rows[:count].tolist(), new_slots[:count].tolist()):
                codes[s] = self._code(arr[i])
            room -= count
            new_rows, new_slots = new_rows[:room], new_slots[:room]
        return None  # pragma: no cover - every call resolves at least one address
