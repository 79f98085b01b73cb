"""Parquet (``.parquet``, ``.pq``, ``.parq``), read with ``pyarrow.dataset`` one row group
at a time; rows are named by their 0-based index in the file."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .arrow import ArrowSource, is_key_type, is_list_type
from .base import Chunk, register, short

__all__ = ["ParquetSource"]


def _type_ok(t, allow_list: bool, allow_text: bool = False) -> bool:
    import pyarrow as pa

    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return True
    if allow_text and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return True
    if allow_text and pa.types.is_dictionary(t):
        return _type_ok(t.value_type, False, True)
    return allow_list and is_list_type(t) and _type_ok(t.value_type, False)


@register((".parquet", ".pq", ".parq"), shown=(".parquet",), magic=b"PAR1")
class ParquetSource(ArrowSource):
    """A Parquet file (or anything ``pyarrow.dataset`` reads as one)."""

    kind = "Parquet"

    def _open(self) -> None:
        self._need_pyarrow()
        import pyarrow as pa
        import pyarrow.dataset as ds

        try:
            self._dataset = ds.dataset(self.path, format="parquet")
            schema = self._dataset.schema
            self.total_rows = self._dataset.count_rows()
        except (pa.ArrowException, OSError) as exc:
            msg = re.sub(r"^.*Could not open Parquet input source '[^']*': ", "", short(exc))
            raise self.fail(f"cannot read as Parquet ({msg})") from None
        self.check_columns(schema.names)
        for role, col in self.columns.roles():
            t = schema.field(col).type
            if role == "by":
                if not is_key_type(t):
                    raise self.fail(f"column {col!r} has type {t}; expected keys (numbers, booleans or strings)")
                continue
            allow_list = self.columns.may_be_list(role)
            allow_text = self.columns.takes_text(role)
            if not _type_ok(t, allow_list, allow_text):
                hint = "numbers (bool, integer or float)"
                if allow_list:
                    hint += ", or a list of numbers per row"
                if allow_text:
                    hint += ", or text labels"
                raise self.fail(f"column {col!r} has type {t}; expected {hint}")

    def chunks(self, rows: int) -> Iterator[Chunk]:
        import pyarrow as pa
        import pyarrow.dataset as ds

        start = 0
        try:
            # one row group at a time, without pre-buffering: the scanner of a whole
            # file reads row groups ahead of a slow consumer (hundreds of MB)
            opts = ds.ParquetFragmentScanOptions(pre_buffer=False)
            kw = dict(batch_size=rows, batch_readahead=1, fragment_readahead=1, fragment_scan_options=opts)
            pieces = (piece for fragment in self._dataset.get_fragments() for piece in fragment.split_by_row_group())
            for piece in pieces:
                for rb in piece.to_batches(columns=self.columns.names(), **kw):
                    if rb.num_rows:
                        yield self._chunk(rb, start, start + rb.num_rows)
                        start += rb.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise self.fail(f"cannot read the rows from {self.where(start)} on ({short(exc)})") from None
