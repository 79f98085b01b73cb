"""Input checks and dtype conversion, done once at the edge of the public API.

Every public function and ``update`` method funnels its arguments through the
helpers here. They

* accept lists, numpy arrays and anything exposing ``__array__`` or
  ``__dlpack__`` (torch CPU tensors, jax arrays, pandas/polars columns), without
  copying when the memory can be shared;
* convert to a small fixed set of dtypes (``uint8``/``int64``/``float64`` for
  labels, ``float64`` for reals and weights) so that Numba compiles few
  specializations of each kernel;
* raise ``TypeError`` for wrong types and ``ValueError`` naming the argument, the
  problem and the first offending position for wrong values.

Kernels never validate; value checks that are fused into a kernel's single pass
only report *whether* a batch is bad, and the helpers here then locate the first
offending position to build the message (the error path may be slow).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_1d",
    "as_labels01",
    "as_reals",
    "as_weights",
    "check_same_length",
    "first_bad_label01",
    "first_bad_probability",
    "first_nonfinite",
    "bad_value",
    "EMPTY_WEIGHTS",
]

#: A zero-length weight vector: kernels read "no weights" from its length, so one
#: compiled specialization serves the weighted and the unweighted path.
EMPTY_WEIGHTS = np.empty(0, dtype=np.float64)
EMPTY_WEIGHTS.setflags(write=False)

_LABEL_KINDS = "biuf"


def _to_numpy(x, name: str) -> np.ndarray:
    """Turn an array-like into a numpy array, sharing memory where possible."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (str, bytes, dict, set)):
        raise TypeError(f"{name} must be array-like, got {type(x).__name__}")
    if isinstance(x, (numbers.Number, np.generic)):
        raise ValueError(f"{name} must be a 1-D array, got a scalar ({x!r})")
    # torch tensors that require grad refuse __array__; their values are what we
    # score, so detach them (no copy) rather than fail inside a training loop.
    if getattr(x, "requires_grad", False) and hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "__array__") or isinstance(x, (list, tuple, range)):
        try:
            return np.asarray(x)
        except (TypeError, RuntimeError, ValueError) as exc:
            if hasattr(x, "__dlpack__"):
                try:
                    return np.from_dlpack(x)
                except Exception:  # noqa: BLE001 - report the original error
                    pass
            raise TypeError(
                f"{name} could not be converted to a numpy array ({exc}); "
                "pass host (CPU) memory, e.g. tensor.cpu()"
            ) from exc
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(
                f"{name} could not be read through __dlpack__ ({exc}); "
                "pass host (CPU) memory, e.g. tensor.cpu()"
            ) from exc
    raise TypeError(
        f"{name} must be array-like (a list, a numpy array, or an object with "
        f"__array__ or __dlpack__), got {type(x).__name__}"
    )


def as_1d(x, name: str) -> np.ndarray:
    """Return ``x`` as a 1-D numeric numpy array (dtype not yet normalised)."""
    arr = _to_numpy(x, name)
    if arr.dtype.kind not in _LABEL_KINDS:
        if arr.dtype.kind == "c":
            raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
        raise TypeError(
            f"{name} must hold numbers, got dtype {arr.dtype}"
            + (" (convert with .astype(float) or map the labels first)"
               if arr.dtype.kind in "OUS" else "")
        )
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a 1-D array, got a scalar")
        raise ValueError(
            f"{name} must be a 1-D array, got shape {arr.shape}"
            + (" (use .ravel() for a column vector)" if arr.ndim == 2 and 1 in arr.shape else "")
        )
    return arr


def as_labels01(x, name: str) -> np.ndarray:
    """``x`` as a contiguous ``uint8``, ``int64`` or ``float64`` 1-D array.

    Booleans and ``uint8`` are viewed as ``uint8`` without a copy; other
    integers become ``int64`` and other floats ``float64``. Values are not
    checked here: that is fused into the counting kernels.
    """
    arr = as_1d(x, name)
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "b" or (kind == "u" and size == 1):
        arr = arr.view(np.uint8)
    elif kind in "iu":
        arr = arr.astype(np.int64, copy=False)
    else:
        arr = arr.astype(np.float64, copy=False)
    return np.ascontiguousarray(arr)


def as_reals(x, name: str) -> np.ndarray:
    """``x`` as a contiguous ``float64`` 1-D array (values not yet checked)."""
    arr = as_1d(x, name)
    return np.ascontiguousarray(arr, dtype=np.float64)


def as_weights(w, n: int, name: str = "sample_weight") -> np.ndarray:
    """Validated ``float64`` weights of length ``n``, or :data:`EMPTY_WEIGHTS`.

    Weights must be finite and non-negative.
    """
    if w is None:
        return EMPTY_WEIGHTS
    arr = as_reals(w, name)
    if arr.shape[0] != n:
        raise ValueError(
            f"{name} has length {arr.shape[0]} but the labels have length {n}"
        )
    if n:
        from ._kernels.common import first_bad_weight

        i = first_bad_weight(arr)
        if i >= 0:
            v = arr[i]
            problem = "weights must be finite" if not np.isfinite(v) else "weights must be non-negative"
            raise bad_value(name, arr, i, problem)
    return arr


def check_same_length(**arrays: np.ndarray) -> int:
    """Raise ``ValueError`` unless all arrays have the same length; return it."""
    items = list(arrays.items())
    n0 = items[0][1].shape[0]
    for name, arr in items[1:]:
        if arr.shape[0] != n0:
            raise ValueError(
                f"{items[0][0]} and {name} have different lengths: "
                f"{n0} and {arr.shape[0]}"
            )
    return n0


def _fmt(v) -> str:
    v = v.item() if isinstance(v, np.generic) else v
    return repr(v)


def bad_value(name: str, arr: np.ndarray, index: int, problem: str) -> ValueError:
    """The standard error: ``p[17] = 1.3: probabilities must lie in [0, 1]``."""
    return ValueError(f"{name}[{index}] = {_fmt(arr[index])}: {problem}")


def first_bad_label01(arr: np.ndarray) -> int:
    """Index of the first value of ``arr`` not exactly 0 or 1, else -1."""
    bad = np.flatnonzero((arr != 0) & (arr != 1))
    return int(bad[0]) if bad.size else -1


def first_bad_probability(arr: np.ndarray) -> int:
    """Index of the first value outside [0, 1] (NaN included), else -1."""
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~((arr >= 0) & (arr <= 1)))
    return int(bad[0]) if bad.size else -1


def first_nonfinite(arr: np.ndarray) -> int:
    """Index of the first NaN or infinity in ``arr``, else -1."""
    bad = np.flatnonzero(~np.isfinite(arr))
    return int(bad[0]) if bad.size else -1


def raise_bad_labels(name: str, arr: np.ndarray) -> None:
    """Raise the error for the first non-0/1 label of ``arr`` (if any)."""
    i = first_bad_label01(arr)
    if i >= 0:
        v = arr[i]
        if arr.dtype.kind == "f" and np.isnan(v):
            problem = "labels must be 0 or 1, got NaN"
        elif arr.dtype.kind == "f" and np.isfinite(v) and v != np.floor(v):
            problem = "labels must be 0 or 1, got a fractional value"
        else:
            problem = "labels must be 0 or 1"
        raise bad_value(name, arr, i, problem)


def raise_bad_probabilities(name: str, arr: np.ndarray) -> None:
    """Raise the error for the first value of ``arr`` outside [0, 1] (if any)."""
    i = first_bad_probability(arr)
    if i >= 0:
        raise bad_value(name, arr, i, "probabilities must lie in [0, 1]")


def raise_nonfinite(name: str, arr: np.ndarray, what: str = "values") -> None:
    """Raise the error for the first NaN/inf of ``arr`` (if any)."""
    i = first_nonfinite(arr)
    if i >= 0:
        raise bad_value(name, arr, i, f"{what} must be finite")
