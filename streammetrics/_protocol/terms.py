"""Declared row terms: how a linear accumulator's state is a sum over its rows.

A binary confusion adds each row's weight to its cell; a reliability table adds
the weight, the probability and the outcome to the totals of the row's bin.
Such an accumulator declares its terms in ``row_terms()`` (a :class:`RowTerms`)
and adds summed terms into its state in ``_add_sums(sums, state)``. Wrappers
read only that declaration: :class:`~streammetrics.Sliced` sums a batch's terms
per slice with one grouped kernel, :class:`~streammetrics.Bootstrap` per
replicate with one replicate kernel, whatever the class.

The state is laid out on ``size`` slots; each row adds ``width`` terms (a slot
and a value):

* ``fill(batch, lo, slots, values, col, base)`` runs the class's terms kernel
  for rows ``lo .. lo + m - 1``: slots (``base`` added) into columns
  ``col .. col + width - 1`` of ``slots`` (``int32[m, P]``), values into
  ``values`` (``float64[m, P]``). It checks the rows as the class's fold does
  and returns the same status (0, or the code of a bad value).
* ``rows``: each row adds 1 to exactly one of the first ``rows`` slots.
* ``counted``: the slots counted exactly as integers (always the first ``rows``).
* ``counts_only``: unweighted rows are described by the counts alone.
* ``second``: per slot, the second moment the intervals need: 0 none, 1 sums
  ``w v**2``, 2 sums ``w**2 v**2``.

An Evaluator's terms are its linear members', side by side (``complete`` is
false when it has other members, which ``fold_rest`` folds).

The wrappers pass summed terms as :class:`Sums`: ``ints`` (counts of the counted
slots, ``(G, size)``), ``pairs`` (``w v`` per slot as compensated pairs,
``float64[G, size, 2]``, ``None`` for unweighted rows of a ``counts_only``
class), ``second`` (pairs, or ``None``), ``rows`` (``int64[G]``) and
``weighted``. ``state`` holds the accumulator's fields with a leading axis of
``G`` states, or one state (``Accumulator._fold_terms``, ``rows`` an ``int``): so
``_add_sums`` indexes from the end. For :class:`~streammetrics.BinaryConfusion`::

    def row_terms(self):
        return RowTerms(4, 1, self._terms, rows=4, counts_only=True, second=(2, 2, 2, 2))

    def _add_sums(self, sums, st):
        st["n"].T[0] += sums.rows
        if not sums.weighted:
            st["counts"] += sums.ints
            return
        add_pairs(st["wsums"], sums.pairs)
        ...

Counts are then exact and sums compensated (to a few ulps of the class's own
fold). A state that is not a sum of terms (moments merged by Chan's formula,
rank states) declares none and is folded state by state.
"""

from __future__ import annotations

import numpy as np

from .._kernels import compensated


class RowTerms:
    """A declaration of the terms each row adds (see the module docstring)."""

    __slots__ = ("size", "width", "fill", "rows", "counted", "counts_only", "second", "complete", "_takes")

    def __init__(
        self, size, width, fill, *, rows, counted=None, counts_only=False, second=None, complete=True, takes=None
    ):
        self.size, self.width, self.fill = int(size), int(width), fill
        self.rows = int(rows)
        mask = np.zeros(self.size, np.uint8)
        if counted is not None:
            mask[np.asarray(counted, np.int64)] = 1
        mask[: self.rows] = 1
        #: ``uint8[size]``: 1 where a slot is counted exactly
        self.counted = mask
        self.counts_only = bool(counts_only)
        #: ``uint8[size]`` of the second-moment powers, or ``None``
        self.second = None if second is None else np.asarray(second, np.uint8).reshape(self.size)
        #: whether the terms describe the whole state (an Evaluator's cover its
        #: linear members only: its ``fold_rest`` folds the others)
        self.complete = bool(complete)
        self._takes = takes

    def takes(self, batch) -> bool:
        """Whether the terms can be formed from ``batch`` (a batch of the owner's
        inputs always; an Evaluator's of a form all its linear members take)."""
        return self._takes is None or self._takes(batch)

    def __repr__(self) -> str:
        return f"RowTerms(size={self.size}, width={self.width}, rows={self.rows})"


class Sums:
    """A batch's terms summed per group (see the module docstring)."""

    __slots__ = ("ints", "pairs", "second", "rows", "weighted")

    def __init__(self, ints, pairs, second, rows, weighted: bool):
        self.ints, self.pairs, self.second, self.rows, self.weighted = ints, pairs, second, rows, weighted

    def part(self, lo: int, hi: int) -> Sums:
        """The sums of slots ``lo .. hi - 1`` (a member's, in a composite's terms)."""
        ints, pairs, second = (None if a is None else a[:, lo:hi] for a in (self.ints, self.pairs, self.second))
        return Sums(ints, pairs, second, self.rows, self.weighted)


def add_pairs(into: np.ndarray, pairs: np.ndarray) -> None:
    """Add compensated pairs ``pairs`` into ``into`` (same shape, ``(..., 2)``),
    entry by entry."""
    if not into.flags.c_contiguous:  # (a slice of stacked states)
        part = into.copy()
        add_pairs(part, pairs)
        into[...] = part
        return
    compensated.merge(into.reshape(-1, 2), np.ascontiguousarray(pairs).reshape(-1, 2))


def add_second(into: np.ndarray, pairs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Add second moments ``pairs`` into ``into`` (``(G, ..., 2)``), except in the
    states where a total would pass float64's range: those keep theirs (they
    serve the intervals only, which such a state then refuses). Returns the
    rows to count as holding them: ``rows`` where taken, else 0."""
    merged = np.array(into)
    add_pairs(merged, pairs)
    kept = np.isfinite(merged).reshape(merged.shape[0], -1).all(axis=1)
    into[kept] = merged[kept]
    return np.where(kept, rows, 0)
