"""Scores per slice of the data: :class:`Sliced` and its :class:`SlicedResult`."""

from .accumulator import DEFAULT_MAX_SLICES, Sliced
from .result import SlicedResult

__all__ = ["DEFAULT_MAX_SLICES", "Sliced", "SlicedResult"]
