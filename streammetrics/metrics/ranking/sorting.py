"""Sorting keys into runs ``(scores, ab)`` (distinct scores increasing, masses at each), and merging runs."""

from __future__ import annotations

import numpy as np

from ..._kernels.merges import merge_into, run_into
from ..._kernels.sort import sort_keys
from .points import empty_run

NUMPY_MAX = 4096  # weighted rows sorted by numpy up to this many: a small state's first use compiles no radix kernel


def sort_part(keys, vals, tk, tv, small: bool) -> None:
    """Sort ``keys`` in place (``vals`` along). Keys alone: numpy's sort (vectorised where the CPU allows:
    several times faster than the radix kernel). With ``vals``: numpy's stable argsort when ``small``, else the
    radix kernel (an argsort and two gathers take twice its time)."""
    if vals is None:
        keys.sort()
    elif small:
        order = np.argsort(keys, kind="stable")
        keys[:] = keys[order]
        vals[:] = vals[order]
    else:
        sort_keys(keys, tk, vals, tv)


def sort_classes(keys, front, back, vals=None):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place (``vals`` along); returns the scratch ``(tk, tv)``."""
    tail = keys.shape[0] - back
    tk = np.empty(max(front, tail), np.uint64)
    tv = None if vals is None else np.empty(tk.shape[0], np.float64)
    small = front + tail <= NUMPY_MAX
    sort_part(keys[:front], None if vals is None else vals[:front], tk, tv, small)
    sort_part(keys[back:], None if vals is None else vals[back:], tk, tv, small)
    return tk, tv


def _trimmed(scores, ab, m):
    """The first ``m`` entries of a run, its buffers shrunk in place: the second row of ``ab`` moved next to
    the first, then both given back to the allocator past their ends (``resize`` reallocates: a copy of a
    large run into fresh memory costs more than the merge that made it)."""
    cap = scores.shape[0]
    if m == cap:
        return scores, ab
    flat = ab.reshape(-1)
    flat[m : 2 * m] = flat[cap : cap + m]
    del flat
    scores.resize(m, refcheck=False)  # (no other reference: made by the caller, its views dropped)
    ab.resize((2, m), refcheck=False)
    return scores, ab


def run_of_sorted(kp, kn, vp=None, vn=None, run=None):
    """The run of sorted keys ``kp``, ``kn`` (weights ``vp``, ``vn``), merged with ``run`` if given."""
    s1, ab1 = empty_run(vp is not None) if run is None else run
    cap = s1.shape[0] + kp.shape[0] + kn.shape[0]
    scores = np.empty(cap, np.float64)
    ab = np.empty((2, cap), np.int64 if vp is None else np.float64)
    m = run_into(s1.view(np.uint64), ab1, kp, vp, kn, vn, scores.view(np.uint64), ab)
    return _trimmed(scores, ab, m)


def sorted_run(keys, front, back, vals=None, run=None):
    """The run of ``keys[:front]`` (positives) and ``keys[back:]``, sorted in place, merged with ``run``."""
    sort_classes(keys, front, back, vals)
    vp, vn = (None, None) if vals is None else (vals[:front], vals[back:])
    return run_of_sorted(keys[:front], keys[back:], vp, vn, run=run)


def merge_runs(a, b):
    """One run holding two runs (masses of a score in both are added)."""
    cap = a[0].shape[0] + b[0].shape[0]
    scores = np.empty(cap, np.float64)
    ab = np.empty((2, cap), a[1].dtype)
    return _trimmed(scores, ab, merge_into(a[0], a[1], b[0], b[1], scores, ab))
