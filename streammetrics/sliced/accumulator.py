"""Sliced: any accumulator's scores per slice of the data (per country, per device, ...)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .._protocol import statefile
from .._protocol.base import Accumulator, _locked
from .._protocol.errors import NoWeightsError, StateFileError
from .._protocol.inputs import Batch, Input, convert, raise_rejected
from .._protocol.state import concatenated_parts, count_total, reserve, screen_fields
from .._protocol.wrapped import pack, unpack
from . import keys as K
from .._kernels import compensated
from .._kernels import grouped as G
from ..metrics.binary import BinaryConfusion
from ..metrics.calibration import Calibration
from ..metrics.probability import ProbabilityScores
from ..metrics.regression import RegressionErrors
from .grouped import commit_counted, tables_for
from .result import LazySlices, SlicedResult, score_columns

__all__ = ["Sliced", "DEFAULT_MAX_SLICES"]

#: the default bound on the number of distinct slices
DEFAULT_MAX_SLICES = 10_000

_KEYS = "keys"
_INT_KEYS = "keys#int64"

#: accumulators whose merge is exact for counts and compensated for sums: an
#: Evaluator's members of these kinds are not folded overall, their overall
#: state is their slices' states merged
_LINEAR = (BinaryConfusion, ProbabilityScores, Calibration, RegressionErrors)


def _linear_members(template) -> tuple:
    """The names of an Evaluator template's members read off the slices (none
    unless every member takes every batch it is given)."""
    members = getattr(template, "_members", None)
    if not isinstance(members, dict) or not hasattr(template, "_plans"):
        return ()
    if not all(template._required(name) for name in members):
        return ()
    return tuple(name for name, m in members.items() if type(m) in _LINEAR)


class SliceKeys(Input):
    """The ``by`` argument of :meth:`Sliced.update`: one or several key columns."""

    domain = ("slice_keys",)
    what = "slice keys"

    def takes_form(self, x) -> bool:
        return True


class _Slices:
    """A loaded (checked) state: the parts :meth:`Sliced._load` installs."""

    __slots__ = ("overall", "keys", "columns", "names", "accs", "tables")

    def __init__(self, overall, keys, columns, names, accs, tables=None):
        self.overall, self.keys, self.columns, self.names, self.accs = overall, keys, columns, names, accs
        #: every slice's state as the rows of tables (``accs`` is then ``None``)
        self.tables = tables


def _with_new_ids(ids, start: int, count: int) -> np.ndarray:
    """:meth:`Sliced._new_ints`'s ids once its new keys took the ids from
    ``start`` on, in their order."""
    fresh = np.arange(start, start + count, dtype=np.int64)
    if ids is None:
        return fresh
    ids[ids < 0] = fresh
    return ids


def _slice_entries(k: str, empty: np.ndarray, flat: np.ndarray, shapes) -> dict:
    """The entries ``slices.<k>`` and ``slices.<k>#shape`` of every slice's array of
    field ``k`` (``flat``, concatenated in key order) and their ``shapes``
    (``g x ndim``), or ``None`` when every one has the template's shape
    (``empty.shape``): that shape is then written once (``1 x ndim``), and
    ``slices.<k>`` holds no values at all when every one of them is zero, bit
    for bit (the weighted sums of slices fed no weight: most of a large
    state). Both short forms are lossless."""
    if shapes is not None:
        return {f"slices.{k}": flat, f"slices.{k}#shape": shapes}
    values = flat if flat.view(np.uint8).any() else np.zeros(0, empty.dtype)
    return {f"slices.{k}": values, f"slices.{k}#shape": np.array(empty.shape, np.int64).reshape(1, empty.ndim)}


def _by(names) -> str:
    """The ``by`` argument as messages name it, with its columns' names."""
    return "by" if tuple(names) == ("by",) else f"by ({', '.join(names)})"


def _check_max_slices(m) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"max_slices must be an integer, got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"max_slices must be at least 1, got {m}")
    return int(m)


class Sliced(Accumulator):
    """Any accumulator's scores per slice of the rows, and overall.

    ``Sliced(template)`` folds each row of ``update(y, p, by=keys)`` into the
    state of its slice: ``finalize().slices[key]`` is the template's result on
    that slice's rows alone, ``finalize().overall`` its result on every row.

    Parameters
    ----------
    template : Accumulator or Evaluator
        An empty accumulator; its settings define every slice's accumulator
        (it is copied, not used).
    max_slices : int, default 10_000
        The most distinct slices kept: a batch (or a merge) that would bring
        more is refused with ``ValueError``, the state unchanged (a key column
        of ids or timestamps passed by mistake would otherwise grow the state
        without bound).

    ``update(*arrays, sample_weight=None, by=keys)`` takes the template's
    arrays and the keys: one column (integers, booleans, strings, finite
    floats, pandas categoricals; ``None``, NaN, ``pandas.NA`` and masked
    entries form one null slice, key ``None``), or several as a tuple or list
    of columns or a pandas DataFrame, whose combinations are the slices (a
    cross; the key is a tuple). The keys may also come as one extra positional
    column, ``update(y, p, keys)``.

    Returns (``finalize()``)
    ------------------------
    A :class:`SlicedResult`: ``.overall``, ``.slices`` (key -> result, in key
    order: booleans, then numbers, then strings, the null key last), ``.rows``; as a mapping ``n``, ``n_slices``, ``slice_n`` and each
    headline score overall (``f1``) and per slice (``slice_f1``); ``str(r)``
    is a table of the slices, ``r.to_json()`` every slice's full result.

    Notes
    -----
    Each batch's keys are coded once (a table lookup for integer keys, one
    sort or hash otherwise) and mapped to dense slice ids held by the
    accumulator; a column of integers dense in their range is not even
    coded for the tables below, its rows finding their table row through
    a map of the values. :class:`~streammetrics.BinaryConfusion`,
    :class:`~streammetrics.ProbabilityScores` and
    :class:`~streammetrics.RegressionErrors` keep every slice as a row of one
    table, updated in one pass by a group-indexed kernel (weighted sums
    compensated, regression moments merged with Chan et al.'s formula); any
    other template (:class:`~streammetrics.RankAUC`, calibration, multiclass,
    an :class:`~streammetrics.Evaluator`) keeps one accumulator per slice and
    folds each batch's rows, sorted by slice once, segment by segment. The
    whole batch is checked once before any state changes, so a rejected batch
    changes nothing. The state file holds the keys as JSON, never a pickle.

    A row is folded into its slice only, wherever the overall state can be read
    off the slices': the binary confusion's tables (unweighted rows) are summed,
    and an Evaluator's linear members (binary confusion, probability scores,
    calibration, regression errors) are their slices' members merged in key
    order, so only its other members (the rank state of the AUC) fold every
    row a second time. Counts are then the unsliced accumulator's to the row,
    compensated sums agree with it to a few ulps. ``finalize()`` builds a
    slice's result when it is first read (``.slices`` is a mapping over a
    snapshot of the state: later updates do not reach it), so a finalize over
    many slices costs little until their scores are read; with ``ci=`` every
    slice's result is built at once (the flags need them all).

    Examples
    --------
    >>> from streammetrics import BinaryConfusion, Sliced
    >>> acc = Sliced(BinaryConfusion())
    >>> acc.update([1, 0, 1, 1], [1, 0, 0, 1], by=["uk", "uk", "fr", None])
    Sliced(BinaryConfusion(threshold=None), max_slices=10000): n=4 slices=3
    >>> r = acc.update([0, 1], [1, 1], by=["fr", "fr"]).finalize()
    >>> r.overall.accuracy, r.slices["fr"].recall, r.slices[None].tp
    (0.666..., 0.5, 1)
    >>> print(r)
    3 slices of 6 rows
    ==================
    <BLANKLINE>
      by      rows  accuracy    f1
      fr         3  0.333333   0.5
      uk         2         1     1
      (null)     1         1     1
      (all)      6  0.666667  0.75
    <BLANKLINE>
      over the slices (mean ± std, ddof=1): accuracy 0.777778 ± 0.3849, f1 0.833333 ± 0.288675

    A cross of two columns:

    >>> from streammetrics import RegressionErrors
    >>> acc = Sliced(RegressionErrors())
    >>> r = acc.update([1.0, 2.0, 3.0], [1.5, 2.0, 2.0], by=(["a", "a", "b"], [1, 2, 1])).finalize()
    >>> sorted(r.slices), r.slices[("b", 1)].mae
    ([('a', 1), ('a', 2), ('b', 1)], 1.0)
    """

    fields = ()
    #: an Evaluator member takes y and p; a sliced accumulator takes its keys too
    _takes_keys = True

    def __init__(self, template: Accumulator, max_slices: int = DEFAULT_MAX_SLICES):
        if not isinstance(template, Accumulator):
            raise TypeError(f"template must be an accumulator or an Evaluator, got {type(template).__name__}")
        if isinstance(template, Sliced):
            raise TypeError("template must not be a Sliced accumulator: slice by a cross, by=(a, b), instead")
        if template.n:
            raise ValueError("template must be empty: its settings define every slice's accumulator")
        self.max_slices = _check_max_slices(max_slices)
        self._template = template.copy()
        self._tables_spec = tables_for(self._template)
        self.takes_weights = self._template.takes_weights
        self.inputs = (*self._template.inputs, SliceKeys("by"))
        self.headline = tuple(self._template.headline)
        #: ``finalize(ci=...)`` is offered when the template offers it
        self.intervals = bool(self._template.intervals)
        # the template's empty state: its fields' names, dtypes and dimensions
        self._template_fields = dict(self._template.copy().reset()._state)
        self._linear = () if self._tables_spec is not None else _linear_members(self._template)
        self._init_slices()

    def _init_slices(self) -> None:
        spec = self._tables_spec
        # ``None``: the overall state is read off the slices' tables when asked
        # for (see :meth:`_overall_acc`), not folded row by row a second time
        self._overall = None if spec is not None and spec.derives else self._template.copy()
        #: an Evaluator template with linear members (:data:`_LINEAR`): only its
        #: other members are folded overall, here; ``_overall`` is ``None``
        self._rest = None
        if self._linear:
            self._overall = None
            self._rest = {name: m.copy() for name, m in self._template._members.items()
                          if name not in self._linear}
        self._count = 0  # rows folded in, over every slice
        self._keys = K.KeyTable()  # slice id -> internal key, and back
        self._kinds = None  # per key column: (booleans seen?, numbers seen?)
        self._columns = None  # the number of key columns, once known
        self._names = None
        if self._tables_spec is not None:
            self._tables = self._tables_spec.empty(8)
            self._accs = None
        else:
            self._tables = None
            self._accs = []
        #: the slices whose accumulator no result reads (``None``: all of them)
        self._owned = None

    # ------------------------------------------------------------- settings
    @property
    def template(self) -> Accumulator:
        """An empty copy of the template."""
        return self._template.copy()

    def _settings(self) -> dict[str, Any]:
        t = self._template
        return {"template": {"class": type(t).__name__, "settings": t.settings},
                "max_slices": self.max_slices}

    @classmethod
    def _from_settings(cls, settings: dict[str, Any]):
        spec = settings.get("template") if isinstance(settings, dict) else None
        known = statefile.registry()
        if not isinstance(spec, dict) or known.get(spec.get("class")) is None:
            raise ValueError("the template is not a known accumulator")
        if not isinstance(spec.get("settings"), dict):
            raise ValueError("the template has invalid settings")
        extra = set(settings) - {"template", "max_slices"}
        if extra:
            raise ValueError(f"unknown settings {sorted(extra)}")
        template = known[spec["class"]]._from_settings(spec["settings"])
        return cls(template, max_slices=settings.get("max_slices", DEFAULT_MAX_SLICES))

    # --------------------------------------------------------------- inputs
    def _split(self, arrays, by):
        k = len(self._template.inputs)
        if by is None:
            if len(arrays) == k + 1:
                return arrays[:k], arrays[k]
            raise TypeError(f"Sliced.update needs the slice keys: update({', '.join(i.name for i in self._template.inputs)}, "
                            "by=keys), keys one column or a tuple of columns")
        if len(arrays) != k:
            raise TypeError(f"expected {k} arrays ({', '.join(i.name for i in self._template.inputs)}) "
                            f"and by=keys, got {len(arrays)} arrays")
        return arrays, by

    def prepare(self, *arrays, sample_weight=None, by=None) -> Batch:
        """Convert and check one batch and code its slice keys: a :class:`~streammetrics.Batch`.

        The template's arrays are checked as the template checks them (a bad
        value raises ``ValueError`` naming the argument and its position);
        ``by`` must give one key per row.
        """
        return self._prepare(arrays, sample_weight, by, owned=True)

    def _prepare(self, arrays, sample_weight, by, owned: bool) -> Batch:
        """:meth:`prepare`; ``owned=False`` lets the coded keys read the caller's
        key column in place (``update`` folds the batch at once, so the column
        cannot change in between)."""
        arrays, by = self._split(arrays, by)
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        keys = K.encode(by, tb.n, self.max_slices, owned=owned)
        return pack(tb, keys, self._template, self.inputs[-1])

    def update(self, *arrays, sample_weight=None, by=None):
        """Fold one batch into its slices and the overall state; return ``self``.

        A batch with a bad value, a ``by`` of the wrong length, or keys that
        would bring more than ``max_slices`` slices raises ``ValueError`` and
        leaves the accumulator exactly as it was.
        """
        if sample_weight is None:
            keyed = self._by_key(by)
            if keyed is not None and self._count_by_key(arrays, *keyed):
                return self
        return self.fold(self._prepare(arrays, sample_weight, by, owned=False))

    def _by_key(self, by):
        """``(values, (label, name))`` where an unweighted batch keyed by ``by``
        may be counted by key (:meth:`_count_by_key`), else ``None``: a template
        whose tables count so, every slice so far keyed by one integer column,
        and ``by`` one column of integers within ``int64`` (a numpy array, or a
        pandas Series of a numpy integer dtype, named as the coded path names it)."""
        spec = self._tables_spec
        if spec is None or not spec.counts_by_key or self._keys.ints is None or self._overall is not None:
            return None
        named = ("by", "by")
        if type(by) is not np.ndarray:
            if not (type(by).__module__.startswith("pandas") and getattr(by, "ndim", 0) == 1
                    and hasattr(by, "to_numpy") and isinstance(getattr(by, "dtype", None), np.dtype)):
                return None
            named = K.column_label(by)
            by = by.to_numpy()
        if by.ndim != 1 or by.dtype.kind not in "iu" or (by.dtype.kind == "u" and by.dtype.itemsize == 8):
            return None
        return by, named

    def _count_by_key(self, arrays, by, named=("by", "by")) -> bool:
        """Check and count a batch by its integer keys in one pass, before the
        distinct keys are known (their table's rows are the keys present); return
        ``False``, with nothing changed, where the general path must fold it
        (keys too sparse for a table, or a length or state that path reports on).
        A bad value raises as :meth:`prepare` would, with nothing changed."""
        template = self._template
        if len(arrays) != len(template.inputs):
            return False
        converted, _, n = convert(template.inputs, arrays, None)
        if by.shape[0] != n or not 0 < n < 1 << 31:
            return False
        # int32 keys are read as they are (a conversion to int64 cost 10M rows 11 ms, half
        # the count); narrower integers are widened to int32, the others to int64
        keys = np.ascontiguousarray(by, np.int32 if by.dtype.itemsize < 4 or by.dtype == np.int32 else np.int64)
        counted = self._tables_spec.count_batch(converted, keys, self._keys.int_bounds())
        if counted is None:  # sparse keys
            return False
        with counted:
            if counted.status == 3:  # the keys changed while they were read
                return False
            if counted.status:
                raise_rejected(template.inputs, converted)
            parts = counted.parts
            values = np.concatenate([v for v, _ in parts]) if len(parts) > 1 else parts[0][0]
            names = (named[1],)
            K.check_batch_keys(values.shape[0], self.max_slices, named[0])
            with self._guard:
                if self._keys.ints is None or self._overall is not None:  # changed by another thread
                    return False
                self._check_room(n)
                self._check_columns(1, names)
                start = len(self._keys)
                new, glob = self._new_ints(values)
                self._check_slots(new.shape[0], names)
                self._add_keys(new, names, ((False, True),), owned=True)
                if glob is not None:
                    glob = _with_new_ids(glob, start, new.shape[0])
                commit_counted(parts, glob, start, self._tables["n"], self._tables["counts"])
                self._count += n
        return True

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``.

        The batch was checked when prepared; folding it raises only when its
        keys would bring more than ``max_slices`` slices (or a different number
        of key columns than before), and then changes nothing.
        """
        tb, keys = unpack(batch, self._template, "Sliced.prepare()")
        if tb.weighted and not self.takes_weights:
            raise NoWeightsError(type(self._template).__name__)
        if tb.n == 0:
            return self
        with self._guard:
            self._check_room(tb.n)
            self._check_columns(len(keys.names), keys.names)
            start = len(self._keys)
            # one integer column, and every slice so far one too: looked up by value
            ints = keys.ints if self._keys.ints is not None else None
            if ints is not None:
                new, found = self._new_ints(ints)
            elif not start:
                new = list(keys.keys)
            else:
                ids = self._index()
                new = [k for k in keys.keys if k not in ids]
            self._check_slots(len(new), keys.names)
            self._check_distinct(new, keys.names, keys.kinds)
            if tb.weighted and self._overall is None and self._tables is not None:
                # the tables keep no squared weights: from here on the overall
                # accumulator folds every row itself
                self._overall = self._derived_overall()
            self._add_keys(new, keys.names, keys.kinds)
            if ints is not None:
                glob = _with_new_ids(found, start, len(new))
            elif len(new) == len(keys):  # every key is new: their ids follow in order
                glob = np.arange(start, start + len(new), dtype=np.int64)
            else:
                ids = self._index()
                glob = np.fromiter((ids[k] for k in keys.keys), np.int64, len(keys.keys))
            second = self._tables_spec.second if self._tables is not None else None
            keep = True
            if self._overall is not None:
                before = int(self._overall._arrays[second][0]) if second else 0
                self._overall.fold(tb)
                # the batch's second moments overflowed in the overall state: the
                # slices keep none either (their intervals then say so)
                keep = not second or int(self._overall._arrays[second][0]) - before == tb.n
            elif self._rest is not None:
                for m in self._rest.values():
                    m.fold(tb)
            self._fold_slices(tb, keys, glob, keep)
            self._count += tb.n
        return self

    def _check_columns(self, columns: int, names) -> None:
        if self._columns is not None and columns != self._columns:
            raise ValueError(f"by: these keys have {columns} column{'s' if columns > 1 else ''} "
                             f"({', '.join(names)}) but the slices so far have {self._columns} "
                             f"({', '.join(self._names)})")

    def _check_slots(self, new: int, names) -> None:
        total = len(self._keys) + new
        if total > self.max_slices:
            raise ValueError(
                f"{_by(names)}: {total:,} distinct slice keys seen, more than "
                f"max_slices={self.max_slices:,}; nothing was folded in (pass a larger max_slices, "
                "or slice by a column with fewer distinct values)")

    def _mixes(self, kinds) -> bool:
        """Whether some key column would hold both booleans and numbers."""
        mine = self._kinds or [(False, False)] * len(kinds)
        return any((a or c) and (b or d) for (a, b), (c, d) in zip(mine, kinds))

    def _check_distinct(self, new: list, names, kinds) -> None:
        """New keys must differ from the others as Python keys too (``True == 1``):
        only a column holding both booleans and numbers can make two equal."""
        if not len(new) or not self._mixes(kinds):
            return
        public = {K.public(k): k for k in self._keys}
        seen: dict = {}
        for k in new:
            p = K.public(k)
            other = public.get(p, seen.get(p))
            if other is not None and other != k:
                raise ValueError(
                    f"{_by(names)}: the keys {K.public(other)!r} and {p!r} are of different kinds "
                    "but equal as Python keys (True == 1): give one column one kind of key")
            seen[p] = k

    def _new_ints(self, values: np.ndarray):
        """``(new, ids)``: the keys of one integer column among ``values``
        (distinct) that are no slice yet, and the slice ids of ``values``, ``-1``
        for the new ones (``None``: every one is new)."""
        if not len(self._keys):
            return values, None
        ids = self._keys.ids_of_ints(values)
        return values[ids < 0], ids

    def _index(self) -> dict:
        """Internal key -> slice id for every slice: the keys are indexed when a
        later batch or a merge first needs to look them up (a single batch of
        many new keys never builds the index)."""
        return self._keys.index()

    def _add_keys(self, new, names, kinds, owned: bool = False) -> None:
        """Add the slices of ``new`` (internal keys, or one integer column's values;
        ``owned``: an array no one else holds, kept as it is)."""
        if self._columns is None:
            self._columns = len(names)
            self._names = tuple(names)
        if not len(new):
            return
        start = len(self._keys)
        mine = self._kinds or [(False, False)] * len(kinds)
        self._kinds = [(a or c, b or d) for (a, b), (c, d) in zip(mine, kinds)]
        self._keys.extend(new, owned)
        total = len(self._keys)
        if self._tables is not None:
            rows = self._tables["n"].shape[0]
            if total > rows:
                self._tables = self._tables_spec.grown(self._tables, start, max(total, 2 * rows))
        else:
            self._accs.extend(self._template.copy() for _ in range(len(new)))
            if self._owned is not None:
                self._owned.update(range(start, total))

    def _fold_slices(self, tb: Batch, keys, glob: np.ndarray, keep: bool = True) -> None:
        if self._tables is not None:
            arrays = tb.arrays_for(self._template.inputs)
            by_value = keys.by_value
            if by_value is not None and self._tables_spec.takes_values:
                # dense integer keys: each row's table row is looked up by its
                # value, the batch's codes never written
                rows = np.full(by_value.table.shape[0], -1, np.int64)
                present = by_value.table >= 0
                rows[present] = glob[by_value.table[present]]
                self._tables_spec.fold(self._tables, arrays, tb.weights, by_value.values, rows,
                                       by_value.offset, keep)
            else:
                self._tables_spec.fold(self._tables, arrays, tb.weights, keys.codes, glob, keep=keep)
            return
        if glob.shape[0] == 1:
            self._own(int(glob[0])).fold(tb)
            return
        columns = list(tb.arrays) + ([tb.weights] if tb.weighted else [])
        plain = [c.ndim == 1 and c.dtype.kind in "biuf" and c.shape[0] == tb.n for c in columns]
        by_value = keys.by_value
        bounds = np.zeros(glob.shape[0] + 1, np.int64)
        if by_value is not None and len(columns) == 2 and all(plain):
            # dense integer keys and the usual (y, p): sorted by slice reading
            # each row's code by value, no array of codes written (a batch's
            # large temporaries cost their first touch of fresh memory)
            np.cumsum(G.value_counts(by_value.values, by_value.offset, by_value.table, glob.shape[0]),
                      out=bounds[1:])
            a, b = columns
            out_a, out_b = np.empty_like(a), np.empty_like(b)
            G.value_scatter2(a, b, by_value.values, by_value.offset, by_value.table, bounds[:-1],
                             out_a, out_b)
            self._fold_segments(tb, [out_a, out_b], tb.weights, bounds, glob)
            return
        local = keys.codes
        np.cumsum(np.bincount(local, minlength=glob.shape[0]), out=bounds[1:])
        codes = np.ascontiguousarray(local, np.int64)
        starts = bounds[:-1]
        order = None

        def by_slice(a):
            """``a``'s rows sorted by slice, stably (a counting sort)."""
            nonlocal order
            if a.ndim == 1 and a.dtype.kind in "biuf" and a.shape[0] == codes.shape[0]:
                out = np.empty_like(a)
                G.group_scatter(a, codes, starts, out)
                return out
            if order is None:
                order = G.group_order(codes, starts)
            return a[order]

        if len(columns) >= 2 and plain[0] and plain[1]:  # the usual (y, p): both in one pass
            a, b = columns[0], columns[1]
            out_a, out_b = np.empty_like(a), np.empty_like(b)
            G.group_scatter2(a, b, codes, starts, out_a, out_b)
            columns[:2] = [out_a, out_b]
            columns[2:] = [by_slice(c) for c in columns[2:]]
        else:
            columns = [by_slice(c) for c in columns]
        self._fold_segments(tb, columns[:len(tb.arrays)], columns[-1] if tb.weighted else tb.weights,
                            bounds, glob)

    def _fold_segments(self, tb: Batch, arrays: list, w, bounds, glob) -> None:
        """Fold rows ``bounds[j]:bounds[j + 1]`` of ``arrays`` (sorted by slice) into
        slice ``glob[j]``'s accumulator."""
        for j, g in enumerate(glob.tolist()):
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            part = Batch(tb.inputs, [a[lo:hi] for a in arrays], w[lo:hi] if tb.weighted else w, hi - lo)
            self._own(g).fold(part)

    # ----------------------------------------------------------------- merge
    def merge(self, other: "Sliced"):
        """Fold ``other`` (same template settings) in: its slices add to the same
        keys' slices here, and slices only it has are added; return ``self``.

        ``ValueError``, with both unchanged, if the settings differ, the key
        columns differ in number, or the union of slices exceeds ``max_slices``.
        """
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with _locked(self, other):
            if other._columns is None:
                return self
            self._check_room(other.n, "merging")
            self._check_columns(other._columns, other._names)
            ids = self._index()
            new = [k for k in other._keys if k not in ids]
            self._check_slots(len(new), other._names)
            self._check_distinct(new, other._names, other._kinds)
            self._merge_check(other, ids)
            if self._rest is not None:  # the same template: both keep these members overall
                for name, m in self._rest.items():
                    m.merge(other._rest[name])
            elif self._overall is not None or other._overall is not None:
                # one side folds its overall row by row: so does the merged one
                # (read before the tables below change)
                if self._overall is None:
                    self._overall = self._derived_overall()
                self._overall.merge(other._overall_acc())
            self._add_keys(new, other._names, other._kinds)
            ids = self._index()
            idx = np.fromiter((ids[k] for k in other._keys), np.int64, len(other._keys))
            self._count += other._count
            if self._tables is not None:
                m = len(other._keys)
                self._tables_spec.merge(self._tables, idx, {k: t[:m] for k, t in other._tables.items()})
            else:
                for j, g in enumerate(idx.tolist()):
                    self._own(g)._merge_checked(other._accs[j])  # (checked above)
        return self

    def _merge_check(self, other: "Sliced", ids: dict | None = None) -> None:
        """Raise what merging ``other`` would refuse in a slice or overall (totals
        past float64), before any slice changes: a merge is refused whole."""
        if other._columns is None:
            return
        ids = self._index() if ids is None else ids
        if self._rest is not None:
            for name, m in self._rest.items():
                m._merge_check(other._rest[name])
        elif self._overall is not None:
            self._overall._merge_check(other._overall_acc())
        if self._tables is not None and self._tables_spec.merge_far(self._tables, len(self._keys), other._tables,
                                                                    len(other._keys)):
            return
        pairs = [(ids[k], j) for j, k in enumerate(other._keys) if k in ids]
        if not pairs:
            return
        if self._tables is not None:
            rows, theirs = (np.array(v, np.int64) for v in zip(*pairs))
            self._tables_spec.merge_check(self._tables, rows, other._tables, theirs)
        else:
            for g, j in pairs:
                self._accs[g]._merge_check(other._accs[j])

    # ----------------------------------------------------------------- state
    @property
    def n(self) -> int:
        """Rows folded in so far (over every slice)."""
        return self._count

    def _derived_overall(self) -> Accumulator:
        """A new accumulator holding every slice's state merged: the tables' kind,
        or an Evaluator whose linear members merge the slices' members (in key
        order) and whose other members are the ones folded overall (shared:
        the accumulator is only read, never folded)."""
        order = self._order()
        if self._tables is not None:
            used = len(self._keys)
            acc = self._template._empty_like()
            acc._load(self._tables_spec.overall_state(self._tables, used,
                                                      np.array(order, np.int64) if used else None))
            return acc
        acc = self._template.copy()
        members = acc._members
        for name in self._linear:
            members[name]._merge_states([self._accs[g]._members[name]._state for g in order])
        members.update(self._rest)
        acc._plans = acc._make_plans()
        acc._n = self._count
        return acc

    def _overall_acc(self) -> Accumulator:
        """The accumulator of every row: the one folded, or one read off the slices
        (made anew at each call: reading a state never changes the object)."""
        return self._derived_overall() if self._overall is None else self._overall

    @property
    def n_slices(self) -> int:
        """The number of distinct slices seen so far."""
        return len(self._keys)

    def _slice_state(self, g: int) -> dict[str, np.ndarray]:
        if self._tables is not None:
            return self._tables_spec.state_of(self._tables, g)
        return self._accs[g]._state

    def _slice_acc(self, g: int, into: Accumulator | None = None) -> Accumulator:
        """Slice ``g``'s accumulator; a table's row is loaded into ``into`` when given
        (one object read slice after slice: its results keep no state array)."""
        if self._tables is not None:
            acc = self._template._empty_like() if into is None else into
            acc._load(self._tables_spec.state_of(self._tables, g))
            return acc
        return self._accs[g]

    def _order(self) -> list[int]:
        return self._keys.order()

    @property
    def _state(self) -> dict[str, np.ndarray]:
        """The fields, slices in key order (so equal contents give equal states):
        ``n``, ``keys`` (UTF-8 JSON of the key columns and of the keys, or
        ``null`` for the keys when they are one integer column's: their values
        are then the entry ``keys#int64``, ascending), ``overall.<field>`` and, per
        template field, ``slices.<field>`` (every slice's array, flattened and
        concatenated in key order) and ``slices.<field>#shape`` (each one's
        shape, ``g x ndim``; see :func:`_slice_entries` for the short forms
        where every slice's array has the template's shape)."""
        order = self._order()
        ints = self._keys.ints if self._columns == 1 else None
        doc = {"columns": self._columns, "names": None if self._names is None else list(self._names),
               "keys": None if ints is not None else K.to_json([self._keys[g] for g in order])}
        state = {"n": np.array([self.n], np.int64),
                 _KEYS: np.frombuffer(json.dumps(doc).encode("utf-8"), np.uint8).copy()}
        if ints is not None:  # one integer column's values: no JSON, no Python object per slice
            state[_INT_KEYS] = ints[np.asarray(order, np.int64)]
        for k, v in self._overall_acc()._state.items():
            state[f"overall.{k}"] = v
        if self._tables is not None:  # every slice's field is a row of its table
            rows = np.asarray(order, np.int64)
            for k, empty in self._template_fields.items():
                state.update(_slice_entries(k, empty, self._tables[k][rows].reshape(-1), None))
            return state
        parts = [self._slice_state(g) for g in order]
        for k, empty in self._template_fields.items():
            arrays = [p[k] for p in parts]
            flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0, empty.dtype)
            shapes = None if all(a.shape == empty.shape for a in arrays) else np.array(
                [a.shape for a in arrays], np.int64).reshape(len(arrays), empty.ndim)
            state.update(_slice_entries(k, empty, flat, shapes))
        return state

    def _optional_fields(self) -> set:
        """The template's state entries declared optional (added after states were
        first saved), by their names in the template's state."""
        t = self._template
        members = t.members.items() if hasattr(t, "members") else [(None, t)]
        return {f.name if name is None else f"{name}.{f.name}"
                for name, m in members for f in type(m).fields if f.optional}

    def _with_optional(self, state: dict, expected: set) -> dict:
        """``state`` with the optional entries a state saved before them lacks: the
        template's own load fills ``overall``, and every slice gets the empty field."""
        missing = expected - set(state)
        if not missing:
            return state
        out = dict(state)
        for k in self._optional_fields():
            forms = {f"overall.{k}", f"slices.{k}", f"slices.{k}#shape"}
            if not forms <= missing:
                continue  # present, or only partly missing: the check below names it
            empty = self._template_fields[k]
            out.update(_slice_entries(k, empty, np.zeros(0, empty.dtype), None))  # every slice's zeros
            out[f"overall.{k}"] = empty.copy()
        return out

    def _checked(self, state) -> _Slices:
        """Parse and check a state (untrusted): a :class:`_Slices`, or ``StateFileError``."""
        if not isinstance(state, dict):
            raise StateFileError(f"a state must be a dict of arrays, got {type(state).__name__}")
        fields = set(self._template_fields)
        expected = {"n", _KEYS} | {f"overall.{k}" for k in fields} | {f"slices.{k}" for k in fields} | {
            f"slices.{k}#shape" for k in fields}
        state = self._with_optional(state, expected)
        if isinstance(state, dict) and _INT_KEYS in state:
            expected.add(_INT_KEYS)
        if set(state) != expected:
            raise StateFileError(f"state entries {sorted(state)} do not match a Sliced "
                                 f"{type(self._template).__name__}'s {sorted(expected)}")
        for key, a in state.items():
            if not isinstance(a, np.ndarray):
                raise StateFileError(f"entry {key!r} is not an array")
        n = state["n"]
        if n.dtype != np.int64 or n.shape != (1,) or n[0] < 0:
            raise StateFileError("entry 'n' must be one non-negative int64")
        raw = state[_KEYS]
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise StateFileError("entry 'keys' must be UTF-8 JSON bytes")
        try:
            doc = json.loads(raw.tobytes().decode("utf-8"))
            columns, names = doc["columns"], doc["names"]
            if columns is None:
                if doc["keys"] or names is not None:
                    raise ValueError("keys without columns")
                keys = []
            else:
                if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
                    raise ValueError("bad number of columns")
                if not (isinstance(names, list) and len(names) == columns
                        and all(isinstance(s, str) for s in names)):
                    raise ValueError("bad column names")
                if _INT_KEYS in state:
                    ints = state[_INT_KEYS]
                    if columns != 1 or doc["keys"] is not None:
                        raise ValueError(f"keys given as entry {_INT_KEYS!r} are one column's, "
                                         "and only there")
                    if ints.dtype != np.int64 or ints.ndim != 1:
                        raise ValueError(f"entry {_INT_KEYS!r} must be a 1-D int64 array")
                else:  # a list, one integer column's (as earlier files wrote them) read at once
                    ints = K.int_column(doc["keys"]) if columns == 1 else None
                if ints is not None:  # one integer column's values, ascending
                    if (ints[1:] == ints[:-1]).any():
                        raise ValueError("the slice keys repeat a key")
                    keys = ints
                else:
                    keys = K.from_json(doc["keys"], columns)
                names = tuple(names)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise StateFileError(f"entry 'keys' is not a valid list of slice keys ({exc})") from None
        if len(keys) > self.max_slices:
            raise StateFileError(f"{len(keys)} slices, more than max_slices={self.max_slices}")
        if isinstance(keys, np.ndarray):
            if (keys[1:] < keys[:-1]).any():
                raise StateFileError("the slice keys are not in key order")
            key_of = keys.item  # the public key of slice i
        else:
            if keys != sorted(keys):
                raise StateFileError("the slice keys are not in key order")
            if len({K.public(k) for k in keys}) != len(keys):
                raise StateFileError("two slice keys are equal as Python keys (True and 1)")
            key_of = lambda i: K.public(keys[i])  # noqa: E731
        overall = self._template.copy()
        try:
            overall.load_state_dict({k: state[f"overall.{k}"] for k in self._template_fields})
        except ValueError as exc:
            raise StateFileError(f"overall: {exc}") from None
        g = len(keys)
        cuts = {}
        for k, empty in self._template_fields.items():
            cuts[k] = concatenated_parts(f"slices.{k}", state[f"slices.{k}"], state[f"slices.{k}#shape"], g,
                                         empty, "slices", one_shape=True)
        def slice_acc(i):
            """Slice ``i``'s accumulator, its state checked on its own."""
            sub = {k: flat[starts[i]:starts[i + 1]].reshape(tuple(shapes[i]))
                   for k, (flat, shapes, starts) in cuts.items()}
            acc = self._template.copy()
            try:
                acc.load_state_dict(sub)
            except ValueError as exc:
                raise StateFileError(f"slice {key_of(i)!r}: {exc}") from None
            if acc.n == 0:
                raise StateFileError(f"slice {key_of(i)!r} holds no rows")
            return acc

        stacked = self._stacked(cuts, g)
        if stacked is None:
            # an accumulator a slice (its arrays are the file's; the objects too take room)
            size = sum(e.nbytes for e in self._template_fields.values()) + 4096
            reserve(g * size, f"the file asks for {g} slices of at least {size} bytes each")
            accs = [slice_acc(i) for i in range(g)]
            total = sum(acc.n for acc in accs)
        else:
            # every slice's state checked at once, the flagged ones (and the
            # first without rows, for its message) one by one
            t = self._template
            with np.errstate(over="ignore", invalid="ignore"):  # as each slice's Python floats
                bad = screen_fields(type(t).fields, stacked) | t._screen_states(stacked)
            bad |= stacked["n"][:, 0] == 0
            for i in np.flatnonzero(bad).tolist():
                slice_acc(i)
            accs = None
            total = count_total(stacked["n"][:, 0])
        if total != overall.n or overall.n != n[0]:
            raise StateFileError(f"the slices hold {total} rows, the overall state {overall.n}, "
                                 f"the count {int(n[0])}")
        self._check_overall_agrees(overall, stacked, accs)
        return _Slices(overall, keys, None if columns is None else columns, names, accs, stacked)

    def _check_overall_agrees(self, overall, stacked, accs) -> None:
        """Refuse an overall state that is not its slices' states merged, where the
        template merges by its declared rules: counts exactly, float sums to
        rounding (the overall state is folded row by row, the slices' apart)."""
        template = self._template
        if type(template)._merge_state is not Accumulator._merge_state:
            return  # (a rank state, an Evaluator: not compared)
        mine = overall._state
        for f in type(template).fields:
            if f.merge not in ("sum", "pairs") or f.name == "n":
                continue
            if stacked is not None:
                parts = stacked[f.name]
            else:
                shapes = {acc._state[f.name].shape for acc in accs}
                if len(shapes) != 1:
                    continue  # (a field made on its first weighted row, in some slices only)
                parts = np.stack([acc._state[f.name] for acc in accs])
            if parts.shape[1:] != mine[f.name].shape or not parts.shape[0]:
                continue
            if f.dtype.kind == "i":
                agrees = np.array_equal(parts.sum(axis=0), mine[f.name])
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    each = compensated.values(parts) if f.merge == "pairs" else parts
                    whole = compensated.values(mine[f.name]) if f.merge == "pairs" else mine[f.name]
                    slack = 1e-9 * (np.abs(each).sum(axis=0) + np.abs(whole)) + 1e-300
                    agrees = bool(np.all(np.abs(each.sum(axis=0) - whole) <= slack))
            if not agrees:
                raise StateFileError(f"entry 'overall.{f.name}' is not the slices' entries merged")

    def _stacked(self, cuts: dict, g: int) -> dict | None:
        """Every slice's state as tables (``{field: (g, *shape)}``, copies of the
        entries, so that what is checked is what is kept) where the template's
        slices are tables and checks many states at once and every slice's
        field has the template's shape, else ``None``."""
        if self._tables_spec is None or self._template._screen_states is None or not g:
            return None
        out = {}
        for k, (flat, shapes, _) in cuts.items():
            shape = self._template_fields[k].shape
            if not (shapes == np.array(shape, np.int64)).all():
                return None
            out[k] = flat.reshape(g, *shape).copy()
        return out

    def _load(self, state) -> None:
        parsed = state if isinstance(state, _Slices) else self._checked(state)
        self._init_slices()
        if self._rest is not None:  # the other members come from the file, the linear ones are read off the slices
            self._rest = {name: m for name, m in parsed.overall._members.items() if name not in self._linear}
        else:
            self._overall = parsed.overall
        self._count = parsed.overall.n
        self._columns, self._names = parsed.columns, parsed.names
        if isinstance(parsed.keys, np.ndarray):  # one integer column's values
            self._add_keys(parsed.keys, parsed.names, ((False, True),))
        elif parsed.keys:
            self._add_keys(list(parsed.keys), parsed.names, K.kinds_of(parsed.keys, parsed.columns))
        if self._tables is not None:
            if parsed.tables is not None:
                for k, t in parsed.tables.items():
                    self._tables[k][:t.shape[0]] = t
            else:
                for g, acc in enumerate(parsed.accs):
                    for k, v in acc._state.items():
                        self._tables[k][g] = v
        else:
            self._accs = parsed.accs
        if self._tables_spec is not None and self._tables_spec.derives:
            # read the overall state off the tables again when they give the
            # loaded one to the bit (a state that folded its overall row by row,
            # weighted rows or merges, may differ: it keeps folding it)
            derived = self._derived_overall()._state
            mine = self._overall._state
            if all(np.array_equal(mine[k], derived[k]) for k in derived):
                self._overall = None

    def _clone(self):
        out = self._empty_like()
        out._overall = None if self._overall is None else self._overall.copy()
        out._rest = None if self._rest is None else {k: m.copy() for k, m in self._rest.items()}
        out._count = self._count
        out._keys = self._keys.copy()
        out._kinds = self._kinds
        out._columns, out._names = self._columns, self._names
        if self._tables is not None:
            out._tables = {k: t.copy() for k, t in self._tables.items()}
        else:
            out._accs = [a.copy() for a in self._accs]
            out._owned = None
        return out

    def reset(self):
        """Forget every row and every slice; return ``self``."""
        with self._guard:
            self._init_slices()
        return self

    # -------------------------------------------------------------- finalize
    def _compute(self, ci=None) -> SlicedResult:
        options = {} if ci is None else {"ci": ci}
        overall = self._overall_acc().finalize(**options)
        columns = score_columns(self.headline, overall)
        if ci is None:
            order = self._order()
            keys = self._keys.public(order)
            slices = LazySlices(keys, *self._snapshot(order))
            if self._tables is not None:
                counts = self._tables["n"][np.array(order, np.int64), 0].tolist() if order else []
            else:
                counts = [self._accs[g].n for g in order]
            return SlicedResult(overall, slices, dict(zip(keys, counts)), self._names, columns)
        slices, rows = {}, {}
        reader = self._template._empty_like() if self._tables is not None else None
        for g in self._order():
            key = K.public(self._keys[g])
            acc = self._slice_acc(g, reader)
            try:
                slices[key] = acc.finalize(**options)
            except ValueError:  # e.g. weights summing to zero: no score is defined
                slices[key] = None
            rows[key] = acc.n
        return SlicedResult(overall, slices, rows, self._names, columns, ci)

    def _snapshot(self, order: list):
        """``(compute, columns)`` for a :class:`LazySlices`: ``compute(i)`` the
        result of slice ``order[i]`` as the state is now, ``columns()`` every
        slice's fields at once where the tables' kind computes them so (else
        ``None``). The tables are copied (a few numbers per slice); the
        slices' accumulators are shared with the result until a later fold or
        merge first changes one, which then copies it (:meth:`_own`)."""
        columns = None
        if self._tables is not None:
            used = len(self._keys)
            tables = {k: t[:used].copy() for k, t in self._tables.items()}
            reader = self._template._empty_like()  # one object loaded slice after slice:
            # the results keep no state array, and LazySlices computes one at a time

            def acc_of(g):
                reader._load({k: t[g] for k, t in tables.items()})  # views: the snapshot never changes
                return reader

            columns = self._tables_spec.columns_of(tables, np.array(order, np.int64))
        else:
            accs = list(self._accs)
            self._owned = set()  # every accumulator is the result's too now

            def acc_of(g):
                return accs[g]

        def compute(i):
            try:
                return acc_of(order[i]).finalize()
            except ValueError:  # e.g. weights summing to zero: no score is defined
                return None

        return compute, columns

    def _own(self, g: int) -> Accumulator:
        """Slice ``g``'s accumulator, copied first if a result still reads it."""
        owned = self._owned
        if owned is not None and g not in owned:
            self._accs[g] = self._accs[g].copy()
            owned.add(g)
        return self._accs[g]

    def finalize(self, ci=None) -> SlicedResult:
        """The overall result and each slice's (a :class:`SlicedResult`); the state
        is not changed. ``ValueError`` when no row has been folded in.

        ``ci``, a confidence level in (0, 1) such as 0.95, is passed to the
        overall result and every slice's, when the template offers intervals
        (``TypeError`` otherwise); the result then flags the slices whose
        interval for a headline score leaves out the overall score.

        >>> from streammetrics import BinaryConfusion, Sliced
        >>> acc = Sliced(BinaryConfusion()).update([1] * 40 + [0] * 40, [1] * 40 + [0] * 30 + [1] * 10,
        ...                                        by=["a"] * 40 + ["b"] * 40)
        >>> r = acc.finalize(ci=0.95)
        >>> r.overall.accuracy, r.slices["b"].accuracy, r.differs["b"], r.differs["a"]
        (0.875, 0.75, ('accuracy',), ('accuracy', 'f1'))
        """
        return super().finalize(ci=ci)

    def __repr__(self) -> str:
        t = self._template
        settings = ", ".join(f"{k}={v!r}" for k, v in t.settings.items()) if not hasattr(t, "_plans") else ""
        inner = f"{type(t).__name__}({settings})" if not hasattr(t, "_plans") else repr(t).split(":")[0]
        return f"Sliced({inner}, max_slices={self.max_slices}): n={self.n} slices={len(self._keys)}"

