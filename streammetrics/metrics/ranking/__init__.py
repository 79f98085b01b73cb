"""Ranking: the exact rank-merge AUC, its curves and average precision.

* :mod:`.accumulator`: :class:`RankAUC` and the one-shot functions;
* :mod:`.exact` and :mod:`.bounded`: the two state strategies;
* :mod:`.pending`: the buffer of rows not yet sorted in;
* :mod:`.spill`: sorted runs in temporary files (the memory budget);
* :mod:`.sorting`: sorting and counting on two threads;
* :mod:`.curves`: ROC/PR curves, average precision, and the result type.

How :class:`RankAUC` keeps its state
------------------------------------
**Pending rows.** ``update`` validates a batch and appends its rows (the
64-bit sort keys of their scores, split by label, and their weights) to a
buffer of *pending* rows, which is sorted into the state in bulk when it is
full and before the state is read; appending costs a few microseconds
whatever the state holds. Its bounds, 8 bytes a row (16 with weights):

* exact mode: at most ``max(2**22, 3 m)`` rows, ``m`` the distinct scores
  already sorted in (the runs' entries). Without weights that is never
  more than 32 MiB or the runs' own size (24 bytes an entry), so the
  memory stays proportional to the distinct scores. Since the buffer
  grows with the state, a long stream is sorted in a few large pieces.
* bounded mode: at most ``max(2**14, 32 B)`` rows, 256 KiB for ``B =
  1000`` (twice that with weights), beside the bins' at most ``2 B x 48``
  bytes.

A batch too large for the buffer is sorted on its own, at once: in
bounded mode it then takes its keys and the sort's scratch (16 bytes a
row, 32 with weights) beyond its own arrays, since it is grouped straight
from its sorted keys and never expanded into entries. Saving, pickling,
comparing with ``==`` and merging into another accumulator read the state
with the pending rows sorted in (into a temporary copy), so any state that
leaves an accumulator is the canonical one described below, and none of
them changes either accumulator; ``copy`` copies the pending rows as they
are. ``finalize`` and the curves leave the buffer alone too, except that
``finalize`` without weights sorts the exact mode's pending rows in place
and leaves them pending (see below), which changes no result, only the
time later calls take. :meth:`flush` sorts the pending rows into the state
now and frees the buffer: the one step that changes how the state is
held (the first operating-point query after a change, such as
``at_threshold``, takes it too, and builds its running totals over the one
run that results rather than over a merged copy). A buffer is made as large as its bound at once for a batch of ``2**16`` rows or more (such a
stream would fill it), so it is never copied to grow; memory the rows
have not reached yet is reserved but not touched.

**Exact mode.** The pending rows are radix-sorted (on the scores' bits,
per class) into a *run* of distinct scores with the positive and negative
count at each (float64 weights once any batch was weighted). Runs are
merged log-structured: a run is merged into its predecessor only when that
one is at most twice as long (a new run is merged into the last one in the
same pass that builds it), so folding ``n`` rows costs ``O(n log n)`` in
all and no update re-merges one big array. ``merge`` takes over the other
accumulator's run. ``finalize`` merges the runs into one and counts ``2U``
exactly in int64 (in 128-bit integers past ``2 n_pos n_neg = 2**63``, so
billions of merged rows stay exact); with weights it is a compensated
float64 sum. Without weights and below that bound, ``finalize`` counts
``2U`` across the run and the sorted pending rows in one pass instead of
writing their merged run; the rows stay pending, marked sorted, and the
next update or read of the state makes them a run without sorting them
again. Any batching, sharding and merge order gives the identical AUC
without weights. On two cores or more, large sorts do the two classes
at the same time (the smaller on a worker thread; the kernels release the
GIL), and a large count cuts the scores at a middle key and counts the
two sides at the same time; both give the same result as one thread.

**Exact mode within a memory budget** (``max_memory``, :mod:`.spill`). The
pending rows take at most a sixteenth of the budget; once the runs in
memory take more than a quarter of it they are written, as they are, to
temporary files and freed, and at most 16 files stay (one more merges the
smaller half into one, in chunks). ``finalize`` streams a k-way merge over
the files, the runs in memory and the pending rows' run, in chunks of a
twelfth of the budget, and counts ``2U`` chunk by chunk (exact integers;
with weights compensated sums carried from chunk to chunk), so the value
equals the in-memory one to the bit. The curves, the average precision,
the interval, the threshold queries, saving and pickling build the merged
run in memory; merging a spilled accumulator into a budgeted one copies
its files.

**Bounded mode.** Once the state would hold more than ``2 B`` entries it
is compacted to at most ``B`` *bins*: scores are cut along the dyadic cells
of their 64-bit keys (halves, quarters, ... of the float line, so the
cells follow the data's spread at every scale), and the entries of a cell
become one bin once the cell's ``pos x neg`` mass is at most ``3 P N /
B**2`` and its total mass at most ``6 (P + N) / B`` (both raised until at
most ``B`` bins remain). Sorted pending rows are first grouped along the
same cells at a quarter of those limits, never across the edge of a bin
(in time linear in the rows), and the groups are then compacted with the
bins; while the state and the rows hold at most ``2 B`` distinct scores
they are kept as points. Bins keep their tight score range ``[lo, hi]``.
A bin remembers the concordance of its own pairs that was known when it
was formed, and the mass of its pairs whose order is unknown: later rows
that fall inside a bin's range cannot be ranked against its contents. A bin
is never split; when new data piles up inside it, the new data is binned
beneath it at finer cells. Two cells are nested or disjoint, so the bins
of merged shards overlap only within a cell and never chain into wide
ranges. ``auc`` counts each unknown pair one half, ``auc_lower`` counts it
0 and ``auc_upper`` 1, so the exact AUC always lies in between. (With
weights, or once ``2 P N`` passes ``2**53``, the pair masses are rounded
float sums, and the interval is widened by a relative 1e-9 to cover the
rounding.) While nothing has been binned the three are equal and exact.
With ``B = 1000`` a stream of a million distinct continuous scores gives
an interval about 0.001 wide (a little wider for 16 merged shards or for
drifting scores), in a state under 100 KB.
Curves and the average precision of a binned state are those of the binned
scores: every bin counts as one score, its lower edge ``lo``. Each comes with
certified bounds: the average precision's are the worst and best case over
every order of the rows inside each block of overlapping items
(:func:`.bounded.average_precision_bounds`, proved in
:mod:`streammetrics._kernels.precision_bounds`), a curve point's those of the
bins straddling its threshold.

The state saved by ``save`` (and pickled) is the single merged run, or the
bins: ``lo``/``hi`` score ranges, ``counts`` (int64) or ``weights``
(float64) of positives and negatives, and ``pairs`` (twice the known
concordance and the unknown mass of each bin's own pairs).
"""

from .accumulator import RankAUC, auc, average_precision, partial_auc, pr_curve, roc_curve
from .curves import RankResult

__all__ = ["RankAUC", "RankResult", "auc", "average_precision", "partial_auc", "pr_curve", "roc_curve"]
