"""Labels looked up as class codes: a label's position in a fixed list.

:class:`LabelCodes` encodes a 1-D array of labels (integers, strings, any
hashable objects) as the codes ``0..k-1`` of a list of labels, ``-1`` for a
value that is none of them. Integer labels are looked up in a sorted table;
string and object columns are factorized (numpy, pandas) and each distinct
value looked up once; anything else goes through a dict row by row.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable

import numpy as np

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
        #: whether every label is a ``str``
        self.all_text = bool(self.labels) and all(type(v) is str for v in self.labels)
        #: the integer labels sorted, and their codes (when every label is an int64)
        self.ints = None
        if all(isinstance(v, numbers.Integral) and -(2**63) <= int(v) < 2**63 for v in self.labels):
            vals = np.array([int(v) for v in self.labels], dtype=np.int64)
            order = np.argsort(vals, kind="stable")
            self.ints = (vals[order], order.astype(np.int64))

    def encode(self, arr: np.ndarray) -> np.ndarray:
        """The codes of the 1-D array ``arr``: a label's position in the list, -1 for a value that is none."""
        kind = arr.dtype.kind
        if self.ints is not None and kind in "iub":
            vals, order = self.ints
            # a uint64 past int64 is no label (the cast wraps it around: masked)
            over = arr > _INT64_MAX if kind == "u" and arr.dtype.itemsize == 8 else np.False_
            a = arr.astype(np.int64, copy=False)
            pos = np.minimum(np.searchsorted(vals, a), vals.size - 1)
            return np.where((vals[pos] == a) & ~over, order[pos], -1)
        if kind in "USO" and arr.size:
            uniques, codes = _factorized(arr)
            if uniques is not None:  # each distinct value looked up once; nulls (code -1) apart
                out = np.fromiter(map(self._code, [*uniques, None]), np.int64, len(uniques) + 1)[codes]
                nulls = np.flatnonzero(codes < 0)
                out[nulls] = [self._code(v) for v in arr[nulls]]
                return out
        return np.fromiter(map(self._code, arr.tolist() if kind != "O" else arr), np.int64, arr.size)

    def _code(self, v) -> int:
        try:
            return self.lookup.get(v, -1)
        except TypeError:  # an unhashable value is not a label
            return -1


def _factorized(arr: np.ndarray):
    """``(distinct values, codes)`` of a string or object column (nulls coded -1),
    or ``(None, None)`` (an unhashable value)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        if arr.dtype.kind == "O":
            return None, None
        values, codes = np.unique(arr, return_inverse=True)
        return values.tolist(), codes.reshape(-1)
    try:
        codes, uniques = pd.factorize(arr.astype(object, copy=False))
    except TypeError:
        return None, None
    return list(uniques), codes
