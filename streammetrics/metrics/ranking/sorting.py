"""Sorting scores and counting pairs on two threads.

Both classes of a batch are sorted at the same time on two threads (the
sorts release the GIL): keys alone as float64 by numpy, each thread one side
of a median cut of both classes; keys with weights by the radix kernels, one
class per thread. A large count of ``2U`` cuts the scores at a middle key and
counts the two sides at once. Either way the result is the same as on one
thread, bit for bit.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..._kernels import rank as K
from ..._kernels.sort import sort_keys
from ..._threads import CORES, helper_pool

__all__ = ["sort_classes", "u2_across", "run_into_across", "auc_u2_scores", "split_sorted", "key_float", "keys_sorter", "CORES",
           "THREADED_MIN", "NUMPY_MAX", "u2_sorted", "u2_sorted_numpy", "run_of_keys_numpy"]


THREADED_MIN = 1 << 16

#: Sorted keys of at most this many rows in all are counted (``2U``) and made
#: into a run by numpy rather than by a kernel: at that size both take a few
#: microseconds, and a first use on a small state compiles neither kernel
#: (0.1-0.25 s apiece on a cold start). The same integers and the same run.
NUMPY_MAX = 4096

_SIGN = np.uint64(1 << 63)


def u2_sorted_numpy(kp, kn) -> int:
    """``2U`` of sorted ``kp`` (positives) and ``kn`` (negatives), keys or
    float64 scores, by numpy: each positive counts the negatives below it
    twice and those equal to it once (``left + right`` insertion points)."""
    return int(np.searchsorted(kn, kp, "left").sum() + np.searchsorted(kn, kp, "right").sum())


def u2_sorted(kp, kn) -> int:
    """``2U`` of sorted ``kp``, ``kn`` as a Python int (needs ``2 n_pos n_neg <
    2**63``): :func:`u2_sorted_numpy` up to :data:`NUMPY_MAX` rows, else the
    one-pass kernel. The same integer either way."""
    if kp.shape[0] + kn.shape[0] <= NUMPY_MAX:
        return u2_sorted_numpy(kp, kn)
    return int(K.u2_sorted(kp, kn))


def run_of_keys_numpy(kp, kn, bits, ab) -> int:
    """:func:`~streammetrics._kernels.rank.run_into` of no run and sorted keys
    ``kp``, ``kn``, by numpy: the distinct keys' float64 bits into ``bits`` and
    their positive and negative counts into ``ab``; returns the run's length."""
    keys, inverse = np.unique(np.concatenate((kp, kn)), return_inverse=True)
    m = keys.shape[0]
    # a key's float64 bits: the sign bit flipped back for a positive score,
    # every bit for a negative one (the inverse of the kernels' key)
    bits[:m] = np.where(keys & _SIGN, keys ^ _SIGN, ~keys)
    inverse = inverse.reshape(-1)
    ab[0, :m] = np.bincount(inverse[:kp.shape[0]], minlength=m)
    ab[1, :m] = np.bincount(inverse[kp.shape[0]:], minlength=m)
    return m


_pool_lock = threading.Lock()  # the sort choice is measured once

#: the helper thread that sorts one half while the caller sorts the other
_sort_pool = helper_pool


#: how keys alone are sorted when large: ``"numpy"`` (``np.sort``) or ``"radix"``
#: (the LSD radix kernel); ``None`` until measured, once per process, at the
#: first large sort (:func:`keys_sorter`). Either gives the same sorted keys.
SORT_CHOICE = None

_SAMPLE = 1 << 17


def _timed(fn, arr, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        a = arr.copy()
        t0 = time.perf_counter()
        fn(a)
        best = min(best, time.perf_counter() - t0)
    return best


def keys_sorter() -> str:
    """The faster sort of 64-bit keys on this machine, measured once per
    process on a sample of random float keys (best of three each; the radix
    kernel when it takes under three quarters of numpy's time): numpy's
    vectorised sort is several times faster than the radix kernel on CPUs
    with wide SIMD units, and slower on others. The sorts themselves ask only
    after numpy has sorted :data:`RADIX_TRIAL_KEYS` large keys in the process
    (the measurement compiles the radix kernel)."""
    global SORT_CHOICE
    if SORT_CHOICE is None:
        with _pool_lock:
            if SORT_CHOICE is None:
                sample = K.score_keys(np.random.default_rng(0).normal(size=_SAMPLE))
                scratch = np.empty(_SAMPLE, np.uint64)
                radix = _timed(lambda a: sort_keys(a, scratch), sample)
                numpy_ = _timed(_sort_as_floats, sample)
                # numpy's unless the radix kernel is clearly faster (a busy
                # machine makes a small sample's timings noisy)
                SORT_CHOICE = "radix" if radix < 0.75 * numpy_ else "numpy"
    return SORT_CHOICE


#: large keys sorted by numpy in a process before the radix kernel is measured
#: against it: the measurement compiles the kernel (one to three seconds of a
#: first run), repaid only when many keys are sorted; until then numpy's sort,
#: which gives the same keys, costs at most about 0.1 s more on a machine
#: where the radix kernel is twice as fast (on this project's, it is not faster)
RADIX_TRIAL_KEYS = 1 << 24

_numpy_sorted = 0  # large keys sorted by numpy before the measurement (a heuristic's count)


def _radix_sorts(n: int) -> bool:
    """Whether a large part of ``n`` keys alone is radix-sorted (else numpy's sort)."""
    global _numpy_sorted
    if SORT_CHOICE is None and _numpy_sorted < RADIX_TRIAL_KEYS:
        _numpy_sorted += n  # two threads may race here: the trial comes a part later
        return False
    return keys_sorter() == "radix"


def _sort_as_floats(*parts) -> None:
    """Sort each part of keys in place by numpy's sort of their scores as float64
    (which it sorts faster than uint64 on this project's machines: 0.7 of the
    time on 7M keys), made floats and keys again by one pass each."""
    for part in parts:
        if part.shape[0] < THREADED_MIN:
            part.sort()
            continue
        K.floats_below(part, _NO_KEY)
        _sort_floats_into_keys(part)


def _sort_floats_into_keys(part) -> None:
    """Sort float64 bits (as :func:`K.floats_below` leaves them) and make them keys."""
    part.view(np.float64).sort()
    K.float_keys(part)


_NO_KEY = np.uint64(0)  # below every key: :func:`K.floats_below` moves none


def _sort_keys_alone(part, scratch=None):
    if part.shape[0] >= THREADED_MIN and _radix_sorts(part.shape[0]):
        sort_keys(part, np.empty(part.shape[0], np.uint64) if scratch is None else scratch)
    else:
        _sort_as_floats(part)


def _sort_halves(pos, neg) -> None:
    """Sort both classes' keys on two threads in equal shares: both are cut at
    the median key of a sample (:func:`K.floats_below`, which makes them floats
    too), and each thread sorts one side of the cut of both classes, so a
    larger class does not leave one thread waiting for the other. Each class's
    two sides, sorted, are its keys sorted."""
    step = max(1, (pos.shape[0] + neg.shape[0]) // 4096)
    sample = np.concatenate((pos[::step], neg[::step]))
    if not sample.shape[0]:
        return
    cut = np.partition(sample, sample.shape[0] // 2)[sample.shape[0] // 2]
    i = int(K.floats_below(pos, cut))
    j = int(K.floats_below(neg, cut))

    def side(p, n):
        _sort_floats_into_keys(p)
        _sort_floats_into_keys(n)

    job = _sort_pool().submit(side, pos[:i], neg[:j])
    try:
        side(pos[i:], neg[j:])
    finally:
        job.result()


def sort_classes(keys, front, back, vals=None, threads=None):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place, each on its own
    (``vals`` moved along). With ``vals``, returns the scratch ``(tk, tv)``,
    free again and at least as long as the longer part; without, ``(None, None)``.

    Keys alone are sorted by numpy's sort of their scores as float64
    (vectorised, nothing to compile; :func:`_sort_as_floats`) or, for large
    parts on a machine where it measured faster, by the radix kernel
    (:func:`keys_sorter`); keys with their weights by the radix sort of
    :mod:`streammetrics._kernels.sort` (three to six times faster than
    ``np.argsort`` and a gather there), or up to :data:`NUMPY_MAX` rows by
    numpy's stable ``argsort`` (the same order, nothing to compile). With
    ``threads`` (by default: when there are two cores and the smaller part is
    large) two threads sort at the
    same time (the sorts release the GIL): numpy's, each one side of a median
    cut of both classes (:func:`_sort_halves`); the radix kernel's, one class
    each. The result is the same either way.
    """
    tail = keys.shape[0] - back
    if threads is None:
        threads = CORES > 1 and min(front, tail) >= THREADED_MIN
    if vals is None:
        pos, neg = keys[:front], keys[back:]
        if not threads:
            _sort_keys_alone(pos)
            _sort_keys_alone(neg)
            return None, None
        if not _radix_sorts(front + tail):
            _sort_halves(pos, neg)
            return None, None
        job = _sort_pool().submit(_sort_keys_alone, pos)
        try:
            _sort_keys_alone(neg)
        finally:
            job.result()
        return None, None
    if not threads:
        tk = np.empty(max(front, tail), np.uint64)
        tv = np.empty(tk.shape[0], np.float64)
        if front + tail <= NUMPY_MAX:
            # numpy's stable order moves the weights of equal keys as the
            # (stable) radix sort does, so they are summed in the same order
            for part_k, part_v in ((keys[:front], vals[:front]), (keys[back:], vals[back:])):
                order = np.argsort(part_k, kind="stable")
                part_k[:] = part_k[order]
                part_v[:] = part_v[order]
        else:
            K.sort_parts_payload(keys, vals, front, back, tk, tv)
        return tk, tv
    # separate scratch for the two parts
    tk = np.empty(front + tail, np.uint64)
    tv = np.empty(front + tail, np.float64)
    job = _sort_pool().submit(K.sort_payload, keys[:front], vals[:front], tk[:front], tv[:front])
    try:
        K.sort_payload(keys[back:], vals[back:], tk[front:], tv[front:])
    finally:
        job.result()
    return tk, tv


def key_float(k: int) -> float:
    """The float64 score of a key (the inverse of the kernels' ``_key``)."""
    bits = k ^ (1 << 63) if k >> 63 else ~k & 0xFFFFFFFFFFFFFFFF
    return float(np.array(bits, np.uint64).view(np.float64))


def u2_across(run, kp, kn, threads=None):
    """``(2U, n_pos, n_neg)`` of a run of counts and sorted keys ``kp``, ``kn``
    together, as Python ints; needs ``2 n_pos n_neg < 2**63``.

    With ``threads`` (by default: two cores and many rows) the scores are cut
    at the middle key of the longest input and the two sides are counted at
    the same time: ``2U`` is the two sides' plus twice the pairs of a positive
    above the cut and a negative below it. The same integer either way.
    """
    s1, ab1 = run
    sizes = (s1.shape[0], kp.shape[0], kn.shape[0])
    if threads is None:
        threads = CORES > 1 and sum(sizes) >= 4 * THREADED_MIN
    if sizes[0] == 0:  # no run: the two-way count (faster than the three-way one)
        def count(b1, ab1, kp, kn):
            return u2_sorted(kp, kn), kp.shape[0], kn.shape[0]
    else:
        count = K.u2_run_keys
    b1 = s1.view(np.uint64)
    if not threads or max(sizes) == 0:
        return tuple(int(v) for v in count(b1, ab1, kp, kn))
    r, i, j = _cut(run, kp, kn)
    job = _sort_pool().submit(count, b1[:r], ab1[:, :r], kp[:i], kn[:j])
    try:
        u2_hi, p_hi, n_hi = count(b1[r:], ab1[:, r:], kp[i:], kn[j:])
    finally:
        u2_lo, p_lo, n_lo = job.result()
    u2 = int(u2_lo) + int(u2_hi) + 2 * int(p_hi) * int(n_lo)
    return u2, int(p_lo) + int(p_hi), int(n_lo) + int(n_hi)


def _cut(run, kp, kn):
    """Where a middle key cuts a run and sorted keys: ``(r, i, j)``, the
    entries of each below the cut (the run's ``s1 < cut``, the keys' ``< cut``),
    with the cut the middle key of the longest input."""
    s1 = run[0]
    sizes = (s1.shape[0], kp.shape[0], kn.shape[0])
    longest = int(np.argmax(sizes))
    if longest == 0:
        cut_s = float(s1[sizes[0] // 2])
        cut_k = int(K.score_keys(np.array([cut_s]))[0])
    else:
        cut_k = int((kp, kn)[longest - 1][sizes[longest] // 2])
        cut_s = key_float(cut_k)
    return (int(np.searchsorted(s1, cut_s)), int(np.searchsorted(kp, np.uint64(cut_k))),
            int(np.searchsorted(kn, np.uint64(cut_k))))


def run_into_across(run, kp, kn, bits, ab, threads=None):
    """:func:`~streammetrics._kernels.rank.run_into` of a run of counts and
    sorted keys ``kp``, ``kn`` into ``bits``, ``ab``; returns the run's length.

    With ``threads`` (by default: two cores and many rows) the inputs are cut
    at a middle key (as :func:`u2_across` cuts them) and the two sides are
    written at the same time, the lower from the start of ``bits``, ``ab``
    and the upper from the lower side's room on; the upper side is moved
    down when the lower one held repeated scores. The same run either way.
    """
    s1, ab1 = run
    b1 = s1.view(np.uint64)
    total = s1.shape[0] + kp.shape[0] + kn.shape[0]
    if threads is None:
        threads = CORES > 1 and total >= 4 * THREADED_MIN
    if s1.shape[0] == 0 and total <= NUMPY_MAX:
        return run_of_keys_numpy(kp, kn, bits, ab)
    if not threads or total == 0:
        return int(K.run_into(b1, ab1, kp, kn, bits, ab))
    r, i, j = _cut(run, kp, kn)
    room = r + i + j
    job = _sort_pool().submit(K.run_into, b1[:r], ab1[:, :r], kp[:i], kn[:j], bits[:room], ab[:, :room])
    try:
        m_hi = int(K.run_into(b1[r:], ab1[:, r:], kp[i:], kn[j:], bits[room:], ab[:, room:]))
    finally:
        m_lo = int(job.result())
    if m_lo < room and m_hi:
        bits[m_lo:m_lo + m_hi] = bits[room:room + m_hi]
        ab[:, m_lo:m_lo + m_hi] = ab[:, room:room + m_hi]
    return m_lo + m_hi


def _sort_and_count(part_p, part_n):
    part_p.sort()
    part_n.sort()
    return u2_sorted(part_p, part_n)


def auc_u2_scores(y, s, threads=None):
    """``(2U, n_pos)`` of one batch as Python ints, or ``None`` when the kernel
    rejected it (a label not 0/1, a score NaN or infinite); needs ``2 n_pos
    n_neg < 2**63``.

    The scores are split by label as float64 (:func:`~streammetrics._kernels.
    rank.split_scores`) and sorted by numpy. With ``threads`` (by default: two
    cores and many rows) both classes are first cut at the median of a sample
    of the scores, and each side's two classes are sorted and counted on its
    own thread: ``2U`` is the sides' plus twice the positives above the cut
    times the negatives below it. The same integer either way.
    """
    n = y.shape[0]
    vals = np.empty(n, np.float64)
    status, n_pos = K.split_scores(y, s.view(np.uint64), vals.view(np.uint64))
    if status:
        return None
    fp, fn = vals[:n_pos], vals[n_pos:]
    if threads is None:
        threads = CORES > 1 and n >= 4 * THREADED_MIN
    if not threads or n_pos == 0 or n_pos == n:
        return int(_sort_and_count(fp, fn)), int(n_pos)
    cut = float(np.median(vals[:: max(1, n // 4096)]))
    i = int(K.partition_below(fp, cut))
    j = int(K.partition_below(fn, cut))
    job = _sort_pool().submit(_sort_and_count, fp[:i], fn[:j])
    try:
        u2_hi = int(_sort_and_count(fp[i:], fn[j:]))
    finally:
        u2_lo = int(job.result())
    return u2_lo + u2_hi + 2 * (int(n_pos) - i) * j, int(n_pos)


def split_sorted(y, s):
    """Label-split and sorted keys ``(keys, n_pos)`` of a batch, or ``None``
    when the kernel rejected it (a label not 0/1, a score NaN or infinite)."""
    n = y.shape[0]
    keys = np.empty(n, np.uint64)
    status, n_pos = K.split_keys(y, s.view(np.uint64), keys)
    if status:
        return None
    sort_classes(keys, n_pos, n_pos)
    return keys, n_pos

