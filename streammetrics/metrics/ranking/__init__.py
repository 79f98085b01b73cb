"""Ranking: :class:`RankAUC` (exact runs, spilled past a memory budget, or at most ``2 B`` bins with certified bounds),
its result type and the one-shot functions.
"""

from .accumulator import RankAUC
from .curves import RankResult
from .functions import auc, average_precision, partial_auc, pr_curve, roc_curve

__all__ = ["RankAUC", "RankResult", "auc", "average_precision", "partial_auc", "pr_curve", "roc_curve"]
