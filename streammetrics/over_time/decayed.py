"""Decayed: a template's scores with exponentially decaying row weights."""

from __future__ import annotations

import numpy as np

from .._protocol.base import Accumulator
from .._protocol.batch import Batch
from .._protocol.errors import StateFileError, WeightOverflowError
from .._protocol.inputs import raise_rejected
from .._protocol.keywords import arrays_by_name
from .._protocol.state import Field
from .._protocol.terms import Sums, add_pairs
from .._protocol.wrapped import KeysInput, TemplateWrapper, pack, unpack
from ..sliced.tables import sum_terms
from . import clock

__all__ = ["Decayed"]

#: the most half-lives a new row's weight is grown by: past it the totals are
#: scaled down by a power of two (exactly) and the origin moves forward
GROWTH = 64


class Decayed(TemplateWrapper, Accumulator):
    """A template's scores over every row so far, each row weighted by
    ``2 ** (-age / half_life)``.

    The age of a row is counted in rows (the last row has age 0) or, with
    ``time=True``, in time: ``update(..., time=stamps)`` (or the stamps as
    one extra positional column), age being the latest
    timestamp seen less the row's (rows may come in any order). The result
    equals the template's on the same rows with those weights (times any
    ``sample_weight``), to rounding.

    Parameters
    ----------
    template : Accumulator or Evaluator
        An empty accumulator whose state is a sum of per-row weighted terms (it
        declares its row terms: the binary, probability, regression-error
        free, multiclass, calibration, top-k and deviance families, and an
        Evaluator of them); others are refused with ``TypeError``.
    half_life : number or duration
        Rows (``time=False``), or a duration in the timestamps' unit: a number
        for numeric timestamps, ``"1h"``, ``"7d"`` or a ``timedelta`` for
        datetimes.
    time : bool, default False
        Whether ages are counted in time (``update(..., time=)``) or in rows.

    Notes
    -----
    No state is rewritten per batch: a new row's weight is grown by
    ``2 ** ((t - origin) / half_life)`` and the batch's declared row terms are
    summed into totals held here; when a growth would pass ``2**64`` the totals
    are halved ``k`` times at once (exact) and the origin moves ``k``
    half-lives forward. ``finalize`` scales the totals to the latest row and
    gives them to an empty template (its ``add_sums``). Two states merge in
    time only (rows have no common clock).

    Examples
    --------
    >>> import numpy as np
    >>> from streammetrics import BinaryConfusion, Decayed
    >>> acc = Decayed(BinaryConfusion(), half_life=2)
    >>> r = acc.update([1, 1, 0, 0], [1, 0, 0, 0]).finalize()
    >>> round(r.recall, 6)  # the positives weigh 2**-1.5 (hit) and 2**-1 (missed)
    0.414214
    >>> day = Decayed(BinaryConfusion(), half_life="1d", time=True)
    >>> ts = np.array(["2024-01-01", "2024-01-02"], "datetime64[ns]")
    >>> round(day.update([1, 1], [0, 1], time=ts).finalize().recall, 6)
    0.666667
    """

    _own_settings = {"half_life": 1.0, "time": False}

    def __init__(self, template: Accumulator, half_life=1.0, time: bool = False):
        if not isinstance(time, (bool, np.bool_)):
            raise TypeError(f"time must be True or False, got {type(time).__name__}")
        self.time = bool(time)
        self._wrap(template, "decayed total", *((KeysInput("time", "timestamps"),) if self.time else ()))
        terms = self._template.row_terms()
        if terms is None or not terms.complete or not self._template.takes_weights:
            raise TypeError(
                f"{type(self._template).__name__} cannot be decayed: its state is not a sum of weighted "
                "per-row terms (declared row terms); use Windowed or Rolling for it"
            )
        self._hl = clock.duration(half_life, "half_life")
        if isinstance(self._hl, int) and not self.time:
            raise ValueError("half_life: a duration needs time=True (and timestamps in update)")
        self.half_life = half_life if isinstance(half_life, (str, int, float)) else f"{self._hl}ns"
        self._terms = terms
        self._size = terms.size
        self._squares = 0 if terms.second is None else terms.size
        self._powers = np.zeros(terms.size, np.uint8) if terms.second is None else terms.second
        self._init_state()

    fields = (
        Field("n", np.int64, (1,)),
        Field("ints", np.int64, ("_size",), doc="counted slots"),
        Field("pairs", np.float64, ("_size", 2), merge="custom", nonneg=False, doc="w g v per slot"),
        Field("second", np.float64, ("_squares", 2), merge="custom", nonneg=False, doc="w g v**2 or (w g v)**2"),
        Field("clock", np.float64, (2, 2), merge="custom", nonneg=False, doc="origin, latest row (hi, lo)"),
    )

    def _init_parts(self):
        self._init_state()

    def _clock(self, st) -> tuple:
        """``(origin, latest)`` of a state, exact (``int`` nanoseconds for datetimes)."""
        if isinstance(self._hl, int):
            return tuple(int(hi) + int(lo) for hi, lo in st["clock"])
        return float(st["clock"][0, 0]), float(st["clock"][1, 0])

    @staticmethod
    def _set_clock(st, origin, latest) -> None:
        for i, v in enumerate((origin, latest)):
            hi = float(v)
            st["clock"][i] = hi, (float(int(v) - int(hi)) if isinstance(v, int) else 0.0)

    # ---------------------------------------------------------------- folding
    def prepare(self, *arrays, sample_weight=None, time=None, **named) -> Batch:
        """Check one batch (and its timestamps, with ``time=True``; they may
        also come as one extra positional column): a batch for :meth:`fold`."""
        if named:  # the template's arrays by name: update(y=..., p=..., time=...)
            arrays = arrays_by_name(self._template.inputs, arrays, named, self)
        if self.time:
            arrays, time = self._split_keys(arrays, time, "time=timestamps")
        elif time is not None:
            raise TypeError("time= is taken with Decayed(..., time=True) only: here ages count rows")
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        t = clock.stamps(time, tb.n, self._hl) if self.time else None
        return pack(tb, t, self._template, self.inputs[-1] if self.time else KeysInput("time", "timestamps"))

    def update(self, *arrays, sample_weight=None, time=None, **named):
        """Fold one batch (``time=``: one timestamp per row, with ``time=True``);
        return ``self``. A bad value raises ``ValueError``, nothing changed."""
        return self.fold(self.prepare(*arrays, sample_weight=sample_weight, time=time, **named))

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        batch, t = unpack(batch, self._template, "Decayed.prepare()")
        if not batch.n:
            return self
        with self._guard:
            self._check_room(batch.n)
            if not self.time:
                t = np.arange(self.n, self.n + batch.n, dtype=np.float64)
            state = {k: v.copy() for k, v in self._arrays.items()}
            latest = t.max().item()
            origin, last = self._clock(state) if self.n else (latest, latest)
            top = self._ages(latest, origin)
            if top > GROWTH:  # halve the totals k times and move the origin k half-lives on
                k = int(np.floor(top))
                _scale(state, self._powers, 2.0**-k)
                origin = origin + k * self._hl
            self._set_clock(state, origin, max(last, latest))
            growth = np.exp2(self._ages(t, origin))
            w = growth if not batch.weighted else batch.weights * growth
            grown = Batch(batch.inputs, batch.arrays, w, batch.n)
            status, sums = sum_terms(self._terms, grown, 1, np.zeros(batch.n, np.int64), 0, second=True)
            if status:
                raise_rejected(batch.inputs, batch.arrays)
            self._add(state, batch.n, sums.ints[0], sums.pairs[0], sums.second[0] if self._squares else None)
            if not all(np.isfinite(state[k]).all() for k in ("pairs", "second")):
                raise WeightOverflowError()
            self._arrays = state
        return self

    def _add(self, state, n: int, ints, pairs, second) -> None:
        """Add ``n`` rows' totals into ``state``."""
        state["n"][0] += n
        state["ints"] += ints
        add_pairs(state["pairs"], pairs)
        if self._squares:
            add_pairs(state["second"], second)

    def _ages(self, t, origin):
        """``(t - origin) / half_life``, exactly subtracted for nanoseconds."""
        if isinstance(self._hl, int) and isinstance(t, np.ndarray):
            return (t - np.int64(origin)) / self._hl
        return (t - origin) / self._hl

    # --------------------------------------------------------------- reading
    def current(self) -> Accumulator:
        """The template holding the decayed totals as of the latest row (a new
        accumulator: its weights are the decayed ones)."""
        with self._guard:
            st = {k: v.copy() for k, v in self._arrays.items()}
            origin, latest = self._clock(st)
            _scale(st, self._powers, float(np.exp2(-self._ages(latest, origin))))
            second = st["second"][None] if self._squares else None
            sums = Sums(st["ints"][None], st["pairs"][None], second, st["n"], True)
            acc = self._template.copy()
            if self.n:
                acc.add_sums(sums)
            return acc

    def _compute(self, ci=None):
        return self.current().finalize(ci=ci)

    # ------------------------------------------------------------------ merge
    def _merge_state(self, other: dict) -> None:
        if not self.time:
            raise ValueError("Decayed by rows cannot merge: two streams of rows have no common clock (use time=True)")
        if not other["n"][0]:
            return
        mine = {k: v.copy() for k, v in self._arrays.items()}
        theirs = {k: v.copy() for k, v in other.items()}
        if not mine["n"][0]:
            self._arrays = theirs
            return
        (o1, l1), (o2, l2) = self._clock(mine), self._clock(theirs)
        late, early = (mine, theirs) if o1 >= o2 else (theirs, mine)
        _scale(early, self._powers, float(np.exp2(-self._ages(max(o1, o2), min(o1, o2)))))
        self._add(late, early["n"][0], early["ints"], early["pairs"], early["second"])
        self._set_clock(late, max(o1, o2), max(l1, l2))
        self._arrays = late

    def _check_state(self, st) -> None:
        if not (np.isfinite(st["pairs"]).all() and np.isfinite(st["second"]).all() and np.isfinite(st["clock"]).all()):
            raise StateFileError("the decayed totals must be finite")
        if (st["ints"] > st["n"][0] * max(1, self._terms.width)).any():
            raise StateFileError("a counted slot holds more rows than the state")
        origin, latest = self._clock(st)
        if (
            st["n"][0]
            and not 0 <= (latest - origin) / self._hl <= GROWTH + 1
            or (not self.time and latest >= max(st["n"][0], 1))
        ):
            raise StateFileError("the decay clock is not before its latest row")

    def __repr__(self) -> str:
        return f"Decayed({self._inner()}, half_life={self.half_life!r}, time={self.time}): n={self.n}"


def _scale(state: dict, powers: np.ndarray, c: float) -> None:
    """Scale the totals of ``state`` by ``c`` (second moments of power 2 by ``c**2``)."""
    state["pairs"] *= c
    if state["second"].shape[0]:
        state["second"] *= np.where(powers == 2, c * c, c)[:, None]
