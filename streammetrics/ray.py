"""Evaluate a Ray Dataset where it lives, with the single-process result.

:func:`evaluate` runs one ``Dataset.aggregate`` with an ``AggregateFnV2``: each
block's Arrow columns are folded into a copy of the evaluation's template,
partial states are merged as they meet (as bytes, checked like files), and
the driver finalizes the one merged state. Counts and the exact AUC equal the
single-process ``Evaluator``'s, sums agree to 1e-12; a bad value in a block
raises the library's exception naming the column and the row within the
block, not a Ray traceback.

Requires the ``ray`` extra: ``pip install 'streammetrics[ray]'``.
"""

from __future__ import annotations

try:
    from ray.data.aggregate import AggregateFnV2
    from ray.data.block import BlockAccessor
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("streammetrics.ray needs ray[data]: pip install 'streammetrics[ray]'") from exc

from ._engines import Plan, check_columns, make_plan, merged_bytes, pack_state

__all__ = ["evaluate"]


class _Fold(AggregateFnV2):
    """The plan's template folded over blocks (values: a state's or an error's bytes)."""

    def __init__(self, plan: Plan):
        empty = pack_state(plan.template)
        super().__init__("streammetrics", lambda: empty, on=None, ignore_nulls=False)
        self._plan = plan

    def aggregate_block(self, block) -> bytes:
        table = BlockAccessor.for_block(block).to_arrow()
        return self._plan.state_of([table], f"a block of {table.num_rows} rows")

    def combine(self, current: bytes, new: bytes) -> bytes:
        return merged_bytes((current, new))  # (the first error met travels on)

    def finalize(self, accumulator: bytes) -> bytes:
        return accumulator


def evaluate(ds, y="label", p="prob", *, task=None, evaluator=None, weight=None, by=None, labels=None, ci=None):
    """Evaluate the columns ``y`` (truths) and ``p`` (predictions) of a Ray Dataset.

    The result is what ``Evaluator(task=...).update(y, p).finalize(ci=ci)``
    gives on the whole table in one process (with ``by=``, that of
    ``Sliced(Evaluator(...))``). ``task`` is a preset of
    :class:`~streammetrics.Evaluator` (``"binary"`` by default, or
    ``"multiclass"`` when ``labels`` are given); ``evaluator`` an empty
    Evaluator of any members instead; ``weight`` a column of sample weights;
    ``by`` one column or a list of columns whose values are the slices;
    ``ci`` a confidence level for the intervals. Class probabilities come as a
    list or tensor column.

    >>> import ray, streammetrics.ray
    >>> _ = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # doctest: +SKIP
    >>> ds = ray.data.from_items([{"label": i % 2, "prob": (i % 7) / 7} for i in range(100)])  # doctest: +SKIP
    >>> r = streammetrics.ray.evaluate(ds, "label", "prob")  # doctest: +SKIP
    >>> round(r.auc, 6), r.n  # doctest: +SKIP
    (0.503, 100)
    """
    plan = make_plan(y, p, task=task, evaluator=evaluator, weight=weight, by=by, labels=labels, ci=ci)
    check_columns(ds.columns(), plan.columns, "the dataset")
    fold = _Fold(plan)
    # (a projection first would make Ray start new aggregating actors for every call)
    out = ds.aggregate(fold)
    return plan.finish([out[fold.name]])
