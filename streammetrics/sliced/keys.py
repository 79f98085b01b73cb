"""Slice keys: one batch's key column(s) turned into dense codes once.

``encode(by, n)`` reads the ``by`` argument of ``Sliced.update``: one key
column, or several (a tuple or list of columns, or a pandas DataFrame) whose
combinations are the slices (a cross). It returns a :class:`BatchKeys`: each
row's code among the batch's distinct keys, and those keys.

A key is a plain JSON value, so a state file can hold it: ``None`` (a null:
``None``, NaN, ``pandas.NA``, ``NaT`` or a masked entry), a ``bool``, an
``int`` (an integral float within ``int64`` is the same key: pandas turns
an integer column with nulls into floats), a finite ``float`` that is not
(1.5, or 1e20, which equals the int ``10**20`` as a key), or a ``str``. The
key of a cross is the tuple of its columns' keys.

Internally a key is a tuple, one ``(tag, value)`` pair per column, the tag
ordering the kinds (booleans, numbers, strings, null last), so that ``True``
and ``1`` stay two keys and keys of mixed kinds sort.
"""

from __future__ import annotations

import bisect
import math
import numbers

import numpy as np

from .._kernels.grouped import dense_table, hash_codes, hash_rows, key_range, rank_codes, table_codes
from .._protocol.errors import BadShapeError, BadValueError
from .._protocol.validation import to_numpy

__all__ = ["KeyTable", "BatchKeys", "encode", "tag", "public", "from_json", "to_json", "int_column", "kinds_of",
           "NULL"]

#: the internal form of a null key
NULL = (3, "")

#: integer keys whose range is at most this many times the rows are coded by a table
SPAN_FACTOR = 4
MIN_SPAN = 1 << 16

#: integer keys in a wider range are hashed while a batch holds at most this
#: many distinct values (a hash table of 64 MB at most), else sorted
HASH_DISTINCT = 1 << 20


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
                if -_TWO63 <= v < _TWO63 and v == int(v):
                    raise ValueError(f"slice key {r} holds an integral float (keys store it as an int)")
            key.append(tag(v))
        out.append(tuple(key))
    if len(set(out)) != len(out):
        raise ValueError("the slice keys repeat a key")
    return out


def int_column(rows):
    """The values of :func:`to_json`'s lists when every key is one ``int`` that fits
    ``int64`` (the usual keys of many slices), as an ``int64`` array; else
    ``None`` (:func:`from_json` then reads them)."""
    if not isinstance(rows, list) or not all(type(r) is list and len(r) == 1 and type(r[0]) is int
                                             for r in rows):
        return None
    try:
        return np.fromiter((r[0] for r in rows), np.int64, len(rows))
    except OverflowError:
        return None


class KeyTable:
    """The slices' keys: slice id -> internal key, and key -> slice id.

    While every key is one integer column's (the usual case of many slices)
    the keys are one ``int64`` array of values, slice ids in order, looked up
    by value (:meth:`ids_of_ints`) through a table over their range or a
    sorted copy: no Python object is made per key. The first key of another
    kind turns them into the general form, a list of internal keys; the dict
    from key to id (:meth:`index`) is built when a look-up first needs it.
    """

    __slots__ = ("_ints", "_list", "_ids", "_lookup")

    def __init__(self):
        self._ints = np.empty(0, np.int64)  # the values, while every key is one int column's
        self._list = None  # the internal keys, once one is of another kind
        self._ids: dict = {}  # internal key -> id, for the first len(_ids) keys
        self._lookup = None  # (kind, lo, table) or (kind, sorted values, their ids), for _ints

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

    def extend(self, new, owned: bool = False) -> None:
        """Add keys (new ones, in id order): a list of internal keys, or an
        ``int64`` array of one integer column's values (``owned``: an array of
        exactly these values that no one else holds, so the first is kept, not
        copied: 100k fresh keys cost their copy's first touch, 0.4 ms)."""
        if isinstance(new, np.ndarray):
            if not new.shape[0]:
                return
            if self._list is None:
                if self._ints.shape[0]:
                    self._ints = np.concatenate([self._ints, new])
                else:
                    self._ints = new if owned else new.copy()
                self._lookup = None
                return
            new = [((1, v),) for v in new.tolist()]
        if not new:
            return
        if self._list is None:
            if all(len(k) == 1 and k[0][0] == 1 and type(k[0][1]) is int and _INT64_MIN <= k[0][1] <= _INT64_MAX
                   for k in new):
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
            lo, hi = int(ints.min()), int(ints.max())
            span = hi - lo + 1
            if span <= max(SPAN_FACTOR * ints.shape[0], MIN_SPAN):
                table = np.full(span, -1, np.int64)
                table[ints - lo] = np.arange(ints.shape[0])
                self._lookup = ("table", lo, table)
            else:
                order = np.argsort(ints, kind="stable")
                self._lookup = ("sorted", ints[order], order)
        kind, a, b = self._lookup
        if kind == "table":
            inside = (values >= a) & (values < a + b.shape[0])
            out[inside] = b[values[inside] - a]
        else:
            pos = np.minimum(np.searchsorted(a, values), a.shape[0] - 1)
            hit = a[pos] == values
            out[hit] = b[pos[hit]]
        return out

    def int_bounds(self):
        """``(min, max)`` of the keys while they are one integer column's (and
        there are some), else ``None``. Read without the accumulator's lock (a
        hint for the range of a batch's table), so each attribute is read once:
        another thread may replace it meanwhile."""
        ints, lookup = self._ints, self._lookup
        if self._list is not None or ints is None or not ints.shape[0]:
            return None
        if lookup is not None and lookup[0] == "table":
            return lookup[1], lookup[1] + lookup[2].shape[0] - 1
        return int(ints.min()), int(ints.max())

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

    def copy(self) -> "KeyTable":
        out = KeyTable()
        if self._list is None:
            out._ints = self._ints.copy()
        else:
            out._ints = None
            out._list = list(self._list)
        out._ids = dict(self._ids)
        return out


class ByValue:
    """The codes of a column of dense integers, not written out: row ``i``'s
    code is ``table[values[i] - offset]`` (``table`` spans the values' range,
    ``-1`` where no row holds the value)."""

    __slots__ = ("values", "offset", "table")

    def __init__(self, values: np.ndarray, offset: int, table: np.ndarray):
        self.values, self.offset, self.table = values, offset, table

    def array(self) -> np.ndarray:
        out = np.empty(self.values.shape[0], np.int64)
        table_codes(self.values, self.offset, self.table, out)
        return out


def _array(codes) -> np.ndarray:
    return codes.array() if isinstance(codes, ByValue) else codes


class BatchKeys:
    """One batch's slice keys: ``codes[i]`` (int64) indexes ``keys`` (internal keys,
    ascending), ``names`` names the columns, and ``kinds[j]`` says whether column
    ``j`` holds booleans and whether it holds numbers (the only kinds of keys
    that can be equal as Python keys: ``True == 1``).

    ``by_value`` is a :class:`ByValue` when the keys are one column of dense
    integers: a consumer that can index by value reads the rows' values and
    the table instead of ``codes`` (written out on first use only). ``ints``
    is the keys' values (``int64``, ascending) when they are one integer
    column's: ``keys`` is then made from it when first read."""

    __slots__ = ("_codes", "_keys", "ints", "names", "kinds", "by_value")

    def __init__(self, codes, keys, names: tuple, kinds=None, ints=None):
        self.by_value = codes if isinstance(codes, ByValue) else None
        self._codes = None if self.by_value is not None else codes
        self._keys = keys
        self.ints = ints
        self.names = names
        if kinds is None:
            kinds = ((False, True),) if ints is not None else kinds_of(keys, len(names))
        self.kinds = kinds

    @property
    def codes(self) -> np.ndarray:
        if self._codes is None:
            self._codes = self.by_value.array()
        return self._codes

    @property
    def keys(self) -> list:
        if self._keys is None:
            self._keys = [((1, v),) for v in self.ints.tolist()]
        return self._keys

    def __len__(self) -> int:
        return self.ints.shape[0] if self.ints is not None else len(self._keys)

    def __repr__(self) -> str:
        return f"BatchKeys({len(self)} keys of {', '.join(self.names)})"


def _column_kinds(keys: list) -> tuple[bool, bool]:
    """``(booleans?, numbers?)`` of one column's internal keys, ascending: booleans
    sort first, numbers next, so two look-ups tell."""
    if not keys:
        return False, False
    i = bisect.bisect_left(keys, (1, -math.inf))
    return keys[0][0] == 0, i < len(keys) and keys[i][0] == 1


def kinds_of(keys: list, columns: int) -> tuple:
    """Per column, ``(booleans?, numbers?)`` among the internal keys of ``keys``
    (tuples of ``columns`` pairs, in any order)."""
    out = [[False, False] for _ in range(columns)]
    for key in keys:
        for j, (t, _) in enumerate(key):
            if t == 0:
                out[j][0] = True
            elif t == 1:
                out[j][1] = True
    return tuple(tuple(k) for k in out)


# ------------------------------------------------------------------ columns
def _is_column(x) -> bool:
    if isinstance(x, (str, bytes)) or np.isscalar(x) or x is None:
        return False
    return isinstance(x, (list, tuple, range)) or hasattr(x, "__array__") or hasattr(x, "__len__")


def columns_of(by) -> list:
    """``[(name, column)]`` of a ``by`` argument (see the module docstring)."""
    if by is None:
        raise TypeError("Sliced.update needs the slice keys: by=keys (one column, or a tuple of columns)")
    if hasattr(by, "columns") and hasattr(by, "iloc"):  # a pandas DataFrame
        cols = [(str(c), by[c]) for c in by.columns]
        if not cols:
            raise ValueError("by is a DataFrame with no columns")
        return cols
    if isinstance(by, (tuple, list)) and by and all(_is_column(c) for c in by):
        out = []
        for i, c in enumerate(by):
            name = getattr(c, "name", None)
            label = f"by[{i}]"
            out.append((f"{label} ({name!r})" if isinstance(name, str) else label, c))
        return out
    if isinstance(by, np.ndarray) and by.ndim == 2:
        raise BadShapeError("by must be one key column or a tuple of columns, got a 2-D array "
                            f"of shape {by.shape} (pass tuple(by.T) for a cross of its columns)", "by")
    name = getattr(by, "name", None)
    return [(f"by ({name!r})" if isinstance(name, str) else "by", by)]


def column_label(column) -> tuple[str, str]:
    """``(label, name)`` of a single key column as messages and reports name it
    (``by ('country')`` and ``country`` for a Series named so, else ``by``)."""
    label = columns_of(column)[0][0]
    return label, _short(label)


def _short(label: str) -> str:
    """A column's display name: the Series name if it had one, else ``by``/``by[i]``."""
    if "(" in label:
        return label[label.index("(") + 2 : -2]
    return label


def _canonical(v, name: str, codes: np.ndarray, j: int):
    """The canonical key of the raw distinct value ``v`` (found at code ``j``), or
    :data:`_INFINITE` for an infinite number, which the caller refuses."""
    if v is None:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            pass
    elif isinstance(v, numbers.Integral):
        return int(v)
    elif isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return None
        if not math.isfinite(f):
            return _INFINITE  # refused by the caller, at the first row holding one
        # an integral float is the integer key it equals, within int64 (1.0 is 1);
        # beyond, it stays a float (1e300 is not a 301-digit integer)
        return int(f) if -_TWO63 <= f < _TWO63 and f == int(f) else f
    else:
        try:
            import pandas as pd

            if v is pd.NA or v is pd.NaT:
                return None
        except ImportError:  # pragma: no cover
            pass
    i = int(np.argmax(codes == j))
    raise TypeError(f"{name}[{i}] = {v!r}: slice keys must be integers, booleans, strings, "
                    f"finite floats or null, not {type(v).__name__}")


#: what :func:`_canonical` gives for an infinite number (no key)
_INFINITE = object()


_TWO63 = 2.0**63
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class TooManyKeys(ValueError):
    """A batch alone holds more distinct keys than the accumulator may keep."""


_FEWER = ("nothing was folded in (pass a larger max_slices, or slice by a column with fewer "
          "distinct values)")


def check_batch_keys(count: int, limit, name: str) -> None:
    """``TooManyKeys`` when one batch alone brings more than ``limit`` distinct keys."""
    if limit is not None and count > limit:
        raise TooManyKeys(f"{name}: {count:,} distinct slice keys in this batch alone, more than "
                          f"max_slices={limit:,}; {_FEWER}")


def _past_the_cap(limit, name) -> None:
    """What hashing does once it has seen more distinct values than :func:`_cap`:
    ``TooManyKeys`` when that cap is ``limit`` (the batch alone is refused
    whatever its exact count, which would take a sort of every row: 2-4 s for
    10M rows of distinct floats), else nothing (the caller sorts)."""
    if name is not None and limit is not None and limit <= HASH_DISTINCT:
        raise TooManyKeys(f"{name}: more than max_slices={limit:,} distinct slice keys in this batch "
                          f"alone; {_FEWER}")


def _finish(codes: np.ndarray, raw: list, name: str, nulls: bool = True, limit=None):
    """Canonical keys for the raw distinct values ``raw`` (``codes`` index them,
    -1 for a null, only where ``nulls``); distinct raw values with one key (1 and
    1.0) are joined. Codes that already follow the keys' order are kept as they are.
    ``limit`` refuses more distinct values than that before they are read one by
    one (given only where distinct raw values are distinct keys)."""
    check_batch_keys(len(raw), limit, name)
    keys: dict = {}
    remap = np.zeros(len(raw) + 1, np.int64)
    infinite = []
    for j, v in enumerate(raw):
        key = _canonical(v, name, codes, j)
        if key is _INFINITE:
            infinite.append(j)
            continue
        remap[j] = keys.setdefault(tag(key), len(keys))
    if infinite:  # the first row holding one (the raw values come sorted, -inf first)
        rows = [int(np.argmax(codes == j)) for j in infinite]
        i = min(rows)
        raise BadValueError(name, i, float(raw[infinite[rows.index(i)]]),
                            "slice keys must be finite numbers, strings, booleans or null")
    has_null = bool(nulls and codes.size and (codes < 0).any())
    if has_null:
        remap[len(raw)] = keys.setdefault(NULL, len(keys))
    if not keys:
        return np.empty(0, np.int64), []
    ordered = sorted(keys)  # ascending internal keys: codes follow the sort
    rank = np.empty(len(keys), np.int64)
    for r, t in enumerate(ordered):
        rank[keys[t]] = r
    table = rank[remap]
    if not has_null and len(keys) == len(raw) and np.array_equal(table[:-1], np.arange(len(raw))):
        return codes, ordered  # integers, strings: coded in ascending order already
    out = table[codes]  # a code of -1 picks the last entry: the null's
    return out, ordered


def _unique_ints(a: np.ndarray, by_value: bool = False, limit=None, name=None):
    """``(codes, distinct values)`` of an int64 array, by a table when the range
    allows, else hashed; with ``by_value``, codes of values dense in their range
    (the table no more than a few times their number) come as a :class:`ByValue`.
    Past ``limit`` distinct values hashing stops and the column ``name`` is
    refused (see :func:`_past_the_cap`)."""
    if a.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo, hi = (int(v) for v in key_range(a, 0, a.shape[0]))
    span = hi - lo + 1
    if span <= max(SPAN_FACTOR * a.size, MIN_SPAN):
        table, values = dense_table(a, lo, span)
        if by_value and span <= max(SPAN_FACTOR * values.shape[0], MIN_SPAN):
            return ByValue(a, lo, table), values
        codes = np.empty(a.size, np.int64)
        table_codes(a, lo, table, codes)
        return codes, values
    return _hashed(a, limit, name) or _sorted(a)


def _unique_floats(a: np.ndarray, limit=None, name=None):
    """``(codes, distinct values)`` of a float64 array without NaN, hashed by
    the values' bits (``-0.0`` taken as ``0.0``, as ``==`` has them)."""
    return _hashed((a + 0.0).view(np.int64), limit, name, np.float64) or _sorted(a)  # -0.0 + 0.0 is 0.0


def _cap(limit) -> int:
    """The distinct values past which hashing stops: ``limit`` (refused past it
    anyway) or :data:`HASH_DISTINCT`."""
    return HASH_DISTINCT if limit is None else min(HASH_DISTINCT, limit)


def _hashed(bits: np.ndarray, limit, name=None, dtype=None):
    """``(codes, distinct values)`` of an int64 array coded by a hash table in one
    pass (``numpy.unique`` sorts every row: 1.8 s for 10M rows of 1,000 values,
    against 0.07 s), the values ascending as ``dtype`` (the array's bits read
    as floats) or as integers; ``None`` past ``limit`` or :data:`HASH_DISTINCT`
    distinct values, or the column ``name`` refused (:func:`_past_the_cap`)."""
    codes, values, m = hash_codes(bits, _cap(limit))
    if m < 0:
        _past_the_cap(limit, name)
        return None
    if dtype is not None:
        values = values.view(dtype)
    order = np.argsort(values)
    rank = np.empty(m, np.int64)
    rank[order] = np.arange(m, dtype=np.int64)
    rank_codes(codes, rank)
    return codes, values[order]


def _hashed_strings(arr: np.ndarray, limit, name=None):
    """``(codes, distinct strings)`` of a fixed-width string array (numpy ``U`` or
    ``S``), the strings in the order they first appear: its rows read as their
    code units and hashed in one pass (a Python string made of each row for
    pandas took 4 times as long for 10M rows of 200 strings, numpy's sort of
    them 18 times); ``None`` past ``limit`` or :data:`HASH_DISTINCT` distinct
    strings, or the column ``name`` refused (:func:`_past_the_cap`)."""
    n = arr.shape[0]
    unit = np.uint32 if arr.dtype.kind == "U" else np.uint8
    width = arr.dtype.itemsize // np.dtype(unit).itemsize
    if n == 0 or width == 0:  # no rows, or only empty strings
        return np.zeros(n, np.int64), ([arr[0].item()] if n else [])
    rows = np.ascontiguousarray(arr).view(unit).reshape(n, width)
    codes, firsts, f = hash_rows(rows, _cap(limit))
    if f < 0:
        _past_the_cap(limit, name)
        return None
    return codes, arr[firsts].tolist()


def _sorted(a: np.ndarray):
    """``(codes, distinct values)`` by ``numpy.unique``."""
    values, codes = np.unique(a, return_inverse=True)
    return codes.reshape(-1).astype(np.int64, copy=False), values


def _pandas_codes(x, name: str):
    import pandas as pd

    codes, uniques = pd.factorize(x, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    raw = [None if (v is pd.NA or v is pd.NaT) else v for v in list(uniques)]
    if getattr(x, "dtype", None) == object:
        _refuse_pooled_bools(x, codes, raw, name)
    return codes, raw


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _refuse_pooled_bools(x, codes, raw, name: str) -> None:
    """``ValueError`` when an object column holds ``True`` beside ``1`` (or
    ``False`` beside ``0``): hashing makes them one value, which would pool two
    kinds of key in one slice, while the same keys in two batches are refused."""
    suspects = [j for j, v in enumerate(raw)
                if isinstance(v, (bool, np.bool_, numbers.Real)) and (v == 0 or v == 1)]
    if not suspects:
        return
    values = np.asarray(x, dtype=object)
    kind_of = np.frompyfunc(_is_bool, 1, 1)
    for j in suspects:
        rows = np.flatnonzero(codes == j)
        kinds = kind_of(values[rows]).astype(bool)
        if kinds.any() and not kinds.all():
            i = int(rows[np.argmax(kinds != kinds[0])])
            raise ValueError(f"{name}[{i}] = {values[i]!r}: the keys {values[rows[0]]!r} and {values[i]!r} are "
                             "of different kinds but equal as Python keys: give one column one kind of key")


def _encode_column(x, name: str, n: int, limit=None, owned=True):
    """``(codes, internal keys)`` of one key column, its length checked against ``n``."""
    mod = type(x).__module__ or ""
    if mod.startswith("pandas"):
        if getattr(x, "ndim", 1) != 1:
            raise BadShapeError(f"{name} must be one key column, got shape {getattr(x, 'shape', None)}", name)
        _check_length(len(x), name, n)
        codes, raw = _pandas_codes(x, name)
        return _finish(codes, raw, name)
    mask = None
    if isinstance(x, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(x)
        arr = np.ma.getdata(x)
    else:
        arr = to_numpy(x, name, "a 1-D column of slice keys")
        if isinstance(x, (list, tuple)) and arr.dtype.kind in "US" and not all(isinstance(v, str) for v in x):
            arr = np.array(x, dtype=object)  # numpy would write the 1 of [1, "x"] as "1"
    if arr.ndim != 1:
        raise BadShapeError(f"{name} must be a 1-D column of slice keys, got shape {arr.shape}", name)
    _check_length(arr.shape[0], name, n)
    kind = arr.dtype.kind
    if mask is not None and mask.any():
        codes = np.full(n, -1, np.int64)
        sub_codes, keys = _encode_values(arr[~mask], name, limit)
        keys = _key_list(keys)
        # the null key sorts last, so it takes the code after every value's
        null = len(keys)
        codes[~mask] = _array(sub_codes)
        codes[mask] = null if NULL not in keys else keys.index(NULL)
        if NULL not in keys:
            keys = keys + [NULL]
        return codes, keys
    if kind not in "biufUSO":
        raise TypeError(f"{name} holds {arr.dtype} values: slice keys must be integers, booleans, "
                        "strings, finite floats or null (convert dates to strings or integers first)")
    return _encode_values(arr, name, limit, owned)


def _key_list(keys) -> list:
    """One column's internal keys as a list (an integer column's come as its values)."""
    return [(1, v) for v in keys.tolist()] if isinstance(keys, np.ndarray) else keys


def _encode_values(arr: np.ndarray, name: str, limit=None, owned=True):
    """``(codes, keys)`` of one column's values without nulls: ``keys`` the
    internal keys, ascending, or, for integers, their values (``int64``)."""
    kind = arr.dtype.kind
    if kind == "b":
        codes, values = _unique_ints(arr.astype(np.int64))
        return codes, [(0, v) for v in values.astype(bool).tolist()]  # ascending already
    if kind in "iu":
        if kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > np.iinfo(np.int64).max:
            values, codes = np.unique(arr, return_inverse=True)
            return _finish(codes.reshape(-1).astype(np.int64), [int(v) for v in values], name,
                           nulls=False, limit=limit)
        a = np.ascontiguousarray(arr, dtype=np.int64)
        codes, values = _unique_ints(a, by_value=True, limit=limit, name=name)
        if owned and isinstance(codes, ByValue) and np.may_share_memory(a, arr):
            # the values index tables when folded: never the caller's array,
            # which could change between prepare and fold
            codes.values = a.copy()
        check_batch_keys(values.shape[0], limit, name)
        return codes, values  # ascending already, each its own key (1, v)
    if kind == "f":
        a = np.ascontiguousarray(arr, dtype=np.float64)
        nan = np.isnan(a)
        if nan.any():
            codes = np.full(a.shape[0], -1, np.int64)
            sub, values = _unique_floats(a[~nan], limit, name)
            codes[~nan] = sub
        else:
            codes, values = _unique_floats(a, limit, name)
        return _finish(codes, values.tolist(), name, limit=limit)
    if kind in "US":
        hashed = _hashed_strings(arr, limit, name)
        if hashed is not None:
            return _finish(*hashed, name, nulls=False, limit=limit)
        try:  # past the cap: pandas' hashing is faster than numpy's sort of the strings
            import pandas  # noqa: F401

            codes, raw = _pandas_codes(arr.astype(object), name)
            return _finish(codes, raw, name, nulls=False, limit=limit)
        except ImportError:  # pragma: no cover - pandas is optional
            pass
        values, codes = np.unique(arr, return_inverse=True)
        return _finish(codes.reshape(-1).astype(np.int64, copy=False), values.tolist(), name,
                       nulls=False, limit=limit)
    # objects: hashed once each (pandas when present, else a dict)
    try:
        import pandas  # noqa: F401

        codes, raw = _pandas_codes(arr, name)
    except ImportError:  # pragma: no cover - pandas is optional
        codes, raw = _dict_codes(arr, name)
    return _finish(codes, raw, name)


def _dict_codes(arr: np.ndarray, name: str):
    seen: dict = {}
    raw: list = []
    codes = np.empty(arr.shape[0], np.int64)
    for i, v in enumerate(arr.tolist()):
        k = (type(v) is bool, v)
        try:
            c = seen.get(k)
        except TypeError:
            raise TypeError(f"{name}[{i}] = {v!r}: slice keys must be hashable values") from None
        if c is None:
            c = seen[k] = len(raw)
            raw.append(v)
        codes[i] = c
    return codes, raw


def _check_length(m: int, name: str, n: int) -> None:
    if m != n:
        raise BadShapeError(f"{name} has {m} rows but the batch has {n}: every row needs its "
                            "slice key", name)


def encode(by, n: int, limit: int | None = None, owned: bool = True) -> BatchKeys:
    """The slice keys of a batch of ``n`` rows (see the module docstring).

    With ``owned=False`` a column of dense integers read by value may stay the
    caller's array (for a batch folded at once, before the caller can change it).

    A batch with more than ``limit`` distinct keys raises :class:`TooManyKeys`
    (a ``ValueError``) as soon as that is known, before the keys are read one
    by one.
    """
    cols = columns_of(by)
    parts = [_encode_column(c, label, n, limit, owned and len(cols) == 1) for label, c in cols]
    names = tuple(_short(label) for label, _ in cols)
    cross = "by (" + ", ".join(names) + ")"
    if len(parts) == 1:
        codes, keys = parts[0]
        if isinstance(keys, np.ndarray):  # one integer column: its values
            return BatchKeys(codes, None, names, ((False, True),), ints=keys)
        return BatchKeys(codes, [(k,) for k in keys], names, (_column_kinds(keys),))
    parts = [(c, _key_list(k)) for c, k in parts]
    kinds = tuple(_column_kinds(k) for _, k in parts)
    sizes = [max(len(k), 1) for _, k in parts]
    if math.prod(sizes) < 2**62:
        combined = np.zeros(n, np.int64)
        for (c, _), size in zip(parts, sizes):
            combined *= size
            combined += _array(c)
        codes, values = _unique_ints(combined, limit=limit, name=cross)
        check_batch_keys(values.shape[0], limit, cross)
        digits = []
        rest = values.copy()
        for size in reversed(sizes):
            digits.append(rest % size)
            rest //= size
        digits.reverse()
    else:
        stacked = np.stack([_array(c) for c, _ in parts], axis=1)
        rows, codes = np.unique(stacked, axis=0, return_inverse=True)
        codes = codes.reshape(-1).astype(np.int64)
        check_batch_keys(rows.shape[0], limit, cross)
        digits = [rows[:, j] for j in range(rows.shape[1])]
    keys = [tuple(parts[j][1][d] for j, d in enumerate(ds)) for ds in zip(*(d.tolist() for d in digits))]
    # the per-column codes follow each column's key order, so combined codes do too
    return BatchKeys(codes, keys, names, kinds)
