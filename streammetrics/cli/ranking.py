"""``evaluate --task ranking``: the query, relevance and score columns, and query ids of any type."""

from __future__ import annotations

import numpy as np

from .common import CommandError

__all__ = ["cut_offs", "ranking_settings", "QueryCodes"]


def cut_offs(text: str) -> tuple:
    """``--k 1,5,10`` as ``(1, 5, 10)``."""
    try:
        ks = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise CommandError(f"--k takes positive integers separated by commas, such as 1,5,10; got {text!r}") from None
    if not ks or min(ks) < 1:
        raise CommandError(f"--k takes positive integers separated by commas, such as 1,5,10; got {text!r}")
    return ks


def ranking_settings(args) -> dict:
    """The Evaluator settings of ``--task ranking``; points ``--y`` and ``--p`` at the
    relevance and score columns and puts the query column first among the keys."""
    if args.query is None:
        raise CommandError("--task ranking needs --query COL (the column of query ids)")
    args.y = args.relevance or "relevance"
    args.p = [args.score or "score"]
    settings = {"grouped": bool(args.grouped)}
    if args.k is not None:
        settings["k"] = cut_offs(args.k)
    return settings


class QueryCodes:
    """Query ids as int64: integers as they are, any other value (text) numbered
    in order of first sight, the same number in every file of one run."""

    def __init__(self):
        self.codes: dict = {}

    def __call__(self, values) -> np.ndarray:
        arr = np.asarray(values)
        if arr.dtype.kind in "iub":
            return arr.astype(np.int64)
        if arr.dtype.kind == "f" and (np.abs(arr) < 2.0**63).all() and (arr == np.round(arr)).all():
            return arr.astype(np.int64)
        codes = self.codes
        return np.fromiter((codes.setdefault(v, len(codes)) for v in arr.tolist()), np.int64, arr.shape[0])
