"""Array helpers for the kernels.

A kernel that must allocate uses ``np.empty`` of ``int64`` and fills it here
rather than calling ``np.zeros`` or ``np.full``: each allocation routine of
Numba compiles on its first use in a process (0.1-0.4 s), so a first use that
needs one routine instead of three compiles faster.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline_ir

__all__ = ["filled_int64"]


@inline_ir
def filled_int64(n, value):
    """A new ``int64[n]`` array of ``value``."""
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = value
    return out
