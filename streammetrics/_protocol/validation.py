"""Conversion at the edge of the public API: array-likes to a few numpy dtypes.

Lists, numpy arrays and anything exposing ``__array__``,
``__array_interface__`` or ``__dlpack__`` (torch CPU tensors, pandas/polars
columns, buffers) are read without a copy where possible, into a small set of
dtypes (``uint8``/``int64``/``float64`` labels, ``float64`` reals and weights,
``int64`` classes) so Numba compiles few specializations. Wrong types raise
``TypeError``, wrong shapes :class:`~.errors.BadShapeError`; value checks
belong to the declared inputs of :mod:`.inputs`.
"""

from __future__ import annotations

import array
import numbers

import numpy as np

from .errors import BadShapeError, BadValueError, RaggedInputError, value_repr

_INT64_MAX = np.iinfo(np.int64).max

#: A zero-length weight vector: kernels read "no weights" from its length, so one
#: compiled specialization serves the weighted and the unweighted path.
EMPTY_WEIGHTS = np.empty(0, dtype=np.float64)
EMPTY_WEIGHTS.setflags(write=False)

_NUMERIC_KINDS = "biuf"
_NUMBER_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)
_U8 = np.dtype(np.uint8)
_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)
_ARRAY_PROTOCOLS = ("__array__", "__array_interface__", "__array_struct__")


def to_numpy(x, name: str, expected: str = "a 1-D array") -> np.ndarray:
    """Turn an array-like into a numpy array, sharing memory where possible.

    ``expected`` names the shape wanted, for the message about a scalar.
    """
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):
            if np.ma.getmaskarray(x).any():
                raise TypeError(
                    f"{name} is a masked array with masked values, which would be scored as if "
                    "they were data: drop or fill them first (a.compressed(), a.filled(value))"
                )
            return np.ma.getdata(x)
        return x
    if isinstance(x, (str, bytes, dict, set)):
        raise TypeError(f"{name} must be array-like, got {type(x).__name__}")
    if isinstance(x, (numbers.Number, np.generic)):
        raise BadShapeError(f"{name} must be {expected}, got a scalar ({x!r})", name)
    x = host(x)
    if type(x) is np.ndarray:
        return x
    error = None
    if any(hasattr(x, a) for a in _ARRAY_PROTOCOLS) or isinstance(x, (list, tuple, range, memoryview, array.array)):
        try:
            return np.asarray(x)
        except (TypeError, RuntimeError, ValueError) as exc:
            if isinstance(x, (list, tuple)) and "inhomogeneous" in str(exc):
                raise RaggedInputError(
                    f"{name} is a ragged list (its rows differ in length): give one value per row, "
                    "or a rectangular n x k array",
                    name,
                ) from None
            error = f"could not be converted to a numpy array ({exc})"
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except Exception as exc:  # noqa: BLE001 - reported below (numpy's own error first)
            error = error or f"could not be read through __dlpack__ ({exc})"
    if error is not None:
        raise TypeError(f"{name} {error}; {_advice(x)}")
    raise TypeError(
        f"{name} must be array-like (a list, a numpy array, a memoryview, or an object with "
        f"__array__, __array_interface__ or __dlpack__), got {type(x).__name__}"
    )


def host(x):
    """A tensor (torch) as the numpy array viewing its host memory, its dtype kept;
    anything else as it is (a tensor on a device or of a dtype numpy lacks too, for
    :func:`to_numpy`'s message).

    ``.numpy()`` is several times faster than ``np.asarray``, which goes through
    ``__array__``. A tensor that requires grad is detached (no copy): its values
    are what is scored, and refusing them would fail inside a training loop.
    """
    if type(x) is np.ndarray or not hasattr(x, "__dlpack__") or not hasattr(x, "numpy"):
        return x
    try:
        return (x.detach() if getattr(x, "requires_grad", False) else x).numpy()
    except (TypeError, RuntimeError):
        return x.detach() if hasattr(x, "detach") else x


def _advice(x) -> str:
    """What to do with an array numpy could not read: bring it to the host,
    or, already there, give it a type numpy has (bfloat16 is not one)."""
    device = getattr(getattr(x, "device", None), "type", None)
    if device is not None and device != "cpu":
        return "pass host (CPU) memory, e.g. tensor.cpu()"
    return "convert it to a type numpy has first, e.g. tensor.float()"


def objects_as_numbers(arr: np.ndarray) -> np.ndarray:
    """An object array holding only numbers as the list of its values would be
    read (``[1, 0.5]`` as float64); any other array as it is."""
    if arr.dtype.kind == "O" and all(isinstance(v, _NUMBER_TYPES) for v in arr.flat):
        return np.array(arr.tolist()) if arr.size else arr.astype(np.float64)
    return arr


def as_numbers(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` holding bools, integers or reals, else ``TypeError``.

    An object array of numbers is read as its values (:func:`objects_as_numbers`),
    so they are checked as theirs would be; one holding anything else (a
    string, None, an integer beyond 64 bits) is refused naming the first.
    """
    arr = objects_as_numbers(arr)
    if arr.dtype.kind == "O":
        i = next((i for i, v in enumerate(arr.flat) if np.asarray(v).dtype.kind not in _NUMERIC_KINDS), 0)
        at = np.unravel_index(i, arr.shape) if arr.ndim > 1 else (i,)
        v = arr.flat[i]
        what = "an integer beyond 64 bits" if isinstance(v, int) else type(v).__name__
        raise TypeError(
            f"{name}[{', '.join(map(str, at))}] = {v!r} ({what}): {name} must hold numbers"
            + (text_advice(v, name) if isinstance(v, str) else "")
        )
    if arr.dtype.kind not in _NUMERIC_KINDS:
        if arr.dtype.kind == "c":
            raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
        raise TypeError(
            f"{name} must hold numbers, got dtype {arr.dtype}"
            + (text_advice(arr.flat[0] if arr.size else "", name) if arr.dtype.kind in "OUS" else "")
        )
    return arr


def text_advice(v, name: str) -> str:
    """What to do with text ``v`` where numbers are wanted: numbers written as text
    are converted; labels are mapped, or taken by a multiclass score as they are."""
    try:
        float(v)
        return f" (numbers as text: convert with np.asarray({name}, dtype=float))"
    except (TypeError, ValueError):
        return (
            f" (map the labels to numbers first, e.g. np.asarray({name}) == {value_repr(v)} as 0/1 labels; "
            "for classes pass labels=[...] to MulticlassConfusion or Evaluator(task='multiclass'))"
        )


def squeeze_column(arr: np.ndarray) -> np.ndarray:
    """An ``(n, 1)`` column (a one-column frame, ``y.reshape(-1, 1)``) as the ``(n,)``
    vector it holds (a view); other shapes as they are. A ``(1, n)`` row is not
    squeezed: with ``n`` > 1 it is more likely a transposed matrix than a vector."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        return arr[:, 0]
    return arr


def as_1d(x, name: str) -> np.ndarray:
    """Return ``x`` as a 1-D numeric numpy array (dtype not yet normalised).

    An ``(n, 1)`` column vector is read as its single column
    (:func:`squeeze_column`).
    """
    arr = as_numbers(squeeze_column(to_numpy(x, name)), name)
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise BadShapeError(f"{name} must be a 1-D array, got a scalar", name)
        raise BadShapeError(
            f"{name} must be a 1-D array, got shape {arr.shape}"
            + (" (use .ravel() for a row vector)" if arr.ndim == 2 and arr.shape[0] == 1 else ""),
            name,
        )
    return arr


def as_labels01(x, name: str) -> np.ndarray:
    """``x`` as a contiguous ``uint8``, ``int64`` or ``float64`` 1-D array.

    Booleans and ``uint8`` are viewed as ``uint8`` without a copy; other
    integers become ``int64`` and other floats ``float64``. Values are not
    checked here.
    """
    if type(x) is np.ndarray and x.ndim == 1:
        dt = x.dtype  # the common cases, without the general path's checks
        if dt is _F64 or dt is _U8 or dt is _I64:
            if x.flags.c_contiguous:
                return x
        elif dt is _BOOL and x.flags.c_contiguous:
            return x.view(_U8)
        elif dt is _F32:  # labels as a model's float32 targets
            return x.astype(_F64)
    arr = as_1d(x, name)
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "b" or (kind == "u" and size == 1):
        arr = np.ascontiguousarray(arr).view(np.uint8)
    elif kind in "iu":
        if kind == "u" and size == 8 and arr.shape[0] and int(arr.max()) > _INT64_MAX:
            # int64 would show such a value as negative: name it as given
            i = int(np.argmax(arr > 1))
            raise BadValueError(name, i, int(arr[i]), "labels must be 0 or 1")
        arr = arr.astype(np.int64, copy=False)
    else:
        arr = arr.astype(np.float64, copy=False)
    return np.ascontiguousarray(arr)


#: float64 read from float16/float32: the dtype remembers the source (numba reads
#: plain float64), so a threshold is compared in the scores' own precision
_WIDENED = {np.dtype(t): np.dtype(np.float64, metadata={"source": np.dtype(t)}) for t in (np.float16, np.float32)}
_FINITE_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float16, np.float32)}


def as_float64(arr: np.ndarray) -> np.ndarray:
    """A numeric ``arr`` as contiguous ``float64``, a float16/float32 source remembered (:func:`cut_point`)."""
    return np.ascontiguousarray(arr, dtype=_WIDENED.get(arr.dtype, _F64))


def cut_point(threshold: float, scores: np.ndarray) -> float:
    """The float64 threshold that cuts the float64 ``scores`` as ``scores >= threshold``
    cuts them in the dtype they were read from (:func:`as_float64`).

    numpy compares a float32 array with a Python float in float32: the
    threshold is rounded to the scores' dtype first, so a float32 score of 0.7
    reaches the threshold 0.7. Integer and float64 scores compare in float64.
    """
    return cut_in(threshold, (scores.dtype.metadata or {}).get("source"))


def cut_in(threshold: float, source) -> float:
    """``threshold`` rounded to the float dtype ``source`` (None: as it is), as a float64."""
    if source is None:
        return threshold
    if abs(threshold) <= _FINITE_MAX[source]:  # the cast cannot overflow (errstate is slow)
        return float(source.type(threshold))
    with np.errstate(over="ignore"):  # beyond float16's range: +-inf, as numpy compares
        return float(np.asarray(threshold).astype(source))


def as_reals(x, name: str) -> np.ndarray:
    """``x`` as a contiguous ``float64`` 1-D array (values not yet checked)."""
    if type(x) is np.ndarray and x.ndim == 1:  # the common cases, without the general path's checks
        if x.dtype is _F64 and x.flags.c_contiguous:
            return x
        if x.dtype is _F32:  # a model's scores, most often
            return np.ascontiguousarray(x, dtype=_WIDENED[_F32])
    return as_float64(as_1d(x, name))


def as_weights(w, n: int, name: str = "sample_weight") -> np.ndarray:
    """Validated ``float64`` weights of length ``n``, or :data:`EMPTY_WEIGHTS`.

    Weights must be finite and non-negative, and positive ones normal floats
    (at least 2.2e-308).
    """
    if w is None:
        return EMPTY_WEIGHTS
    arr = as_reals(w, name)
    if arr.shape[0] != n:
        raise BadShapeError(f"{name} has length {arr.shape[0]} but the labels have length {n}", name)
    if n:
        from .._kernels.compensated import first_bad_weight

        i = first_bad_weight(arr)
        if i >= 0:
            v = arr[i]
            if not np.isfinite(v):
                problem = "weights must be finite"
            elif v < 0:
                problem = "weights must be non-negative"
            else:
                problem = (
                    "a positive weight below 2.2e-308 (subnormal) keeps too few digits: "
                    "rescale the weights (every score is the same for any positive scale)"
                )
            raise BadValueError(name, i, v, problem)
    return arr


def check_count(value, name: str, low: int = 1, or_none: bool = False) -> int:
    """``value`` checked: an integer of at least ``low`` (``or_none``: the caller also takes ``None``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{' or None' if or_none else ''}, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return int(value)


def check_choice(name: str, value, allowed):
    """``value`` checked: one of the strings ``allowed``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def check_same_length(names, arrays) -> int:
    """Raise :class:`BadShapeError` unless all arrays have one length; return it."""
    n0 = arrays[0].shape[0]
    for name, arr in zip(names[1:], arrays[1:]):
        if arr.shape[0] != n0:
            raise BadShapeError(
                f"{names[0]} and {name} have different lengths: {n0} and {arr.shape[0]}", names[0], name
            )
    return n0
