"""Bootstrap: percentile confidence intervals for any weighted accumulator, streamed."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .._kernels.bootstrap import POISSON1_CUTS, poisson_weights, replicate_sums
from .._protocol.base import Accumulator, check_ci, locked
from .._protocol.errors import NoObservationsError, StateFileError, WeightOverflowError
from .._protocol.inputs import Batch, raise_rejected
from .._protocol.result import Result
from .._protocol.state import checked_entries, concatenated, loaded, part_of, parts_of, reserve
from .._protocol.terms import Sums
from .._protocol.validation import as_1d, to_numpy
from .._protocol.wrapped import KeysInput, TemplateWrapper, pack, unpack
from .._threads import on_threads
from .ranks import (
    DEFAULT_GRID,
    RankRows,
    band_grid,
    check_int,
    check_rank_rows,
    ranked_member,
    read_curve,
    replica_template,
    replicate_groups,
    workers,
)

__all__ = ["Bootstrap", "DEFAULT_REPLICATES", "MAX_REPLICATES", "MAX_WEIGHT_BLOCK", "MAX_SLOTS"]

#: the default number of bootstrap replicates
DEFAULT_REPLICATES = 200
#: the most replicates (a state file declaring more is refused: its rank scores
#: would take a walk over every row per replicate, a file of few bytes no bound)
MAX_REPLICATES = 10_000
#: the most bytes of replicate weights held at once (rows are folded in chunks)
MAX_WEIGHT_BLOCK = 64 << 20
#: rows whose terms a linear template folds at once (the terms take 12 bytes a row and term)
LINEAR_CHUNK = 1 << 17
#: the most slots of row terms folded in one pass (every replicate's sums of
#: every slot are flushed each block of rows: many slots would cost more than
#: the rows); a template of more is folded replicate by replicate
MAX_SLOTS = 768

_EMPTY_KEYS = np.zeros(0, np.int64)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _check_keys(key, n: int) -> np.ndarray:
    arr = to_numpy(key, "key")
    if arr.dtype.kind == "O":  # integers held as objects (a pandas column of ints): read as int64
        for i, v in enumerate(arr.reshape(-1).tolist()):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not INT64_MIN <= v <= INT64_MAX:
                raise TypeError(f"key[{i}] = {v!r}: row keys must be integers within int64")
        arr = np.array(arr.tolist(), np.int64)
    if arr.dtype.kind in "US":  # (as_1d's advice is for labels, which row ids are not)
        raise TypeError(f"key must hold integer row ids, got dtype {arr.dtype}")
    arr = as_1d(arr, "key")
    if arr.shape[0] != n:
        raise ValueError(f"key has {arr.shape[0]} rows but the batch has {n}")
    if arr.dtype.kind == "f" and arr.size == 0:  # (an empty list)
        return _EMPTY_KEYS
    if arr.dtype.kind not in "iu":
        raise TypeError(f"key must hold integer row ids, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > INT64_MAX:
        i = int(np.argmax(arr > INT64_MAX))
        raise ValueError(f"key[{i}] = {arr[i]}: row keys must fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _scores(result) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """``(scalars, arrays)``: the scalar float scores of a result (counts, flags,
    arrays and the bounds of an exact value have no interval), and its 1-D
    float arrays (a score per k, class, label or slice), each element with its
    own interval."""
    exact = _exact_bounds(result)
    scalars = {k: float(v) for k, v in result.items() if isinstance(v, (float, np.floating)) and k not in exact}
    arrays = {
        k: v
        for k, v in result.items()
        if isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind == "f" and k not in exact
    }
    return scalars, arrays


def _exact_bounds(result) -> set:
    """The ``<score>_lower`` and ``<score>_upper`` fields of a result that equal their score (an exact state's)."""
    out = set()
    for k in result:
        base = k[:-6] if k.endswith(("_lower", "_upper")) else None
        if base in result and all(np.array_equal(result[f"{base}_{e}"], result[base]) for e in ("lower", "upper")):
            out.add(k)
    return out


def interval(draws, level: float) -> tuple[float, float]:
    """The percentile interval at ``level`` of ``draws`` (NaN ones left out); NaN
    bounds without a draw."""
    lower, upper = intervals(np.asarray(draws, np.float64).reshape(-1, 1), level)
    return float(lower[0]), float(upper[0])


def intervals(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`interval` of each column of ``draws`` (replicates x elements)."""
    lower, upper = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    seen = ~np.isnan(draws).all(axis=0)
    if seen.any():
        qs = np.nanquantile(draws[:, seen], [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=0)
        lower[seen], upper[seen] = qs
    return lower, upper


class Bootstrap(TemplateWrapper, Accumulator):
    """Percentile bootstrap intervals for any accumulator that takes sample weights.

    ``Bootstrap(template)`` keeps ``replicates`` copies of the template, each
    fed every row with a Poisson(1) weight (the streaming "Poisson bootstrap"),
    and one copy fed the rows as given (the point estimate).

    Parameters
    ----------
    template : Accumulator or Evaluator
        An empty accumulator that takes sample weights (it is copied, not used).
    replicates : int, default 200
        The number of bootstrap replicates, at most :data:`MAX_REPLICATES`
        (10,000); a state file declaring more is refused, as is one declaring
        more replicates than it holds.
    seed : int, default 0
        The seed of the replicate weights (0 <= seed < 2**64).

    ``update(*arrays, sample_weight=None, key=None)`` takes the template's
    arrays, weights and ``key``, an integer row id per row (or one extra
    positional column). Row ``i``'s weight in replicate ``r`` is a Poisson(1)
    count drawn from a hash of ``(seed, key[i], r)`` times its own weight, so
    shards folded anywhere and merged in any order give exactly the state of
    one stream. Without ``key`` a row's position in this accumulator's stream
    is its key: give keys when sharding.

    Returns (``finalize(ci=0.95)``)
    -------------------------------
    The template's scores on the rows as given (an Evaluator's flat fields)
    and, beside each float score, ``<score>_ci_lower`` and
    ``<score>_ci_upper``: the ``(1 - ci) / 2`` and ``(1 + ci) / 2`` quantiles
    over the replicates. A 1-D array of scores (one per k, class, label or
    slice) gets arrays of bounds, element by element, from the replicates that
    give it the point result's shape (none when every replicate gives the
    point's values, as for bin edges). A replicate whose result is undefined is skipped
    (``replicates_used`` counts the others); a NaN score is left out of its
    interval; a score no replicate defines has NaN bounds.

    Notes
    -----
    A template that declares its row terms (:mod:`streammetrics._protocol.terms`;
    up to :data:`MAX_SLOTS` slots) is folded in one kernel pass adding every
    row's terms into all replicates, weighted by its Poisson counts (the
    replicates keep no second moments: they serve percentile intervals only).
    An exact :class:`~streammetrics.RankAUC` (the template, or an Evaluator's
    member) keeps no rank state per replicate: the bootstrap keeps the rows
    (17 bytes a row, 25 with weights) and at finalize walks them once, sorted,
    for every replicate's AUC and average precision. Other templates are
    folded replicate by replicate, in chunks of at most 64 MB of weights, on
    up to 8 threads (the same state as one thread).

    A count is Poisson(1) up to the 2**-32 rounding of its probabilities (a
    32-bit uniform from a splitmix64 mix of the row's hash and ``r // 2``).
    :meth:`roc_band` and :meth:`pr_band` give pointwise percentile bands of a
    rank state's curves; :meth:`point_result` the template's own result.

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

    _own_settings = {"replicates": DEFAULT_REPLICATES, "seed": 0}

    def __init__(self, template: Accumulator, replicates: int = DEFAULT_REPLICATES, seed: int = 0):
        if isinstance(template, TemplateWrapper):
            raise TypeError(
                f"template must not be a {type(template).__name__} accumulator: it takes keys "
                "beside its arrays (bootstrap the plain accumulator instead)"
            )
        if isinstance(template, Accumulator) and not template.takes_weights:
            raise TypeError(
                f"template {type(template).__name__} takes no sample weights, which the "
                "bootstrap needs (each replicate reweights the rows)"
            )
        self._wrap(template, "replicate", KeysInput("key", "row keys"))
        self.intervals = True
        self.replicates = check_int("replicates", replicates, 1, MAX_REPLICATES)
        self.seed = check_int("seed", seed, 0, (1 << 64) - 1)
        self._ranked = ranked_member(self._template)
        self._replica_template = replica_template(self._template, self._ranked)
        self._linear = _linear_terms(self._replica_template)
        self._template_fields = self._template.copy().reset().state_dict()
        self._replica_fields = (
            {} if self._replica_template is None else self._replica_template.copy().reset().state_dict()
        )
        self._init_parts()

    def _init_parts(self) -> None:
        self._rows = 0
        self._point = self._template.copy()
        rt = self._replica_template
        if rt is not None:  # (a loaded file's settings may declare any number of replicates)
            size = sum(a.nbytes + 8 * a.ndim for a in self._replica_fields.values())  # its bytes in a file
            reserve(size * self.replicates, f"the settings declare {self.replicates} replicates of {size} bytes each")
        self._replicas = [] if rt is None else [rt.copy() for _ in range(self.replicates)]
        self._ranks = RankRows()

    # --------------------------------------------------------------- inputs
    def prepare(self, *arrays, sample_weight=None, key=None, **named) -> Batch:
        """Convert and check one batch and its row keys: a :class:`~streammetrics.Batch`.

        The template's arrays are checked as the template checks them (a bad
        value raises ``ValueError`` naming the argument and its position);
        ``key``, if given, must hold one integer per row.
        """
        arrays, key = self._split_keys(arrays, key, "optionally key=", named)
        tb = self._template.prepare(*arrays, sample_weight=sample_weight)
        keys = _EMPTY_KEYS if key is None else _check_keys(key, tb.n)
        return pack(tb, keys, self._template, self.inputs[-1])

    def update(self, *arrays, sample_weight=None, key=None, **named):
        """Fold one batch into the point estimate and every replicate; return ``self``.

        A batch with a bad value or a bad ``key`` raises ``ValueError`` (or
        ``TypeError``) and leaves the accumulator exactly as it was.
        """
        return self.fold(self.prepare(*arrays, sample_weight=sample_weight, key=key, **named))

    def fold(self, batch: Batch):
        """Fold a batch made by :meth:`prepare`; return ``self``."""
        tb, keys = unpack(batch, self._template, "Bootstrap.prepare()")
        if tb.n == 0:
            return self
        with self._guard:
            self._check_room(tb.n)
            linear = self._linear is not None and self._linear.takes(tb)
            sums = self._linear_sums(tb, keys) if linear else ()  # first: a batch that overflows changes nothing
            self._point.fold(tb)
            for acc, part in zip(self._replicas, sums):
                acc.add_sums(part)
            if not (linear and self._linear.complete):  # (an Evaluator's other members: replicate by replicate)
                self._fold_replicas(tb, keys, rest=linear)
            rank = self._rank_of(self._template)
            if rank is not None and tb.covers(rank.inputs):
                keys = keys if keys.shape[0] else np.arange(self._rows, self._rows + tb.n, dtype=np.int64)
                self._ranks.add(*tb.arrays_for(rank.inputs), keys, tb.weights if tb.weighted else None)
            self._rows += tb.n
        return self

    def _linear_sums(self, tb: Batch, keys: np.ndarray) -> list:
        """The batch's terms summed in every replicate: one :class:`~.._protocol.terms.Sums`
        a replicate (the counts, which no weight changes, shared)."""
        R, n, terms = self.replicates, tb.n, self._linear
        groups = replicate_groups(R, workers(R, n))
        outs = [np.zeros((terms.size, g.size, 2), np.float64) for g in groups]
        ints = np.zeros((1, terms.size), np.int64)
        seed = np.uint64(self.seed)

        for lo in range(0, n, LINEAR_CHUNK):
            hi = min(n, lo + LINEAR_CHUNK)
            slots, values = np.empty((hi - lo, terms.width), np.int32), np.empty((hi - lo, terms.width))
            if terms.fill(tb, lo, slots, values, 0, 0):  # (a checked batch: cannot happen)
                raise_rejected(tb.inputs, tb.arrays)
            ints[0] += np.bincount(slots.reshape(-1), minlength=terms.size) * terms.counted  # (terms of ones)
            w = tb.weights[lo:hi] if tb.weighted else None
            k = keys[lo:hi] if keys.shape[0] else None
            calls = [
                (seed, k, self._rows + lo, int(g[0]), w, slots, values, out, POISSON1_CUTS)
                for g, out in zip(groups, outs)
            ]
            on_threads(replicate_sums, calls)
        sums = np.ascontiguousarray(np.concatenate(outs, axis=1).transpose(1, 0, 2))
        if not np.isfinite(sums[..., 0]).all():
            raise WeightOverflowError()
        rows = np.array([n], np.int64)
        return [Sums(ints, sums[r : r + 1], None, rows, True) for r in range(R)]

    def _fold_replicas(self, tb: Batch, keys: np.ndarray, rest: bool = False) -> None:
        """Fold the batch into every replicate with its Poisson weights (into the
        parts its row terms do not cover only, with ``rest``)."""
        R, n = self.replicates, tb.n
        if self._replica_template is None:
            return
        if not (rest or self._replica_template.takes(tb)):  # (rows only the rank rows take)
            for acc in self._replicas:
                acc.skip_rows(n)
            return
        chunk = max(1, min(n, MAX_WEIGHT_BLOCK // (8 * R)))
        block = np.empty((R, chunk), np.float64)
        groups = replicate_groups(R, workers(R, n))
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            arrays = tb.arrays if hi - lo == n else [a[lo:hi] for a in tb.arrays]
            part = Batch(tb.inputs, arrays, tb.weights[lo:hi] if tb.weighted else tb.weights, hi - lo)
            args = (part, keys[lo:hi] if keys.shape[0] else keys, self._rows + lo, block[:, : hi - lo], rest)
            on_threads(self._fold_group, [(*args, int(g[0]), int(g[-1]) + 1) for g in groups])

    def _fold_group(self, part: Batch, keys, first: int, block, rest: bool, r0: int, r1: int) -> None:
        """Draw into ``block`` the weights of replicates ``r0..r1-1`` for the rows of
        ``part`` (keyed ``keys``, or by position from ``first``) and fold them in."""
        out = block[r0:r1]
        poisson_weights(np.uint64(self.seed), keys, first, r0, part.weights, out, POISSON1_CUTS)
        for r in range(r0, r1):
            acc = self._replicas[r]
            (acc.fold_rest if rest else acc.fold)(Batch(part.inputs, part.arrays, out[r - r0], part.n))

    # ---------------------------------------------------------------- merge
    def merge(self, other: Bootstrap):
        """Fold another bootstrap of the same settings into this one, replicate by
        replicate; return ``self``."""
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with locked(self, other):
            self._check_room(other.n, "merging")
            self._merge_check(other)
            self._point.merge(other._point)
            for mine, theirs in zip(self._replicas, other._replicas):
                mine.merge(theirs)
            self._ranks.extend(other._ranks)
            self._rows += other.n
        return self

    def _merge_check(self, other):
        self._point.check_merge(other._point)
        for mine, theirs in zip(self._replicas, other._replicas):
            mine.check_merge(theirs)

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
        state.update({f"point.{k}": v for k, v in self._point.state_dict().items()})
        parts = [acc.state_dict() for acc in self._replicas]
        for k, empty in self._replica_fields.items():
            state[f"replicates.{k}"], state[f"replicates.{k}#shape"] = concatenated([p[k] for p in parts], empty)
        if self._ranked is not None:
            state.update(self._ranks.state())
        return state

    def _checked(self, state) -> tuple:
        """Parse and check a state (untrusted): ``(rows, point, replicas, rank rows)``,
        the parts :meth:`_load` installs, or ``StateFileError``."""
        expected = {"n", *(f"point.{k}" for k in self._template_fields)}
        expected |= {f"replicates.{k}{s}" for k in self._replica_fields for s in ("", "#shape")}
        if self._ranked is not None:
            expected |= set(RankRows.FIELDS)
        rows = checked_entries(state, expected, f"a Bootstrap of {type(self._template).__name__}")
        point = loaded(self._template.copy(), {k: state[f"point.{k}"] for k in self._template_fields}, "point")
        if point.n != rows:
            raise StateFileError(f"the point estimate counts {point.n} rows, the bootstrap {rows}")
        R = self.replicates if self._replica_template is not None else 0
        cuts = parts_of(state, "replicates", self._replica_fields, R)
        replicas = []
        for r in range(R):
            acc = loaded(self._replica_template.copy(), part_of(cuts, r), f"replicate {r}")
            if acc.n != rows:
                raise StateFileError(f"replicate {r} counts {acc.n} rows, the bootstrap {rows}")
            replicas.append(acc)
        ranks, rank = RankRows(), self._rank_of(point)
        if rank is not None:
            ranks = RankRows.checked(state, rank.n)
            check_rank_rows(ranks, rank)
        return rows, point, replicas, ranks

    def _rank_of(self, acc):
        """The exact rank state whose rows are kept: ``acc`` (the template or the point
        estimate), its member, or ``None``."""
        return None if self._ranked is None else acc if self._ranked == "" else acc.members[self._ranked]

    def _load(self, state) -> None:
        parsed = state if isinstance(state, tuple) else self._checked(state)
        self._rows, self._point, self._replicas, self._ranks = parsed

    def _clone(self):
        return self.with_state((self._rows, self._point.copy(), [a.copy() for a in self._replicas], self._ranks.copy()))

    # -------------------------------------------------------------- finalize
    def _replicate_scores(self):
        """The point result, its scalar scores, and each replicate's scores: its scalars and its arrays of the point's
        shape (``None`` for a replicate whose result is undefined); under the lock."""
        point = self._point.finalize()
        scores, arrays = _scores(point)
        reps = []
        for acc in self._replicas:
            try:
                rep = acc.finalize()
            except ValueError:  # e.g. every weight drawn 0: no score is defined
                reps.append(None)
                continue
            got = {k: float(v) for k in scores if isinstance(v := rep.get(k), (float, np.floating, int, np.integer))}
            shaped = {k: v for k, a in arrays.items() if isinstance(v := rep.get(k), np.ndarray) and v.shape == a.shape}
            reps.append(got | shaped)
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

    def replicate_scores(self):
        """``(n, point, scores, replicates)`` read at once: the rows folded, the point
        result, its scalar scores and each replicate's (``None`` where undefined);
        what :func:`~streammetrics.compare` pairs."""
        with self._guard:
            return (self._rows, *self._replicate_scores())

    def _compute(self, ci: float = 0.95) -> Result:
        point, scores, reps = self._replicate_scores()
        used = [rep for rep in reps if rep is not None]
        values: dict[str, Any] = {}
        exact = _exact_bounds(point)
        for k, v in point.items():
            if k in exact:
                continue  # an exact state's bounds repeat its value
            values[k] = v
            if k in scores:
                values[f"{k}_ci_lower"], values[f"{k}_ci_upper"] = interval([r[k] for r in used if k in r], ci)
            elif isinstance(v, np.ndarray) and (drawn := [r[k] for r in used if k in r]):
                lower, upper = intervals(np.array(drawn, np.float64), ci)
                if not (np.array_equal(lower, v) and np.array_equal(upper, v)):  # not a setting such as bin edges
                    values[f"{k}_ci_lower"], values[f"{k}_ci_upper"] = lower, upper
        values.update(replicates=self.replicates, replicates_used=len(used), ci=ci)
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

        Each replicate's ROC curve (of the rank state: a RankAUC template or an
        Evaluator's RankAUC member) is read at the rates ``fpr`` (``grid``: a
        number of evenly spaced rates on [0, 1], default 101, or an increasing
        array); the bounds are its ``(1 - level) / 2`` and ``(1 + level) / 2``
        quantiles over the replicates with both classes. ``TypeError`` without
        a rank state; ``ValueError`` when no replicate has both classes.

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
        ``(recall, precision_lower, precision_upper)``, each replicate's
        precision read at the highest threshold reaching each recall (as
        :meth:`roc_band`).

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
        xs = band_grid(grid)
        name = self._rank_member()
        with self._guard:
            if not self._rows:  # (as finalize says it)
                raise NoObservationsError("Bootstrap has no observations: call update() first")
            if self._ranked is not None:  # every replicate's curves in one walk of the sorted rows
                table = self._ranks.curves(self.seed, self.replicates, xs)[which == "pr"]
            else:
                curves = []
                for acc in self._replicas:
                    try:
                        got = read_curve(acc if name is None else acc.members[name], xs, which)
                    except ValueError:  # no row of weight > 0 in this replicate
                        continue
                    if got is not None:
                        curves.append(got)
                table = np.vstack(curves) if curves else np.zeros((0, xs.shape[0]))
        if not table.shape[0]:
            raise ValueError("no replicate holds both classes: the band is undefined")
        lower, upper = np.quantile(table, [(1.0 - lv) / 2.0, (1.0 + lv) / 2.0], axis=0)
        return xs.copy(), lower, upper

    def _rank_member(self):
        """``None`` when the template is a RankAUC, else the member that is one."""
        from ..metrics.ranking import RankAUC

        t = self._template
        if isinstance(t, RankAUC):
            return None
        names = [k for k, m in (getattr(t, "members", None) or {}).items() if isinstance(m, RankAUC)]
        if names:
            return names[0]
        raise TypeError(f"a band needs a rank state: the template {type(t).__name__} holds no RankAUC")

    def __repr__(self) -> str:
        return f"Bootstrap({self._inner()}, replicates={self.replicates}, seed={self.seed}): n={self.n}"


def _linear_terms(template):
    """The row terms the replicates of ``template`` are folded by, or ``None``
    (replicate by replicate)."""
    terms = None if template is None else template.row_terms()
    return terms if terms is not None and terms.size <= MAX_SLOTS else None
