"""Evaluating input files (shards) into Evaluators and merging them, with the
library's errors told as errors about the file, its column and its row."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from streammetrics import BadShapeError, BadValueError, Evaluator, Sliced
from streammetrics.io import ColumnSpec, InputError
from streammetrics.sliced import DEFAULT_MAX_SLICES

from .common import CommandError, failing

__all__ = ["columns_of", "make_evaluator", "evaluate_sources", "told", "chunks_of", "QueryCodes"]

#: the role of each argument name of ``update`` the library reports: y, p or w
_ROLE = {"y": "y", "labels_true": "y", "p": "p", "labels_pred": "p", "sample_weight": "w", "by": "by"}
_ROLE.update(relevance="y", score="p")
_SCORES_HINT = " (for unbounded scores such as logits, pass --scores score)"


def columns_of(args, p_columns, labels=None, classes=False, by=()) -> ColumnSpec:
    """The columns a command reads; ``labels`` the labels setting, if any, class labels when
    ``classes`` (then text ones are read as text), else the names of multilabel columns."""
    text = classes and isinstance(labels, list) and any(isinstance(v, str) for v in labels)
    return ColumnSpec(args.y, tuple(p_columns), args.weight, labels=labels is not None, by=by, text_labels=text)


def make_evaluator(settings: dict):
    """``Evaluator(**settings)``, or with ``settings["by"]`` (key columns) that
    Evaluator in a :class:`~streammetrics.Sliced` of at most
    ``settings["max_slices"]`` slices; refused settings become a :class:`CommandError`."""
    options = {k: v for k, v in settings.items() if k not in ("by", "max_slices")}
    try:
        with failing((TypeError, ValueError)):
            ev = Evaluator(**options)
            return Sliced(ev, settings.get("max_slices") or DEFAULT_MAX_SLICES) if settings.get("by") else ev
    except ImportError as exc:
        raise CommandError(f"task {settings['task']!r} is not available in this installation ({exc})") from None


class QueryCodes:
    """``--task ranking``'s query ids as int64: integers as they are, any other value
    (text) numbered in order of first sight, the same number in every file of one run."""

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


class _KeyColumn(np.ndarray):
    """A key column that carries its file column's name, which the slices report."""

    name: str = "by"


def _keys(src, chunk, skip=0):
    """The ``by`` argument of a chunk: its key columns (the first ``skip`` left out), named as in the file."""
    cols = []
    for name, values in list(zip(src.columns.by, chunk.keys))[skip:]:
        col = np.asarray(values).view(_KeyColumn)
        col.name = name
        cols.append(col)
    return tuple(cols)


def _column(src, role: str, column: int | None) -> str:
    """The file column behind ``role``; ``column`` is the position in a matrix ``p``."""
    cols = src.columns
    if role in ("p", "y") and column is not None:
        names = cols.p if role == "p" else cols.ys
        if len(names) == 1:
            return f"{names[0]}[{column}]"  # one list column: its j-th value
        return names[column]
    return cols.column_of(role)


def _bad_value(exc: BadValueError, src, chunk, task, p_column=None) -> CommandError:
    row = chunk.start + exc.row
    what = f"value {exc.value!r}: {exc.problem}" if exc.relation == "=" else exc.detail
    role = _ROLE.get(exc.argument)
    if role is None:
        return CommandError(f"{src.path}: {src.where(row)}: {exc.argument} {what}")
    hint = ""
    if task == "binary" and role == "p" and "probabilities must lie in [0, 1]" in exc.problem:
        hint = _SCORES_HINT
    col = p_column if role == "p" and p_column else _column(src, role, exc.column)
    return CommandError(f"{src.path}: {src.where(row)}, column {col!r}: {what}{hint}")


@contextmanager
def told(src, chunk, task: str | None = None, p_column=None):
    """The library's errors about ``chunk`` of ``src`` raised as messages about the file: a
    bad value names its column and row (as the file's reader counts them), a bad
    shape of one argument its column, any other error the chunk's rows. A binary
    ``task`` adds the hint about ``--scores`` to a probability out of [0, 1];
    ``p_column`` names the file column of a 1-D ``p`` (``compare``'s models)."""
    try:
        yield
    except BadValueError as exc:
        raise _bad_value(exc, src, chunk, task, p_column) from None
    except (ValueError, TypeError) as exc:
        if isinstance(exc, BadShapeError) and len(exc.arguments) == 1 and exc.arguments[0] in _ROLE:
            col = src.columns.column_of(_ROLE[exc.arguments[0]])
            raise CommandError(f"{src.path}: column {col!r}: {exc}") from None
        raise CommandError(f"{src.path}: {src.where(chunk.start, chunk.start + len(chunk.y) - 1)}: {exc}") from None


def chunks_of(src, rows: int, progress, queries: QueryCodes | None = None):
    """``(chunk, arrays)`` of the chunks of ``src``, ``rows`` rows at a time, the progress bar
    moved on as they are read; a problem with the file is a :class:`CommandError`. The arrays
    of an update are ``(y, p)``, or with ``queries`` (``--task ranking``) ``(query, relevance,
    score)``, the query ids (the first key column) coded by ``queries``."""
    progress.start(src)
    with failing(InputError):
        for chunk in src.chunks(rows):
            yield chunk, (chunk.y, chunk.p) if queries is None else (queries(chunk.keys[0]), chunk.y, chunk.p)
            progress.update(chunk)
    progress.complete()


def evaluate_sources(sources, settings: dict, chunk_rows: int, progress, sample=None, keep_shards: bool = True):
    """Evaluate each source (a shard) into its own Evaluator (:func:`make_evaluator`
    of ``settings``), ``chunk_rows`` rows at a time, and merge them in order: ``(total,
    shards)``; ``sample`` (a :class:`Reservoir`) is fed every ``(y, p)`` row. Without
    ``keep_shards`` the first shard becomes the total (merging it into an empty one
    would copy an exact AUC's spilled runs), the others dropped once merged, and
    ``shards`` is empty. A :class:`CommandError` (or ``KeyboardInterrupt``) carries
    the completed shards' merged state as ``.partial``, ``(total, shards_done)``."""
    total = make_evaluator(settings)
    sliced = isinstance(total, Sliced)
    queries = QueryCodes() if settings["task"] == "ranking" else None  # the first key column
    shards = []
    done = 0
    try:
        for src in sources:
            ev = make_evaluator(settings)
            for chunk, arrays in chunks_of(src, chunk_rows, progress, queries):
                with told(src, chunk, settings["task"]):
                    by = {"by": _keys(src, chunk, queries is not None)} if sliced else {}
                    ev.update(*arrays, sample_weight=chunk.w, **by)
                if sample is not None:
                    sample.add(chunk.y, chunk.p)
            if not keep_shards and not done:
                total = ev
            else:
                with failing(ValueError, f"{src.path}: "):  # the union of the shards' slices passes max_slices
                    total.merge(ev)
            done += 1
            if keep_shards:
                shards.append(ev)
            del ev
    except (CommandError, KeyboardInterrupt) as exc:
        exc.partial = (total, done)
        raise
    return total, shards
