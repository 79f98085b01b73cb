"""Operating points: the confusion counts of a rank state at any threshold.

A rank state holds, for each distinct score, its positive and negative mass,
so it holds the confusion counts of every threshold at once: at a threshold
``t`` the rows with ``s >= t`` are called positive. :class:`OperatingPoints`
builds the running totals once (``O(m)`` for ``m`` distinct scores) and then
answers each query in ``O(log m)``; :class:`LayeredPoints` answers the same
queries, bit for bit, from an unweighted exact state held as a stored run and
sorted pending rows, without merging them:

* :meth:`~OperatingPoints.at_threshold`: the binary result at ``s >= t``;
* :meth:`~OperatingPoints.threshold_for`: the threshold meeting a target
  recall, precision, false positive rate or specificity;
* :meth:`~OperatingPoints.best_threshold`: the threshold that maximises a
  score (F1, MCC, Youden's J, balanced accuracy, ...) or minimises a cost;
* :meth:`~OperatingPoints.partial_auc`: the area under the ROC curve up to a
  false positive rate.

The candidate thresholds are ``+inf`` (nothing called positive) and every
distinct score; tied rows are called together, as in the curves. In a
bounded state a bin counts as its lower edge (as in its curves), and every
result also carries certified bounds: the rows of a bin that straddles the
threshold may lie on either side of it.
"""

from __future__ import annotations

import bisect
import math
import numbers

import numpy as np

import threading

from ..._kernels import operating as K
from ..._kernels.operating import (EXACT_LIMIT, SCORE_CODES, best_candidate, partial_area,
                                   partial_area_exact, precision_reach, running_sums)
from ..._kernels.rank import score_keys
from ..._protocol.result import safe
from ..binary import BinaryResult, binary_result
from .sorting import CORES, NUMPY_MAX, THREADED_MIN, _sort_pool, key_float

__all__ = ["OperatingPoints", "LayeredPoints", "SCORES", "TARGETS", "check_threshold", "check_max_fpr",
           "u2_with_blocks"]

#: the scores ``best_threshold`` maximises
SCORES = ("f1", "mcc", "youden", "balanced_accuracy", "accuracy", "jaccard")
#: the targets ``threshold_for`` meets
TARGETS = ("recall", "precision", "fpr", "specificity")
#: rates that rise with the true positives and fall with the false positives
#: (or depend on one of them only): their bounds are at the two corners
_MONOTONE = ("accuracy", "precision", "recall", "specificity", "f1", "balanced_accuracy", "jaccard")


def _real(name, value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def check_threshold(t) -> float:
    """``t`` as a float (infinities allowed), or ``TypeError``/``ValueError``."""
    t = _real("t", t)
    if math.isnan(t):
        raise ValueError("t must be a number, got nan")
    return t


def check_rate(name, value) -> float:
    v = _real(name, value)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return v


def check_max_fpr(max_fpr) -> float:
    v = _real("max_fpr", max_fpr)
    if not 0.0 < v <= 1.0:
        raise ValueError(f"max_fpr must lie in (0, 1], got {max_fpr!r}")
    return v


_NO_COST = np.zeros((2, 2))
#: the most answers a state's points keep (the scores' and cost matrices')
_CACHED = 64


def _check_cost(cost) -> np.ndarray:
    c = np.asarray(cost)
    if c.dtype == object or not (np.issubdtype(c.dtype, np.number) or c.dtype == bool):
        raise TypeError(f"cost must be a 2 x 2 array of numbers, got dtype {c.dtype}")
    if c.shape != (2, 2):
        raise ValueError(
            f"cost must be a 2 x 2 matrix [[tn, fp], [fn, tp]] (rows: actual 0, 1; "
            f"columns: predicted 0, 1), got shape {c.shape}"
        )
    c = c.astype(np.float64)
    if not np.all(np.isfinite(c)):
        i, j = np.argwhere(~np.isfinite(c))[0]
        raise ValueError(f"cost[{i}, {j}] must be finite, got {c[i, j]!r}")
    return c


def _target(targets):
    """The one ``(name, value)`` given to ``threshold_for``, checked."""
    given = {k: v for k, v in targets.items() if v is not None}
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        raise TypeError(f"threshold_for() got an unexpected target {unknown[0]!r}; "
                        f"targets: {', '.join(TARGETS)}")
    if len(given) != 1:
        raise TypeError("threshold_for() takes exactly one target: "
                        + ", ".join(f"{t}=" for t in TARGETS))
    (name, value), = given.items()
    return name, check_rate(name, value)


def _objective(score, cost):
    """``(score, None)`` or ``(None, cost matrix)`` for ``best_threshold``, checked."""
    if cost is not None:
        if score is not None:
            raise TypeError("best_threshold() takes a score or a cost, not both")
        return None, _check_cost(cost)
    score = "f1" if score is None else score
    if not isinstance(score, str):
        raise TypeError(f"score must be a string, got {type(score).__name__}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(map(repr, SCORES))}; got {score!r}")
    return score, None


def _values_at(tp, fp, fn, tn, n, weighted, t):
    """The fields and meta of the binary result with these cells at threshold ``t``."""
    meta = {"threshold": t, "weighted": weighted}
    values = dict(binary_result(tp, fp, fn, tn, n=n, meta=meta)._values)
    values["threshold"] = t
    return values, meta


def _mass_note(what, total) -> str:
    return f"no {what} was seen" if total == 0 else f"{total:g} {what} mass"


def _unreached(name, value, P, N, highest) -> ValueError:
    """The error for a target of ``threshold_for`` that no threshold meets;
    ``highest`` is the highest recall or precision any threshold reaches
    (unused for specificity)."""
    if name == "recall":
        return ValueError(f"no threshold reaches recall {value:g}: the highest is "
                          f"{highest:g} ({_mass_note('positive', P)})")
    if name == "specificity":
        return ValueError(f"no threshold reaches specificity {value:g} ({_mass_note('negative', N)})")
    return ValueError(f"no threshold reaches precision {value:g}: the highest is {highest:g}")


class OperatingPoints:
    """The confusion counts of every threshold of a rank state.

    ``scores`` are the state's distinct scores (increasing) and ``ab`` their
    positive and negative masses (int64 counts, or float64 weights);
    ``n`` the rows folded in; ``bins`` the ``(lo, hi, ab)`` items of a bounded
    state whose bins give the bounds, or ``None`` for an exact state.
    Candidate ``k`` calls the ``k`` highest scores positive (threshold
    ``+inf`` for ``k = 0``).
    """

    def __init__(self, scores, ab, n: int, weighted: bool, bins=None, bounded: bool = False):
        m = scores.shape[0]
        self.m = m
        self.n = n
        self.weighted = weighted
        self.scores = scores
        self.bins = bins
        self.bounded = bounded or bins is not None
        if weighted:
            ab = np.ascontiguousarray(ab, dtype=np.float64)
            self.called = running_sums(ab, True, np.zeros((2, m + 1)))
            # the mass not called, summed from the bottom on its own
            self.rest = running_sums(ab, False, np.zeros((2, m + 1)))
            self.P, self.N = float(self.rest[0, 0]), float(self.rest[1, 0])
        else:
            ab = np.ascontiguousarray(ab, dtype=np.int64)
            if m <= NUMPY_MAX:
                # counts add exactly in any order: numpy's running sums are the
                # kernel's, and a small state's first query compiles no kernel
                self.called = np.empty((2, m + 1), np.int64)
                self.called[:, 0] = 0
                self.called[:, 1:] = ab[:, ::-1]
                np.cumsum(self.called[:, 1:], axis=1, out=self.called[:, 1:])
            else:  # the kernel: a tenth faster on 10M scores
                self.called = running_sums(ab, True, np.zeros((2, m + 1), np.int64))
            self.P, self.N = int(self.called[0, m]), int(self.called[1, m])
            self.rest = np.zeros((2, 0))  # fn, tn are P - tp, N - fp: exact
        self._cache: dict = {}

    def threshold(self, k: int) -> float:
        """The threshold of candidate ``k``."""
        return math.inf if k == 0 else float(self.scores[self.m - k])

    @property
    def thresholds(self) -> np.ndarray:
        """Every candidate's threshold, highest first (a new array)."""
        return np.concatenate(([np.inf], self.scores[::-1]))

    # -------------------------------------------------------------- counts
    def _counts(self, k: int):
        """``(tp, fp, fn, tn)`` at candidate ``k`` (Python numbers)."""
        if self.weighted:
            return (float(self.called[0, k]), float(self.called[1, k]),
                    float(self.rest[0, k]), float(self.rest[1, k]))
        tp, fp = int(self.called[0, k]), int(self.called[1, k])
        return tp, fp, self.P - tp, self.N - fp

    def _k_of(self, t: float) -> int:
        """The candidate whose rows are those with ``s >= t``."""
        return self.m - int(np.searchsorted(self.scores, t, side="left"))

    def _straddling(self, t: float):
        """Positive and negative mass of the bins with ``lo < t <= hi``."""
        lo, hi, ab = self.bins
        inside = (lo < t) & (t <= hi)
        if not inside.any():
            return (0.0, 0.0) if self.weighted else (0, 0)
        part = ab[:, inside].sum(axis=1)
        if self.weighted:
            return float(part[0]), float(part[1])
        return int(part[0]), int(part[1])

    def result(self, k: int, extra=None, t=None) -> BinaryResult:
        """The binary result at candidate ``k`` with its threshold ``t`` (by default
        the candidate's score) and ``extra`` fields."""
        t = self.threshold(k) if t is None else t
        tp, fp, fn, tn = self._counts(k)
        values, meta = _values_at(tp, fp, fn, tn, self.n, self.weighted, t)
        if self.bounded:
            up, un = (0, 0) if self.bins is None else self._straddling(t)
            # corner A: the straddling positives called, negatives not; corner B the reverse
            a = binary_result(tp + up, fp, fn - up, tn, n=self.n)
            b = binary_result(tp, fp + un, fn, tn - un, n=self.n)
            values.update(tp_lower=tp, tp_upper=tp + up, fp_lower=fp, fp_upper=fp + un)
            for name in _MONOTONE:
                values[f"{name}_lower"] = b[name]
                values[f"{name}_upper"] = a[name]
            meta["bounds"] = up != 0 or un != 0
        values.update(extra or {})
        return BinaryResult("BinaryScores", values, meta)

    # ------------------------------------------------------------- queries
    def at_threshold(self, t) -> BinaryResult:
        t = check_threshold(t)
        return self.result(self._k_of(t), t=t)

    def _first(self, holds) -> int:
        """The first candidate where ``holds(k)`` (false, then true along k), or m + 1."""
        return bisect.bisect_left(range(self.m + 1), True, key=holds)

    def _last(self, holds) -> int:
        """The last candidate where ``holds(k)`` (true, then false along k), or -1."""
        return bisect.bisect_left(range(self.m + 1), True, key=lambda k: not holds(k)) - 1

    def _precision_reach(self):
        """``reach[k]``: the highest precision at candidate ``k`` or below (non-increasing)."""
        if "reach" not in self._cache:
            self._cache["reach"] = precision_reach(self.called, np.empty(self.m + 1))
        return self._cache["reach"]

    def threshold_for(self, **targets) -> BinaryResult:
        name, value = _target(targets)
        tp, fp = self.called[0], self.called[1]
        sp, sn = safe(self.P), safe(self.N)
        if name == "recall":
            # the highest threshold reaching it: the fewest false positives
            k = self._first(lambda k: tp[k] / sp >= value)
            if k > self.m:
                raise _unreached(name, value, self.P, self.N, tp[self.m] / sp)
        elif name == "fpr":
            # the lowest threshold within it: the most true positives
            k = self._last(lambda k: fp[k] / sn <= value)
        elif name == "specificity":
            k = self._last(lambda k: self._specificity(k) >= value)
            if k < 0:
                raise _unreached(name, value, self.P, self.N, None)
        else:
            # the lowest threshold reaching it: the most true positives
            reach = self._precision_reach()
            k = self._last(lambda k: reach[k] >= value)
            if k < 0:
                raise _unreached(name, value, self.P, self.N, reach[0])
        return self.result(k, {"target": name, "target_value": value})

    def _specificity(self, k: int) -> float:
        fp = float(self.called[1, k])
        tn = float(self.rest[1, k]) if self.weighted else float(self.N) - fp
        return tn / safe(tn + fp)

    def best_threshold(self, score=None, cost=None) -> BinaryResult:
        score, c = _objective(score, cost)
        if c is not None:
            known = self._cache.get(("cost", c.tobytes()))
            if known is None:
                k, total = best_candidate(self.called, self.rest, float(self.P), float(self.N),
                                          SCORE_CODES["cost"], c)
                known = int(k), float(total)
                if len(self._cache) < _CACHED:
                    self._cache[("cost", c.tobytes())] = known
            return self.result(known[0], {"cost": known[1]})
        key = ("score", score)
        if key not in self._cache:
            k, best = best_candidate(self.called, self.rest, float(self.P), float(self.N),
                                     SCORE_CODES[score], _NO_COST)
            self._cache[key] = int(k), float(best)
        k, best = self._cache[key]
        return self.result(k, {"score": score, "best": best})

    def partial_auc(self, max_fpr, mcclish: bool = False) -> float:
        max_fpr = check_max_fpr(max_fpr)
        if self.P == 0 or self.N == 0:
            return 0.0  # no pairs: the guard, as for the AUC
        if not self.weighted and 2 * self.P * self.N <= EXACT_LIMIT:
            # counts: each step's doubled area is an integer, summed exactly
            area = float(partial_area_exact(self.called, self.P, self.N, max_fpr))
        else:
            area = float(partial_area(self.called, float(self.P), float(self.N), max_fpr))
        if not mcclish:
            return area
        least, most = max_fpr * max_fpr / 2.0, max_fpr
        return float(0.5 * (1.0 + (area - least) / (most - least)))

    def curves(self):
        """``(thresholds, precision, recall, f1)`` at every candidate but ``+inf``
        (highest threshold first), for plots."""
        tp, fp = self.called[0, 1:].astype(float), self.called[1, 1:].astype(float)
        precision = tp / safe(tp + fp)
        recall = tp / safe(float(self.P))
        f1 = 2 * precision * recall / safe(precision + recall)
        return self.scores[::-1], precision, recall, f1


_TOP = int(K._TOP)


def _key_float(key: int) -> float:
    """The score of a key (``+inf`` for the top, the candidate above every score)."""
    if key == _TOP:
        return math.inf
    bits = key ^ (1 << 63) if key >> 63 else ~key & 0xFFFFFFFFFFFFFFFF
    return float(np.array(bits, np.uint64).view(np.float64))


def _marked_half(b1, ab1, kp, kn, step):
    cap = (b1.shape[0] + kp.shape[0] + kn.shape[0]) // step + 2
    keys, marks = np.empty(cap, np.uint64), np.empty((cap, 6), np.int64)
    u2, p, q, c = K.u2_marked(b1, ab1, kp, kn, step, keys, marks)
    return int(u2), int(p), int(q), keys[:c], marks[:c]


def u2_with_blocks(run, kp, kn, step=None, threads=None):
    """``(2U, n_pos, n_neg, table)``: what
    :func:`~streammetrics.metrics.ranking.sorting.u2_across` counts, with the
    block table of :class:`LayeredPoints` over the same parts marked on the
    way (a block every ``step`` rows or entries, by default
    ``LayeredPoints.STEP``), and the exact doubled area above each block.
    Needs ``2 n_pos n_neg < 2**63``. With ``threads`` (by default: two cores
    and many rows) the parts are cut at the middle key of the longest and the
    two sides counted at the same time, as ``u2_across`` does.

    >>> import numpy as np
    >>> from streammetrics._kernels.rank import score_keys
    >>> run = (np.array([0.1, 0.6]), np.array([[0, 1], [1, 1]]))
    >>> kp, kn = score_keys(np.array([0.4, 0.9])), score_keys(np.array([0.3]))
    >>> u2, n_pos, n_neg, table = u2_with_blocks(run, kp, kn, step=2)
    >>> u2, n_pos, n_neg  # 2U: 7 pairs ranked right, one tied (counted once)
    (15, 3, 3)
    >>> ops = LayeredPoints(run, kp, kn, 6, table)
    >>> ops.partial_auc(1.0) == u2 / (2 * n_pos * n_neg)
    True
    """
    step = LayeredPoints.STEP if step is None else max(int(step), 1)
    s1, ab1 = run
    b1 = np.ascontiguousarray(s1, dtype=np.float64).view(np.uint64)
    ab1 = np.ascontiguousarray(ab1, dtype=np.int64)
    sizes = (b1.shape[0], kp.shape[0], kn.shape[0])
    if threads is None:
        threads = CORES > 1 and sum(sizes) >= 4 * THREADED_MIN
    if not threads or max(sizes) == 0:
        u2, p, q, keys, marks = _marked_half(b1, ab1, kp, kn, step)
    else:
        longest = int(np.argmax(sizes))
        if longest == 0:
            cut_s = float(s1[sizes[0] // 2])
            cut_k = int(score_keys(np.array([cut_s]))[0])
        else:
            cut_k = int((kp, kn)[longest - 1][sizes[longest] // 2])
            cut_s = key_float(cut_k)
        r = int(np.searchsorted(s1, cut_s))
        i = int(np.searchsorted(kp, np.uint64(cut_k)))
        j = int(np.searchsorted(kn, np.uint64(cut_k)))
        job = _sort_pool().submit(_marked_half, b1[:r], ab1[:, :r], kp[:i], kn[:j], step)
        try:
            u2_hi, p_hi, q_hi, keys_hi, hi = _marked_half(b1[r:], ab1[:, r:], kp[i:], kn[j:], step)
        finally:
            u2_lo, p_lo, q_lo, keys_lo, lo = job.result()
        # the upper side's marks as over the whole: its positions and masses
        # start at the cut, and its rows below a mark pair with every
        # negative of the lower side
        hi = hi.copy()
        hi[:, 0] += r
        hi[:, 1] += i
        hi[:, 2] += j
        hi[:, 5] += u2_lo + 2 * hi[:, 3] * q_lo
        hi[:, 3] += p_lo
        hi[:, 4] += q_lo
        u2 = u2_lo + u2_hi + 2 * p_hi * q_lo
        p, q = p_lo + p_hi, q_lo + q_hi
        keys, marks = np.concatenate((keys_lo, keys_hi)), np.concatenate((lo, hi))
    nq = keys.shape[0]
    if nq == 0:
        return u2, p, q, None
    ir = np.append(marks[:, 0], sizes[0])
    ip = np.append(marks[:, 1], sizes[1])
    jn = np.append(marks[:, 2], sizes[2])
    seen = np.append(marks[:, 3], p)
    below = np.append(marks[:, 4], q)
    u2_below = np.append(marks[:, 5], u2)
    tp = p - seen
    fp = q - below
    width = np.array([int(np.max(np.diff(ir) + np.diff(ip) + np.diff(jn)))], np.int64)
    # 2U of the rows at or above each boundary: 2U less the rows below's, less
    # the pairs of a positive above and a negative below
    top = u2 - u2_below - 2 * tp * below
    return u2, p, q, ((keys, ir, ip, jn, tp, fp, width), top[1:])


class LayeredPoints:
    """The confusion counts of every threshold of an unweighted exact state held
    as one run and sorted pending rows, read without merging them.

    ``run`` is ``(scores, counts)`` (a run of int64 counts, possibly empty)
    and ``kp``, ``kn`` the sorted keys of the pending positives and negatives
    (see :mod:`streammetrics._kernels.rank`). The same candidates, counts and
    answers as :class:`OperatingPoints` over their merged run, bit for bit.
    Building costs one pass over the run's counts and a search of the keys
    (``O(m / STEP)`` blocks, each of about ``STEP`` keys of each part), or
    nothing when ``table`` gives the blocks (with the exact doubled area
    above each) that :func:`u2_with_blocks` marked on ``finalize``'s walk of
    the same parts; then :meth:`at_threshold` and the monotone targets cost
    ``O(log m + STEP)``, the precision target and :meth:`best_threshold` a
    pass over the blocks' bounds and a walk of the few blocks that may hold
    the answer (each score's answer kept), and :meth:`partial_auc` one block
    once the blocks above the cut have their exact areas: marked, or summed
    by an earlier query (each step's doubled trapezoid is an integer without
    weights, summed exactly, so any partition gives the same bits).

    >>> import numpy as np
    >>> from streammetrics.metrics.ranking.operating import LayeredPoints
    >>> from streammetrics._kernels.rank import score_keys
    >>> run = (np.array([0.1, 0.6]), np.array([[0, 1], [1, 1]]))  # 0.1: a negative; 0.6: one of each
    >>> kp, kn = score_keys(np.array([0.4, 0.9])), score_keys(np.array([0.3]))  # pending, sorted
    >>> ops = LayeredPoints(run, kp, kn, n=6)
    >>> r = ops.at_threshold(0.5)
    >>> r.tp, r.fp, r.fn, r.tn
    (2, 1, 1, 2)
    >>> ops.threshold_for(recall=1.0).threshold, ops.best_threshold("f1").threshold
    (0.4, 0.4)
    """

    #: up to this many stored and pending entries an unweighted exact state
    #: answers threshold queries from a merged copy of its parts rather than
    #: from the parts unmerged (these), and its finalize marks no blocks: at
    #: 4096 entries the copy costs the first query about 0.1 ms more and the
    #: later queries are no slower, while its kernels compile in a fraction of
    #: the layered ones' time on first use
    MIN = 1 << 12
    #: keys of each part per block
    STEP = 512

    def __init__(self, run, kp, kn, n: int, table=None):
        scores, counts = run
        self.n = n
        self.weighted = False
        self._parts = (np.ascontiguousarray(scores, dtype=np.float64).view(np.uint64),
                       np.ascontiguousarray(counts, dtype=np.int64),
                       np.ascontiguousarray(kp, dtype=np.uint64),
                       np.ascontiguousarray(kn, dtype=np.uint64))
        self._saved = None
        self._known = 0
        if table is not None:  # the blocks and areas :func:`u2_with_blocks` marked
            self._blocks, above = table
            self._saved, self._known = above.copy(), 0
        else:
            self._blocks = K.layer_blocks(*self._parts, self.STEP)
        self._args = self._parts + self._blocks
        tpb, fpb = self._blocks[4], self._blocks[5]
        self.P, self.N = int(tpb[0]), int(fpb[0])
        self._cache: dict = {}
        self._lock = threading.Lock()  # the partial sums saved by partial_auc

    def _result(self, key: int, tp: int, fp: int, extra=None, t=None) -> BinaryResult:
        t = _key_float(key) if t is None else t
        tp, fp = int(tp), int(fp)
        values, meta = _values_at(tp, fp, self.P - tp, self.N - fp, self.n, False, t)
        values.update(extra or {})
        return BinaryResult("BinaryScores", values, meta)

    def at_threshold(self, t) -> BinaryResult:
        t = check_threshold(t)
        key = int(score_keys(np.array([t]))[0])
        tp, fp = K.layer_counts(*self._args, np.uint64(key))
        return self._result(key, tp, fp, t=t)

    def threshold_for(self, **targets) -> BinaryResult:
        name, value = _target(targets)
        status, key, tp, fp, _ = K.layer_search(*self._args, K.SEARCH_CODES[name], value)
        if status:
            highest = (self.P / safe(self.P) if name == "recall" else
                       K.layer_search(*self._args, K.SEARCH_CODES["max_precision"], 0.0)[4]
                       if name == "precision" else None)
            raise _unreached(name, value, self.P, self.N, highest)
        return self._result(int(key), tp, fp, {"target": name, "target_value": value})

    def _best(self, code, cost):
        status, key, tp, fp, value = K.layer_best(*self._args, code, cost, True)
        if status:  # near-ties the pruned scan could not settle: scan every block
            status, key, tp, fp, value = K.layer_best(*self._args, code, cost, False)
        return int(key), int(tp), int(fp), float(value)

    def best_threshold(self, score=None, cost=None) -> BinaryResult:
        score, c = _objective(score, cost)
        if c is not None:
            known = self._cache.get(("cost", c.tobytes()))
            if known is None:
                known = self._best(SCORE_CODES["cost"], c)
                if len(self._cache) < _CACHED:
                    self._cache[("cost", c.tobytes())] = known
            key, tp, fp, total = known
            return self._result(key, tp, fp, {"cost": total})
        if score not in self._cache:
            self._cache[score] = self._best(SCORE_CODES[score], _NO_COST)
        key, tp, fp, best = self._cache[score]
        return self._result(key, tp, fp, {"score": score, "best": best})

    def partial_auc(self, max_fpr, mcclish: bool = False) -> float:
        max_fpr = check_max_fpr(max_fpr)
        if self.P == 0 or self.N == 0:
            return 0.0  # no pairs: the guard, as for the AUC
        exact = 2 * self.P * self.N <= EXACT_LIMIT
        with self._lock:
            if self._saved is None:
                self._known = self._blocks[0].shape[0]
                # exact: the doubled area above each block; else (area, x, y) there
                self._saved = np.empty(self._known, np.int64) if exact else np.empty((self._known, 3))
            walk = K.layer_partial_exact if exact else K.layer_partial_area
            area, self._known = walk(*self._args, max_fpr, self._saved, self._known)
        area = float(area)
        if not mcclish:
            return area
        least, most = max_fpr * max_fpr / 2.0, max_fpr
        return float(0.5 * (1.0 + (area - least) / (most - least)))
