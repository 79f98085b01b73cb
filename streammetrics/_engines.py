"""What the Spark and Ray integrations share: the evaluation a table asks for,
Arrow columns folded into it, and states and errors sent back as bytes.

A worker folds its rows into a copy of the plan's template and sends back
``to_bytes()`` (or its error, as JSON); the driver reads them as untrusted
files, merges them and finalizes, raising a worker's error as the library's
own exception, naming the column and the row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ._protocol import errors
from ._protocol.base import Accumulator, check_ci, from_bytes
from .evaluator import Evaluator
from .io.arrow import first_null, is_list_type, list_values
from .sliced import Sliced

#: the first byte of a value a worker sends: a state, or an error
STATE, ERROR = b"S", b"E"


@dataclass(frozen=True)
class Plan:
    """An evaluation of a table: its template, the columns read and the level of the intervals."""

    template: Accumulator
    y: str
    p: str
    weight: str | None
    by: tuple
    ci: float | None

    @property
    def columns(self) -> list:
        """The columns a worker reads, in order."""
        return [self.y, self.p] + ([self.weight] if self.weight else []) + list(self.by)

    def fold(self, acc: Accumulator, batch, where: str, first: int) -> int:
        """Fold an Arrow record batch (or table) into ``acc``; return its rows. An
        error names ``where``, the column and the row (``first`` rows on)."""
        try:
            y, p = numpy_column(batch.column(self.y), self.y), numpy_column(batch.column(self.p), self.p)
            w = numpy_column(batch.column(self.weight), self.weight) if self.weight else None
            by = {"by": tuple(key_column(batch.column(c), c) for c in self.by)} if self.by else {}
            acc.update(y, p, sample_weight=w, **by)
        except (ValueError, TypeError) as exc:  # named by the column of its argument
            column = {"y": self.y, "p": self.p, "sample_weight": self.weight}.get(getattr(exc, "argument", None))
            raise errors.in_context(exc, f"{where}, column {column!r}" if column else where, first) from None
        return batch.num_rows

    def state_of(self, batches, where: str) -> bytes:
        """What a worker sends back for Arrow record batches: their rows folded
        into a copy of the template, or the error met (naming ``where``)."""
        acc, rows = self.template.copy(), 0
        try:
            for batch in batches:
                rows += self.fold(acc, batch, where, rows)
        except (ValueError, TypeError) as exc:
            return pack_error(exc)
        return pack_state(acc)

    def finish(self, values):
        """The result of the states sent back (the first error raised), merged in
        order, as the single-process accumulator gives it."""
        acc = merged(values, self.template.copy())
        return acc.finalize(ci=self.ci) if self.ci is not None else acc.finalize()


def make_plan(y, p, *, task=None, evaluator=None, weight=None, by=None, labels=None, ci=None) -> Plan:
    """The :class:`Plan` of ``evaluate``'s arguments, checked before any job starts."""
    for name, col in (("y", y), ("p", p), ("weight", weight)):
        if not (col is None and name == "weight") and not isinstance(col, str):
            raise TypeError(f"{name} must be a column name (a string), got {type(col).__name__}")
    by = () if by is None else (by,) if isinstance(by, str) else tuple(by)
    if not all(isinstance(c, str) for c in by):
        raise TypeError("by must be a column name or a list of column names")
    if evaluator is not None:
        if task is not None or labels is not None:
            raise ValueError("pass either evaluator= or task=/labels=, not both")
        if not isinstance(evaluator, Evaluator):
            raise TypeError(f"evaluator must be a streammetrics Evaluator, got {type(evaluator).__name__}")
        if evaluator.n:
            raise ValueError("evaluator must be empty (it is the template every partition copies)")
        template = evaluator.copy()
    else:
        if task is None:
            task = "binary" if labels is None else "multiclass"
        template = Evaluator(task=task) if labels is None else Evaluator(task=task, labels=list(labels))
    if by:
        template = Sliced(template)
    return Plan(template, y, p, weight, by, check_ci(ci))


def check_columns(have: list, columns: list, what: str) -> None:
    """``ValueError`` naming the first of ``columns`` that ``what`` (of columns ``have``) lacks."""
    missing = [c for c in columns if c not in have]
    if missing:
        raise ValueError(f"{what} has no column {missing[0]!r} (it has {', '.join(have)})")


def numpy_column(col, name: str) -> np.ndarray:
    """An Arrow column as numpy: a list or tensor column as a matrix (one row per
    entry, all of one length), nulls as NaN (which the checks then refuse)."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    kind = col.type
    if is_list_type(kind):
        if col.null_count:
            raise errors.BadValueError(name, first_null(col), None, "a row of class scores is null")
        flat, k = list_values(
            col, lambda i, n, k: errors.BadValueError(name, i, n, f"entries, but row 0 has {k}", relation="has")
        )
        return numpy_column(flat, name).reshape(len(col), k)
    if isinstance(col, pa.ExtensionArray) and hasattr(col, "to_numpy"):  # a tensor column (Ray)
        return np.asarray(col.to_numpy())
    if pa.types.is_null(kind):
        return np.full(len(col), np.nan)
    if col.null_count and (pa.types.is_integer(kind) or pa.types.is_boolean(kind)):
        col = col.cast(pa.float64())
    return col.to_numpy(zero_copy_only=False)


def key_column(col, name: str):
    """A slice-key column, named and with its nulls masked (the null slice)."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    values = col.to_numpy(zero_copy_only=False)
    mask = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else False
    out = np.ma.MaskedArray(values, mask=mask)
    out.name = name
    return out


# ---------------------------------------------------------------------------
# what a worker sends back


def pack_state(acc: Accumulator) -> bytes:
    return STATE + acc.to_bytes()


def pack_error(exc: Exception) -> bytes:
    """An error as JSON: its type, its message and its attributes (a bad value's fields)."""
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in vars(exc).items()}
    d = {"type": type(exc).__name__, "message": str(exc), "attrs": attrs}
    return ERROR + json.dumps(d, default=repr).encode()


#: the exceptions an error from a worker is raised as (others: ``ValueError``)
_TYPES = {
    cls.__name__: cls
    for cls in (
        errors.BadValueError,
        errors.BadShapeError,
        errors.NoObservationsError,
        errors.NoWeightsError,
        errors.SettingsMismatchError,
        errors.StateFileError,
        errors.CountOverflowError,
        errors.WeightOverflowError,
        ValueError,
        TypeError,
    )
}


def unpack(value) -> Accumulator:
    """The accumulator a worker sent, or its error raised as the library's own
    (its message and attributes as sent); anything else is a
    :class:`~streammetrics.StateFileError`."""
    value = bytes(value)
    if value[:1] == STATE:
        return from_bytes(value[1:])
    if value[:1] != ERROR:
        raise errors.StateFileError("a worker sent a value that is neither a state nor an error")
    try:
        d = json.loads(value[1:].decode())
        kind, message, attrs = d["type"], str(d["message"]), dict(d["attrs"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise errors.StateFileError("a worker sent an unreadable error") from None
    cls = _TYPES.get(kind, ValueError)
    exc = cls.__new__(cls)  # (not its constructor, which words its own message)
    exc.args = (message,)
    exc.__dict__.update({k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()})
    raise exc


def merged(values, into: Accumulator) -> Accumulator:
    """``into`` with the states sent back merged in, in order (or the first error raised)."""
    for v in values:
        into.merge(unpack(v))
    return into


def merged_bytes(values) -> bytes:
    """What a merging step sends on: the first error among ``values`` (not empty),
    else their merge into the first (or the error met merging them); the
    driver merges the result into its template."""
    values = [bytes(v) for v in values]
    error = next((v for v in values if v[:1] == ERROR), None)
    if error is not None:
        return error
    try:
        return pack_state(merged(values[1:], unpack(values[0])))
    except (ValueError, TypeError) as exc:
        return pack_error(exc)
