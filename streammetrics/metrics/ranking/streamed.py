"""Average precision and threshold queries of a spilled exact state, streamed.

A spilled exact state (``RankAUC(max_memory=...)``) holds its sorted runs in
files; its merged run may be far larger than memory (24 bytes per distinct
score). The figures here read that run chunk by chunk, from the highest
score down (:func:`descending`: a k-way merge of the runs read backwards,
``chunk`` entries of each run per step), carrying a few numbers from chunk to
chunk (:mod:`streammetrics._kernels.streamed`), so they take memory for one
chunk of each run whatever the state's size:

* :meth:`StreamedRun.streamed_average_precision`: one pass. Each term is the one
  :func:`~streammetrics._kernels.curves.ap_terms` computes over the merged
  run; the terms are added with a compensated sum instead of numpy's
  pairwise one (and with weights the recall's denominator is the state's
  compensated positive mass, not a plain sum), so the value agrees with the
  in-memory one to 1e-13 relative, not always to the last bit;
* :class:`StreamedPoints` (:class:`WeightedStreamedPoints` with weights):
  ``at_threshold``, ``threshold_for``, ``best_threshold`` and
  ``partial_auc``, each one pass (stopping early where the rest cannot
  change the answer), with the candidates, counts, tie rules and formulas
  of :class:`~.operating.OperatingPoints`: the same results, bit for bit
  (weighted points first take one pass from the bottom, kept for every
  query, for their false and true negatives);
* :meth:`StreamedRun.delong_sums`: the sums of the DeLong interval
  (``finalize(ci=...)``), two passes from the lowest score up, the same
  bits as over the merged run.

The curves (a value at every distinct score by nature) and saving still
build the merged run in memory.

>>> import numpy as np
>>> from streammetrics import RankAUC
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 3000)
>>> s = rng.normal(size=3000) + y
>>> spilled = RankAUC(max_memory=4096).update(y, s)
>>> r, e = spilled.finalize(), RankAUC().update(y, s).finalize()
>>> abs(r.average_precision() - e.average_precision()) <= 1e-13 * e.average_precision()
True
>>> r.best_threshold("f1") == e.best_threshold("f1")
True
>>> spilled.close()
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ..._kernels import streamed as K
from ..._kernels.operating import EXACT_LIMIT, SCORE_CODES, SEARCH_CODES, _score
from ..._protocol.result import safe
from ..binary import BinaryResult
from .operating import (OperatingPoints, _NO_COST, _objective, _target, _unreached, _values_at,
                        check_max_fpr, check_threshold)
from .spill import DiskRun, _Sources, _window, merge_parts, stream_merge

__all__ = ["descending", "masses_of", "StreamedRun", "StreamedPoints", "WeightedStreamedPoints"]


def _score_of(record) -> float:
    return float(record["s"])


def descending(sources, chunk: int):
    """Merged chunks ``(scores, ab)`` of sorted runs, from the highest scores down.

    The mirror of :func:`~.spill.stream_merge`: each chunk's scores increase
    and every score of a chunk exceeds those of the chunks after it; each step
    reads at most ``chunk`` entries of every source from its end, masses of a
    score held by several sources are added in the order of ``sources`` (the
    same sums as the ascending merge), and chunks never split a score.
    """
    chunk = max(int(chunk), 1)
    src = _Sources(sources)
    ends = list(src.sizes)
    while True:
        live = [i for i in range(len(ends)) if ends[i] > 0]
        if not live:
            return
        # every entry down to the largest first score of a window that does
        # not reach its source's start comes after whatever is unread
        bound = None
        for i in live:
            a = ends[i] - chunk
            if a > 0:
                first = src.score(i, a)
                bound = first if bound is None or first > bound else bound
        parts = []
        for i in live:
            a = max(0, ends[i] - chunk)
            cut = a if bound is None else src.cut(i, a, ends[i], bound, False)
            if cut < ends[i]:
                parts.append((i, cut, ends[i]))
                ends[i] = cut
        yield src.merge(parts)


def masses_of(sources, chunk: int):
    """``(positive, negative)`` mass of unweighted sources, exact Python ints,
    read ``chunk`` entries at a time (the sources are not merged)."""
    p = q = 0
    for src in sources:
        if isinstance(src, DiskRun):
            src = src.records()
        size = src.shape[0] if isinstance(src, np.ndarray) else src[0].shape[0]
        for a in range(0, size, max(int(chunk), 1)):
            _, ab = _window(src, a, min(a + chunk, size))
            p += int(ab[0].sum())
            q += int(ab[1].sum())
    return p, q


class StreamedRun:
    """The points of a spilled exact state, read from its runs when asked.

    ``sources`` are the runs (open file records and in-memory runs: a
    snapshot), ``chunk`` the entries read from each per step, ``n_pos`` and
    ``n_neg`` the state's masses. Calling it builds the merged run in memory
    (for the curves); :meth:`streamed_average_precision`, :meth:`delong_sums`
    and :meth:`operating` stream it instead.
    """

    def __init__(self, sources, chunk: int, weighted: bool, n_pos, n_neg, materialize):
        self.sources = sources
        self.chunk = chunk
        self.weighted = weighted
        self.n_pos = n_pos
        self.n_neg = n_neg
        self._materialize = materialize

    def __call__(self):
        return self._materialize()

    def descending(self):
        return descending(self.sources, self.chunk)

    def _cum(self):
        return np.zeros(2, np.float64 if self.weighted else np.int64)

    def streamed_average_precision(self) -> float:
        """Average precision in one pass (see the module docstring)."""
        cum, acc = self._cum(), np.zeros(3)
        total = float(self.n_pos)
        denom = total + (1.0 if total == 0.0 else 0.0)
        for _, ab in self.descending():
            K.ap_carry(ab, denom, cum, acc)
        return float(max(0.0, -(acc[0] + acc[1])))

    def delong_sums(self, centre: float):
        """:func:`~streammetrics._kernels.intervals.delong_sums_about` of the
        merged run, to the bit, in two passes in increasing order of score."""
        st = np.zeros(7)
        for _, ab in stream_merge(self.sources, self.chunk):
            K.delong_masses_carry(ab, st)
        sp, cp, sn, cn = K.delong_masses_end(st)
        P, N = sp + cp, sn + cn
        if not (P > 0.0 and N > 0.0):
            return 0.0, P, N, 0.0, 0.0
        st = np.zeros(21)
        st[2], st[3] = sp, cp
        for _, ab in stream_merge(self.sources, self.chunk):
            K.delong_carry(ab, P, N, float(centre), st)
        return K.delong_end(P, N, float(centre), st)

    def operating(self, n: int):
        """The operating points, streamed (:class:`StreamedPoints`, or
        :class:`WeightedStreamedPoints` with weights)."""
        if self.weighted:
            return WeightedStreamedPoints(self, n)
        return StreamedPoints(self, n)

    def cuts(self):
        """The chunks of the merged run in increasing order as ``(first score,
        last score, bottom)``, ``bottom`` the compensated pairs ``(s0, c0, s1,
        c1)`` of the masses below the chunk; and the pairs of the whole run.
        One pass; a few numbers per chunk."""
        out, bottom = [], np.zeros(4)
        for scores, ab in stream_merge(self.sources, self.chunk):
            out.append((float(scores[0]), float(scores[-1]), bottom.copy()))
            K.bottom_carry(ab, bottom)
        return out, bottom

    def by_cuts(self, cuts):
        """The chunks of :meth:`cuts`, the highest first: each the same masses
        as the ascending merge's (read again from every source's entries
        between its first and last score)."""
        srcs = []
        for s in self.sources:
            if isinstance(s, DiskRun):
                s = s.records()
            srcs.append(s)

        def lower(src, x, right):
            if isinstance(src, tuple):
                return int(np.searchsorted(src[0], x, side="right" if right else "left"))
            if right:
                return bisect.bisect_right(src, x, key=_score_of)
            return bisect.bisect_left(src, x, key=_score_of)

        for first, last, bottom in reversed(cuts):
            parts = []
            for src in srcs:
                a, b = lower(src, first, False), lower(src, last, True)
                if b > a:
                    parts.append(_window(src, a, b))
            yield (*merge_parts(parts), bottom)


class StreamedPoints:
    """The queries of :class:`~.operating.OperatingPoints` over an unweighted
    :class:`StreamedRun`, each one pass from the highest score down: the same
    thresholds and results, bit for bit.

    >>> import numpy as np
    >>> from streammetrics import RankAUC
    >>> y = np.tile([0, 1, 1, 0, 1], 400)
    >>> s = np.arange(2000) % 997 / 997 + 0.2 * y
    >>> a, b = RankAUC(max_memory=4096).update(y, s), RankAUC().update(y, s)
    >>> a.threshold_for(recall=0.9) == b.threshold_for(recall=0.9)
    True
    >>> a.partial_auc(0.1) == b.partial_auc(0.1)
    True
    >>> a.close()
    """

    def __init__(self, run: StreamedRun, n: int):
        self.run = run
        self.n = n
        self.weighted = False
        self.P, self.N = int(run.n_pos), int(run.n_neg)
        self.bounded = False
        self._cache: dict = {}

    @property
    def m(self) -> int:
        """Whether any score is held (1) or not (0): the distinct scores are not counted."""
        return int(self.P + self.N > 0)

    def curves(self):
        """:meth:`~.operating.OperatingPoints.curves`, built over the merged run in
        memory (a value at every distinct score: the plots' curves)."""
        scores, ab = self.run()
        return OperatingPoints(scores, ab, self.n, False).curves()

    def _result(self, t: float, tp, fp, extra=None) -> BinaryResult:
        tp, fp = int(tp), int(fp)
        values, meta = _values_at(tp, fp, self.P - tp, self.N - fp, self.n, False, t)
        values.update(extra or {})
        return BinaryResult("BinaryScores", values, meta)

    def at_threshold(self, t) -> BinaryResult:
        t = check_threshold(t)
        cum = np.zeros(2, np.int64)
        for scores, ab in self.run.descending():
            if K.counts_from(scores, ab, t, cum):
                break
        return self._result(t, cum[0], cum[1])

    def threshold_for(self, **targets) -> BinaryResult:
        name, value = _target(targets)
        code = SEARCH_CODES[name]
        sp, sn = safe(self.P), safe(self.N)
        # the +inf candidate (no row called), as OperatingPoints tests it
        if code == 0:
            top = 0.0 / sp >= value
        elif code == 1:
            top = True
        elif code == 2:
            tn = float(self.N)
            top = tn / safe(tn) >= value
        else:
            top = 0.0 >= value
        hit = np.array([int(top), 0, 0], np.int64)
        at = np.array([math.inf, 0.0])
        if not (code == 0 and top) and not (code in (1, 2) and not top):
            cum = np.zeros(2, np.int64)
            for scores, ab in self.run.descending():
                if K.target_scan(scores, ab, code, value, self.P, self.N, cum, hit, at):
                    break
        if not hit[0]:
            raise _unreached(name, value, self.P, self.N, self.P / sp if name == "recall" else at[1])
        return self._result(float(at[0]), hit[1], hit[2], {"target": name, "target_value": value})

    def _best(self, code, cost):
        p, n = float(self.P), float(self.N)
        # the +inf candidate first, as best_candidate scores it
        best = np.array([_score(code, 0.0, 0.0, p, n, cost), math.inf])
        hit = np.zeros(2, np.int64)
        cum = np.zeros(2, np.int64)
        for scores, ab in self.run.descending():
            K.best_scan(scores, ab, code, cost, self.P, self.N, cum, hit, best)
        value = float(best[0])
        return float(best[1]), int(hit[0]), int(hit[1]), (-value if code == 6 else value)

    def best_threshold(self, score=None, cost=None) -> BinaryResult:
        score, c = _objective(score, cost)
        if c is not None:
            t, tp, fp, total = self._best(SCORE_CODES["cost"], c)
            return self._result(t, tp, fp, {"cost": float(total)})
        if score not in self._cache:
            self._cache[score] = self._best(SCORE_CODES[score], _NO_COST)
        t, tp, fp, best = self._cache[score]
        return self._result(t, tp, fp, {"score": score, "best": float(best)})

    def partial_auc(self, max_fpr, mcclish: bool = False) -> float:
        max_fpr = check_max_fpr(max_fpr)
        if self.P == 0 or self.N == 0:
            return 0.0  # no pairs: the guard, as for the AUC
        cum = np.zeros(2, np.int64)
        if 2 * self.P * self.N <= EXACT_LIMIT:
            # the steps' doubled areas summed in exact integers, as in memory
            acc, area = np.zeros(3, np.int64), 0.0
            for _, ab in self.run.descending():
                done, area = K.area_scan_exact(ab, self.P, self.N, max_fpr, cum, acc)
                if done:
                    break
            area = float(area)
        else:  # 2 P N past int64: floats, as in memory
            acc = np.zeros(3)
            for _, ab in self.run.descending():
                if K.area_scan(ab, float(self.P), float(self.N), max_fpr, cum, acc):
                    break
            area = float(acc[0])
        if not mcclish:
            return area
        least, most = max_fpr * max_fpr / 2.0, max_fpr
        return float(0.5 * (1.0 + (area - least) / (most - least)))


class WeightedStreamedPoints(StreamedPoints):
    """:class:`StreamedPoints` of a weighted :class:`StreamedRun`: the same
    results as :class:`~.operating.OperatingPoints`, bit for bit.

    Its cells are compensated sums from the top (true and false positives)
    and from the bottom (false and true negatives); a first pass from the
    bottom keeps, for each chunk, the sums below it (a few numbers per chunk),
    so that each query is then one pass from the top that rebuilds every
    chunk's cells (:func:`streammetrics._kernels.streamed.weighted_cells`).
    """

    def __init__(self, run: StreamedRun, n: int):
        self.run = run
        self.n = n
        self.weighted = True
        self.bounded = False
        self._cuts, total = run.cuts()
        self.P, self.N = float(total[0] + total[1]), float(total[2] + total[3])
        self._cache: dict = {}

    def _chunks(self, top=None):
        """``(scores, called, rest)`` of every chunk, the highest first; ``top``
        (zeros) ends holding the pairs of the mass read."""
        top = np.zeros(4) if top is None else top
        for scores, ab, bottom in self.run.by_cuts(self._cuts):
            ab = np.ascontiguousarray(ab, dtype=np.float64)
            called = np.empty(ab.shape)
            rest = np.empty(ab.shape)
            K.weighted_cells(ab, top, bottom, called, rest)
            yield scores, called, rest

    def _none(self):
        return np.array([0.0, 0.0, 0.0, self.P, self.N])  # the +inf candidate

    def _result(self, t: float, hit, extra=None) -> BinaryResult:
        tp, fp, fn, tn = (float(v) for v in hit[1:])
        values, meta = _values_at(tp, fp, fn, tn, self.n, True, t)
        values.update(extra or {})
        return BinaryResult("BinaryScores", values, meta)

    def at_threshold(self, t) -> BinaryResult:
        t = check_threshold(t)
        hit = self._none()
        for scores, called, rest in self._chunks():
            if K.cells_from(scores, called, rest, t, hit):
                break
        return self._result(t, hit)

    def threshold_for(self, **targets) -> BinaryResult:
        name, value = _target(targets)
        code = SEARCH_CODES[name]
        sp = safe(self.P)
        if code == 0:
            top = 0.0 / sp >= value
        elif code == 1:
            top = True
        elif code == 2:
            top = self.N / safe(self.N) >= value
        else:
            top = 0.0 >= value
        hit = self._none()
        hit[0] = float(top)
        at = np.array([math.inf, 0.0])
        pairs = np.zeros(4)
        if not (code == 0 and top) and not (code in (1, 2) and not top):
            for scores, called, rest in self._chunks(pairs):
                if K.cells_target(scores, called, rest, code, value, self.P, self.N, hit, at):
                    break
        if not hit[0]:
            raise _unreached(name, value, self.P, self.N,
                             (pairs[0] + pairs[1]) / sp if name == "recall" else at[1])
        return self._result(float(at[0]), hit, {"target": name, "target_value": value})

    def _best(self, code, cost):
        best = np.array([_score(code, 0.0, 0.0, self.P, self.N, cost), math.inf])
        hit = self._none()
        for scores, called, rest in self._chunks():
            K.cells_best(scores, called, rest, code, cost, hit, best)
        value = float(best[0])
        return float(best[1]), hit, (-value if code == 6 else value)

    def best_threshold(self, score=None, cost=None) -> BinaryResult:
        score, c = _objective(score, cost)
        if c is not None:
            t, hit, total = self._best(SCORE_CODES["cost"], c)
            return self._result(t, hit, {"cost": float(total)})
        if score not in self._cache:
            self._cache[score] = self._best(SCORE_CODES[score], _NO_COST)
        t, hit, best = self._cache[score]
        return self._result(t, hit, {"score": score, "best": float(best)})

    def partial_auc(self, max_fpr, mcclish: bool = False) -> float:
        max_fpr = check_max_fpr(max_fpr)
        if self.P == 0 or self.N == 0:
            return 0.0  # no pairs: the guard, as for the AUC
        acc = np.zeros(3)
        for _, called, _ in self._chunks():
            if K.cells_area(called, self.P, self.N, max_fpr, acc):
                break
        area = float(acc[0])
        if not mcclish:
            return area
        least, most = max_fpr * max_fpr / 2.0, max_fpr
        return float(0.5 * (1.0 + (area - least) / (most - least)))

    def curves(self):
        scores, ab = self.run()
        return OperatingPoints(scores, ab, self.n, True).curves()
