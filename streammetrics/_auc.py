"""The area under the ROC curve: the Mann–Whitney U of the positive class.

``AUC = U_pos / safe(n_pos * n_neg)`` with midranks, so tied scores count one
half and a single-class input gives 0 (the specification's guard; scikit-learn
warns and returns NaN instead). The one-shot functions and :class:`RankAUC`
compute U exactly (an integer count when unweighted) from sorted scores; the
ROC and precision-recall curves come from the same sorted state.
"""

from __future__ import annotations

import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._base import Accumulator
from ._kernels import rank as K
from ._result import Result, safe
from ._validation import (
    _to_numpy,
    as_labels01,
    as_reals,
    as_weights,
    check_same_length,
    raise_bad_labels,
    raise_nonfinite,
)

__all__ = ["RankAUC", "auc", "roc_curve", "pr_curve", "average_precision"]

_INT64_LIMIT = 2**63
_TARGET = 1.0
_BUDGET = 3.0
_MASS = 6.0
_SLACK = 1e-9  # relative widening of a binned interval computed in rounded floats
_FINE = 4.0  # a sorted slice is grouped at this fraction of the bins' limits


# ------------------------------------------------------------ input handling
def _as_labels(y, name: str = "y") -> np.ndarray:
    """0/1 labels from a vector, or from the specification's n x 2 one-hot matrix."""
    arr = _to_numpy(y, name)
    if arr.ndim == 2 and arr.dtype.kind in "biuf" and not (arr.shape[1] == 1):
        if arr.shape[1] != 2:
            raise ValueError(
                f"a 2-D {name} must be the n x 2 one-hot membership matrix "
                f"(column 0 negative, column 1 positive), got shape {arr.shape}"
            )
        g0, g1 = arr[:, 0], arr[:, 1]
        ok = ((g0 == 1) & (g1 == 0)) | ((g0 == 0) & (g1 == 1))
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(
                f"{name}[{i}] = {arr[i].tolist()}: each row of the membership matrix "
                "must be one-hot, [1, 0] (negative) or [0, 1] (positive)"
            )
        return as_labels01(np.ascontiguousarray(g1), name)
    return as_labels01(arr, name)


def _prepare(y, s, sample_weight):
    y = _as_labels(y, "y")
    s = as_reals(s, "s")
    n = check_same_length(y=y, s=s)
    w = as_weights(sample_weight, n)
    return y, s, w, n


def _raise_batch_error(y, s) -> None:
    raise_bad_labels("y", y)
    raise_nonfinite("s", s, "scores")
    raise AssertionError("a kernel rejected the batch but no bad value was found")


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_CORES = _cpu_count()
# Both classes are sorted at once, one on a worker thread (the kernels release
# the GIL), when the smaller one has at least this many rows: below it the
# hand-off costs more than it saves.
_THREADED_MIN = 1 << 16
_pool_lock = threading.Lock()
_pool = None  # (pid, executor): a forked child makes its own


def _sort_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="streammetrics-sort"))
        return _pool[1]


def _sort_classes(keys, front, back, vals=None, threads=None):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place, each on its own
    (``vals`` moved along); returns the scratch ``(tk, tv)``, free again and
    at least as long as the longer part (``tv`` is ``None`` without ``vals``).

    With ``threads`` (by default: when there are two cores and the smaller
    part is large) the two parts are sorted at the same time, the smaller on
    a worker thread; the result is the same either way.
    """
    tail = keys.shape[0] - back
    if threads is None:
        threads = _CORES > 1 and min(front, tail) >= _THREADED_MIN
    if not threads:
        tk = np.empty(max(front, tail), np.uint64)
        if vals is None:
            K.sort_parts(keys, front, back, tk)
            return tk, None
        tv = np.empty(tk.shape[0], np.float64)
        K.sort_parts_payload(keys, vals, front, back, tk, tv)
        return tk, tv
    # separate scratch for the two parts
    tk = np.empty(front + tail, np.uint64)
    if vals is None:
        tv = None
        job = _sort_pool().submit(K.sort_keys, keys[:front], tk[:front])
        try:
            K.sort_keys(keys[back:], tk[front:])
        finally:
            job.result()
    else:
        tv = np.empty(front + tail, np.float64)
        job = _sort_pool().submit(K.sort_payload, keys[:front], vals[:front], tk[:front], tv[:front])
        try:
            K.sort_payload(keys[back:], vals[back:], tk[front:], tv[front:])
        finally:
            job.result()
    return tk, tv


def _key_float(k: int) -> float:
    """The float64 score of a key (the inverse of the kernels' ``_key``)."""
    bits = k ^ (1 << 63) if k >> 63 else ~k & 0xFFFFFFFFFFFFFFFF
    return float(np.array(bits, np.uint64).view(np.float64))


def _u2_across(run, kp, kn, threads=None):
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
        threads = _CORES > 1 and sum(sizes) >= 4 * _THREADED_MIN
    if not threads or max(sizes) == 0:
        return tuple(int(v) for v in K.u2_run_keys(s1, ab1, kp, kn))
    longest = int(np.argmax(sizes))
    if longest == 0:
        cut_s = float(s1[sizes[0] // 2])
        cut_k = int(K.score_keys(np.array([cut_s]))[0])
    else:
        cut_k = int((kp, kn)[longest - 1][sizes[longest] // 2])
        cut_s = _key_float(cut_k)
    r = int(np.searchsorted(s1, cut_s))
    i = int(np.searchsorted(kp, np.uint64(cut_k)))
    j = int(np.searchsorted(kn, np.uint64(cut_k)))
    job = _sort_pool().submit(K.u2_run_keys, s1[:r], ab1[:, :r], kp[:i], kn[:j])
    try:
        u2_hi, p_hi, n_hi = K.u2_run_keys(s1[r:], ab1[:, r:], kp[i:], kn[j:])
    finally:
        u2_lo, p_lo, n_lo = job.result()
    u2 = int(u2_lo) + int(u2_hi) + 2 * int(p_hi) * int(n_lo)
    return u2, int(p_lo) + int(p_hi), int(n_lo) + int(n_hi)


def _split_sorted(y, s):
    """Validated, label-split and sorted keys: ``(keys, n_pos)``."""
    n = y.shape[0]
    keys = np.empty(n, np.uint64)
    status, n_pos = K.split_keys(y, s, keys)
    if status:
        _raise_batch_error(y, s)
    _sort_classes(keys, n_pos, n_pos)
    return keys, n_pos


def _trimmed(scores, ab, m):
    """The first ``m`` entries of a run, copied when shorter (freeing the rest)."""
    if m == scores.shape[0]:
        return scores, ab
    return scores[:m].copy(), np.ascontiguousarray(ab[:, :m])


_NO_RUN = (np.zeros(0, np.float64), np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float64))


def _run_of_sorted(kp, kn, vp=None, vn=None, run=None):
    """The run ``(scores, ab)`` of sorted positives' keys ``kp`` and negatives'
    keys ``kn`` (with their weights ``vp``, ``vn``), merged with ``run`` if given.

    ``ab`` holds int64 counts without weights, float64 weights with them.
    """
    if run is None:
        run = (_NO_RUN[0], _NO_RUN[1] if vp is None else _NO_RUN[2])
    cap = run[0].shape[0] + kp.shape[0] + kn.shape[0]
    scores = np.empty(cap, np.float64)
    if vp is None:
        ab = np.empty((2, cap), np.int64)
        m = K.run_into(run[0], run[1], kp, kn, scores.view(np.uint64), ab)
    else:
        ab = np.empty((2, cap), np.float64)
        m = K.run_into_weighted(run[0], run[1], kp, vp, kn, vn, scores.view(np.uint64), ab)
    return _trimmed(scores, ab, m)


def _sorted_run(keys, front, back, vals=None, run=None, presorted=False):
    """The run of positives' keys ``keys[:front]`` and negatives' keys
    ``keys[back:]`` (with their weights ``vals``), sorting them in place
    unless ``presorted``, and merged with ``run`` if given."""
    if not presorted:
        _sort_classes(keys, front, back, vals)
    if vals is None:
        return _run_of_sorted(keys[:front], keys[back:], run=run)
    return _run_of_sorted(keys[:front], keys[back:], vals[:front], vals[back:], run=run)


def _batch_run(y, s, w):
    """The run ``(scores, ab)`` of one validated batch, or ``None`` if empty."""
    if w.shape[0] == 0:
        keys, n_pos = _split_sorted(y, s)
        return _run_of_sorted(keys[:n_pos], keys[n_pos:])
    keys = np.empty(y.shape[0], np.uint64)
    vals = np.empty(y.shape[0], np.float64)
    status, front, back = K.split_keys_weighted(y, s, w, keys, vals)
    if status:
        _raise_batch_error(y, s)
    if front == 0 and back == y.shape[0]:
        return None  # every row has weight 0
    return _sorted_run(keys, front, back, vals)


def _merge_runs(a, b):
    """One run holding two runs (masses of a score in both are added)."""
    cap = a[0].shape[0] + b[0].shape[0]
    scores = np.empty(cap, np.float64)
    ab = np.empty((2, cap), a[1].dtype)
    m = K.merge_into(a[0], a[1], b[0], b[1], scores, ab)
    return _trimmed(scores, ab, m)


def _u2_counts(ab, n_pos: int, n_neg: int) -> int:
    """Exact ``2U`` of int64 counts as a Python int (128-bit when int64 would overflow)."""
    if 2 * n_pos * n_neg < _INT64_LIMIT:
        return int(K.u2_int(ab))
    high, low = K.u2_int128(ab)
    return (int(high) << 64) | int(low)


def _auc_of_run(ab, weighted: bool):
    """``(auc, n_pos, n_neg)`` of one run: exact for counts, float for weights."""
    if ab.shape[1] == 0:
        return 0.0, (0.0 if weighted else 0), (0.0 if weighted else 0)
    if weighted:
        n_pos = float(ab[0].sum())
        n_neg = float(ab[1].sum())
        if n_pos == 0 or n_neg == 0:
            return 0.0, n_pos, n_neg
        twice = float(K.u2_float(ab, 1.0 / n_pos, 1.0 / n_neg))
        return min(max(twice / 2.0, 0.0), 1.0), n_pos, n_neg
    n_pos = int(ab[0].sum())
    n_neg = int(ab[1].sum())
    u2 = _u2_counts(ab, n_pos, n_neg)
    return u2 / (2 * safe(n_pos * n_neg)), n_pos, n_neg


def _sorted_items(items):
    """Items put back in ``(lo, hi)`` order (bins kept whole come out of order)."""
    lo, hi, ab, cw = items
    dl = np.diff(lo)
    if np.all((dl > 0) | ((dl == 0) & (np.diff(hi) >= 0))):
        return items
    order = np.lexsort((hi, lo))
    return lo[order], hi[order], np.ascontiguousarray(ab[:, order]), np.ascontiguousarray(cw[:, order])


def _check_max_bins(max_bins):
    if max_bins is None:
        return None
    if isinstance(max_bins, (bool, np.bool_)) or not isinstance(max_bins, numbers.Integral):
        raise TypeError(f"max_bins must be an int or None, got {type(max_bins).__name__}")
    max_bins = int(max_bins)
    if max_bins < 1:
        raise ValueError(f"max_bins must be at least 1, got {max_bins}")
    return max_bins


def _curve_from_run(scores, ab):
    """Thresholds (decreasing) and the cumulative tps, fps (float64) at each."""
    thresholds = scores[::-1].copy()
    tps = np.cumsum(ab[0, ::-1]).astype(np.float64)
    fps = np.cumsum(ab[1, ::-1]).astype(np.float64)
    return thresholds, tps, fps


def _roc(thresholds, tps, fps):
    tps = np.concatenate(([0.0], tps))
    fps = np.concatenate(([0.0], fps))
    fpr = fps / safe(fps[-1])
    tpr = tps / safe(tps[-1])
    return fpr, tpr, np.concatenate(([np.inf], thresholds))


def _pr(thresholds, tps, fps):
    ps = tps + fps
    precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
    recall = tps / safe(tps[-1]) if tps.size else tps
    return (
        np.concatenate((precision[::-1], [1.0])),
        np.concatenate((recall[::-1], [0.0])),
        thresholds[::-1].copy(),
    )


def _ap(thresholds, tps, fps) -> float:
    precision, recall, _ = _pr(thresholds, tps, fps)
    return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))


# ----------------------------------------------------------------- one-shot
def auc(y, s, *, sample_weight=None) -> float:
    """Area under the ROC curve: the Mann–Whitney U of the positives over ``safe(n_pos n_neg)``.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, 2)
        0/1 labels (1 = positive), or the specification's one-hot membership
        matrix ``g`` whose column 1 marks the positives and column 0 the
        negatives (a row that is not ``[1, 0]`` or ``[0, 1]`` is a
        ``ValueError`` naming it).
    s : array-like of shape (n,)
        Finite real scores, higher meaning "more likely positive".
    sample_weight : array-like of shape (n,), optional
        Non-negative finite weights: each pair counts with the product of its
        weights.

    Returns
    -------
    float
        The probability that a random positive outscores a random negative,
        ties counting one half. With a single class present it is 0 (the
        specification's guard ``safe(x) = x + [x == 0]``), where
        ``sklearn.metrics.roc_auc_score`` warns and returns NaN (older
        versions raise).

    Notes
    -----
    The scores are split by label and each class is radix-sorted (as 64-bit
    keys of the float bits; both classes at once, on two threads, for large
    inputs on two cores or more); one merge pass then counts ``2U`` exactly as an
    integer. No threshold sweep and no trapezoid rule, so the result is the
    exact rational U / (n_pos n_neg) rounded once.

    Examples
    --------
    The specification's example, as a one-hot matrix and as 0/1 labels:

    >>> from streammetrics._auc import auc
    >>> g = [[1, 0], [1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [0, 1]]
    >>> s = [0.1, 0.35, 0.3, 0.8, 0.4, 0.9, 0.2]
    >>> round(auc(g, s), 6)
    0.833333
    >>> auc([0, 0, 0, 1, 1, 1, 1], s) == auc(g, s) == 10 / 12
    True
    >>> auc([1, 1, 1], [0.2, 0.5, 0.9])  # one class only: the guard gives 0
    0.0
    """
    y, s, w, n = _prepare(y, s, sample_weight)
    if n == 0:
        raise ValueError("y and s are empty: the AUC needs at least one observation")
    if w.shape[0] == 0:
        keys, n_pos = _split_sorted(y, s)
        n_neg = n - n_pos
        if 2 * n_pos * n_neg < _INT64_LIMIT:
            u2 = int(K.u2_sorted(keys[:n_pos], keys[n_pos:]))
            return u2 / (2 * safe(n_pos * n_neg))
        _, ab = _run_of_sorted(keys[:n_pos], keys[n_pos:])
        return _auc_of_run(ab, False)[0]
    run = _batch_run(y, s, w)
    return _auc_of_run(run[1] if run is not None else np.zeros((2, 0)), True)[0]


def _one_shot(y, s, sample_weight) -> "RankAUC":
    acc = RankAUC().update(y, s, sample_weight=sample_weight)
    if acc.n == 0:
        raise ValueError("y and s are empty: the curve needs at least one observation")
    return acc


def roc_curve(y, s, *, sample_weight=None):
    """ROC curve ``(fpr, tpr, thresholds)``: one point per distinct score.

    Thresholds decrease from ``+inf`` (the leading point ``(0, 0)``) through
    every distinct score, with no thinning of collinear points: the output of
    ``sklearn.metrics.roc_curve(y, s, drop_intermediate=False)``. Rows of weight
    0 are dropped, as scikit-learn does. When a class is absent its rate is 0
    everywhere (the guard), where scikit-learn warns and returns NaN.

    >>> from streammetrics._auc import roc_curve
    >>> fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr, tpr
    (array([0. , 0. , 0.5, 0.5, 1. ]), array([0. , 0.5, 0.5, 1. , 1. ]))
    >>> thresholds
    array([ inf, 0.8 , 0.4 , 0.35, 0.1 ])
    """
    return _one_shot(y, s, sample_weight).roc_curve()


def pr_curve(y, s, *, sample_weight=None):
    """Precision-recall curve ``(precision, recall, thresholds)``.

    In the order of ``sklearn.metrics.precision_recall_curve``: thresholds
    increase over the distinct scores, and ``precision``/``recall`` have one
    more entry, the final point ``(1, 0)``. With no positive at all, recall is
    0 everywhere (the guard), where scikit-learn warns and sets it to 1.

    >>> from streammetrics._auc import pr_curve
    >>> precision, recall, thresholds = pr_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> precision
    array([0.5 , 0.666..., 0.5 , 1. , 1. ])
    >>> recall
    array([1. , 1. , 0.5, 0.5, 0. ])
    >>> thresholds
    array([0.1 , 0.35, 0.4 , 0.8 ])
    """
    return _one_shot(y, s, sample_weight).pr_curve()


def average_precision(y, s, *, sample_weight=None) -> float:
    """Average precision: the step integral ``sum_k (R_k - R_{k-1}) P_k``.

    scikit-learn's ``average_precision_score`` definition (no interpolation).
    With no positive it is 0.

    >>> from streammetrics._auc import average_precision
    >>> round(average_precision([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 6)
    0.833333
    """
    return _one_shot(y, s, sample_weight).average_precision()


# --------------------------------------------------------------- accumulator
def _empty_state():
    return {
        "n": np.zeros(1, np.int64),
        "weighted": np.zeros(1, np.int64),
        "lo": np.zeros(0, np.float64),
        "hi": np.zeros(0, np.float64),
        "counts": np.zeros((2, 0), np.int64),
        "weights": np.zeros((2, 0), np.float64),
        "pairs": np.zeros((2, 0), np.float64),
    }


class _Pending:
    """Rows folded in but not yet sorted into the state.

    ``keys[:front]`` holds the positives' score keys and ``keys[back:]`` the
    negatives' (the layout of :func:`~streammetrics._kernels.rank.append_split`),
    ``vals`` their weights (``None`` without weights); the slots between are
    free. A batch is validated while it is written into free slots, so a bad
    batch changes nothing that counts.
    """

    __slots__ = ("keys", "vals", "front", "back", "sorted")

    def __init__(self, capacity: int, weighted: bool):
        self.keys = np.empty(capacity, np.uint64)
        self.vals = np.empty(capacity, np.float64) if weighted else None
        self.front = 0
        self.back = capacity
        #: each class's keys are sorted (by :meth:`sort`): the buffer takes no
        #: more rows, and :meth:`run` does not sort them again
        self.sorted = False

    @property
    def rows(self) -> int:
        return self.front + self.keys.shape[0] - self.back

    @property
    def weighted(self) -> bool:
        return self.vals is not None

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + (0 if self.vals is None else self.vals.nbytes)

    def _grow(self, need: int, limit: int):
        """Room for ``need`` rows in all: double the capacity, up to ``limit``."""
        cap = self.keys.shape[0]
        self.resize(max(need, min(2 * cap, max(limit, need))))

    def resize(self, new: int):
        """Move the rows into buffers of capacity ``new`` (at least :attr:`rows`)."""
        tail = self.keys.shape[0] - self.back
        for name in ("keys", "vals"):
            old = getattr(self, name)
            if old is not None:
                arr = np.empty(new, old.dtype)
                arr[: self.front] = old[: self.front]
                arr[new - tail :] = old[self.back :]
                setattr(self, name, arr)
        self.back = new - tail

    def append(self, y, s, w, limit: int):
        """Validate and write one batch (``w`` empty without weights)."""
        assert not self.sorted, "a sorted buffer takes no more rows"
        n = y.shape[0]
        if self.back - self.front < n:
            self._grow(self.rows + n, limit)
        if self.vals is None:
            status, front, back = K.append_split(y, s, self.keys, self.front, self.back)
        else:
            status, front, back = K.append_split_weighted(y, s, w, self.keys, self.vals, self.front, self.back)
        if status:
            _raise_batch_error(y, s)
        self.front, self.back = front, back

    def _parts(self, in_place: bool):
        keys, vals, front, back = self.keys, self.vals, self.front, self.back
        if not in_place:
            keys = np.concatenate((keys[:front], keys[back:]))
            if vals is not None:
                vals = np.concatenate((vals[:front], vals[back:]))
            back = front
        return keys, vals, front, back

    def sort(self):
        """Sort each class's keys in place (and mark them so): see :attr:`sorted`."""
        if not self.sorted:
            _sort_classes(self.keys, self.front, self.back, self.vals)
            self.sorted = True
        return self.keys[: self.front], self.keys[self.back :]

    def run(self, merged_with=None):
        """The run of the pending rows (sorted in place), merged with a run if given."""
        return _sorted_run(self.keys, self.front, self.back, self.vals, merged_with, self.sorted)

    def sorted_keys(self, in_place: bool = True):
        """``(kp, vp, kn, vn, pre_p, pre_n)``: each class's keys sorted, their
        weights and the weights' inclusive prefix sums (``None`` without weights)."""
        keys, vals, front, back = self._parts(in_place)
        tail = keys.shape[0] - back
        tk, tv = _sort_classes(keys, front, back, vals)
        if vals is None:
            return keys[:front], None, keys[back:], None, None, None
        # the sort's scratch, free again, holds the prefix sums
        pre_p = np.cumsum(vals[:front], out=tv[:front])
        pre_n = np.cumsum(vals[back:], out=tk.view(np.float64)[:tail])
        return keys[:front], vals[:front], keys[back:], vals[back:], pre_p, pre_n


class RankAUC(Accumulator):
    """Streaming, mergeable AUC (Mann–Whitney U), exact or in bounded memory.

    Parameters
    ----------
    max_bins : int, optional
        ``None`` (the default) keeps every distinct score: the AUC, the curves
        and the average precision are exact, and memory grows with the number
        of distinct scores (24 bytes each). A number ``B`` bounds the state to
        at most ``2 B`` entries (48 bytes each: under 100 KB for ``B = 1000``)
        and reports a certified interval ``[auc_lower, auc_upper]`` that always
        contains the exact AUC.

    Notes
    -----
    **Pending rows.** ``update`` validates a batch and appends its rows (the
    64-bit sort keys of their scores, split by label, and their weights) to a
    buffer of *pending* rows, which is sorted into the state in bulk when it is
    full and before the state is read; appending costs a few microseconds
    whatever the state holds. Its bounds, 8 bytes a row (16 with weights):

    * exact mode: at most ``max(2**22, 3 m)`` rows, ``m`` the distinct scores
      already sorted in (the runs' entries). Without weights that is never
      more than 32 MiB or the runs' own size (24 bytes an entry), so the
      memory stays proportional to the distinct scores. Since the buffer
      grows with the state, a long stream is sorted in a few large pieces.
    * bounded mode: at most ``max(2**14, 32 B)`` rows, 256 KiB for ``B =
      1000`` (twice that with weights), beside the bins' at most ``2 B x 48``
      bytes.

    A batch too large for the buffer is sorted on its own, at once: in
    bounded mode it then takes its keys and the sort's scratch (16 bytes a
    row, 32 with weights) beyond its own arrays, since it is grouped straight
    from its sorted keys and never expanded into entries. Saving, pickling,
    copying, comparing with ``==`` and merging into another accumulator first
    sort the pending rows in, so any state that leaves an accumulator is the
    canonical one described below. ``finalize`` and the curves leave the
    buffer alone in bounded mode (they bin the pending rows into a temporary
    state), so calling them never changes what later updates give; in exact
    mode the curves sort the pending rows in, and ``finalize`` (without
    weights) sorts them in place but leaves them pending (see below), which
    changes no result, only the time later calls take. A buffer is made as
    large as its bound at once for a batch of ``2**16`` rows or more (such a
    stream would fill it), so it is never copied to grow; memory the rows
    have not reached yet is reserved but not touched.

    **Exact mode.** The pending rows are radix-sorted (on the scores' bits,
    per class) into a *run* of distinct scores with the positive and negative
    count at each (float64 weights once any batch was weighted). Runs are
    merged log-structured: a run is merged into its predecessor only when that
    one is at most twice as long (a new run is merged into the last one in the
    same pass that builds it), so folding ``n`` rows costs ``O(n log n)`` in
    all and no update re-merges one big array. ``merge`` takes over the other
    accumulator's run. ``finalize`` merges the runs into one and counts ``2U``
    exactly in int64 (in 128-bit integers past ``2 n_pos n_neg = 2**63``, so
    billions of merged rows stay exact); with weights it is a compensated
    float64 sum. Without weights and below that bound, ``finalize`` counts
    ``2U`` across the run and the sorted pending rows in one pass instead of
    writing their merged run; the rows stay pending, marked sorted, and the
    next update or read of the state makes them a run without sorting them
    again. Any batching, sharding and merge order gives the identical AUC
    without weights. On two cores or more, large sorts do the two classes
    at the same time (the smaller on a worker thread; the kernels release the
    GIL), and a large count cuts the scores at a middle key and counts the
    two sides at the same time; both give the same result as one thread.

    **Bounded mode.** Once the state would hold more than ``2 B`` entries it
    is compacted to at most ``B`` *bins*: scores are cut along the dyadic cells
    of their 64-bit keys (halves, quarters, ... of the float line, so the
    cells follow the data's spread at every scale), and the entries of a cell
    become one bin once the cell's ``pos x neg`` mass is at most ``3 P N /
    B**2`` and its total mass at most ``6 (P + N) / B`` (both raised until at
    most ``B`` bins remain). Sorted pending rows are first grouped along the
    same cells at a quarter of those limits, never across the edge of a bin
    (in time linear in the rows), and the groups are then compacted with the
    bins; while the state and the rows hold at most ``2 B`` distinct scores
    they are kept as points. Bins keep their tight score range ``[lo, hi]``.
    A bin remembers the concordance of its own pairs that was known when it
    was formed, and the mass of its pairs whose order is unknown: later rows
    that fall inside a bin's range cannot be ranked against its contents. A bin
    is never split; when new data piles up inside it, the new data is binned
    beneath it at finer cells. Two cells are nested or disjoint, so the bins
    of merged shards overlap only within a cell and never chain into wide
    ranges. ``auc`` counts each unknown pair one half, ``auc_lower`` counts it
    0 and ``auc_upper`` 1, so the exact AUC always lies in between. (With
    weights, or once ``2 P N`` passes ``2**53``, the pair masses are rounded
    float sums, and the interval is widened by a relative 1e-9 to cover the
    rounding.) While nothing has been binned the three are equal and exact.
    With ``B = 1000`` a stream of a million distinct continuous scores gives
    an interval about 0.001 wide (a little wider for 16 merged shards or for
    drifting scores), in a state under 100 KB.
    Curves and the average precision of a binned state are those of the binned
    scores: every bin counts as one score, its lower edge ``lo``.

    The state saved by ``save`` (and pickled) is the single merged run, or the
    bins: ``lo``/``hi`` score ranges, ``counts`` (int64) or ``weights``
    (float64) of positives and negatives, and ``pairs`` (twice the known
    concordance and the unknown mass of each bin's own pairs).

    Examples
    --------
    >>> from streammetrics._auc import RankAUC
    >>> shard_a = RankAUC().update([0, 0, 0, 1], [0.1, 0.35, 0.3, 0.8])
    >>> shard_b = RankAUC().update([1, 1, 1], [0.4, 0.9, 0.2])
    >>> r = (shard_a + shard_b).finalize()
    >>> round(r.auc, 6), r.n_pos, r.n_neg, r.n
    (0.833333, 4, 3, 7)
    >>> r.auc_lower == r.auc == r.auc_upper
    True

    Bounded memory: one million scores in 100 batches, a state of at most
    2000 bins, and an interval that holds the exact AUC:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> exact, bounded = RankAUC(), RankAUC(max_bins=1000)
    >>> for _ in range(100):
    ...     y = rng.integers(0, 2, 10_000)
    ...     s = rng.normal(size=10_000) + y
    ...     _ = exact.update(y, s), bounded.update(y, s)
    >>> e, b = exact.finalize(), bounded.finalize()
    >>> bool(b.auc_lower <= e.auc <= b.auc_upper), b.auc_upper - b.auc_lower < 0.01
    (True, True)
    >>> sum(a.nbytes for a in bounded._state.values()) < 100_000
    True
    """

    _headline = ("auc",)
    _variable_shape = frozenset({"lo", "hi", "counts", "weights", "pairs"})

    #: exact mode: pending rows at most max(_PENDING_MIN, _PENDING_RATIO * stored scores)
    _PENDING_MIN = 1 << 22
    _PENDING_RATIO = 3
    #: a new buffer is made as large as the limit at once for a batch of this many rows
    _PREALLOCATE_BATCH = 1 << 16
    #: bounded mode: pending rows at most max(_BOUNDED_PENDING_MIN, _BOUNDED_PENDING_PER_BIN * B)
    _BOUNDED_PENDING_MIN = 1 << 14
    _BOUNDED_PENDING_PER_BIN = 32

    def __init__(self, max_bins: int | None = None):
        self.max_bins = _check_max_bins(max_bins)
        self._n = 0
        self._weighted = False
        self._stack: list = []  # exact: runs (scores, ab), longest first
        self._bins = None  # bounded: items (lo, hi, ab, cw) sorted by (lo, hi)
        self._pending: _Pending | None = None
        self._packed = None
        self._init_state()

    # ------------------------------------------------------------ state plumbing
    def _settings(self):
        return {"max_bins": self.max_bins}

    def _new_state(self):
        return _empty_state()

    @property
    def _state(self):
        """The state as named arrays (pending rows sorted in; the runs merged into one, or the bins)."""
        if self._packed is None:
            self._flush()
            self._packed = self._pack()
        return self._packed

    @_state.setter
    def _state(self, state):
        self._n = int(state["n"][0])
        self._weighted = bool(state["weighted"][0])
        ab = state["weights"] if self._weighted else state["counts"]
        lo = state["lo"]
        self._stack = []
        self._bins = None
        self._pending = None
        if self.max_bins is None:
            if lo.shape[0]:
                self._stack = [(lo, ab)]
        elif lo.shape[0]:
            self._bins = (lo, state["hi"], ab, state["pairs"])
        self._packed = None

    def _pack(self):
        st = _empty_state()
        st["n"][0] = self._n
        st["weighted"][0] = int(self._weighted)
        if self.max_bins is None:
            run = self._consolidate()
            if run is not None:
                st["lo"] = run[0]
                st["weights" if self._weighted else "counts"] = run[1]
        elif self._bins is not None:
            lo, hi, ab, cw = self._bins
            st["lo"], st["hi"], st["pairs"] = lo, hi, cw
            st["weights" if self._weighted else "counts"] = ab
        return st

    @property
    def _runs(self):
        """Exact mode: the runs, longest first, with the pending rows sorted in."""
        self._flush()
        return self._stack

    @property
    def _items(self):
        """Bounded mode: the bins (``None`` if empty), with the pending rows binned in."""
        self._flush()
        return self._bins

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far, zero-weight rows included."""
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes held by the state's arrays and the pending rows."""
        held = 16 if self._pending is None else 16 + self._pending.nbytes
        if self.max_bins is None:
            return held + sum(s.nbytes + ab.nbytes for s, ab in self._stack)
        if self._bins is None:
            return held
        return held + sum(a.nbytes for a in self._bins)

    def _check_state(self, state):
        n = int(state["n"][0])
        flag = int(state["weighted"][0])
        if flag not in (0, 1):
            raise ValueError(f"entry 'weighted' must be 0 or 1, got {flag}")
        weighted = bool(flag)
        lo, hi, pairs = state["lo"], state["hi"], state["pairs"]
        name, other = ("weights", "counts") if weighted else ("counts", "weights")
        ab = state[name]
        if lo.ndim != 1:
            raise ValueError(f"entry 'lo' must be 1-D, got shape {lo.shape}")
        m = lo.shape[0]
        if ab.shape != (2, m):
            raise ValueError(f"entry {name!r} has shape {ab.shape}, expected (2, {m})")
        if state[other].shape != (2, 0):
            raise ValueError(f"entry {other!r} must be empty in this state")
        if m > n:
            raise ValueError(f"{m} entries but only {n} observations")
        if m:
            if np.any(ab < 0):
                raise ValueError(f"entry {name!r} holds negative values")
            if np.any(ab[0] + ab[1] <= 0) if weighted else np.any((ab[0] == 0) & (ab[1] == 0)):
                raise ValueError("an entry holds no observation")
            if not weighted and (np.any(ab > n) or int(ab.sum()) != n):
                raise ValueError("the counts do not add up to the observation count")
        if self.max_bins is None:
            if hi.shape != (0,) or pairs.shape != (2, 0):
                raise ValueError("an exact state holds no bins ('hi', 'pairs' must be empty)")
            if np.any(np.diff(lo) <= 0):
                raise ValueError("the scores are not strictly increasing")
            return
        if hi.shape != (m,) or pairs.shape != (2, m):
            raise ValueError(f"entries 'hi' and 'pairs' must have shapes ({m},) and (2, {m})")
        if m > 2 * self.max_bins:
            raise ValueError(f"{m} bins, more than 2 * max_bins = {2 * self.max_bins}")
        if np.any(hi < lo):
            raise ValueError("a bin's upper edge is below its lower edge")
        dl, dh = np.diff(lo), np.diff(hi)
        point = hi == lo
        if np.any((dl < 0) | ((dl == 0) & (dh < 0)) | ((dl == 0) & (dh == 0) & point[:-1])):
            raise ValueError("the bins are not sorted by (lo, hi) with distinct points")
        if np.any(pairs < 0):
            raise ValueError("entry 'pairs' holds negative values")
        pn = ab[0].astype(np.float64) * ab[1]
        tol = 1e-9 * pn + 1e-300
        if np.any(pairs[0] + 2 * pairs[1] > 2 * pn + 2 * tol):
            raise ValueError("a bin's pair masses exceed its positive x negative mass")
        if np.any(point & ((pairs[1] != 0) | (np.abs(pairs[0] - pn) > tol))):
            raise ValueError("a single-score entry must hold ties only")

    # -------------------------------------------------------------- pending rows
    def _limit(self) -> int:
        """How many rows the pending buffer may hold."""
        if self.max_bins is not None:
            return max(self._BOUNDED_PENDING_MIN, self._BOUNDED_PENDING_PER_BIN * self.max_bins)
        stored = sum(run[0].shape[0] for run in self._stack)
        return max(self._PENDING_MIN, self._PENDING_RATIO * stored)

    def _fold(self, y, s, w):
        """Append one validated-to-be batch (``w`` empty without weights) to the pending rows."""
        n = y.shape[0]
        weighted = w.shape[0] > 0
        limit = self._limit()
        buf = self._pending
        if buf is not None and buf.weighted == weighted and not buf.sorted and buf.rows + n <= limit:
            buf.append(y, s, w, limit)
            return
        # a new buffer takes the batch (a bad batch raises here, before any
        # change); then the old rows are sorted in
        if n > limit:
            capacity = n
        elif n >= self._PREALLOCATE_BATCH:
            capacity = limit  # a stream of large batches fills it: no copies growing it
        else:  # as large as the buffer it replaces: a stream does not grow it again
            capacity = min(limit, max(n, 1024, 0 if buf is None else buf.keys.shape[0]))
        new = _Pending(capacity, weighted)
        new.append(y, s, w, limit)
        self._flush()
        if weighted:
            self._to_float()
        self._pending = new
        limit = self._limit()
        if new.rows > limit:
            self._flush()  # exact mode: a batch larger than the buffer is sorted at once
        elif n >= self._PREALLOCATE_BATCH and new.keys.shape[0] < limit:
            new.resize(limit)  # the limit rose with the rows sorted in: one batch to move

    def _flush(self):
        """Sort the pending rows into the runs, or bin them into the bins."""
        buf = self._pending
        if buf is None:
            return
        if buf.rows:
            if self.max_bins is None:
                stack = self._stack
                if stack and stack[-1][0].shape[0] <= 2 * buf.rows:
                    # the new run would be merged into the last one: do both in one pass
                    run = buf.run(merged_with=stack[-1])
                    stack.pop()
                    self._push(run)
                else:
                    self._push(buf.run())
            else:
                self._bins = self._binned(buf, self._bins, in_place=True)
        self._pending = None

    def _current_items(self):
        """Bounded mode: the bins with the pending rows binned in, leaving both as they are."""
        buf = self._pending
        if buf is None or buf.rows == 0:
            return self._bins
        return self._binned(buf, self._bins, in_place=False)

    # -------------------------------------------------------------------- runs
    def _to_float(self):
        """Switch to weighted mode: counts become float64 weights."""
        if self._weighted:
            return
        self._flush()
        self._stack = [(s, ab.astype(np.float64)) for s, ab in self._stack]
        if self._bins is not None:
            lo, hi, ab, cw = self._bins
            self._bins = (lo, hi, ab.astype(np.float64), cw)
        self._weighted = True

    def _push(self, run):
        runs = self._stack
        runs.append(run)
        while len(runs) >= 2 and runs[-2][0].shape[0] <= 2 * runs[-1][0].shape[0]:
            b = runs.pop()
            a = runs.pop()
            runs.append(_merge_runs(a, b))

    def _consolidate(self):
        """Merge the runs into one (smallest first) and keep that; ``None`` if empty."""
        runs = self._stack
        if not runs:
            return None
        while len(runs) > 1:
            b = runs.pop()
            a = runs.pop()
            runs.append(_merge_runs(a, b))
        return runs[0]

    def _binned(self, buf, items, in_place: bool):
        """``items`` with the pending rows of ``buf`` binned in (a new tuple)."""
        kp, vp, kn, vn, pre_p, pre_n = buf.sorted_keys(in_place)
        b = self.max_bins
        if items is None or not np.any(items[1] > items[0]):
            # nothing binned yet: keep points while they fit, so the state stays exact
            room = 2 * b - (0 if items is None else items[0].shape[0])
            if K.few_scores(kp, kn, room):
                new = K.points_as_items(*_run_of_sorted(kp, kn, vp, vn))
                return new if items is None else K.merge_items(*items, *new)
        if items is None:
            p = q = 0.0
            cuts = np.zeros(0, np.uint64)
        else:
            p, q = float(items[2][0].sum()), float(items[2][1].sum())
            # no group may straddle a bin: cut at every lower edge and past every upper one
            cuts = np.sort(np.concatenate((K.score_keys(items[0]), K.score_keys(items[1]) + np.uint64(1))))
        if vp is None:
            p += kp.shape[0]
            q += kn.shape[0]
        else:
            p += float(pre_p[-1]) if pre_p.shape[0] else 0.0
            q += float(pre_n[-1]) if pre_n.shape[0] else 0.0
        budget = _BUDGET * p * q / (b * b) / _FINE
        mass_cap = _MASS * (p + q) / b / _FINE
        if not (budget <= np.inf and mass_cap <= np.inf):
            budget = mass_cap = np.inf  # overflowed weights: one group
        limit = kp.shape[0] + kn.shape[0]
        if vp is None:
            g, *new = K.bin_keys(kp, kn, budget, mass_cap, cuts, limit)
        else:
            g, *new = K.bin_keys_weighted(kp, vp, kn, vn, pre_p, pre_n, budget, mass_cap, cuts, limit)
        merged = tuple(new) if items is None else K.merge_items(*items, *new)
        if merged[0].shape[0] > 2 * b:
            merged = self._compact(merged)
        return merged

    def _compact(self, items):
        lo, hi, ab, cw = items
        b = self.max_bins
        p, q = float(ab[0].sum()), float(ab[1].sum())
        budget = _BUDGET * p * q / (b * b)
        mass_cap = _MASS * (p + q) / b
        for _ in range(200):
            if not (budget <= np.inf and mass_cap <= np.inf):
                budget = mass_cap = np.inf  # overflowed weights: one bin
            items = _sorted_items(K.compact(*items, budget, mass_cap))
            if items[0].shape[0] <= _TARGET * b:
                return items
            budget *= 2.0
            mass_cap *= 1.5
        return _sorted_items(K.compact(*items, np.inf, np.inf))

    def _add(self, run, weighted: bool):
        """Fold the run or the bins of another state into this state."""
        if weighted:
            self._to_float()
        if run is None or run[0].shape[0] == 0:
            return
        if len(run) == 2:  # a run of points (scores, ab)
            if self._weighted and run[1].dtype != np.float64:
                run = (run[0], run[1].astype(np.float64))
            self._push(run)
        else:  # bins (lo, hi, ab, cw) of another bounded state
            if self._weighted and run[2].dtype != np.float64:
                run = (run[0], run[1], run[2].astype(np.float64), run[3])
            merged = run if self._bins is None else K.merge_items(*self._bins, *run)
            if merged[0].shape[0] > 2 * self.max_bins:
                merged = self._compact(merged)
            self._bins = merged

    # ---------------------------------------------------------------- protocol
    def update(self, y, s, sample_weight=None):
        """Fold in one batch of 0/1 labels ``y`` and finite real scores ``s``.

        ``y`` may also be the n x 2 one-hot membership matrix. The whole batch
        is checked before the state changes: a label that is not 0/1, a NaN or
        infinite score, or a negative or non-finite weight raises ``ValueError``
        naming the argument and its first offending position, and leaves the
        accumulator exactly as it was. Returns ``self``.
        """
        y, s, w, n = _prepare(y, s, sample_weight)
        if n == 0:
            return self
        if self._weighted and w.shape[0] == 0:
            w = np.ones(n)
        self._fold(y, s, w)
        self._packed = None
        self._n += n
        return self

    def _merge_state(self, other):
        weighted = bool(other["weighted"][0])
        ab = other["weights"] if weighted else other["counts"]
        lo = other["lo"]
        self._packed = None
        if self.max_bins is None:
            self._add((lo, ab), weighted)
        else:
            self._add((lo, other["hi"], ab, other["pairs"]), weighted)
        self._n += int(other["n"][0])

    def _points(self, items=None):
        """Distinct scores and their masses; a bin counts as its lower edge.

        In bounded mode, of ``items`` if given, else of the current bins.
        """
        empty = np.zeros(0), np.zeros((2, 0), np.float64 if self._weighted else np.int64)
        if self.max_bins is None:
            self._flush()
            run = self._consolidate()
            return empty if run is None else run
        if items is None:
            items = self._current_items()
        if items is None:
            return empty
        lo, hi, ab, cw = items
        starts = np.flatnonzero(np.concatenate(([True], lo[1:] != lo[:-1])))
        if starts.shape[0] == lo.shape[0]:
            return lo, ab
        return lo[starts], np.ascontiguousarray(np.add.reduceat(ab, starts, axis=1))

    def _compute(self) -> Result:
        items = None
        if self.max_bins is None:
            counted = self._count_across_pending()
            if counted is not None:
                return self._result(*counted)
        else:
            items = self._current_items()
            if items is not None and np.any(items[1] > items[0]):
                return self._bounded_result(*items)
        _, ab = self._points(items)
        value, n_pos, n_neg = _auc_of_run(ab, self._weighted)
        return self._result(value, value, value, n_pos, n_neg)

    def _count_across_pending(self):
        """Exact mode without weights: ``(auc, auc, auc, n_pos, n_neg)`` counted
        across the run and the pending rows in one pass, or ``None`` when there
        are no pending rows (or ``2U`` might not fit an int64).

        The pending rows are sorted in place and left pending, so nothing the
        state shows changes and the merged run is not written out; the next
        update or read of the state turns them into a run without sorting
        them again.
        """
        buf = self._pending
        if buf is None or buf.rows == 0 or buf.weighted:
            return None
        if self._n * self._n >= 2 * _INT64_LIMIT:
            return None  # 2 n_pos n_neg <= (n_pos + n_neg)**2 / 2 might not fit
        run = self._consolidate()
        if run is None:
            run = _NO_RUN[0], _NO_RUN[1]
        kp, kn = buf.sort()
        u2, n_pos, n_neg = _u2_across(run, kp, kn)
        value = u2 / (2 * safe(n_pos * n_neg))
        return value, value, value, n_pos, n_neg

    def _bounded_result(self, lo, hi, ab, cw):
        k2, unknown = K.sweep(lo, hi, ab, cw)
        if self._weighted:
            n_pos, n_neg = float(ab[0].sum()), float(ab[1].sum())
        else:
            n_pos, n_neg = int(ab[0].sum()), int(ab[1].sum())
        if n_pos == 0 or n_neg == 0:
            return self._result(0.0, 0.0, 0.0, n_pos, n_neg)  # no pairs: the guard
        denom = 2.0 * float(n_pos) * float(n_neg)
        lower = k2 / denom
        value = (k2 + unknown) / denom
        upper = (k2 + 2.0 * unknown) / denom
        if self._weighted or 2 * n_pos * n_neg >= 2**53:
            # The pair masses are float sums, rounded (by a relative m * eps per
            # compaction at most): widen so the rounding never cuts off the exact
            # value. Without weights and below 2**53 every sum is an exact integer
            # and the quotients are correctly rounded, so no slack is needed.
            lower, upper = lower * (1.0 - _SLACK), upper * (1.0 + _SLACK)
        clip = lambda v: min(max(v, 0.0), 1.0)  # noqa: E731
        return self._result(clip(value), clip(lower), clip(upper), n_pos, n_neg)

    def _result(self, value, lower, upper, n_pos, n_neg):
        return Result(
            "AUCScores",
            {
                "auc": float(value),
                "n_pos": n_pos,
                "n_neg": n_neg,
                "auc_lower": float(lower),
                "auc_upper": float(upper),
                "n": self._n,
            },
        )

    # ------------------------------------------------------------------ curves
    def _curve(self):
        if self._n == 0:
            raise ValueError("RankAUC has no observations: call update() first")
        return _curve_from_run(*self._points())

    def roc_curve(self):
        """ROC curve ``(fpr, tpr, thresholds)`` of the state, highest threshold first.

        One point per distinct score after a leading ``(0, 0)`` at threshold
        ``+inf``, with no thinning: ``sklearn.metrics.roc_curve(...,
        drop_intermediate=False)`` of the same rows (zero-weight rows dropped).
        An absent class gives a rate of 0 everywhere (scikit-learn: NaN). For a
        binned state (``max_bins`` reached) this is the curve of the binned
        scores, every bin counting as its lower edge.

        >>> from streammetrics._auc import RankAUC
        >>> fpr, tpr, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).roc_curve()
        >>> fpr, tpr, th
        (array([0. , 0. , 0.5, 1. ]), array([0. , 0.5, 1. , 1. ]), array([inf, 0.9, 0.5, 0.2]))
        """
        return _roc(*self._curve())

    def pr_curve(self):
        """Precision-recall curve ``(precision, recall, thresholds)`` of the state.

        The order of ``sklearn.metrics.precision_recall_curve``: thresholds
        increasing, and a final point ``(precision 1, recall 0)``. With no
        positive, recall is 0 everywhere (scikit-learn: 1, with a warning). For
        a binned state this is the curve of the binned scores.

        >>> from streammetrics._auc import RankAUC
        >>> p, r, th = RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).pr_curve()
        >>> p, r, th
        (array([0.5 , 0.666..., 1. , 1. ]), array([1. , 1. , 0.5, 0. ]), array([0.2, 0.5, 0.9]))
        """
        return _pr(*self._curve())

    def average_precision(self) -> float:
        """Average precision of the state, scikit-learn's step definition.

        ``sum_k (R_k - R_{k-1}) P_k`` over the thresholds; 0 with no positive.
        For a binned state it is that of the binned scores.

        >>> from streammetrics._auc import RankAUC
        >>> RankAUC().update([0, 1, 1, 0], [0.2, 0.9, 0.5, 0.5]).average_precision()
        0.833...
        """
        return _ap(*self._curve())
