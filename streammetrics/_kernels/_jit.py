"""The one place where the compilation policy of every kernel is decided.

* Serial kernels are ``njit(cache=True, nogil=True)``: cached on disk so that a
  second process starts warm, and free of the GIL so that callers may run them
  from threads.
* ``fastmath`` stays off everywhere: NaN/inf checks must stay exact and sums must
  not be re-associated, or the same data cut into different batches would give
  different answers.
* Kernels compiled with ``parallel=True`` are *not* cached: a cached parallel
  kernel is tied to the thread count it was compiled for.
"""

from __future__ import annotations

import numba

__all__ = ["kernel", "parallel_kernel"]


def kernel(fn):
    """Compile ``fn`` as a serial, cached, GIL-free Numba kernel."""
    return numba.njit(cache=True, nogil=True)(fn)


def parallel_kernel(fn):
    """Compile ``fn`` as a parallel (``prange``) kernel; never cached."""
    return numba.njit(parallel=True, nogil=True, cache=False)(fn)
