"""Accumulators holding the exact AUC's sorted runs of distinct values with two masses each (in memory, or spilled
past ``max_memory``): :class:`HeldRuns` under :class:`~streammetrics.RankAUC` and :class:`SortedRuns`, the one run of
:class:`~streammetrics.ErrorQuantiles` and ``Calibration(strategy="quantile")``."""

from __future__ import annotations

from ..._protocol.base import Accumulator
from ..._protocol.errors import NoObservationsError
from ..._protocol.state import empty_state
from .exact import Exact
from .pending import Pending
from .spill import check_spill_dir, parse_memory, stream_merge


def entry_bytes(state) -> int:
    """Bytes of a state's run (scores and masses), as held in memory."""
    return sum(state[k].nbytes for k in ("lo", "counts", "weights") if k in state)


class HeldRuns(Accumulator):
    """The rows seen ``_n``, the state's strategy ``_strategy`` (:class:`~.exact.Exact` unless
    :meth:`_new_strategy` says otherwise) and the rows not yet sorted in, ``_pending``; with ``max_memory``, a
    ``_pool`` may share the budget (:mod:`.pool`). The fields ``n`` and ``weighted`` are declared by the subclass."""

    _pool = None
    _FIXED_BYTES = 0  # bytes counted besides the runs and the pending rows

    def _init_budget(self, max_memory, spill_dir) -> None:
        self.max_memory = parse_memory(max_memory)
        self.spill_dir = check_spill_dir(spill_dir)
        if self.spill_dir is not None and self.max_memory is None:
            raise ValueError("spill_dir is where runs are spilled past max_memory: give max_memory too")

    def _new_strategy(self, weighted: bool):
        return Exact(weighted, self.max_memory, self.spill_dir)

    def _check_compatible(self, other) -> None:
        # the memory budget changes how the state is held, never what it holds
        held = [{k: v for k, v in acc.settings.items() if k != "max_memory"} for acc in (self, other)]
        if type(other) is not type(self) or held[0] != held[1]:
            super()._check_compatible(other)

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def spilled(self) -> bool:
        """Whether part of the state is held in temporary files (``max_memory``)."""
        return isinstance(self._strategy, Exact) and self._strategy.spilled

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's arrays in memory and the pending rows."""
        return self._FIXED_BYTES + (0 if self._pending is None else self._pending.nbytes) + self._strategy.nbytes

    def close(self) -> None:
        """Forget every observation and remove the temporary files now (as :meth:`reset`)."""
        with self._guard:
            self._load(empty_state(self.fields, self))

    def _note(self) -> None:
        """Tell the shared budget the bytes now held."""
        if self._pool is not None:
            self._pool.note(self, self.nbytes)

    def _reserve(self, extra: int, others: bool = True) -> None:
        """Make room in the shared budget for ``extra`` more bytes (the states holding the most spill; ``others=False``:
        this one only)."""
        if self._pool is not None:
            self._pool.reserve(self, self.nbytes + extra, others)

    def _append(self, y, s, w) -> int:
        """Append one batch to the pending rows; the kernel's status (nonzero: a bad value, nothing changed)."""
        n = y.shape[0]
        weighted = w.shape[0] > 0
        limit = self._strategy.pending_limit()
        buf = self._pending
        if buf is not None and buf.weighted == weighted and buf.rows + n <= limit:
            return buf.append(y, s, w, limit)
        # a new buffer takes the batch (a bad batch is refused before any change), then the old rows are sorted in;
        # as large as the one it replaces, so that a stream does not grow it again (a shared budget: its share)
        floor = 1024 if self._pool is None else self._pool.share(8)
        capacity = min(limit, max(floor, 0 if buf is None else buf.keys.shape[0]))
        new = Pending(max(n, capacity), weighted)
        status = new.append(y, s, w, limit)
        if status:
            return status
        self._flush()  # rows counted already: a failed spill keeps them in memory
        try:
            with self._strategy.atomic():  # the batch stands whole, or (a spill failed) not at all
                if weighted and not self._strategy.weighted:
                    self._strategy.to_float()
                self._pending = new
                if new.rows > self._strategy.pending_limit():
                    self._flush()  # exact mode: a batch larger than the buffer is sorted at once
        except BaseException:
            self._pending = None
            raise
        return 0

    def _flush(self) -> None:
        buf, self._pending = self._pending, None
        if buf is not None and buf.rows:
            self._strategy.take(buf)

    def _fields(self):
        """The state's fields but the run."""
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._strategy.weighted)
        return st

    @property
    def _state(self):
        st = self._fields()
        self._strategy.export(self._pending, st)
        return st

    def spilled_parts(self):
        """``(state, strategy)``: the state of the runs and rows in memory (a copy), and the exact strategy holding
        the files of the rest."""
        st = self._fields()
        self._strategy.export(self._pending, st, memory_only=True)
        return st, self._strategy

    def _merge_files(self, other) -> bool:
        """With a budget, a spilled ``other``'s files are copied in chunks."""
        if self.max_memory is None or not other.spilled:
            return False
        self._reserve(other.nbytes, others=False)  # (a merge leaves every other state as it was)
        self._merge_state(*other.spilled_parts())
        return True

    def _merge_state(self, other, disk=None):
        """Fold the state ``other`` (and the disk runs of the exact state ``disk``), whole or (a spill failed) not at
        all."""
        if disk is None:
            self._reserve(entry_bytes(other), others=False)
        floats = bool(other["weighted"][0]) and not self._strategy.weighted
        if floats:
            self._flush()  # rows counted already
        with self._strategy.atomic():
            self._merge_side(other, disk, floats)
            if floats:
                self._strategy.to_float()
            self._strategy.add(other)
            if disk is not None:
                self._strategy.add_disk(disk)
        self._n += int(other["n"][0])
        self._note()

    def _merge_side(self, other, disk, floats: bool) -> None:
        """Fold what ``other`` holds besides its run (``floats``: this state's counts are about to become weights)."""

    def _load(self, state):
        if self._pool is not None:  # room for the new state (a refusal changes nothing: the state held now stays)
            self._pool.reserve(self, self._FIXED_BYTES + entry_bytes(state))
        old = getattr(self, "_strategy", None)
        if isinstance(old, Exact):
            old.close()  # its temporary files go now
        self._n = int(state["n"][0])
        self._strategy = self._new_strategy(bool(state["weighted"][0]))
        self._strategy.load(state)
        self._pending = None


class SortedRuns(HeldRuns):
    """Held as one sorted run of values; a subclass calls :meth:`_init_runs` last in ``__init__``."""

    def _init_runs(self, max_memory, spill_dir) -> None:
        self._init_budget(max_memory, spill_dir)
        self._load(empty_state(self.fields, self))

    def _budget(self) -> dict:
        """The saved setting of the budget (none without one)."""
        return {} if self.max_memory is None else {"max_memory": self.max_memory}

    def _empty_like(self):
        return type(self)(spill_dir=self.spill_dir, **self._settings())

    def _chunks(self):
        """The single sorted run, in chunks (read from the file once spilled)."""
        if self._n == 0:
            raise NoObservationsError(f"{type(self).__name__} has no observations: call update() first")
        buf, self._pending = self._pending, None
        self._strategy.compact(buf)
        if self._strategy.spilled:
            (run,) = self._strategy.disk
            return stream_merge([run.records()], self._strategy.chunk())
        top = self._strategy.stack.top()
        return [] if top is None else [top]
