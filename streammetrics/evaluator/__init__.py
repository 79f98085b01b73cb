"""The Evaluator: a named collection of accumulators sharing prepared batches,
and the table of task presets (:mod:`.presets`)."""

from .evaluator import Evaluator, evaluate_batches
from .presets import PRESETS, TASKS

__all__ = ["Evaluator", "evaluate_batches", "PRESETS", "TASKS"]
