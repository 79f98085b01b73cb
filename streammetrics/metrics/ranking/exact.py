"""Exact strategy: every distinct score in log-structured sorted runs, spilled past a memory budget."""

from __future__ import annotations

import os
from contextlib import contextmanager
from functools import partial

import numpy as np

from ..._protocol.runs import RunStack
from .points import Points, empty_run, joined
from .saved import run_of_state
from .sorting import merge_runs
from .spill import MAX_DISK_RUNS, SpillStore, count_dtype, stream_merge, window


def entries(run) -> int:
    """Entries of a run (its first array's length)."""
    return run[0].shape[0]


class Exact:
    """The exact state: runs in memory and, past ``budget`` bytes, files of a :class:`~.spill.SpillStore`.

    A change that writes files is all-or-nothing (:meth:`atomic`): when a write fails, the runs and files are as
    they were. A forked child never touches its parent's files: at its first use it copies them into its own.
    """

    #: pending rows at most max(PENDING_MIN, PENDING_RATIO * stored scores): 8 bytes a row against 24 a stored score
    PENDING_MIN = 1 << 24
    PENDING_RATIO = 3

    def __init__(self, weighted: bool = False, budget: int | None = None, spill_dir=None):
        self.weighted = weighted
        self.stack = RunStack(merge_runs, entries)
        self.budget = budget
        self.spill_dir = spill_dir
        self.store = None  # made at the first spill
        self._disk: list = []  # runs on disk (DiskRun)
        self._depth = 0  # nesting of atomic()

    @property
    def disk(self) -> list:
        """The runs on disk (this process's own files)."""
        store = self.store
        if store is not None and store.pid != os.getpid():  # a forked child: the files are the parent's
            self.store = None
            self._disk = [self.storage().copy_from(r, self.chunk()) for r in self._disk]
        return self._disk

    @property
    def spilled(self) -> bool:
        return bool(self._disk)

    @property
    def disk_bytes(self) -> int:
        return sum(r.nbytes for r in self._disk)

    def storage(self) -> SpillStore:
        self.disk  # noqa: B018 - a forked child takes its own copy first
        if self.store is None:
            self.store = SpillStore(self.spill_dir)
        return self.store

    @contextmanager
    def atomic(self):
        """Changes made inside stand together: on an exception the runs, the weighting and the files are restored
        (files written meanwhile removed; files dropped meanwhile removed only once the change stands)."""
        if self._depth or self.budget is None:  # nested, or never on disk
            yield
            return
        saved = (self.stack.copy(), list(self.disk), self.weighted)
        self._depth += 1
        try:
            with self.storage().transaction():
                yield
        except BaseException:
            self.stack, self._disk, self.weighted = saved
            raise
        finally:
            self._depth -= 1

    def chunk(self, sources: int = 1) -> int:
        """Entries read from each of ``sources`` runs per step of a streamed merge."""
        budget = self.budget if self.budget is not None else 1 << 30
        return max(64, (budget // 12) // (24 * (sources + 1)))

    def spill(self) -> None:
        """Write every run in memory to files (all or nothing)."""
        with self.atomic():
            self.disk.extend(self.storage().write(*run) for run in self.stack if entries(run))
            self.stack = RunStack(merge_runs, entries)
            self._bound_disk()

    def _bound_disk(self) -> None:
        if len(self.disk) > MAX_DISK_RUNS:
            # the smaller runs into one: each entry is rewritten O(log) times in all
            self.disk.sort(key=lambda r: -r.m)
            self._merge_disk(self.disk[MAX_DISK_RUNS // 2 :])

    def _merge_disk(self, old, extra=()) -> None:
        """Merge the disk runs ``old`` and memory runs ``extra`` into one file, in chunks (files first)."""
        sources = [r.records() for r in old] + list(extra)
        if len(sources) < 2:
            return
        if self.weighted:
            dtype = np.float64
        else:  # the narrowest dtype that holds the sum of the runs' largest counts
            dtype = count_dtype(sum(r.peak for r in old) + sum(int(ab.max()) for _, ab in extra if ab.size))
        store = self.storage()
        merged = store.write_chunks(dtype, stream_merge(sources, self.chunk(len(sources))))
        gone = {id(r) for r in old}
        self._disk = [r for r in self.disk if id(r) not in gone] + [merged]
        for run in old:
            store.remove(run)

    def _check_budget(self) -> None:
        if self.budget is not None and self.nbytes > self.budget // 4:
            self.spill()

    def add_disk(self, other: Exact) -> None:
        """Copy the disk runs of ``other`` into files of this state, in chunks."""
        with self.atomic():
            for run in other.disk:
                float_run = self.weighted and run.dtype != np.float64
                self.disk.append(self._as_float(run) if float_run else self.storage().copy_from(run, self.chunk()))
            self._bound_disk()

    def _as_float(self, run):
        return self.storage().write_chunks(np.float64, stream_merge([run], self.chunk()))

    def disk_masses(self):
        chunks = stream_merge([r.records() for r in self.disk], self.chunk(len(self.disk)))
        return sum((ab.sum(axis=1) for _, ab in chunks), np.zeros(2))

    def close(self) -> None:
        """Forget the runs and remove the files (the state is empty afterwards; a forked child's parent keeps its
        files)."""
        self.stack = RunStack(merge_runs, entries)
        self._disk = []
        if self.store is not None:
            self.store.close()

    def clone(self) -> Exact:
        out = Exact(self.weighted, self.budget, self.spill_dir)
        out.stack = self.stack.copy()
        out.disk.extend(out.storage().copy_from(r, self.chunk()) for r in self.disk)
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the runs in memory (:attr:`disk_bytes` those on disk)."""
        return sum(s.nbytes + ab.nbytes for s, ab in self.stack)

    def pending_limit(self) -> int:
        limit = max(self.PENDING_MIN, self.PENDING_RATIO * self.stack.entries())
        if self.budget is not None:
            # a sixteenth of the budget (its run then takes at most three sixteenths)
            limit = min(limit, max(64, self.budget // (16 * (16 if self.weighted else 8))))
        return limit

    def to_float(self) -> None:
        with self.atomic():
            if self.disk:
                store, old = self.storage(), self.disk
                self._disk = [self._as_float(r) for r in old]
                for run in old:
                    store.remove(run)
            self.stack = RunStack(merge_runs, entries, [(s, ab.astype(np.float64)) for s, ab in self.stack])
            self.weighted = True

    def masses(self):
        """``[positive, negative]`` mass of the runs (pending rows not included)."""
        return sum((ab.sum(axis=1) for _, ab in self.stack), np.zeros(2)) + (self.disk_masses() if self.disk else 0.0)

    def compact(self, buf=None) -> None:
        """Take ``buf``'s rows (used up) and merge every run into one, in memory or in one file."""
        if buf is not None and buf.rows:
            self.take(buf, check=False)  # in memory: the rows are in the state whatever follows
        if self.disk:
            with self.atomic():
                extra = [run for run in self.stack if run[0].shape[0]]
                self.stack = RunStack(merge_runs, entries)
                self._merge_disk(self.disk, extra)
        else:
            self.stack.collapse()

    def take(self, buf, check: bool = True) -> None:
        """Sort the pending rows of ``buf`` into a run (``buf`` is used up)."""
        top = self.stack.top()
        # when the new run would be merged into the top one, both are done in one pass
        run = buf.run(merged_with=self.stack.pop() if top is not None and entries(top) <= 2 * buf.rows else None)
        buf.release()
        self.stack.push(run)
        if check:
            self._check_budget()  # all-or-nothing: a failed spill leaves the runs in memory

    def add(self, state) -> None:
        """Fold the run of another exact state."""
        lo, ab = run_of_state(state, self.weighted)
        if lo.shape[0]:
            with self.atomic():
                self.stack.push((lo, ab))
                self._check_budget()

    def run(self, buf=None, memory_only: bool = False):
        """The single run, pending rows of ``buf`` included, neither changed (read from the files once spilled)."""
        if self.disk and not memory_only:
            sources = [r.records() for r in self.disk] + list(self.stack)
            if buf is not None and buf.rows:
                sources.append(buf.run(in_place=False))
            return joined(stream_merge(sources, self.chunk(len(sources))), self.weighted)
        run = self.stack.merged()
        if buf is not None and buf.rows:
            run = buf.run(merged_with=run, in_place=False)
        return empty_run(self.weighted) if run is None else run

    def points(self, n: int) -> Points:
        """The query engine of the state, compacted (:meth:`compact`) already."""
        if self.disk:
            (run,) = self.disk
            read = partial(window, run.records())  # opened now: a snapshot that outlives the file
            # blocks of at least 64 entries, at most 65536 of them (their marks are kept)
            return Points((read, run.m), n, self.weighted, block=max(64, -(-run.m // 65536)), window=self.chunk())
        return Points(self.stack.top() or empty_run(self.weighted), n, self.weighted)

    def export(self, buf, state, memory_only: bool = False) -> None:
        """Write the single run into ``state`` (``memory_only``: the runs in memory only; see :meth:`add_disk`)."""
        lo, ab = self.run(buf, memory_only)
        if lo.shape[0]:
            state["lo"] = lo
            state["weights" if self.weighted else "counts"] = ab

    def load(self, state) -> None:
        self.close()
        self.add(state)
