"""The fold of an accumulator whose state is a sum of per-row terms.

Such a class (log loss and Brier, the Tweedie deviance, the mean losses, the
weighted binary cells, top-k hits, the reliability tables) has a terms kernel
that writes each row's slots and values, the one the wrappers read
(:mod:`streammetrics._protocol.terms`); its own fold is that kernel and
:func:`sum_slots`, which sums the terms as a hand-written fold would: plainly
within blocks of rows counted from the batch's first, each slot's block total
added to its compensated pair with one step. The totals are those of one
pass, bit for bit, however the batch is cut into chunks.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import BLOCK, add

__all__ = ["sum_slots", "sum_terms", "sum_columns", "sum_rows", "CHUNK"]

#: rows whose terms are formed at a time (rounded up to a multiple of the block)
CHUNK = 64 * BLOCK


@kernel
def sum_slots(slots, values, w, second, block, counts, pairs, moments, scratch):
    """Add the terms of rows (``slots`` and ``values``, ``[m, P]``; row ``i``
    weighted by ``w[i]``, ``w`` None: 1) into their slots: ``counts`` (``int64``)
    the rows, ``pairs`` (``float64[S, 2]`` compensated pairs) the totals of
    ``w v``, ``moments`` (as ``pairs``) those of ``w v**2`` where
    ``second[s]`` is 1 and of ``w**2 v**2`` where it is 2 (``second`` None:
    no moments, a compiled loop of its own). Rows are summed plainly in
    blocks of ``block`` rows; a slot's block total, if not 0, is added to its
    pair with one compensated step. ``scratch`` is ``float64[2, S]`` zeros,
    left zeroed."""
    m, width = slots.shape
    for start in range(0, m, block):
        for i in range(start, m if m < start + block else start + block):
            wi = 1.0 if w is None else w[i]
            for c in range(width):
                s = slots[i, c]
                v = values[i, c]
                counts[s] += 1
                scratch[0, s] += wi * v
                if second is not None and second[s]:
                    scratch[1, s] += (wi if second[s] == 1 else wi * wi) * (v * v)
        # each block total, if not 0, into its pair (written here: a helper is a compile of its own)
        for r in range(1 if second is None else 2):
            into = pairs if r == 0 else moments
            for s in range(counts.shape[0]):
                x = scratch[r, s]
                if x != 0.0:
                    t, c = add(into[s, 0], into[s, 1], x)
                    into[s, 0] = t
                    into[s, 1] = c
                    scratch[r, s] = 0.0


def sum_terms(terms, args, w, width: int, counts, pairs, moments=None, second=None, block: int = BLOCK) -> int:
    """Fold the rows of ``args`` (``args[0]`` has one value per row) into
    ``counts``, ``pairs`` and ``moments`` (:func:`sum_slots`), their terms
    written ``width`` a row by ``terms(*args, lo, slots, values, 0, 0)``; its
    status. A status other than 0 stops at the chunk it is met in, the arrays
    partly written: the caller passes zeros, or copies of its state."""
    rows, size = args[0].shape[0], counts.shape[0]
    moments = np.zeros((size, 2)) if moments is None else moments
    second = None if second is None else np.asarray(second, np.uint8)  # (None: a compiled loop of its own)
    chunk = -(-CHUNK // block) * block  # whole blocks: the blocks of one pass
    m = min(rows, chunk)
    slots, values, scratch = np.empty((m, width), np.int32), np.empty((m, width)), np.zeros((2, size))
    for lo in range(0, rows, chunk):
        hi = min(rows, lo + chunk)
        status = terms(*args, lo, slots[: hi - lo], values[: hi - lo], 0, 0)
        if status:
            return status
        wc = w[lo:hi] if w.shape[0] else None  # (None: a compiled loop of its own)
        sum_slots(slots[: hi - lo], values[: hi - lo], wc, second, block, counts, pairs, moments, scratch)
    return 0


@kernel
def sum_columns(values, w, second, pairs, into):
    """:func:`sum_slots` of terms that go to slots ``0 .. K - 1``, one each, in
    blocks of ``BLOCK`` rows, every block total added: ``values`` is
    ``float64[m, K]``; ``pairs`` (``float64[K + S, 2]``) takes the totals of
    ``w v`` (``w`` None: 1), then of the second moments ``second`` names
    (``int64[S, 2]``: column, power). Then ``pairs`` is added into ``into``
    (as ``pairs`` or with no rows), pair by pair (as :func:`.compensated.merge`,
    whose compile a first use then does not pay)."""
    m, k = values.shape
    for start in range(0, m, BLOCK):
        stop = m if m < start + BLOCK else start + BLOCK
        for r in range(pairs.shape[0]):
            t = r if r < k else second[r - k, 0]
            power = 0 if r < k else second[r - k, 1]
            b = 0.0
            for i in range(start, stop):
                v = values[i, t]
                if power:
                    v *= v
                if w is not None:
                    v *= w[i] if power < 2 else w[i] * w[i]
                b += v
            s, c = add(pairs[r, 0], pairs[r, 1], b)
            pairs[r, 0] = s
            pairs[r, 1] = c
    for r in range(into.shape[0]):
        s, c = add(into[r, 0], into[r, 1], pairs[r, 0])
        into[r, 0] = s
        into[r, 1] = c + pairs[r, 1]


def sum_rows(terms, args, w, width: int, second=(), into=None):
    """``(status, totals)`` of terms that go to slots ``0 .. width - 1``, one each
    (as :func:`sum_terms`, by :func:`sum_columns`): ``totals`` the pairs of the
    ``width`` sums, then of the second moments ``second`` names (``(slot,
    power)`` each); with status 0 they are also added into ``into`` if given
    (pairs of the same shape)."""
    rows = args[0].shape[0]
    second = np.asarray(second, np.int64).reshape(-1, 2)
    pairs = np.zeros((width + second.shape[0], 2))
    into = pairs[:0] if into is None else into
    m = min(rows, CHUNK)
    slots, values = np.empty((m, width), np.int32), np.empty((m, width))
    for lo in range(0, rows, CHUNK):
        hi = min(rows, lo + CHUNK)
        status = terms(*args, lo, slots[: hi - lo], values[: hi - lo], 0, 0)
        if status:
            return status, pairs
        # the batch's totals go into ``into`` once, with its last chunk
        sum_columns(
            values[: hi - lo], w[lo:hi] if w.shape[0] else None, second, pairs, into if hi == rows else into[:0]
        )
    return 0, pairs
