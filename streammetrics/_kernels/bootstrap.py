"""Counter-based Poisson(1) weights for the keyed bootstrap.

A row's weight in replicate ``r`` is a pure function of ``(seed, key, r)``:
the three are mixed into 64 bits with splitmix64's finaliser, the top 53 bits
give a uniform in (0, 1), and Poisson(1)'s inverse CDF turns it into a count.
No generator state is carried from row to row, so any batching, sharding or
order of the rows gives every row the same weights.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, kernel

__all__ = ["POISSON1_CDF", "poisson_weights"]


def _poisson1_cdf(kmax: int = 20) -> np.ndarray:
    p = [math.exp(-1.0) / math.factorial(k) for k in range(kmax + 1)]
    return np.cumsum(np.array(p, np.float64))


#: P(X <= k) for X ~ Poisson(1), k = 0..20 (P(X > 20) is below 2**-53)
POISSON1_CDF = _poisson1_cdf()


@inline
def _mix(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@kernel
def poisson_weights(seed, keys, first, r0, w, out, cdf):
    """Fill ``out`` (replicates ``r0, r0 + 1, ...`` x rows) with Poisson(1) weights times ``w``.

    ``keys`` holds one int64 key per row; when it is empty the keys are
    ``first, first + 1, ...`` (the rows' positions in the stream). ``w`` holds
    the rows' own weights, or is empty (weights of 1).
    """
    R, m = out.shape
    keyed = keys.shape[0] > 0
    weighted = w.shape[0] > 0
    kmax = cdf.shape[0] - 1
    golden = np.uint64(0x9E3779B97F4A7C15)
    rstep = np.uint64(0xD1B54A32D192ED03)
    s = _mix(np.uint64(seed) * golden + np.uint64(0x632BE59BD9B4E019))
    scale = 1.0 / 9007199254740992.0  # 2**-53
    h = np.empty(m, np.uint64)
    for i in range(m):
        if keyed:
            key = np.uint64(keys[i])
        else:
            key = np.uint64(first + i)
        h[i] = _mix(s ^ (key * golden))
    for r in range(R):
        step = np.uint64(r0 + r + 1) * rstep
        row = out[r]
        for i in range(m):
            x = _mix(h[i] + step)
            u = (np.float64(x >> np.uint64(11)) + 0.5) * scale
            # branch-free for the first 8 counts (all but 1e-5 of draws), then the tail
            k = 0
            for j in range(8):
                k += u > cdf[j]
            if k == 8:
                while k < kmax and u > cdf[k]:
                    k += 1
            row[i] = k * w[i] if weighted else np.float64(k)
