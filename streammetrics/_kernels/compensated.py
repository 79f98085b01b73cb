"""Compensated summation: the one spelling of the (sum, error) pair.

Long float sums are kept as *pairs* ``(s, c)``: a running sum and the rounding
error that Neumaier's variant of Kahan summation has collected so far; the
value is ``s + c``. State arrays hold pairs as rows of a ``float64[m, 2]``
array. Inside a batch, terms are first added naively in blocks of
:data:`BLOCK` (the error of a short naive sum of same-signed terms is a few
ulps), and each block total is then added to a local pair with one
compensated step (:func:`add`); the batch's pair is folded into the state with
:func:`fold`. That keeps the inner loops free of branches, so they run near
memory speed, while the result stays within a few ulps of the exact sum however
long the stream and however it is cut into batches.

* :func:`add`: one compensated step on a local pair;
* :func:`fold`: add a pair ``(s, c)`` into row ``k`` of a state's pairs (pass
  ``k`` as a run-time integer, ``np.intp(0)`` rather than ``0``: Numba types
  a constant argument as a literal and compiles a copy of ``fold`` for each
  constant, a fifth of a second apiece on first use);
* :func:`merge`: add every row of one ``(m, 2)`` pair array into another;
* :func:`value` / :func:`values`: the value of a pair, and of every row (the
  latter is plain numpy, for results).
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
    """Add the ``(m, 2)`` pairs ``other`` into ``into``, row by row."""
    for k in range(into.shape[0]):
        fold(into, k, other[k, 0], other[k, 1])


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
