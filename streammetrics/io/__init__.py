"""Chunk-by-chunk readers of prediction files, for the ``streammetrics`` command.

Every reader yields numpy arrays of a bounded number of rows, so a file of any
size is read in bounded memory. One reader per format, all behind the
interface of :class:`~streammetrics.io.base.Source`:

* Parquet (``.parquet``, ``.pq``, ``.parq``): :mod:`.parquet`;
* CSV (``.csv``, ``.tsv``, optionally ``.gz``): :mod:`.csv`;
* ``.npy`` and ``.npz``: :mod:`.npy`.

:func:`open_source` picks the reader of a file by its name (else by its first
bytes). Problems are raised as :class:`InputError` with a message written for
people: the file and, where it applies, the column and the row, counted the way
the format's reader says (:meth:`Source.where`): the 0-based row index, or for
CSV the file's 1-based line.
"""

from .base import (
    FORMATS,
    Chunk,
    ColumnSpec,
    InputError,
    Source,
    expand_paths,
    open_source,
    reader_for,
    readers,
    register,
)
from .arrow import have_pyarrow
from .parquet import ParquetSource
from .csv import CsvSource
from .npy import NpySource, NpzSource

__all__ = [
    "InputError",
    "ColumnSpec",
    "Chunk",
    "Source",
    "ParquetSource",
    "CsvSource",
    "NpySource",
    "NpzSource",
    "open_source",
    "expand_paths",
    "have_pyarrow",
    "reader_for",
    "readers",
    "register",
    "FORMATS",
]
