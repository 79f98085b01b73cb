"""A stable LSD radix sort of 64-bit keys by 8-bit digits, skipping digits every key shares (``np.sort`` inside a
kernel compiles for seconds).
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel

_BYTE = np.uint64(255)


@inline
def _histograms(keys, hist):
    """Count the keys' digits into ``hist``: digit ``d`` of place ``p`` at ``hist[256 p + d]``."""
    for j in range(hist.shape[0]):  # (a loop: np.zeros and a 2-D array each compile on their own)
        hist[j] = 0
    for i in range(keys.shape[0]):
        k = keys[i]
        for p in range(8):
            hist[np.uint64(256 * p) + ((k >> np.uint64(8 * p)) & _BYTE)] += 1


@inline
def _radix(keys, vals, tk, tv, with_vals):
    """Sort ``keys`` (``vals`` along if ``with_vals``) in place with the scratch ``tk``, ``tv``."""
    n = keys.shape[0]
    if n == 0:
        return
    hist = np.empty(8 * 256, np.int64)
    _histograms(keys, hist)
    off = np.empty(256, np.int64)
    sk = keys
    sv = vals
    dk = tk
    dv = tv
    swapped = False
    for p in range(8):
        shift = np.uint64(8 * p)
        if hist[np.uint64(256 * p) + ((keys[0] >> shift) & _BYTE)] == n:
            continue  # every key has the same digit here
        total = 0
        for b in range(256):
            off[b] = total
            total += hist[256 * p + b]
        for i in range(n):
            k = sk[i]
            d = (k >> shift) & _BYTE
            j = off[d]
            dk[j] = k
            if with_vals:
                dv[j] = sv[i]
            off[d] = j + 1
        sk, dk = dk, sk
        sv, dv = dv, sv
        swapped = not swapped
    if swapped:  # the sorted keys are in the scratch: copy them back
        for i in range(n):
            keys[i] = sk[i]
            if with_vals:
                vals[i] = sv[i]


def sort_keys(keys, tk, vals, tv):
    """Sort ``keys`` (uint64) in place, moving ``vals`` along unless it is ``None``; ``tk``, ``tv`` are scratch."""
    sort_blocks(keys, tk, vals, tv, np.array([0, keys.shape[0]]))


@kernel
def sort_blocks(keys, tk, vals, tv, starts):
    """Sort each block ``keys[starts[t]:starts[t + 1]]`` in place, ``vals`` along unless it is ``None``."""
    for t in range(starts.shape[0] - 1):
        a = starts[t]
        b = starts[t + 1]
        if b - a > 1:
            if vals is None:
                _radix(keys[a:b], keys[a:b], tk, tk, False)
            else:
                _radix(keys[a:b], vals[a:b], tk, tv, True)
