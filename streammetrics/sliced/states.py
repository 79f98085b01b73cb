"""The state of a :class:`~streammetrics.Sliced` as arrays, and its checks when read.

Entries: ``n``; ``keys`` (UTF-8 JSON of the key columns and of the keys, or
``null`` for the keys when they are one integer column's: their values are
then the entry ``keys#int64``, ascending); ``overall.<field>``; and, per
template field, ``slices.<field>`` (every slice's array, flattened and
concatenated in key order) and ``slices.<field>#shape`` (each one's shape,
``g x ndim``; see :func:`slice_entries` for the short forms where every
slice's array has the template's shape).
"""

from __future__ import annotations

import json
from collections import namedtuple

import numpy as np

from .._kernels import compensated
from .._protocol.errors import StateFileError
from .._protocol.state import checked_entries, count_total, loaded, part_of, parts_of, reserve, screen_fields
from . import keys as K

KEYS = "keys"
INT_KEYS = "keys#int64"


#: a checked state: the parts a Sliced installs (``tables``: every slice's state
#: as the rows of tables, ``accs`` then ``None``)
Parsed = namedtuple("Parsed", "overall keys columns names accs tables")


def slice_entries(k: str, empty: np.ndarray, flat: np.ndarray, shapes) -> dict:
    """The entries ``slices.<k>`` and ``slices.<k>#shape`` of every slice's array
    ``flat`` (in key order) and ``shapes`` (``g x ndim``; ``None``: all of
    ``empty.shape``, then written once, and no values at all when all are
    zero bit for bit). Both short forms are lossless."""
    if shapes is not None:
        return {f"slices.{k}": flat, f"slices.{k}#shape": shapes}
    values = flat if flat.view(np.uint8).any() else np.zeros(0, empty.dtype)
    return {f"slices.{k}": values, f"slices.{k}#shape": np.array(empty.shape, np.int64).reshape(1, empty.ndim)}


def keys_entries(n: int, columns, names, keys: list, ints) -> dict:
    """The entries ``n``, ``keys`` and (``ints``: one integer column's values, in
    key order) ``keys#int64``; ``keys`` the internal keys in key order."""
    doc = {
        "columns": columns,
        "names": None if names is None else list(names),
        "keys": None if ints is not None else K.to_json(keys),
    }
    state = {"n": np.array([n], np.int64), KEYS: np.frombuffer(json.dumps(doc).encode("utf-8"), np.uint8).copy()}
    if ints is not None:  # one integer column's values: no JSON, no Python object per slice
        state[INT_KEYS] = ints
    return state


def _with_optional(state: dict, expected: set, template, fields: dict) -> dict:
    """``state`` with the optional entries a state saved before them lacks: the
    template's own load fills ``overall``, and every slice gets the empty field."""
    missing = expected - set(state)
    if not missing:
        return state
    out = dict(state)
    # the fields declared optional, by their names in the template's state
    members = template.members.items() if hasattr(template, "members") else [(None, template)]
    optional = {f.name if name is None else f"{name}.{f.name}" for name, m in members for f in m.fields if f.optional}
    for k in optional:
        forms = {f"overall.{k}", f"slices.{k}", f"slices.{k}#shape"}
        if not forms <= missing:
            continue  # present, or only partly missing: the check below names it
        empty = fields[k]
        out.update(slice_entries(k, empty, np.zeros(0, empty.dtype), None))  # every slice's zeros
        out[f"overall.{k}"] = empty.copy()
    return out


def _parse_keys(state):
    """``(keys, columns, names)`` of the entry ``keys`` (and ``keys#int64``)."""
    raw = state[KEYS]
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise StateFileError("entry 'keys' must be UTF-8 JSON bytes")
    try:
        doc = json.loads(raw.tobytes().decode("utf-8"))
        columns, names = doc["columns"], doc["names"]
        if columns is None:
            if doc["keys"] or names is not None:
                raise ValueError("keys without columns")
            return [], None, names
        if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
            raise ValueError("bad number of columns")
        if not (isinstance(names, list) and len(names) == columns and all(isinstance(s, str) for s in names)):
            raise ValueError("bad column names")
        if INT_KEYS in state:  # one integer column's values, ascending
            ints = state[INT_KEYS]
            if columns != 1 or doc["keys"] is not None:
                raise ValueError(f"keys given as entry {INT_KEYS!r} are one column's, and only there")
            if ints.dtype != np.int64 or ints.ndim != 1:
                raise ValueError(f"entry {INT_KEYS!r} must be a 1-D int64 array")
            if (ints[1:] == ints[:-1]).any():
                raise ValueError("the slice keys repeat a key")
            return ints, columns, tuple(names)
        return K.from_json(doc["keys"], columns), columns, tuple(names)
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise StateFileError(f"entry 'keys' is not a valid list of slice keys ({exc})") from None
    except RecursionError:  # (JSON nested past the interpreter's depth: slice keys are 3 deep)
        raise StateFileError("entry 'keys' is nested too deep to hold slice keys") from None


#: the entries of a template field ``k``: ``f"{before}{k}{after}"``
_SLICE_ENTRIES = (("overall.", ""), ("slices.", ""), ("slices.", "#shape"))


def parse(state, template, fields: dict, max_slices: int, tables: bool) -> Parsed:
    """Parse and check a state (untrusted) of a Sliced of ``template`` (its empty
    state ``fields``); ``tables``: its slices are rows of tables. A
    :class:`Parsed`, or ``StateFileError``."""
    if not isinstance(state, dict):
        raise StateFileError(f"a state must be a dict of arrays, got {type(state).__name__}")
    expected = {"n", KEYS} | {f"{a}{k}{b}" for k in fields for a, b in _SLICE_ENTRIES}
    state = _with_optional(state, expected, template, fields)
    if INT_KEYS in state:
        expected.add(INT_KEYS)
    n = checked_entries(state, expected, f"a Sliced {type(template).__name__}")
    keys, columns, names = _parse_keys(state)
    if len(keys) > max_slices:
        raise StateFileError(f"{len(keys)} slices, more than max_slices={max_slices}")
    ints = isinstance(keys, np.ndarray)
    if (keys[1:] < keys[:-1]).any() if ints else keys != sorted(keys):
        raise StateFileError("the slice keys are not in key order")
    if not ints and len({K.public(k) for k in keys}) != len(keys):
        raise StateFileError("two slice keys are equal as Python keys (True and 1)")
    key_of = keys.item if ints else lambda i: K.public(keys[i])  # the public key of slice i
    overall = loaded(template.copy(), {k: state[f"overall.{k}"] for k in fields}, "overall")
    g = len(keys)
    cuts = parts_of(state, "slices", fields, g, one_shape=True)

    def slice_acc(i):
        """Slice ``i``'s accumulator, its state checked on its own."""
        acc = loaded(template.copy(), part_of(cuts, i), f"slice {key_of(i)!r}")
        if acc.n == 0:
            raise StateFileError(f"slice {key_of(i)!r} holds no rows")
        return acc

    stacked = _stacked(cuts, g, fields) if tables and g else None
    screened = None if stacked is None else template.screen_states(stacked)
    if stacked is not None and screened is not None:
        # every slice's state checked at once, the flagged ones (and the first
        # without rows, for its message) one by one
        with np.errstate(over="ignore", invalid="ignore"):  # as each slice's Python floats
            bad = screen_fields(template.fields, stacked) | screened
        bad |= stacked["n"][:, 0] == 0
        for i in np.flatnonzero(bad).tolist():
            slice_acc(i)
        accs = None
        total = count_total(stacked["n"][:, 0])
    else:
        # an accumulator a slice (its arrays are the file's; the objects too take room)
        size = sum(e.nbytes for e in fields.values()) + 4096
        reserve(g * size, f"the file asks for {g} slices of at least {size} bytes each")
        accs = [slice_acc(i) for i in range(g)]
        total = sum(acc.n for acc in accs)
        if tables:  # (slices of other shapes than the template's: not tables)
            stacked = {
                k: np.stack([a.state_dict()[k] for a in accs]) if accs else np.zeros((0, *e.shape), e.dtype)
                for k, e in fields.items()
            }
            accs = None
    if total != overall.n or overall.n != n:
        raise StateFileError(f"the slices hold {total} rows, the overall state {overall.n}, the count {n}")
    _check_overall_agrees(template, overall.state_dict(), cuts)
    return Parsed(overall, keys, columns, names, accs, stacked)


def _stacked(cuts: dict, g: int, fields: dict) -> dict | None:
    """Every slice's state as tables (``{field: (g, *shape)}``, copies of the
    entries, so that what is checked is what is kept) where every slice's
    field has the template's shape, else ``None``."""
    out = {}
    for k, (flat, shapes, _) in cuts.items():
        shape = fields[k].shape
        if not (shapes == np.array(shape, np.int64)).all():
            return None
        out[k] = flat.reshape(g, *shape).copy()
    return out


def _check_overall_agrees(template, mine: dict, cuts: dict) -> None:
    """Refuse an overall state that is not its slices' states merged: fields the
    template merges by its declared rules, counts exactly and float sums to
    rounding (a state may have folded its overall row by row, the slices'
    apart); a field of row counts merged its own way, by its totals over its
    axes of any length (merging adds rows, wherever it puts them)."""
    for f in template.fields:
        if f.name == "n":
            continue
        flat, shapes, starts = cuts[f.name]  # (the slices' arrays as the file holds them)
        if f.merge == "custom" and f.rows:
            if not mine[f.name].size:
                continue  # (the overall keeps its rows another way: a rank state's, as weights)
            free = tuple(i for i, d in enumerate(f.shape) if d is None)
            whole = mine[f.name].sum(axis=free)
            parts = (flat[starts[i] : starts[i + 1]].reshape(shapes[i]) for i in range(shapes.shape[0]))
            if not np.array_equal(sum((x.sum(axis=free) for x in parts), np.zeros_like(whole)), whole):
                raise StateFileError(f"entry 'overall.{f.name}' does not count the rows its slices count")
            continue
        if f.merge not in ("sum", "pairs") or not shapes.shape[0] or (shapes != shapes[0]).any():
            continue  # (a field made on its first weighted row, in some slices only)
        parts = flat.reshape(shapes.shape[0], *shapes[0])
        if parts.shape[1:] != mine[f.name].shape:
            continue
        if f.dtype.kind == "i":
            agrees = np.array_equal(parts.sum(axis=0), mine[f.name])
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                each = compensated.values(parts) if f.merge == "pairs" else parts
                whole = compensated.values(mine[f.name]) if f.merge == "pairs" else mine[f.name]
                slack = 1e-9 * (np.abs(each).sum(axis=0) + np.abs(whole)) + 1e-300
                agrees = bool(np.all(np.abs(each.sum(axis=0) - whole) <= slack))
        if not agrees:
            raise StateFileError(f"entry 'overall.{f.name}' is not the slices' entries merged")
