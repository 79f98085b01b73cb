"""Value checks of a whole batch: the index of the first bad value, or -1.

These run when a batch is prepared for several accumulators at once
(``Accumulator.prepare``); a single accumulator's ``update`` instead checks
the values inside its folding kernel's one pass. Either way the first
offending position is the same.
"""

from __future__ import annotations

from ._jit import kernel

__all__ = [
    "first_not01",
    "first_outside01",
    "first_nonfinite",
    "first_out_of_range",
    "argmax_rows",
    "first_bad_probability_row",
]


@kernel
def first_not01(x):
    """Index of the first value that is neither 0 nor 1 (NaN included), else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v == 0 or v == 1):
            return i
    return -1


@kernel
def first_outside01(x):
    """Index of the first value outside [0, 1] (NaN included), else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v >= 0.0 and v <= 1.0):
            return i
    return -1


@kernel
def first_nonfinite(x):
    """Index of the first NaN or infinity, else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v - v == 0.0):
            return i
    return -1


@kernel
def first_out_of_range(codes, k):
    """Index of the first code outside ``0..k-1``, else -1."""
    for i in range(codes.shape[0]):
        c = codes[i]
        if c < 0 or c >= k:
            return i
    return -1


@kernel
def argmax_rows(m, out):
    """``out[i] = argmax(m[i])`` (the first maximum) for an ``(n, k)`` matrix."""
    n, k = m.shape
    for i in range(n):
        best = 0
        top = m[i, 0]
        for j in range(1, k):
            if m[i, j] > top:
                top = m[i, j]
                best = j
        out[i] = best


@kernel
def first_bad_probability_row(m, tolerance, out):
    """Checks of an ``(n, k)`` matrix of class probabilities.

    Returns ``(status, i, j)``: status 0 if every entry lies in [0, 1] and
    every row sums to 1 within ``tolerance``; 1 with the first entry ``(i, j)``
    outside [0, 1] (NaN included); 2 with the first row ``i`` whose sum is off
    (its sum in ``out[0]``).
    """
    n, k = m.shape
    for i in range(n):
        s = 0.0
        for j in range(k):
            v = m[i, j]
            if not (v >= 0.0 and v <= 1.0):
                return 1, i, j
            s += v
        if abs(s - 1.0) > tolerance:
            out[0] = s
            return 2, i, 0
    return 0, -1, -1
