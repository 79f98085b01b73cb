"""A stable LSD radix sort of 64-bit keys by 8-bit digits, skipping digits every key shares (``np.sort`` inside a
kernel compiles for seconds).
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

_BYTE = np.uint64(255)


@kernel
def _histograms(keys):
    hist = np.zeros((8, 256), np.int64)
    for i in range(keys.shape[0]):
        k = keys[i]
        for p in range(8):
            hist[p, (k >> np.uint64(8 * p)) & _BYTE] += 1
    return hist


@kernel
def _radix(keys, vals, tk, tv, with_vals):
    """Sort ``keys`` (``vals`` along if ``with_vals``) in place with the scratch ``tk``, ``tv``."""
    n = keys.shape[0]
    if n == 0:
        return
    hist = _histograms(keys)
    off = np.empty(256, np.int64)
    sk = keys
    sv = vals
    dk = tk
    dv = tv
    swapped = False
    for p in range(8):
        shift = np.uint64(8 * p)
        if hist[p, (keys[0] >> shift) & _BYTE] == n:
            continue  # every key has the same digit here
        total = 0
        for b in range(256):
            off[b] = total
            total += hist[p, b]
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
