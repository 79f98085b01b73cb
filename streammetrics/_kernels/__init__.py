"""Numba kernels: pure functions over arrays, with no validation and no state.

Each kernel can be called on its own (also from a user's own ``@njit`` code);
the public API validates and converts inputs before calling them. The
compilation policy lives in :mod:`streammetrics._kernels._jit`.
"""
