"""Sliced: any accumulator's scores per slice of the data (per country, per device, ...)."""

from __future__ import annotations

import numpy as np

from .._kernels.grouped import key_range
from .._protocol.base import Accumulator, locked
from .._protocol.errors import NoWeightsError
from .._protocol.inputs import Batch, convert, raise_rejected
from .._protocol.keywords import arrays_by_name
from .._protocol.state import concatenated
from .._protocol.wrapped import KeysInput, TemplateWrapper, pack, unpack
from . import encode as E
from . import keys as K
from . import states as S
from .result import LazySlices, SlicedResult, at_least_one, score_columns
from .segments import fold_by_slice
from .tables import select, sum_terms, tables_for

__all__ = ["Sliced", "DEFAULT_MAX_SLICES"]

#: the default bound on the number of distinct slices
DEFAULT_MAX_SLICES = 10_000


def _by(names) -> str:
    """The ``by`` argument as messages name it, with its columns' names."""
    return "by" if tuple(names) == ("by",) else f"by ({', '.join(names)})"


#: the cells a batch's groups may span beyond four a row, when summed by key
MIN_CELLS = 1 << 14


def _int_column(by):
    """``(values, (label, name))`` of ``by`` when it is one column of integers
    within ``int64`` (a numpy array, or a pandas Series of a numpy integer
    dtype, named as the coded path names it), else ``None``."""
    named = ("by", "by")
    if type(by) is not np.ndarray:
        series = type(by).__module__.startswith("pandas") and hasattr(by, "to_numpy")
        if not (series and getattr(by, "ndim", 0) == 1 and isinstance(getattr(by, "dtype", None), np.dtype)):
            return None
        named = E.columns_of(by)[0][:2]
        by = by.to_numpy()
    if by.ndim != 1 or by.dtype.kind not in "iu" or (by.dtype.kind == "u" and by.dtype.itemsize == 8):
        return None
    return by, named


class Sliced(TemplateWrapper, Accumulator):
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
    of columns or a DataFrame, whose combinations are the slices (the key is
    a tuple). The keys may also come as one extra positional column.

    Returns (``finalize()``)
    ------------------------
    A :class:`SlicedResult`: ``.overall``, ``.slices`` (key -> result, in key
    order: booleans, numbers, strings, the null key last), ``.rows``; as a
    mapping ``n``, ``n_slices``, ``slice_n`` and each headline score overall
    (``f1``) and per slice (``slice_f1``). A slice's result is built when
    first read (with ``ci=``, all at once).

    Notes
    -----
    A template that declares its row terms (:mod:`streammetrics._protocol.terms`)
    keeps every slice as a row of one table per field: a batch's terms are
    summed per slice in one pass (compensated) and the overall state is the
    slices' merged (counts exact, sums to a few ulps of the unsliced pass).
    Any other template keeps one accumulator per slice, folds each batch
    sorted by slice, and folds every row overall too. The whole batch is
    checked before any state changes. The state file holds the keys as JSON,
    never a pickle.

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

    _own_settings = {"max_slices": DEFAULT_MAX_SLICES}

    def __init__(self, template: Accumulator, max_slices: int = DEFAULT_MAX_SLICES):
        if isinstance(template, Sliced):
            raise TypeError("template must not be a Sliced accumulator: slice by a cross, by=(a, b), instead")
        self._wrap(template, "slice", KeysInput("by", "slice keys"))
        self.max_slices = at_least_one("max_slices", max_slices)
        #: the slices as rows of tables (a template of declared row terms), or ``None``
        self._spec = tables_for(self._template)
        # the template's empty state: its fields' names, dtypes and dimensions
        self._template_fields = self._template.copy().reset().state_dict()
        self._init_parts()

    def _init_parts(self) -> None:
        # tables: the overall state is the slices' merged, read when asked for;
        # else an accumulator folds every row a second time
        self._overall = None if self._spec is not None else self._template.copy()
        self._count = 0  # rows folded in, over every slice
        self._keys = K.KeyTable()  # slice id -> internal key, and back
        self._kinds = None  # per key column: (booleans seen?, numbers seen?)
        self._columns = None  # the number of key columns, once known
        self._names = None
        self._tables = None if self._spec is None else self._spec.empty(8)
        self._accs = [] if self._spec is None else None
        #: the slices whose accumulator no result reads (``None``: all of them)
        self._owned = None

    # --------------------------------------------------------------- inputs
    def prepare(self, *arrays, sample_weight=None, by=None, **named) -> Batch:
        """Convert and check one batch and code its slice keys: a :class:`~streammetrics.Batch`.

        The template's arrays are checked as the template checks them (a bad
        value raises ``ValueError`` naming the argument and its position);
        ``by`` must give one key per row.
        """
        arrays, by = self._split_keys(arrays, by, "by=keys", named)
        if by is None:
            raise TypeError(
                f"Sliced.update needs the slice keys: update({', '.join(i.name for i in self._template.inputs)}, "
                "by=keys), keys one column or a tuple of columns"
            )
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        keys = E.encode(by, tb.n, self.max_slices)
        return pack(tb, keys, self._template, self.inputs[-1])

    def update(self, *arrays, sample_weight=None, by=None, **named):
        """Fold one batch into its slices and the overall state; return ``self``.

        A batch with a bad value, a ``by`` of the wrong length, or keys that
        would bring more than ``max_slices`` slices raises ``ValueError`` and
        leaves the accumulator exactly as it was.
        """
        if named:  # the template's arrays by name: update(y=..., p=..., by=...)
            arrays = arrays_by_name(self._template.inputs, arrays, named, self)
        column = _int_column(by) if self._spec is not None and by is not None else None
        if column is not None and self._sum_by_key(arrays, sample_weight, *column):
            return self
        return self.fold(self.prepare(*arrays, sample_weight=sample_weight, by=by))

    def _sum_by_key(self, arrays, sample_weight, by, named) -> bool:
        """Check a batch and sum its terms by its integer keys in one pass, before
        the distinct keys are known (the groups are the values of the keys'
        range); return ``False``, with nothing changed, where the coded path
        must fold it (keys too sparse, a length or state that path reports
        on). A bad value raises as :meth:`prepare` would, with nothing changed."""
        template, terms = self._template, self._spec.terms
        if len(arrays) != len(template.inputs) or self._keys.ints is None:
            return False
        converted, w, n = convert(template.inputs, arrays, sample_weight, self.takes_weights, template)
        if by.shape[0] != n or not n:
            return False
        keys = np.ascontiguousarray(by, np.int64)
        lo, hi = (int(v) for v in key_range(keys, 0, n))
        span = hi - lo + 1
        if span * terms.size > max(4 * n, MIN_CELLS):
            return False
        batch = Batch(template.inputs, converted, w, n)  # checked by the terms' kernel
        status, sums = sum_terms(terms, batch, span, keys, lo, second=True)
        if status:
            raise_rejected(template.inputs, converted)
        present = np.flatnonzero(sums.rows)
        values = present + lo
        E.check_batch_keys(values.shape[0], self.max_slices, named[0])
        with self._guard:
            if self._keys.ints is None:  # changed by another thread
                return False
            self._fold_sums(n, select(sums, present), values, None, (named[1],))
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
        sums = None
        if self._spec is not None:
            status, sums = sum_terms(self._spec.terms, tb, len(keys), keys.codes, 0, second=True)
            if status:  # (a prepared batch was checked: cannot happen)
                raise_rejected(tb.inputs, tb.arrays)
        with self._guard:
            self._fold_sums(tb.n, sums, keys.ints, keys, keys.names, tb)
        return self

    def _fold_sums(self, n: int, sums, ints, keys, names, tb=None) -> None:
        """Fold a batch of ``n`` rows (under the lock): its keys (``ints``: one
        integer column's values, ascending, else ``keys``' internal keys), and
        ``sums`` (one group per key) into the tables, or ``tb`` slice by slice."""
        start = len(self._keys)
        if ints is not None and self._keys.ints is not None:
            # one integer column, and every slice so far one too: looked up by value
            glob = self._keys.ids_of_ints(ints)
            new = ints[glob < 0]
            glob[glob < 0] = np.arange(start, start + len(new))
        else:
            ids = self._keys.index() if start else {}
            new = [k for k in keys.keys if k not in ids]
            fresh = dict(zip(new, range(start, start + len(new))))
            glob = np.fromiter((ids[k] if k in ids else fresh[k] for k in keys.keys), np.int64, len(keys.keys))
        self._check_keys(n, new, names)
        if sums is not None:  # (before the keys: a total past float64 changes nothing)
            self._tables = self._spec.with_room(self._tables, start, start + len(new))
            self._spec.add(self._tables, start, glob, sums)
        self._add_keys(new, names)
        if sums is None:
            self._overall.fold(tb)
            fold_by_slice(tb, keys, glob, self._own)
        self._count += n

    def _check_keys(self, rows: int, new, names, what: str = "folding") -> None:
        """Refuse ``rows`` more rows with the new keys ``new`` (of columns ``names``):
        past the count's range, another number of key columns,
        more than ``max_slices`` slices, or a new key equal to another as a
        Python key (``True == 1``: only a column holding both booleans and
        numbers can make two equal)."""
        self._check_room(rows, what)
        if self._columns is not None and len(names) != self._columns:
            raise ValueError(
                f"by: these keys have {len(names)} column{'s' if len(names) > 1 else ''} "
                f"({', '.join(names)}) but the slices so far have {self._columns} "
                f"({', '.join(self._names)})"
            )
        total = len(self._keys) + len(new)
        if total > self.max_slices:
            raise ValueError(
                f"{_by(names)}: {total:,} distinct slice keys seen, more than "
                f"max_slices={self.max_slices:,}; nothing was folded in (pass a larger max_slices, "
                "or slice by a column with fewer distinct values)"
            )
        if not len(new) or not any(a and b for a, b in self._kinds_with(new, names)):
            return
        public = {K.public(k): k for k in self._keys}  # (and the new ones, as they come)
        for k in new:
            other = public.setdefault(K.public(k), k)
            if other != k:
                raise ValueError(
                    f"{_by(names)}: the keys {K.public(other)!r} and {K.public(k)!r} are of different kinds "
                    "but equal as Python keys (True == 1): give one column one kind of key"
                )

    def _add_keys(self, new, names) -> None:
        """Add the slices of ``new`` (internal keys, or one integer column's values
        in an array no one else holds, kept as it is)."""
        if self._columns is None:
            self._columns = len(names)
            self._names = tuple(names)
        if not len(new):
            return
        start = len(self._keys)
        self._kinds = self._kinds_with(new, names)
        self._keys.extend(new)
        total = len(self._keys)
        if self._tables is not None:
            self._tables = self._spec.with_room(self._tables, start, total)
        else:
            self._accs.extend(self._template.copy() for _ in range(len(new)))
            if self._owned is not None:
                self._owned.update(range(start, total))

    def _kinds_with(self, new, names) -> list:
        """Per key column (named ``names``), ``(booleans?, numbers?)`` among the
        keys so far and the new keys ``new`` (internal keys, or one integer
        column's values)."""
        mine = self._kinds or [(False, False)] * len(names)
        theirs = ((False, True),) if isinstance(new, np.ndarray) else K.kinds_of(new, len(names))
        return [(a or c, b or d) for (a, b), (c, d) in zip(mine, theirs)]

    # ----------------------------------------------------------------- merge
    def merge(self, other: Sliced):
        """Fold ``other`` (same template settings) in: its slices add to the same
        keys' slices here, and slices only it has are added; return ``self``.

        ``ValueError``, with both unchanged, if the settings differ, the key
        columns differ in number, or the union of slices exceeds ``max_slices``.
        """
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with locked(self, other):
            checked = self._merge_check(other)
            if checked is None:
                return self
            keys, names, count, parts, overall, new = checked
            if self._overall is not None:  # (both fold their overall: the same template)
                self._overall.merge(overall)
            self._add_keys(new, names)
            ids = self._keys.index()
            idx = np.fromiter((ids[k] for k in keys), np.int64, len(keys))
            self._count += count
            if self._tables is not None:
                self._spec.merge(self._tables, idx, parts)
            else:
                for j, g in enumerate(idx.tolist()):
                    self._own(g).merge(parts[j])  # (checked above)
        return self

    def _merge_check(self, other: Sliced):
        """Raise what merging ``other`` would refuse (too many slices, other key
        columns, totals past float64 in a slice or overall), before any slice
        changes: a merge is refused whole. Return ``other``'s keys (in id order),
        key columns' names, rows, slices (the used rows of its tables, or its
        accumulators), folded overall (or ``None``) and its new keys; or ``None``
        if ``other`` is empty."""
        keys, names, count, overall = list(other._keys), other._names, other._count, other._overall
        if names is None:
            return None
        parts = other._accs if other._tables is None else {k: t[: len(keys)] for k, t in other._tables.items()}
        ids = self._keys.index()
        new = [k for k in keys if k not in ids]
        self._check_keys(count, new, names, "merging")
        if self._overall is not None:
            self._overall.check_merge(overall)
        if self._tables is None or not self._spec.merge_far(self._tables, len(self._keys), parts, len(keys)):
            pairs = [(ids[k], j) for j, k in enumerate(keys) if k in ids]
            if self._tables is None:
                for g, j in pairs:
                    self._accs[g].check_merge(parts[j])
            elif pairs:
                rows, theirs = (np.array(v, np.int64) for v in zip(*pairs))
                self._spec.merge_check(self._tables, rows, parts, theirs)
        return keys, names, count, parts, overall, new

    # ----------------------------------------------------------------- state
    @property
    def n(self) -> int:
        """Rows folded in so far (over every slice)."""
        return self._count

    def _overall_acc(self) -> Accumulator:
        """The accumulator of every row: the one folded, or one read off the tables
        (made anew at each call: reading a state never changes the object)."""
        if self._overall is not None:
            return self._overall
        used = len(self._keys)
        order = np.array(self._keys.order(), np.int64) if used else None
        return self._template.with_state(self._spec.overall_state(self._tables, used, order))

    @property
    def n_slices(self) -> int:
        """The number of distinct slices seen so far."""
        return len(self._keys)

    def _slice_acc(self, g: int) -> Accumulator:
        """Slice ``g``'s accumulator (a table row's, made anew)."""
        if self._tables is not None:
            return self._template.with_state(self._spec.state_of(self._tables, g))
        return self._accs[g]

    @property
    def _state(self) -> dict[str, np.ndarray]:
        """The state's entries (see :mod:`.states`), slices in key order (so equal
        contents give equal states)."""
        order = self._keys.order()
        rows = np.asarray(order, np.int64)
        ints = self._keys.ints if self._columns == 1 else None
        keys = [self._keys[g] for g in order] if ints is None else None
        state = S.keys_entries(self.n, self._columns, self._names, keys, None if ints is None else ints[rows])
        state.update({f"overall.{k}": v for k, v in self._overall_acc().state_dict().items()})
        parts = None if self._tables is not None else [self._accs[g].state_dict() for g in order]
        for k, empty in self._template_fields.items():
            if parts is None:  # every slice's field is a row of its table
                flat, shapes = self._tables[k][rows].reshape(-1), None
            else:
                flat, shapes = concatenated([p[k] for p in parts], empty)
                shapes = None if (shapes == empty.shape).all() else shapes
            state.update(S.slice_entries(k, empty, flat, shapes))
        return state

    def _checked(self, state) -> S.Parsed:
        """Parse and check a state (untrusted): a :class:`~.states.Parsed`, or ``StateFileError``."""
        return S.parse(state, self._template, self._template_fields, self.max_slices, self._spec is not None)

    def _load(self, state) -> None:
        parsed = state if isinstance(state, S.Parsed) else self._checked(state)
        self._init_parts()
        if self._overall is not None:
            self._overall = parsed.overall
        self._count = parsed.overall.n
        self._columns, self._names = parsed.columns, parsed.names
        if len(parsed.keys):  # one integer column's values (an array), or a list of internal keys
            self._add_keys(parsed.keys.copy(), parsed.names)
        if self._tables is not None:
            for k, t in parsed.tables.items():
                self._tables[k][: t.shape[0]] = t
        else:
            self._accs = parsed.accs

    def _clone(self):
        out = self._empty_like()
        vars(out).update(
            _template=self._template.copy(),  # (the slices' copies and new slices share what the template shares)
            _overall=None if self._overall is None else self._overall.copy(),
            _count=self._count,
            _keys=self._keys.copy(),
            _kinds=self._kinds,
            _columns=self._columns,
            _names=self._names,
            _tables=None if self._tables is None else {k: t.copy() for k, t in self._tables.items()},
            _accs=None if self._accs is None else [a.copy() for a in self._accs],
        )
        return out

    # -------------------------------------------------------------- finalize
    def _compute(self, ci=None) -> SlicedResult:
        options = {} if ci is None else {"ci": ci}
        overall = self._overall_acc().finalize(**options)
        columns = score_columns(self.headline, overall)
        order = self._keys.order()
        keys = self._keys.public(order)
        if self._tables is not None:
            counts = self._tables["n"][np.array(order, np.int64), 0].tolist() if order else []
        else:
            counts = [self._accs[g].n for g in order]
        # (with intervals the result reads every slice's at once)
        slices = LazySlices(keys, *self._snapshot(order, options))
        return SlicedResult(overall, slices, dict(zip(keys, counts)), self._names, columns, ci)

    def _snapshot(self, order: list, options: dict):
        """``(compute, columns)`` for a :class:`LazySlices`: ``compute(i)`` the
        result of slice ``order[i]`` as the state is now (``finalize(**options)``),
        ``columns()`` every slice's fields at once where the tables' kind
        computes them so (else ``None``). The tables are copied (a few numbers
        per slice); the slices' accumulators are shared with the result until a
        later fold or merge first changes one, which then copies it (:meth:`_own`)."""
        columns = None
        if self._tables is not None:
            used = len(self._keys)
            tables = {k: t[:used].copy() for k, t in self._tables.items()}
            template, rows = self._template, np.array(order, np.int64)

            def acc_of(g):  # the snapshot's rows, as views: it never changes
                return template.with_state({k: t[g] for k, t in tables.items()})

            def columns():
                return template.result_columns({k: t[rows] for k, t in tables.items()})
        else:
            acc_of = list(self._accs).__getitem__
            self._owned = set()  # every accumulator is the result's too now

        def compute(i):
            try:
                return acc_of(order[i]).finalize(**options)
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
        return f"Sliced({self._inner()}, max_slices={self.max_slices}): n={self.n} slices={len(self._keys)}"
