"""Sorting keys into runs, and merging runs, on two threads when large.

A *run* is ``(scores, ab)``: the distinct scores in increasing order and the
positive (``ab[0]``) and negative (``ab[1]``) count at each, ``int64`` without
weights and ``float64`` with them. Each class's keys (:mod:`streammetrics.
_kernels.keys`) are sorted by the radix kernel of :mod:`streammetrics._kernels.
sort` (the two classes at the same time, one on a helper thread: the kernels
release the GIL), and the sorted classes and a run make a run in one merge
pass (cut at a middle key and written from both ends at once when large).
Every way gives the same run, bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..._kernels import keys as KK
from ..._kernels.merges import merge_into, run_into, run_into_weighted
from ..._kernels.sort import sort_keys, sort_payload
from ..._threads import CORES, helper_pool

__all__ = ["sort_classes", "split_sorted", "run_of_sorted", "sorted_run", "merge_runs", "on_two_threads",
           "THREADED_MIN", "NUMPY_MAX", "sort_part"]

#: parts shorter than this are sorted or merged on one thread
THREADED_MIN = 1 << 16
#: up to this many rows are sorted by numpy: a small state's first use then
#: compiles no radix kernel (about a second of a cold start)
NUMPY_MAX = 4096

_NO_RUN = (np.zeros(0, np.float64), np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float64))


def on_two_threads(first, second) -> None:
    """Call ``first()`` on the helper thread and ``second()`` here, at the same time."""
    job = helper_pool().submit(first)
    try:
        second()
    finally:
        job.result()


def sort_part(keys, vals, tk, tv, small: bool) -> None:
    """Sort ``keys`` in place (``vals``, or ``None``, moved along): by numpy's
    stable sort when ``small`` (the same order the stable radix sort gives,
    so equal keys' weights are added in the same order), else by the radix
    kernel with the scratch ``tk``, ``tv``."""
    if small:
        order = np.argsort(keys, kind="stable")
        keys[:] = keys[order]
        if vals is not None:
            vals[:] = vals[order]
    elif vals is None:
        sort_keys(keys, tk)
    else:
        sort_payload(keys, vals, tk, tv)


def sort_classes(keys, front, back, vals=None):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place, each on its own
    (``vals`` moved along), on two threads when both are large. Returns the
    scratch ``(tk, tv)``, free again and at least as long as the longer part
    (``tv`` is ``None`` without weights)."""
    tail = keys.shape[0] - back
    threads = CORES > 1 and min(front, tail) >= THREADED_MIN
    size = front + tail if threads else max(front, tail)
    tk = np.empty(size, np.uint64)
    tv = None if vals is None else np.empty(size, np.float64)
    small = front + tail <= NUMPY_MAX
    at = front if threads else 0
    jobs = [lambda: sort_part(keys[:front], None if vals is None else vals[:front], tk, tv, small),
            lambda: sort_part(keys[back:], None if vals is None else vals[back:], tk[at:],
                              None if tv is None else tv[at:], small)]
    if threads:
        on_two_threads(*jobs)
    else:
        for job in jobs:
            job()
    return tk, tv


def split_sorted(y, s):
    """Label-split and sorted keys ``(keys, n_pos)`` of one batch, or ``None`` when
    the batch holds a label not 0/1 or a score NaN or infinite."""
    keys = np.empty(y.shape[0], np.uint64)
    status, n_pos = KK.split_keys(y, s.view(np.uint64), keys)
    if status:
        return None
    sort_classes(keys, n_pos, n_pos)
    return keys, n_pos


def _trimmed(scores, ab, m):
    """The first ``m`` entries of a run, copied when shorter (freeing the rest)."""
    if m == scores.shape[0]:
        return scores, ab
    return scores[:m].copy(), np.ascontiguousarray(ab[:, :m])


def _cut(s1, kp, kn):
    """Where the middle key of the longest input cuts a run's scores ``s1`` and
    sorted keys: ``(r, i, j)``, the entries of each below it."""
    sizes = (s1.shape[0], kp.shape[0], kn.shape[0])
    longest = int(np.argmax(sizes))
    if longest == 0:
        cut_s = float(s1[sizes[0] // 2])
        cut_k = int(KK.score_keys(np.array([cut_s]))[0])
    else:
        cut_k = int((kp, kn)[longest - 1][sizes[longest] // 2])
        cut_s = KK.key_float(cut_k)
    return (int(np.searchsorted(s1, cut_s)), int(np.searchsorted(kp, np.uint64(cut_k))),
            int(np.searchsorted(kn, np.uint64(cut_k))))


def run_of_sorted(kp, kn, vp=None, vn=None, run=None):
    """The run of sorted positives' keys ``kp`` and negatives' keys ``kn`` (with
    their weights ``vp``, ``vn``), merged with ``run`` if given.

    Without weights and with many rows on two cores, the inputs are cut at a
    middle key and the two sides written at the same time, the lower from the
    start and the upper from the lower side's room on (then moved down).
    """
    if run is None:
        run = (_NO_RUN[0], _NO_RUN[1] if vp is None else _NO_RUN[2])
    s1, ab1 = run
    b1 = s1.view(np.uint64)
    cap = s1.shape[0] + kp.shape[0] + kn.shape[0]
    scores = np.empty(cap, np.float64)
    bits = scores.view(np.uint64)
    if vp is not None:
        ab = np.empty((2, cap), np.float64)
        return _trimmed(scores, ab, run_into_weighted(b1, ab1, kp, vp, kn, vn, bits, ab))
    ab = np.empty((2, cap), np.int64)
    if CORES < 2 or cap < 4 * THREADED_MIN:
        return _trimmed(scores, ab, run_into(b1, ab1, kp, kn, bits, ab))
    r, i, j = _cut(s1, kp, kn)
    room = r + i + j
    out = [0, 0]

    def low():
        out[0] = run_into(b1[:r], ab1[:, :r], kp[:i], kn[:j], bits[:room], ab[:, :room])

    def high():
        out[1] = run_into(b1[r:], ab1[:, r:], kp[i:], kn[j:], bits[room:], ab[:, room:])

    on_two_threads(low, high)
    m_lo, m_hi = int(out[0]), int(out[1])
    if m_lo < room and m_hi:
        bits[m_lo:m_lo + m_hi] = bits[room:room + m_hi]
        ab[:, m_lo:m_lo + m_hi] = ab[:, room:room + m_hi]
    return _trimmed(scores, ab, m_lo + m_hi)


def sorted_run(keys, front, back, vals=None, run=None):
    """The run of positives' keys ``keys[:front]`` and negatives' keys ``keys[back:]``
    (with their weights ``vals``), sorting them in place, merged with ``run`` if given."""
    sort_classes(keys, front, back, vals)
    if vals is None:
        return run_of_sorted(keys[:front], keys[back:], run=run)
    return run_of_sorted(keys[:front], keys[back:], vals[:front], vals[back:], run=run)


def merge_runs(a, b):
    """One run holding two runs (masses of a score in both are added)."""
    cap = a[0].shape[0] + b[0].shape[0]
    scores = np.empty(cap, np.float64)
    ab = np.empty((2, cap), a[1].dtype)
    return _trimmed(scores, ab, merge_into(a[0], a[1], b[0], b[1], scores, ab))
