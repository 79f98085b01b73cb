"""Bootstrap: percentile confidence intervals for any weighted accumulator, streamed."""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ._kernels import compensated
from ._kernels.bootstrap import (POISSON1_CUTS, binary_terms, calibration_counts, calibration_terms,
                                 poisson_weights, probability_terms, replicate_ranks, replicate_sums)
from ._kernels.probability import LOG_FLOOR
from ._protocol import statefile
from ._protocol.base import Accumulator, _locked, check_ci
from ._protocol.errors import StateFileError, WeightOverflowError
from ._protocol.inputs import Batch, Input
from ._protocol.result import Result, safe
from ._protocol.state import concatenated_parts, reserve
from ._protocol.validation import as_1d
from ._protocol.wrapped import pack, unpack

__all__ = ["Bootstrap", "DEFAULT_REPLICATES", "MAX_WEIGHT_BLOCK"]

#: the default number of bootstrap replicates
DEFAULT_REPLICATES = 200
#: the most bytes of replicate weights held at once (rows are folded in chunks)
MAX_WEIGHT_BLOCK = 64 << 20
#: rows whose terms a linear template folds at once (the terms take 12 bytes a row and term)
LINEAR_CHUNK = 1 << 17

_EMPTY_KEYS = np.zeros(0, np.int64)
#: the rates (ROC) or recalls (PR) a band is read at, unless told: 0, 0.01, ..., 1
DEFAULT_GRID = 101
#: the most points a band's grid may have
MAX_GRID = 100_000


class RowKeys(Input):
    """The ``key`` argument of :meth:`Bootstrap.update`: one int64 row id per row."""

    domain = ("row_keys",)
    what = "row keys"

    def takes_form(self, x) -> bool:
        return True


class _Parsed:
    """A checked state: the parts :meth:`Bootstrap._load` installs."""

    __slots__ = ("n", "point", "replicas", "ranks")

    def __init__(self, n, point, replicas, ranks):
        self.n, self.point, self.replicas, self.ranks = n, point, replicas, ranks


def _check_keys(key, n: int) -> np.ndarray:
    arr = as_1d(key, "key")
    if arr.shape[0] != n:
        raise ValueError(f"key has {arr.shape[0]} rows but the batch has {n}")
    kind = arr.dtype.kind
    if kind == "b" or kind not in "iu":
        if kind == "f" and arr.size == 0:
            return _EMPTY_KEYS
        raise TypeError(f"key must hold integer row ids, got dtype {arr.dtype}")
    if kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > np.iinfo(np.int64).max:
        i = int(np.argmax(arr > np.iinfo(np.int64).max))
        raise ValueError(f"key[{i}] = {arr[i]}: row keys must fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _check_int(name: str, v, lo: int, hi: int) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {v}")
    return int(v)


def _scalar_scores(result) -> dict[str, float]:
    """The scalar float scores of a result (counts, flags and arrays have no interval)."""
    return {k: float(v) for k, v in result.items()
            if isinstance(v, (float, np.floating)) and not isinstance(v, bool)}


def _band_grid(grid) -> np.ndarray:
    """The checked grid of a band: a point count, or an increasing array in [0, 1]."""
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        count = _check_int("grid", grid, 2, MAX_GRID)
        return np.linspace(0.0, 1.0, count)
    if isinstance(grid, (bool, np.bool_, str, bytes)) or grid is None:
        raise TypeError(f"grid must be a number of points or an array of rates, got {type(grid).__name__}")
    xs = as_1d(grid, "grid")
    if xs.dtype.kind not in "iuf" or xs.dtype.kind == "b":
        raise TypeError(f"grid must hold real numbers, got dtype {xs.dtype}")
    xs = np.asarray(xs, np.float64)
    if not 1 <= xs.shape[0] <= MAX_GRID:
        raise ValueError(f"grid must hold 1 to {MAX_GRID:,} points, got {xs.shape[0]}")
    bad = ~((xs >= 0.0) & (xs <= 1.0))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"grid[{i}] = {xs[i]!r}: the rates of a band must lie in [0, 1]")
    if xs.shape[0] > 1 and not (np.diff(xs) > 0).all():
        i = int(np.argmax(~(np.diff(xs) > 0))) + 1
        raise ValueError(f"grid[{i}] = {xs[i]!r}: the rates of a band must increase")
    return xs


def _read_curve(rank, xs: np.ndarray, which: str):
    """One rank state's curve read at ``xs`` (``None`` without both classes).

    ROC: the true positive rate at each false positive rate, linear between
    the curve's points, the top of a vertical run at its rate. PR: the
    precision at the highest threshold whose recall reaches each recall."""
    if which == "roc":
        fpr, tpr, _ = rank.roc_curve()
        if fpr[-1] == 0.0 or tpr[-1] == 0.0:
            return None
        j = np.searchsorted(fpr, xs, side="right")  # the first point past each rate
        i = j - 1  # the last point at or before it (fpr[0] = 0 <= every rate)
        inside = j < fpr.shape[0]
        jj = np.minimum(j, fpr.shape[0] - 1)
        x0, x1, y0, y1 = fpr[i], fpr[jj], tpr[i], tpr[jj]
        step = (xs - x0) / np.where(x1 > x0, x1 - x0, 1.0)
        return np.where(inside, y0 + step * (y1 - y0), tpr[-1])
    precision, recall, _ = rank.pr_curve()
    if recall[0] == 0.0 or (precision == 1.0).all():  # no positive, or no negative
        return None
    rec, prec = recall[::-1], precision[::-1]  # thresholds decreasing, recall increasing
    j = np.searchsorted(rec, xs, side="left")
    return prec[np.minimum(j, rec.shape[0] - 1)]


class Bootstrap(Accumulator):
    """Percentile bootstrap intervals for any accumulator that takes sample weights.

    ``Bootstrap(template)`` keeps ``replicates`` copies of the template, each
    fed every row with a Poisson(1) weight (the streaming "Poisson bootstrap"),
    and one copy fed the rows as given (the point estimate).

    Parameters
    ----------
    template : Accumulator or Evaluator
        An empty accumulator that takes sample weights (it is copied, not used).
    replicates : int, default 200
        The number of bootstrap replicates.
    seed : int, default 0
        The seed of the replicate weights (0 <= seed < 2**64).

    ``update(*arrays, sample_weight=None, key=None)`` takes the template's
    arrays, their weights and ``key``: an integer row id per row (or pass it
    as one extra positional column). Row ``i``'s weight in replicate ``r`` is
    a Poisson(1) count drawn from a hash of ``(seed, key[i], r)`` times its own
    weight, so a row weighs the same whatever the batching, the sharding or
    the order of merges: with keys, shards folded anywhere and merged in any
    order give exactly the state of one stream (exact counts for a count-based
    template such as :class:`~streammetrics.BinaryConfusion`). Without
    ``key``, a row's position in this accumulator's stream (a row counter in
    its state) is its key: any batching of one stream gives the same state,
    but shards each count from 0 and so reuse keys; give keys when sharding.

    Returns (``finalize(ci=0.95)``)
    -------------------------------
    A :class:`~streammetrics.Result` holding the template's scores on the rows
    as given (for an Evaluator, its report's flat fields) and, beside each
    scalar float score, ``<score>_ci_lower`` and ``<score>_ci_upper``: the
    ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles of the score over the
    replicates. A replicate whose result is undefined (e.g. every weight drawn
    0) is skipped; ``replicates_used`` counts those that were not. A score
    that is NaN in a replicate is left out of that score's interval. A score
    that no replicate defines (``replicates_used`` 0, as on a batch of a
    row or two) has no interval: both its bounds are NaN, by design, rather
    than a number no resample supports.

    Notes
    -----
    A batch is checked once by the template's ``prepare`` (a rejected batch
    changes nothing). For a :class:`~streammetrics.BinaryConfusion`, a
    :class:`~streammetrics.ProbabilityScores`, a
    :class:`~streammetrics.Calibration` (of at most 256 bins) and the members
    of an Evaluator made of them (all but the AUC of the binary preset),
    whose weighted states are sums of per-row terms, one kernel pass adds
    every row's terms into all replicates' sums, weighted by its Poisson
    counts (those replicates keep no squared weights or second moments: they
    serve the percentile intervals only; a calibration bin's row count, which
    no weight changes, is taken once for all). An exact
    :class:`~streammetrics.RankAUC` (``max_bins=None``; the template, or one
    member of an Evaluator such as the binary preset's AUC) keeps no rank
    state per replicate: the bootstrap keeps its rows (score, label, key and
    weight: 17 bytes a row, 25 with weights, in memory whatever
    ``max_memory`` says) and, at finalize, sorts them once and walks down the
    scores drawing each row's weight in every replicate, which gives every
    replicate's AUC and average precision (the rank state of a replicate is
    rebuilt, one at a time, only for :meth:`roc_band` and :meth:`pr_band`).
    Other templates (and an Evaluator's other members) are folded replicate
    by replicate, in
    chunks whose weight block (replicates x rows, float64) stays under 64 MB,
    at the cost of the template's update times ``replicates``. A large batch
    is folded in groups of replicates on several threads (up to 8, one per
    core), which gives the same state as one thread.

    Row ``i``'s count in replicate ``r`` is Poisson(1) up to the 2**-32
    rounding of its probabilities: the number of cut points
    ``round(2**32 P(X <= k))`` that a 32-bit uniform reaches, the uniform one
    half of a splitmix64 mix of the row's hash and ``r // 2``.

    :meth:`roc_band` and :meth:`pr_band` give pointwise percentile bands
    around the ROC and precision-recall curves of a rank state (a
    :class:`~streammetrics.RankAUC` template or an Evaluator's AUC member);
    :meth:`point_result` the template's own result (an Evaluator's report,
    with its curves and plots).

    Examples
    --------
    >>> import numpy as np
    >>> from streammetrics import Bootstrap, BinaryConfusion
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random(2000) < 0.5).astype(int)
    >>> p = np.where(rng.random(2000) < 0.8, y, 1 - y)
    >>> b = Bootstrap(BinaryConfusion(), replicates=100, seed=1).update(y, p, key=np.arange(2000))
    >>> r = b.finalize()
    >>> r.accuracy_ci_lower < r.accuracy < r.accuracy_ci_upper, r.replicates_used
    (True, 100)
    """

    fields = ()
    #: an Evaluator member takes y and p; a bootstrap takes row keys too
    _takes_keys = True
    intervals = True

    def __init__(self, template: Accumulator, replicates: int = DEFAULT_REPLICATES, seed: int = 0):
        if not isinstance(template, Accumulator):
            raise TypeError(f"template must be an accumulator or an Evaluator, got {type(template).__name__}")
        if getattr(template, "_takes_keys", False):
            raise TypeError(f"template must not be a {type(template).__name__} accumulator: it takes keys "
                            "beside its arrays (bootstrap the plain accumulator instead)")
        if not template.takes_weights:
            raise TypeError(f"template {type(template).__name__} takes no sample weights, which the "
                            "bootstrap needs (each replicate reweights the rows)")
        if template.n:
            raise ValueError("template must be empty: its settings define every replicate's accumulator")
        self.replicates = _check_int("replicates", replicates, 1, 1 << 20)
        self.seed = _check_int("seed", seed, 0, (1 << 64) - 1)
        self._template = template.copy()
        self.inputs = (*self._template.inputs, RowKeys("key"))
        self.headline = tuple(self._template.headline)
        self._linear = _linear_form(self._template)
        self._ranked = _ranked_member(self._template)
        self._replica_template = _replica_template(self._template, self._ranked)
        self._template_fields = dict(self._template.copy().reset()._state)
        self._replica_fields = ({} if self._replica_template is None
                                else dict(self._replica_template.copy().reset()._state))
        self._init_replicas()

    def _init_replicas(self) -> None:
        self._rows = 0
        self._point = self._template.copy()
        rt = self._replica_template
        if rt is not None:  # (a loaded file's settings may declare any number of replicates)
            size = sum(a.nbytes for a in self._replica_fields.values()) + 512  # and the object
            reserve(size * self.replicates,
                    f"the settings declare {self.replicates} replicates of {size} bytes each")
        self._replicas = [] if rt is None else [rt.copy() for _ in range(self.replicates)]
        self._ranks = _RankRows()

    # ------------------------------------------------------------- settings
    @property
    def template(self) -> Accumulator:
        """An empty copy of the template."""
        return self._template.copy()

    def _settings(self) -> dict[str, Any]:
        t = self._template
        return {"template": {"class": type(t).__name__, "settings": t.settings},
                "replicates": self.replicates, "seed": self.seed}

    @classmethod
    def _from_settings(cls, settings: dict[str, Any]):
        spec = settings.get("template") if isinstance(settings, dict) else None
        known = statefile.registry()
        if not isinstance(spec, dict) or known.get(spec.get("class")) is None:
            raise ValueError("the template is not a known accumulator")
        if not isinstance(spec.get("settings"), dict):
            raise ValueError("the template has invalid settings")
        extra = set(settings) - {"template", "replicates", "seed"}
        if extra:
            raise ValueError(f"unknown settings {sorted(extra)}")
        template = known[spec["class"]]._from_settings(spec["settings"])
        return cls(template, replicates=settings.get("replicates", DEFAULT_REPLICATES),
                   seed=settings.get("seed", 0))

    # --------------------------------------------------------------- inputs
    def _split(self, arrays, key):
        k = len(self._template.inputs)
        if key is None and len(arrays) == k + 1:
            return arrays[:k], arrays[k]
        if len(arrays) != k:
            raise TypeError(f"expected {k} arrays ({', '.join(i.name for i in self._template.inputs)}) "
                            f"and optionally key=, got {len(arrays)} arrays")
        return arrays, key

    def prepare(self, *arrays, sample_weight=None, key=None) -> Batch:
        """Convert and check one batch and its row keys: a :class:`~streammetrics.Batch`.

        The template's arrays are checked as the template checks them (a bad
        value raises ``ValueError`` naming the argument and its position);
        ``key``, if given, must hold one integer per row.
        """
        arrays, key = self._split(arrays, key)
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        keys = _EMPTY_KEYS if key is None else _check_keys(key, tb.n)
        return pack(tb, keys, self._template, self.inputs[-1])

    def update(self, *arrays, sample_weight=None, key=None):
        """Fold one batch into the point estimate and every replicate; return ``self``.

        A batch with a bad value or a bad ``key`` raises ``ValueError`` (or
        ``TypeError``) and leaves the accumulator exactly as it was.
        """
        return self.fold(self.prepare(*arrays, sample_weight=sample_weight, key=key))

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        tb, keys = unpack(batch, self._template, "Bootstrap.prepare()")
        if tb.n == 0:
            return self
        with self._guard:
            self._check_room(tb.n)
            plan = self._linear.terms_of(tb) if self._linear is not None else None
            ranked = self._ranked
            if plan is None:
                self._point.fold(tb)
                if ranked is None:
                    self._fold_replicas(tb, keys)
                elif self._replicas:  # the Evaluator's other members, one by one
                    others = [k for k, m in self._replica_template._members.items() if tb.covers(m.inputs)]
                    if others:
                        self._fold_replicas(tb, keys, others)
                    for acc in self._replicas:
                        acc._n += tb.n
            else:  # every replicate's sums first: a batch that overflows changes nothing
                sums = self._linear_sums(tb, keys, plan)
                self._point.fold(tb)
                for acc, pairs in zip(self._replicas, sums):
                    self._linear.absorb(acc, pairs, tb.n, plan)
                members = self._template._members if self._linear.rest else {}
                rest = [k for k in self._linear.rest if k != ranked and tb.covers(members[k].inputs)]
                if rest:  # the Evaluator's other members that take the batch: one by one
                    self._fold_replicas(tb, keys, rest)
            if ranked is not None:
                rank = self._template if ranked == "" else self._template._members[ranked]
                if tb.covers(rank.inputs):
                    y, sc = tb.arrays_for(rank.inputs)
                    self._ranks.add(y, sc, keys if keys.shape[0] else
                                    np.arange(self._rows, self._rows + tb.n, dtype=np.int64),
                                    tb.weights if tb.weighted else None)
            self._rows += tb.n
        return self

    def _linear_sums(self, tb: Batch, keys: np.ndarray, plan) -> np.ndarray:
        """The batch's compensated sums in every replicate: replicates x slots x 2."""
        R, n, lin = self.replicates, tb.n, self._linear
        workers = _workers(R, n)
        groups = [g for g in np.array_split(np.arange(R), workers) if g.size]
        outs = [np.zeros((lin.size, g.size, 2), np.float64) for g in groups]
        seed = np.uint64(self.seed)
        starts = range(0, n, LINEAR_CHUNK)
        terms = lin.fill(plan, 0, min(n, LINEAR_CHUNK))
        for lo in starts:
            hi = min(n, lo + LINEAR_CHUNK)
            slots, vals = terms
            w = tb.weights[lo:hi] if tb.weighted else tb.weights
            k = keys[lo:hi] if keys.shape[0] else keys
            first = self._rows + lo
            if len(groups) == 1:
                replicate_sums(seed, k, first, 0, w, slots, vals, outs[0], POISSON1_CUTS)
                if hi < n:
                    terms = lin.fill(plan, hi, min(n, hi + LINEAR_CHUNK))
                continue
            jobs = [_pool(len(groups)).submit(replicate_sums, seed, k, first, int(g[0]), w, slots, vals,
                                              out, POISSON1_CUTS) for g, out in zip(groups, outs)]
            if hi < n:  # the next chunk's terms while the replicates fold this one
                terms = lin.fill(plan, hi, min(n, hi + LINEAR_CHUNK))
            for job in jobs:
                job.result()
        sums = np.ascontiguousarray(np.concatenate(outs, axis=1).transpose(1, 0, 2))
        if not np.isfinite(sums[..., 0]).all():
            raise WeightOverflowError()
        return sums

    def _fold_replicas(self, tb: Batch, keys: np.ndarray, members=None) -> None:
        """Fold the batch into every replicate with its Poisson weights (into the
        Evaluator members named ``members`` only, when given)."""
        R, n = self.replicates, tb.n
        chunk = max(1, min(n, MAX_WEIGHT_BLOCK // (8 * R)))
        block = np.empty((R, chunk), np.float64)
        workers = _workers(R, n)
        groups = np.array_split(np.arange(R), workers)
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            m = hi - lo
            whole = lo == 0 and hi == n
            arrays = tb.arrays if whole else tuple(a[lo:hi] for a in tb.arrays)
            part = _Chunk(tb.inputs, arrays, tb.weights[lo:hi] if tb.weighted else tb.weights,
                          keys[lo:hi] if keys.shape[0] else keys, self._rows + lo, m,
                          block if m == chunk else block[:, :m])
            if workers == 1:
                self._fold_group(part, 0, R, members)
            else:  # replicates are independent and the kernels release the GIL
                jobs = [_pool(workers).submit(self._fold_group, part, int(g[0]), int(g[-1]) + 1, members)
                        for g in groups if g.size]
                for job in jobs:
                    job.result()

    def _fold_group(self, part: "_Chunk", r0: int, r1: int, members=None) -> None:
        """Draw the weights of replicates ``r0..r1-1`` for one chunk and fold it into them."""
        out = part.block[r0:r1]
        poisson_weights(np.uint64(self.seed), part.keys, part.first, r0, part.w, out, POISSON1_CUTS)
        shared = {}  # arrays derived for one consumer serve every replicate of the group
        for r in range(r0, r1):
            b = Batch(part.inputs, part.arrays, out[r - r0], part.m)
            b._derived = shared
            if members is None:
                self._replicas[r].fold(b)
            else:
                for name in members:
                    self._replicas[r]._members[name].fold(b)

    # ---------------------------------------------------------------- merge
    def merge(self, other: "Bootstrap"):
        """Fold another bootstrap of the same settings into this one, replicate by
        replicate; return ``self``."""
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with _locked(self, other):
            self._check_room(other.n, "merging")
            self._merge_check(other)
            self._point.merge(other._point)
            for mine, theirs in zip(self._replicas, other._replicas):
                mine.merge(theirs)
            self._ranks.extend(other._ranks)
            self._rows += other._rows
        return self

    def _merge_check(self, other):
        self._point._merge_check(other._point)
        for mine, theirs in zip(self._replicas, other._replicas):
            mine._merge_check(theirs)

    # ----------------------------------------------------------------- state
    @property
    def n(self) -> int:
        """Rows folded in so far (the row counter that keys rows without ``key``)."""
        return self._rows

    @property
    def _state(self) -> dict[str, np.ndarray]:
        """``n``, ``point.<field>`` and, per template field, ``replicates.<field>``
        (every replicate's array, flattened and concatenated in replicate order)
        and ``replicates.<field>#shape`` (each one's shape)."""
        state = {"n": np.array([self._rows], np.int64)}
        for k, v in self._point._state.items():
            state[f"point.{k}"] = v
        parts = [acc._state for acc in self._replicas]
        for k, empty in self._replica_fields.items():
            arrays = [p[k] for p in parts]
            state[f"replicates.{k}"] = np.concatenate([a.reshape(-1) for a in arrays])
            state[f"replicates.{k}#shape"] = np.array([a.shape for a in arrays], np.int64).reshape(
                len(arrays), empty.ndim)
        if self._ranked is not None:
            state.update(self._ranks.state())
        return state

    def _checked(self, state) -> _Parsed:
        """Parse and check a state (untrusted): a :class:`_Parsed`, or ``StateFileError``."""
        if not isinstance(state, dict):
            raise StateFileError(f"a state must be a dict of arrays, got {type(state).__name__}")
        fields = set(self._template_fields)
        rfields = set(self._replica_fields)
        expected = {"n"} | {f"point.{k}" for k in fields} | {f"replicates.{k}" for k in rfields} | {
            f"replicates.{k}#shape" for k in rfields}
        if self._ranked is not None:
            expected |= set(_RankRows.FIELDS)
        if set(state) != expected:
            raise StateFileError(f"state entries {sorted(state)} do not match a Bootstrap of "
                                 f"{type(self._template).__name__}'s {sorted(expected)}")
        for key, a in state.items():
            if not isinstance(a, np.ndarray):
                raise StateFileError(f"entry {key!r} is not an array")
        n = state["n"]
        if n.dtype != np.int64 or n.shape != (1,) or n[0] < 0:
            raise StateFileError("entry 'n' must be one non-negative int64")
        rows = int(n[0])
        point = self._template.copy()
        try:
            point.load_state_dict({k: state[f"point.{k}"] for k in fields})
        except ValueError as exc:
            raise StateFileError(f"point: {exc}") from None
        if point.n != rows:
            raise StateFileError(f"the point estimate counts {point.n} rows, the bootstrap {rows}")
        R = self.replicates if self._replica_template is not None else 0
        cuts = {}
        for k, empty in self._replica_fields.items():
            cuts[k] = concatenated_parts(f"replicates.{k}", state[f"replicates.{k}"],
                                         state[f"replicates.{k}#shape"], R, empty, "replicates")
        replicas = []
        for r in range(R):
            sub = {k: flat[starts[r]:starts[r + 1]].reshape(tuple(shapes[r]))
                   for k, (flat, shapes, starts) in cuts.items()}
            acc = self._replica_template.copy()
            try:
                acc.load_state_dict(sub)
            except ValueError as exc:
                raise StateFileError(f"replicate {r}: {exc}") from None
            if acc.n != rows:
                raise StateFileError(f"replicate {r} counts {acc.n} rows, the bootstrap {rows}")
            replicas.append(acc)
        ranks = _RankRows()
        if self._ranked is not None:
            rank = point if self._ranked == "" else point._members[self._ranked]
            ranks = _RankRows.checked(state, rank.n)
            _check_rank_rows(ranks, rank)
        return _Parsed(rows, point, replicas, ranks)

    def _load(self, state) -> None:
        parsed = state if isinstance(state, _Parsed) else self._checked(state)
        self._rows, self._point, self._replicas = parsed.n, parsed.point, parsed.replicas
        self._ranks = parsed.ranks

    def _clone(self):
        out = self._empty_like()
        out._rows = self._rows
        out._point = self._point.copy()
        out._replicas = [a.copy() for a in self._replicas]
        out._ranks = self._ranks.copy()
        return out

    def reset(self):
        """Forget every row; return ``self``."""
        with self._guard:
            self._init_replicas()
        return self

    # -------------------------------------------------------------- finalize
    def _replicate_scores(self):
        """The point result, its scalar scores, and each replicate's scalar scores
        (``None`` for a replicate whose result is undefined); under the lock."""
        point = self._point.finalize()
        scores = _scalar_scores(point)
        reps = []
        for acc in self._replicas:
            try:
                rep = acc.finalize()
            except ValueError:  # e.g. every weight drawn 0: no score is defined
                reps.append(None)
                continue
            reps.append({k: float(v) for k in scores
                         if isinstance(v := rep.get(k), (float, np.floating, int, np.integer))})
        if self._ranked is not None:  # the rank scores, all replicates in one walk
            ranked = self._ranks.scores(self.seed, self.replicates)
            if not reps:
                reps = [{} for _ in ranked]
            for r, got in enumerate(ranked):
                if got is None:  # every weight of this replicate drawn 0
                    reps[r] = None
                elif reps[r] is not None:
                    reps[r].update({k: v for k, v in got.items() if k in scores})
        return point, scores, reps

    def _compute(self, ci: float = 0.95) -> Result:
        point, scores, reps = self._replicate_scores()
        draws = {k: [] for k in scores}
        used = 0
        for rep in reps:
            if rep is None:
                continue
            used += 1
            for k, v in rep.items():
                if not math.isnan(v):
                    draws[k].append(v)
        lo_q, hi_q = (1.0 - ci) / 2.0, (1.0 + ci) / 2.0
        values: dict[str, Any] = {}
        for k, v in point.items():
            values[k] = v
            if k in scores:
                d = np.array(draws[k], np.float64)
                if d.size:
                    values[f"{k}_ci_lower"] = float(np.quantile(d, lo_q))
                    values[f"{k}_ci_upper"] = float(np.quantile(d, hi_q))
                else:
                    values[f"{k}_ci_lower"] = values[f"{k}_ci_upper"] = math.nan
        values["replicates"] = self.replicates
        values["replicates_used"] = used
        values["ci"] = ci
        return Result("Bootstrap", values, meta=dict(point.meta))

    def finalize(self, ci=0.95) -> Result:
        """The template's scores with percentile intervals at level ``ci`` (default 0.95);
        the state is not changed. ``ValueError`` when no row has been folded in."""
        level = check_ci(ci)
        return self._finalize(ci=0.95 if level is None else level)

    def point_result(self) -> Result:
        """The template's result on the rows as given (an Evaluator's report, with its
        curves and plots); the state is not changed."""
        with self._guard:
            return self._point.finalize()

    # ------------------------------------------------------------------ bands
    def roc_band(self, level=0.95, grid=DEFAULT_GRID):
        """A pointwise percentile band around the ROC curve: ``(fpr, tpr_lower, tpr_upper)``.

        Each replicate's ROC curve (that of its rank state: a
        :class:`~streammetrics.RankAUC` template, or an Evaluator's
        ``RankAUC`` member) is read at the false positive rates ``fpr``,
        linearly between its points (at a rate where the curve rises
        vertically, its top); ``tpr_lower`` and ``tpr_upper`` are the
        ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles over the
        replicates at each rate. ``grid`` is the number of evenly spaced
        rates on [0, 1] (default 101) or an increasing array of rates in
        [0, 1]. A replicate with no positive or no negative is left out. The
        band is pointwise (each rate's interval holds at ``level``; the whole
        curve is not covered jointly). ``TypeError`` when the template holds
        no rank state; ``ValueError`` when no replicate has both classes.

        >>> import numpy as np
        >>> from streammetrics import Bootstrap, RankAUC
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 3000)
        >>> s = rng.normal(size=3000) + y
        >>> b = Bootstrap(RankAUC(), replicates=50).update(y, s, key=np.arange(3000))
        >>> fpr, lower, upper = b.roc_band(grid=11)
        >>> fpr[:3], bool((lower <= upper).all()), float(upper[-1])
        (array([0. , 0.1, 0.2]), True, 1.0)
        >>> bool(lower[5] < 0.8413 < upper[5])  # the true TPR at FPR 0.5: Phi(1)
        True
        """
        return self._band(level, grid, "roc")

    def pr_band(self, level=0.95, grid=DEFAULT_GRID):
        """A pointwise percentile band around the precision-recall curve:
        ``(recall, precision_lower, precision_upper)``.

        Each replicate's curve is read at the recalls ``recall``: the
        precision at the highest threshold whose recall reaches it (1 at
        recall 0, the curve's end point); the band is the ``(1 - level) / 2``
        and ``(1 + level) / 2`` quantiles over the replicates. ``level``,
        ``grid`` and the replicates left out as for :meth:`roc_band`.

        >>> import numpy as np
        >>> from streammetrics import Bootstrap, RankAUC
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 3000)
        >>> s = rng.normal(size=3000) + y
        >>> b = Bootstrap(RankAUC(), replicates=50).update(y, s, key=np.arange(3000))
        >>> recall, lower, upper = b.pr_band(grid=5)
        >>> recall, bool((lower <= upper).all())
        (array([0.  , 0.25, 0.5 , 0.75, 1.  ]), True)
        """
        return self._band(level, grid, "pr")

    def _band(self, level, grid, which: str):
        lv = check_ci(level)
        if lv is None:
            raise TypeError("level must be a real number in (0, 1), got None")
        xs = _band_grid(grid)
        name = self._rank_member()
        with self._guard:
            curves = []
            ranks = (self._ranks.replicate(self.seed, r) for r in range(self.replicates)) \
                if self._ranked is not None else None
            for acc in (self._replicas if ranks is None else ranks):
                rank = acc if name is None or ranks is not None else acc._members[name]
                try:
                    got = _read_curve(rank, xs, which)
                except ValueError:  # no row of weight > 0 in this replicate
                    continue
                if got is not None:
                    curves.append(got)
        if not curves:
            raise ValueError("no replicate holds both classes: the band is undefined")
        table = np.vstack(curves)
        lower = np.quantile(table, (1.0 - lv) / 2.0, axis=0)
        upper = np.quantile(table, (1.0 + lv) / 2.0, axis=0)
        return xs.copy(), lower, upper

    def _rank_member(self):
        """``None`` when the template is a RankAUC, else the Evaluator member that is one."""
        from .evaluator import Evaluator
        from .metrics.ranking import RankAUC

        t = self._template
        if isinstance(t, RankAUC):
            return None
        if isinstance(t, Evaluator):
            for k, m in t._members.items():
                if isinstance(m, RankAUC):
                    return k
        raise TypeError(f"a band needs a rank state: the template {type(t).__name__} holds no RankAUC")

    def __repr__(self) -> str:
        t = self._template
        inner = repr(t).rsplit(": n=", 1)[0]
        return f"Bootstrap({inner}, replicates={self.replicates}, seed={self.seed}): n={self.n}"


def _ranked_member(template):
    """Where the template's exact rank state is: ``""`` (the template is an exact
    :class:`~streammetrics.RankAUC`), an Evaluator's member name (its one exact
    RankAUC member), or ``None`` (its replicates are folded like any other)."""
    from .evaluator import Evaluator
    from .metrics.ranking import RankAUC

    def exact(m):
        return type(m) is RankAUC and m.max_bins is None

    if exact(template):
        return ""
    if isinstance(template, Evaluator):
        names = [k for k, m in template._members.items() if exact(m)]
        if len(names) == 1:
            return names[0]
    return None


def _replica_template(template, ranked):
    """The accumulator each replicate holds: the template, or (when its exact rank
    state is bootstrapped from the rows kept) an Evaluator of its other members,
    or ``None`` when nothing else is left."""
    if ranked is None:
        return template.copy()
    if ranked == "":
        return None
    from .evaluator import Evaluator

    others = {k: m.copy() for k, m in template._members.items() if k != ranked}
    return Evaluator(others) if others else None


def _check_rank_rows(ranks: "_RankRows", rank) -> None:
    """Refuse kept rows that are not the rows of the point estimate's exact rank
    state: the same distinct scores holding the same positives and negatives
    (their weights to rounding), or the replicates would resample other rows."""
    if rank.max_bins is not None or not rank.n:
        return  # (bounded: the bins do not give the rows back)
    s, y, _, w = ranks.rows()
    mine = rank.state_dict()
    theirs = type(rank)().update(y, s, sample_weight=w if w.shape[0] else None).state_dict()
    name = "weights" if int(mine["weighted"][0]) else "counts"
    if not (np.array_equal(mine["lo"], theirs["lo"]) and theirs[name].shape == mine[name].shape):
        raise StateFileError("entries 'ranked.*' do not hold the rows of the point estimate's rank state")
    a, b = mine[name], theirs[name]
    same = np.array_equal(a, b) if name == "counts" else np.allclose(a, b, rtol=1e-9, atol=0)
    if not same:
        raise StateFileError("entries 'ranked.*' do not hold the rows of the point estimate's rank state")


class _RankRows:
    """The rows an exact rank state of a bootstrap has seen: score, 0/1 label,
    row key and (if any row was weighted) weight, 17 or 25 bytes a row.

    Every replicate's rank state is a function of these rows and the seed, so
    all replicates' AUC and average precision come from one sort of the rows
    and one walk down the scores that draws each row's weights in every
    replicate (:func:`~._kernels.bootstrap.replicate_ranks`), instead of a
    rank state per replicate (``replicates`` x 24 bytes per distinct score)
    and a sort per replicate."""

    FIELDS = ("ranked.score", "ranked.label", "ranked.key", "ranked.weight")

    def __init__(self):
        self._parts = []  # (scores, labels, keys, weights or None)
        self._sorted = False  # one part, its scores strictly increasing

    @property
    def n(self) -> int:
        return sum(part[0].shape[0] for part in self._parts)

    def add(self, y, s, keys, w) -> None:
        self._parts.append((np.asarray(s, np.float64) + 0.0,  # -0.0 and 0.0 are one score
                            np.asarray(y).astype(np.uint8),
                            np.array(keys, np.int64),
                            None if w is None else np.array(w, np.float64)))
        self._sorted = False

    def extend(self, other: "_RankRows") -> None:
        if other._parts:
            self._sorted = not self._parts and other._sorted
            self._parts.extend(other._parts)

    def copy(self) -> "_RankRows":
        out = _RankRows()
        out._parts, out._sorted = list(self._parts), self._sorted
        return out

    def rows(self):
        """``(scores, labels, keys, weights)`` in the one order of their values:
        increasing score, then key, label and weight (weights empty when no row
        was weighted); new arrays, the rows kept are not changed."""
        parts = self._parts
        if not parts:
            return np.zeros(0), np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0)
        s = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
        k = np.concatenate([p[2] for p in parts])
        if any(p[3] is not None for p in parts):
            w = np.concatenate([np.ones(p[0].shape[0]) if p[3] is None else p[3] for p in parts])
        else:
            w = np.zeros(0)
        if self._sorted:
            return s, y, k, w
        order = np.argsort(s, kind="stable")
        ordered = s[order]
        if ordered.shape[0] > 1 and (ordered[1:] == ordered[:-1]).any():  # tied rows in one order too
            order = np.lexsort((w, y, k, s) if w.shape[0] else (y, k, s))
            ordered = s[order]
        return ordered, y[order], k[order], (w[order] if w.shape[0] else w)

    def state(self) -> dict[str, np.ndarray]:
        return dict(zip(self.FIELDS, self.rows()))

    @classmethod
    def checked(cls, state, rows: int) -> "_RankRows":
        """The rows of an untrusted state, every invariant checked, or ``StateFileError``;
        ``rows`` is the point estimate's rank state's row count."""
        kinds = {"ranked.score": np.float64, "ranked.label": np.uint8, "ranked.key": np.int64,
                 "ranked.weight": np.float64}
        for name, dtype in kinds.items():
            a = state[name]
            if a.ndim != 1 or a.dtype != dtype:
                raise StateFileError(f"entry {name!r} must be a 1-D {np.dtype(dtype)} array")
        s, y, k, w = (state[f] for f in cls.FIELDS)
        if not s.shape[0] == y.shape[0] == k.shape[0] == rows:
            raise StateFileError(f"entries 'ranked.*' must hold the {rows} rows of the point's rank state")
        if w.shape[0] not in (0, rows):
            raise StateFileError(f"entry 'ranked.weight' must be empty or hold {rows} weights")
        if not np.isfinite(s).all():
            i = int(np.argmax(~np.isfinite(s)))
            raise StateFileError(f"entry 'ranked.score'[{i}] = {float(s[i])!r} is not a finite score")
        if (y > 1).any():
            i = int(np.argmax(y > 1))
            raise StateFileError(f"entry 'ranked.label'[{i}] = {int(y[i])} is not a 0/1 label")
        if w.shape[0] and not ((w >= 0) & np.isfinite(w)).all():
            i = int(np.argmax(~((w >= 0) & np.isfinite(w))))
            raise StateFileError(f"entry 'ranked.weight'[{i}] = {float(w[i])!r} is not a finite weight >= 0")
        out = cls()
        if rows:
            out.add(y, s, k, w if w.shape[0] else None)
            out._sorted = bool((s[1:] > s[:-1]).all())  # no tie and in order: read as it is
        return out

    def sums(self, seed: int, replicates: int) -> np.ndarray:
        """The :data:`~._kernels.bootstrap.RANK_COLUMNS` of every replicate: replicates x 6."""
        s, y, k, w = self.rows()
        workers = _workers(replicates, s.shape[0])
        groups = [g for g in np.array_split(np.arange(replicates), workers) if g.size]
        outs = [np.empty((g.size, 6), np.float64) for g in groups]
        args = [(np.uint64(seed), k, int(g[0]), w, s, y, out, POISSON1_CUTS) for g, out in zip(groups, outs)]
        if len(groups) == 1:
            replicate_ranks(*args[0])
        else:
            for job in [_pool(len(groups)).submit(replicate_ranks, *a) for a in args]:
                job.result()
        return np.concatenate(outs)

    def scores(self, seed: int, replicates: int) -> list:
        """Each replicate's rank scores (a dict), or ``None`` where every weight is 0."""
        out = []
        for n_pos, n_neg, u, du, ap, dap in self.sums(seed, replicates):
            if n_pos + n_neg == 0.0:
                out.append(None)
                continue
            auc = (u + du) / safe(n_pos * n_neg)
            prec = (ap + dap) / safe(n_pos)
            out.append({"auc": auc, "auc_lower": auc, "auc_upper": auc, "average_precision": prec,
                        "average_precision_lower": prec, "average_precision_upper": prec,
                        "n_pos": n_pos, "n_neg": n_neg})
        return out

    def replicate(self, seed: int, r: int):
        """Replicate ``r``'s rank state (a :class:`~streammetrics.RankAUC`), or ``None``
        when it holds no row."""
        from .metrics.ranking import RankAUC

        s, y, k, w = self.rows()
        if not s.shape[0]:
            return None
        weights = np.empty((1, s.shape[0]), np.float64)
        poisson_weights(np.uint64(seed), k, 0, r, w, weights, POISSON1_CUTS)
        return RankAUC().update(y, s, sample_weight=weights[0])


class _Chunk:
    """Rows ``first..first+m-1`` of a batch and the block their replicate weights fill."""

    __slots__ = ("inputs", "arrays", "w", "keys", "first", "m", "block")

    def __init__(self, inputs, arrays, w, keys, first, m, block):
        self.inputs, self.arrays, self.w, self.keys = inputs, arrays, w, keys
        self.first, self.m, self.block = first, m, block


#: below this many (row, replicate) pairs a batch is folded on the calling thread
PARALLEL_WORK = 1 << 20

_POOL = None
_POOL_LOCK = threading.Lock()


def _workers(replicates: int, rows: int) -> int:
    if replicates < 2 or replicates * rows < PARALLEL_WORK:
        return 1
    return max(1, min(replicates, os.cpu_count() or 1, 8))


def _pool(workers: int) -> ThreadPoolExecutor:
    """One process-wide pool for the replicate folds (threads made once)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bootstrap")
        return _POOL




# ------------------------------------------------------------- linear templates
class _LinearForm:
    """A template whose weighted state is a sum over rows of ``weight * term``.

    Its replicates are folded in one pass (:func:`replicate_sums`): each row's
    terms go into ``size`` slots of every replicate, weighted by that
    replicate's Poisson count. ``width`` terms a row; ``terms_of(batch)`` the
    arrays the terms come from (``None``: not this batch, fold replicate by
    replicate); ``fill(plan, lo, hi)`` the slots and terms of rows ``lo..hi-1``;
    ``absorb(acc, pairs, rows, plan)`` folds one replicate's sums into its state.
    """

    def __init__(self, size: int, width: int):
        self.size, self.width = size, width

    def fill(self, plan, lo: int, hi: int):
        slots = np.empty((hi - lo, self.width), np.int32)
        vals = np.empty((hi - lo, self.width), np.float64)
        self.write(plan, lo, hi, slots, vals, 0, 0)
        return slots, vals


_LinearForm.rest = ()


class _BinaryForm(_LinearForm):
    """BinaryConfusion: a row's weight goes into its (tp, fp, fn, tn) cell.

    Replicates keep no squared weights (they serve the percentile intervals,
    not the analytic ones): their ``wsq_rows`` stays 0."""

    def __init__(self, acc):
        super().__init__(4, 1)
        self.inputs, self.threshold = acc.inputs, acc.threshold

    def terms_of(self, batch):
        return batch.arrays_for(self.inputs)

    def write(self, plan, lo, hi, slots, vals, col, base):
        t = math.nan if self.threshold is None else float(self.threshold)
        binary_terms(plan[0], plan[1], t, lo, slots, vals, col, base)

    def absorb(self, acc, pairs, rows, plan):
        st = acc._arrays
        compensated.merge(st["wsums"], pairs)
        st["n"][0] += rows
        st["weighted"][0] += rows


class _ProbabilityForm(_LinearForm):
    """ProbabilityScores: the weight, ``w * log loss`` and ``w * (p - y)**2`` totals.

    Replicates keep no second moments: their ``squares_rows`` stays 0."""

    def __init__(self, acc):
        super().__init__(3, 3)
        self.inputs = acc.inputs

    def terms_of(self, batch):
        return batch.arrays_for(self.inputs)

    def write(self, plan, lo, hi, slots, vals, col, base):
        probability_terms(plan[0], plan[1], lo, slots, vals, col, base, LOG_FLOOR)

    def absorb(self, acc, pairs, rows, plan):
        st = acc._arrays
        compensated.merge(st["sums"], pairs)
        st["n"][0] += rows


class _CalibrationForm(_LinearForm):
    """Calibration: each bin's weight, predicted and observed totals (``3 B`` slots,
    three terms a row). A row's count in its bin does not depend on its weight
    (every replicate holds every row, weighed 0 or not): the batch's bin counts,
    taken once, go into every replicate."""

    def __init__(self, acc):
        super().__init__(3 * acc.n_bins, 3)
        self.inputs, self.edges, self.n_bins = acc.inputs, acc._edges, acc.n_bins

    def terms_of(self, batch):
        y, p = batch.arrays_for(self.inputs)
        counts = np.zeros(self.n_bins, np.int64)
        calibration_counts(p, self.edges, counts)
        return y, p, counts

    def write(self, plan, lo, hi, slots, vals, col, base):
        calibration_terms(plan[0], plan[1], self.edges, lo, slots, vals, col, base)

    def absorb(self, acc, pairs, rows, plan):
        st, B = acc._arrays, self.n_bins
        compensated.merge(st["weight"], pairs[:B])
        compensated.merge(st["predicted"], pairs[B:2 * B])
        compensated.merge(st["observed"], pairs[2 * B:])
        st["counts"] += plan[2]
        st["n"][0] += rows


class _EvaluatorForm(_LinearForm):
    """An Evaluator's linear members, their slots side by side (for a batch every
    member takes); ``rest`` names the other members, folded replicate by replicate."""

    def __init__(self, names, forms, rest=()):
        super().__init__(sum(f.size for f in forms), sum(f.width for f in forms))
        self.names, self.forms, self.rest = names, forms, tuple(rest)

    def terms_of(self, batch):
        plans = [f.terms_of(batch) for f in self.forms]
        return None if any(p is None for p in plans) else plans

    def write(self, plan, lo, hi, slots, vals, col, base):
        for form, sub in zip(self.forms, plan):
            form.write(sub, lo, hi, slots, vals, col, base)
            col += form.width
            base += form.size

    def absorb(self, acc, pairs, rows, plan):
        at = 0
        for name, form, sub in zip(self.names, self.forms, plan):
            form.absorb(acc._members[name], pairs[at:at + form.size], rows, sub)
            at += form.size
        acc._n += rows


#: the most bins of a Calibration folded in one pass (every replicate's sums of
#: every slot are flushed each block of rows: many bins would cost more than
#: the rows); a table of more bins is folded replicate by replicate
MAX_ONE_PASS_BINS = 256


def _linear_form(template, calibration: bool = True):
    """The template's :class:`_LinearForm`, or ``None`` (replicates folded one by one);
    ``calibration=False`` leaves Calibration to the replicate-by-replicate fold
    (the benchmarks' baseline)."""
    from .evaluator import Evaluator
    from .metrics.binary import BinaryConfusion
    from .metrics.calibration import Calibration
    from .metrics.probability import ProbabilityScores

    kind = type(template)
    if kind is BinaryConfusion:
        return _BinaryForm(template)
    if kind is ProbabilityScores:
        return _ProbabilityForm(template)
    if kind is Calibration and calibration and template.n_bins <= MAX_ONE_PASS_BINS:
        return _CalibrationForm(template)
    if kind is Evaluator:
        members = template._members
        forms = {k: _linear_form(m, calibration) for k, m in members.items()}
        linear = [k for k, f in forms.items() if f is not None and not isinstance(f, _EvaluatorForm)]
        if linear:
            return _EvaluatorForm(linear, [forms[k] for k in linear], [k for k in members if k not in linear])
    return None
