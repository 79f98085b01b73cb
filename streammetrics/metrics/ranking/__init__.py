"""Ranking: the rank-merge AUC, its curves, average precision and operating points.

:class:`RankAUC` appends each batch's score keys, split by label, to a buffer of
pending rows (:mod:`.pending`), sorted into its state in bulk. The state is one
of two strategies: :mod:`.exact`, runs of every distinct score with their
positive and negative mass, merged log-structured and spilled to files past a
memory budget (:mod:`.spill`); or :mod:`.bounded`, at most ``2 B`` items grouped
along the dyadic cells of the scores' keys, each bin keeping the pairs whose
order it knows and those it does not, so the AUC comes with a certified
interval. :mod:`.points` answers every query over the sorted state;
:mod:`.curves` is the result type, :mod:`.functions` the one-shot functions.
"""

from .accumulator import RankAUC
from .curves import RankResult
from .functions import auc, average_precision, partial_auc, pr_curve, roc_curve

__all__ = ["RankAUC", "RankResult", "auc", "average_precision", "partial_auc", "pr_curve", "roc_curve"]
