"""The one place where the compilation policy of every kernel is decided.

* Serial kernels are ``njit(cache=True, nogil=True)``: cached on disk, and free
  of the GIL so that callers may run them from threads. No kernel is passed as
  a function value and helpers get no Python wrapper: wrappers nobody calls
  are compile time for nothing.
* A kernel whose loop differs by a flag known at the call (weighted or not) is
  made twice from one factory whose flag is a constant of the closure, so a
  first use compiles only its own loop.
* ``fastmath`` stays off: NaN/inf checks stay exact and sums are not
  re-associated (batching must not change an answer).
* Parallel kernels are never cached (Numba refuses to); :class:`Dual` keeps a
  serial, cached twin for small problems.

Numba's cache checks only the kernel's own source file, so an edited helper of
another file leaves stale machine code. The test run points ``NUMBA_CACHE_DIR``
at ``.numba-cache/<hash of every kernel source>`` (root ``conftest.py``); a
contributor outside it does the same, or removes the package's ``__pycache__``.
"""

from __future__ import annotations

import numba

__all__ = ["kernel", "inline", "inline_ir", "parallel_kernel", "named", "Dual", "SERIAL_WORK"]


def kernel(fn):
    """Compile ``fn`` as a serial, cached, GIL-free Numba kernel."""
    return numba.njit(cache=True, nogil=True, no_cfunc_wrapper=True)(fn)


def named(fn, name: str, doc: str | None = None):
    """``fn``, a factory's closure, named ``name`` (its file in Numba's cache
    too, which is keyed by the qualified name: each kernel of one factory
    gets its own) with the docstring ``doc`` if given."""
    fn.__name__ = fn.__qualname__ = name
    if doc is not None:
        fn.__doc__ = doc
    return fn


def inline(fn):
    """Compile ``fn`` as a small helper of the kernels: compiled once per argument
    type as a function of its own, which LLVM inlines into its callers."""
    return numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)


def inline_ir(fn):
    """Compile ``fn`` into each caller by copying its IR there (``inline="always"``):
    for a helper with one call site per kernel."""
    return numba.njit(cache=True, nogil=True, inline="always")(fn)


def parallel_kernel(fn):
    """Compile ``fn`` as a parallel (``prange``) kernel; never cached."""
    return numba.njit(parallel=True, nogil=True, cache=False)(fn)


#: work (distance evaluations times features) below which a :class:`Dual` kernel
#: runs serially until its parallel twin is compiled (about a second of work)
SERIAL_WORK = 1e10


class Dual:
    """One kernel compiled twice from one factory: ``serial`` (cached) and
    ``parallel`` (``prange``, compiled in each process); same results."""

    def __init__(self, serial, parallel):
        self.serial = serial
        self.parallel = parallel
        self.py_func = parallel.py_func
        self.__doc__ = parallel.py_func.__doc__
        self.__name__ = parallel.py_func.__name__

    def pick(self, work: float):
        """The parallel twin when it is compiled already or ``work`` exceeds
        :data:`SERIAL_WORK`; else the serial one."""
        if work > SERIAL_WORK or self.parallel.signatures:
            return self.parallel
        return self.serial
