"""Declared state: the named arrays an accumulator holds, and how they merge.

An accumulator lists its state as :class:`Field` declarations::

    fields = (
        Field("n", np.int64, (1,)),
        Field("counts", np.int64, (4,)),
        Field("wsums", np.float64, (4, 2), merge="pairs"),
    )

From that the base class derives the empty state, merging, the checks of a
loaded state, copying, equality, pickling and saving. A shape entry is an
``int``, a setting's name (``"n_classes"``) or ``None`` (any length). Merge
rules: ``"sum"`` (added), ``"pairs"`` (compensated ``(m, 2)`` pairs; an empty
``(0, 2)`` takes the other side's), ``"max"`` and ``"custom"`` (merged by the
class's own ``_merge_state``). A field declared ``optional=True`` was added
after states were first saved: an older state lacking it loads with it empty
(zeros).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any

import numpy as np

from .._kernels import compensated
from .errors import CountOverflowError, StateFileError, WeightOverflowError

MERGE_RULES = ("sum", "pairs", "max", "custom")
INT64_MAX = int(np.iinfo(np.int64).max)

#: bytes the empty states made in this context may take in all (None: unbounded)
_BUDGET: contextvars.ContextVar = contextvars.ContextVar("streammetrics_state_budget", default=None)


@contextlib.contextmanager
def allocation_budget(nbytes: int, what: str | None):
    """Bound the empty states built inside: more than ``nbytes`` in all is a
    :class:`StateFileError` naming ``what``, raised before allocating.

    Loading builds the accumulator from the settings a file declares before
    its arrays are checked; the budget (the file's own arrays, and a little)
    keeps a forged ``n_classes`` from allocating what the file does not hold.
    """
    token = _BUDGET.set([int(nbytes), what])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def reserve(nbytes: int, what: str) -> None:
    """Count ``nbytes`` about to be allocated for ``what`` (``"the file asks for 3
    replicates of 8 bytes each"``) against the budget of
    :func:`allocation_budget`, if one is set: past it, :class:`StateFileError`
    before anything is allocated. An accumulator that builds states by
    copying (not as empty fields) says so."""
    budget = _BUDGET.get()
    if budget is None:
        return
    if nbytes > budget[0]:
        prefix = f"{budget[1]}: " if budget[1] else ""
        raise StateFileError(f"{prefix}{what}, {nbytes} bytes in all, more than the file holds")
    budget[0] -= nbytes


class Field:
    """One named array of an accumulator's state (see the module docstring)."""

    __slots__ = ("name", "dtype", "shape", "merge", "nonneg", "rows", "doc", "optional")

    def __init__(self, name: str, dtype, shape=(1,), merge="sum", nonneg=True, rows=False, doc="", optional=False):
        if merge not in MERGE_RULES:
            raise ValueError(f"merge must be one of {MERGE_RULES}, got {merge!r}")
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.merge = merge
        self.nonneg = nonneg
        #: every entry counts rows (or sums of rows' weights that came without
        #: weights), so none exceeds the observation count ``n``
        self.rows = rows
        self.doc = doc
        self.optional = optional

    def shape_for(self, owner) -> tuple:
        """The declared shape with settings resolved (``None`` stays: any length)."""
        return tuple(getattr(owner, d) if isinstance(d, str) else d for d in self.shape)

    def empty(self, owner) -> np.ndarray:
        shape = tuple(0 if d is None else d for d in self.shape_for(owner))
        reserve(math.prod(shape) * self.dtype.itemsize, f"the settings declare a state entry {self.name!r}")
        return np.zeros(shape, self.dtype)

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.dtype}, {self.shape}, merge={self.merge!r})"


def empty_state(fields, owner) -> dict[str, np.ndarray]:
    return {f.name: f.empty(owner) for f in fields}


def merge_fields(fields, mine: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> None:
    """Fold ``theirs`` into ``mine`` field by field (``custom`` fields are skipped).

    Integer sums that would pass the ``int64`` range raise
    :class:`~.errors.CountOverflowError`, and float sums that would overflow
    float64 :class:`~.errors.WeightOverflowError` (as one pass over the rows
    of both would), before any field changes.
    """
    check_merge_fields(fields, mine, theirs)
    for f in fields:
        a, b = mine[f.name], theirs[f.name]
        if f.merge == "sum":
            a += b
        elif f.merge == "pairs" and b.shape[0]:
            if a.shape[0] == 0:
                mine[f.name] = b.copy()
            else:
                compensated.merge(a, b)
        elif f.merge == "max":
            np.maximum(a, b, out=a)


#: entries below this in magnitude cannot pass the int64 range, nor float64's,
#: when two are added (the common case, screened in one pass)
_FAR = 2.0**61


def float_sums(fields) -> list:
    """The fields whose merge adds float totals (their sums or compensated pairs)."""
    return [f for f in fields if f.dtype.kind == "f" and f.merge in ("sum", "pairs")]


def within(arrays, bound: float) -> bool:
    """Whether every entry of ``arrays`` is below ``bound`` in magnitude (one pass;
    a NaN is not)."""
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return True
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if len(arrays) > 1 else arrays[0]
    return bool(-bound < flat.min() and flat.max() < bound)


def check_merge_fields(fields, mine: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> None:
    """Raise what :func:`merge_fields` would refuse, changing nothing: integer
    sums past the ``int64`` range, float sums past float64's."""
    summed = [f.name for f in fields if f.merge in ("sum", "pairs")]
    if within([mine[k] for k in summed] + [theirs[k] for k in summed], _FAR):
        return
    for f in fields:
        if f.merge == "sum" and f.dtype.kind == "i":
            a, b = mine[f.name], theirs[f.name]
            if a.size and (np.any(b > INT64_MAX - a) if f.nonneg else _overflows(a, b)):
                raise CountOverflowError(f"merging entry {f.name!r} would pass the int64 range (2**63 - 1)")
    check_float_sums(fields, mine, [theirs])


def _float_values(f, a: np.ndarray) -> np.ndarray:
    """The values a float field sums: itself, or the value of each compensated pair."""
    return compensated.values(a) if f.merge == "pairs" else a


def check_float_sums(fields, mine: dict[str, np.ndarray], states: list) -> None:
    """Raise :class:`~.errors.WeightOverflowError` where merging ``states`` into
    ``mine`` one after another would turn a float sum that is finite in every
    operand into an infinity (weighted totals past float64's range); a value
    already infinite in an operand is left to the state's own checks."""
    for f in float_sums(fields):
        operands = [x for x in (mine[f.name], *(st[f.name] for st in states)) if x.size]
        total, finite = 0.0, True  # the running sum, and where every operand so far is finite
        with np.errstate(over="ignore", invalid="ignore"):
            for x in operands:
                v = _float_values(f, x)
                finite &= np.isfinite(v)
                total = total + v
                if np.any(finite & ~np.isfinite(total)):
                    raise WeightOverflowError("the merged states")


def _overflows(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a + b`` passes the int64 range anywhere (either sign)."""
    return bool(np.any((b > 0) & (a > INT64_MAX - b)) or np.any((b < 0) & (a < -INT64_MAX - 1 - b)))


def count_total(a: np.ndarray) -> int:
    """The exact total of non-negative ``int64`` counts (a Python ``int``, never wrapped)."""
    if a.size == 0:
        return 0
    if float(np.sum(a, dtype=np.float64)) < 2.0**62:
        return int(np.sum(a))  # far from the limit: the int64 sum cannot wrap
    return sum(a.ravel().tolist())


#: how far a compensated pair's error term may be from its sum: the error of
#: ``m`` compensated steps on non-negative terms is below ``m * 2**-53`` of the
#: sum, far below this for any stream shorter than 2**40 batches
_PAIR_ERROR = 2.0**-12


def check_fields(fields, owner, state: dict[str, Any]) -> dict[str, np.ndarray]:
    """The generic checks of a state read from outside; returns owned copies.

    Entry names, dtypes and shapes must match the declaration, floats must be
    finite, declared non-negative fields (the value of a compensated pair,
    for ``pairs``) must not be negative, a compensated pair's error term must
    be small beside its sum, the observation count ``n`` must not be
    negative and no entry of a field declared ``rows`` may exceed it. Raises
    :class:`StateFileError`.
    """
    names = {f.name for f in fields}
    _check_entries(state, {f.name for f in fields if not f.optional}, names, type(owner).__name__)
    out = {}
    for f in fields:
        if f.name not in state:  # an optional field a state saved before it lacks
            out[f.name] = f.empty(owner)
            continue
        a = state[f.name]
        if a.dtype != f.dtype:
            raise StateFileError(f"entry {f.name!r} has dtype {a.dtype}, expected {f.dtype}")
        want = f.shape_for(owner)
        if a.ndim != len(want) or any(w is not None and w != s for w, s in zip(want, a.shape)):
            shown = tuple("*" if w is None else w for w in want)
            raise StateFileError(f"entry {f.name!r} has shape {a.shape}, expected {shown}")
        out[f.name] = np.array(a, copy=True)  # checked as kept, whatever the caller's does next
    for bad, problem in _checks(fields, {k: a[np.newaxis] for k, a in out.items()}):
        if bad[0]:
            raise StateFileError(problem)
    return out


def _checks(fields, stacked: dict[str, np.ndarray]):
    """``(flagged, problem)`` of each value check over states stacked on the first
    axis of every field: finite floats, no negative value where declared
    non-negative (a pair's value), a pair's error term small beside its sum, a
    count ``n`` not negative and no entry of a field declared ``rows`` above it."""
    if "n" in stacked:
        yield stacked["n"][:, 0] < 0, "negative observation count"
    for f in fields:
        a, entry = stacked[f.name], f"entry {f.name!r}"
        if not a.size:
            continue
        g = a.shape[0]
        if a.dtype.kind == "f":
            yield ~np.isfinite(a.reshape(g, -1)).all(axis=1), f"{entry} holds NaN or infinite values"
        if f.nonneg:
            v = compensated.values(a) if f.merge == "pairs" else a
            yield (v.reshape(g, -1) < 0).any(axis=1), f"{entry} holds negative counts"
        if f.merge == "pairs":
            error = (np.abs(a[..., 1]) > _PAIR_ERROR * np.abs(a[..., 0])).reshape(g, -1).any(axis=1)
            yield error, f"{entry} holds a compensated pair whose error term is not small beside its sum"
        if f.rows and "n" in stacked:
            more = (a.reshape(g, -1) > stacked["n"][:, :1]).any(axis=1)
            yield more, f"{entry} holds more rows than the observations n (the counts cannot add up to n)"


def screen_fields(fields, stacked: dict[str, np.ndarray]) -> np.ndarray:
    """Which of many states :func:`check_fields` could refuse, in one pass per field.

    ``stacked`` holds each field of ``g`` states stacked on a new first axis,
    of the declared dtypes and shapes (the caller checked them). Returns a
    boolean mask of the ``g`` states: every state with a value that
    :func:`check_fields` refuses is flagged (a flagged state is then checked
    on its own, which gives the message)."""
    bad = np.zeros(stacked[fields[0].name].shape[0], bool)
    for flagged, _ in _checks(fields, stacked):
        bad |= flagged
    return bad


def copy_state(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in state.items()}


def states_equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a
    )


def _check_entries(state, required: set, names: set, what: str) -> None:
    """Refuse a state (untrusted) that is not a dict of arrays, holding every entry
    of ``required`` and none beyond ``names`` (``what``'s)."""
    if not isinstance(state, dict):
        raise StateFileError(f"a state must be a dict of arrays, got {type(state).__name__}")
    if not required <= set(state) <= names:
        raise StateFileError(f"state entries {sorted(state)} do not match {what}'s {sorted(names)}")
    for key, a in state.items():
        if not isinstance(a, np.ndarray):
            raise StateFileError(f"entry {key!r} is not an array")


def checked_entries(state, expected: set, what: str, optional: set = frozenset()) -> int:
    """Refuse a state (untrusted) that is not a dict of the arrays ``expected``
    (those of ``optional`` may be missing) with a count ``n`` (one non-negative
    int64), ``what``'s; the count."""
    _check_entries(state, expected - optional, expected, what)
    n = state["n"]
    if n.dtype != np.int64 or n.shape != (1,) or n[0] < 0:
        raise StateFileError("entry 'n' must be one non-negative int64")
    return int(n[0])


def loaded(acc, state: dict, what: str):
    """``acc`` holding ``state``, checked as untrusted; a refusal is a
    :class:`StateFileError` naming ``what`` (``"slice 'uk'"``)."""
    try:
        return acc.load_state_dict(state)
    except ValueError as exc:
        raise StateFileError(f"{what}: {exc}") from None


def parts_of(state: dict, prefix: str, fields: dict, count: int, one_shape: bool = False) -> dict:
    """``{field: (flat, shapes, starts)}``: the entries ``<prefix>.<field>`` and
    ``<prefix>.<field>#shape`` of ``count`` parts, checked by :func:`concatenated_parts`
    (``fields`` maps each field to its empty array)."""
    return {
        k: concatenated_parts(
            f"{prefix}.{k}", state[f"{prefix}.{k}"], state[f"{prefix}.{k}#shape"], count, e, prefix, one_shape
        )
        for k, e in fields.items()
    }


def concatenated(arrays: list, empty: np.ndarray) -> tuple:
    """``(flat, shapes)``: ``arrays`` (of ``empty``'s dtype and rank) flattened and
    concatenated, and their shapes (``len x ndim``), as :func:`concatenated_parts` reads them."""
    flat = np.concatenate([a.reshape(-1) for a in arrays]) if arrays else np.zeros(0, empty.dtype)
    return flat, np.array([a.shape for a in arrays], np.int64).reshape(len(arrays), empty.ndim)


def part_of(cuts: dict, i: int) -> dict:
    """Part ``i`` of :func:`concatenated_parts`'s ``{field: (flat, shapes, starts)}``."""
    return {k: flat[starts[i] : starts[i + 1]].reshape(tuple(shapes[i])) for k, (flat, shapes, starts) in cuts.items()}


def concatenated_parts(entry: str, flat, shapes, count: int, empty: np.ndarray, what: str, one_shape=False):
    """Check the entries ``entry`` (``flat``: ``count`` arrays of ``empty``'s dtype
    and rank, flattened and concatenated) and ``entry#shape`` (``shapes``, their
    shapes, ``count x ndim``) of an untrusted state: ``(flat, shapes, starts)``,
    part ``i`` being ``flat[starts[i]:starts[i + 1]].reshape(shapes[i])``, or
    :class:`StateFileError` naming the entry. ``what`` names a part (``"slices"``).

    With ``one_shape``, ``shapes`` may also be one row, every part's shape; and
    when that row is ``empty.shape``, ``flat`` may hold no values: every part is
    then zeros. A part's size is the product of its sizes, computed in float64
    first, so a product that wraps around ``int64`` is refused, as are the sizes
    of an empty part beyond ``2**31`` values; what a load allocates is bounded
    by what the entries hold, or by ``count`` parts of ``empty``'s shape."""
    ndim = empty.ndim
    forms = ((count, ndim), (1, ndim)) if one_shape else ((count, ndim),)
    if (
        not isinstance(shapes, np.ndarray)
        or shapes.dtype != np.int64
        or shapes.shape not in forms
        or (shapes < 0).any()
    ):
        also = f" (or 1 x {ndim}: one shape for all the {what})" if one_shape else ""
        raise StateFileError(f"entry '{entry}#shape' must be {count} x {ndim} sizes{also}")
    if not isinstance(flat, np.ndarray) or flat.ndim != 1 or flat.dtype != empty.dtype:
        raise StateFileError(f"entry '{entry}' must be a 1-D {empty.dtype} array")
    if one_shape and shapes.shape[0] == 1:  # one shape for every part (with one part, the same)
        if flat.shape[0] == 0 and count and np.prod(shapes[0].astype(np.float64)) > 0:
            if tuple(shapes[0]) != empty.shape:
                raise StateFileError(
                    f"entry '{entry}' holds no values, which stands for zeros of "
                    f"the template's shape {empty.shape} only"
                )
            reserve(count * empty.nbytes, f"the file asks for {count} {what} of zeros in entry '{entry}'")
            flat = np.zeros(count * empty.size, empty.dtype)
        shapes = np.broadcast_to(shapes, (count, ndim))
    if np.prod(shapes.astype(np.float64), axis=1).sum() != flat.shape[0]:
        raise StateFileError(f"entry '{entry}' does not hold the sizes its shapes give")
    # a part of no values still has sizes: bounded, so that its empty array can be made
    if (np.prod(np.where(shapes == 0, 1, shapes).astype(np.float64), axis=1) > flat.shape[0] + 2**31).any():
        raise StateFileError(f"entry '{entry}#shape' gives a part of no values with sizes no state has")
    sizes = np.prod(shapes, axis=1)  # exact now: none is more than the entry's length
    return flat, shapes, np.concatenate([[0], np.cumsum(sizes)])
