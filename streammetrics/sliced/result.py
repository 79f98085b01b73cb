"""The result of a sliced accumulator: the overall result and one per slice."""

from __future__ import annotations

import html
import json
import math
from types import MappingProxyType

import numpy as np

from .._protocol.result import RenderContext, Result, fmt_number, jsonable

__all__ = ["SlicedResult", "score_columns"]


def score_columns(headline, overall: Result) -> tuple[str, ...]:
    """The scores a slice table shows: the template's headline, else its first
    few scalar scores."""
    cols = [h for h in headline if h in overall]
    if cols:
        return tuple(cols)
    scalars = [k for k, v in overall.items()
               if k != "n" and isinstance(v, (float, np.floating)) and not isinstance(v, bool)]
    return tuple(scalars[:3])


def _cell(v) -> str:
    return "(null)" if v is None else str(v)


class SlicedResult(Result):
    """Scores per slice: ``.overall`` (every row) and ``.slices`` (key -> result).

    As a mapping it holds flat values, in slice-key order: ``n`` (rows),
    ``n_slices``, ``slice_n`` (rows per slice), each headline score of the
    overall result under its own name, and the same score per slice as an
    array under ``slice_<score>`` (NaN for a slice whose scores are undefined,
    such as one whose weights sum to zero; its entry in ``.slices`` is then
    ``None``). ``str(r)`` (:meth:`to_text`) is one table, slices as rows;
    :meth:`to_json` gives every slice's full result.
    """

    __slots__ = ("_overall", "_slices", "_rows", "_names", "_columns")
    title = "Slices"

    def __init__(self, overall: Result, slices: dict, rows: dict, names: tuple, columns: tuple):
        values = {"n": overall["n"], "n_slices": len(slices),
                  "slice_n": np.array([rows[k] for k in slices], np.int64)}
        for c in columns:
            values[c] = overall[c]
            values[f"slice_{c}"] = np.array(
                [np.nan if r is None else float(r[c]) for r in slices.values()], np.float64)
        super().__init__("SlicedScores", values, {"by": list(names), "weighted": overall.weighted})
        object.__setattr__(self, "_overall", overall)
        object.__setattr__(self, "_slices", dict(slices))
        object.__setattr__(self, "_rows", dict(rows))
        object.__setattr__(self, "_names", tuple(names))
        object.__setattr__(self, "_columns", tuple(columns))

    def __reduce__(self):
        return (self.__class__, (self._overall, self._slices, self._rows, self._names, self._columns))

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

    # --------------------------------------------------------------- rendering
    def _table(self, max_rows: int | None = None) -> list[str]:
        names, cols = self._names, self._columns
        keys = list(self._slices)
        shown = keys if max_rows is None or len(keys) <= max_rows else keys[:max_rows]
        body = []
        for k in shown:
            parts = k if len(names) > 1 else (k,)
            r = self._slices[k]
            scores = ["undefined" if r is None else fmt_number(r[c]) for c in cols]
            body.append([_cell(v) for v in parts] + [fmt_number(self._rows[k])] + scores)
        overall = [fmt_number(self._overall[c]) for c in cols]
        total = ["(all)"] + [""] * (len(names) - 1) + [fmt_number(self._values["n"])] + overall
        head = list(names) + ["rows"] + list(cols)
        rows = [head] + body + [total]
        widths = [max(len(r[j]) for r in rows) for j in range(len(head))]
        nk = len(names)

        def line(r):
            cells = [f"{v:<{widths[j]}}" if j < nk else f"{v:>{widths[j]}}" for j, v in enumerate(r)]
            return ("  " + "  ".join(cells)).rstrip()

        out = [line(head)] + [line(r) for r in body]
        if len(shown) < len(keys):
            out.append(f"  ... {len(keys) - len(shown):,} more slices (see to_json())")
        out.append(line(total))
        return out

    def to_text(self, max_rows: int | None = None) -> str:
        """One table: a row per slice (sorted by key), its rows and headline scores,
        and the overall scores last; ``max_rows`` shows only the first slices."""
        head = f"{len(self._slices):,} slices of {fmt_number(self._values['n'])} rows"
        if not all(n == "by" or n.startswith("by[") for n in self._names):
            head += f" by {', '.join(self._names)}"
        return "\n".join([head, "=" * len(head), ""] + self._table(max_rows))

    def __str__(self) -> str:
        return self.to_text()

    def to_json(self, indent: int | None = 2) -> str:
        """JSON: ``{"n", "by", "scores", "overall", "slices": [{"key", "n", "result"}]}``;
        a cross's key is a list, a slice with undefined scores has ``"result": null``."""
        doc = {
            "n": int(self._values["n"]),
            "by": list(self._names),
            "scores": list(self._columns),
            "overall": {k: jsonable(v) for k, v in self._overall.items()},
            "slices": [
                {"key": list(k) if isinstance(k, tuple) else k, "n": int(self._rows[k]),
                 "result": None if r is None else {f: jsonable(v) for f, v in r.items()}}
                for k, r in self._slices.items()
            ],
        }
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_frame(self):
        """A pandas ``DataFrame`` (needs pandas): one row per slice, indexed by the
        key (a MultiIndex for a cross), with its ``rows`` and every scalar score."""
        import pandas as pd

        keys = list(self._slices)
        fields: list = []
        for r in self._slices.values():
            if r is not None:
                fields = [k for k, v in r.items() if k != "n" and isinstance(v, (int, float, np.number))
                          and not isinstance(v, (bool, np.bool_))]
                break
        data = {"rows": [self._rows[k] for k in keys]}
        for f in fields:
            data[f] = [np.nan if r is None else r[f] for r in self._slices.values()]
        if len(self._names) > 1:
            index = pd.MultiIndex.from_tuples(keys, names=list(self._names))
        else:
            index = pd.Index(keys, name=self._names[0] if self._names else "by", dtype=object)
        return pd.DataFrame(data, index=index)

    def _repr_html_(self) -> str:
        cols = self._columns
        head = "".join(f"<th>{html.escape(c)}</th>" for c in (*self._names, "rows", *cols))
        body = []
        for k, r in self._slices.items():
            parts = k if len(self._names) > 1 else (k,)
            cells = [html.escape(_cell(v)) for v in parts] + [fmt_number(self._rows[k])]
            cells += ["undefined" if r is None else html.escape(fmt_number(r[c])) for c in cols]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        total = ["(all)"] + [""] * (len(self._names) - 1) + [fmt_number(self._values["n"])]
        total += [html.escape(fmt_number(self._overall[c])) for c in cols]
        body.append("<tr>" + "".join(f"<th>{c}</th>" for c in total) + "</tr>")
        return (f"<table><caption>{len(self._slices):,} slices of {fmt_number(self._values['n'])} rows"
                f"</caption><tr>{head}</tr>{''.join(body)}</table>")

    def section(self, ctx: RenderContext, names=None) -> list[str]:
        return self._table()

    def report_extras(self, ctx: RenderContext) -> dict:
        return {"slices": json.loads(self.to_json(None))["slices"]}

    def __repr__(self) -> str:
        cols = " ".join(f"{c}={self._overall[c]:.6g}" for c in self._columns
                        if isinstance(self._overall[c], (int, float)) and math.isfinite(self._overall[c]))
        return f"SlicedScores(n={self._values['n']}, n_slices={len(self._slices)}{', ' if cols else ''}{cols})"
