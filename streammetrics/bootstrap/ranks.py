"""The bootstrap's rank rows (an exact rank state's rows kept once, every
replicate's scores from one walk over them), its threads, and its bands' helpers."""

from __future__ import annotations

import numpy as np

from .._kernels.bootstrap import POISSON1_CUTS, replicate_ranks
from .._protocol.errors import StateFileError
from .._protocol.result import safe
from .._protocol.validation import as_1d
from .._threads import CORES, MAX_THREADS, on_threads

#: the rates (ROC) or recalls (PR) a band is read at, unless told: 0, 0.01, ..., 1
DEFAULT_GRID = 101
#: the most points a band's grid may have
MAX_GRID = 100_000


def check_int(name: str, v, lo: int, hi: int) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {v}")
    return int(v)


def band_grid(grid) -> np.ndarray:
    """The checked grid of a band: a point count, or an increasing array in [0, 1]."""
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, (bool, np.bool_)):
        return np.linspace(0.0, 1.0, check_int("grid", grid, 2, MAX_GRID))
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


def read_curve(rank, xs: np.ndarray, which: str):
    """One rank state's ROC (linear between points) or PR (step) curve read at
    ``xs``; ``None`` without both classes."""
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


def ranked_member(template):
    """Where the template's exact rank state is: ``""`` (the template), the name
    of a composite's one exact RankAUC member, or ``None``."""
    from ..metrics.ranking import RankAUC

    def exact(m):
        return type(m) is RankAUC and m.max_bins is None

    if exact(template):
        return ""
    members = getattr(template, "members", None)
    names = [k for k, m in members.items() if exact(m)] if members is not None else []
    return names[0] if len(names) == 1 else None


def replica_template(template, ranked):
    """Each replicate's accumulator: the template, an Evaluator of the members
    besides its exact rank state, or ``None``."""
    if ranked is None:
        return template.copy()
    if ranked == "":
        return None
    from ..evaluator import Evaluator

    others = {k: m.copy() for k, m in template.members.items() if k != ranked}
    return Evaluator(others) if others else None


def check_rank_rows(ranks: RankRows, rank) -> None:
    """Refuse kept rows that are not those of the point estimate's exact rank state."""
    if rank.max_bins is not None or not rank.n:
        return  # (bounded: the bins do not give the rows back)
    s, y, _, w = ranks.rows()
    mine = rank.state_dict()
    theirs = type(rank)().update(y, s, sample_weight=w if w.shape[0] else None).state_dict()
    name = "weights" if int(mine["weighted"][0]) else "counts"
    a, b = mine[name], theirs[name]
    if not (
        np.array_equal(mine["lo"], theirs["lo"])
        and a.shape == b.shape
        and (np.array_equal(a, b) if name == "counts" else np.allclose(a, b, rtol=1e-9, atol=0))
    ):
        raise StateFileError("entries 'ranked.*' do not hold the rows of the point estimate's rank state")


class RankRows:
    """The rows an exact rank state of a bootstrap has seen: score, 0/1 label,
    row key and (if any row was weighted) weight; every replicate's scores and
    curves come from one sort and one walk (:func:`~._kernels.bootstrap.replicate_ranks`)."""

    FIELDS = ("ranked.score", "ranked.label", "ranked.key", "ranked.weight")

    def __init__(self):
        self._parts = []  # (scores, labels, keys, weights or None)
        self._sorted = False  # one part, in the order of rows()
        self._walked = {}  # the last walk without and with rates: (its arguments, outputs)

    def add(self, y, s, keys, w, ordered: bool = False) -> None:
        """Keep rows (copies); ``ordered``: the only rows, scores increasing."""
        self._parts.append(
            (
                np.asarray(s, np.float64) + 0.0,  # -0.0 and 0.0 are one score
                np.asarray(y).astype(np.uint8),
                np.array(keys, np.int64),
                None if w is None else np.array(w, np.float64),
            )
        )
        self._sorted = ordered and len(self._parts) == 1
        self._walked = {}

    def extend(self, other: RankRows) -> None:
        parts, ordered = other.kept()
        if parts:
            self._sorted = not self._parts and ordered
            self._parts.extend(parts)
            self._walked = {}

    def kept(self):
        """``(parts, sorted)``: the parts kept (never changed in place), and whether
        they are one part in the order of :meth:`rows`."""
        return list(self._parts), self._sorted

    def copy(self) -> RankRows:
        out = RankRows()
        out.extend(self)
        return out

    def rows(self):
        """Arrays ``(scores, labels, keys, weights)`` sorted by score, key, label,
        weight (weights empty when no row was weighted); not to be changed."""
        parts = self._parts
        if not parts:
            return np.zeros(0), np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0)
        s, y, k = (np.concatenate([p[j] for p in parts]) for j in range(3))
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
        return s[order], y[order], k[order], (w[order] if w.shape[0] else w)

    def state(self) -> dict[str, np.ndarray]:
        return dict(zip(self.FIELDS, self.rows()))

    @classmethod
    def checked(cls, state, rows: int) -> RankRows:
        """The rows of an untrusted state holding ``rows`` rows, checked (``StateFileError``)."""
        for name, dtype in zip(cls.FIELDS, (np.float64, np.uint8, np.int64, np.float64)):
            a = state[name]
            if a.ndim != 1 or a.dtype != dtype:
                raise StateFileError(f"entry {name!r} must be a 1-D {np.dtype(dtype)} array")
        s, y, k, w = (state[f] for f in cls.FIELDS)
        if not s.shape[0] == y.shape[0] == k.shape[0] == rows:
            raise StateFileError(f"entries 'ranked.*' must hold the {rows} rows of the point's rank state")
        if w.shape[0] not in (0, rows):
            raise StateFileError(f"entry 'ranked.weight' must be empty or hold {rows} weights")
        for name, bad, what in (
            ("ranked.score", ~np.isfinite(s), "is not a finite score"),
            ("ranked.label", y > 1, "is not a 0/1 label"),
            ("ranked.weight", ~((w >= 0) & np.isfinite(w)), "is not a finite weight >= 0"),
        ):
            if bad.any():
                i = int(np.argmax(bad))
                raise StateFileError(f"entry {name!r}[{i}] = {state[name][i].item()!r} {what}")
        out = cls()
        if rows:
            out.add(y, s, k, w if w.shape[0] else None, ordered=bool((s[1:] > s[:-1]).all()))
        return out

    def _walk(self, seed: int, replicates: int, xs: np.ndarray):
        """``(table, scale, roc, pr)``: the outputs of :func:`~._kernels.bootstrap.replicate_ranks`
        for every replicate, the replicates split on threads. The last walk with
        and without rates is kept until rows are added (the scores and the bands
        read one walk each; the bands read the masses of the scores' walk)."""
        key = (seed, replicates, xs.tobytes())
        done = self._walked.get(bool(xs.shape[0]))
        if done is not None and done[0] == key:
            return done[1]
        s, y, k, w = self.rows()
        self._parts, self._sorted = [(s, y, k, w if w.shape[0] else None)], True  # sorted once for every walk
        scale = 2.0 ** np.frexp(w.max())[1] if w.shape[0] else 1.0
        w = w / scale
        table = self.sums(seed, replicates)[0] if xs.shape[0] else np.empty((replicates, 6))
        groups = replicate_groups(replicates, workers(replicates, s.shape[0]))
        outs = [table[g] for g in groups]
        rocs, prcs = ([np.empty((g.size, xs.shape[0])) for g in groups] for _ in range(2))
        calls = [
            (np.uint64(seed), k, int(g[0]), w, s, y, out, POISSON1_CUTS, xs, roc, prc)
            for g, out, roc, prc in zip(groups, outs, rocs, prcs)
        ]
        on_threads(replicate_ranks, calls)
        got = np.concatenate(outs), scale, np.concatenate(rocs), np.concatenate(prcs)
        self._walked[bool(xs.shape[0])] = (key, got)
        return got

    def sums(self, seed: int, replicates: int):
        """The :data:`~._kernels.bootstrap.RANK_COLUMNS` of every replicate (replicates x 6)
        of the weights divided by a power of two near their largest, and that power (no
        score depends on it; the sums of products of weights near 1e-200 would not be 0)."""
        return self._walk(seed, replicates, np.zeros(0))[:2]

    def curves(self, seed: int, replicates: int, xs: np.ndarray):
        """``(roc, pr)``: the TPR at the false positive rates ``xs`` and the precision at
        the recalls ``xs`` of every replicate holding both classes (one row each)."""
        table, _, roc, prc = self._walk(seed, replicates, xs)
        both = (table[:, 0] > 0.0) & (table[:, 1] > 0.0)
        return roc[both], prc[both]

    def scores(self, seed: int, replicates: int) -> list:
        """Each replicate's rank scores (a dict), or ``None`` where every weight is 0."""
        out = []
        table, scale = self.sums(seed, replicates)
        for n_pos, n_neg, u, du, ap, dap in table:
            if n_pos + n_neg == 0.0:
                out.append(None)
                continue
            auc = (u + du) / safe(n_pos * n_neg)
            prec = (ap + dap) / safe(n_pos)
            fields = {
                f + end: v for f, v in (("auc", auc), ("average_precision", prec)) for end in ("", "_lower", "_upper")
            }
            out.append({**fields, "n_pos": n_pos * scale, "n_neg": n_neg * scale})
        return out


#: below this many (row, replicate) pairs a batch is folded on the calling thread
PARALLEL_WORK = 1 << 20


def workers(replicates: int, rows: int) -> int:
    """The threads that fold ``rows`` rows into ``replicates`` replicates."""
    return 1 if replicates < 2 or replicates * rows < PARALLEL_WORK else min(replicates, CORES, MAX_THREADS)


def replicate_groups(replicates: int, threads: int) -> list:
    """The replicates split into ``threads`` groups (index arrays), none empty."""
    return [g for g in np.array_split(np.arange(replicates), threads) if g.size]
