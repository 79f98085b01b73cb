"""Compensated summation: the one spelling of the (sum, error) pair.

Long float sums are kept as pairs ``(s, c)`` (Neumaier's variant of Kahan
summation; the value ``s + c``), rows of a ``float64[m, 2]`` array. Inside a
batch, terms are added naively in blocks of :data:`BLOCK` and each block total
is added to a local pair with one compensated step (:func:`add`); the batch's
pair is folded into the state with :func:`fold` (pass ``k`` as a run-time
integer, ``np.intp(0)``: a literal compiles a copy per constant).
:func:`merge` adds one pair array into another; :func:`value` and
:func:`values` read pairs.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel

__all__ = ["BLOCK", "add", "fold", "merge", "value", "values", "first_bad_weight"]

#: Terms summed naively before one compensated step.
BLOCK = 256


@inline
def add(s, c, x):
    """One compensated step: return the pair ``(s, c)`` with ``x`` added."""
    t = s + x
    if abs(s) >= abs(x):
        c += (s - t) + x
    else:
        c += (x - t) + s
    return t, c


@inline
def fold(pairs, k, s, c):
    """Add the pair ``(s, c)`` into row ``k`` of the ``(m, 2)`` array ``pairs``."""
    t, cc = add(pairs[k, 0], pairs[k, 1], s)
    pairs[k, 0] = t
    pairs[k, 1] = cc + c


@kernel
def merge(into, other):
    """Add the ``(m, 2)`` pairs ``other`` into ``into``, row by row (as :func:`fold`,
    whose compile a first use of this kernel alone then does not pay)."""
    for k in range(into.shape[0]):
        t, c = add(into[k, 0], into[k, 1], other[k, 0])
        into[k, 0] = t
        into[k, 1] = c + other[k, 1]


@kernel
def value(s, c):
    """The value of a compensated pair (``s`` alone once it overflowed)."""
    if np.isfinite(s):
        return s + c
    return s


def values(pairs: np.ndarray) -> np.ndarray:
    """The value of every row of a ``(..., 2)`` pair array, as float64 (numpy)."""
    s = pairs[..., 0]
    return np.where(np.isfinite(s), s + pairs[..., 1], s)


#: the smallest normal float64: a positive weight below it has lost digits
NORMAL_MIN = 2.2250738585072014e-308


@kernel
def first_bad_weight(w):
    """Index of the first weight that is negative, NaN, infinite or subnormal
    (positive but below :data:`NORMAL_MIN`, where float64 keeps fewer digits
    and the scores would change with the weights' scale), else -1."""
    for i in range(w.shape[0]):
        wi = w[i]
        if not (wi >= 0.0 and wi < np.inf) or (wi > 0.0 and wi < NORMAL_MIN):
            return i
    return -1
