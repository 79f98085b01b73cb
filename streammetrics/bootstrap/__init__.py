"""Bootstrap: percentile confidence intervals for any weighted accumulator, streamed."""

from .accumulator import DEFAULT_REPLICATES, MAX_SLOTS, MAX_WEIGHT_BLOCK, Bootstrap
from .ranks import DEFAULT_GRID, MAX_GRID

__all__ = ["Bootstrap", "DEFAULT_REPLICATES", "MAX_WEIGHT_BLOCK", "MAX_SLOTS", "DEFAULT_GRID", "MAX_GRID"]
