"""What the readers built on pyarrow share: the dependency check and the conversion of
Arrow columns to numpy, with nulls and ragged lists reported at their row."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .base import Chunk, InputError, Source

__all__ = ["ArrowSource", "have_pyarrow", "is_list_type", "is_key_type"]


def have_pyarrow() -> bool:
    """Whether pyarrow (the ``io`` extra) is installed."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def is_list_type(t) -> bool:
    """Whether the Arrow type ``t`` holds a list of values per row."""
    import pyarrow as pa

    return pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)


def first_null(arr) -> int:
    """The row of the first null of the Arrow array ``arr`` (which holds one)."""
    return int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))


def list_values(arr, ragged):
    """``(values, k)``: the flattened values of a list column without null rows (an Arrow array, nulls kept) and
    its rows' length ``k``; ``ragged(row, length, k)`` is raised for the first row of another length than row 0."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_fixed_size_list(arr.type):
        return arr.flatten(), arr.type.list_size
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
    k = int(lengths[0]) if len(lengths) else 0
    off = np.flatnonzero(lengths != k)
    if off.size:
        raise ragged(int(off[0]), int(lengths[off[0]]), k)
    return arr.flatten(), k


def is_key_type(t) -> bool:
    """Whether the Arrow type ``t`` can be read as slice keys: numbers, booleans,
    strings, nulls, or a dictionary (categorical) of those."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return is_key_type(t.value_type)
    pt = pa.types
    kinds = (pt.is_integer, pt.is_floating, pt.is_boolean, pt.is_string, pt.is_large_string, pt.is_null)
    return any(kind(t) for kind in kinds)


class ArrowSource(Source):
    """A reader that gets its rows as Arrow record batches."""

    #: the format's name in messages ("Parquet", "CSV")
    kind: ClassVar[str] = ""

    def _need_pyarrow(self) -> None:
        if not have_pyarrow():
            raise InputError(f"{self.path}: reading {self.kind} files needs pyarrow: pip install 'streammetrics[io]'")

    def _to_numpy(self, arr, col: str, start: int) -> np.ndarray:
        """A pyarrow array (of the rows from ``start``) as numpy; nulls are an error naming their row."""
        import pyarrow as pa

        if arr.null_count:
            raise self.bad_row(start + first_null(arr), col, "missing value (null)")
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            arr = arr.dictionary_encode()
        if pa.types.is_dictionary(arr.type):
            # text labels: each distinct value converted once, then a fixed-width
            # numpy string array (the labels' fast lookup; Python str objects
            # row by row are several times slower)
            values = np.asarray(arr.dictionary.to_pylist())
            if values.dtype.kind not in "US":
                values = values.astype(str) if values.size else np.array([], dtype=str)
            return values[arr.indices.to_numpy(zero_copy_only=False)]
        if not is_list_type(arr.type):
            return arr.to_numpy(zero_copy_only=False)
        flat, k = list_values(
            arr, lambda i, n, k: self.bad_row(start + i, col, f"holds {n} values where the rows before hold {k}")
        )
        if flat.null_count:
            raise self.bad_row(start + first_null(flat) // max(k, 1), col, "missing value (null) in the list")
        return flat.to_numpy(zero_copy_only=False).reshape(len(arr), k)

    def _key_to_numpy(self, arr) -> np.ndarray:
        """A key column as numpy: nulls stay (``None``, or NaN in numbers), an
        empty string is a null, a dictionary (categorical) column is read as
        its values."""
        import pyarrow as pa

        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            import pyarrow.compute as pc

            # an empty string is the null slice, as a CSV file's empty field is
            arr = pc.if_else(pc.equal(arr, ""), pa.scalar(None, arr.type), arr)
        return arr.to_numpy(zero_copy_only=False)

    def _chunk(self, rb, start: int, done: int) -> Chunk:
        """The chunk of the record batch ``rb``, whose first row is row ``start``."""

        def column(col):
            return self._to_numpy(rb.column(col), col, start)

        return Chunk.of(self.columns, start, column, done, lambda col: self._key_to_numpy(rb.column(col)))
