"""Compensated summation and small shared kernels.

Long float sums are kept as *pairs* ``(s, c)``: a running sum and the rounding
error that Neumaier's variant of Kahan summation has collected so far; the value
is ``s + c``. Inside a batch, terms are first added naively in blocks of
:data:`BLOCK` (the error of a short naive sum of same-signed terms is a few
ulps), and each block total is then added to the pair with one compensated
step. That keeps the inner loops free of branches, so they run near memory
speed, while the result stays within a few ulps of the exact sum however long
the stream and however it is cut into batches.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = [
    "BLOCK",
    "neumaier_add",
    "pair_add",
    "pair_value",
    "pairs_merge",
    "first_bad_weight",
]

#: Terms summed naively before one compensated step.
BLOCK = 256


@kernel
def neumaier_add(s, c, x):
    """One compensated step: return the pair ``(s, c)`` with ``x`` added."""
    t = s + x
    if abs(s) >= abs(x):
        c += (s - t) + x
    else:
        c += (x - t) + s
    return t, c


@kernel
def pair_add(pairs, k, x):
    """Add ``x`` to row ``k`` of a ``(m, 2)`` array of compensated pairs."""
    t, c = neumaier_add(pairs[k, 0], pairs[k, 1], x)
    pairs[k, 0] = t
    pairs[k, 1] = c


@kernel
def pair_value(s, c):
    """The value of a compensated pair (``s`` alone once it overflowed)."""
    if np.isfinite(s):
        return s + c
    return s


@kernel
def pairs_merge(into, other):
    """Add the ``(m, 2)`` pairs ``other`` into ``into``, row by row."""
    for k in range(into.shape[0]):
        t, c = neumaier_add(into[k, 0], into[k, 1], other[k, 0])
        into[k, 0] = t
        into[k, 1] = c + other[k, 1]


@kernel
def first_bad_weight(w):
    """Index of the first weight that is negative, NaN or infinite, else -1."""
    for i in range(w.shape[0]):
        wi = w[i]
        if not (wi >= 0.0 and wi < np.inf):
            return i
    return -1
