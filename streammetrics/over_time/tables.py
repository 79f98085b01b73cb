"""Tables of one result per bucket or step, and the buckets whose interval
leaves out the overall score."""

from __future__ import annotations

import math

import numpy as np

from .._protocol.errors import optional


def score_names(results) -> list:
    """The scalar scores every defined result holds (intervals apart), in the
    first one's order."""
    defined = [r for r in results if r is not None]
    if not defined:
        return []
    names = [
        k
        for k, v in defined[0].items()
        if isinstance(v, (float, int, np.floating, np.integer))
        and not isinstance(v, (bool, np.bool_))
        and not k.endswith(("_ci_lower", "_ci_upper"))
    ]
    return [k for k in names if all(k in r for r in defined[1:])]


def columns(lead: dict, results: list, ci, overall=None, headline=()) -> dict:
    """``lead`` (columns of the bucket, one entry per result) then each score's
    column (NaN where a bucket defines no score), its interval's with ``ci``,
    and, given the ``overall`` result, ``differs``: the ``headline`` scores
    whose overall value the bucket's interval leaves out."""
    out = {k: list(v) for k, v in lead.items()}
    for k in score_names(results):
        out[k] = [math.nan if r is None else _number(r[k]) for r in results]
        if ci is not None and all(r is None or f"{k}_ci_lower" in r for r in results):
            for side in ("_ci_lower", "_ci_upper"):
                out[k + side] = [math.nan if r is None else float(r[k + side]) for r in results]
    if ci is not None and overall is not None:
        out["differs"] = [() if r is None else differs(r, overall, headline) for r in results]
    return out


def _number(v):
    return int(v) if isinstance(v, (int, np.integer)) else float(v)


def differs(r, overall, headline) -> tuple:
    """The ``headline`` scores of ``overall`` outside ``r``'s interval."""
    out = []
    for k in headline:
        lo, hi = r.get(f"{k}_ci_lower"), r.get(f"{k}_ci_upper")
        if lo is not None and k in overall and not (lo <= overall[k] <= hi):
            out.append(k)
    return tuple(out)


def frame(table: dict):
    """A pandas DataFrame of ``table`` (pandas is needed)."""
    pd = optional("pandas", "to_frame()")
    return pd.DataFrame(table)
