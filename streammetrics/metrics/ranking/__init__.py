"""Ranking: the exact rank-merge AUC, its curves, average precision and operating points.

* :mod:`.accumulator`: :class:`RankAUC`; :mod:`.functions`: the one-shot functions;
* :mod:`.pending`: the rows folded in, not yet sorted into the state;
* :mod:`.exact` (with :mod:`.spill`, its runs on disk past a memory budget) and
  :mod:`.bounded`: the two state strategies;
* :mod:`.sorting`: keys sorted and merged into runs, on two threads when large;
* :mod:`.points`: the one query engine; :mod:`.curves`: the result type.

How :class:`RankAUC` keeps its state
------------------------------------
``update`` validates a batch and appends the 64-bit keys of its scores, split
by label (and their weights), to a buffer of *pending* rows, sorted into the
state in bulk when full (exact mode: ``max(2**24, 3 m)`` rows, ``m`` the
distinct scores held; bounded mode: ``max(2**14, 32 B)``) and when the state
is read for good (``flush``, an exact ``finalize``, a threshold query).

**Exact mode.** Pending rows are radix-sorted into a *run* of distinct scores
with the positive and negative count at each (float64 weights once any batch
was weighted). Runs are merged log-structured (into the one below while that
is at most twice as long), so folding ``n`` rows costs ``O(n log n)``;
``merge`` takes over the other's run. ``2U`` is counted exactly in int64 (in
128-bit integers past ``2 n_pos n_neg = 2**63``), or as a compensated float
sum with weights; any batching, sharding and merge order gives the identical
AUC without weights. Saving, pickling, ``==`` and merging into another
accumulator read the state with the pending rows sorted in (a temporary copy).

**Within a memory budget** (``max_memory``, :mod:`.spill`) the pending rows take
at most a sixteenth of the budget; once the runs in memory take more than a
quarter they are written to temporary files, at most 32 of them, and a read
merges them into one file in chunks, whose results equal the in-memory ones.

**Bounded mode.** Past ``2 B`` entries the state is compacted to at most ``B``
*bins* along the dyadic cells of the scores' keys (halves, quarters, ... of
the float line), a cell becoming one bin once its ``pos x neg`` mass is at
most ``3 P N / B**2`` and its mass at most ``6 (P + N) / B`` (both raised until
at most ``B`` remain); pending rows are grouped along the same cells at a
quarter of those limits, never across a bin's edge, straight from their sorted
keys. A bin keeps its range ``[lo, hi]``, twice the concordance of its own
pairs known when it was formed, and the mass of its pairs whose order is
unknown: ``auc`` counts each unknown pair one half, ``auc_lower`` 0 and
``auc_upper`` 1, so the exact AUC lies in between (widened by a relative 1e-9
for weights or ``2 P N`` past ``2**53``). Cells are nested or disjoint, so
merged shards' bins never chain into wide ranges. Curves and average precision
are those of the binned scores (a bin at its lower edge), with certified
bounds (:func:`.bounded.average_precision_bounds`).

The saved state is the single merged run, or the bins: ``lo``/``hi`` ranges,
``counts`` (int64) or ``weights`` (float64) of positives and negatives, and
``pairs`` (twice the known concordance and the unknown mass of each bin's pairs).
"""

from .accumulator import RankAUC
from .curves import RankResult
from .functions import auc, average_precision, partial_auc, pr_curve, roc_curve

__all__ = ["RankAUC", "RankResult", "auc", "average_precision", "partial_auc", "pr_curve", "roc_curve"]
