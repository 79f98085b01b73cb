"""Ranking: the exact rank-merge AUC, its curves and average precision.

* :mod:`.accumulator`: :class:`RankAUC` and the one-shot functions;
* :mod:`.exact` and :mod:`.bounded`: the two state strategies;
* :mod:`.pending`: the buffer of rows not yet sorted in;
* :mod:`.sorting`: sorting and counting on two threads;
* :mod:`.curves`: ROC/PR curves, average precision, and the result type.
"""

from .accumulator import RankAUC, auc, average_precision, pr_curve, roc_curve
from .curves import RankResult

__all__ = ["RankAUC", "RankResult", "auc", "average_precision", "pr_curve", "roc_curve"]
