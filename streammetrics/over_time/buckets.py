"""Rows kept in buckets, each a full state of a template, keyed by an integer
(a time bucket, a step): what :class:`Windowed` and :class:`History` share.

State entries: ``n`` (rows held), ``seen`` (rows ever folded), ``dropped``
(rows refused as too old), ``keys`` and ``rows`` (per bucket, keys ascending),
and per entry ``e`` of the template's state ``b.<e>`` (every bucket's array,
flattened and concatenated), ``b#shape.<e>`` (their shapes) and, where only
some buckets hold the entry, ``b#of.<e>`` (which ones).
"""

from __future__ import annotations

import types
from collections import namedtuple

import numpy as np

from .._protocol.base import Accumulator, locked
from .._protocol.errors import StateFileError
from .._protocol.inputs import Batch
from .._protocol.keywords import take_names
from .._protocol.state import concatenated, concatenated_parts, loaded, reserve
from .._protocol.wrapped import KeysInput, TemplateWrapper, pack, unpack
from ..sliced.segments import fold_by_slice

#: a checked state, as a bucket wrapper installs it
Parsed = namedtuple("Parsed", "n seen dropped parts")

_COUNTS = ("n", "seen", "dropped", "keys", "rows")
_MAX_NDIM = 32


def take_rows(x, idx):
    """Rows ``idx`` (an index array or a slice) of a column as given (numpy, pandas,
    torch, a list, a tuple of columns), or ``None``."""
    if x is None:
        return None
    if hasattr(x, "iloc"):
        return x.iloc[idx]
    if isinstance(x, tuple) or (isinstance(x, list) and x and hasattr(x[0], "__len__") and not isinstance(x[0], str)):
        return type(x)(take_rows(c, idx) for c in x)
    if hasattr(x, "shape") and hasattr(x, "__getitem__"):
        return x[idx]
    return np.asarray(x)[idx]


class Buckets(TemplateWrapper, Accumulator):
    """The core of :class:`Windowed` and :class:`History` (see the module); not
    made itself."""

    #: the most buckets a state may hold (a loaded file past it is refused)
    max_buckets = 1_000_000
    #: what a bucket is called in messages
    _each = "bucket"

    def __init__(self, template):
        raise TypeError("Buckets is the core of Windowed and History: make one of them")

    def _setup(self, template, extra: str, what: str) -> None:
        self._wrap(template, self._each, KeysInput(extra, what))
        self._init_parts()

    def _init_parts(self) -> None:
        self._parts = {}  # key -> accumulator, keys ascending
        self._count = 0
        self._seen = 0
        self._dropped = 0

    # a subclass defines ``_extra(value, n)`` (its own column, checked) and ``_keys_of(extra, n)``
    # (each row's bucket key, under the lock)
    def _oldest_kept(self, newest: int):
        """The oldest key kept once ``newest`` is the newest, or ``None`` (all)."""
        return None

    # --------------------------------------------------------------- folding
    def prepare(self, *arrays, sample_weight=None, **options) -> Batch:
        """Check one batch with the template (``options`` such as ``by=`` are
        the template's) and the wrapper's own column: a batch for :meth:`fold`."""
        extra = self.inputs[-1].name
        arrays, options = take_names(self._template.inputs, arrays, options, self, (extra,))
        value = options.pop(extra, None)
        if value is None:  # (else the template's arrays are as given: a Sliced's by= may be a keyword)
            arrays, value = self._split_keys(arrays, None, f"{extra}=")
        tb = self._template.prepare(*arrays, sample_weight=sample_weight, **options)
        plain = all(isinstance(a, np.ndarray) for a in tb.arrays)
        raw = None if plain else (arrays, sample_weight, options)
        return pack(tb, (self._extra(value, tb.n), raw), self._template, self.inputs[-1])

    def update(self, *arrays, sample_weight=None, **options):
        """Fold one batch into its buckets; return ``self``. A bad value raises
        ``ValueError`` naming it, the accumulator unchanged."""
        return self.fold(self.prepare(*arrays, sample_weight=sample_weight, **options))

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        tb, (extra, raw) = unpack(batch, self._template, f"{type(self).__name__}.prepare()")
        if not tb.n:
            return self
        with self._guard:
            self._check_room(tb.n)
            keys = self._keys_of(extra, tb.n)
            before = next(reversed(self._parts)) if self._parts else None
            oldest = self._oldest_kept(int(keys.max()) if before is None else max(int(keys.max()), before))
            rows = np.arange(tb.n) if oldest is None else np.flatnonzero(keys >= oldest)
            # late rows, older than the range kept before this batch, are dropped;
            # the others older than the new range aged out within the batch
            late = None if before is None else self._oldest_kept(before)
            dropped = 0 if late is None else int(np.count_nonzero(keys < late))
            if rows.shape[0] == tb.n and raw is None and keys.min() == keys.max():  # one bucket: the batch whole
                self._part(int(keys[0])).fold(tb)
            elif rows.shape[0]:
                uniq, codes = np.unique(keys[rows], return_inverse=True)
                if raw is None:
                    self._fold_plain(tb, rows, uniq, codes)
                else:
                    self._fold_raw(raw, rows, uniq, codes)
            self._seen += tb.n
            self._dropped += dropped
            self._count += rows.shape[0]
            self._evict(oldest)
        return self

    def _fold_plain(self, tb: Batch, rows, uniq, codes) -> None:
        if rows.shape[0] < tb.n:
            tb = tb.rows(rows)
        fold_by_slice(tb, types.SimpleNamespace(codes=codes), uniq, self._part)

    def _fold_raw(self, raw, rows, uniq, codes) -> None:
        """Fold each bucket's rows as given (a batch the wrapper cannot cut, such
        as a Sliced template's) into copies, installed once all took theirs."""
        arrays, w, options = raw
        made = {}
        for j, key in enumerate(uniq.tolist()):
            idx = rows[codes == j]
            acc = self._parts[key].copy() if key in self._parts else self._template.copy()
            cut = {k: take_rows(v, idx) for k, v in options.items()}
            made[key] = acc.update(*take_rows(arrays, idx), sample_weight=take_rows(w, idx), **cut)
        self._install(made)

    def _part(self, key: int) -> Accumulator:
        if key not in self._parts:
            self._install({key: self._template.copy()})
        return self._parts[key]

    def _install(self, parts: dict) -> None:
        new = any(k not in self._parts for k in parts)
        self._parts.update(parts)
        if new:
            self._parts = dict(sorted(self._parts.items()))

    def _evict(self, oldest) -> None:
        """Drop the buckets older than ``oldest`` (their rows leave ``n``)."""
        if oldest is None:
            return
        for key in [k for k in self._parts if k < oldest]:
            self._count -= self._parts.pop(key).n

    # ---------------------------------------------------------------- reading
    @property
    def n(self) -> int:
        """Rows held in the buckets kept."""
        return self._count

    @property
    def dropped(self) -> int:
        """Rows refused because their bucket was older than the kept range."""
        return self._dropped

    def parts(self) -> dict:
        """``{key: accumulator}`` of every bucket kept, keys ascending (the
        accumulators themselves: read them, do not change them)."""
        with self._guard:
            return dict(self._parts)

    def _results(self, ci=None) -> list:
        """Each bucket's ``(key, rows, result or None)`` (``None``: no score is defined)."""
        out = []
        for key, acc in self.parts().items():
            try:
                out.append((key, acc.n, acc.finalize(ci=ci)))
            except ValueError:  # e.g. weights summing to zero
                out.append((key, acc.n, None))
        return out

    def merged(self) -> Accumulator:
        """The template holding every kept bucket's rows (a new accumulator)."""
        out = self._template.copy()
        for acc in self.parts().values():
            out.merge(acc)
        return out

    # ------------------------------------------------------------------ merge
    def merge(self, other):
        """Fold ``other`` (same settings) in bucket by bucket: the same keys'
        states merge, the others are added; return ``self``. Refused whole,
        both unchanged, when a bucket's merge would be."""
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with locked(self, other):
            self._merge_check(other)
            self._check_room(other.n, "merging")
            for key, acc in other.parts().items():
                if key in self._parts:
                    self._parts[key].merge(acc)
                else:
                    self._install({key: acc.copy()})
            self._count += other.n
            self._seen = self._merged_seen(other)
            self._dropped += other.dropped
            if self._parts:
                self._evict(self._oldest_kept(next(reversed(self._parts))))
        return self

    def _merge_check(self, other) -> None:
        for key, acc in other.parts().items():
            if key in self._parts:
                self._parts[key].check_merge(acc)

    def _merged_seen(self, other) -> int:
        return self._seen + other.seen

    @property
    def seen(self) -> int:
        """Rows ever folded in (kept, evicted or dropped)."""
        return self._seen

    # ------------------------------------------------------------------ state
    @property
    def _state(self) -> dict:
        accs = list(self._parts.values())
        counts = ([self.n], [self.seen], [self._dropped], list(self._parts), [a.n for a in accs])
        st = {k: np.array(v, np.int64) for k, v in zip(_COUNTS, counts)}
        states = [a.state_dict() for a in accs]
        for e in sorted(set().union(*states)):
            holders = [i for i, s in enumerate(states) if e in s]
            flat, shapes = concatenated([states[i][e] for i in holders], states[holders[0]][e])
            st[f"b.{e}"], st[f"b#shape.{e}"] = flat, shapes
            if len(holders) < len(states):
                st[f"b#of.{e}"] = np.array(holders, np.int64)
        return st

    def _checked(self, state) -> Parsed:
        """Parse and check a state (untrusted): a :class:`Parsed`, or ``StateFileError``."""
        if not isinstance(state, dict):
            raise StateFileError(f"a state must be a dict of arrays, got {type(state).__name__}")
        for k in _COUNTS:
            a = state.get(k)
            if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.ndim != 1:
                raise StateFileError(f"entry {k!r} must be a 1-D int64 array")
        n, seen, dropped, keys, rows = (state[k] for k in _COUNTS)
        if any(a.shape != (1,) or a[0] < 0 for a in (n, seen, dropped)):
            raise StateFileError("entries 'n', 'seen' and 'dropped' must each be one non-negative count")
        g = keys.shape[0]
        if g > self.max_buckets or rows.shape != (g,):
            raise StateFileError(f"{g} {self._each}s with {rows.shape[0]} row counts (at most {self.max_buckets})")
        if g and ((keys[1:] <= keys[:-1]).any() or (rows <= 0).any()):
            raise StateFileError(f"the {self._each} keys must ascend and every {self._each} hold rows")
        if sum(rows.tolist()) != n[0]:
            raise StateFileError(f"the {self._each}s hold {sum(rows.tolist())} rows, the count {n[0]}")
        self._check_keys(keys)
        cuts = {}
        for k, flat in state.items():
            if k in _COUNTS or k.startswith(("b#shape.", "b#of.")):
                continue
            if not k.startswith("b."):
                raise StateFileError(f"unknown state entry {k!r}")
            e = k[2:]
            shapes, of = state.get(f"b#shape.{e}"), state.get(f"b#of.{e}", np.arange(g, dtype=np.int64))
            if not isinstance(shapes, np.ndarray) or shapes.ndim != 2 or shapes.shape[1] > _MAX_NDIM:
                raise StateFileError(f"entry 'b#shape.{e}' must be a table of shapes")
            if not isinstance(of, np.ndarray) or of.dtype != np.int64 or of.ndim != 1 or not of.shape[0]:
                raise StateFileError(f"entry 'b#of.{e}' must list the {self._each}s holding {e!r}")
            if (of[1:] <= of[:-1]).any() or of[0] < 0 or of[-1] >= g:
                raise StateFileError(f"entry 'b#of.{e}' must list {self._each}s, ascending")
            if not isinstance(flat, np.ndarray) or flat.dtype.kind not in "biuf":
                raise StateFileError(f"entry {k!r} must be a numeric array")
            empty = np.zeros((0,) * shapes.shape[1], flat.dtype)
            cut = concatenated_parts(k, flat, shapes, of.shape[0], empty, f"{self._each}s")
            cuts[e] = (cut, {int(b): j for j, b in enumerate(of.tolist())})
        extra = {k.split(".", 1)[1] for k in state if k.startswith(("b#shape.", "b#of."))}
        if extra - set(cuts):
            raise StateFileError(f"shapes or holders without values: {sorted(extra - set(cuts))[:3]}")
        reserve(g * 4096, f"the file asks for {g} {self._each}s")
        parts = {}
        for i, key in enumerate(keys.tolist()):
            part = {}
            for e, ((flat, shapes, starts), where) in cuts.items():
                j = where.get(i)
                if j is not None:
                    part[e] = flat[starts[j] : starts[j + 1]].reshape(tuple(shapes[j]))
            acc = loaded(self._template.copy(), part, f"{self._each} {key}")
            if acc.n != rows[i]:
                raise StateFileError(f"{self._each} {key} holds {acc.n} rows, not {rows[i]}")
            parts[key] = acc
        return Parsed(int(n[0]), int(seen[0]), int(dropped[0]), parts)

    def _check_keys(self, keys: np.ndarray) -> None:
        """Invariants of a loaded state's keys beyond ascending (``ValueError``)."""

    def _load(self, state) -> None:
        parsed = state if isinstance(state, Parsed) else self._checked(state)
        self._init_parts()
        self._count, self._seen, self._dropped = parsed.n, parsed.seen, parsed.dropped
        self._parts = dict(parsed.parts)

    def _clone(self):
        return self.with_state(Parsed(self.n, self.seen, self._dropped, {k: a.copy() for k, a in self._parts.items()}))
