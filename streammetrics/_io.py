"""Batch-by-batch readers of prediction files for the ``streammetrics`` command.

Every reader yields numpy arrays of a bounded number of rows, so a file of any
size is evaluated in bounded memory:

* Parquet (``.parquet``, ``.pq``, ``.parq``): ``pyarrow.dataset``, batch by
  batch; the row count comes from the file's metadata.
* CSV (``.csv``, ``.tsv``, optionally ``.gz``): ``pyarrow.csv.open_csv``,
  streaming; progress is measured in bytes.
* ``.npy``: a structured array (columns are field names) or a 2-D array
  (columns are column indexes), read in chunks at their file offsets.
* ``.npz``: columns are array names; each array is read in chunks (from its
  offset when stored, as a stream when compressed).

Problems are raised as :class:`InputError` with a message written for people:
the file, and where it applies the column and the row (0-based row index within
that file).
"""

from __future__ import annotations

import glob
import os
import re
import zipfile
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

__all__ = [
    "InputError",
    "ColumnSpec",
    "Batch",
    "Source",
    "open_source",
    "expand_paths",
    "have_pyarrow",
    "FORMATS",
]

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
FORMATS = {"parquet": PARQUET_SUFFIXES, "csv": CSV_SUFFIXES, "npy": (".npy",), "npz": (".npz",)}


class InputError(Exception):
    """A problem with an input file or column, phrased for the person running it."""


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _need_pyarrow(path: str, what: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InputError(
            f"{path}: reading {what} files needs pyarrow: pip install 'streammetrics[io]'"
        ) from None


@dataclass(frozen=True)
class ColumnSpec:
    """Which columns hold the truth ``y``, the predictions ``p`` and the weights.

    ``p`` may name several columns (one per class): they are read as the
    columns of an n x K matrix.
    """

    y: str
    p: tuple[str, ...]
    weight: str | None = None

    def roles(self) -> list[tuple[str, str]]:
        out = [("y", self.y)] + [("p", c) for c in self.p]
        if self.weight is not None:
            out.append(("w", self.weight))
        return out

    def names(self) -> list[str]:
        seen: list[str] = []
        for _, c in self.roles():
            if c not in seen:
                seen.append(c)
        return seen

    def column_of(self, role: str, index: int | None = None) -> str:
        """The column behind ``role`` ("y", "p", "w"); ``index`` picks a p column."""
        if role == "y":
            return self.y
        if role == "w":
            return self.weight or "?"
        if len(self.p) == 1 or index is None:
            return self.p[0] if len(self.p) == 1 else ", ".join(self.p)
        return self.p[index]


@dataclass
class Batch:
    """One batch: ``y``, ``p`` (1-D, or n x K) and ``w`` (or None).

    ``start`` is the index in its file of the batch's first row; ``done`` is
    the progress made so far in the source's unit (rows or bytes).
    """

    start: int
    y: np.ndarray
    p: np.ndarray
    w: np.ndarray | None
    done: int


@dataclass
class Source:
    """An opened input file; ``batches(rows)`` iterates it once."""

    path: str
    format: str
    columns: ColumnSpec
    total_rows: int | None = None
    total_bytes: int | None = None
    _iter: object = field(default=None, repr=False)

    @property
    def unit(self) -> str:
        """``"rows"`` when the row count is known up front, else ``"bytes"``."""
        return "rows" if self.total_rows is not None else "bytes"

    @property
    def total(self) -> int | None:
        return self.total_rows if self.total_rows is not None else self.total_bytes

    def batches(self, batch_rows: int) -> Iterator[Batch]:
        return self._iter(batch_rows)


# --------------------------------------------------------------------- helpers
def expand_paths(patterns: list[str]) -> list[str]:
    """Files named by ``patterns``: paths, glob patterns or directories.

    A directory stands for the supported files directly inside it. A path that
    does not exist or a pattern that matches nothing is an :class:`InputError`.
    """
    out: list[str] = []
    for pat in patterns:
        if os.path.isdir(pat):
            found = sorted(
                os.path.join(pat, f)
                for f in os.listdir(pat)
                if _format_of(f) is not None and os.path.isfile(os.path.join(pat, f))
            )
            if not found:
                raise InputError(
                    f"{pat}: directory holds no .parquet, .csv, .npy or .npz file"
                )
            out.extend(found)
        elif os.path.exists(pat):
            out.append(pat)
        elif glob.has_magic(pat):
            found = sorted(f for f in glob.glob(pat) if os.path.isfile(f))
            if not found:
                raise InputError(f"{pat}: no file matches this pattern")
            out.extend(found)
        else:
            raise InputError(f"{pat}: no such file")
    seen = set()
    unique = []
    for f in out:
        key = os.path.abspath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _format_of(path: str) -> str | None:
    low = path.lower()
    for fmt, suffixes in FORMATS.items():
        if low.endswith(suffixes):
            return fmt
    return None


def _sniff_format(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    return None


def _list_columns(names) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:40])
    return shown + (f", ... ({len(names)} in all)" if len(names) > 40 else "")


def _missing_column(path: str, col: str, names) -> InputError:
    names = list(names)
    hint = f"the columns are: {_list_columns(names)}" if names else "it has no columns"
    return InputError(f"{path}: no column {col!r}; {hint}")


def _bad_row(path: str, row: int, col: str, what: str) -> InputError:
    return InputError(f"{path}: row {row}, column {col!r}: {what}")


def open_source(path: str, columns: ColumnSpec) -> Source:
    """Open ``path`` for reading ``columns``; checks that they exist and hold numbers."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    fmt = _format_of(path) or _sniff_format(path)
    if fmt is None:
        raise InputError(
            f"{path}: unknown file type (expected .parquet, .csv, .tsv, .npy or .npz)"
        )
    opener = {"parquet": _open_parquet, "csv": _open_csv, "npy": _open_npy, "npz": _open_npz}[fmt]
    return opener(path, columns)


def _stack_p(ps: list[np.ndarray]) -> np.ndarray:
    if len(ps) == 1:
        return ps[0]
    return np.column_stack([np.asarray(p, dtype=np.float64) for p in ps])


# --------------------------------------------------------------------- parquet
def _arrow_type_ok(t, allow_list: bool) -> bool:
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return True
    if allow_list and (pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)):
        return _arrow_type_ok(t.value_type, False)
    return False


def _check_arrow_types(path, schema, columns: ColumnSpec):
    for role, col in columns.roles():
        t = schema.field(col).type
        allow_list = role == "p" and len(columns.p) == 1
        if not _arrow_type_ok(t, allow_list):
            hint = "numbers (bool, integer or float)"
            if allow_list:
                hint += ", or a list of numbers per row"
            raise InputError(f"{path}: column {col!r} has type {t}; expected {hint}")


def _arrow_to_numpy(arr, path: str, col: str, start: int) -> np.ndarray:
    """A pyarrow array as numpy; nulls are an error naming their row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if arr.null_count:
        i = int(np.flatnonzero(pc.is_null(arr).to_numpy(zero_copy_only=False))[0])
        raise _bad_row(path, start + i, col, "missing value (null)")
    t = arr.type
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        if pa.types.is_fixed_size_list(t):
            k = t.list_size
        else:
            lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
            k = int(lengths[0]) if len(lengths) else 0
            off = np.flatnonzero(lengths != k)
            if off.size:
                i = int(off[0])
                raise _bad_row(
                    path, start + i, col,
                    f"holds {int(lengths[i])} values where the rows before hold {k}",
                )
        flat = arr.flatten()
        if flat.null_count:
            i = int(np.flatnonzero(pc.is_null(flat).to_numpy(zero_copy_only=False))[0])
            raise _bad_row(path, start + i // max(k, 1), col, "missing value (null) in the list")
        return flat.to_numpy(zero_copy_only=False).reshape(len(arr), k)
    return arr.to_numpy(zero_copy_only=False)


def _short(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg


def _open_parquet(path: str, columns: ColumnSpec) -> Source:
    _need_pyarrow(path, "Parquet")
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        dset = ds.dataset(path, format="parquet")
        schema = dset.schema
        total = dset.count_rows()
    except (pa.ArrowException, OSError) as exc:
        msg = re.sub(r"^.*Could not open Parquet input source '[^']*': ", "", _short(exc))
        raise InputError(f"{path}: cannot read as Parquet ({msg})") from None
    for col in columns.names():
        if col not in schema.names:
            raise _missing_column(path, col, schema.names)
    _check_arrow_types(path, schema, columns)

    def pieces():
        # one row group at a time, without pre-buffering: the scanner of a whole
        # file reads row groups ahead of a slow consumer (hundreds of MB)
        opts = ds.ParquetFragmentScanOptions(pre_buffer=False)
        for fragment in dset.get_fragments():
            for piece in fragment.split_by_row_group():
                yield piece, opts

    def batches(batch_rows: int) -> Iterator[Batch]:
        start = 0
        try:
            for piece, opts in pieces():
                it = piece.to_batches(
                    columns=columns.names(), batch_size=batch_rows, batch_readahead=1,
                    fragment_readahead=1, fragment_scan_options=opts,
                )
                for rb in it:
                    if rb.num_rows == 0:
                        continue
                    yield _arrow_batch(path, columns, rb, start, lambda n: n)
                    start += rb.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise InputError(
                f"{path}: cannot read the rows after row {start} ({_short(exc)})"
            ) from None

    return Source(path, "parquet", columns, total_rows=total, _iter=batches)


def _arrow_batch(path, columns: ColumnSpec, rb, start: int, done) -> Batch:
    y = _arrow_to_numpy(rb.column(columns.y), path, columns.y, start)
    ps = [_arrow_to_numpy(rb.column(c), path, c, start) for c in columns.p]
    w = None
    if columns.weight is not None:
        w = _arrow_to_numpy(rb.column(columns.weight), path, columns.weight, start)
    return Batch(start, y, _stack_p(ps), w, done(start + rb.num_rows))


# ------------------------------------------------------------------------- csv
def _csv_options(path: str, block_size: int | None = None):
    import pyarrow.csv as pacsv

    delimiter = "\t" if path.lower().endswith((".tsv", ".tsv.gz")) else ","
    read = pacsv.ReadOptions(block_size=block_size) if block_size else pacsv.ReadOptions()
    parse = pacsv.ParseOptions(delimiter=delimiter)
    return read, parse


def _csv_stream(path: str):
    import pyarrow as pa

    if path.lower().endswith(".gz"):
        return pa.input_stream(path, compression="gzip"), False
    return pa.OSFile(path, "rb"), True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _locate_bad_csv_value(path: str, col: str, start_row: int = 0):
    """Slow path: the first row at or after ``start_row`` whose ``col`` is not a number."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read, parse = _csv_options(path)
    conv = pacsv.ConvertOptions(include_columns=[col], column_types={col: pa.string()})
    stream, _ = _csv_stream(path)
    row = 0
    with stream:
        reader = pacsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=conv)
        for rb in reader:
            values = rb.column(0).to_pylist()
            if row + len(values) > start_row:
                for i, v in enumerate(values):
                    if row + i >= start_row and v is not None and v.strip() and not _is_number(v):
                        return row + i, v
            row += len(values)
    return None


def _open_csv(path: str, columns: ColumnSpec) -> Source:
    _need_pyarrow(path, "CSV")
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read, parse = _csv_options(path)
    try:
        stream, _ = _csv_stream(path)
        with stream:
            probe = pacsv.open_csv(stream, read_options=read, parse_options=parse)
            schema = probe.schema
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read as CSV ({_short(exc)})") from None
    for col in columns.names():
        if col not in schema.names:
            raise _missing_column(path, col, schema.names)
    types = {}
    for col in columns.names():
        t = schema.field(col).type
        if pa.types.is_boolean(t):
            types[col] = pa.bool_()
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t):
            types[col] = pa.float64()
        else:
            bad = _locate_bad_csv_value(path, col)
            if bad is not None:
                row, value = bad
                raise _bad_row(path, row, col, f"{value!r} is not a number")
            raise InputError(f"{path}: column {col!r} has type {t}; expected numbers")
    size = os.path.getsize(path)
    compressed = path.lower().endswith(".gz")

    def batches(batch_rows: int) -> Iterator[Batch]:
        # aim the block size at batch_rows rows, from the header's line length
        with open(path, "rb") if not compressed else _gz(path) as fh:
            sample = fh.read(1 << 16)
        lines = max(sample.count(b"\n") - 1, 1)
        per_row = max(len(sample) // (lines + 1), 4)
        block = int(min(max(per_row * batch_rows, 1 << 16), 1 << 30))
        read_b, parse_b = _csv_options(path, block)
        conv = pacsv.ConvertOptions(include_columns=columns.names(), column_types=types)
        stream, tellable = _csv_stream(path)
        start = 0
        with stream:
            try:
                reader = pacsv.open_csv(
                    stream, read_options=read_b, parse_options=parse_b, convert_options=conv
                )
            except (pa.ArrowException, OSError) as exc:
                raise InputError(f"{path}: cannot read as CSV ({_short(exc)})") from None
            while True:
                try:
                    rb = reader.read_next_batch()
                except StopIteration:
                    return
                except (pa.ArrowException, OSError, EOFError) as exc:
                    _raise_csv_error(path, columns, exc, start)
                if rb.num_rows == 0:
                    continue
                done_bytes = stream.tell() if tellable else 0
                yield _arrow_batch(path, columns, rb, start, lambda _n, d=done_bytes: min(d, size))
                start += rb.num_rows

    return Source(
        path, "csv", columns, total_bytes=None if compressed else size, _iter=batches
    )


def _gz(path):
    import gzip

    return gzip.open(path, "rb")


def _raise_csv_error(path, columns: ColumnSpec, exc, start: int):
    msg = _short(exc)
    if "conversion error" in msg:
        for col in columns.names():
            bad = _locate_bad_csv_value(path, col, start)
            if bad is not None:
                row, value = bad
                raise _bad_row(path, row, col, f"{value!r} is not a number") from None
    raise InputError(f"{path}: cannot read the rows after row {start} ({msg})") from None


# ------------------------------------------------------------------------- npy
def _read_npy_header(fh, where: str):
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        elif version == (3, 0):
            impl = getattr(np.lib, "_format_impl", fmt)
            shape, fortran, dtype = impl._read_array_header(fh, version)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise InputError(f"{where}: not a valid .npy array ({_short(exc)})") from None
    if dtype.hasobject:
        raise InputError(f"{where}: holds Python objects, which are never loaded (pickle)")
    return shape, fortran, dtype


class _ChunkReader:
    """Sequential reads of whole rows from an array stored at ``offset``."""

    def __init__(self, fh, offset: int, dtype: np.dtype, row_items: int, where: str, seekable=True):
        self.fh, self.offset, self.dtype = fh, offset, dtype
        self.row_items, self.where, self.seekable = row_items, where, seekable
        self.pos = 0  # rows read

    def read(self, rows: int) -> np.ndarray:
        nbytes = rows * self.row_items * self.dtype.itemsize
        if self.seekable:
            self.fh.seek(self.offset + self.pos * self.row_items * self.dtype.itemsize)
        buf = self.fh.read(nbytes)
        if len(buf) != nbytes:
            raise InputError(
                f"{self.where}: truncated (the data ends before row {self.pos + len(buf) // max(self.row_items * self.dtype.itemsize, 1)})"
            )
        self.pos += rows
        arr = np.frombuffer(buf, dtype=self.dtype)
        return arr.reshape(rows, self.row_items) if self.row_items != 1 else arr


def _check_numeric(path, col, dtype, allow_matrix=False):
    if dtype.kind not in "biuf":
        raise InputError(
            f"{path}: column {col!r} has dtype {dtype}; expected numbers (bool, integer or float)"
        )


def _open_npy(path: str, columns: ColumnSpec) -> Source:
    with open(path, "rb") as fh:
        shape, fortran, dtype = _read_npy_header(fh, path)
        offset = fh.tell()
    n_rows = shape[0] if shape else 0
    if dtype.names:
        if len(shape) != 1:
            raise InputError(f"{path}: a structured array must be 1-D, got shape {shape}")
        for col in columns.names():
            if col not in dtype.names:
                raise _missing_column(path, col, dtype.names)
        for _, col in columns.roles():
            fdt = dtype.fields[col][0]
            if fdt.shape:
                if not (col in columns.p and len(columns.p) == 1 and len(fdt.shape) == 1):
                    raise InputError(f"{path}: column {col!r} has shape {fdt.shape} per row")
                _check_numeric(path, col, fdt.base)
            else:
                _check_numeric(path, col, fdt)
        _check_size(path, offset, n_rows * dtype.itemsize)

        def take(rows: np.ndarray, col: str) -> np.ndarray:
            return np.ascontiguousarray(rows[col])

        return _npy_rows_source(path, columns, offset, dtype, 1, n_rows, take)
    if len(shape) != 2:
        raise InputError(
            f"{path}: holds an array of shape {shape}; expected a structured array "
            "(columns by field name) or a 2-D array (columns by index)"
        )
    _check_numeric(path, "array", dtype)
    n_cols = shape[1]
    index = {}
    for col in columns.names():
        try:
            j = int(col)
        except ValueError:
            raise InputError(
                f"{path}: a 2-D array's columns are numbered 0..{n_cols - 1}; got {col!r}"
            ) from None
        if not -n_cols <= j < n_cols:
            raise InputError(f"{path}: no column {j}: the array has {n_cols} columns (0..{n_cols - 1})")
        index[col] = j % n_cols
    _check_size(path, offset, n_rows * n_cols * dtype.itemsize)
    if fortran:
        return _npy_fortran_source(path, columns, offset, dtype, shape, index)

    def take(rows: np.ndarray, col: str) -> np.ndarray:
        return np.ascontiguousarray(rows[:, index[col]])

    return _npy_rows_source(path, columns, offset, dtype, n_cols, n_rows, take)


def _check_size(path, offset, nbytes):
    have = os.path.getsize(path) - offset
    if have < nbytes:
        raise InputError(f"{path}: truncated ({have} bytes of data where the header promises {nbytes})")


def _npy_rows_source(path, columns, offset, dtype, row_items, n_rows, take) -> Source:
    def batches(batch_rows: int) -> Iterator[Batch]:
        with open(path, "rb") as fh:
            reader = _ChunkReader(fh, offset, dtype, row_items, path)
            start = 0
            while start < n_rows:
                rows = min(batch_rows, n_rows - start)
                chunk = reader.read(rows)
                yield Batch(
                    start,
                    take(chunk, columns.y),
                    _stack_p([take(chunk, c) for c in columns.p]),
                    take(chunk, columns.weight) if columns.weight is not None else None,
                    start + rows,
                )
                start += rows

    return Source(path, "npy", columns, total_rows=n_rows, _iter=batches)


def _column_batches(readers, columns, n_rows: int, batch_rows: int) -> Iterator[Batch]:
    """Batches of ``batch_rows`` rows read from one chunk reader per column."""
    start = 0
    while start < n_rows:
        rows = min(batch_rows, n_rows - start)
        got = {col: r.read(rows) for col, r in readers.items()}
        yield Batch(
            start,
            got[columns.y],
            _stack_p([got[c] for c in columns.p]),
            got[columns.weight] if columns.weight is not None else None,
            start + rows,
        )
        start += rows


def _npy_fortran_source(path, columns, offset, dtype, shape, index) -> Source:
    n_rows = shape[0]

    def batches(batch_rows: int) -> Iterator[Batch]:
        with open(path, "rb") as fh:
            readers = {
                col: _ChunkReader(fh, offset + j * n_rows * dtype.itemsize, dtype, 1, path)
                for col, j in index.items()
            }
            yield from _column_batches(readers, columns, n_rows, batch_rows)

    return Source(path, "npy", columns, total_rows=n_rows, _iter=batches)


# ------------------------------------------------------------------------- npz
def _open_npz(path: str, columns: ColumnSpec) -> Source:
    try:
        zf = zipfile.ZipFile(path)
        names = zf.namelist()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read as .npz ({_short(exc)})") from None
    with zf:
        keys = [n[:-4] for n in names if n.endswith(".npy")]
        info = {}
        for col in columns.names():
            if col not in keys:
                raise _missing_column(path, col, keys)
            zi = zf.getinfo(col + ".npy")
            where = f"{path}[{col}]"
            with zf.open(zi) as member:
                shape, fortran, dtype = _read_npy_header(member, where)
                header_len = member.tell() if zi.compress_type == zipfile.ZIP_STORED else None
            if dtype.names:
                raise InputError(f"{path}: array {col!r} is a structured array; expected numbers")
            _check_numeric(path, col, dtype)
            allow_matrix = col in columns.p and len(columns.p) == 1
            if len(shape) != 1 and not (allow_matrix and len(shape) == 2):
                raise InputError(
                    f"{path}: array {col!r} has shape {shape}; expected one value per row"
                    + (" (or one row of class probabilities per row)" if allow_matrix else "")
                )
            data_offset = None
            if header_len is not None:
                with open(path, "rb") as fh:
                    fh.seek(zi.header_offset)
                    local = fh.read(30)
                    if len(local) < 30 or local[:4] != b"PK\x03\x04":
                        raise InputError(f"{path}: corrupt zip member {col!r}")
                    name_len = int.from_bytes(local[26:28], "little")
                    extra_len = int.from_bytes(local[28:30], "little")
                data_offset = zi.header_offset + 30 + name_len + extra_len + header_len
            info[col] = (shape, fortran, dtype, data_offset, zi)
    lengths = {col: v[0][0] for col, v in info.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{c!r}: {n}" for c, n in lengths.items())
        raise InputError(f"{path}: the arrays have different lengths ({desc})")
    n_rows = next(iter(lengths.values()))

    def batches(batch_rows: int) -> Iterator[Batch]:
        zf2 = zipfile.ZipFile(path)
        files = []
        readers = {}
        try:
            for col, (shape, fortran, dtype, data_offset, zi) in info.items():
                row_items = shape[1] if len(shape) == 2 else 1
                where = f"{path}[{col}]"
                if fortran and len(shape) == 2 and shape[1] > 1:
                    # column-major matrix: no row-wise stream; it is small (K columns)
                    with zf2.open(zi) as m:
                        full = np.load(m, allow_pickle=False)
                    readers[col] = _ArrayReader(np.ascontiguousarray(full))
                elif data_offset is not None:
                    fh = open(path, "rb")
                    files.append(fh)
                    readers[col] = _ChunkReader(fh, data_offset, dtype, row_items, where)
                else:
                    m = zf2.open(zi)
                    files.append(m)
                    _read_npy_header(m, where)
                    readers[col] = _ChunkReader(m, 0, dtype, row_items, where, seekable=False)
            yield from _column_batches(readers, columns, n_rows, batch_rows)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise InputError(f"{path}: cannot read ({_short(exc)})") from None
        finally:
            for f in files:
                f.close()
            zf2.close()

    return Source(path, "npz", columns, total_rows=n_rows, _iter=batches)


class _ArrayReader:
    def __init__(self, arr):
        self.arr, self.pos = arr, 0

    def read(self, rows):
        out = self.arr[self.pos:self.pos + rows]
        self.pos += rows
        return out
