"""The accumulator protocol shared by every streaming metric.

A subclass declares

* ``inputs``: its positional arguments, as :class:`~.inputs.Input` objects
  (a class attribute, or an instance attribute set in ``__init__`` when it
  depends on the settings); ``takes_weights = False`` if its scores take no
  sample weights;
* ``fields``: its state, as :class:`~.state.Field` declarations;
* ``_settings()``: the constructor arguments that define compatibility (two
  accumulators merge only when these are equal), which ``save`` records;
* ``_fold(arrays, w)``: fold converted arrays into the state with its kernel,
  returning the kernel's status (0: folded; otherwise the state is unchanged
  and the batch held a bad value);
* ``_compute()``: the :class:`~.result.Result` of the state; an accumulator
  that offers confidence intervals sets ``intervals = True`` and takes
  ``_compute(ci=level)`` (``level`` a float in (0, 1), checked here);

and, where a rule of :mod:`.state` does not say it, ``_merge_state(state)``
(which merges its ``"custom"`` fields) and ``_check_state(state)``. From that
it gets the whole protocol (``prepare``, ``fold``, ``update``, ``merge``,
``copy``, ``finalize``, pickling, state dicts, a safe ``save``/``load``). A
state not held as its fields in memory overrides ``_state``, ``_load``,
``_merge_state``, ``n`` and ``_clone``.

Every public method that reads or changes the state holds the accumulator's
own reentrant lock; ``merge`` and ``==`` take both locks, in a fixed order.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import threading
import types
from typing import Any, ClassVar

import numpy as np

from .._kernels.checks import first_nonfinite
from .._kernels.compensated import BLOCK
from .._kernels.row_sums import sum_terms
from . import errors, statefile
from . import state as S
from .inputs import Batch, Input, convert, prepare, raise_rejected
from .keywords import arrays_by_name
from .result import Result
from .terms import Sums

#: the most float totals a weighted fold reads before it folds, to know them
#: far from float64's top (see ``Accumulator._far_from_overflow``)
SCANNED_TOTALS = 4096

#: how many times its own arrays' bytes (and 64 MB) the states a loaded file
#: expands into may take (zeros written in short, parts made by copying)
LOAD_EXPANSION = 16


class Accumulator:
    """Base class of the streaming, mergeable metrics (see the module docstring)."""

    #: the positional arguments of ``update``
    inputs: tuple[Input, ...] = ()
    #: their names, for a class whose ``inputs`` are made per instance (``help(cls.update)``)
    argument_names: ClassVar[tuple[str, ...]] = ()
    #: whether ``update`` takes ``sample_weight``
    takes_weights: ClassVar[bool] = True
    #: the state's arrays
    fields: ClassVar[tuple[S.Field, ...]] = ()
    #: result fields shown by ``repr`` (and a report's one-line summary)
    headline: ClassVar[tuple[str, ...]] = ()
    #: whether ``finalize(ci=...)`` adds confidence intervals
    intervals: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            statefile.register(cls)
        inputs = vars(cls).get("inputs")
        names = vars(cls).get("argument_names") or (tuple(i.name for i in inputs) if isinstance(inputs, tuple) else ())
        if names:  # help() and IDEs show the class's own argument order
            for name in ("update", "prepare"):
                own = vars(cls).get(name)
                if own is None and getattr(cls, name) is getattr(Accumulator, name, None):
                    setattr(cls, name, _named_copy(getattr(Accumulator, name), cls, names))
                elif own is not None and "arrays" in inspect.signature(own).parameters:
                    own.__signature__ = _signature(names)

    # ---------------------------------------------------------------- to override
    def _settings(self) -> dict[str, Any]:
        return {}

    def _fold(self, arrays, w) -> int:
        raise NotImplementedError

    def _compute(self) -> Result:
        raise NotImplementedError

    def _merge_check(self, other: Accumulator) -> None:
        """Raise what merging ``other`` (compatible, room checked) would refuse,
        changing nothing (so that a composite never merges half its parts)."""
        if type(self)._merge_state is Accumulator._merge_state:
            S.check_merge_fields(self.fields, self._arrays, other._state)

    def _check_state(self, state: dict[str, np.ndarray]) -> None:
        """Invariants of a loaded state beyond its declaration; raise ``ValueError`` if bad."""

    #: ``_screen_states(stacked)``: a mask flagging at least every one of many
    #: stacked states that :meth:`_check_state` refuses (see :meth:`screen_states`)
    _screen_states = None

    #: whether the weighted fold leaves its totals unchecked: a weighted batch is
    #: then folded beside a copy of the state, put back on an overflow
    _totals_unchecked: ClassVar[bool] = False

    # ----------------------------------------------------------------- row terms
    def row_terms(self):
        """The terms each row adds to the state, where the state is a sum of them
        (a :class:`~streammetrics._protocol.terms.RowTerms`), else ``None``."""
        return None

    def _add_sums(self, sums, state) -> None:
        """Add ``sums`` (one group per entry of the leading axis of ``state``'s
        fields) into ``state``; the classes that declare row terms say how."""
        raise NotImplementedError(f"{type(self).__name__} declares no row terms")

    def _fold_terms(self, kernel, args, w, size: int, width: int, second=None, block: int = BLOCK) -> int:
        """Fold the rows of ``args`` into the state: their terms (``kernel``, ``width``
        a row into ``size`` slots) summed by :func:`~.._kernels.row_sums.sum_terms`,
        added by :meth:`_add_sums`. The kernel's status; a weighted total past
        float64's range raises ``WeightOverflowError``, the state unchanged."""
        counts, pairs = np.zeros(size, np.int64), np.zeros((size, 2))
        moments = None if second is None else np.zeros((size, 2))
        status = sum_terms(kernel, args, w, width, counts, pairs, moments, second, block)
        if status:
            return status
        weighted = w.shape[0] > 0
        # weighted rows go into a copy, taken when every total stays finite
        st = {k: v.copy() for k, v in self._arrays.items()} if weighted else self._arrays
        self._add_sums(Sums(counts, pairs, moments, args[0].shape[0], weighted), st)
        if weighted:
            for v in st.values():  # (a state of terms: its float fields are sums)
                if v.dtype.kind == "f" and first_nonfinite(v.reshape(-1)) >= 0:
                    raise errors.WeightOverflowError()
            self._load(st)
        return 0

    def add_sums(self, sums, state=None) -> None:
        """Add summed row terms (:class:`~streammetrics._protocol.terms.Sums` of one
        group) into the state, or each group's into its row of ``state`` (this
        class's fields stacked on a leading axis). ``WeightOverflowError`` where
        a total would pass float64's range, the state unchanged."""
        if state is not None:
            self._add_sums(sums, state)
            # (counts alone cannot pass float64's range)
            if sums.pairs is not None and not _finite_totals(self.fields, state):
                raise errors.WeightOverflowError()
            return
        with self._guard:
            self._check_room(int(sums.rows.sum()))
            stacked = {k: v.copy()[np.newaxis] for k, v in self._arrays.items()}
            self.add_sums(sums, stacked)
            self._load({k: v[0] for k, v in stacked.items()})

    def fold_rest(self, batch) -> None:
        """Fold ``batch`` into the parts of the state its row terms do not cover
        (an Evaluator's members that declare none); nothing here."""

    def screen_states(self, stacked: dict):
        """Which of many states (fields stacked on a leading axis) a load could
        refuse: a mask flagging at least each one, or ``None`` (no screen)."""
        screen = self._screen_states
        return None if screen is None else screen(stacked)

    def result_columns(self, stacked: dict):
        """The scalar fields of many stacked states' results at once
        (``{name: array}``), or ``None`` where they come one by one."""
        return None

    # ------------------------------------------------------------------- locking
    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._guard = threading.RLock()  # made with the object: pickling and copies included
        return obj

    # ------------------------------------------------------------------ storage
    def _init_state(self) -> None:
        self._arrays = S.empty_state(self.fields, self)

    @property
    def _state(self) -> dict[str, np.ndarray]:
        """The state as its declared fields; reading it never changes the object."""
        return self._arrays

    def _load(self, state: dict[str, np.ndarray]) -> None:
        """Take ``state`` (checked, owned arrays) as this accumulator's state."""
        self._arrays = state

    def _merge_state(self, other: dict[str, np.ndarray]) -> None:
        S.merge_fields(self.fields, self._arrays, other)

    #: whether every attribute but the state and the lock is a setting fixed in
    #: ``__init__``: a copy then shares them
    _fixed_settings: ClassVar[bool] = False

    def _clone(self):
        """An independent copy (the settings, and a copy of the state)."""
        return self.with_state(S.copy_state(self._state))

    def with_state(self, state: dict):
        """A new accumulator of these settings holding ``state`` (fields this
        library made), taken unchecked; outside states go through
        :meth:`load_state_dict`."""
        if self._fixed_settings:
            out = type(self).__new__(type(self))  # with its own lock
            out.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("_guard", "_arrays")})
        else:
            out = self._empty_like()
        out._load(state)
        return out

    @classmethod
    def from_settings(cls, settings: dict[str, Any]):
        """An empty accumulator of ``settings`` (as :attr:`settings` gives them)."""
        return cls(**settings)

    def _empty_like(self):
        return self.from_settings(self._settings())

    # ------------------------------------------------------------------- inputs
    def prepare(self, *arrays, sample_weight=None, **named) -> Batch:
        """Convert and check one batch once: a :class:`~streammetrics.Batch`, which
        ``fold`` takes here and in any accumulator whose inputs it covers. A bad
        value raises :class:`~streammetrics.BadValueError` here."""
        if named:  # names given: a call kept off the positional path of every update
            arrays = arrays_by_name(self.inputs, arrays, named, self)
        return prepare(self.inputs, arrays, sample_weight, self.takes_weights, self)

    def fold(self, batch: Batch):
        """Fold a batch made by ``prepare``; return ``self``.

        ``TypeError`` if the batch was prepared for inputs this accumulator
        does not take (e.g. scores for an accumulator of hard labels).
        """
        if type(batch) is not Batch:
            raise TypeError(f"fold() takes a Batch from prepare(), got {type(batch).__name__}")
        arrays = batch.arrays_for(self.inputs)
        if arrays is None:
            raise TypeError(
                f"this batch holds {_describe(batch.inputs)}; {type(self).__name__} takes {_describe(self.inputs)}"
            )
        w = batch.weights
        if w.shape[0] and not self.takes_weights:
            raise errors.NoWeightsError(type(self).__name__)
        if batch.n and self.fold_status(arrays, w, batch.n):
            raise_rejected(self.inputs, arrays)  # a checked batch: cannot happen
        return self

    def takes(self, batch: Batch) -> bool:
        """Whether ``batch`` (made by a ``prepare``) serves this accumulator."""
        return batch.covers(self.inputs)

    def update(self, *arrays, sample_weight=None, **named):
        """Fold in one batch; return ``self``.

        The arrays are the accumulator's ``inputs`` in order (``y`` then ``p``
        for most), or by name: ``update(y=..., p=...)``, also scikit-learn's
        ``y_true=`` and ``y_pred=`` (``y_score=``, ``y_prob=``).
        ``fold(prepare(...))`` in one pass: the kernel checks the values and
        writes only a valid batch. A bad value raises ``ValueError`` naming the
        argument and position, the accumulator unchanged.
        """
        if named:  # names given: a call kept off the positional path of every update
            arrays = arrays_by_name(self.inputs, arrays, named, self)
        converted, w, n = convert(self.inputs, arrays, sample_weight, self.takes_weights, self)
        if n and self.fold_status(converted, w, n):
            raise_rejected(self.inputs, converted)
        return self

    def fold_status(self, arrays, w, n: int) -> int:
        """Fold ``n`` converted rows (``w`` empty without weights), checked by the
        kernel: status 0 folded, else nothing written. Under the lock."""
        with self._guard:
            self._check_room(n)
            if not (w.shape[0] and self._totals_unchecked) or self._far_from_overflow(w):
                return self._fold(arrays, w)
            kept = S.copy_state(self._arrays)
            status = self._fold(arrays, w)
            if not _finite_totals(self.fields, self._arrays):
                self._load(kept)
                raise errors.WeightOverflowError()
            return status

    def _far_from_overflow(self, w) -> bool:
        """Whether no float total can overflow by folding weights ``w``: the batch's
        weight and every total below 1e300
        (totals read up to :data:`SCANNED_TOTALS`; a larger table is taken far,
        its totals checked as they merged)."""
        if not float(w.max()) * w.shape[0] < 1e300:
            return False
        totals = [self._arrays[f.name] for f in S.float_sums(self.fields)]
        return sum(a.size for a in totals) > SCANNED_TOTALS or S.within(totals, 1e300)

    def _check_room(self, rows: int, what: str = "folding") -> None:
        """Refuse ``rows`` more rows past the ``int64`` range (every count is at most ``n``)."""
        if rows > S.INT64_MAX - self.n:
            raise errors.CountOverflowError(
                f"{what} {rows} rows into a {type(self).__name__} of {self.n} would pass the int64 "
                "range of its counts (2**63 - 1)"
            )

    # ---------------------------------------------------------------- protocol
    @property
    def n(self) -> int:
        """Observations (rows) folded in so far."""
        return int(self._arrays["n"][0])

    @property
    def settings(self) -> dict[str, Any]:
        """The settings that define this accumulator (a copy; saved with the state)."""
        return dict(self._settings())

    def reset(self):
        """Forget every observation; return ``self``."""
        empty = self._empty_like().state_dict()
        with self._guard:
            self._load(empty)
        return self

    def _check_compatible(self, other: Accumulator) -> None:
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        mine, theirs = self._settings(), other.settings
        if mine != theirs:
            diff = ", ".join(
                f"{k}={mine.get(k)!r} vs {theirs.get(k)!r}"
                for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)
            )
            raise errors.SettingsMismatchError(
                f"cannot merge {type(self).__name__} accumulators with different settings: {diff}"
            )

    def check_merge(self, other: Accumulator) -> None:
        """Raise what :meth:`merge` of ``other`` would refuse, changing nothing."""
        self._check_compatible(other)
        with locked(self, other):
            self._check_room(other.n, "merging")
            self._merge_check(other)

    def merge(self, other: Accumulator):
        """Fold ``other`` (same class and settings) into ``self``; return ``self``.

        ``other`` is not changed, in value or in memory. Settings that differ
        raise ``ValueError`` and leave both accumulators unchanged.
        """
        self._check_compatible(other)
        with locked(self, other):
            self._check_room(other.n, "merging")
            if other is self or not self._merge_files(other):
                theirs = other._state
                self._merge_state(S.copy_state(theirs) if other is self else theirs)
        return self

    def _merge_files(self, other) -> bool:
        """Fold ``other`` (compatible, locked) from its temporary files without reading them into memory
        whole, and return ``True``; or ``False``, where its state is merged as a whole (here always)."""
        return False

    def __add__(self, other: Accumulator):
        if not isinstance(other, Accumulator):
            return NotImplemented
        return self.copy().merge(other)

    def __iadd__(self, other: Accumulator):
        if not isinstance(other, Accumulator):
            return NotImplemented
        return self.merge(other)

    def copy(self):
        """An independent copy: updating one never changes the other."""
        with self._guard:
            return self._clone()

    def __deepcopy__(self, memo=None):
        return self.copy()

    __copy__ = __deepcopy__

    def finalize(self, ci=None) -> Result:
        """The scores of the current state, as a read-only :class:`Result` (the
        state unchanged); ``ValueError`` with no observation.

        ``ci``, a level in (0, 1) such as 0.95, adds ``<score>_ci_lower`` and
        ``<score>_ci_upper`` where the class offers intervals (``TypeError``
        otherwise).
        """
        level = check_ci(ci)
        if level is not None and not self.intervals:
            raise TypeError(f"{type(self).__name__} offers no confidence intervals: call finalize() without ci=")
        return self._finalize(ci=level)

    def _finalize(self, **options) -> Result:
        """``_compute(**options)`` (``None`` options dropped) under the lock."""
        options = {k: v for k, v in options.items() if v is not None}
        with self._guard:
            if self.n == 0:
                raise errors.NoObservationsError(f"{type(self).__name__} has no observations: call update() first")
            # counts are int64 and their products float64, far from its range:
            # a total past it can only be of weights (near 1e308)
            try:
                with np.errstate(over="raise"):
                    return self._compute(**options)
            except (FloatingPointError, OverflowError) as exc:
                raise errors.WeightOverflowError(scores="the weighted totals of the scores") from exc

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self._settings().items())
        head = f"{type(self).__name__}({settings})"
        n = self.n
        if n == 0 or not self.headline:
            return f"{head}: n={n}"
        try:
            r = self.finalize()
            fields = " ".join(f"{k}={r[k]:.6g}" for k in self.headline if k in r)
        except ValueError:
            fields = ""
        return f"{head}: n={n} {fields}".rstrip()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        with locked(self, other):
            return self._settings() == other.settings and S.states_equal(self._state, other._state)

    __hash__ = None  # mutable

    def same_results(self, other: Accumulator, rtol: float = 1e-12) -> bool:
        """Whether ``other`` finalizes to the same results: every field, counts
        exactly and floats to ``rtol`` relative (NaN equal to NaN).

        ``==`` compares states, compensation terms of long sums included, so two
        cuts of the same rows can differ by ``==`` and still give the same
        scores; this compares what users read.

        >>> import streammetrics as sm
        >>> a = sm.ProbabilityScores().update([1, 0], [0.9, 0.3]).update([1], [0.6])
        >>> b = sm.ProbabilityScores().update([1, 0, 1], [0.9, 0.3, 0.6])
        >>> a.same_results(b)
        True
        """
        if type(other) is not type(self):
            raise TypeError(f"other must be a {type(self).__name__}, got {type(other).__name__}")
        ra, rb = dict(self.finalize()), dict(other.finalize())
        return ra.keys() == rb.keys() and all(_same_value(ra[k], rb[k], rtol) for k in ra)

    # ------------------------------------------------------------- state dicts
    def state_dict(self) -> dict[str, np.ndarray]:
        """A copy of the state as its declared fields (name -> array)."""
        with self._guard:
            return S.copy_state(self._state)

    def load_state_dict(self, state: dict[str, np.ndarray]):
        """Take ``state`` (as :meth:`state_dict` gives it) after checking it as
        untrusted; return ``self``. A bad state raises
        :class:`~streammetrics.StateFileError`, the accumulator unchanged."""
        checked = self._checked(state)
        with self._guard:
            self._load(checked)
        return self

    def _checked(self, state) -> dict[str, np.ndarray]:
        owned = S.check_fields(self.fields, self, state)
        try:
            self._check_state(owned)
        except ValueError as exc:  # (a StateFileError already: the same)
            raise errors.StateFileError(str(exc)) from None
        return owned

    # ---------------------------------------------------------------- pickling
    def __getstate__(self):
        with self._guard:  # copies: pickle reads them after the lock is let go
            return {"settings": copy.deepcopy(self._settings()), "state": S.copy_state(self._state)}

    def __setstate__(self, d):
        fresh = type(self).from_settings(d["settings"])
        self.__dict__.update(fresh.__dict__)
        self._load(S.copy_state(d["state"]))

    # ------------------------------------------------------------- save / load
    def save(self, path) -> None:
        """Write the state to ``path`` exactly: ``.npy`` arrays in numpy's ``.npz``
        layout and a JSON header (class, settings, format version), no pickle;
        written to a temporary name and renamed, under the lock (an update
        meanwhile would change the arrays being written)."""
        with self._guard:
            statefile.write(path, type(self).__name__, self._settings(), self._state)

    @classmethod
    def load(cls, path):
        """Read an accumulator written by :meth:`save`: ``FileNotFoundError``, or
        ``ValueError`` for a corrupt, foreign or other class's file."""
        return cls._of_class(load_state(path), repr(os.fspath(path)))

    def to_bytes(self) -> bytes:
        """The state as bytes: exactly what :meth:`save` writes to a file (no
        pickle), read back by :meth:`from_bytes` or
        :func:`streammetrics.from_bytes`; taken under the lock.

        >>> from streammetrics import RankAUC
        >>> data = RankAUC().update([0, 1, 1], [0.2, 0.9, 0.4]).to_bytes()
        >>> RankAUC.from_bytes(data).finalize().auc
        1.0
        """
        with self._guard:
            return statefile.dumps(type(self).__name__, self._settings(), self._state)

    @classmethod
    def from_bytes(cls, data):
        """An accumulator of this class from :meth:`to_bytes`'s bytes, checked as
        a loaded file is (bounded, every invariant): ``StateFileError`` for
        corrupt, truncated, forged or another class's bytes."""
        return cls._of_class(from_bytes(data), "the state bytes")

    @classmethod
    def _of_class(cls, obj, where: str):
        """``obj``, refused unless of this class (any, called on the base class)."""
        if cls is not Accumulator and type(obj) is not cls:
            raise errors.StateFileError(
                f"{where} holds {errors.a_an(type(obj).__name__)} state, not {errors.a_an(cls.__name__)}"
            )
        return obj

    @classmethod
    def _from_saved(cls, settings: dict[str, Any], arrays: dict[str, np.ndarray], where: str):
        """An accumulator of ``settings`` holding the checked ``arrays``."""
        # the settings may not declare a larger state than the file holds
        budget = sum(a.nbytes for a in arrays.values()) + (1 << 20)
        try:
            with S.allocation_budget(budget, where):
                obj = cls.from_settings(settings)
        except errors.StateFileError:
            raise
        except (TypeError, ValueError, ImportError, OverflowError) as exc:
            shown = repr(settings)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise errors.StateFileError(f"{where}: invalid settings {shown} ({exc})") from None
        try:  # what the arrays expand to is bounded too
            with S.allocation_budget(LOAD_EXPANSION * budget + (64 << 20), None):
                obj.load_state_dict(arrays)
        except ValueError as exc:
            raise errors.StateFileError(f"{where}: {exc}") from None
        return obj


def check_ci(ci) -> float | None:
    """A confidence level as a float in (0, 1) (``None`` stays); 95 is refused."""
    if ci is None:
        return None
    if isinstance(ci, (bool, np.bool_)) or not isinstance(ci, (int, float, np.integer, np.floating)):
        raise TypeError(f"ci must be a real number in (0, 1) or None, got {type(ci).__name__}")
    level = float(ci)
    if not (0.0 < level < 1.0):
        raise ValueError(f"ci must lie strictly between 0 and 1 (a confidence level such as 0.95), got {ci!r}")
    return level


@contextlib.contextmanager
def locked(*accs):
    """Hold the locks of ``accs``, taken in one order (by id) whatever the call."""
    with contextlib.ExitStack() as stack:
        for acc in sorted({id(a): a for a in accs}.values(), key=id):
            stack.enter_context(acc._guard)
        yield


def _describe(inputs) -> str:
    def one(i) -> str:
        labels = getattr(i, "labels", None)
        if isinstance(labels, list):  # which labels, in their order, is what differs
            shown = ", ".join(repr(v) for v in labels[:6]) + (", ..." if len(labels) > 6 else "")
            return f"{i.name} as the labels [{shown}]"
        return f"{i.name} as {i.what}"

    return ", ".join(one(i) for i in inputs)


def load_state(path) -> Accumulator:
    """Load any accumulator saved with ``save``, whatever its class.

    >>> import os, tempfile
    >>> from streammetrics import BinaryConfusion, load_state
    >>> path = os.path.join(tempfile.mkdtemp(), "shard0.smstate")
    >>> BinaryConfusion().update([1, 0, 1], [1, 0, 0]).save(path)
    >>> load_state(path)
    BinaryConfusion(threshold=None): n=3 accuracy=0.666667 f1=0.666667
    """
    cls, settings, arrays, where = statefile.read(path)
    return cls._from_saved(settings, arrays, where)


def from_bytes(data) -> Accumulator:
    """Any accumulator from the bytes of ``to_bytes`` (the class is read from
    them), checked as a loaded file is: ``StateFileError`` if they are not a
    valid state, ``TypeError`` if not bytes.

    >>> from streammetrics import BinaryConfusion, from_bytes
    >>> from_bytes(BinaryConfusion().update([1, 0, 1], [1, 0, 0]).to_bytes())
    BinaryConfusion(threshold=None): n=3 accuracy=0.666667 f1=0.666667
    """
    cls, settings, arrays, where = statefile.loads(data)
    return cls._from_saved(settings, arrays, where)


def _finite_totals(fields, state: dict) -> bool:
    """Whether every float total of ``state`` (fields, or fields stacked) is finite:
    a state's are (its loads and merges check them), so one that is not overflowed."""
    return all(np.isfinite(state[f.name]).all() for f in S.float_sums(fields))


def _same_value(a, b, rtol: float) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=rtol, atol=0.0, equal_nan=True))
    return bool(np.array_equal(a, b))


def _named_copy(fn, cls, names: list[str]):
    """``fn`` (the same code, so no extra call) whose signature names ``cls``'s inputs:
    ``update(self, y, p, *, sample_weight=None)``."""
    copy_ = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy_.__kwdefaults__, copy_.__doc__ = fn.__kwdefaults__, fn.__doc__
    copy_.__qualname__, copy_.__module__ = f"{cls.__qualname__}.{fn.__name__}", cls.__module__
    copy_.__signature__ = _signature(names)
    return copy_


def _signature(names) -> inspect.Signature:
    """``(self, <names>, *, sample_weight=None)``."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)] + [P(n, P.POSITIONAL_OR_KEYWORD) for n in names]
    return inspect.Signature([*params, P("sample_weight", P.KEYWORD_ONLY, default=None)])
