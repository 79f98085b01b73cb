"""Accumulators whose state is the exact AUC's sorted runs of distinct values with two masses each (in memory, or
spilled past ``max_memory``): :class:`~streammetrics.ErrorQuantiles` and ``Calibration(strategy="quantile")``."""

from __future__ import annotations

from ..._protocol.base import Accumulator
from ..._protocol.state import empty_state
from .exact import Exact
from .spill import parse_memory


class SortedRuns(Accumulator):
    """The runs ``_exact``, the rows not yet sorted in ``_pending`` and the rows seen ``_n``; a subclass declares the
    fields ``n``, ``weighted``, ``lo``, ``counts`` and ``weights`` and calls :meth:`_init_runs` last in ``__init__``."""

    def _init_runs(self, max_memory, spill_dir) -> None:
        self.max_memory = parse_memory(max_memory)
        if spill_dir is not None and self.max_memory is None:
            raise ValueError("spill_dir is where runs are spilled past max_memory: give max_memory too")
        self.spill_dir = spill_dir
        self._load(empty_state(self.fields, self))

    def _budget(self) -> dict:
        """The saved setting of the budget (none without one)."""
        return {} if self.max_memory is None else {"max_memory": self.max_memory}

    def _empty_like(self):
        return type(self)(spill_dir=self.spill_dir, **self._settings())

    @property
    def n(self) -> int:
        return self._n

    @property
    def spilled(self) -> bool:
        """Whether part of the state is held in temporary files (``max_memory``)."""
        return self._exact.spilled

    @property
    def nbytes(self) -> int:
        """Bytes of the runs in memory and the rows not yet sorted in."""
        return self._exact.nbytes + (0 if self._pending is None else self._pending.nbytes)

    @property
    def _state(self):
        return self._exported(memory_only=False)

    def _exported(self, memory_only: bool):
        st = empty_state(self.fields, self)
        st["n"][0] = self._n
        st["weighted"][0] = int(self._exact.weighted)
        self._exact.export(self._pending, st, memory_only)
        return st

    def spilled_parts(self):
        """``(state, exact)``: the state of the runs and rows in memory (a copy), and the exact state holding the
        files of the rest."""
        return self._exported(memory_only=True), self._exact

    def _merge_files(self, other) -> bool:
        """With ``max_memory``, a spilled ``other``'s files are copied a chunk at a time, all or nothing."""
        if self.max_memory is None or not other.spilled:
            return False
        memory, disk = other.spilled_parts()
        n = self._n
        try:
            with self._exact.atomic():
                self._merge_state(memory)
                self._exact.add_disk(disk)
        except BaseException:
            self._n = n
            raise
        return True

    def _load(self, state):
        old = getattr(self, "_exact", None)
        if old is not None:
            old.close()  # its temporary files go now
        self._n = int(state["n"][0])
        self._exact = Exact(bool(state["weighted"][0]), self.max_memory, self.spill_dir)
        self._exact.load(state)
        self._pending = None

    def close(self) -> None:
        """Forget every observation and remove the temporary files now."""
        with self._guard:
            self._load(empty_state(self.fields, self))
