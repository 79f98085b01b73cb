"""Sorted runs on disk past a quarter of ``max_memory``: at most :data:`MAX_DISK_RUNS` temporary files of records
``(score, positive, negative)``, masses uint32 while counts fit (16 bytes), else int64 or float64.
"""

from __future__ import annotations

import errno
import mmap
import numbers
import os
import re
import tempfile
import weakref
import zlib
from contextlib import contextmanager

import numpy as np

from ..._kernels.merges import merge_records, records_cut
from ..._protocol import tempfiles

MAX_DISK_RUNS = 32  # at most this many runs are kept on disk; one more merges the smaller half into one file
SPILL_STEM = ".streammetrics-"
SPILL_SUFFIX = ".smspill"
MIN_MEMORY = 4096  # the smallest budget taken (bytes): a few chunks of a few entries
PACK_ROWS = 1 << 18  # entries packed into records and written at a time (6 MB of records)

_UNITS = {"": 1, "b": 1}  # decimal (``KB``) and binary (``KiB``) units
_UNITS.update({p + u: (1024 if u == "ib" else 1000) ** i for i, p in enumerate("kmgt", 1) for u in ("", "b", "ib")})
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


def parse_memory(value) -> int | None:
    """A memory budget in bytes (at least :data:`MIN_MEMORY`): an int or a string with a decimal (``KB``) or binary
    (``KiB``) unit; ``None`` stays ``None``.

    >>> parse_memory("1GB"), parse_memory("512MiB"), parse_memory(65536)
    (1000000000, 536870912, 65536)
    """
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        nbytes = int(value)
    elif isinstance(value, str):
        m = _SIZE.match(value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise ValueError(
                f"max_memory must be a number of bytes with an optional unit (B, KB, MB, GB, TB, "
                f"KiB, MiB, GiB, TiB), such as '1GB' or '512MiB'; got {value!r}"
            )
        nbytes = int(float(m.group(1)) * _UNITS[unit])
    else:
        raise TypeError(
            f"max_memory must be an int (bytes), a string such as '1GB', or None, got {type(value).__name__}"
        )
    if nbytes < MIN_MEMORY:
        shown = f"{value!r} ({nbytes} bytes)" if isinstance(value, str) else f"{nbytes}"
        raise ValueError(f"max_memory must be at least {MIN_MEMORY} bytes, got {shown}")
    return nbytes


def check_spill_dir(spill_dir) -> str | None:
    """The absolute path of an existing folder for spilled files, or ``None``."""
    if spill_dir is None:
        return None
    if not isinstance(spill_dir, (str, os.PathLike)):
        raise TypeError(f"spill_dir must be a folder path or None, got {type(spill_dir).__name__}")
    folder = os.path.abspath(os.fspath(spill_dir))
    if not os.path.isdir(folder):
        raise ValueError(f"spill_dir must be an existing folder, got {os.fspath(spill_dir)!r}")
    return folder


def _unlink(paths: set, path: str) -> None:
    """Remove the file ``path`` and forget it."""
    tempfiles.unlink(path)
    paths.discard(path)


def _unlink_all(paths: set, pid: int) -> None:
    """Remove the files (a forked child leaves its parent's files alone)."""
    if os.getpid() == pid:
        for p in list(paths):
            _unlink(paths, p)


def _record(dtype) -> np.dtype:
    return np.dtype([("s", np.float64), ("p", dtype), ("q", dtype)])


_NARROW = np.dtype(np.uint32)


def count_dtype(bound: int) -> np.dtype:
    """The dtype a file stores counts in when none exceeds ``bound``."""
    return _NARROW if bound < 2**32 else np.dtype(np.int64)


def _read_dtype(dtype) -> np.dtype:
    """The dtype of the masses read from records of ``dtype`` (counts as int64)."""
    return np.dtype(np.float64) if np.dtype(dtype).kind == "f" else np.dtype(np.int64)


READ_BLOCK = 1 << 22  # bytes read at a time to check a file's checksum


class DiskRun:
    """One run in a file: ``m`` records whose counts are at most ``peak`` (0 for weights), and the CRC-32 of the
    file's bytes; ``record`` is their dtype (a rank run's ``(score, positive, negative)`` of masses ``dtype`` unless
    given)."""

    __slots__ = ("path", "m", "dtype", "peak", "crc", "record", "__weakref__")

    def __init__(self, path: str, m: int, dtype, peak: int = 0, crc: int = 0, record=None):
        self.path = path
        self.m = int(m)
        self.dtype = np.dtype(dtype)
        self.peak = int(peak)
        self.crc = crc
        self.record = _record(self.dtype) if record is None else np.dtype(record)

    @property
    def nbytes(self) -> int:
        return self.record.itemsize * self.m

    def records(self):
        """The file's records, memory-mapped read-only (empty for an empty run), once its size and checksum are
        those written: a truncated, grown or swapped file raises ``OSError`` rather than give a wrong result."""
        if self.m == 0:
            return np.zeros(0, self.record)
        crc, size = 0, 0
        with open(self.path, "rb") as fh:  # read, not mapped: the pages stay out of this process's memory
            while block := fh.read(READ_BLOCK):
                crc = zlib.crc32(block, crc)
                size += len(block)
        if size != self.nbytes or crc != self.crc:
            raise OSError(
                errno.EIO,
                f"a spilled run was changed on disk since it was written ({size} bytes against {self.nbytes}"
                f"{', checksum differs' if size == self.nbytes else ''}); the exact state cannot be read",
                self.path,
            )
        return np.memmap(self.path, dtype=self.record, mode="r", shape=(self.m,))


class SpillStore:
    """The temporary files of one exact state, removed by :meth:`remove`, :meth:`close`, collection and exit."""

    def __init__(self, folder: str | None = None):
        self.folder = os.path.abspath(tempfile.gettempdir() if folder is None else os.fspath(folder))
        self.paths: set = set()
        self.pid = os.getpid()  # the process whose files these are
        self._finalizer = weakref.finalize(self, _unlink_all, self.paths, self.pid)  # also run at normal exit
        self._doomed = None  # files removed once the running transaction stands

    def new_path(self) -> str:
        """A fresh file name under this process's lock on the folder (the first removes what dead owners left)."""
        return tempfiles.shared(self.folder, SPILL_STEM, SPILL_SUFFIX).new_path()

    @contextmanager
    def transaction(self):
        """Files written inside are removed if it raises; files removed inside go only once it stands."""
        before, self._doomed = set(self.paths), []
        try:
            yield
        except BaseException:
            for p in self.paths - before:
                _unlink(self.paths, p)
            raise
        finally:
            doomed, self._doomed = self._doomed, None
        for p in doomed:
            _unlink(self.paths, p)

    def write(self, scores, ab) -> DiskRun:
        """Write one in-memory run to a new file."""
        peak = int(ab.max()) if ab.dtype.kind != "f" and ab.size else 0
        return self.write_chunks(ab.dtype if ab.dtype.kind == "f" else count_dtype(peak), [(scores, ab)])

    def write_chunks(self, dtype, chunks, peak: int = 0, record=None) -> DiskRun:
        """A new file of masses of ``dtype`` holding sorted chunks: runs ``(scores, ab)`` or records of ``dtype`` (or
        of ``record``)."""
        w = _RunWriter(self, dtype, record, peak)
        try:
            for chunk in chunks:
                if isinstance(chunk, tuple):
                    w.append(*chunk)
                else:
                    w.append_records(chunk)
        except BaseException:
            w.abort()
            raise
        return w.close()

    def write_records(self, rows: np.ndarray) -> DiskRun:
        """A new file holding the structured array ``rows`` as it is (:meth:`DiskRun.records` reads it back)."""
        return self.write_chunks(np.float64, [rows], record=rows.dtype)

    def copy_from(self, run: DiskRun, chunk: int) -> DiskRun:
        """A copy of ``run`` (possibly another store's) in a file of this store."""
        return self.write_chunks(run.dtype, _record_chunks(run, chunk), run.peak, run.record)

    def remove(self, run: DiskRun) -> None:
        if self._doomed is not None:
            self._doomed.append(run.path)
        else:
            _unlink(self.paths, run.path)

    def close(self) -> None:
        """Remove every file of this store (in the process that wrote them)."""
        _unlink_all(self.paths, self.pid)


class _RunWriter:
    """Appends sorted chunks of one run to a new file of a store."""

    def __init__(self, store: SpillStore, dtype, record=None, peak: int = 0):
        self.store = store
        self.dtype = np.dtype(dtype)
        self.record = record
        self.path = store.new_path()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        store.paths.add(self.path)
        self.fh = os.fdopen(fd, "wb")
        self.m = 0
        self.crc = 0
        self.buf = None
        self.peak = peak  # the largest count written

    def append(self, scores, ab) -> None:
        """Write a run's entries as records, :data:`PACK_ROWS` at a time through one reused buffer (a budget-sized run
        packed at once would take as much fresh memory). Counts must fit the file's dtype."""
        m = scores.shape[0]
        if self.dtype.kind != "f" and m:
            peak = int(ab.max())
            if self.dtype == _NARROW and (peak >= 2**32 or int(ab.min()) < 0):
                raise ValueError(f"a count of {peak} does not fit a file of uint32 counts")
            self.peak = max(self.peak, peak)
        step = min(m, PACK_ROWS)
        if self.buf is None or self.buf.shape[0] < step:  # reused from append to append
            self.buf = None
            self.buf = np.empty(step, _record(self.dtype))
        for a in range(0, m, PACK_ROWS):
            b = min(m, a + PACK_ROWS)
            self.append_records(_pack(self.buf[: b - a], scores[a:b], ab[:, a:b]))

    def append_records(self, rec) -> None:
        if rec.shape[0]:
            data = memoryview(np.ascontiguousarray(rec)).cast("B")
            self.fh.write(data)
            self.crc = zlib.crc32(data, self.crc)
            self.m += rec.shape[0]

    def close(self) -> DiskRun:
        try:
            self.fh.close()  # flushes: a full disk fails here at the latest
        except BaseException:
            self.abort()
            raise
        self.buf = None
        return DiskRun(self.path, self.m, self.dtype, self.peak, self.crc, self.record)

    def abort(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass  # the file goes anyway
        finally:
            _unlink(self.store.paths, self.path)


def _record_chunks(run: DiskRun, chunk: int):
    """The records of ``run``, ``chunk`` at a time, each unmapped once used."""
    rec = run.records()
    for a in range(0, run.m, chunk):
        yield np.asarray(rec[a : a + chunk])
        release(rec, a, min(a + chunk, run.m))


def _pack(rec, scores, ab):
    """``rec`` (records) holding the run ``(scores, ab)`` of as many entries, the masses cast to the records' dtype."""
    for name, column in zip("spq", (scores, ab[0], ab[1])):
        rec[name] = column
    return rec


def _flat_views(rec):
    """Float64 and mass-dtype ``(m, 3)`` views of contiguous records."""
    return rec.view(np.float64).reshape(-1, 3), rec.view(rec.dtype["p"]).reshape(-1, 3)


def release(src, a: int, b: int) -> None:
    """Unmap the pages of records ``a:b`` once copied out (kept in the file cache): reading a spilled state keeps the
    process's resident memory near the windows being merged."""
    mm = getattr(src, "_mmap", None)
    if mm is None or b <= a or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    probe = np.frombuffer(mm, np.uint8, count=1)
    base = probe.ctypes.data
    del probe  # releases the buffer export at once
    start = src.ctypes.data - base + a * src.itemsize
    stop = start + (b - a) * src.itemsize
    lo = (start // mmap.PAGESIZE) * mmap.PAGESIZE
    hi = min(len(mm), -(-stop // mmap.PAGESIZE) * mmap.PAGESIZE)
    if hi > lo:
        mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _copy_records(src, dst) -> None:
    """``dst[:] = src`` as raw 64-bit words when the dtypes match (whole structured records copy slowly)."""
    if src.dtype == dst.dtype:
        dst.view(np.uint64)[:] = np.asarray(src).view(np.uint64)
    else:
        for name in ("s", "p", "q"):
            dst[name] = src[name]


def window(src, a: int, b: int):
    """Entries ``a:b`` of a source (an in-memory run or a file's records) as a run."""
    if isinstance(src, tuple):
        return src[0][a:b], src[1][:, a:b]
    rec = np.asarray(src[a:b])
    scores = np.ascontiguousarray(rec["s"])
    ab = np.empty((2, rec.shape[0]), _read_dtype(rec.dtype["p"]))
    ab[0] = rec["p"]
    ab[1] = rec["q"]
    del rec
    release(src, a, b)
    return scores, ab


class _Sources:
    """The non-empty runs of a merge (file records or in-memory runs) and the buffer of one step's windows."""

    def __init__(self, sources):
        self.srcs, self.sizes, self.flat = [], [], []
        for s in sources:
            s = s.records() if isinstance(s, DiskRun) else s
            records = isinstance(s, np.ndarray)  # a file's, memory-mapped
            size = s.shape[0] if records else s[0].shape[0]
            if size:
                self.srcs.append(s)
                self.sizes.append(size)
                # the records as rows of 64-bit words: column 0 the scores
                self.flat.append(np.asarray(s).view(np.float64).reshape(-1, s.dtype.itemsize // 8) if records else None)
        self.buf = None  # the records of one step's windows, reused from step to step

    def score(self, i: int, r: int) -> float:
        flat = self.flat[i]
        return float(self.srcs[i][0][r] if flat is None else flat[r, 0])

    def cut(self, i: int, a: int, b: int, bound: float) -> int:
        """The first entry of ``a:b`` of source ``i`` above ``bound``."""
        flat = self.flat[i]
        if flat is None:
            return a + int(np.searchsorted(self.srcs[i][0][a:b], bound, side="right"))
        return int(records_cut(flat, a, b, bound))

    def merge(self, parts):
        """One run of the entries ``a:b`` of sources ``i`` for ``(i, a, b)`` in ``parts`` (masses in sources' order)."""
        if len(parts) == 1:
            i, a, b = parts[0]
            scores, ab = window(self.srcs[i], a, b)
            return np.ascontiguousarray(scores), np.ascontiguousarray(ab)
        dtype = np.result_type(*[self._dtype(i) for i, _, _ in parts])
        sizes = np.array([b - a for _, a, b in parts], np.int64)
        ends = np.cumsum(sizes)
        starts = ends - sizes
        total = int(ends[-1])
        rec_dtype = _record(dtype)
        if self.buf is None or self.buf.dtype != rec_dtype or self.buf.shape[0] < total:
            self.buf = np.empty(max(total, 0 if self.buf is None else self.buf.shape[0]), rec_dtype)
        buf = self.buf
        for (i, a, b), o in zip(parts, starts.tolist()):
            src = self.srcs[i]
            if isinstance(src, tuple):
                _pack(buf[o : o + b - a], src[0][a:b], src[1][:, a:b])
            else:
                _copy_records(src[a:b], buf[o : o + b - a])
                release(src, a, b)
        rows = buf[:total]
        scores = np.empty(total, np.float64)
        ab = np.empty((2, total), dtype)
        sc, val = _flat_views(rows)
        m = merge_records(sc, val, starts, ends, scores, ab)
        if m == total:
            return scores, ab
        return scores[:m].copy(), np.ascontiguousarray(ab[:, :m])

    def _dtype(self, i: int):
        src = self.srcs[i]
        return src[1].dtype if isinstance(src, tuple) else _read_dtype(src.dtype["p"])


def stream_merge(sources, chunk: int):
    """Merged chunks ``(scores, ab)`` of sorted runs (in-memory runs, :class:`DiskRun` or their opened records), at
    most ``chunk`` entries of each per step; a score's masses are added in the order of ``sources`` (the bits of
    an in-memory merge) and a chunk never splits a score.
    """
    chunk = max(int(chunk), 1)
    src = _Sources(sources)
    sizes = src.sizes
    pos = [0] * len(sizes)
    while True:
        live = [i for i in range(len(sizes)) if pos[i] < sizes[i]]
        if not live:
            return
        # entries up to the smallest last score of an unfinished source's window precede everything unread
        lasts = [src.score(i, pos[i] + chunk - 1) for i in live if pos[i] + chunk < sizes[i]]
        bound = min(lasts, default=None)
        parts = []
        for i in live:
            b = min(pos[i] + chunk, sizes[i])
            cut = b if bound is None else src.cut(i, pos[i], b, bound)
            if cut > pos[i]:
                parts.append((i, pos[i], cut))
                pos[i] = cut
        yield src.merge(parts)
