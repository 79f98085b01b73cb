"""Value checks of a whole batch: the index of the first bad value, or -1.

These run when a batch is prepared for several accumulators at once
(``Accumulator.prepare``); a single accumulator's ``update`` instead checks
the values inside its folding kernel's one pass. Either way the first
offending position is the same.

Each check is a kernel (``first_not01_kernel``, ...) and a function of the
same name without the suffix, which checks fewer than :data:`NUMPY_BELOW`
values with numpy instead: a small first batch, or a state's few totals,
then compiles no checking kernel (about 0.05 s each on a cold first use),
while a large batch is read once, with no temporary arrays.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

__all__ = ["first_not01", "first_outside01", "first_nonfinite", "first_out_of_range", "NUMPY_BELOW",
           "first_not01_kernel", "first_outside01_kernel", "first_nonfinite_kernel",
           "first_out_of_range_kernel"]

#: values below which a check runs in numpy rather than in its kernel
NUMPY_BELOW = 1 << 14


def _first_true(mask: np.ndarray) -> int:
    """Index of the first ``True`` of a 1-D boolean array, else -1."""
    if not mask.shape[0]:
        return -1
    i = int(np.argmax(mask))
    return i if mask[i] else -1


def first_not01(x) -> int:
    """Index of the first value that is neither 0 nor 1 (NaN included), else -1."""
    if x.shape[0] < NUMPY_BELOW:
        return _first_true((x != 0) & (x != 1))
    return first_not01_kernel(x)


def first_outside01(x) -> int:
    """Index of the first value outside [0, 1] (NaN included), else -1."""
    if x.shape[0] < NUMPY_BELOW:
        return _first_true(~((x >= 0.0) & (x <= 1.0)))
    return first_outside01_kernel(x)


def first_nonfinite(x) -> int:
    """Index of the first NaN or infinity, else -1."""
    if x.shape[0] < NUMPY_BELOW:
        return _first_true(~np.isfinite(x))
    return first_nonfinite_kernel(x)


def first_out_of_range(codes, k) -> int:
    """Index of the first code outside ``0..k-1``, else -1."""
    if codes.shape[0] < NUMPY_BELOW:
        return _first_true((codes < 0) | (codes >= k))
    return first_out_of_range_kernel(codes, k)


@kernel
def first_not01_kernel(x):
    """Index of the first value that is neither 0 nor 1 (NaN included), else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v == 0 or v == 1):
            return i
    return -1


@kernel
def first_outside01_kernel(x):
    """Index of the first value outside [0, 1] (NaN included), else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v >= 0.0 and v <= 1.0):
            return i
    return -1


@kernel
def first_nonfinite_kernel(x):
    """Index of the first NaN or infinity, else -1."""
    for i in range(x.shape[0]):
        v = x[i]
        if not (v - v == 0.0):
            return i
    return -1


@kernel
def first_out_of_range_kernel(codes, k):
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


_ = np  # numpy is used by the kernels' typing
