"""A batch's slice keys coded once: ``encode(by, n)``.

``by`` is the ``by`` argument of ``Sliced.update``: one key column, or several
(a tuple or list of columns, or a pandas DataFrame) whose combinations are
the slices (a cross). :func:`encode` returns a :class:`~.keys.BatchKeys`: each
row's code among the batch's distinct keys, and those keys (see :mod:`.keys`
for what a key is).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._kernels.grouped import dense_codes, hash_codes, key_range
from .._protocol.errors import BadShapeError, BadValueError
from .._protocol.validation import to_numpy
from .keys import MIN_SPAN, NULL, SPAN_FACTOR, TWO63, BatchKeys, tag

#: integer keys in a wider range are hashed while a batch holds at most this
#: many distinct values (a hash table of 64 MB at most), else sorted
HASH_DISTINCT = 1 << 20


# ------------------------------------------------------------------ columns
def _is_column(x) -> bool:
    if isinstance(x, (str, bytes)) or np.isscalar(x) or x is None:
        return False
    return isinstance(x, (list, tuple, range)) or hasattr(x, "__array__") or hasattr(x, "__len__")


def columns_of(by) -> list:
    """``[(label, name, column)]`` of a ``by`` argument (see the module docstring):
    each column as messages name it (``by ('country')`` for a Series named so,
    else ``by``/``by[i]``) and as reports name it (``country``, else the label)."""
    if hasattr(by, "columns") and hasattr(by, "iloc"):  # a pandas DataFrame
        cols = [(str(c), str(c), by[c]) for c in by.columns]
        if not cols:
            raise ValueError("by is a DataFrame with no columns")
        return cols
    if isinstance(by, (tuple, list)) and by and all(_is_column(c) for c in by):
        return [_named(f"by[{i}]", c) for i, c in enumerate(by)]
    if isinstance(by, np.ndarray) and by.ndim == 2:
        raise BadShapeError(
            "by must be one key column or a tuple of columns, got a 2-D array "
            f"of shape {by.shape} (pass tuple(by.T) for a cross of its columns)",
            "by",
        )
    return [_named("by", by)]


def _named(label: str, column) -> tuple:
    """``(label, name, column)``, with the column's name when it has one (a pandas Series's)."""
    name = getattr(column, "name", None)
    return (f"{label} ({name!r})", name, column) if isinstance(name, str) else (label, label, column)


def _canonical(v, name: str, codes: np.ndarray, j: int):
    """The canonical key of the raw distinct value ``v`` (found at code ``j``), or
    :data:`_INFINITE` for an infinite number, which the caller refuses."""
    if v is None:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (bool, str)):
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
        # beyond, it stays a float (1e300 is not a 301-digit integer); from 2**53
        # on, float64 holds every other integer only: its key is not known
        if 2.0**53 <= abs(f) < TWO63:
            i = int(np.argmax(codes == j))
            raise ValueError(
                f"{name}[{i}] = {f!r}: a float key from 2**53 on may stand for several integers "
                "(float64 cannot tell them apart): give integer keys as integers (nulls as None or masked)"
            )
        return int(f) if -TWO63 <= f < TWO63 and f == int(f) else f
    elif type(v).__module__.startswith("pandas") and type(v).__name__ in ("NAType", "NaTType"):
        return None  # pandas.NA, pandas.NaT
    i = int(np.argmax(codes == j))
    raise TypeError(
        f"{name}[{i}] = {v!r}: slice keys must be integers, booleans, strings, "
        f"finite floats or null, not {type(v).__name__}"
    )


#: what :func:`_canonical` gives for an infinite number (no key)
_INFINITE = object()


class TooManyKeys(ValueError):
    """A batch alone holds more distinct keys than the accumulator may keep."""


_FEWER = "nothing was folded in (pass a larger max_slices, or slice by a column with fewer distinct values)"


def check_batch_keys(count: int, limit, name: str) -> None:
    """``TooManyKeys`` when one batch alone brings more than ``limit`` distinct keys."""
    if limit is not None and count > limit:
        raise TooManyKeys(
            f"{name}: {count:,} distinct slice keys in this batch alone, more than max_slices={limit:,}; {_FEWER}"
        )


def _past_the_cap(limit, name) -> None:
    """What hashing does once it has seen more distinct values than its cap:
    ``TooManyKeys`` when that cap is ``limit`` (the batch alone is refused
    whatever its exact count, which would take a sort of every row: 2-4 s for
    10M rows of distinct floats), else nothing (the caller sorts)."""
    if name is not None and limit is not None and limit <= HASH_DISTINCT:
        raise TooManyKeys(f"{name}: more than max_slices={limit:,} distinct slice keys in this batch alone; {_FEWER}")


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
        raise BadValueError(
            name, i, float(raw[infinite[rows.index(i)]]), "slice keys must be finite numbers, strings, booleans or null"
        )
    has_null = bool(nulls and codes.size and (codes < 0).any())
    if has_null:
        remap[len(raw)] = keys.setdefault(NULL, len(keys))
    if not keys:
        return np.empty(0, np.int64), []
    ordered = sorted(keys)  # ascending internal keys: codes follow the sort
    rank = np.empty(len(keys), np.int64)
    rank[[keys[t] for t in ordered]] = np.arange(len(keys))
    table = rank[remap]
    if not has_null and len(keys) == len(raw) and np.array_equal(table[:-1], np.arange(len(raw))):
        return codes, ordered  # integers, strings: coded in ascending order already
    return table[codes], ordered  # a code of -1 picks the last entry: the null's


def _unique_ints(a: np.ndarray, limit=None, name=None):
    """``(codes, distinct values)`` of an int64 array, by a table when the range
    allows, else hashed. Past ``limit`` distinct values hashing stops and the column ``name`` is
    refused (see :func:`_past_the_cap`)."""
    if a.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo, hi = (int(v) for v in key_range(a, 0, a.shape[0]))
    span = hi - lo + 1
    if span <= max(SPAN_FACTOR * a.size, MIN_SPAN):
        return dense_codes(a, lo, span)
    return _hashed(a, limit, name) or _sorted(a)


def _unique_floats(a: np.ndarray, limit=None, name=None):
    """``(codes, distinct values)`` of a float64 array without NaN, hashed by
    the values' bits (``-0.0`` taken as ``0.0``, as ``==`` has them)."""
    return _hashed((a + 0.0).view(np.int64), limit, name, np.float64) or _sorted(a)  # -0.0 + 0.0 is 0.0


def _hashed(bits: np.ndarray, limit, name=None, dtype=None):
    """``(codes, distinct values)`` of an int64 array coded by a hash table in one
    pass (``numpy.unique`` sorts every row: 1.8 s for 10M rows of 1,000 values,
    against 0.07 s), the values ascending as ``dtype`` (the array's bits read
    as floats) or as integers; ``None`` past ``limit`` or :data:`HASH_DISTINCT`
    distinct values, or the column ``name`` refused (:func:`_past_the_cap`)."""
    codes, values, m = hash_codes(bits, HASH_DISTINCT if limit is None else min(HASH_DISTINCT, limit))
    if m < 0:
        _past_the_cap(limit, name)
        return None
    if dtype is not None:
        values = values.view(dtype)
    order = np.argsort(values)
    rank = np.empty(m, np.int64)
    rank[order] = np.arange(m, dtype=np.int64)
    return rank[codes], values[order]


def _sorted(a: np.ndarray):
    """``(codes, distinct values)`` by ``numpy.unique``."""
    values, codes = np.unique(a, return_inverse=True)
    return codes.reshape(-1).astype(np.int64, copy=False), values


def _pandas_codes(x, name: str):
    import pandas as pd

    codes, uniques = pd.factorize(x, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    raw = [None if (v is pd.NA or v is pd.NaT) else v for v in list(uniques)]
    if getattr(getattr(x, "dtype", None), "kind", "") == "O":
        _refuse_pooled_bools(x, codes, raw, name)
    return codes, raw


def _refuse_pooled_bools(x, codes, raw, name: str) -> None:
    """``ValueError`` when an object column holds ``True`` beside ``1`` (or
    ``False`` beside ``0``): hashing makes them one value, which would pool two
    kinds of key in one slice, while the same keys in two batches are refused."""
    suspects = [j for j, v in enumerate(raw) if isinstance(v, (bool, np.bool_, numbers.Real)) and (v == 0 or v == 1)]
    if not suspects:
        return
    values = np.asarray(x, dtype=object)
    kind_of = np.frompyfunc(lambda v: isinstance(v, (bool, np.bool_)), 1, 1)
    for j in suspects:
        rows = np.flatnonzero(codes == j)
        kinds = kind_of(values[rows]).astype(bool)
        if kinds.any() and not kinds.all():
            i = int(rows[np.argmax(kinds != kinds[0])])
            raise ValueError(
                f"{name}[{i}] = {values[i]!r}: the keys {values[rows[0]]!r} and {values[i]!r} are "
                "of different kinds but equal as Python keys: give one column one kind of key"
            )


def _encode_column(x, name: str, n: int, limit=None):
    """``(codes, internal keys)`` of one key column, its length checked against ``n``."""
    mod = type(x).__module__ or ""
    if mod.startswith("pandas"):
        if getattr(x, "ndim", 1) != 1:
            raise BadShapeError(f"{name} must be one key column, got shape {getattr(x, 'shape', None)}", name)
        _check_length(len(x), name, n)
        codes, raw = _pandas_codes(x, name)
        return _finish(codes, raw, name)
    if isinstance(x, np.ma.MaskedArray):
        mask, arr = np.ma.getmaskarray(x), np.ma.getdata(x)
        if mask.any():  # masked entries are null keys: None in a column of objects
            arr = arr.astype(object)
            arr[mask] = None
    else:
        arr = to_numpy(x, name, "a 1-D column of slice keys")
        if isinstance(x, (list, tuple)) and arr.dtype.kind != "O" and _pooled(x, arr):
            arr = np.array(x, dtype=object)
    if arr.ndim != 1:
        raise BadShapeError(f"{name} must be a 1-D column of slice keys, got shape {arr.shape}", name)
    _check_length(arr.shape[0], name, n)
    if arr.dtype.kind not in "biufUSO":
        raise TypeError(
            f"{name} holds {arr.dtype} values: slice keys must be integers, booleans, "
            "strings, finite floats or null (convert dates to strings or integers first)"
        )
    return _encode_values(arr, name, limit)


def _pooled(values, arr: np.ndarray) -> bool:
    """Whether numpy made one value of two keys of ``values`` in ``arr``: ``1`` and
    ``"1"``, ``True`` and ``1``, ``2**53 + 1`` and ``2**53`` beside a float (values
    of several types), or ``"a\\x00"`` and ``"a"`` (fixed-width strings drop
    trailing NULs)."""
    if len({type(v) for v in values}) > 1:
        return True
    return arr.dtype.kind in "US" and any(v[-1:] in ("\x00", b"\x00") for v in values)


def _encode_values(arr: np.ndarray, name: str, limit=None):
    """``(codes, keys)`` of one column's values without nulls: ``keys`` the
    internal keys, ascending, or, for integers, their values (``int64``)."""
    kind = arr.dtype.kind
    if kind == "b":
        codes, values = _unique_ints(arr.astype(np.int64))
        return codes, [(0, v) for v in values.astype(bool).tolist()]  # ascending already
    if kind in "iu":
        if kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > np.iinfo(np.int64).max:
            values, codes = np.unique(arr, return_inverse=True)
            return _finish(codes.reshape(-1).astype(np.int64), [int(v) for v in values], name, nulls=False, limit=limit)
        a = np.ascontiguousarray(arr, dtype=np.int64)
        codes, values = _unique_ints(a, limit=limit, name=name)
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
    # strings (as objects: numpy would sort them) and objects: hashed once each
    # (pandas when present, else a dict)
    strings = kind in "US"
    objects = arr.astype(object) if strings else arr
    try:
        import pandas  # noqa: F401

        codes, raw = _pandas_codes(objects, name)
    except ImportError:  # pragma: no cover - pandas is optional
        codes, raw = _dict_codes(objects, name)
    if strings and limit is not None and len(raw) > limit:
        _past_the_cap(limit, name)
    # distinct strings are distinct keys; objects 1 and 1.0 are one
    return _finish(codes, raw, name, nulls=not strings, limit=limit if strings else None)


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
        raise BadShapeError(f"{name} has {m} rows but the batch has {n}: every row needs its slice key", name)


def encode(by, n: int, limit: int | None = None) -> BatchKeys:
    """The slice keys of a batch of ``n`` rows (see the module docstring).

    A batch with more than ``limit`` distinct keys raises :class:`TooManyKeys`
    (a ``ValueError``) as soon as that is known, before the keys are read one
    by one.
    """
    cols = columns_of(by)
    parts = [_encode_column(c, label, n, limit) for label, _, c in cols]
    names = tuple(name for _, name, _ in cols)
    cross = "by (" + ", ".join(names) + ")"
    if len(parts) == 1:
        codes, keys = parts[0]
        if isinstance(keys, np.ndarray):  # one integer column: its values
            return BatchKeys(codes, None, names, ints=keys)
        return BatchKeys(codes, [(k,) for k in keys], names)
    # an integer column's internal keys come as its values
    parts = [(c, [(1, v) for v in k.tolist()] if isinstance(k, np.ndarray) else k) for c, k in parts]
    # the columns joined one at a time: the combinations so far coded anew with
    # the next column's codes (in a range of at most n x its keys); ``digits``
    # holds each combination's code in every column joined
    codes, digits = parts[0][0], [np.arange(len(parts[0][1]), dtype=np.int64)]
    for c, k in parts[1:]:
        size = max(len(k), 1)
        codes, values = _unique_ints(codes * size + c, limit=limit, name=cross)
        check_batch_keys(values.shape[0], limit, cross)
        digits = [d[values // size] for d in digits] + [values % size]
    keys = [tuple(parts[j][1][d] for j, d in enumerate(ds)) for ds in zip(*(d.tolist() for d in digits))]
    # the per-column codes follow each column's key order, so combined codes do too
    return BatchKeys(codes, keys, names)
