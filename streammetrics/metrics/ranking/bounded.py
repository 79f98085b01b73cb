"""Bounded strategy: at most ``2 B`` items (points and bins, :mod:`streammetrics._kernels.bins`), compacted back to
``B`` past ``2 B``, and a certified interval; exact while every score fits as a point.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from functools import partial

import numpy as np

from ..._kernels import bins as K
from ..._kernels.keys import score_keys
from ..._kernels.precision_bounds import average_precision_sums
from ..._protocol.errors import WeightOverflowError
from .points import Points, auc_of_chunks, empty_run, is_binned
from .saved import run_of_state
from .sorting import run_of_sorted

#: a cell becomes a bin while its pos * neg mass is within _BUDGET P N / B**2 and its mass within _MASS (P + N) / B
_BUDGET, _MASS = 3.0, 6.0
_SLACK = 1e-9  # relative widening of a binned interval computed in rounded floats
_FINE = 4.0  # a sorted slice is grouped at this fraction of the bins' limits
_AP_SLACK, _AP_ABS = 1e-9, 1e-12  # the relative (rounded masses) and absolute (rounded sums) widening of AP bounds


def _sorted_items(items):
    """Items put back in ``(lo, hi)`` order (bins kept whole come out of order)."""
    lo, hi, ab, cw = items
    dl = np.diff(lo)
    if np.all((dl > 0) | ((dl == 0) & (np.diff(hi) >= 0))):
        return items
    order = np.lexsort((hi, lo))
    return lo[order], hi[order], np.ascontiguousarray(ab[:, order]), np.ascontiguousarray(cw[:, order])


def _distinct(keys, room: int):
    """The distinct keys of sorted ``keys``, or ``None`` when there are more than ``room``."""
    first = np.concatenate(([True], keys[1:] != keys[:-1])) if keys.shape[0] else np.zeros(0, bool)
    return keys[first] if np.count_nonzero(first) <= room else None


def points_of_items(items, weighted: bool):
    """Distinct lower edges and their masses: a bin counts as its lower edge."""
    if items is None:
        return empty_run(weighted)
    lo, hi, ab, cw = items
    starts = np.flatnonzero(np.concatenate(([True], lo[1:] != lo[:-1])))
    if starts.shape[0] == lo.shape[0]:
        return lo, ab
    return lo[starts], np.ascontiguousarray(np.add.reduceat(ab, starts, axis=1))


def average_precision_bounds(lo, hi, ab, weighted: bool, value: float | None = None):
    """``(value, lower, upper)``: the AP of binned items (each at its lower edge; ``value`` when given) and a certified
    interval over every order of the rows inside each block of overlapping items
    (:mod:`streammetrics._kernels.precision_bounds`), widened for rounding. Equal when no bin holds a positive.

    >>> import numpy as np
    >>> lo, hi = np.array([0.1, 0.5, 0.9]), np.array([0.1, 0.7, 0.9])
    >>> ab = np.array([[0, 1, 1], [1, 1, 0]])  # a negative, a bin of one each, a positive
    >>> v, lower, upper = average_precision_bounds(lo, hi, ab, weighted=False)
    >>> round(lower, 6), round(v, 6), round(upper, 6)  # the bin's negative above or below its positive
    (0.833333, 0.833333, 1.0)
    """
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    ab = np.ascontiguousarray(ab, dtype=np.float64 if weighted else np.int64)
    if value is None:
        value = Points(points_of_items((lo, hi, ab, None), weighted), 0, weighted).average_precision()
    value = float(value)
    if lo.shape[0] == 0:
        return value, value, value
    lower, upper, total, exact = average_precision_sums(lo, hi, ab, weighted)
    if exact or total <= 0.0:
        return value, value, value
    lower = lower / total * (1.0 - _AP_SLACK) - _AP_ABS
    upper = upper / total * (1.0 + _AP_SLACK) + _AP_ABS
    if not (np.isfinite(lower) and np.isfinite(upper)):
        lower, upper = 0.0, 1.0  # overflowed weights: nothing certain but the range
    return value, min(_clip(lower), value), max(_clip(upper), value)  # (a value may round past 1)


def straddling_of_items(items, scores, weighted: bool):
    """``2 x m`` positive and negative mass of the bins with ``lo < t <= hi`` (rows on either side of ``t``) at each of
    the increasing ``scores`` ``t``."""
    m = scores.shape[0]
    dtype = np.float64 if weighted else np.int64
    out = np.zeros((2, m + 1), dtype)
    if items is None or m == 0:
        return out[:, :m]
    lo, hi, ab, _ = items
    wide = hi > lo
    if not wide.any():
        return out[:, :m]
    first = np.searchsorted(scores, lo[wide], side="right")  # the first score above lo
    end = np.searchsorted(scores, hi[wide], side="right")  # past the last score <= hi
    part = ab[:, wide].astype(dtype)
    for r in range(2):
        np.add.at(out[r], first, part[r])
        np.add.at(out[r], end, -part[r])
    return np.cumsum(out, axis=1)[:, :m]


class Bounded:
    """The bounded state of ``RankAUC(max_bins=B)`` (see the module docstring)."""

    def __init__(self, max_bins: int, weighted: bool = False):
        self.max_bins = max_bins
        self.weighted = weighted
        self.items = None  # (lo, hi, ab, cw), or None while empty

    def atomic(self):
        """Nothing of a bounded state is on disk: its changes cannot fail half-way."""
        return nullcontext()

    def clone(self) -> Bounded:
        out = Bounded(self.max_bins, self.weighted)
        out.items = self.items  # never modified in place
        return out

    @property
    def nbytes(self) -> int:
        return 0 if self.items is None else sum(a.nbytes for a in self.items)

    def pending_limit(self) -> int:
        """0: every batch is binned as it comes, so a saved, pickled or copied state bins as the original does."""
        return 0

    def to_float(self) -> None:
        if self.items is not None:
            lo, hi, ab, cw = self.items
            self.items = (lo, hi, ab.astype(np.float64), cw)
        self.weighted = True

    def masses(self):
        """``[positive, negative]`` mass of the items (pending rows not included)."""
        return np.zeros(2) if self.items is None else self.items[2].sum(axis=1).astype(np.float64)

    def take(self, buf) -> None:
        """Bin the rows of ``buf`` in (used up); the ``buf`` of the other methods holds no row."""
        self.items = self._binned(buf, self.items)

    def add(self, state) -> None:
        """Fold the items of another bounded state."""
        lo, ab = run_of_state(state, self.weighted)
        if lo.shape[0] == 0:
            return
        self.items = self._merged(self.items, (lo, state["hi"], ab, state["pairs"]))

    def compact(self, buf=None) -> None:
        """Bin the rows of ``buf`` in, if any (the items are always one list)."""
        if buf is not None and buf.rows:
            self.take(buf)

    def points(self, n: int, items=None) -> Points:
        """The query engine of the items (or of ``items``)."""
        items = self.items if items is None else items
        return Points(points_of_items(items, self.weighted), n, self.weighted, items=items)

    def run(self, buf=None):
        """The points of the items (a bin at its lower edge)."""
        return points_of_items(self.items, self.weighted)

    def result(self, buf, n: int):
        """``(auc, lower, upper, n_pos, n_neg, points)``; ``points()`` makes the query engine."""
        items, weighted = self.items, self.weighted
        points = partial(self.points, n, items)
        if not is_binned(items):
            value, n_pos, n_neg = auc_of_chunks(lambda: iter([points_of_items(items, weighted)]), weighted)
            return value, value, value, n_pos, n_neg, points
        lo, hi, ab, cw = items
        k2, unknown = K.sweep(lo, hi, ab, cw)
        cast = float if weighted else int
        n_pos, n_neg = cast(ab[0].sum()), cast(ab[1].sum())
        if n_pos == 0 or n_neg == 0:
            return 0.0, 0.0, 0.0, n_pos, n_neg, points  # no pairs: the guard
        denom = 2.0 * float(n_pos) * float(n_neg)
        if weighted and not (0.0 < denom < math.inf and math.isfinite(k2 + 2.0 * unknown)):
            raise WeightOverflowError(  # the bins' pair masses are products of weights
                scores="the weighted pair masses of the bounded AUC (weights beyond about 1e150 or below 1e-150)"
            )
        lower = k2 / denom
        value = (k2 + unknown) / denom
        upper = (k2 + 2.0 * unknown) / denom
        if self.weighted or 2 * n_pos * n_neg >= 2**53:
            # float sums of pair masses, rounded: widened (below 2**53 counts sum exactly and need no slack)
            lower, upper = lower * (1.0 - _SLACK), upper * (1.0 + _SLACK)
        return _clip(value), _clip(lower), _clip(upper), n_pos, n_neg, points

    def export(self, buf, state) -> None:
        if self.items is not None:
            lo, hi, ab, cw = self.items
            state["lo"], state["hi"], state["pairs"] = lo, hi, cw
            state["weights" if self.weighted else "counts"] = ab

    def load(self, state) -> None:
        self.items = None
        self.add(state)

    def _merged(self, items, new):
        """``items`` and ``new`` merged, compacted past ``2 B``."""
        merged = new if items is None else K.merge_items(*items, *new)
        return self._compact(merged) if merged[0].shape[0] > 2 * self.max_bins else merged

    def _binned(self, buf, items):
        """``items`` with the rows of ``buf`` binned in (a new tuple)."""
        kp, vp, kn, vn, pre_p, pre_n = buf.sorted_keys()
        b = self.max_bins
        small = kp.shape[0] + kn.shape[0] <= b
        if small or not is_binned(items):
            # points while every score fits (exact); a small batch's points are compacted with the items past 2 B
            dp, dn = _distinct(kp, 2 * b), _distinct(kn, 2 * b)
            if dp is not None and dn is not None and np.union1d(dp, dn).shape[0] <= 2 * b:
                new = K.points_as_items(*run_of_sorted(kp, kn, vp, vn))
                merged = new if items is None else K.merge_items(*items, *new)
                if small or merged[0].shape[0] <= 2 * b:
                    return self._compact(merged) if merged[0].shape[0] > 2 * b else merged
        p = q = 0.0
        cuts = np.zeros(0, np.uint64)
        if items is not None:
            p, q = float(items[2][0].sum()), float(items[2][1].sum())
            # no group may straddle a bin: cut at every lower edge and past every upper one
            cuts = np.sort(np.concatenate((score_keys(items[0]), score_keys(items[1]) + np.uint64(1))))
        weighted = vp is not None
        p += float(pre_p[-1]) if weighted and pre_p.shape[0] else kp.shape[0] * (not weighted)
        q += float(pre_n[-1]) if weighted and pre_n.shape[0] else kn.shape[0] * (not weighted)
        budget, mass_cap = _limits(p, q, b, _FINE)
        g, room = -1, min(16 * b + 1024, kp.shape[0] + kn.shape[0])  # made larger for a batch that needs more
        cells, bases = np.empty((5, 132), np.int64), np.empty(132, np.uint64)  # the kernel's scratch
        while g < 0:
            bits, sums, room = np.empty((2, room), np.uint64), np.empty((3, room)), 4 * room
            g = K.group_rows(kp, vp, kn, vn, pre_p, pre_n, budget, mass_cap, cuts, bits, sums, cells, bases)
        lo, hi = bits[:, :g].view(np.float64).copy()
        ab = sums[:2, :g].copy() if weighted else sums[:2, :g].astype(np.int64)
        return self._merged(items, (lo, hi, ab, np.stack((sums[2, :g], np.zeros(g)))))

    def _compact(self, items):
        ab, b = items[2], self.max_bins
        budget, mass_cap = _limits(float(ab[0].sum()), float(ab[1].sum()), b)
        for _ in range(200):
            items = _sorted_items(K.compact(*items, budget, mass_cap))
            if items[0].shape[0] <= b:
                return items
            budget *= 2.0
            mass_cap *= 1.5
        return _sorted_items(K.compact(*items, np.inf, np.inf))


def _limits(p: float, q: float, b: int, fine: float = 1.0):
    """A bin's limits of ``pos * neg`` and of ``pos + neg`` mass, at ``1 / fine`` of them (overflowed weights: none)."""
    budget, mass_cap = _BUDGET * p * q / (b * b) / fine, _MASS * (p + q) / b / fine
    return (budget, mass_cap) if budget <= np.inf and mass_cap <= np.inf else (np.inf, np.inf)


def _clip(v: float) -> float:
    return min(max(v, 0.0), 1.0)
