"""The one query engine of a rank state: every threshold, its counts and its scores.

*Boundary* ``i`` (``0 <= i <= m``) calls the state's points from ``i`` on positive (``i = m``: ``+inf``). The blocks of
a run (in memory or a file's) keep their starting counts; every score rises with the true positives and falls with the
false positives, so a query reads only the blocks whose corners may hold its answer.
"""

from __future__ import annotations

import math
import numbers
import threading
from functools import partial

import numpy as np

from ..._kernels import pairs as K
from ..._kernels.totals import block_counts, delong_masses, delong_sums, running_pairs
from ..._protocol.errors import WeightOverflowError
from ..._protocol.result import safe
from ..._protocol.validation import check_choice, cut_in
from .. import binary
from ..binary import BinaryResult, binary_result
from . import spill

TARGETS = ("recall", "precision", "fpr", "specificity")  # the targets ``threshold_for`` meets


def scores() -> tuple:
    """The scores ``best_threshold`` maximises: every binary score but the targets."""
    return tuple(name for name in binary.score_formulas(1, 1, 1, 1, 4, float, math.sqrt) if name not in TARGETS)


BLOCK = 256  # entries of a block of a state in memory
_GROUP = 64  # blocks of a state in memory read together by the weighted partial area
_SLICE = 4096  # counts whose scores are computed at a time (their temporaries stay in cache)
TIE = 1e-12  # relative difference below which two scores are a tie (the same fraction rounded two ways)
#: rates whose bounds over a straddling bin are at the two corners
_MONOTONE = ("accuracy", "precision", "recall", "specificity", "f1", "balanced_accuracy", "jaccard")
EXACT_LIMIT = (1 << 63) - 1  # the largest ``2 P N`` whose partial area is summed in exact integers
_CACHED = 64  # the most cost matrices whose answers a state keeps
NO_PAIRS = np.zeros((0, 4))
_TESTS = {"ge": (1, np.greater_equal), "le": (0, np.less_equal), "gt": (1, np.greater)}  # (range end, test)
INT64_LIMIT = 2**63


def _real(name, value, ok=lambda v: not math.isnan(v), within="be a number") -> float:
    """``value`` as a float for which ``ok`` holds, or ``TypeError``/``ValueError``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not ok(float(value)):
        raise ValueError(f"{name} must {within}, got {value!r}")
    return float(value)


def _check_cost(cost) -> np.ndarray:
    c = np.asarray(cost)
    if c.dtype == object or not (np.issubdtype(c.dtype, np.number) or c.dtype == bool):
        raise TypeError(f"cost must be a 2 x 2 array of numbers, got dtype {c.dtype}")
    if c.shape != (2, 2):
        raise ValueError(
            "cost must be a 2 x 2 matrix [[tn, fp], [fn, tp]] (rows: actual 0, 1; "
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
        raise TypeError(f"threshold_for() got an unexpected target {unknown[0]!r}; targets: {', '.join(TARGETS)}")
    if len(given) != 1:
        raise TypeError("threshold_for() takes exactly one target: " + ", ".join(f"{t}=" for t in TARGETS))
    ((name, value),) = given.items()
    return name, _real(name, value, lambda v: 0.0 <= v <= 1.0, "lie in [0, 1]")


def _objective(score, cost):
    """``(score, None)`` or ``("cost", cost matrix)`` for ``best_threshold``, checked."""
    if cost is not None:
        if score is not None:
            raise TypeError("best_threshold() takes a score or a cost, not both")
        return "cost", _check_cost(cost)
    score = "f1" if score is None else score
    if not isinstance(score, str):
        raise TypeError(f"score must be a string, got {type(score).__name__}")
    return check_choice("score", score, scores()), None


def _top(v, axis=None):
    """The greatest value of ``v``, NaN (an undefined score) taken as ``-inf``."""
    return np.max(np.where(np.isnan(v), -np.inf, v), axis=axis, initial=-np.inf)


def _mass_note(what, total) -> str:
    return f"no {what} was seen" if total == 0 else f"{total:g} {what} mass"


def score_columns(cells, N, cost=None) -> dict:
    """Every score of the counts ``cells`` (tp, fp, fn, tn rows), ``fpr`` and ``-cost``, by cache-sized slices."""
    parts = []
    for a in range(0, max(cells.shape[1], 1), _SLICE):
        tp, fp, fn, tn = np.asarray(cells[:, a : a + _SLICE], np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = binary.score_formulas(tp, fp, fn, tn, tp + fp + fn + tn, np.asarray, np.sqrt)
        out["fpr"] = fp / safe(float(N))
        if cost is not None:
            out["cost"] = -(cost[0, 0] * tn + cost[0, 1] * fp + cost[1, 0] * fn + cost[1, 1] * tp)
        parts.append(out)
    if len(parts) == 1:
        return parts[0]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def u2_counts(ab, n_pos: int, n_neg: int) -> int:
    """Exact ``2U`` of int64 counts as a Python int (128-bit when int64 would overflow)."""
    if 2 * n_pos * n_neg < INT64_LIMIT:
        out = np.zeros((3, 1), np.int64)
        block_counts(ab, max(1, ab.shape[1]), out)
        return int(out[2, 0])
    high, low = K.u2_int128(ab)
    return (int(high) << 64) | int(low)


def auc_of_chunks(chunks, weighted: bool):
    """``(auc, n_pos, n_neg)`` of a run given as chunks (``chunks()`` a new iterator each call): exact integers for
    counts, compensated sums for weights; independent of where the chunks are cut.
    """
    if weighted:
        carry = np.zeros(4)
        for _, ab in chunks():
            running_pairs(np.ascontiguousarray(ab, np.float64), carry, False, 1, NO_PAIRS)
        n_pos, n_neg = float(carry[0] + carry[1]), float(carry[2] + carry[3])
        if not (math.isfinite(n_pos) and math.isfinite(n_neg)):
            raise WeightOverflowError(scores="the total weights of the positives and the negatives")
        if n_pos == 0 or n_neg == 0:
            return 0.0, n_pos, n_neg
        carry = np.zeros(4)
        for _, ab in chunks():
            K.u2_float_carry(ab, 1.0 / n_pos, 1.0 / n_neg, carry)
        return min(max(float(carry[2] + carry[3]) / 2.0, 0.0), 1.0), n_pos, n_neg
    u2 = n_pos = n_neg = 0
    for _, ab in chunks():
        if ab.shape[1]:
            p, q = int(ab[0].sum()), int(ab[1].sum())
            u2 += u2_counts(ab, p, q) + 2 * p * n_neg
            n_pos += p
            n_neg += q
    return u2 / (2 * safe(n_pos * n_neg)), n_pos, n_neg


def _cells(called, rest):
    """The cells (tp, fp, fn, tn) of the compensated pairs of the masses called positive and of the rest."""
    return np.vstack(((called[:, 0::2] + called[:, 1::2]).T, (rest[:, 0::2] + rest[:, 1::2]).T))


def empty_run(weighted: bool):
    return np.zeros(0), np.zeros((2, 0), np.float64 if weighted else np.int64)


def joined(chunks, weighted: bool):
    """One run of consecutive chunks ``(scores, ab)``."""
    parts = list(chunks)
    if not parts:
        return empty_run(weighted)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts], axis=1)


def is_binned(items) -> bool:
    """Whether ``items`` hold a bin (a range ``lo < hi``): figures read off them are then approximate."""
    return items is not None and bool(np.any(items[1] > items[0]))


class Points:
    """The counts at every threshold of a rank state, and its queries.

    ``source`` is a run ``(scores, ab)`` or ``(read, m)`` (``read(a, b)`` gives entries ``a:b``); ``window`` the entries
    a pass over a run not in memory reads at a time; ``items`` (a bounded state's) make results carry certified bounds.
    """

    def __init__(self, source, n: int, weighted: bool, block: int = BLOCK, items=None, window: int = 0):
        self.run = None if callable(source[0]) else tuple(source)
        if self.run is None:
            self.read, self.m = source
        else:
            self.read, self.m = partial(spill.window, self.run), self.run[0].shape[0]
        self.n = n
        self.weighted = weighted
        self.block = max(1, int(block))
        #: the blocks read at a time by a pass over a run not in memory
        self.per_read = max(1, int(window) // self.block)
        self.nb = max(1, -(-self.m // self.block))
        self.items = items
        #: the float dtype the scores came in where narrower than float64 (thresholds are rounded to it)
        self.source = None
        self.binned = is_binned(items)
        self.cast = float if weighted else int
        self._lock = threading.RLock()
        self._answers: dict = {}
        self._above = None  # the area of the ROC steps above every block (see partial_auc)
        self._marks()

    def _end(self, j: int) -> int:
        """The boundary that ends block ``j`` (where block ``j + 1`` starts)."""
        return min(self.m, (j + 1) * self.block)

    def _windows(self):
        """The spans read by a pass: the whole run in memory, else a block at a time."""
        if self.run is not None:
            return [(0, self.m)] if self.m else []
        step = self.per_read * self.block
        return [(a, min(self.m, a + step)) for a in range(0, self.m, step)]

    def chunks(self):
        """The run's chunks ``(scores, ab)``, lowest scores first."""
        return (self.read(a, b) for a, b in self._windows())

    def _marks(self) -> None:
        """One pass: each block's first score and starting counts (weights: compensated sums both ways)."""
        nb, B = self.nb, self.block
        self.firsts = np.empty(nb)
        counts, bottom, up = np.zeros((2, nb), np.int64), np.zeros((nb + 1, 4)), np.zeros(4)
        windows = self._windows()
        for a, b in windows:
            scores, ab = self.read(a, b)
            j, k = a // B, a // B - (-(b - a) // B)
            self.firsts[j:k] = scores[::B]
            if self.weighted:
                running_pairs(np.ascontiguousarray(ab, np.float64), up, False, B, bottom[j : k + 1])
            else:
                counts[:, j:k] = np.add.reduceat(ab, np.arange(0, b - a, B), axis=1)
        if not self.weighted:
            below = np.zeros((2, nb + 1), np.int64)
            np.cumsum(counts, axis=1, out=below[:, 1:])
            self.P, self.N = int(below[0, nb]), int(below[1, nb])
            self.marks = np.stack((self.P - below[0], self.N - below[1], below[0], below[1]))
            return
        top, down = np.zeros((nb + 1, 4)), np.zeros(4)
        for a, b in reversed(windows):
            j = a // B
            ab = np.ascontiguousarray(self.read(a, b)[1], np.float64)
            running_pairs(ab, down, True, B, top[j : j + 1 - (-(b - a) // B)])
        self.bottom, self.top = bottom, top
        self.P, self.N = float(bottom[nb, 0] + bottom[nb, 1]), float(bottom[nb, 2] + bottom[nb, 3])
        self.marks = _cells(top, bottom)

    def _span(self, j: int, k: int = None):
        """``(scores, cells)`` of blocks ``j .. k``: counts (tp, fp, fn, tn) at each of their boundaries."""
        k = j if k is None else k
        a, b = j * self.block, self._end(k)
        scores, ab = self.read(a, b)
        if not self.weighted:
            below = np.empty((2, b - a + 1), np.int64)
            below[:, 0] = self.marks[2:, j]
            np.cumsum(ab, axis=1, out=below[:, 1:])
            below[:, 1:] += below[:, :1]
            return scores, np.stack((self.P - below[0], self.N - below[1], below[0], below[1]))
        ab = np.ascontiguousarray(ab, np.float64)
        called, rest = np.empty((b - a + 1, 4)), np.empty((b - a + 1, 4))
        running_pairs(ab, self.top[k + 1].copy(), True, 1, called)
        running_pairs(ab, self.bottom[j].copy(), False, 1, rest)
        return scores, _cells(called, rest)

    def _spans(self, blocks, most: int):
        """``(j, k, scores, cells)`` of each run of adjacent ``blocks`` ``j .. k`` (increasing, distinct), read at most
        ``most`` blocks at a time."""
        for run in np.split(blocks, np.flatnonzero(np.diff(blocks) != 1) + 1) if len(blocks) else []:
            for a in range(0, len(run), most):
                j, k = int(run[a]), int(run[min(a + most, len(run)) - 1])
                yield j, k, *self._span(j, k)

    def _at(self, i: int):
        """The counts at boundary ``i`` as Python numbers, and its threshold."""
        cells, thresholds = self.at([i])
        return tuple(self.cast(c) for c in cells[:, 0]), float(thresholds[0])

    def at(self, boundaries):
        """``(cells, thresholds)`` at the increasing ``boundaries``: their counts (tp, fp, fn, tn rows) and scores
        (``+inf`` at ``m``), from the marks and the blocks holding them, read a few adjacent blocks at a time."""
        at = np.asarray(boundaries, np.int64)
        cells, thresholds = np.empty((4, at.size), self.marks.dtype), np.full(at.size, np.inf)
        blocks = np.minimum(at // self.block, self.nb - 1)
        for j, k, scores, span in self._spans(np.unique(blocks), _GROUP if self.run is not None else self.per_read):
            lo, hi = np.searchsorted(blocks, [j, k + 1])
            offset = at[lo:hi] - j * self.block
            cells[:, lo:hi] = span[:, offset]
            inside = at[lo:hi] < self.m
            thresholds[lo:hi][inside] = scores[offset[inside]]
        return cells, thresholds

    def _kept(self, key, make):
        """``make()``, kept under ``key`` (the first :data:`_CACHED` answers)."""
        got = self._answers.get(key)
        if got is None:
            got = make()
            if len(self._answers) < _CACHED:
                self._answers[key] = got
        return got

    def _corners(self, cost=None):
        """Every score at the marks and at the four corners of every block's counts."""

        def make():
            marks = score_columns(self.marks, self.N, cost)
            start, end = self.marks[:, :-1], self.marks[:, 1:]
            corners = [marks, {f: v[:-1] for f, v in marks.items()}, {f: v[1:] for f, v in marks.items()}]
            return corners + [
                score_columns(np.stack((pos[0], neg[1], pos[2], neg[3])), self.N, cost)
                for pos, neg in ((start, end), (end, start))
            ]

        return self._kept(("corners", None if cost is None else cost.tobytes()), make)

    def _ranges(self, name, cost=None):
        """Per block, the least and greatest value score ``name`` may take (between its corners, widened)."""

        def make():
            vals = np.array([c[name] for c in self._corners(cost)[1:]])
            low, high = -_top(-vals, axis=0), _top(vals, axis=0)
            slack = 1e-9 * np.maximum(np.abs(low), np.abs(high)) + 1e-12
            return low - slack, high + slack

        return self._kept(("ranges", name, None if cost is None else cost.tobytes()), make)

    def _values(self, blocks, name, cost=None):
        """``(boundaries, values)`` of score ``name`` over ``blocks``."""
        parts = [(np.arange(j * self.block, self._end(k) + 1), c) for j, k, _, c in self._spans(blocks, len(blocks))]
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0)
        at, cells = zip(*parts)
        return np.concatenate(at), score_columns(np.concatenate(cells, axis=1), self.N, cost)[name]

    def _search(self, name, value, op, first: bool):
        """The first (else last) boundary whose score ``name`` is ``op`` ``value`` (``None``: none)."""
        side, test = _TESTS[op]  # which end of each block's range may pass the test
        blocks = np.flatnonzero(test(self._ranges(name)[side], value))
        for j in blocks if first else blocks[::-1]:
            at, v = self._values(np.array([j]), name)
            hit = np.flatnonzero(test(v, value))
            if hit.size:
                return int(at[hit[0] if first else hit[-1]])
        return None

    def _best(self, name, cost=None):
        """``(i, value)``: the highest threshold within a relative :data:`TIE` of the best score, reading blocks from
        the greatest possible value down while they can still beat it.
        """
        _, high = self._ranges(name, cost)
        top = _top(self._corners(cost)[0][name])  # the marks are boundaries too
        order = np.argsort(-high, kind="stable")
        found = []
        while order.size and high[order[0]] >= top - TIE * abs(top):
            take, order = np.sort(order[:_GROUP]), order[_GROUP:]
            at, v = self._values(take, name, cost)
            top = max(top, _top(v))
            found.append((at, v))
            order = order[high[order] >= top - TIE * abs(top)]
        least = top - TIE * abs(top)
        hits = [int(at[k[-1]]) for at, v in found for k in [np.flatnonzero(v >= least)] if k.size]
        if not hits:
            return self.m, math.nan  # no score is defined (no mass): the result says why
        i = max(hits)
        at, v = next((at, v) for at, v in found if at[0] <= i <= at[-1] and np.any(at == i))
        return i, float(v[np.flatnonzero(at == i)[0]])

    def result(self, i: int, extra=None, t=None) -> BinaryResult:
        """The binary result at boundary ``i`` (threshold ``t``, by default its score), plus ``extra``."""
        (tp, fp, fn, tn), at = self._at(i)
        t = at if t is None else t
        meta = {"threshold": t, "weighted": self.weighted}
        values = binary_result(tp, fp, fn, tn, n=self.n).as_dict()
        values["threshold"] = t
        if self.items is not None:  # a bounded state's: certified bounds
            # up, un: the positive and negative mass of the bins with lo < t <= hi (rows on either side of t)
            lo, hi, ab, _ = self.items
            up, un = map(self.cast, ab[:, (lo < t) & (t <= hi)].sum(axis=1)) if self.binned else (0, 0)
            # corner A: the straddling positives called, negatives not; corner B the reverse
            a = binary_result(tp + up, fp, fn - up, tn, n=self.n)
            b = binary_result(tp, fp + un, fn, tn - un, n=self.n)
            values.update(tp_lower=tp, tp_upper=tp + up, fp_lower=fp, fp_upper=fp + un)
            values.update((f"{name}_{end}", r[name]) for name in _MONOTONE for end, r in (("lower", b), ("upper", a)))
            meta["bounds"] = up != 0 or un != 0
        values.update(extra or {})
        return BinaryResult("BinaryScores", values, meta)

    def at_threshold(self, t) -> BinaryResult:
        """The binary result with the rows ``s >= t`` called positive (``t`` rounded to
        ``source``, the float dtype the scores came in, as numpy compares)."""
        t = _real("t", t)  # infinities allowed
        c = cut_in(t, self.source)
        j = int(np.searchsorted(self.firsts[: -(-self.m // self.block)], c, side="left"))
        i = 0
        if j:
            scores = self.read((j - 1) * self.block, self._end(j - 1))[0]
            i = (j - 1) * self.block + int(np.searchsorted(scores, c, side="left"))
        return self.result(i, t=t)

    def threshold_for(self, **targets) -> BinaryResult:
        """The threshold meeting one target (see ``RankAUC.threshold_for``)."""
        name, value = _target(targets)
        # recall: the highest threshold reaching it (the fewest false positives); fpr: the lowest within it (the most
        # true positives); else the lowest reaching it
        op, first = ("ge", False) if name == "recall" else ("le", True) if name == "fpr" else ("ge", True)
        i = self._search(name, value, op, first=first)
        if i is None:
            if name == "recall":
                highest = score_columns(self.marks[:, :1], self.N)["recall"][0]
                note = _mass_note("positive", self.P)
                raise ValueError(f"no threshold reaches recall {value:g}: the highest is {highest:g} ({note})")
            if name == "specificity":
                raise ValueError(f"no threshold reaches specificity {value:g} ({_mass_note('negative', self.N)})")
            highest = self._best("precision")[1]
            raise ValueError(f"no threshold reaches precision {value:g}: the highest is {highest:g}")
        return self.result(i, {"target": name, "target_value": value})

    def best_threshold(self, score=None, cost=None) -> BinaryResult:
        """The threshold of the best score or the least cost (see ``RankAUC.best_threshold``)."""
        name, c = _objective(score, cost)
        scale = 1.0
        if c is not None and np.any(c):  # a power of two, so that costs of any scale give the same sums exactly
            scale = 2.0 ** int(np.frexp(np.abs(c).max())[1])
            c = c / scale
        i, v = self._kept(name if c is None else ("cost", c.tobytes()), lambda: self._best(name, c))
        return self.result(i, {"score": name, "best": v} if c is None else {"cost": -v * scale})

    def ks_statistic(self) -> BinaryResult:
        """The greatest ``|tpr - fpr|`` and its threshold (see ``RankAUC.ks_statistic``): ``tpr - fpr`` and its
        reverse are linear in the counts, so each is the least cost of a cost matrix."""
        if self.P == 0 or self.N == 0:  # no pair of classes to tell apart: the guard, as for the AUC
            return self.result(self.m, {"ks": 0.0, "ks_sign": 1, "ks_lower": 0.0, "ks_upper": 0.0})
        sp, sn = 1.0 / self.P, 1.0 / self.N
        up = self._kept("ks+", lambda: self._best("cost", np.array([[0.0, sn], [0.0, -sp]])))
        down = self._kept("ks-", lambda: self._best("cost", np.array([[0.0, -sn], [0.0, sp]])))
        i = down[0] if down[1] > up[1] + TIE * abs(up[1]) else up[0]
        (tp, fp, fn, tn), _ = self._at(i)
        if not self.weighted:  # rounded once
            d = (tp * self.N - fp * self.P) / (self.P * self.N)
        else:  # from the smaller rates: tpr - fpr = tnr - fnr
            d = tp / self.P - fp / self.N if tp / self.P + fp / self.N <= 1.0 else tn / self.N - fn / self.P
        ks, sign = abs(d), -1 if d < 0 else 1
        lower, upper = ks_bounds(self.items, ks) if self.binned else (ks, ks)
        return self.result(i, {"ks": ks, "ks_sign": sign, "ks_lower": lower, "ks_upper": upper})

    def partial_auc(self, max_fpr, mcclish: bool = False) -> float:
        """The area under the ROC curve up to ``max_fpr`` (see ``RankAUC.partial_auc``)."""
        max_fpr = _real("max_fpr", max_fpr, lambda v: 0.0 < v <= 1.0, "lie in (0, 1]")
        if self.P == 0 or self.N == 0:
            return 0.0  # no pairs: the guard, as for the AUC
        exact = not self.weighted and 2 * self.P * self.N <= EXACT_LIMIT
        cut = self._search("fpr", max_fpr, "gt", first=False)  # the step from cut + 1 down crosses max_fpr
        low = 0 if cut is None else cut + 1
        j = min(low // self.block, self.nb - 1)
        area = self._area_above(j, exact)
        cells = self._span(j)[1][:, low - j * self.block :]
        area = self._steps(cells, exact, area)[-1]
        (y0, x0, _, _), _ = self._at(low)  # the last point within max_fpr
        (y1, x1, _, _), _ = ((y0, x0, 0, 0), None) if cut is None else self._at(cut)
        if exact:
            area = _exact_area(area, x0, y0, x1, y1, cut is not None, self.P, self.N, max_fpr)
        elif cut is not None:
            sp, sn = safe(float(self.P)), safe(float(self.N))
            x0, y0, x1, y1 = x0 / sn, y0 / sp, x1 / sn, y1 / sp
            if x0 < max_fpr:
                y_cut = y0 + (y1 - y0) * (max_fpr - x0) / (x1 - x0)
                area += (max_fpr - x0) * (y0 + y_cut) / 2.0
        area = float(area)
        if not mcclish:
            return area
        least, most = max_fpr * max_fpr / 2.0, max_fpr
        return float(0.5 * (1.0 + (area - least) / (most - least)))

    def _area_above(self, j: int, exact: bool):
        """The area of the ROC steps above block ``j``, kept as blocks are read from the top."""
        above = self._above = [0] if self._above is None else self._above
        with self._lock:
            while len(above) < self.nb - j:  # the next blocks down, up to a few at a time
                top = self.nb - len(above)
                most = self.per_read if self.run is None else _GROUP * (16 if exact else 1)
                first = max(j + 1, top - most + 1)
                if exact:
                    counts = np.zeros((3, top - first + 1), np.int64)
                    block_counts(self.read(first * self.block, self._end(top))[1], self.block, counts)
                    areas = 2 * self.marks[0, first + 1 : top + 2] * counts[1] + counts[2]
                    above.extend((above[-1] + np.cumsum(areas[::-1])).tolist())
                else:
                    cells = self._span(first, top)[1]
                    sums = self._steps(cells, False, above[-1])
                    ends = (np.arange(top, first - 1, -1) - first) * self.block  # each block's start, from the top
                    above.extend(sums[cells.shape[1] - 1 - ends])
            return above[self.nb - 1 - j]

    def _steps(self, cells, exact: bool, area):
        """``area`` plus the running sums of the ROC steps of ``cells``, from the top down."""
        tp, fp = cells[0, ::-1], cells[1, ::-1]
        if exact:
            return area + np.concatenate(([0], np.cumsum(np.diff(fp) * (tp[:-1] + tp[1:]))))
        sp, sn = safe(float(self.P)), safe(float(self.N))
        x, y = fp.astype(np.float64) / sn, tp.astype(np.float64) / sp
        return np.cumsum(np.concatenate(([area], np.diff(x) * (y[:-1] + y[1:]) / 2.0)))

    def auc(self):
        """``(auc, n_pos, n_neg)`` (:func:`auc_of_chunks`)."""
        return auc_of_chunks(self.chunks, self.weighted)

    def average_precision(self) -> float:
        """Average precision (scikit-learn's steps): in memory the curve's bits, in blocks to 1e-13 relative."""
        windows = self._windows()
        denom = None if len(windows) == 1 else safe(float(self.P))
        carry = np.zeros(2, np.float64 if self.weighted else np.int64)
        prev, sums = 0.0, []
        for a, b in reversed(windows):
            ab = self.read(a, b)[1]
            running = carry[:, None] + np.cumsum(ab[:, ::-1], axis=1)
            carry = running[:, -1].copy()
            tps, fps = running.astype(np.float64)
            ps = tps + fps
            precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
            recall = tps / (safe(tps[-1]) if denom is None else denom)
            terms = (np.concatenate(([prev], recall[:-1])) - recall) * precision
            prev = recall[-1]
            sums.append(float(np.sum(np.ascontiguousarray(terms[::-1]))))
        return float(max(0.0, -math.fsum(sums)))

    def delong_sums(self, centre: float):
        """``(theta, P, N, ss_pos, ss_neg)``: DeLong's sums of the placement values, two passes."""
        windows = self._windows()
        st = np.zeros(7)
        P = N = 0.0
        for t, (a, b) in enumerate(windows):
            P, N = delong_masses(self.read(a, b)[1], st, t == len(windows) - 1)
        if not (P > 0.0 and N > 0.0):
            return 0.0, P, N, 0.0, 0.0
        pairs = st[:2].copy()
        st = np.zeros(21)
        st[2:4] = pairs  # the positive mass above the first point
        theta = ss_pos = ss_neg = 0.0
        for t, (a, b) in enumerate(windows):
            theta, ss_pos, ss_neg = delong_sums(self.read(a, b)[1], P, N, float(centre), st, t == len(windows) - 1)
        return theta, P, N, ss_pos, ss_neg

    def materialized(self):
        """The run in memory (read whole when it is a file's)."""
        return self.run if self.run is not None else joined(self.chunks(), self.weighted)


def ks_bounds(items, ks: float):
    """``(lower, upper)`` of the greatest ``|tpr(t) - fpr(t)|`` over every real ``t`` of rows held as items ``(lo, hi,
    ab, _)``: an item's rows are surely called at ``t <= lo`` and maybe up to ``t <= hi``, so at each edge ``t`` the
    rates lie between those of the items with ``lo >= t`` and those with ``hi >= t`` (constant between edges)."""
    lo, hi, ab, _ = items
    edges = np.unique(np.concatenate((lo, hi)))
    totals = ab.sum(axis=1).astype(np.float64)
    rates = []
    for ends in (lo, hi):
        order = np.argsort(ends, kind="stable")
        above = np.cumsum(ab[:, order[::-1]], axis=1)[:, ::-1].astype(np.float64)  # mass with end >= ends[order]
        at = np.searchsorted(ends[order], edges, side="left")
        mass = np.concatenate((above, np.zeros((2, 1))), axis=1)[:, at]
        rates.append(mass / safe(totals)[:, None])
    (tpr_lo, fpr_lo), (tpr_hi, fpr_hi) = rates
    low = float(np.max(np.maximum(tpr_lo - fpr_hi, fpr_lo - tpr_hi), initial=0.0))
    high = float(np.max(np.maximum(tpr_hi - fpr_lo, fpr_hi - tpr_lo), initial=0.0))
    return min(low, ks), max(high, ks)


def _exact_area(s2, x0, y0, x1, y1, cut, total_p, total_n, max_fpr) -> float:
    """The partial area from the doubled area ``s2`` down to ``(x0, y0)``, plus the step cut at ``max_fpr``, whose
    offset ``max_fpr * total_n - x0`` is rounded once (Dekker's exact product)."""
    extra = 0.0
    if cut:
        a, b = max_fpr, float(total_n)
        hi = a * b
        c = 134217729.0 * a  # 2**27 + 1
        a_hi = c - (c - a)
        a_lo = a - a_hi
        c = 134217729.0 * b
        b_hi = c - (c - b)
        b_lo = b - b_hi
        lo = ((a_hi * b_hi - hi) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
        dx = (hi - float(x0)) + lo
        w = float(x1 - x0)
        if dx > 0.0:
            dx = min(dx, w)
            y_cut = float(y0) + float(y1 - y0) * (dx / w)
            extra = dx * (float(y0) + y_cut)
    return (float(s2) + extra) / float(2 * total_p * total_n)
