"""Score keys: float64 bits made 64-bit integers that sort as the scores (``-0.0`` as ``+0.0``). Validating kernels
split a batch by label (positives to the front, negatives to the back of free slots) and return a status: ``0``
valid, ``1`` a label not 0/1, ``2`` a score NaN or infinite.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline_ir, kernel

SIGN = np.uint64(0x8000000000000000)
ZERO = np.uint64(0)
EXPONENT = np.uint64(0x7FF0000000000000)
TOP = np.uint64(0xFFFFFFFFFFFFFFFF)  # above every key: the key of no score


@inline_ir
def key_of(bits):
    """Order-preserving integer key of float64 bits (``-0.0`` as ``+0.0``)."""
    if bits == SIGN:
        bits = ZERO
    mask = ZERO - (bits >> np.uint64(63))  # all ones for negatives
    return bits ^ (mask | SIGN)


@inline_ir
def bits_of(k):
    """The float64 bits of a key (the inverse of :func:`key_of`)."""
    if k & SIGN:
        return k ^ SIGN
    return ~k


@kernel
def key_bits(bits):
    """The keys of float64 scores given as their bits (``scores.view(np.uint64)``)."""
    out = np.empty(bits.shape[0], np.uint64)
    for i in range(bits.shape[0]):
        out[i] = key_of(bits[i])
    return out


@kernel
def keys_as_bits(keys, out):
    """The float64 bits of ``keys`` into ``out`` (``scores.view(np.uint64)``)."""
    for i in range(keys.shape[0]):
        out[i] = bits_of(keys[i])


def score_keys(scores):
    """The keys of float64 scores."""
    return key_bits(np.ascontiguousarray(scores, dtype=np.float64).view(np.uint64))


@kernel
def append_split(y, bits, w, keys, vals, front, back):
    """Validate one batch and write its keys into the free slots ``keys[front:back]`` (positives up from ``front``,
    negatives down from ``back``), weights ``w`` into ``vals`` (both ``None`` unweighted: a compiled loop of its own;
    rows of weight 0 are dropped); returns ``(status, front, back)``, the old bounds for a bad batch.
    """
    f = front
    b = back - 1
    bad_y = False
    bad_s = False
    for i in range(y.shape[0]):
        yi = y[i]
        y1 = yi == 1
        bad_y |= not (y1 or yi == 0)
        bi = bits[i]
        bad_s |= (bi & EXPONENT) == EXPONENT  # NaN or +-inf: every exponent bit set
        # written to both ends of the free slots, one end advanced: no branch on the label
        k = key_of(bi)
        keys[f] = k
        keys[b] = k
        keep = True
        if w is not None:
            keep = w[i] != 0.0
            vals[f] = w[i]
            vals[b] = w[i]
        f += y1 and keep
        b -= (not y1) and keep
    if bad_y or bad_s:
        return 1 if bad_y else 2, front, back
    return 0, f, b + 1
