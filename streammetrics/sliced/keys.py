"""Slice keys: their internal form, the slices' key table, and a batch's coded keys.

A key is a JSON value: ``None`` (a null: ``None``, NaN, ``pandas.NA``, ``NaT``,
a masked entry), a ``bool``, an ``int`` (an integral float within ``int64`` is
the same key), another finite ``float``, or a ``str``; a cross's key is the
tuple of its columns'. Internally a key is a tuple of ``(tag, value)`` pairs,
the tag ordering the kinds (booleans, numbers, strings, null last), so that
``True`` and ``1`` stay two keys and mixed kinds sort.
"""

from __future__ import annotations

import math

import numpy as np

TWO63 = 2.0**63

#: the internal form of a null key
NULL = (3, "")

#: integer keys whose range is at most this many times the rows are coded by a table
SPAN_FACTOR = 4
MIN_SPAN = 1 << 16


def tag(v):
    """The internal form of a canonical key value (see the module docstring)."""
    if v is None:
        return NULL
    if isinstance(v, bool):
        return (0, v)
    if isinstance(v, str):
        return (2, v)
    return (1, v)


def public(key: tuple):
    """The key users see: the value for one column, a tuple of values for a cross."""
    if len(key) == 1:
        return None if key[0][0] == 3 else key[0][1]
    return tuple(None if t == 3 else v for t, v in key)


def to_json(keys: list) -> list:
    """Internal keys as JSON lists (one value per column)."""
    return [[None if t == 3 else v for t, v in key] for key in keys]


def from_json(rows, columns: int) -> list:
    """Internal keys from :func:`to_json`'s lists; ``ValueError`` if any is bad."""
    if not isinstance(rows, list):
        raise ValueError("the slice keys must be a list")
    out = []
    for r, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != columns:
            raise ValueError(f"slice key {r} is not a list of {columns} values")
        key = []
        for v in row:
            if v is not None and not isinstance(v, (bool, int, float, str)):
                raise ValueError(f"slice key {r} holds a {type(v).__name__}")
            if isinstance(v, float):
                if not math.isfinite(v):
                    raise ValueError(f"slice key {r} holds a non-finite number")
                if -TWO63 <= v < TWO63 and v == int(v):
                    raise ValueError(f"slice key {r} holds an integral float (keys store it as an int)")
            key.append(tag(v))
        out.append(tuple(key))
    if len(set(out)) != len(out):
        raise ValueError("the slice keys repeat a key")
    return out


class KeyTable:
    """The slices' keys: slice id -> internal key, and key -> slice id.

    While every key is one integer column's (the usual case of many slices)
    the keys are one ``int64`` array of values, slice ids in order, looked up
    by value (:meth:`ids_of_ints`) in a sorted copy: no Python object is made
    per key. The first key of another kind turns them into the general form,
    a list of internal keys; the dict from key to id (:meth:`index`) is built
    when a look-up first needs it.
    """

    __slots__ = ("_ints", "_list", "_ids", "_lookup")

    def __init__(self):
        self._ints = np.empty(0, np.int64)  # the values, while every key is one int column's
        self._list = None  # the internal keys, once one is of another kind
        self._ids: dict = {}  # internal key -> id, for the first len(_ids) keys
        self._lookup = None  # (sorted values, their ids), for _ints

    def __len__(self) -> int:
        return self._ints.shape[0] if self._list is None else len(self._list)

    def __getitem__(self, g: int) -> tuple:
        if self._list is None:
            return ((1, int(self._ints[g])),)
        return self._list[g]

    def __iter__(self):
        if self._list is None:
            return (((1, v),) for v in self._ints.tolist())
        return iter(self._list)

    @property
    def ints(self):
        """The keys' values while every key is one integer column's, else ``None``."""
        return self._ints if self._list is None else None

    def extend(self, new) -> None:
        """Add keys (new ones, in id order): a list of internal keys, or an
        ``int64`` array of one integer column's values that no one else holds
        (the first is kept, not copied: 100k fresh keys cost their copy's first
        touch, 0.4 ms)."""
        if isinstance(new, np.ndarray):
            if not new.shape[0]:
                return
            if self._list is None:
                self._ints = np.concatenate([self._ints, new]) if self._ints.shape[0] else new
                self._lookup = None
                return
            new = [((1, v),) for v in new.tolist()]
        if not new:
            return
        if self._list is None:
            if all(len(k) == 1 and k[0][0] == 1 and type(k[0][1]) is int and -TWO63 <= k[0][1] < TWO63 for k in new):
                self.extend(np.fromiter((k[0][1] for k in new), np.int64, len(new)))
                return
            self._list = list(self)
            self._ints = None
            self._lookup = None
        self._list.extend(new)

    def index(self) -> dict:
        """Internal key -> slice id for every key."""
        ids = self._ids
        if len(ids) < len(self):
            start = len(ids)
            ids.update(zip((self[g] for g in range(start, len(self))), range(start, len(self))))
        return ids

    def ids_of_ints(self, values: np.ndarray) -> np.ndarray:
        """The slice id of each of ``values`` (``int64``, ascending and distinct), ``-1``
        where none is a key; only while the keys are one integer column's."""
        ints = self._ints
        out = np.full(values.shape[0], -1, np.int64)
        if not ints.shape[0] or not values.shape[0]:
            return out
        if self._lookup is None:
            order = np.argsort(ints, kind="stable")
            self._lookup = (ints[order], order)
        a, order = self._lookup
        pos = np.minimum(np.searchsorted(a, values), a.shape[0] - 1)
        hit = a[pos] == values
        out[hit] = order[pos[hit]]
        return out

    def order(self) -> list:
        """Slice ids in key order."""
        if self._list is None:
            return np.argsort(self._ints, kind="stable").tolist()
        keys = self._list
        return sorted(range(len(keys)), key=keys.__getitem__)

    def public(self, order: list) -> list:
        """The keys users see (:func:`public`) of the slices ``order``."""
        if self._list is None:
            return self._ints[np.asarray(order, np.int64)].tolist() if order else []
        keys = self._list
        return [public(keys[g]) for g in order]

    def copy(self) -> KeyTable:
        out = KeyTable()
        out.extend(self._ints.copy() if self._list is None else list(self._list))
        return out


class BatchKeys:
    """One batch's slice keys: ``codes[i]`` (int64) indexes ``keys`` (internal keys,
    ascending) and ``names`` names the columns. ``ints``
    is the keys' values (``int64``, ascending) when they are one integer
    column's: ``keys`` is then made from it when first read."""

    __slots__ = ("codes", "_keys", "ints", "names")

    def __init__(self, codes, keys, names: tuple, ints=None):
        self.codes = codes
        self._keys = keys
        self.ints = ints
        self.names = names

    @property
    def keys(self) -> list:
        if self._keys is None:
            self._keys = [((1, v),) for v in self.ints.tolist()]
        return self._keys

    def __len__(self) -> int:
        return self.ints.shape[0] if self.ints is not None else len(self._keys)

    def __repr__(self) -> str:
        return f"BatchKeys({len(self)} keys of {', '.join(self.names)})"


def kinds_of(keys: list, columns: int) -> tuple:
    """Per column, ``(booleans?, numbers?)`` among the internal keys of ``keys``
    (tuples of ``columns`` pairs, in any order)."""
    tags = [{key[j][0] for key in keys} for j in range(columns)]
    return tuple((0 in t, 1 in t) for t in tags)
