"""The result of a sliced accumulator: the overall result and one per slice."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from .._protocol.errors import optional
from .._protocol.result import RenderContext, Result, fmt_interval, fmt_number, html_row, jsonable, text_table

__all__ = ["SlicedResult", "LazySlices", "score_columns", "MAX_PLOTTED_SLICES"]

#: the most slices a plot draws (the largest ones)
MAX_PLOTTED_SLICES = 40


def score_columns(headline, overall: Result) -> tuple[str, ...]:
    """The scores a slice table shows: the template's headline, else its first
    few scalar scores."""
    cols = [h for h in headline if h in overall]
    if cols:
        return tuple(cols)
    return tuple([k for k, v in overall.items() if k != "n" and isinstance(v, (float, np.floating))][:3])


def at_least_one(name: str, v) -> int:
    """``v``, an integer of at least 1, as an ``int`` (else ``TypeError``/``ValueError``)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be at least 1, got {v}")
    return int(v)


def _cell(v) -> str:
    return "(null)" if v is None else str(v)


def _bounded(r: Result | None, c: str) -> bool:
    return r is not None and f"{c}_ci_lower" in r and f"{c}_ci_upper" in r


def _excludes(r: Result | None, c: str, value) -> bool:
    """Whether ``r``'s interval for ``c`` is defined and leaves out ``value``."""
    if not _bounded(r, c) or value is None:
        return False
    lo, hi, v = float(r[f"{c}_ci_lower"]), float(r[f"{c}_ci_upper"]), float(value)
    return math.isfinite(lo) and math.isfinite(hi) and math.isfinite(v) and not lo <= v <= hi


def _approximate(r: Result | None) -> bool:
    """Whether ``r`` was read off a binned state: an inexact rank result, or a report with one."""
    if r is None or getattr(r, "exact", True) is False:
        return r is not None
    parts = getattr(r, "parts", None)
    return isinstance(parts, dict) and any(_approximate(p) for p in parts.values())


def _certified(r: Result | None, c: str) -> bool:
    """Whether ``r`` is approximate and has certified bounds of its score ``c``
    (``<c>_lower``/``<c>_upper``)."""
    return _approximate(r) and f"{c}_lower" in r and f"{c}_upper" in r


def _scalar(v) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


def _score(r: Result | None, c: str) -> float:
    """``r``'s score ``c`` as a sort key: NaN where undefined (no result, None, NaN)."""
    v = None if r is None else r[c]
    return float(v) if _scalar(v) else math.nan


#: guards the one fill of a lazy result's per-slice values
_FILL_LOCK = threading.Lock()


#: the base class's slot that holds a result's flat values
_STORED = Result.__dict__["_values"]


class LazySlices(Mapping):
    """Slice key -> result, each made when first read (``compute(i)``, from a
    snapshot of the slices' states taken at finalize) and then kept."""

    __slots__ = ("_keys", "_compute", "_done", "_index", "_lock", "_columns", "_arrays")

    _MISSING = object()

    def __init__(self, keys: list, compute, columns=None):
        self._keys = keys
        self._compute = compute
        self._done = [self._MISSING] * len(keys)
        self._index = None
        self._lock = threading.Lock()
        self._columns = columns
        self._arrays = None

    def field_arrays(self) -> dict | None:
        """Every scalar field of every slice's result as read-only arrays in key
        order (bit for bit the results' values, no result built), or ``None``."""
        with self._lock:
            if self._columns is not None:  # made once (None: the results give them, one by one)
                self._arrays, self._columns = self._columns(), None
                for a in (self._arrays or {}).values():
                    a.setflags(write=False)
        return self._arrays

    def _at(self, i: int):
        r = self._done[i]
        if r is self._MISSING:
            with self._lock:
                r = self._done[i]
                if r is self._MISSING:
                    r = self._done[i] = self._compute(i)
        return r

    def _where(self) -> dict:
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self._keys)}
        return self._index

    def __getitem__(self, key):
        return self._at(self._where()[key])

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._where()

    def values(self):
        return [self._at(i) for i in range(len(self._keys))]

    def items(self):
        return list(zip(self._keys, self.values()))

    def __reduce__(self):  # pickled as the plain dict of every result
        return (dict, (self.items(),))

    def __repr__(self) -> str:
        return f"LazySlices({len(self._keys)} slices)"


class SlicedResult(Result):
    """Scores per slice: ``.overall`` (every row) and ``.slices`` (key -> result).

    As a mapping, in slice-key order: ``n``, ``n_slices``, ``slice_n`` (rows
    per slice), each headline score overall and per slice as
    ``slice_<score>`` (NaN where a slice's scores are undefined; its result is
    then ``None``). With intervals also ``slice_<score>_ci_lower``,
    ``slice_<score>_ci_upper`` and ``slice_<score>_differs`` (the slice's
    interval leaves out the overall score).

    ``str(r)`` (:meth:`to_text`) is one table, slices as rows, largest first;
    :meth:`to_json`, :meth:`to_frame` and :meth:`plot_scores` give the rest.
    Without intervals a slice's result, and the per-slice arrays, are made
    when first read.
    """

    __slots__ = ("_overall", "_slices", "_rows", "_names", "_columns", "_ci", "_differs", "_lazy")
    title = "Slices"

    def __init__(
        self, overall: Result, slices: Mapping, rows: dict, names: tuple, columns: tuple, ci: float | None = None
    ):
        lazy = isinstance(slices, LazySlices) and ci is None
        object.__setattr__(self, "_lazy", None)
        if not lazy:
            slices = dict(slices.items())
        values = {"n": overall["n"], "n_slices": len(slices), "slice_n": np.array([rows[k] for k in slices], np.int64)}
        if lazy:  # no intervals: no slice differs
            differs = dict.fromkeys(slices, ())
            values.update({c: overall[c] for c in columns})
        else:
            differs = {k: tuple(c for c in columns if _excludes(r, c, overall[c])) for k, r in slices.items()}
            values.update(self._per_slice(overall, slices, columns, ci, differs))
        super().__init__("SlicedScores", values, {"by": list(names), "weighted": overall.weighted, "ci": ci})
        own = {"_lazy": lazy or None, "_overall": overall, "_slices": slices, "_rows": dict(rows)}
        own.update(_names=tuple(names), _columns=tuple(columns), _ci=ci, _differs=differs)
        for k, v in own.items():
            object.__setattr__(self, k, v)

    @staticmethod
    def _per_slice(overall, slices, columns, ci, differs, arrays=None) -> dict:
        """Each headline score overall, then per slice (with its interval and flag);
        ``arrays``: every slice's scores at once (no slice's result read)."""
        values = {}
        results = None if arrays is not None else list(slices.values())
        for c in columns:
            values[c] = overall[c]
            if arrays is not None:
                values[f"slice_{c}"] = arrays[c].astype(np.float64)
                continue
            values[f"slice_{c}"] = np.array([np.nan if r is None else float(r[c]) for r in results], np.float64)
            if ci is not None and _bounded(overall, c):
                for side in ("lower", "upper"):
                    values[f"slice_{c}_ci_{side}"] = np.array(
                        [float(r[f"{c}_ci_{side}"]) if _bounded(r, c) else np.nan for r in results], np.float64
                    )
                values[f"slice_{c}_differs"] = np.array([c in differs[k] for k in slices], np.bool_)
        return values

    @property
    def _values(self):
        """The flat values, the per-slice scores filled when first read."""
        if self._lazy:
            self._fill()
        return _STORED.__get__(self)

    @_values.setter
    def _values(self, values):
        _STORED.__set__(self, values)

    def _fill(self) -> None:
        with _FILL_LOCK:
            if not self._lazy:
                return
            arrays = self._slices.field_arrays()
            if arrays is not None and not all(c in arrays for c in self._columns):
                arrays = None
            extra = self._per_slice(self._overall, self._slices, self._columns, None, self._differs, arrays)
            for a in extra.values():
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)
            head = {k: _STORED.__get__(self)[k] for k in ("n", "n_slices", "slice_n")}
            _STORED.__set__(self, {**head, **extra})  # the eager order of the fields
            object.__setattr__(self, "_lazy", None)

    def __reduce__(self):
        return (
            self.__class__,
            (self._overall, dict(self._slices.items()), self._rows, self._names, self._columns, self._ci),
        )

    @property
    def overall(self) -> Result:
        """The template's result on every row."""
        return self._overall

    @property
    def slices(self):
        """A read-only mapping of slice key -> result, in key order (a cross's key
        is a tuple; the null key is ``None`` and sorts last)."""
        return MappingProxyType(self._slices)

    @property
    def rows(self):
        """Rows per slice (key -> int), in key order."""
        return MappingProxyType(self._rows)

    @property
    def by(self) -> tuple[str, ...]:
        """The names of the key columns."""
        return self._names

    @property
    def scores(self) -> tuple[str, ...]:
        """The headline scores the table, the plot and the flags are about."""
        return self._columns

    @property
    def ci(self) -> float | None:
        """The confidence level of the intervals (``None``: no intervals)."""
        return self._ci

    @property
    def differs(self):
        """Slice key -> the headline scores whose interval on that slice leaves
        out the overall score (an empty tuple for the others, and for every
        slice when there are no intervals)."""
        return MappingProxyType(self._differs)

    # --------------------------------------------------------------- summary
    def summary(self, scores=None) -> Result:
        """Each headline score's mean and standard deviation (``ddof=1``) over the
        slices, each slice once: ``<score>_mean``, ``<score>_std`` and
        ``<score>_slices`` (the slices where it is defined), and ``n_slices``.
        ``scores`` picks other scores.

        >>> from streammetrics import BinaryConfusion, Sliced
        >>> r = Sliced(BinaryConfusion()).update([1, 0, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1],
        ...                                      by=[0, 0, 1, 1, 2, 2]).finalize()
        >>> s = r.summary()
        >>> [r.slices[k].accuracy for k in r.slices], s.accuracy_mean, round(s.accuracy_std, 6)
        ([1.0, 0.5, 0.5], 0.666..., 0.288675)
        """
        if scores is None:
            scores = self._columns
        elif isinstance(scores, str):
            scores = (scores,)
        elif not isinstance(scores, (list, tuple)) or not all(isinstance(c, str) for c in scores):
            raise TypeError(f"scores must be a score's name or a list of them, got {type(scores).__name__}")
        values = {"n_slices": len(self._slices)}
        for c in scores:
            self._check_score("scores must name scores of the slices", c)
            v = np.array([_score(r, c) for r in self._slices.values()], np.float64)
            v = v[~np.isnan(v)]
            values[f"{c}_mean"] = float(v.mean()) if v.size else math.nan
            values[f"{c}_std"] = float(v.std(ddof=1)) if v.size > 1 else math.nan
            values[f"{c}_slices"] = int(v.size)
        return Result("SliceSummary", values, {"ddof": 1, "scores": list(scores)})

    def _summary_lines(self) -> list[str]:
        s = self.summary() if len(self._slices) > 1 else {}
        parts = []
        for c in self._columns if s else ():
            if s[f"{c}_slices"]:
                part = f" ({s[c + '_slices']:,} slices)" if s[f"{c}_slices"] < len(self._slices) else ""
                parts.append(f"{c} {fmt_number(s[c + '_mean'])} ± {fmt_number(s[c + '_std'])}{part}")
        return ["", "  over the slices (mean ± std, ddof=1): " + ", ".join(parts)] if parts else []

    # ----------------------------------------------------------------- order
    def _sortable(self) -> list[str]:
        fields: dict = {}
        for r in [self._overall, *self._slices.values()]:
            if r is not None:
                fields.update((k, None) for k, v in r.items() if k != "n" and _scalar(v))
        return list(fields)

    def _check_score(self, what: str, score) -> None:
        options = self._sortable()
        if score not in options:
            raise ValueError(f"{what} ({', '.join(options)}), got {score!r}")

    def _named_by(self) -> str:
        """`` by a, b`` when the key columns have names of their own, else ``""``."""
        named = self._names and not all(n == "by" or n.startswith("by[") for n in self._names)
        return f" by {', '.join(self._names)}" if named else ""

    def order(self, sort: str = "n", ascending: bool | None = None) -> list:
        """The slice keys sorted by ``sort``: ``"n"`` (rows, largest first), ``"key"``
        or a score (highest first); ``ascending`` reverses it; undefined last.

        >>> from streammetrics import BinaryConfusion, Sliced
        >>> r = Sliced(BinaryConfusion()).update([1, 0, 1, 1], [1, 0, 0, 1], by=["a", "b", "b", "b"]).finalize()
        >>> r.order(), r.order("accuracy"), r.order("key", ascending=False)
        (['b', 'a'], ['a', 'b'], ['b', 'a'])
        """
        if not isinstance(sort, str):
            raise TypeError(f"sort must be a string, got {type(sort).__name__}")
        if ascending is not None and not isinstance(ascending, (bool, np.bool_)):
            raise TypeError(f"ascending must be a bool or None, got {type(ascending).__name__}")
        keys = list(self._slices)
        if sort == "key":
            return keys if ascending in (None, True) else keys[::-1]
        if sort in ("n", "rows"):
            values = [float(self._rows[k]) for k in keys]
        else:
            self._check_score("sort must be 'n', 'key' or a score of the slices", sort)
            values = [_score(r, sort) for r in self._slices.values()]
        sign = 1.0 if ascending else -1.0
        # undefined last; a stable sort keeps key order among ties
        return [keys[i] for i in sorted(range(len(keys)), key=lambda i: (math.isnan(values[i]), sign * values[i]))]

    # --------------------------------------------------------------- rendering
    def _level(self) -> str:
        return f"{100 * self._ci:g}%"

    def _cells(self, top: int | None = None, sort: str = "n", ascending: bool | None = None):
        """``(head, body, total, hidden, notes)`` of the slice table: its cells (a row
        per shown slice; the overall row), the slices not shown, and the lines said below it."""
        names, cols = self._names, self._columns
        keys = self.order(sort, ascending)
        shown = keys if top is None or len(keys) <= top else keys[:top]
        bounded = [c for c in cols if self._ci is not None and _bounded(self._overall, c)]
        head = [*names, "rows"]
        for c in cols:
            head += [c, f"{c} {self._level()} CI"] if c in bounded else [c]
        head += ["differs"] if bounded else []
        certified = []

        def cells(parts, n, r):
            row = [_cell(v) for v in parts] + [fmt_number(n)]
            for c in cols:
                text = "undefined" if r is None else fmt_number(r[c])
                if _certified(r, c):  # a binned state's figure: its certified interval
                    text += f" (bounds {fmt_number(r[c + '_lower'])} .. {fmt_number(r[c + '_upper'])})"
                    certified.append(c)
                row.append(text)
                if c in bounded:
                    row.append(fmt_interval(r, c) if _bounded(r, c) else "")
            return row

        body = []
        for k in shown:
            flags = [" ".join(self._differs[k])] if bounded else []
            body.append(cells(k if len(names) > 1 else (k,), self._rows[k], self._slices[k]) + flags)
        total = cells(["(all)"] + [""] * (len(names) - 1), self._values["n"], self._overall) + [""] * bool(bounded)
        notes = []
        if certified:
            notes.append("  (bounds: the certified interval of a figure read off a binned state)")
        if bounded:
            flagged = sum(1 for k in keys if self._differs[k])
            what = f"the slice's {self._level()} interval leaves out the overall score"
            notes += ["", f"  differs: {what} ({flagged:,} of {len(keys):,} slices)"]
        return head, body, total, len(keys) - len(shown), notes

    def _table(self, top: int | None = None, sort: str = "n", ascending: bool | None = None) -> list[str]:
        head, body, total, hidden, notes = self._cells(top, sort, ascending)
        left = {*range(len(self._names)), len(head) - 1 if head[-1] == "differs" else -1}
        *lines, last = text_table([head, *body, total], left)
        more = [f"  ... {hidden:,} more slices (see to_json())"] if hidden else []
        return [*lines, *more, last, *notes, *self._summary_lines()]

    def to_text(
        self, max_rows: int | None = None, *, sort: str = "n", top: int | None = None, ascending: bool | None = None
    ) -> str:
        """One table: a row per slice (rows, headline scores, with intervals each
        interval and ``differs``), the overall scores last; ``sort`` and
        ``ascending`` as :meth:`order`, ``top`` (or ``max_rows``) the first slices.

        >>> from streammetrics import BinaryConfusion, Sliced
        >>> r = Sliced(BinaryConfusion()).update([1, 0, 1, 1, 0], [1, 0, 0, 1, 1],
        ...                                      by=["a", "b", "b", "b", "c"]).finalize()
        >>> print(r.to_text(sort="accuracy", top=2))
        3 slices of 5 rows, sorted by accuracy (highest first)
        ======================================================
        <BLANKLINE>
          by     rows  accuracy        f1
          a         1         1         1
          b         3  0.666667  0.666667
          ... 1 more slices (see to_json())
          (all)     5       0.6  0.666667
        <BLANKLINE>
          over the slices (mean ± std, ddof=1): accuracy 0.555556 ± 0.509175, f1 0.555556 ± 0.509175
        """
        if max_rows is not None and top is not None and max_rows != top:
            raise ValueError(f"top and max_rows are the same setting; got top={top}, max_rows={max_rows}")
        top = top if top is not None else max_rows
        table = self._table(None if top is None else at_least_one("top", top), sort, ascending)
        head = self._caption() + self._named_by()
        if sort == "key":
            head += ", in key order" + ("" if ascending in (None, True) else ", reversed")
        elif sort not in ("n", "rows") or ascending is not None:
            what = "rows" if sort in ("n", "rows") else sort
            head += f", sorted by {what} ({'lowest' if ascending else 'highest'} first)"
        return "\n".join([head, "=" * len(head), ""] + table)

    def __str__(self) -> str:
        return self.to_text()

    def to_json(self, indent: int | None = 2) -> str:
        """JSON: ``{"n", "by", "scores", "ci", "overall", "summary", "slices": [{"key",
        "n", "differs", "result"}]}``, slices in key order (a cross's key a list,
        an undefined slice's result ``null``)."""
        doc = {
            "n": int(self._values["n"]),
            "by": list(self._names),
            "scores": list(self._columns),
            "ci": self._ci,
            "overall": {k: jsonable(v) for k, v in self._overall.items()},
            "summary": {k: jsonable(v) for k, v in self.summary().items()},
            "slices": [
                {
                    "key": list(k) if isinstance(k, tuple) else k,
                    "n": int(self._rows[k]),
                    "differs": list(self._differs[k]),
                    "result": None if r is None else {f: jsonable(v) for f, v in r.items()},
                }
                for k, r in self._slices.items()
            ],
        }
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_frame(self, overall: bool = True):
        """A pandas ``DataFrame``: a row per slice indexed by key (a MultiIndex for
        a cross): ``rows``, every scalar score and, with intervals,
        ``<score>_differs``; last, unless ``overall=False``, the row ``"(all)"``
        of every row together (the template's result on all of them)."""
        pd = optional("pandas", "to_frame()")

        keys = list(self._slices)
        data = {"rows": [self._rows[k] for k in keys]}
        arrays = self._slices.field_arrays() if isinstance(self._slices, LazySlices) else None
        if arrays is not None:  # (no slice's result built)
            data.update(arrays)
        else:
            results = list(self._slices.values())
            first = next((r for r in results if r is not None), {})
            fields = [k for k, v in first.items() if k != "n" and _scalar(v)]
            data.update({f: [np.nan if r is None else r[f] for r in results] for f in fields})
        for c in self._columns:
            if self._ci is not None and _bounded(self._overall, c):
                data[f"{c}_differs"] = [c in self._differs[k] for k in keys]
        if overall:
            whole = "(all)" if len(self._names) <= 1 else ("(all)",) + ("",) * (len(self._names) - 1)
            keys.append(whole)
            for f, column in data.items():
                value = self._values["n"] if f == "rows" else False if f.endswith("_differs") else self._overall[f]
                data[f] = [*column, value]
        if len(self._names) > 1:
            index = pd.MultiIndex.from_tuples(keys, names=list(self._names))
        else:
            index = pd.Index(keys, name=self._names[0] if self._names else "by", dtype=object)
        return pd.DataFrame(data, index=index)

    def _caption(self) -> str:
        return f"{len(self._slices):,} slices of {fmt_number(self._values['n'])} rows"

    def _repr_html_(self) -> str:
        head, body, total, _, _ = self._cells()
        rows = [html_row(head, "th"), *map(html_row, body), html_row(total, "th")]
        return f"<table><caption>{self._caption()}</caption>{''.join(rows)}</table>"

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        return self._table()

    def report_extras(self, ctx: RenderContext) -> dict:
        return {"slices": json.loads(self.to_json(None))["slices"]}

    # ------------------------------------------------------------------ plots
    def plot_scores(self, folder: str, score: str | None = None, *, max_slices: int = MAX_PLOTTED_SLICES) -> str:
        """Draw one score per slice as a dot chart (needs matplotlib) into ``folder``
        (intervals as whiskers, the overall score a line); past ``max_slices``
        slices, the largest with a quarter each of the highest and lowest
        scores; the PNG's path. ``score``: the first headline score."""
        from ..report import plots

        if score is None:
            score = self._columns[0] if self._columns else None
        if not isinstance(score, str):
            raise TypeError(f"score must be a string, got {type(score).__name__}")
        self._check_score("score must be a score of the slices", score)
        keys, drawn, note = self._plotted(score, at_least_one("max_slices", max_slices))
        results = [self._slices[k] for k in drawn]
        labels = [" / ".join(_cell(v) for v in k) if isinstance(k, tuple) else _cell(k) for k in drawn]
        values = np.array([_score(r, score) for r in results])
        lower, upper = (
            np.array([float(r[f"{score}_ci_{e}"]) if _bounded(r, score) else v for r, v in zip(results, values)])
            for e in ("lower", "upper")
        )
        flagged = np.array([_excludes(r, score, self._overall[score]) for r in results], bool)
        title = f"{score} per slice{self._named_by()}"
        if self._ci is not None and _bounded(self._overall, score):
            title += f" ({self._level()} intervals)"
        overall, rows = _score(self._overall, score), [_cell(self._rows[k]) for k in drawn]
        return plots.slice_scores(
            labels, values, lower, upper, flagged, overall, score, rows, folder, title, note, name=f"slices_{score}.png"
        )

    def _plotted(self, score: str, most: int):
        """``(keys, drawn, note)``: every key by size, the ``most`` drawn (the largest slices, and a quarter each of
        the highest and lowest ``score``, so a small bad slice is not left out), and what the note says of them."""
        keys = self.order("n")
        if len(keys) <= most:
            return keys, keys, None
        tail = most // 4
        ranked = [k for k in self.order(score) if not math.isnan(_score(self._slices[k], score))]
        chosen = set(keys[: most - 2 * tail])
        chosen.update(ranked[:tail])
        chosen.update(ranked[len(ranked) - tail :] if tail else ())
        # ties between the picks: the next largest
        chosen.update(k for k in keys if len(chosen) < most and k not in chosen)
        drawn = [k for k in keys if k in chosen][:most]
        extremes = f", the {tail:,} highest and {tail:,} lowest {score}" if tail else ""
        return keys, drawn, f"the {most - 2 * tail:,} largest{extremes} of {len(keys):,} slices"

    def plot(self, folder: str, ctx: RenderContext | None = None, *, max_slices: int = MAX_PLOTTED_SLICES) -> list[str]:
        """Draw each headline score per slice (:meth:`plot_scores`); the paths."""
        return [self.plot_scores(folder, c, max_slices=max_slices) for c in self._columns]

    def __repr__(self) -> str:
        cols = " ".join(
            f"{c}={self._overall[c]:.6g}"
            for c in self._columns
            if isinstance(self._overall[c], (int, float)) and math.isfinite(self._overall[c])
        )
        n = _STORED.__get__(self)["n"]  # reading no slice's result
        return f"SlicedScores(n={n}, n_slices={len(self._slices)}{', ' if cols else ''}{cols})"
