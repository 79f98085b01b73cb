"""CSV (``.csv``, ``.tsv``, optionally gzip-compressed as ``.gz``), streamed with
``pyarrow.csv.open_csv``; progress counts the bytes of the file as stored. Rows are
named by their line, 1-based with the header counted, as ``sed -n Np`` prints it
(blank lines, which are skipped, and newlines inside quoted fields are not counted).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator

from .arrow import ArrowSource
from .base import Chunk, register, short

__all__ = ["CsvSource"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@register((".csv", ".tsv", ".csv.gz", ".tsv.gz"), shown=(".csv", ".tsv"))
class CsvSource(ArrowSource):
    """A comma-separated (``.csv``) or tab-separated (``.tsv``) file with a header line."""

    kind = "CSV"
    noun = "line"

    def number(self, row: int) -> int:
        """The 1-based line of the file that holds the row of index ``row`` (after the header line)."""
        return row + 2

    @property
    def compressed(self) -> bool:
        return self.path.lower().endswith(".gz")

    def _stream(self):
        """The file's text as an Arrow input stream, and the file as stored, whose
        position tells how far the reading has come (the same unless compressed)."""
        import pyarrow as pa

        raw = pa.OSFile(self.path, "rb")
        return (pa.CompressedInputStream(raw, "gzip") if self.compressed else raw), raw

    def _reader(self, stream, block_size: int | None = None, convert=None):
        import pyarrow.csv as pacsv

        delimiter = "\t" if self.path.lower().endswith((".tsv", ".tsv.gz")) else ","
        read = pacsv.ReadOptions(block_size=block_size) if block_size else pacsv.ReadOptions()
        return pacsv.open_csv(
            stream, read_options=read, parse_options=pacsv.ParseOptions(delimiter=delimiter), convert_options=convert
        )

    def _open(self) -> None:
        self._need_pyarrow()
        import pyarrow as pa

        try:
            stream, _ = self._stream()
            with stream:
                schema = self._reader(stream).schema
        except (pa.ArrowException, OSError, EOFError) as exc:
            self._raise_read_error(exc, 0, "cannot read as CSV")
        self.check_columns(schema.names)
        self._types = {}
        text = {c for role, c in self.columns.roles() if self.columns.takes_text(role)}
        values = {c for role, c in self.columns.roles() if role != "by"}
        for col in self.columns.names():
            t = schema.field(col).type
            if col not in values:  # a key column keeps its kind: whole numbers, numbers, booleans, else text
                kept = pa.types.is_floating(t) or pa.types.is_boolean(t)
                self._types[col] = pa.int64() if pa.types.is_integer(t) else t if kept else pa.string()
                continue
            if col in text and (self.columns.text_labels or pa.types.is_string(t) or pa.types.is_large_string(t)):
                self._types[col] = pa.string()  # class labels, read as they are
            elif pa.types.is_boolean(t):
                self._types[col] = pa.bool_()
            elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t):
                self._types[col] = pa.float64()
            else:
                self._raise_bad_value(col)
                raise self.fail(f"column {col!r} has type {t}; expected numbers")
        self.total_bytes = os.path.getsize(self.path)

    def _raise_bad_value(self, col: str, start_row: int = 0) -> None:
        """Raise the error for the first value of ``col`` from ``start_row`` on that is not a number.

        The slow path, after a failed conversion: the column is read again as text.
        Returns if every value is a number.
        """
        import pyarrow as pa
        import pyarrow.csv as pacsv

        convert = pacsv.ConvertOptions(include_columns=[col], column_types={col: pa.string()})
        stream, _ = self._stream()
        row = 0
        with stream:
            for rb in self._reader(stream, convert=convert):
                values = rb.column(0).to_pylist()
                for i in range(max(start_row - row, 0), len(values)):
                    v = values[i]
                    if v is not None and v.strip() and not _is_number(v):
                        raise self.bad_row(row + i, col, f"{v!r} is not a number") from None
                row += len(values)

    def _block_size(self, rows: int) -> int:
        """A block size aimed at ``rows`` rows, from the length of the first lines."""
        with gzip.open(self.path, "rb") if self.compressed else open(self.path, "rb") as fh:
            sample = fh.read(1 << 16)
        lines = max(sample.count(b"\n") - 1, 1)
        per_row = max(len(sample) // (lines + 1), 4)
        return int(min(max(per_row * rows, 1 << 16), 1 << 30))

    def chunks(self, rows: int) -> Iterator[Chunk]:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        # only key columns are read as text: an empty key is a null key, as an empty number is
        convert = pacsv.ConvertOptions(
            include_columns=self.columns.names(), column_types=self._types, strings_can_be_null=True
        )
        block = self._block_size(rows)
        stream, stored = self._stream()
        size = self.total_bytes or 0
        start = 0
        reader = None
        with stream:
            try:
                # the reader reads the first block already: its values may fail to convert
                reader = self._reader(stream, block, convert)
                for rb in reader:
                    if rb.num_rows:
                        yield self._chunk(rb, start, min(stored.tell(), size))
                        start += rb.num_rows
            except (pa.ArrowException, OSError, EOFError) as exc:
                self._raise_read_error(exc, start, "cannot read as CSV" if reader is None else None)

    def _line_of(self, text: str) -> int | None:
        """The 1-based line of the file that reads ``text`` (pyarrow's parse errors quote the row, not its line)."""
        opener = gzip.open if self.compressed else open
        with opener(self.path, "rt", newline="") as fh:
            for number, line in enumerate(fh, 1):
                if line.rstrip("\r\n") == text:
                    return number
        return None

    def _raise_read_error(self, exc: BaseException, start: int, what: str | None = None) -> None:
        """Raise the error for ``exc``, met reading the rows from ``start`` on.

        A value that is not a number is named with its line and column; any
        other problem is ``what`` (by default, that those rows cannot be read).
        """
        msg = short(exc)
        fields = re.search(r"Expected (\d+) columns, got (\d+): (.*)", msg)
        if fields:
            line = self._line_of(fields[3])
            where = f"line {line:,}" if line else "a line"
            raise self.fail(f"{where} has {fields[2]} fields where the header has {fields[1]}: {fields[3]!r}") from None
        if "conversion error" in msg:
            for role, col in self.columns.roles():
                if role != "by":
                    self._raise_bad_value(col, start)
        raise self.fail(f"{what or f'cannot read the rows from {self.where(start)} on'} ({msg})") from None
