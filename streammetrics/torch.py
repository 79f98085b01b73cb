"""Synchronise accumulators across ``torch.distributed`` ranks.

Inside a DDP training loop each rank folds its own batches into its own
accumulator; :func:`sync` gathers every rank's state and merges them in rank
order, so every rank (or only ``dst``) holds the same global accumulator and
``finalize()`` gives the single-process answer. Accumulator updates take torch
tensors directly (CPU tensors are read without a copy; ``requires_grad``
tensors are detached).

Requires the ``torch`` extra: ``pip install 'streammetrics[torch]'``.

Examples
--------
In each rank of a job started with ``torchrun`` (or any other launcher that
initialised the default process group)::

    import streammetrics as sm
    from streammetrics.torch import sync

    acc = sm.BinaryConfusion(threshold=0.5)
    for x, y in loader:                      # this rank's shard
        acc.update(y, torch.sigmoid(model(x)).squeeze(1))
    result = sync(acc).finalize()            # identical on every rank
"""

from __future__ import annotations

try:
    import torch.distributed as dist
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("streammetrics.torch needs PyTorch: pip install 'streammetrics[torch]'") from exc

from ._protocol.base import Accumulator

__all__ = ["sync", "sync_finalize"]


def sync(accumulator: Accumulator, *, group=None, dst: int | None = None) -> Accumulator:
    """A new accumulator holding every rank's observations of ``group`` (default: the
    default group), merged in rank order so that all ranks hold bit-identical states;
    ``accumulator``, this rank's, is not modified. With ``dst``, only that global rank
    receives it (``gather_object``) and the others get ``None``.

    Raises ``RuntimeError`` if the default process group is not initialised, and
    ``ValueError`` if ranks hold accumulators of different classes or settings.
    """
    if not isinstance(accumulator, Accumulator):
        raise TypeError(f"accumulator must be a streammetrics accumulator, got {type(accumulator).__name__}")
    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("torch.distributed is not initialised: call torch.distributed.init_process_group() first")
    world = dist.get_world_size(group)
    if dst is None:
        states: list = [None] * world
        dist.all_gather_object(states, accumulator, group=group)
    else:
        states = [None] * world if dist.get_rank() == dst else None
        dist.gather_object(accumulator, states, dst=dst, group=group)
        if states is None:
            return None
    merged = states[0].copy()
    for rank, other in enumerate(states[1:], start=1):
        try:
            merged.merge(other)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rank {rank}'s accumulator cannot be merged with rank 0's: {exc}") from None
    return merged


def sync_finalize(accumulator: Accumulator, *, group=None, dst: int | None = None):
    """``sync(...).finalize()``: the global scores (``None`` on ranks other than ``dst``)."""
    merged = sync(accumulator, group=group, dst=dst)
    return None if merged is None else merged.finalize()
