"""Windowed: a template's scores per tumbling bucket of rows or of time."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._protocol.base import Accumulator
from .._protocol.errors import StateFileError
from .._protocol.inputs import Batch
from .._protocol.wrapped import pack, unpack
from ..report import plots
from . import clock, tables
from .buckets import Buckets

__all__ = ["Windowed", "Bucket"]

#: one bucket: its key, time (or row) range ``[start, end)``, rows and result
Bucket = namedtuple("Bucket", "key start end rows result")

#: bucket keys stay within this (a float timestamp far past it is refused)
_KEY_RANGE = 2.0**62


class Windowed(Buckets):
    """A template's scores per tumbling bucket: every ``every`` rows, or every
    ``every`` of time (``"1h"``, ``"1d"``) by the rows' timestamps.

    ``update(*arrays, sample_weight=None, time=stamps)`` folds each row into
    its bucket's state (a full state of the template: any template works,
    ``Evaluator``, ``Sliced``, exact or budgeted ``RankAUC``, since buckets
    merge). Rows may come in any order: a late row goes to its bucket.
    ``finalize()`` is the template's result on the rows of the kept buckets
    (their states merged); :meth:`buckets` gives each one's, :meth:`to_frame`
    a table of them.

    Parameters
    ----------
    template : Accumulator or Evaluator
        An empty accumulator; its settings define every bucket's.
    every : int, number or duration, default 10_000
        Rows per bucket (``time=False``), or the buckets' length in time: a
        number in the timestamps' unit, or ``"15min"``, ``"1h"``, ``"1d"``, a
        ``timedelta`` for datetimes. Time buckets are aligned on the epoch
        (``"1d"``: midnight UTC), so every shard cuts the same buckets.
    keep : int, optional
        Keep the last ``keep`` buckets (by key, the newest seen defining the
        range): older ones are let go, and a row older than the kept range is
        dropped, counted in :attr:`dropped` (a monitor must not fail on late
        data); ``None`` keeps every bucket.
    time : bool, optional
        Whether buckets are of time (``update(..., time=)``); by default, when
        ``every`` is a duration.

    Notes
    -----
    By rows, the ``i``-th row ever folded goes to bucket ``i // every``; two
    states merge bucket by bucket (shards counting their own rows, the same
    buckets' rows together). By time, bucket ``k`` holds ``[k every, (k + 1)
    every)`` and two states merge bucket by bucket, whatever the order of
    the rows or the shards. The state file holds each bucket's state.

    Examples
    --------
    >>> import numpy as np
    >>> from streammetrics import BinaryConfusion, Windowed
    >>> acc = Windowed(BinaryConfusion(), every="1d", keep=7)
    >>> ts = np.array(["2024-01-01T10", "2024-01-02T09", "2024-01-01T23"], "datetime64[ns]")
    >>> acc.update([1, 0, 1], [1, 0, 0], time=ts).finalize().accuracy
    0.666...
    >>> [(str(b.start)[:10], b.rows, b.result.accuracy) for b in acc.buckets()]
    [('2024-01-01', 2, 0.5), ('2024-01-02', 1, 1.0)]
    >>> rows = Windowed(BinaryConfusion(), every=2).update([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    >>> [b.result.accuracy for b in rows.buckets()]
    [0.5, 1.0, 1.0]
    """

    _own_settings = {"every": 10_000, "keep": None, "time": None}

    def __init__(self, template: Accumulator, every=10_000, keep: int | None = None, time: bool | None = None):
        self._every = clock.duration(every, "every")
        if time is None:
            time = isinstance(self._every, int)
        if not isinstance(time, (bool, np.bool_)):
            raise TypeError(f"time must be True, False or None, got {type(time).__name__}")
        if not time and (isinstance(self._every, int) or not float(self._every).is_integer()):
            raise ValueError(f"every: buckets of rows take a whole number of rows, got {every!r}")
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or keep < 1):
            raise ValueError(f"keep must be a positive number of buckets or None, got {keep!r}")
        self.every = every if isinstance(every, (str, int, float)) else f"{self._every}ns"
        self.keep = None if keep is None else int(keep)
        self.time = bool(time)
        self._setup(template, "time", "timestamps")

    def update(self, *arrays, sample_weight=None, **options):
        """Fold one batch into its buckets; return ``self``. A bad value raises
        ``ValueError`` naming it, the accumulator unchanged."""
        t = self._template
        if self.time or options or len(arrays) != len(t.inputs):
            return super().update(*arrays, sample_weight=sample_weight, **options)
        tb = t.prepare(*arrays, sample_weight=sample_weight)
        if all(isinstance(a, np.ndarray) for a in tb.arrays):
            return self._fold_rows(tb)
        return super().fold(pack(tb, (None, (arrays, sample_weight, options)), t, self.inputs[-1]))

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        if self.time:
            return super().fold(batch)
        tb, (_, raw) = unpack(batch, self._template, "Windowed.prepare()")
        return super().fold(batch) if raw is not None else self._fold_rows(tb)

    def _fold_rows(self, tb: Batch):
        """Fold a checked batch (of arrays) into buckets of rows: each run of its rows that falls in one
        bucket goes whole into that bucket's state, with no key per row."""
        if not tb.n:
            return self
        every = int(self._every)
        with self._guard:
            self._check_room(tb.n)
            seen = self._seen
            first, last = seen // every, (seen + tb.n - 1) // every
            oldest = self._oldest_kept(last)
            for key in range(first if oldest is None else max(first, oldest), last + 1):
                lo, hi = max(0, key * every - seen), min(tb.n, (key + 1) * every - seen)
                self._part(key).fold(tb if hi - lo == tb.n else tb.rows(slice(lo, hi)))
                self._count += hi - lo
            self._seen += tb.n
            self._evict(oldest)
        return self

    # ----------------------------------------------------------------- keys
    def _extra(self, value, n: int):
        if self.time:
            return clock.stamps(value, n, self._every)
        if value is not None:
            raise TypeError("time= is taken by Windowed(..., time=True) only: these buckets count rows")
        return None

    def _keys_of(self, stamps, n: int) -> np.ndarray:
        if not self.time:
            return (self.seen + np.arange(n, dtype=np.int64)) // int(self._every)
        if isinstance(self._every, int):
            return stamps // self._every
        k = np.floor(stamps / self._every)
        far = np.flatnonzero(~(np.abs(k) < _KEY_RANGE))
        if far.shape[0]:
            raise ValueError(f"time[{far[0]}] = {stamps[far[0]]!r} is too far from 0 for buckets of {self.every!r}")
        return k.astype(np.int64)

    def _oldest_kept(self, newest: int):
        return None if self.keep is None else newest - self.keep + 1

    def _check_keys(self, keys) -> None:
        if self.keep is not None and keys.shape[0] and keys[-1] - keys[0] >= self.keep:
            raise StateFileError(f"the buckets span {keys[-1] - keys[0] + 1} buckets, more than keep={self.keep}")

    def _merged_seen(self, other) -> int:
        # by rows, each shard counts its own rows: the buckets continue after the longest
        return max(self.seen, other.seen) if not self.time else self.seen + other.seen

    # -------------------------------------------------------------- reading
    def _range(self, key: int):
        if not self.time:
            return key * int(self._every), (key + 1) * int(self._every)
        return clock.shown(key * self._every, self._every), clock.shown((key + 1) * self._every, self._every)

    def _compute(self, ci=None):
        return self.merged().finalize(ci=ci)

    def buckets(self, ci=None) -> list:
        """Each kept bucket, oldest first: a :class:`Bucket` ``(key, start, end,
        rows, result)``, ``[start, end)`` its time range (row numbers by rows),
        ``result`` the template's result on its rows (with intervals at level
        ``ci``; ``None`` where no score is defined)."""
        return [Bucket(k, *self._range(k), rows, r) for k, rows, r in self._results(ci)]

    def table(self, ci=None) -> dict:
        """The columns of :meth:`to_frame` as a dict of lists."""
        buckets = self.buckets(ci)
        lead = {"start": [b.start for b in buckets], "end": [b.end for b in buckets], "rows": [b.rows for b in buckets]}
        overall = self.finalize(ci=ci) if ci is not None and self.n else None
        return tables.columns(lead, [b.result for b in buckets], ci, overall, self.headline)

    def to_frame(self, ci=None):
        """A pandas DataFrame of one row per kept bucket: ``start``, ``end``,
        ``rows`` and every scalar score (NaN where the bucket defines none);
        with ``ci``, each score's interval and ``differs``, the headline
        scores whose overall value the bucket's interval leaves out.

        >>> from streammetrics import BinaryConfusion, Windowed
        >>> acc = Windowed(BinaryConfusion(), every=4).update([1, 0] * 6, [1, 0] * 4 + [0, 1] * 2)
        >>> acc.to_frame(ci=0.9)[["start", "rows", "accuracy", "differs"]]
           start  rows  accuracy      differs
        0      0     4       1.0        (f1,)
        1      4     4       1.0        (f1,)
        2      8     4       0.0  (accuracy,)
        """
        return tables.frame(self.table(ci))

    def plot(self, score: str, folder=".", *, ci=0.95, name="buckets.png", title=None) -> str:
        """A PNG of ``score`` per bucket with its interval band (level ``ci``; the
        template must offer intervals, else ``ci=None``), the overall score as
        a dashed line and the buckets whose interval leaves it out marked;
        returns its path."""
        t = self.table(ci)
        if score not in t:
            raise ValueError(f"score {score!r} is not a scalar score of these buckets; they hold {list(t)[3:]}")
        lo, hi = (t.get(f"{score}_ci_lower"), t.get(f"{score}_ci_upper")) if ci is not None else (None, None)
        flagged = [score in d for d in t["differs"]] if "differs" in t else None
        overall = float(self.finalize()[score])
        mid = [s + (e - s) / 2 for s, e in zip(t["start"], t["end"])]
        curve = (f"{score} per bucket", mid, t[score], lo, hi, flagged)
        what = f"every {self.every}" + (f", {ci:.0%} intervals" if ci is not None else "")
        label = "time" if self.time else "row"
        return plots.series([curve], score, folder, name, title or f"{score} per bucket ({what})", label, overall)

    def __repr__(self) -> str:
        return (
            f"Windowed({self._inner()}, every={self.every!r}, keep={self.keep}): n={self.n} buckets={len(self.parts())}"
        )
