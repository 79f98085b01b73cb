"""Chunk-by-chunk readers of prediction files (Parquet, CSV, ``.npy`` and ``.npz``),
for the ``streammetrics`` command: a file of any size is read in bounded memory.
:func:`open_source` picks the reader by the file's name, else by its first bytes.
"""

from .arrow import have_pyarrow
from .base import OS_PROBLEMS, Chunk, ColumnSpec, InputError, Source, expand_paths, open_source
from .csv import CsvSource
from .npy import NpySource, NpzSource
from .parquet import ParquetSource

__all__ = ["InputError", "ColumnSpec", "Chunk", "Source", "ParquetSource", "CsvSource", "NpySource", "NpzSource"]
__all__ += ["open_source", "expand_paths", "have_pyarrow", "OS_PROBLEMS"]
