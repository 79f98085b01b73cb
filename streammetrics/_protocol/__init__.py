"""The protocol layer: errors, declared inputs, declared state, the accumulator
base class, results and the state file format.

Every metric family builds on this layer only; nothing here knows a metric.
"""

from .base import Accumulator, from_bytes, load_state
from .batch import Batch
from .errors import (
    BadShapeError,
    BadValueError,
    CountOverflowError,
    NoObservationsError,
    NoWeightsError,
    SettingsMismatchError,
    StateFileError,
)
from .result import Result

__all__ = [
    "Accumulator",
    "BadShapeError",
    "BadValueError",
    "Batch",
    "CountOverflowError",
    "from_bytes",
    "NoObservationsError",
    "NoWeightsError",
    "Result",
    "SettingsMismatchError",
    "StateFileError",
    "load_state",
]
