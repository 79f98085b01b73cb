"""The one place where the compilation policy of every kernel is decided.

* Serial kernels are ``njit(cache=True, nogil=True)``: cached on disk so that a
  second process starts warm, and free of the GIL so that callers may run them
  from threads.
* No kernel is passed as a first-class function value, so none gets the C
  callback wrapper Numba would otherwise build and optimise for each; the
  helpers of :func:`inline`, called from kernels only, get no Python wrapper
  either: wrappers nobody calls are compile time for nothing.
* A kernel whose loop differs by a flag known at the call (weighted rows or
  not, 0/1 predictions or scores) is made twice from one factory whose flag is
  a constant of the closure: Numba prunes the branches of the other value, so
  a first use compiles only its own loop, and a caller picks the kernel by
  the flag.
* ``fastmath`` stays off everywhere: NaN/inf checks must stay exact and sums must
  not be re-associated, or the same data cut into different batches would give
  different answers.
* Kernels compiled with ``parallel=True`` are *not* cached (Numba refuses to
  cache a parallel region, and a cached parallel kernel was once tied to the
  thread count it was compiled for), so every process compiles them again, in
  seconds. :class:`Dual` compiles one function both ways: a small problem runs
  the serial, cached twin and never pays that compile.

Numba's cache checks only the source file of the kernel it loads: a kernel
that inlines a helper of another file (every :func:`inline` and
:func:`inline_ir` helper is one) keeps its old machine code after that helper
is edited, until the cache is wiped. The test run never meets such stale
code: the root ``conftest.py`` points ``NUMBA_CACHE_DIR`` at
``.numba-cache/<key>``, ``<key>`` a hash of every kernel source of the package
(each module of this folder, and any other that names Numba), so any edit of
any of them compiles into a fresh folder. Outside the test run, a
contributor who edits a helper sets ``NUMBA_CACHE_DIR`` the same way, or
removes the ``__pycache__`` folders of the package.
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
    """Compile ``fn`` as a small helper of the kernels.

    It is compiled (and cached) once per argument type as a function of its
    own, and LLVM inlines it into its callers' machine code. Numba's
    ``inline="always"`` would instead copy its IR into every call site and
    type each copy again: the same machine code, compiled slower in the
    kernels with many call sites (the compensated sums)."""
    return numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)


def inline_ir(fn):
    """Compile ``fn`` into each caller by copying its IR there (Numba's
    ``inline="always"``): for a helper with one call site in each kernel that
    uses it. Compiled as a function of its own, such a helper would be
    optimised again inside every kernel that links it. A helper with many call sites
    stays :func:`inline` (copied, its body is typed again at each)."""
    return numba.njit(cache=True, nogil=True, inline="always")(fn)


def parallel_kernel(fn):
    """Compile ``fn`` as a parallel (``prange``) kernel; never cached."""
    return numba.njit(parallel=True, nogil=True, cache=False)(fn)


#: Work (distance evaluations times features) below which a :class:`Dual`
#: kernel runs serially until its parallel twin has been compiled: about a
#: second of serial work, less than compiling the parallel twin takes (in
#: every process, since it is never cached).
SERIAL_WORK = 1e10


class Dual:
    """One kernel compiled twice: ``serial`` (cached on disk) and ``parallel``
    (``prange`` on every core; compiled anew in each process).

    Both are made from one source (a factory that binds ``prange`` and the
    threading calls, or their serial stand-ins, so the serial twin references
    no threading call and Numba can cache it); they give the same result, and
    :meth:`pick` chooses the twin for a problem of a given size.
    """

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
