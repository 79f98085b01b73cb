"""Rolling: a template's scores over exactly the last N rows."""

from __future__ import annotations

import weakref

import numpy as np

from .._protocol.base import Accumulator
from .._protocol.batch import check_all
from .._protocol.errors import StateFileError
from .._protocol.inputs import Batch, convert, raise_rejected
from .._protocol.keywords import arrays_by_name
from .._protocol.state import checked_entries, loaded
from .._protocol.wrapped import KeysInput, TemplateWrapper, pack, unpack
from ..metrics.ranking import RankAUC
from . import clock
from .rolling_rank import RankWindow
from .rolling_terms import TermsWindow

__all__ = ["Rolling"]


def _window(template, window: int):
    """The window of ``template``'s rows: its declared terms, or an exact RankAUC's tree."""
    terms = template.row_terms()
    if terms is not None and terms.complete:
        return TermsWindow(template, window)
    if type(template) is RankAUC and template.max_bins is None and template.max_memory is None:
        return RankWindow(template, window)
    raise TypeError(
        f"Rolling takes a template whose state is a sum of per-row terms (the binary, probability, multiclass, "
        f"multilabel and top-k families, Calibration, TweedieDeviance, SquaredLogError, PinballLoss, an Evaluator "
        f"of them) or an exact RankAUC; got {type(template).__name__}{template.settings} (Windowed takes any "
        f"template: buckets of rows or of time)"
    )


class _Snapshot:
    """The window's points as a result read them (taken when the window moves on)."""

    __slots__ = ("run", "__weakref__")

    def __init__(self):
        self.run = None


class Rolling(TemplateWrapper, Accumulator):
    """A template's scores over exactly the last ``window`` rows.

    ``finalize()`` is at any moment the template's result on the last
    ``window`` rows folded (weights allowed, any batch size, a batch larger
    than the window included): counts and the exact AUC equal, float sums to
    1e-12. ``n`` is the rows in the window. Memory is ``O(window)``.

    Parameters
    ----------
    template : Accumulator
        An empty accumulator whose state is a sum of per-row terms (it
        declares complete ``row_terms()``: the binary, probability,
        multiclass, multilabel and top-k families, ``Calibration``,
        ``TweedieDeviance``, ``SquaredLogError`` and ``PinballLoss``, an
        Evaluator of them), or an exact :class:`~streammetrics.RankAUC`.
        ``RegressionErrors`` keeps Chan's moments and the maximum error,
        which rows cannot leave: :class:`~streammetrics.Windowed` takes it.
    window : int
        The rows kept.
    key : True or None
        ``True``: each row comes with a key (``update(..., key=k)``, or one
        extra positional column: numbers or datetimes, compared as float64)
        that orders the rows: the window is then the last ``window`` rows by
        key (on equal keys, by arrival), a late row taking its place (a sort
        of the window, where rows come in key order a push), and two states
        merge, keeping the last ``window`` rows of both by key. Without keys
        the order of two states' rows is unknown and ``merge`` is refused.

    Notes
    -----
    A linear template's rows are kept as their declared terms in a ring; the
    window's sums grow by each row entering and shrink by each row leaving,
    compensated, counts exactly, and are summed afresh from the ring after
    each window of rows has left. RankAUC's window keeps its scores sorted
    in two levels (a base, and the entries of rows that entered or left since
    it was merged) with each level's prefix masses per class: a row entering
    or leaving finds its pairs by binary search, ``O(log window)``, and the
    pending entries merge into the base at ``O(sqrt(window / batch))`` per row
    amortized, so the Mann-Whitney U (ties counting half), hence the AUC, is
    kept exact as rows come and go (an exact integer without weights; with
    weights to rounding, summed afresh at each merge). Its result answers
    the curves, average precision and threshold queries (an ``O(window)``
    pass when asked); ``ci=`` reads the window too. A result kept while the
    window moves on keeps the window it was read from (one copy of its
    scores, made at the next update). Each row keeps its scores' float width:
    a threshold compares in the widest width of the rows in the window (a
    float32 0.7 reaches 0.7), as RankAUC fed the window's rows would.

    Examples
    --------
    >>> from streammetrics import BinaryConfusion, RankAUC, Rolling
    >>> acc = Rolling(BinaryConfusion(threshold=0.5), window=3)
    >>> r = acc.update([1, 0, 1, 1], [0.9, 0.8, 0.2, 0.7]).finalize()
    >>> r.tp, r.fp, r.fn, r.n  # the last three rows
    (1, 1, 1, 3)
    >>> auc = Rolling(RankAUC(), window=4).update([1, 0, 1, 0, 1], [0.1, 0.5, 0.4, 0.3, 0.3])
    >>> auc.finalize().auc  # the last four rows: 1 of 4 pairs in order, and a tie counting half
    0.375
    >>> Rolling(RankAUC(), window=4).merge(auc)
    Traceback (most recent call last):
    ...
    ValueError: cannot merge Rolling states without keys: the order of their rows is unknown (give key=True)
    """

    _own_settings = {"window": None, "key": None}

    def __init__(self, template: Accumulator, window: int, key=None):
        if isinstance(template, Rolling):
            raise TypeError("template must not be a Rolling accumulator")
        if isinstance(window, (bool, np.bool_)) or not isinstance(window, (int, np.integer)):
            raise TypeError(f"window must be an int, got {type(window).__name__}")
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        if key not in (None, True):
            raise ValueError(f"key must be True (rows come with keys) or None, got {key!r}")
        self._wrap(template, "window", *((KeysInput("key", "row keys"),) if key else ()))
        self.window, self.key = int(window), key
        #: the saved entries (the window's rows), as the template's window declares them
        self.fields = _window(self._template, 1).fields  # (a template that cannot roll: refused here)
        self._init_parts()

    def _init_parts(self) -> None:
        self._rows = _window(self._template, self.window)
        self._keys = np.zeros(self.window) if self.key else None
        self._snap = None  # a weak reference to the snapshot of the last result's points

    @property
    def n(self) -> int:
        """The rows in the window."""
        return self._rows.n

    @property
    def _takes_keys(self) -> bool:
        return bool(self.key)

    # ------------------------------------------------------------------ inputs
    def prepare(self, *arrays, sample_weight=None, key=None, **named) -> Batch:
        """Convert and check one batch (and its keys): a :class:`~streammetrics.Batch` for :meth:`fold`."""
        if named:  # the template's arrays by name: update(y=..., p=..., key=...)
            arrays = arrays_by_name(self._template.inputs, arrays, named, self)
        if self.key:
            arrays, key = self._split_keys(arrays, key, "key=keys")
            if key is None:
                raise TypeError("this Rolling orders rows by key: update(..., key=keys)")
        elif key is not None:
            raise TypeError("key= needs Rolling(..., key=True)")
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        return pack(tb, self._checked_keys(key, tb.n), self._template, self.inputs[-1]) if self.key else tb

    def _checked_keys(self, key, n: int) -> np.ndarray:
        k = clock.column(key)
        if k.dtype.kind == "M":
            k = k.astype("datetime64[ns]").astype(np.int64)
        if k.dtype.kind not in "iuf" or k.ndim != 1:
            raise TypeError(f"key must be one column of numbers or datetimes, got {k.dtype} of shape {k.shape}")
        if k.shape[0] != n:
            raise ValueError(f"key has {k.shape[0]} rows but the batch has {n}")
        k = k.astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(k))
        if bad.size:
            raise ValueError(f"key[{bad[0]}] = {k[bad[0]]}: keys must be finite")
        return k

    def update(self, *arrays, sample_weight=None, key=None, **named):
        """Fold one batch; the window keeps its last ``window`` rows. Return ``self``.

        A bad value raises ``ValueError`` naming the argument and position, the
        window unchanged.
        """
        if named:  # the template's arrays by name: update(y=..., p=..., by=...)
            arrays = arrays_by_name(self._template.inputs, arrays, named, self)
        if self.key or key is not None or not isinstance(self._rows, TermsWindow):
            return self.fold(self.prepare(*arrays, sample_weight=sample_weight, key=key))
        # rows of a linear template, in one pass: checked by its terms kernel (the rows before the window by the inputs)
        t = self._template
        converted, w, n = convert(t.inputs, arrays, sample_weight, t.takes_weights, t)
        if n > self.window:
            check_all(t.inputs, converted)
        with self._guard:
            if n and self._rows.push(Batch(t.inputs, converted, w, n), max(0, n - self.window)):
                raise_rejected(t.inputs, converted)
        return self

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        if self.key:
            tb, keys = unpack(batch, self._template, "Rolling.prepare()")
        elif type(batch) is Batch and self._template.takes(batch):
            tb, keys = batch, None
        else:
            raise TypeError("fold() takes a Batch from Rolling.prepare()")
        with self._guard:
            if not tb.n:
                return self
            self._freeze()
            if keys is not None and ((keys[1:] < keys[:-1]).any() or (self.n and keys[0] < self._last_key())):
                # a row older than the newest: the window's rows and the batch's, sorted by key
                self._merge_rows(self._rows.rows_of(tb, 0) | {"keys": keys})
                return self
            lo = max(0, tb.n - self.window)
            if keys is not None:  # where the pushed rows will lie in the ring
                self._keys[(self._rows.head + self.n + np.arange(tb.n - lo)) % self.window] = keys[lo:]
            self._rows.push(tb, lo)
        return self

    def _last_key(self) -> float:
        return float(self._keys[(self._rows.head + self.n - 1) % self.window])

    # ----------------------------------------------------------------- results
    def accumulator(self) -> Accumulator:
        """The template holding the window's rows (a new accumulator)."""
        with self._guard:
            return self._rows.accumulator()

    def _compute(self, ci=None):
        if isinstance(self._rows, RankWindow):
            return self._rows.result(self._points(), ci)
        return self._rows.accumulator().finalize(ci=ci)

    def _points(self):
        """The query engine of the window as it is now, built when first asked."""
        snap = _Snapshot()
        self._snap = weakref.ref(snap)
        rows = self._rows

        def make():
            with self._guard:
                run = snap.run if snap.run is not None else rows.run()
            return rows.points(run)

        return make

    def _freeze(self) -> None:
        """Keep the window's points for a result still held, before the window moves."""
        snap = None if self._snap is None else self._snap()
        if snap is not None and snap.run is None:
            snap.run = self._rows.run()
        self._snap = None

    # ------------------------------------------------------------------ merging
    def _merge_check(self, other) -> None:
        if not self.key:
            raise ValueError(
                "cannot merge Rolling states without keys: the order of their rows is unknown (give key=True)"
            )

    def _merge_state(self, other: dict) -> None:
        self._merge_check(None)
        self._merge_rows({k: v for k, v in other.items() if k != "n"})

    def _merge_rows(self, rows: dict) -> None:
        """Keep the last ``window`` rows by key of the window's and ``rows`` (the
        window's first on equal keys)."""
        mine = self._state
        rows = {k: np.concatenate([mine[k], rows[k]]) for k in rows}
        self._install(rows, np.argsort(rows["keys"], kind="stable")[-self.window :])

    def _install(self, rows: dict, idx: np.ndarray) -> None:
        """Make the window rows ``idx`` of ``rows`` (oldest first)."""
        self._freeze()
        self._init_parts()
        if self.key:
            self._keys[: idx.shape[0]] = rows["keys"][idx]
        self._rows.take(rows, idx)

    # ------------------------------------------------------------------- state
    @property
    def _state(self) -> dict:
        out = {"n": np.array([self.n], np.int64), **self._rows.export()}
        out["keys"] = self._keys[self._rows.order()] if self.key else np.zeros(0)
        return out

    def _load(self, state: dict) -> None:
        self._install(state, np.arange(int(state["n"][0])))

    def _checked(self, state) -> dict:
        window = _window(self._template, 1)
        rows = window.export()
        expected = {"n", "keys", *rows}
        missing = {f.name for f in self.fields if f.optional} - set(state) if isinstance(state, dict) else set()
        n = checked_entries(state, expected - missing, "a Rolling")
        state = {**state, **{name: window.default(name, n) for name in missing}}  # (saved before the entry)
        if n > self.window:
            raise StateFileError(f"the state holds {n} rows, more than the window of {self.window}")
        out = {"n": np.array([n], np.int64)}
        for name, empty in rows.items():
            a = state[name]
            if a.dtype != empty.dtype or a.ndim != empty.ndim or a.shape[0] != n:
                raise StateFileError(f"entry {name!r} must be {n} rows of {empty.dtype}")
            out[name] = np.array(a, copy=True)
        keys = state["keys"]
        if keys.dtype != np.float64 or keys.shape != ((n,) if self.key else (0,)):
            raise StateFileError(f"entry 'keys' must be {n if self.key else 0} float64 keys")
        if not np.isfinite(keys).all() or (keys[1:] < keys[:-1]).any():
            raise StateFileError("entry 'keys' must hold finite keys in order")
        out["keys"] = keys.copy()
        if not np.isfinite(out["weights"]).all() or (out["weights"] < 0).any():
            raise StateFileError("entry 'weights' holds a negative, NaN or infinite weight")
        self._rows.check(out, n)
        # the template's own invariants hold for the window's state
        held = self.with_state(out).accumulator().state_dict()
        loaded(self._template.copy(), held, "the window's rows do not make a valid state")
        return out

    def __repr__(self) -> str:
        head = f"Rolling({self._inner()}, window={self.window}{', key=True' if self.key else ''})"
        if not self.n:
            return f"{head}: n=0"
        r = self.finalize()
        return f"{head}: n={self.n} " + " ".join(f"{k}={r[k]:.6g}" for k in self.headline if k in r)
