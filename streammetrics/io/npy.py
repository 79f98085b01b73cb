"""numpy files, read in chunks at their file offsets; rows are named by their
0-based index.

* ``.npy``: a structured array (columns are field names) or a 2-D array
  (columns are column indexes).
* ``.npz``: columns are array names; each array is read in chunks (from its
  offset when stored, as a stream when compressed).

Arrays of Python objects are refused: nothing is ever unpickled.
"""

from __future__ import annotations

import ast
import os
import struct
import zipfile
from typing import Callable, Iterator

import numpy as np

from .base import Chunk, ColumnSpec, InputError, Source, register, short

__all__ = ["NpySource", "NpzSource"]


#: the longest ``.npy`` header read (numpy's own limit: a longer one may be hostile)
_MAX_HEADER = 10_000


def _read_header_3_0(fh):
    """``(shape, fortran_order, dtype)`` of a version 3.0 header (2.0's layout, in
    UTF-8, for field names outside Latin-1), which numpy reads only privately."""
    (size,) = struct.unpack("<I", fh.read(4))
    if size > _MAX_HEADER:
        raise ValueError(f"a header of {size} bytes")
    header = ast.literal_eval(fh.read(size).decode("utf-8"))
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise ValueError("a header that is no array header")
    shape, fortran = header["shape"], header["fortran_order"]
    if not (isinstance(shape, tuple) and all(isinstance(v, int) for v in shape) and isinstance(fortran, bool)):
        raise ValueError("a header that is no array header")
    return shape, fortran, np.lib.format.descr_to_dtype(header["descr"])


def _read_header(fh, where: str):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``fh``, left at its data."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        elif version == (3, 0):
            shape, fortran, dtype = _read_header_3_0(fh)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not a valid .npy array ({short(exc)})", path=where) from None
    if dtype.hasobject:
        raise InputError(f"{where}: holds Python objects, which are never loaded (pickle)",
                         path=where)
    return shape, fortran, dtype


class _ChunkReader:
    """Sequential reads of whole rows of an array stored at ``offset`` of ``fh``.

    ``label`` names the array in messages and ``where`` names a row.
    """

    def __init__(self, fh, offset: int, dtype: np.dtype, row_items: int, label: str,
                 where: Callable[[int], str], seekable: bool = True):
        self.fh, self.offset, self.dtype = fh, offset, dtype
        self.row_items, self.label, self.where, self.seekable = row_items, label, where, seekable
        self.row_bytes = row_items * dtype.itemsize
        self.pos = 0  # rows read

    def read(self, rows: int) -> np.ndarray:
        nbytes = rows * self.row_bytes
        if self.seekable:
            self.fh.seek(self.offset + self.pos * self.row_bytes)
        buf = self.fh.read(nbytes)
        if len(buf) != nbytes:
            end = self.pos + len(buf) // max(self.row_bytes, 1)
            raise InputError(f"{self.label}: truncated (the data ends before {self.where(end)})",
                             path=self.label, row=end)
        self.pos += rows
        arr = np.frombuffer(buf, dtype=self.dtype)
        return arr.reshape(rows, self.row_items) if self.row_items != 1 else arr


class _ArrayReader:
    """Reads of whole rows of an array already in memory."""

    def __init__(self, arr: np.ndarray):
        self.arr, self.pos = arr, 0

    def read(self, rows: int) -> np.ndarray:
        out = self.arr[self.pos:self.pos + rows]
        self.pos += rows
        return out


def _chunks(columns: ColumnSpec, n_rows: int, rows: int,
            read: Callable[[int], Callable[[str], np.ndarray]]) -> Iterator[Chunk]:
    """Chunks of ``rows`` rows; ``read(k)`` reads the next ``k`` rows and returns
    the function giving each column of them."""
    start = 0
    while start < n_rows:
        k = min(rows, n_rows - start)
        yield Chunk.of(columns, start, read(k), start + k)
        start += k


def _by_column(readers: dict) -> Callable[[int], Callable[[str], np.ndarray]]:
    """``read`` for :func:`_chunks` from one reader per column."""
    def read(k: int):
        return {col: r.read(k) for col, r in readers.items()}.__getitem__
    return read


class _NumpySource(Source):
    """What the ``.npy`` and ``.npz`` readers share."""

    def _check_numeric(self, col: str, dtype: np.dtype, role: str | None = None) -> None:
        if self._key_only(col):
            if dtype.kind not in "biufUS":
                raise self.fail(f"column {col!r} has dtype {dtype}; expected keys (numbers, booleans "
                                "or strings)", column=col)
            return
        if dtype.kind in "US" and role is not None and self.columns.takes_text(role):
            return
        if dtype.kind not in "biuf":
            raise self.fail(
                f"column {col!r} has dtype {dtype}; expected numbers (bool, integer or float)",
                column=col)

    def _key_only(self, col: str) -> bool:
        """Whether ``col`` is read only as slice keys (which may be strings)."""
        return col in self.columns.by and all(c != col for role, c in self.columns.roles() if role != "by")

    def _single_p(self, col: str) -> bool:
        """Whether ``col`` is the one p (or multilabel y) column, which may hold a row of
        values per row."""
        return any(c == col and self.columns.may_be_list(r) for r, c in self.columns.roles())


@register("npy", (".npy",), magic=b"\x93NUMPY")
class NpySource(_NumpySource):
    """A ``.npy`` file: a 1-D structured array, or a 2-D array with numbered columns."""

    def _open(self) -> None:
        with open(self.path, "rb") as fh:
            shape, fortran, dtype = _read_header(fh, self.path)
            self._offset = fh.tell()
        self._dtype = dtype
        self.total_rows = shape[0] if shape else 0
        self._fortran = False
        if dtype.names:
            self._open_structured(shape)
        else:
            self._open_matrix(shape, fortran)

    def _open_structured(self, shape) -> None:
        dtype = self._dtype
        if len(shape) != 1:
            raise self.fail(f"a structured array must be 1-D, got shape {shape}")
        for col in self.columns.names():
            if col not in dtype.names:
                raise self.missing_column(col, dtype.names)
        for role, col in self.columns.roles():
            fdt = dtype.fields[col][0]
            if fdt.shape and not (self._single_p(col) and len(fdt.shape) == 1):
                raise self.fail(f"column {col!r} has shape {fdt.shape} per row", column=col)
            self._check_numeric(col, fdt.base, role)
        self._check_size(self.total_rows * dtype.itemsize)
        self._row_items = 1
        self._take = lambda rows, col: np.ascontiguousarray(rows[col])

    def _open_matrix(self, shape, fortran: bool) -> None:
        if len(shape) != 2:
            raise self.fail(
                f"holds an array of shape {shape}; expected a structured array "
                "(columns by field name) or a 2-D array (columns by index)"
            )
        self._check_numeric("array", self._dtype)
        n_cols = shape[1]
        index = {}
        for col in self.columns.names():
            try:
                j = int(col)
            except ValueError:
                raise self.fail(
                    f"a 2-D array's columns are numbered 0..{n_cols - 1}; got {col!r}", column=col
                ) from None
            if not -n_cols <= j < n_cols:
                raise self.fail(f"no column {j}: the array has {n_cols} columns (0..{n_cols - 1})",
                                column=col)
            index[col] = j % n_cols
        self._check_size(self.total_rows * n_cols * self._dtype.itemsize)
        self._index = index
        self._fortran = fortran
        self._row_items = n_cols
        self._take = lambda rows, col: np.ascontiguousarray(rows[:, index[col]])

    def _check_size(self, nbytes: int) -> None:
        have = os.path.getsize(self.path) - self._offset
        if have < nbytes:
            raise self.fail(f"truncated ({have} bytes of data where the header promises {nbytes})")

    def chunks(self, rows: int) -> Iterator[Chunk]:
        n_rows, dtype = self.total_rows, self._dtype
        with open(self.path, "rb") as fh:
            if self._fortran:
                # column-major: each column is a contiguous run of its own
                readers = {
                    col: _ChunkReader(fh, self._offset + j * n_rows * dtype.itemsize, dtype, 1,
                                      self.path, self.where)
                    for col, j in self._index.items()
                }
                read = _by_column(readers)
            else:
                reader = _ChunkReader(fh, self._offset, dtype, self._row_items, self.path,
                                      self.where)

                def read(k: int):
                    block = reader.read(k)
                    return lambda col: self._take(block, col)

            yield from _chunks(self.columns, n_rows, rows, read)


@register("npz", (".npz",), magic=b"PK\x03\x04")
class NpzSource(_NumpySource):
    """A ``.npz`` archive (stored or compressed): one array per column."""

    def _open(self) -> None:
        try:
            zf = zipfile.ZipFile(self.path)
            names = zf.namelist()
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise self.fail(f"cannot read as .npz ({short(exc)})") from None
        with zf:
            keys = [n[:-4] for n in names if n.endswith(".npy")]
            self._info = {}
            for col in self.columns.names():
                if col not in keys:
                    raise self.missing_column(col, keys)
                self._info[col] = self._member(zf, col)
        lengths = {col: v[0][0] for col, v in self._info.items()}
        if len(set(lengths.values())) > 1:
            desc = ", ".join(f"{c!r}: {n}" for c, n in lengths.items())
            raise self.fail(f"the arrays have different lengths ({desc})")
        self.total_rows = next(iter(lengths.values()))

    def _member(self, zf: zipfile.ZipFile, col: str):
        """``(shape, fortran, dtype, data_offset, zipinfo)`` of the array ``col``, checked.

        ``data_offset`` is where the array's data starts in the file when the
        member is stored uncompressed, else None.
        """
        zi = zf.getinfo(col + ".npy")
        with zf.open(zi) as member:
            shape, fortran, dtype = _read_header(member, f"{self.path}[{col}]")
            header_len = member.tell() if zi.compress_type == zipfile.ZIP_STORED else None
        if dtype.names:
            raise self.fail(f"array {col!r} is a structured array; expected numbers", column=col)
        cols = self.columns
        self._check_numeric(col, dtype, "y" if col == cols.y else "p" if col in cols.p else "w")
        allow_matrix = self._single_p(col)
        if len(shape) != 1 and not (allow_matrix and len(shape) == 2):
            raise self.fail(
                f"array {col!r} has shape {shape}; expected one value per row"
                + (" (or one row of class probabilities per row)" if allow_matrix else ""),
                column=col,
            )
        data_offset = None
        if header_len is not None:
            with open(self.path, "rb") as fh:
                fh.seek(zi.header_offset)
                local = fh.read(30)
            if len(local) < 30 or local[:4] != b"PK\x03\x04":
                raise self.fail(f"corrupt zip member {col!r}", column=col)
            name_len = int.from_bytes(local[26:28], "little")
            extra_len = int.from_bytes(local[28:30], "little")
            data_offset = zi.header_offset + 30 + name_len + extra_len + header_len
        return shape, fortran, dtype, data_offset, zi

    def chunks(self, rows: int) -> Iterator[Chunk]:
        zf = zipfile.ZipFile(self.path)
        files = []
        readers = {}
        try:
            for col, (shape, fortran, dtype, data_offset, zi) in self._info.items():
                row_items = shape[1] if len(shape) == 2 else 1
                label = f"{self.path}[{col}]"
                if fortran and len(shape) == 2 and shape[1] > 1:
                    # column-major matrix: no row-wise stream; it is small (K columns)
                    with zf.open(zi) as m:
                        full = np.load(m, allow_pickle=False)
                    readers[col] = _ArrayReader(np.ascontiguousarray(full))
                elif data_offset is not None:
                    fh = open(self.path, "rb")
                    files.append(fh)
                    readers[col] = _ChunkReader(fh, data_offset, dtype, row_items, label,
                                                self.where)
                else:
                    m = zf.open(zi)
                    files.append(m)
                    _read_header(m, label)
                    readers[col] = _ChunkReader(m, 0, dtype, row_items, label, self.where,
                                                seekable=False)
            yield from _chunks(self.columns, self.total_rows, rows, _by_column(readers))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise self.fail(f"cannot read ({short(exc)})") from None
        finally:
            for f in files:
                f.close()
            zf.close()
