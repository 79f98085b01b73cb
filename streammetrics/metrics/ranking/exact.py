"""Exact strategy: every distinct score, in log-structured sorted runs.

A *run* is ``(scores, ab)``: the distinct scores in increasing order and the
positive (``ab[0]``) and negative (``ab[1]``) count at each, ``int64`` without
weights and ``float64`` with them. Pending rows are radix-sorted into a run
and pushed onto a :class:`~streammetrics._protocol.runs.RunStack` (a new run
that would be merged into the top one is built in the same pass that merges
it). The AUC is ``2U`` counted exactly in int64 (in 128-bit integers past
``2 n_pos n_neg = 2**63``), or a compensated float64 sum with weights.
"""

from __future__ import annotations

import math

import numpy as np

from ..._kernels import rank as K
from ..._protocol.errors import WeightOverflowError
from ..._protocol.result import safe
from ..._protocol.runs import RunStack
from .operating import LayeredPoints, OperatingPoints, u2_with_blocks
from .sorting import run_into_across, sort_classes, u2_across
from .spill import MAX_DISK_RUNS, SpillStore, count_dtype, stream_merge
from .streamed import StreamedRun

__all__ = ["Exact", "run_of_sorted", "auc_of_run", "auc_of_chunks", "merge_runs", "INT64_LIMIT"]

INT64_LIMIT = 2**63


def _trimmed(scores, ab, m):
    """The first ``m`` entries of a run, copied when shorter (freeing the rest)."""
    if m == scores.shape[0]:
        return scores, ab
    return scores[:m].copy(), np.ascontiguousarray(ab[:, :m])


_NO_RUN = (np.zeros(0, np.float64), np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float64))


def run_of_sorted(kp, kn, vp=None, vn=None, run=None):
    """The run ``(scores, ab)`` of sorted positives' keys ``kp`` and negatives'
    keys ``kn`` (with their weights ``vp``, ``vn``), merged with ``run`` if given.

    ``ab`` holds int64 counts without weights, float64 weights with them.
    """
    if run is None:
        run = (_NO_RUN[0], _NO_RUN[1] if vp is None else _NO_RUN[2])
    cap = run[0].shape[0] + kp.shape[0] + kn.shape[0]
    scores = np.empty(cap, np.float64)
    if vp is None:
        ab = np.empty((2, cap), np.int64)
        m = run_into_across(run, kp, kn, scores.view(np.uint64), ab)
    else:
        ab = np.empty((2, cap), np.float64)
        m = K.run_into_weighted(run[0].view(np.uint64), run[1], kp, vp, kn, vn, scores.view(np.uint64), ab)
    return _trimmed(scores, ab, m)


def sorted_run(keys, front, back, vals=None, run=None, presorted=False):
    """The run of positives' keys ``keys[:front]`` and negatives' keys
    ``keys[back:]`` (with their weights ``vals``), sorting them in place
    unless ``presorted``, and merged with ``run`` if given."""
    if not presorted:
        sort_classes(keys, front, back, vals)
    if vals is None:
        return run_of_sorted(keys[:front], keys[back:], run=run)
    return run_of_sorted(keys[:front], keys[back:], vals[:front], vals[back:], run=run)


def merge_runs(a, b):
    """One run holding two runs (masses of a score in both are added)."""
    cap = a[0].shape[0] + b[0].shape[0]
    scores = np.empty(cap, np.float64)
    ab = np.empty((2, cap), a[1].dtype)
    m = K.merge_into(a[0], a[1], b[0], b[1], scores, ab)
    return _trimmed(scores, ab, m)


def _u2_counts(ab, n_pos: int, n_neg: int) -> int:
    """Exact ``2U`` of int64 counts as a Python int (128-bit when int64 would overflow)."""
    if 2 * n_pos * n_neg < INT64_LIMIT:
        return int(K.u2_int(ab))
    high, low = K.u2_int128(ab)
    return (int(high) << 64) | int(low)


def auc_of_run(ab, weighted: bool):
    """``(auc, n_pos, n_neg)`` of one run: exact for counts, float for weights."""
    return auc_of_chunks(lambda: iter(((None, ab),)), weighted)


def auc_of_chunks(chunks, weighted: bool):
    """``(auc, n_pos, n_neg)`` of a run read as consecutive chunks ``(scores, ab)``
    (``chunks()`` gives a new iterator over them; weights take two passes).

    Counts: ``2U`` is the sum over the chunks of their own ``2U`` and twice their
    positives times the negatives of the chunks before, as exact integers.
    Weights: compensated sums carried from chunk to chunk. Either way the
    value does not depend on where the chunks are cut.
    """
    if weighted:
        carry = np.zeros(4)
        for _, ab in chunks():
            K.masses_carry(ab, carry)
        n_pos = float(carry[0] + carry[1])
        n_neg = float(carry[2] + carry[3])
        if not (math.isfinite(n_pos) and math.isfinite(n_neg)):
            raise WeightOverflowError(scores="the total weights of the positives and the negatives")
        if n_pos == 0 or n_neg == 0:
            return 0.0, n_pos, n_neg
        carry = np.zeros(4)
        for _, ab in chunks():
            K.u2_float_carry(ab, 1.0 / n_pos, 1.0 / n_neg, carry)
        twice = float(carry[2] + carry[3])
        return min(max(twice / 2.0, 0.0), 1.0), n_pos, n_neg
    u2 = n_pos = n_neg = 0
    for _, ab in chunks():
        if ab.shape[1] == 0:
            continue
        p = int(ab[0].sum())
        q = int(ab[1].sum())
        u2 += _u2_counts(ab, p, q) + 2 * p * n_neg
        n_pos += p
        n_neg += q
    return u2 / (2 * safe(n_pos * n_neg)), n_pos, n_neg


def _entries(run) -> int:
    return run[0].shape[0]


class Exact:
    """The exact state: runs of distinct scores (see the module docstring).

    With a memory ``budget`` (bytes) the runs in memory are written to files
    of a :class:`~.spill.SpillStore` in ``spill_dir`` once they take more than
    half of it (see :mod:`.spill`); every read streams a merge over the files
    and the runs still in memory.
    """

    #: pending rows at most max(PENDING_MIN, PENDING_RATIO * stored scores):
    #: a pending row takes 8 bytes, a stored score 24, so a stream of up to
    #: PENDING_MIN distinct scores is sorted once, at the end, as the one-shot
    #: AUC sorts (no run built and merged on the way), within the memory of
    #: its state
    PENDING_MIN = 1 << 24
    PENDING_RATIO = 3

    def __init__(self, weighted: bool = False, budget: int | None = None, spill_dir=None):
        self.weighted = weighted
        self.stack = RunStack(merge_runs, _entries)
        self.budget = budget
        self.spill_dir = spill_dir
        self.store = None  # made at the first spill
        self.disk: list = []  # runs on disk (DiskRun)
        #: the block table ``result`` marked over the run and the sorted pending
        #: rows, with what it was marked over (see :meth:`marked_table`)
        self.marked = None

    # ------------------------------------------------------------ spilling
    @property
    def spilled(self) -> bool:
        return bool(self.disk)

    def _store(self):
        if self.store is None:
            self.store = SpillStore(self.spill_dir)
        return self.store

    def chunk(self, sources: int) -> int:
        """Entries read from each of ``sources`` runs per step of a streamed merge."""
        budget = self.budget if self.budget is not None else 1 << 30
        return max(64, (budget // 12) // (24 * (sources + 1)))

    def _spill(self) -> None:
        """Write the runs in memory to files, then bound the runs on disk."""
        store = self._store()
        for run in self.stack:
            if run[0].shape[0]:
                self.disk.append(store.write(*run))
        self.stack = RunStack(merge_runs, _entries)
        self._bound_disk()

    def _bound_disk(self) -> None:
        if len(self.disk) > MAX_DISK_RUNS:
            # the smaller runs into one: a long stream rewrites its big runs
            # rarely (each entry is rewritten O(log) times in all)
            self.disk.sort(key=lambda r: -r.m)
            keep = MAX_DISK_RUNS // 2
            self._merge_disk(self.disk[keep:])

    def add_disk(self, other: "Exact") -> None:
        """Fold the runs ``other`` holds on disk, copied in chunks into files of
        this state (as weights when this state is weighted)."""
        store = self._store()
        for run in other.disk:
            if self.weighted and run.dtype != np.float64:
                w = store.writer(np.float64)
                try:
                    for scores, ab in stream_merge([run], self.chunk(1)):
                        w.append(scores, ab.astype(np.float64))
                except BaseException:
                    w.abort()
                    raise
                self.disk.append(w.close())
            else:
                self.disk.append(store.copy_from(run, self.chunk(1)))
        self._bound_disk()

    def disk_masses(self):
        """``[positive, negative]`` mass of the runs on disk."""
        out = np.zeros(2)
        if self.disk:
            for _, ab in self.chunks([r.records() for r in self.disk])():
                out += ab.sum(axis=1)
        return out

    def _merge_disk(self, old=None) -> None:
        """Merge runs on disk (by default all) into one file, in chunks."""
        old = self.disk if old is None else old
        if len(old) < 2:
            return
        store = self._store()
        w = self._merged_writer(store, old)
        try:
            for scores, ab in stream_merge(old, self.chunk(len(old))):
                w.append(scores, ab)
        except BaseException:
            w.abort()
            raise
        merged = w.close()
        gone = {id(r) for r in old}
        self.disk = [r for r in self.disk if id(r) not in gone] + [merged]
        for run in old:
            store.remove(run)

    def _merged_writer(self, store, disk, memory=(), rows: int = 0):
        """A new file for the merge of the runs ``disk`` and ``memory`` and ``rows``
        pending rows: weights, or counts in the narrowest dtype that holds the
        sum of the runs' largest counts (no merged count can pass it)."""
        if self.weighted:
            return store.writer(np.float64)
        bound = sum(r.peak for r in disk) + rows
        bound += sum(int(ab.max()) for _, ab in memory if ab.size)
        return store.writer(count_dtype(bound))

    def _merge_for_reading(self, buf):
        """Merge the runs on disk, those in memory and the pending rows of ``buf``
        into one file when there are three or more, and return the merged
        chunks' function for :func:`auc_of_chunks` (``None`` when nothing was
        merged).

        A report reads a spilled state several times (the AUC, the average
        precision, each threshold query), and each read of many runs is a
        k-way merge: after this one, every later read is a plain scan of one
        file. The AUC is counted in the same pass that writes the file (its
        chunks are handed on as they are written; weights take a second
        pass, over the merged file). Only how the state is held changes (as
        :meth:`compact`, and the rows of ``buf`` are used up): the masses of
        a score are added in the order every read adds them (files, runs in
        memory, pending rows), so every result is the same to the bit.
        """
        sources = self.sources(buf)
        if len(sources) < 3:
            return None
        store = self._store()
        w = self._merged_writer(store, self.disk, list(self.stack), buf.rows if buf is not None else 0)
        old = self.disk

        def merged():
            try:
                for scores, ab in stream_merge(sources, self.chunk(len(sources))):
                    w.append(scores, ab)
                    yield scores, ab
            except BaseException:
                w.abort()
                raise
            self.disk = [w.close()]
            self.stack = RunStack(merge_runs, _entries)
            if buf is not None:
                buf.release()
            for run in old:
                store.remove(run)

        if self.weighted:  # two passes: the second reads the merged file
            for _ in merged():
                pass
            return self.chunks(self.sources(buf))
        return lambda: merged()

    def _check_budget(self) -> None:
        if self.budget is not None and self.nbytes > self.budget // 4:
            self._spill()

    def marked_table(self, buf):
        """The block table the last :meth:`result` marked, if the state still holds
        what it was marked over: the same run (runs are immutable) and the same
        sorted buffer ``buf`` (a sorted buffer takes no more rows); else ``None``."""
        m = self.marked
        if m is None or buf is None or len(self.stack) > 1 or self.disk:
            return None
        run, mbuf, keys, front, back, table = m
        now = self.stack.top() if len(self.stack) else None
        if (now is not run or mbuf is not buf or buf.keys is not keys or not buf.sorted
                or (buf.front, buf.back) != (front, back)):
            return None
        return table

    def close(self) -> None:
        """Forget the runs and remove the files (the state is empty afterwards)."""
        self.marked = None
        self.stack = RunStack(merge_runs, _entries)
        self.disk = []
        if self.store is not None:
            self.store.close()

    @property
    def disk_bytes(self) -> int:
        return sum(r.nbytes for r in self.disk)

    def sources(self, buf=None) -> list:
        """The runs to merge for a read: the files' records (opened now: a snapshot),
        the runs in memory, and the run of the pending rows of ``buf``."""
        out = [r.records() for r in self.disk] + list(self.stack)
        if buf is not None and buf.rows:
            out.append(buf.copy_run())
        return out

    def chunks(self, sources):
        """A function giving the merged chunks of ``sources`` (anew at each call)."""
        step = self.chunk(len(sources))
        return lambda: stream_merge(sources, step)

    def _materialized(self, sources):
        """One in-memory run of ``sources`` (the curves, saving: 24 bytes per distinct score)."""
        parts = list(self.chunks(sources)())
        if not parts:
            return self._empty()
        return (np.concatenate([p[0] for p in parts]),
                np.concatenate([p[1] for p in parts], axis=1))

    # --------------------------------------------------------------- state
    def clone(self) -> "Exact":
        out = Exact(self.weighted, self.budget, self.spill_dir)
        out.stack = self.stack.copy()
        if self.disk:
            store = out._store()
            out.disk = [store.copy_from(r, self.chunk(1)) for r in self.disk]
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the runs in memory (:attr:`disk_bytes` those on disk)."""
        return sum(s.nbytes + ab.nbytes for s, ab in self.stack)

    def pending_limit(self) -> int:
        entries = self.stack.entries() if len(self.stack) else 0
        limit = max(self.PENDING_MIN, self.PENDING_RATIO * entries)
        if self.budget is not None:
            # a sixteenth of the budget (its run then takes at most three sixteenths)
            limit = min(limit, max(64, self.budget // (16 * (16 if self.weighted else 8))))
        return limit

    def to_float(self) -> None:
        self.marked = None
        self.stack = RunStack(merge_runs, _entries,
                              [(s, ab.astype(np.float64)) for s, ab in self.stack])
        if self.disk:
            store, old = self._store(), self.disk
            new = []
            for run in old:
                w = store.writer(np.float64)
                try:
                    for scores, ab in stream_merge([run], self.chunk(1)):
                        w.append(scores, ab.astype(np.float64))
                except BaseException:
                    w.abort()
                    raise
                new.append(w.close())
            self.disk = new
            for run in old:
                store.remove(run)
        self.weighted = True

    def masses(self):
        """``[positive, negative]`` mass of the runs (pending rows not included)."""
        out = np.zeros(2)
        for _, ab in self.stack:
            out += ab.sum(axis=1)
        return out + self.disk_masses()

    def compact(self) -> None:
        """Merge the runs into one (on disk once spilled)."""
        if self.disk:
            self._spill()
            self._merge_disk()
        else:
            self.stack.collapse()

    def take(self, buf) -> None:
        """Sort the pending rows of ``buf`` into a run (``buf`` is used up)."""
        self.marked = None  # marked over the rows now taken: their memory goes
        stack = self.stack
        top = stack.top()
        if top is not None and _entries(top) <= 2 * buf.rows:
            # the new run would be merged into the top one: do both in one pass
            run = buf.run(merged_with=stack.pop())
        else:
            run = buf.run()
        buf.release()
        stack.push(run)
        self._check_budget()

    def add(self, state) -> None:
        """Fold the run of another exact state (``lo`` and its counts or weights)."""
        self.marked = None
        lo, ab = state["lo"], state["weights" if state["weighted"][0] else "counts"]
        if lo.shape[0] == 0:
            return
        if self.weighted and ab.dtype != np.float64:
            ab = ab.astype(np.float64)
        self.stack.push((lo, ab))
        self._check_budget()

    def points(self, buf=None):
        """The single run of the state, pending rows of ``buf`` included; no change to either."""
        if self.disk:
            return self._materialized(self.sources(buf))
        run = self.stack.merged()
        if buf is not None and buf.rows:
            run = buf.copy_run(merged_with=run)
        return self._empty() if run is None else run

    def result(self, buf, n: int):
        """``(auc, lower, upper, n_pos, n_neg, points)``: the three AUCs are equal;
        ``points`` gives the state's points when called (for the curves); once
        spilled it is a :class:`~.streamed.StreamedRun`, whose average
        precision and operating points are read from the runs chunk by chunk."""
        if self.disk:
            # stream a merge over the files, the runs in memory and the pending
            # rows' run; the sources are a snapshot (open files, immutable runs)
            chunks = self._merge_for_reading(buf)
            if chunks is None:
                chunks = self.chunks(self.sources(buf))
            value, n_pos, n_neg = auc_of_chunks(chunks, self.weighted)
            sources = self.sources(buf)
            # the average precision and the threshold queries stream the
            # sources too; the curves build the merged run when asked
            points = StreamedRun(sources, self.chunk(len(sources)), self.weighted, n_pos, n_neg,
                                 lambda: self._materialized(sources))
            return value, value, value, n_pos, n_neg, points
        runs = self.stack.copy()  # the runs are immutable: a snapshot
        if buf is not None and buf.rows and not buf.weighted and n * n < 2 * INT64_LIMIT:
            # count 2U across the run and the sorted pending rows in one pass,
            # without writing their merged run; the rows are sorted in place
            # and stay pending (marked sorted, so they take no more rows), and
            # the next flush does not sort them again. (2 n_pos n_neg <= n**2 / 2
            # fits an int64 here.)
            run = runs.merged()
            kp, kn = buf.sort()
            parts = run if run is not None else _NO_RUN[:2]
            if parts[0].shape[0] + kp.shape[0] + kn.shape[0] <= LayeredPoints.MIN:
                # a small state's queries read a merged copy: no block to mark
                u2, n_pos, n_neg = u2_across(parts, kp, kn)
                self.marked = None
            else:
                # the block table of the threshold queries is marked on the way
                # (see u2_with_blocks), kept while these parts are the state's
                u2, n_pos, n_neg, table = u2_with_blocks(parts, kp, kn)
                self.marked = (run, buf, buf.keys, buf.front, buf.back, table) if len(runs) <= 1 else None
            value = u2 / (2 * safe(n_pos * n_neg))
            return value, value, value, n_pos, n_neg, lambda: run_of_sorted(kp, kn, run=run)
        if buf is not None and buf.rows:
            points = self.points(buf)
            source = points
        else:
            points = runs.merged()
            source = (lambda: runs.merged() or self._empty())
        value, n_pos, n_neg = auc_of_run(points[1] if points is not None else self._empty()[1],
                                         self.weighted)
        return value, value, value, n_pos, n_neg, source

    def _empty(self):
        return np.zeros(0), np.zeros((2, 0), np.float64 if self.weighted else np.int64)

    def operating(self, buf, n: int) -> OperatingPoints:
        """The confusion counts at every threshold, pending rows of ``buf`` included."""
        scores, ab = self.points(buf)
        return OperatingPoints(scores, ab, n, self.weighted)

    def export_memory(self, buf, state) -> None:
        """:meth:`export` of the runs in memory and the pending rows only (the
        runs on disk are taken over by :meth:`add_disk`)."""
        run = self.stack.merged()
        if buf is not None and buf.rows:
            run = buf.copy_run(merged_with=run)
        if run is not None and run[0].shape[0]:
            state["lo"] = run[0]
            state["weights" if self.weighted else "counts"] = run[1]

    def export(self, buf, state) -> None:
        """Write the single run (pending rows included) into the saved ``state``."""
        lo, ab = self.points(buf)
        if lo.shape[0]:
            state["lo"] = lo
            state["weights" if self.weighted else "counts"] = ab

    def load(self, state) -> None:
        self.close()
        self.add(state)
