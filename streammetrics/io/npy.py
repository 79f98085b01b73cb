"""numpy files, read in chunks of whole rows named by their 0-based index: a ``.npy``
structured array (columns by field name) or 2-D array (by index), or the arrays of an
``.npz`` (by name), each streamed from its member. Nothing is ever unpickled.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from functools import partial

import numpy as np

from .._protocol.statefile import npy_header
from .base import Chunk, InputError, Source, register, short

__all__ = ["NpySource", "NpzSource"]


def _member_header(fh, where: str):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``fh`` (an ``.npz`` member), left at its data."""
    try:
        shape, fortran, dtype = npy_header(fh, 10000)  # (numpy's own limit)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not a valid .npy array ({short(exc)})") from None
    if dtype.hasobject:
        raise InputError(f"{where}: holds Python objects, which are never loaded (pickle)")
    return shape, fortran, dtype


class _Rows:
    """Sequential reads of whole rows of an array from the stream ``fh``, at its data."""

    def __init__(self, fh, dtype: np.dtype, row_items: int, source: Source):
        self.fh, self.dtype, self.row_items, self.source = fh, dtype, row_items, source
        self.row_bytes = row_items * dtype.itemsize
        self.pos = 0

    def read(self, rows: int) -> np.ndarray:
        buf = self.fh.read(rows * self.row_bytes)
        if len(buf) != rows * self.row_bytes:
            end = self.pos + len(buf) // max(self.row_bytes, 1)
            raise self.source.fail(f"truncated (the data ends before {self.source.where(end)})")
        self.pos += rows
        arr = np.frombuffer(buf, dtype=self.dtype)
        return arr.reshape(rows, self.row_items) if self.row_items != 1 else arr


class _Held:
    """Reads of whole rows of an array in memory."""

    def __init__(self, arr: np.ndarray):
        self.arr, self.pos = arr, 0

    def read(self, rows: int) -> np.ndarray:
        self.pos += rows
        return self.arr[self.pos - rows : self.pos]


class _NumpySource(Source):
    """What the ``.npy`` and ``.npz`` readers share."""

    def _check_numeric(self, col: str, dtype: np.dtype, role: str | None = None) -> None:
        if col in self.columns.by and all(c != col for r, c in self.columns.roles() if r != "by"):
            if dtype.kind not in "biufUS":  # only slice keys, which may be strings
                raise self.fail(f"column {col!r} has dtype {dtype}; expected keys (numbers, booleans or strings)")
            return
        if dtype.kind in "US" and role is not None and self.columns.takes_text(role):
            return
        if dtype.kind not in "biuf":
            raise self.fail(f"column {col!r} has dtype {dtype}; expected numbers (bool, integer or float)")

    def _single_p(self, col: str) -> bool:
        """Whether ``col`` is the one p (or multilabel y) column, which may hold a row of values per row."""
        return any(c == col and self.columns.may_be_list(r) for r, c in self.columns.roles())

    def _reader(self, stack: ExitStack):
        """``read(k)``: reads the next ``k`` rows and gives the function taking each column of them;
        the files it reads are entered on ``stack``."""
        raise NotImplementedError

    def chunks(self, rows: int) -> Iterator[Chunk]:
        with ExitStack() as stack:
            try:
                read = self._reader(stack)
                for start in range(0, self.total_rows, rows):
                    k = min(rows, self.total_rows - start)
                    yield Chunk.of(self.columns, start, read(k), start + k)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise self.fail(f"cannot read ({short(exc)})") from None


def _by_column(readers: dict):
    """``read(k)`` of one reader per column."""
    return lambda k: {col: r.read(k) for col, r in readers.items()}.__getitem__


@register((".npy",), magic=b"\x93NUMPY")
class NpySource(_NumpySource):
    """A ``.npy`` file: a 1-D structured array, or a 2-D array with numbered columns."""

    def _open(self) -> None:
        # numpy checks the header (any version), the dtype and the file's size
        try:
            arr = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            msg = short(exc)
            if "Python objects" in msg:
                raise self.fail("holds Python objects, which are never loaded (pickle)") from None
            if "greater than file size" in msg:
                raise self.fail("truncated (less data than the header promises)") from None
            raise self.fail(f"not a valid .npy array ({msg})") from None
        shape, dtype, self._offset = arr.shape, arr.dtype, arr.offset
        self._fortran = arr.ndim == 2 and arr.flags.f_contiguous and not arr.flags.c_contiguous
        del arr
        self._dtype, self.total_rows = dtype, shape[0] if shape else 0
        if dtype.names:
            if len(shape) != 1:
                raise self.fail(f"a structured array must be 1-D, got shape {shape}")
            self.check_columns(dtype.names)
            for role, col in self.columns.roles():
                fdt = dtype.fields[col][0]
                if fdt.shape and not (self._single_p(col) and len(fdt.shape) == 1):
                    raise self.fail(f"column {col!r} has shape {fdt.shape} per row")
                self._check_numeric(col, fdt.base, role)
            self._row_items = 1
            self._take = lambda block, col: np.ascontiguousarray(block[col])
            return
        if len(shape) != 2:
            raise self.fail(
                f"holds an array of shape {shape}; expected a structured array "
                "(columns by field name) or a 2-D array (columns by index)"
            )
        self._check_numeric("array", dtype)
        n_cols = shape[1]
        self._index = {}
        for col in self.columns.names():
            try:
                j = int(col)
            except ValueError:
                raise self.fail(f"a 2-D array's columns are numbered 0..{n_cols - 1}; got {col!r}") from None
            if not -n_cols <= j < n_cols:
                raise self.fail(f"no column {j}: the array has {n_cols} columns (0..{n_cols - 1})")
            self._index[col] = j % n_cols
        self._row_items = n_cols
        self._take = lambda block, col: np.ascontiguousarray(block[:, self._index[col]])

    def _reader(self, stack: ExitStack):
        def stream(skip: int = 0):
            fh = stack.enter_context(open(self.path, "rb"))
            fh.seek(self._offset + skip)
            return fh

        if self._fortran:  # column-major: each column is a run of its own
            size = self.total_rows * self._dtype.itemsize
            return _by_column({col: _Rows(stream(j * size), self._dtype, 1, self) for col, j in self._index.items()})
        rows = _Rows(stream(), self._dtype, self._row_items, self)
        return lambda k: partial(self._take, rows.read(k))


@register((".npz",), magic=b"PK\x03\x04")
class NpzSource(_NumpySource):
    """A ``.npz`` archive (stored or compressed): one array per column."""

    def _open(self) -> None:
        try:
            zf = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise self.fail(f"cannot read as .npz ({short(exc)})") from None
        with zf:
            self.check_columns([n[:-4] for n in zf.namelist() if n.endswith(".npy")])
            self._info = {col: self._member(zf, col) for col in self.columns.names()}
        lengths = {col: shape[0] for col, (shape, _, _) in self._info.items()}
        if len(set(lengths.values())) > 1:
            desc = ", ".join(f"{c!r}: {n}" for c, n in lengths.items())
            raise self.fail(f"the arrays have different lengths ({desc})")
        self.total_rows = next(iter(lengths.values()))

    def _member(self, zf: zipfile.ZipFile, col: str):
        """``(shape, fortran, dtype)`` of the array ``col``, checked."""
        with zf.open(col + ".npy") as member:
            shape, fortran, dtype = _member_header(member, f"{self.path}[{col}]")
        if dtype.names:
            raise self.fail(f"array {col!r} is a structured array; expected numbers")
        cols = self.columns
        self._check_numeric(col, dtype, "y" if col == cols.y else "p" if col in cols.p else "w")
        allow_matrix = self._single_p(col)
        if len(shape) != 1 and not (allow_matrix and len(shape) == 2):
            raise self.fail(
                f"array {col!r} has shape {shape}; expected one value per row"
                + (" (or one row of class probabilities per row)" if allow_matrix else "")
            )
        return shape, fortran, dtype

    def _reader(self, stack: ExitStack):
        zf = stack.enter_context(zipfile.ZipFile(self.path))
        readers = {}
        for col, (shape, fortran, dtype) in self._info.items():
            member = stack.enter_context(zf.open(col + ".npy"))
            if fortran and len(shape) == 2 and shape[1] > 1:
                # column-major matrix: no row-wise stream; it is small (K columns)
                readers[col] = _Held(np.ascontiguousarray(np.load(member, allow_pickle=False)))
            else:
                _member_header(member, f"{self.path}[{col}]")
                readers[col] = _Rows(member, dtype, shape[1] if len(shape) == 2 else 1, self)
        return _by_column(readers)
