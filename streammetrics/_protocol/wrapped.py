"""Batches of accumulators that wrap a template (``Sliced``, ``Bootstrap``).

A wrapper checks a batch with its template's ``prepare`` and carries its own
per-row extra (slice keys, row keys) beside it: the wrapper's batch holds the
template's arrays and, last, a :class:`Packed` of the template's batch, the
extra and the template that checked it.
"""

from __future__ import annotations

from .inputs import Batch, Input, InputTuple

__all__ = ["Packed", "pack", "unpack"]


class Packed:
    """The last entry of a wrapper's batch: the template's batch and the extra."""

    __slots__ = ("batch", "keys", "template")

    def __init__(self, batch: Batch, keys, template):
        self.batch = batch
        self.keys = keys
        self.template = template  # the accumulator whose prepare checked the batch


def pack(tb: Batch, keys, template, extra: Input) -> Batch:
    """The wrapper's batch of the template's batch ``tb`` and its ``keys``."""
    return Batch(InputTuple((*tb.inputs, extra)), (*tb.arrays, Packed(tb, keys, template)),
                 tb.weights, tb.n)


def unpack(batch, template, made_by: str):
    """``(template batch, keys)`` of a wrapper's batch; ``TypeError`` if it was not
    made by ``made_by`` (e.g. ``"Sliced.prepare()"``) for a template it serves."""
    packed = batch.arrays[-1] if type(batch) is Batch and batch.arrays else None
    if not isinstance(packed, Packed):
        raise TypeError(f"fold() takes a Batch from {made_by}")
    if packed.template is not template and not template.takes(packed.batch):
        raise TypeError("this batch was prepared for another template")
    return packed.batch, packed.keys
