"""Ranking and retrieval scores per query (NDCG@k, MRR, MAP@k, ...), streamed and mergeable."""

from __future__ import annotations

import numpy as np

from .._kernels.retrieval import PER_K, query_values
from .._protocol import state as S
from .._protocol.base import Accumulator
from .._protocol.errors import BadValueError
from .._protocol.inputs import ClusterLabels, Finite
from .._protocol.result import Result, grid
from .._protocol.state import Field
from .._protocol.terms import add_pairs
from .._protocol.validation import check_choice
from .ranking.spill import SpillStore, check_spill_dir, parse_memory

__all__ = ["RetrievalScores"]

GAINS = ("linear", "exp")
TIES = ("average", "pessimistic")
EMPTY = ("zero", "skip")
_OPTIONS = ("gain", "ties", "empty", "grouped", "per_query")
_OPEN = ("open_query", "open_relevance", "open_score", "open_weight")
_NO_ROWS = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
#: an open row as a record of a spilled file (32 bytes)
ROW = np.dtype([("query", np.int64), ("relevance", np.float64), ("score", np.float64), ("weight", np.float64)])


class QueryIds(ClusterLabels):
    """Query ids: integers of any value."""

    domain = ("query",)
    what = "query ids"


class Relevance(Finite):
    """Graded relevance: finite and non-negative (a row is relevant when positive)."""

    domain = ("relevance",)

    def __init__(self, name: str):
        super().__init__(name, "relevance")

    def first_bad(self, arr):
        bad = ~((arr >= 0) & (arr < np.inf))
        return int(np.argmax(bad)) if bad.any() else -1

    def problem(self, arr, i):
        return "relevance must be finite and non-negative"


class RetrievalResult(Result):
    __slots__ = ()
    title = "Ranking and retrieval"
    counts = ("queries", "empty_queries")

    def section(self, ctx, names=None):
        values = self.report_values()
        per_k = [f for f in values if isinstance(values[f], np.ndarray) and f != "k"]
        lines = self._scalar_lines([f for f in values if f not in per_k], names)
        cells = [[values[f][i] for f in per_k] for i in range(len(self.k))]
        return [*lines, "", *grid(cells, [f"@{k}" for k in self.k], [self._shown(f, names) for f in per_k])]

    def plot(self, folder, ctx):
        from ..report import plots

        shown = {name: self[name] for name in ("ndcg", "map", "precision", "recall", "hit_rate")}
        return [plots.at_k(list(self.k), shown, self.queries, folder)]


class RetrievalScores(Accumulator):
    """Streaming ranking scores of queries: ``update(query, relevance, score)``,
    one row per (query, item), a query's rows in any batches and shards.

    Each query's items are ranked by score, highest first; among equal scores
    the less relevant item ranks first (so the order rows arrive in never
    matters), except that with ``ties="average"`` DCG and NDCG share the gains
    of tied items over their positions, as scikit-learn's ``ndcg_score``. An
    item is relevant when its relevance is positive.

    Parameters
    ----------
    k : int or sequence of int
        The cut-offs.
    gain : {"linear", "exp"}
        DCG's gain of relevance ``r``: ``r`` (scikit-learn, ranx's ``ndcg``) or
        ``2**r - 1`` (ranx's ``ndcg_burges``).
    ties : {"average", "pessimistic"}
        How DCG and NDCG treat tied scores (the other scores always rank ties
        pessimistically).
    empty : {"zero", "skip"}
        Queries with no relevant item: counted with every score 0 in the
        means (scikit-learn's ``ndcg_score``, ranx), or left out of them
        (trec_eval scores only the queries with a relevant judgement).
    grouped : bool
        Whether each query's rows are contiguous in the stream of each shard
        (as in a file sorted or written by query). A query is then scored as
        soon as the next one starts: the state is O(k) besides the rows of
        the query under way and of the shard's first query (either may
        continue in another shard: both stay open until merged or
        finalized). Otherwise every row is kept until ``finalize``.
    per_query : bool
        Keep each query's scores: :meth:`query_table`.
    max_memory : int or str, optional
        A budget for the open rows (``"1GB"``; 32 bytes a row): past half of
        it they are sorted by query and written to a temporary file, and
        ``finalize`` scores the queries a range of ids at a time, reading each
        file's rows of the range: each query's scores are those in memory (its
        rows in the order they came), their means equal to within 1e-12. Saving, copying, pickling or merging a state
        with files reads its rows back into memory (a loaded state past the
        budget writes them out again).
    spill_dir : str or os.PathLike, optional
        The existing folder of those files (default ``tempfile.gettempdir()``);
        needs ``max_memory``, not saved.

    ``finalize()`` gives per cut-off (arrays in the order of ``k``) the means
    over queries of ``ndcg``, ``dcg``, ``map`` (average precision at k over
    the query's relevant items), ``precision`` (hits over ``k``), ``recall``,
    ``hit_rate`` and ``mrr_at_k``; and ``mrr``, ``r_precision``, ``queries``,
    ``empty_queries`` and ``n`` (rows). With ``sample_weight`` a query weighs
    the mean of its rows' weights (their common weight, usually) in the means.

    Examples
    --------
    >>> from streammetrics import RetrievalScores
    >>> acc = RetrievalScores(k=(1, 3), grouped=True)
    >>> acc.update([7, 7, 7, 8], [2, 0, 1, 0], [0.9, 0.8, 0.3, 0.5])
    RetrievalScores(...): n=4 mrr=0.5
    >>> r = acc.update([8, 8, 9], [1, 0, 1], [0.4, 0.1, 0.2]).finalize()
    >>> r.ndcg.round(4), r.mrr, r.queries, r.empty_queries
    (array([0.6667, 0.8604]), 0.8333333333333334, 3, 0)
    """

    headline = ("mrr",)

    def __init__(
        self,
        k=(1, 5, 10),
        *,
        gain="linear",
        ties="average",
        empty="zero",
        grouped=False,
        per_query=False,
        max_memory=None,
        spill_dir=None,
    ):
        ks = [k] if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else list(k)
        if not ks or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in ks):
            raise ValueError(f"k must be a positive integer or a sequence of them, got {k!r}")
        if len(set(ks)) != len(ks):
            raise ValueError(f"k holds a cut-off twice: {k!r}")
        for name, value, allowed in (("gain", gain, GAINS), ("ties", ties, TIES), ("empty", empty, EMPTY)):
            check_choice(name, value, allowed)
        self.k = tuple(int(v) for v in ks)
        self.gain, self.ties, self.empty = gain, ties, empty
        self.grouped, self.per_query = bool(grouped), bool(per_query)
        self.max_memory, self.spill_dir = parse_memory(max_memory), check_spill_dir(spill_dir)
        if self.spill_dir is not None and self.max_memory is None:
            raise ValueError("spill_dir is where open rows are written past max_memory: give max_memory too")
        self.n_values = len(PER_K) * len(self.k) + 2  # the kernel's columns but the empty flag
        self.n_sums = self.n_values + 2  # and the weight of the queries, of the empty ones
        self.n_table = self.n_values + 2  # a query's values, its empty flag and its weight
        self.inputs = (QueryIds("query"), Relevance("relevance"), Finite("score", "scores"))
        self._init_state()

    argument_names = ("query", "relevance", "score")
    fields = (
        Field("n", np.int64, (1,)),
        Field("weighted", np.int64, (1,), merge="max"),
        Field("queries", np.int64, (1,), doc="queries scored"),
        Field("empty", np.int64, (1,), doc="queries scored with no relevant row"),
        Field("sums", np.float64, ("n_sums", 2), merge="pairs", doc="weighted sums of the values, weights"),
        Field("open_query", np.int64, (None,), merge="custom", nonneg=False, doc="rows of open queries"),
        Field("open_relevance", np.float64, (None,), merge="custom"),
        Field("open_score", np.float64, (None,), merge="custom", nonneg=False),
        Field("open_weight", np.float64, (None,), merge="custom"),
        Field(
            "tail", np.int64, (2,), merge="custom", nonneg=False, doc="0 not begun, 1 first query, 2 later; the query"
        ),
        Field("table_query", np.int64, (None,), merge="custom", nonneg=False, doc="per-query ids"),
        Field("table_values", np.float64, (None, "n_table"), merge="custom", nonneg=False, doc="their values, weight"),
    )

    def _merge_check(self, other):
        S.check_merge_fields(_SUMMED, self._arrays, other.state_dict())

    def _settings(self):
        budget = {} if self.max_memory is None else {"max_memory": self.max_memory}
        return {"k": list(self.k), **{name: getattr(self, name) for name in _OPTIONS}, **budget}

    # ------------------------------------------------------------------ storage
    def _init_state(self) -> None:
        super()._init_state()
        self._open = []  # chunks of open rows (query, relevance, score, weight)
        self._drop_files()

    @property
    def spilled(self) -> bool:
        """Whether some open rows are held in temporary files (``max_memory``)."""
        return bool(self._runs)

    @property
    def nbytes(self) -> int:
        """Bytes of the state held in memory (its arrays and the open rows not in files)."""
        return sum(a.nbytes for a in self._arrays.values()) + sum(a.nbytes for chunk in self._open for a in chunk)

    @property
    def spilled_bytes(self) -> int:
        """Bytes of the open rows held in temporary files."""
        return sum(run.nbytes for run in self._runs)

    @property
    def _state(self):
        out = dict(self._arrays)
        out.update(zip(_OPEN, self._open_rows()))
        return out

    def _load(self, state):
        self._drop_files()
        self._arrays = {k: v for k, v in state.items() if k not in _OPEN}
        rows = tuple(state[k] for k in _OPEN)
        self._open = []
        if rows[0].shape[0]:
            self._hold(rows)

    def _drop_files(self) -> None:
        store = getattr(self, "_store", None)
        if store is not None:
            store.close()
        self._store, self._runs = None, []  # files of open rows sorted by query, oldest first

    def _open_rows(self, files=True):
        """The open rows as four new arrays (query, relevance, score, weight), those of files first
        (with ``files``)."""
        held = [_columns(run.records()) for run in self._runs] if files else []
        return tuple(np.concatenate(parts) for parts in zip(_NO_ROWS, *held, *self._open))

    def _hold(self, chunk) -> None:
        """Keep a chunk of open rows in memory, or, past half of ``max_memory``, write it and those in memory."""
        rows = sum(c[0].shape[0] for c in self._open) + chunk[0].shape[0]
        if self.max_memory is not None and rows * ROW.itemsize > self.max_memory // 2:
            self._spill([*self._open, chunk])
        else:
            self._open.append(chunk)

    def _spill(self, chunks) -> None:
        """Write the rows of ``chunks`` to a new file, sorted by query (stably); the open rows in memory then go.
        A failed write (a full disk) raises with nothing changed."""
        rows = tuple(np.concatenate(parts) for parts in zip(*chunks))
        order = np.argsort(rows[0], kind="stable")
        rec = np.empty(order.shape[0], ROW)
        for name, column in zip(ROW.names, rows):
            rec[name] = column[order]
        if self._store is None:
            self._store = SpillStore(self.spill_dir)
        self._runs.append(self._store.write_records(rec))
        self._open = []

    def spilled_parts(self):
        """``(state, files)``: the state with only the open rows held in memory (copies), and the files of the rest."""
        st = {k: v.copy() for k, v in self._arrays.items()}
        st.update(zip(_OPEN, self._open_rows(files=False)))
        return st, list(self._runs)

    def _merge_files(self, other) -> bool:
        """With ``max_memory``, a spilled ``other``'s files are copied a chunk at a time and its rows in memory
        folded as any merge folds them."""
        if self.max_memory is None or not other.spilled:
            return False
        memory, files = other.spilled_parts()
        S.check_merge_fields(_SUMMED, self._arrays, memory)
        if self._store is None:
            self._store = SpillStore(self.spill_dir)
        chunk = max(1, self.max_memory // (4 * ROW.itemsize))
        copies = []
        try:
            for run in files:
                copies.append(self._store.copy_from(run, chunk))
        except BaseException:  # (a full disk) nothing changed
            for run in copies:
                self._store.remove(run)
            raise
        self._runs.extend(copies)
        self._merge_state(memory)
        return True

    def _merge_state(self, other):
        S.merge_fields(_SUMMED, self._arrays, other)
        rows = tuple(other[k] for k in _OPEN)
        if rows[0].shape[0]:
            self._hold(tuple(a.copy() for a in rows))
            if self.grouped and not self._runs:  # few rows: kept as one chunk
                self._open = [self._open_rows()]
        st = self._arrays
        st["table_query"] = np.concatenate([st["table_query"], other["table_query"]])
        st["table_values"] = np.concatenate([st["table_values"], other["table_values"]])

    # ------------------------------------------------------------------ folding
    def prepare(self, *arrays, sample_weight=None, **named):
        batch = super().prepare(*arrays, sample_weight=sample_weight, **named)
        if self.grouped and batch.n:
            _grouped_runs(batch.arrays[0])
        return batch

    def _fold(self, arrays, w):
        q, rel, s = arrays
        if not (rel.min() >= 0 and rel.max() < np.inf and np.isfinite(s.min()) and np.isfinite(s.max())):
            return 1  # (a NaN is the min and the max)
        weights = w if w.shape[0] else np.ones(q.shape[0])
        if not self.grouped:
            self._hold((q.copy(), rel.copy(), s.copy(), weights.copy()))
        else:
            self._fold_grouped(q, rel, s, weights)
        st = self._arrays
        st["n"][0] += q.shape[0]
        if w.shape[0]:
            st["weighted"][0] = 1
        return 0

    def _fold_grouped(self, q, rel, s, w):
        """Score the queries this batch completes; keep the rows of the others."""
        lo, hi = _grouped_runs(q)
        ids = q[lo]
        batch = (q, rel, s, w)
        open_rows = self._open_rows()
        oq = open_rows[0]
        tail = self._arrays["tail"]
        mode, last = int(tail[0]), int(tail[1])
        keep = np.isin(ids, oq)  # the rows of an open query stay open with it
        keep[-1] = True  # the query under way may go on in the next batch
        if mode == 0:
            keep[0] = True  # the shard's first query may have begun in another shard
        fold = ~keep
        if mode == 2 and not (ids.shape[0] == 1 and ids[0] == last):
            # the query under way is complete: scored with this batch's rows of it
            mine = oq == last
            parts = [a[mine] for a in open_rows]
            if ids[0] == last:
                parts = [np.concatenate([a, b[lo[0] : hi[0]]]) for a, b in zip(parts, batch)]
                keep[0] = False
            self._score(*parts, np.zeros(1, np.int64), np.array([parts[0].shape[0]], np.int64))
            open_rows = [a[~mine] for a in open_rows]
        self._score(*batch, lo[fold], hi[fold])
        kept = np.flatnonzero(keep)  # a few runs: the first and the last, mostly
        foreign = open_rows[0] if mode != 2 else open_rows[0][open_rows[0] != last]
        self._open = [tuple(np.concatenate([a, *(b[lo[i] : hi[i]] for i in kept)]) for a, b in zip(open_rows, batch))]
        head = mode == 0 or (mode == 1 and ids[0] == last)
        tail[0] = 1 if (head and ids.shape[0] == 1) or np.isin(ids[-1], foreign) else 2
        tail[1] = ids[-1]

    def _score(self, q, rel, s, w, lo, hi, st=None):
        """Fold the queries of rows ``lo[i]:hi[i]`` into ``st`` (the state)."""
        if not lo.shape[0]:
            return
        st = self._arrays if st is None else st
        out = np.empty((lo.shape[0], self.n_values + 2), np.float64)
        ks = np.array(self.k, np.int64)
        query_values(lo, hi, rel, s, w, ks, self.gain == "exp", self.ties == "average", 2.0, out)
        weight, empty = out[:, -1], out[:, -2]
        sums = np.empty(self.n_sums)
        sums[: self.n_values] = weight @ out[:, : self.n_values]
        sums[-2], sums[-1] = weight.sum(), weight @ empty
        add_pairs(st["sums"], np.column_stack([sums, np.zeros(self.n_sums)]))
        st["queries"][0] += lo.shape[0]
        st["empty"][0] += int(empty.sum())
        if self.per_query:
            st["table_query"] = np.concatenate([st["table_query"], q[lo]])
            st["table_values"] = np.concatenate([st["table_values"], out])

    def _closed(self):
        """The state with every open query scored (the state itself unchanged); with files, a range of query ids
        at a time, each range's rows read from every file (oldest first) and then from memory."""
        st = {k: v.copy() for k, v in self._arrays.items()}
        held = [run.records() for run in self._runs]
        memory = self._open_rows(files=False)
        order = np.argsort(memory[0], kind="stable")
        memory = tuple(a[order] for a in memory)  # by query, each query's rows in the order they came
        cuts = _cuts(held, memory[0], self.max_memory)
        ends = [np.append(np.searchsorted(ids, cuts[1:]), ids.shape[0]) for ids in (rec["query"] for rec in held)]
        mine = np.append(np.searchsorted(memory[0], cuts[1:]), memory[0].shape[0])
        for i in range(cuts.shape[0]):
            parts = [_columns(rec[e[i - 1] if i else 0 : e[i]]) for rec, e in zip(held, ends)]
            parts.append(tuple(a[mine[i - 1] if i else 0 : mine[i]] for a in memory))
            q, rel, s, w = (np.concatenate(col) for col in zip(*parts))
            if held:
                order = np.argsort(q, kind="stable")
                q, rel, s, w = q[order], rel[order], s[order], w[order]
            self._score(q, rel, s, w, *_runs(q), st)
        return st

    # ------------------------------------------------------------------- results
    def _compute(self) -> Result:
        st = self._closed()
        sums = st["sums"][:, 0] + st["sums"][:, 1]
        total, empty_weight = sums[-2], sums[-1]
        denominator = total - empty_weight if self.empty == "skip" else total
        if total <= 0:
            raise ValueError("the sample weights of the queries sum to zero: the scores are undefined")
        means = sums[: self.n_values] / denominator if denominator > 0 else np.zeros(self.n_values)
        if not np.isfinite(means).all():
            raise ValueError("relevances so large that a DCG passes float64's range: the scores are undefined")
        nk = len(self.k)
        per_k = means[: len(PER_K) * nk].reshape(nk, len(PER_K))
        values = {"k": np.array(self.k, np.int64)}
        values.update({"mrr_at_k" if name == "mrr" else name: per_k[:, j].copy() for j, name in enumerate(PER_K)})
        values.update(mrr=float(means[-2]), r_precision=float(means[-1]), queries=int(st["queries"][0]))
        values.update(empty_queries=int(st["empty"][0]), n=self.n)
        meta = {"weighted": bool(st["weighted"][0]), "empty": self.empty}
        return RetrievalResult("RetrievalScores", values, meta)

    def query_table(self) -> dict:
        """Each query's scores (``per_query=True``): ``{"query": ids, "ndcg@1": ..., "weight": ...}``, by query."""
        if not self.per_query:
            raise ValueError("query_table() needs RetrievalScores(per_query=True)")
        with self._guard:
            st = self._closed()
        order = np.argsort(st["table_query"], kind="stable")
        names = [f"{name}@{k}" for k in self.k for name in PER_K] + ["mrr", "r_precision", "empty", "weight"]
        table = {"query": st["table_query"][order], **dict(zip(names, st["table_values"][order].T))}
        table["empty"] = table["empty"] > 0
        return table

    # ------------------------------------------------------------- loaded states
    def _check_state(self, state):
        rows = [state[k].shape[0] for k in _OPEN]
        if len(set(rows)) != 1:
            raise ValueError(f"the open rows' entries have different lengths {rows}")
        n, queries, empty = (int(state[k][0]) for k in ("n", "queries", "empty"))
        if int(state["weighted"][0]) not in (0, 1):
            raise ValueError("entry 'weighted' must be 0 or 1")
        if int(state["tail"][0]) not in (0, 1, 2):
            raise ValueError("entry 'tail' must begin with 0, 1 or 2")
        if empty > queries or queries + rows[0] > n:
            raise ValueError(f"{queries} queries ({empty} empty) and {rows[0]} open rows do not fit {n} rows")
        if not self.grouped and queries:
            raise ValueError("an ungrouped state scores no query before finalize")
        tq = state["table_query"].shape[0]
        if state["table_values"].shape[0] != tq or tq != (queries if self.per_query else 0):
            raise ValueError(f"the per-query table holds {tq} rows for {queries} queries")
        sums = state["sums"][:, 0] + state["sums"][:, 1]
        total = sums[-2]
        bounded = np.ones(self.n_values, bool)
        bounded[1 : len(PER_K) * len(self.k) : len(PER_K)] = False  # DCG has no bound
        if sums[-1] > total * (1 + 1e-12) or (sums[: self.n_values][bounded] > total * (1 + 1e-9) + 1e-9).any():
            raise ValueError("entry 'sums' holds means above 1 or an empty weight above the total")
        if not int(state["weighted"][0]) and (sums[-2] != queries or sums[-1] != empty):
            raise ValueError("entry 'sums' of unweighted rows does not count the queries")


_SUMMED = tuple(f for f in RetrievalScores.fields if f.merge != "custom")


def _columns(rec):
    """The four columns of records of :data:`ROW` (read into memory)."""
    return tuple(np.array(rec[name]) for name in ROW.names)


def _cuts(held, memory_ids, budget):
    """The first query id of each range of ids that ``_closed`` scores at once (about a quarter of ``budget`` of
    rows each; one range without files); none without rows."""
    if not held:
        return memory_ids[:1]
    step = max(1, budget // 4 // ROW.itemsize // (len(held) + 1))  # rows of one source in a range
    return np.unique(np.concatenate([rec["query"][::step] for rec in held] + [memory_ids[::step]]))


def _runs(q):
    """``(lo, hi)``: the runs of equal ids of ``q`` (not empty)."""
    cuts = np.flatnonzero(q[1:] != q[:-1]) + 1
    return np.concatenate([[0], cuts]), np.concatenate([cuts, [q.shape[0]]])


def _grouped_runs(q):
    """:func:`_runs` of ``q``, each id in one run, else the error of the first
    query whose rows are not contiguous (at its second run)."""
    lo, hi = _runs(q)
    steps = np.diff(q[lo])
    if (steps > 0).all() or (steps < 0).all():
        return lo, hi  # (ids in order, the common case, need no sort)
    again = np.ones(lo.shape[0], bool)  # the runs of an id met in an earlier run
    again[np.unique(q[lo], return_index=True)[1]] = False
    if not again.any():
        return lo, hi
    j = int(lo[np.argmax(again)])
    raise BadValueError(
        "query", j, q[j], "with grouped=True a query's rows must be contiguous", hint="or use grouped=False"
    )
