"""Evaluating input files (shards) into Evaluators and merging them, with the
library's errors told as errors about the file, its column and its row."""

from __future__ import annotations

import numpy as np

from streammetrics import BadShapeError, BadValueError, Evaluator, Sliced
from streammetrics.io import InputError

from .common import CommandError

__all__ = ["make_evaluator", "evaluate_sources", "translate"]

#: the role of each argument name of ``update`` the library reports: y, p or w
_ROLE = {"y": "y", "labels_true": "y", "p": "p", "labels_pred": "p", "sample_weight": "w", "by": "by"}
_SCORES_HINT = " (for unbounded scores such as logits, pass --scores score)"


def make_evaluator(settings: dict):
    """``Evaluator(**settings)``, or with ``settings["by"]`` (key columns) that
    Evaluator in a :class:`~streammetrics.Sliced` of at most
    ``settings["max_slices"]`` slices; refused settings become a :class:`CommandError`."""
    options = {k: v for k, v in settings.items() if k not in ("by", "max_slices")}
    try:
        ev = Evaluator(**options)
        if settings.get("by"):
            extra = {"max_slices": settings["max_slices"]} if settings.get("max_slices") else {}
            return Sliced(ev, **extra)
        return ev
    except ImportError as exc:
        raise CommandError(
            f"task {settings['task']!r} is not available in this installation ({exc})"
        ) from None
    except (TypeError, ValueError) as exc:
        raise CommandError(str(exc)) from None


class _KeyColumn(np.ndarray):
    """A key column that carries its file column's name, which the slices report."""

    name: str = "by"


def _keys(src, chunk):
    """The ``by`` argument of a chunk: its key columns, named as in the file."""
    cols = []
    for name, values in zip(src.columns.by, chunk.keys):
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


def _bad_value(exc: BadValueError, src, chunk, task) -> CommandError:
    row = chunk.start + exc.row
    if exc.relation == "=":
        what = f"value {exc.value!r}: {exc.problem}"
    else:
        what = exc.detail
    role = _ROLE.get(exc.argument)
    if role is None:
        return CommandError(f"{src.path}: {src.where(row)}: {exc.argument} {what}")
    hint = ""
    if task == "binary" and role == "p" and "probabilities must lie in [0, 1]" in exc.problem:
        hint = _SCORES_HINT
    col = _column(src, role, exc.column)
    return CommandError(f"{src.path}: {src.where(row)}, column {col!r}: {what}{hint}")


def translate(exc: Exception, src, chunk, task: str | None = None) -> CommandError:
    """The library's error about a chunk of ``src`` as a message about the file.

    ``task`` is the evaluated task: a binary one adds the hint about ``--scores``
    to a probability out of [0, 1].

    A :class:`~streammetrics.BadValueError` names the file's column and row
    (counted as the file's reader counts them); a
    :class:`~streammetrics.BadShapeError` about one argument names its column;
    any other error names the rows of the chunk.
    """
    if isinstance(exc, BadValueError):
        return _bad_value(exc, src, chunk, task)
    if isinstance(exc, BadShapeError) and len(exc.arguments) == 1 and exc.arguments[0] in _ROLE:
        col = src.columns.column_of(_ROLE[exc.arguments[0]])
        return CommandError(f"{src.path}: column {col!r}: {exc}")
    last = chunk.start + len(chunk.y) - 1
    return CommandError(f"{src.path}: {src.where(chunk.start, last)}: {exc}")


def evaluate_sources(sources, settings: dict, chunk_rows: int, progress, sample=None,
                     on_shard=None, keep_shards: bool = True):
    """Evaluate each source into its own Evaluator and merge them in order.

    Parameters
    ----------
    sources : list of streammetrics.io.Source
        The shards, in merge order.
    settings : dict
        :func:`make_evaluator` of it for each shard and for the total (a
        :class:`~streammetrics.Sliced` Evaluator when it names ``by`` columns).
    chunk_rows : int
        Rows read (and folded) at a time.
    progress : Progress
        Told which file is being read, and advanced as it is read.
    sample : Reservoir, optional
        Fed every ``(y, p)`` row.
    on_shard : callable, optional
        Called as ``on_shard(source, evaluator)`` after each shard.
    keep_shards : bool
        Return each shard's Evaluator. Without, the first shard's Evaluator
        becomes the total (merging into an empty one gives the same state, but
        copies an exact AUC's spilled runs: a file as large as the state) and
        every other is dropped once merged, its temporary files with it.

    Returns
    -------
    (Evaluator, list of Evaluator)
        The merged total and each shard's own Evaluator (or Sliced Evaluators;
        an empty list without ``keep_shards``).

    Raises
    ------
    CommandError
        On any problem with an input; it carries ``(total, shards_done)``, the
        merged state of the completed shards, as ``.partial`` (as does a
        ``KeyboardInterrupt``).
    """
    total = make_evaluator(settings)
    sliced = isinstance(total, Sliced)
    shards = []
    done = 0
    try:
        for src in sources:
            ev = make_evaluator(settings)
            progress.start(src)
            for chunk in src.chunks(chunk_rows):
                try:
                    if sliced:
                        ev.update(chunk.y, chunk.p, sample_weight=chunk.w, by=_keys(src, chunk))
                    else:
                        ev.update(chunk.y, chunk.p, chunk.w)
                except (ValueError, TypeError) as exc:
                    raise translate(exc, src, chunk, settings["task"]) from None
                if sample is not None:
                    sample.add(chunk.y, chunk.p)
                progress.update(chunk)
            progress.complete()
            if not keep_shards and not done:
                total = ev
            else:
                try:
                    total.merge(ev)
                except ValueError as exc:  # the union of the shards' slices passes max_slices
                    raise CommandError(f"{src.path}: {exc}") from None
            done += 1
            if keep_shards:
                shards.append(ev)
            if on_shard is not None:
                on_shard(src, ev)
            del ev
    except InputError as exc:
        err = CommandError(str(exc))
        err.partial = (total, done)
        raise err from None
    except (CommandError, KeyboardInterrupt) as exc:
        exc.partial = (total, done)
        raise
    return total, shards
