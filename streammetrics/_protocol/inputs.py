"""Declared inputs: what an accumulator's ``update`` takes.

Every accumulator declares its positional arguments as :class:`Input` objects
(``BinaryConfusion``: ``Labels01("y"), Labels01("p")``). An input converts an
array-like to the dtypes its kernels read (shape and type errors raise here),
checks the converted values (the first bad one as a
:class:`~.errors.BadValueError`), and has a *domain*: what its values are once
checked. A batch checked for one domain serves every consumer whose domain
contains it (probabilities are finite reals: a batch prepared for
``ProbabilityScores`` also feeds ``RankAUC``). :mod:`.batch` holds the
prepared batch; its names are importable from here too.
"""

from __future__ import annotations

import numpy as np

from .._kernels import checks as C
from .batch import Batch, InputTuple, convert, prepare, raise_rejected  # noqa: F401 - importable from here too
from .errors import BadShapeError, BadValueError
from .label_codes import LabelCodes
from .validation import as_1d, as_float64, as_labels01, as_numbers, as_reals, squeeze_column, to_numpy

#: Rows of a class-probability matrix must sum to 1 within this tolerance.
ROW_SUM_TOLERANCE = 1e-3

#: what a NaN (a missing value, not a wrong kind of value) needs
NAN_HINT = "a missing value: drop or fill those rows first"
_SOFTMAX_HINT = "for class logits or scores, apply a softmax first, e.g. scipy.special.softmax(p, axis=1)"

_INT64_MAX = np.iinfo(np.int64).max


def shape_of(x) -> tuple:
    """The shape of an array-like (lists are inspected; anything else without a
    shape is taken as a vector)."""
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x) if isinstance(x, (list, tuple)) else (-1,)
    return tuple(shape)


class Input:
    """One positional argument of ``update``: its name, conversion and checks.

    Subclasses set :attr:`domain` and implement :meth:`convert`,
    :meth:`first_bad` and :meth:`problem`.
    """

    #: what the converted and checked values are; see the module docstring
    domain: tuple = ()
    #: what the argument holds, for messages and docs
    what = "values"
    #: what to change when a value is refused but probably right (None: no advice)
    hint = None

    def __init__(self, name: str):
        self.name = name

    # ------------------------------------------------------------------ hooks
    def convert(self, x) -> np.ndarray:
        """``x`` as the array the kernels read; shape and type errors raise here."""
        raise NotImplementedError

    def first_bad(self, arr: np.ndarray) -> int:
        """Index of the first value outside the domain, or -1."""
        return -1

    def problem(self, arr: np.ndarray, i: int) -> str:
        """Why ``arr[i]`` is outside the domain."""
        raise NotImplementedError

    def hinted(self, arr: np.ndarray, i: int) -> str | None:
        """The hint for the bad value ``arr[i]``: :attr:`hint`, or for a NaN what a missing value needs."""
        return NAN_HINT if arr.dtype.kind == "f" and np.isnan(arr[i]) else self.hint

    def advised(self, hint: str) -> Input:
        """A copy of this input that gives ``hint`` with its errors."""
        out = self.renamed(self.name)
        out.hint = hint
        return out

    # -------------------------------------------------------------- derived
    def check(self, arr: np.ndarray) -> None:
        """Raise the :class:`BadValueError` of the first bad value, if any."""
        i = self.first_bad(arr)
        if i >= 0:
            raise BadValueError(self.name, i, arr[i], self.problem(arr, i), hint=self.hinted(arr, i))

    def covers(self, need: Input) -> bool:
        """Whether values checked as ``self`` serve a consumer declaring ``need``."""
        if isinstance(self, ClassLabels) or isinstance(need, ClassLabels):
            # the codes of labels mean those labels in that order: they serve a
            # consumer of the same labels only (another order would count a row
            # in another class; plain class indices were never looked up)
            return type(self) is type(need) and self.labels == need.labels
        # (a probability is a finite real)
        return self.domain == need.domain or (self.domain, need.domain) == (("probability",), ("finite",))

    def derive(self, arr: np.ndarray, need: Input) -> np.ndarray:
        """The array a consumer declaring ``need`` reads (``arr`` unless derived)."""
        return arr

    def derives(self, need: Input) -> bool:
        """Whether a consumer declaring ``need`` reads a derived array, not this one."""
        return False

    #: whether any n x K matrix is taken too (the one-hot or ``predict_proba`` pair)
    matrix_ok = False

    def takes_form(self, x) -> bool:
        """Whether the raw argument ``x`` has this input's form (1-D, n x K, ...)."""
        shape = shape_of(x)
        return len(shape) == 1 or (len(shape) == 2 and (shape[1] == 1 or self.matrix_ok))

    def renamed(self, name: str) -> Input:
        """A copy of this input under another argument name."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.name = name
        return out

    def __eq__(self, other):
        return type(other) is type(self) and other.__dict__ == self.__dict__

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# ------------------------------------------------------------------ 0/1 labels
class Labels01(Input):
    """Hard 0/1 labels: bool, int, or float holding exactly 0.0/1.0.

    With ``onehot=True`` the specification's n x 2 membership matrix ``g``
    (column 0 negative, column 1 positive) is accepted too.
    """

    domain = ("labels01",)
    what = "0/1 labels"

    def __init__(self, name: str, onehot: bool = False):
        super().__init__(name)
        self.onehot = onehot

    matrix_ok = property(lambda self: self.onehot)

    def convert(self, x):
        if self.onehot and not (type(x) is np.ndarray and x.ndim == 1):
            arr = to_numpy(x, self.name)
            if arr.ndim == 2 and arr.shape[1] != 1:
                return as_labels01(_onehot_positive(as_numbers(arr, self.name), self.name), self.name)
        return as_labels01(x, self.name)

    def first_bad(self, arr):
        return C.first_not01(arr) if arr.dtype.kind != "b" else -1

    def problem(self, arr, i):
        v = arr[i]
        if arr.dtype.kind == "f" and np.isnan(v):
            return "labels must be 0 or 1, got NaN"
        if arr.dtype.kind == "f" and np.isfinite(v) and v != np.floor(v):
            return "labels must be 0 or 1, got a fractional value"
        return "labels must be 0 or 1"


def _onehot_positive(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.shape[1] != 2:
        raise BadShapeError(
            f"a 2-D {name} must be the n x 2 one-hot membership matrix "
            f"(column 0 negative, column 1 positive), got shape {arr.shape}",
            name,
        )
    g0, g1 = arr[:, 0], arr[:, 1]
    ok = ((g0 == 1) & (g1 == 0)) | ((g0 == 0) & (g1 == 1))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise BadValueError(
            name,
            i,
            arr[i].tolist(),
            "each row of the membership matrix must be one-hot, [1, 0] (negative) or [0, 1] (positive)",
        )
    return np.ascontiguousarray(g1)


# ------------------------------------------------------------------ real values
def _positive_column(x, name: str, probabilities: bool):
    """An n x 2 ``predict_proba`` matrix's second column (the positive class), else ``x``;
    ``probabilities``: its rows are checked as class probabilities first."""
    if type(x) is np.ndarray and x.ndim == 1:
        return x
    arr = to_numpy(x, name)
    if arr.ndim == 2 and arr.shape[1] == 2:
        arr = as_float64(as_numbers(arr, name))
        if probabilities:
            check_probability_rows(arr, name, pair=True)
        return arr[:, 1]
    return arr


class Finite(Input):
    """Finite reals (``what`` names them in messages: "values", "scores").

    With ``predict_proba=True`` an n x 2 matrix (scikit-learn's
    ``predict_proba`` layout) is accepted too, and its second column is read.
    """

    domain = ("finite",)

    def __init__(self, name: str, what: str = "values", predict_proba: bool = False):
        super().__init__(name)
        self.what = what
        self.predict_proba = predict_proba

    matrix_ok = property(lambda self: self.predict_proba)

    def convert(self, x):
        if self.predict_proba:
            x = _positive_column(x, self.name, self.domain == ("probability",))
        return as_reals(x, self.name)

    def first_bad(self, arr):
        return C.first_nonfinite(arr)

    def problem(self, arr, i):
        return f"{self.what} must be finite"


class Probabilities(Finite):
    """Probabilities of the positive class, in [0, 1] (so also finite reals).

    With ``predict_proba=True`` an n x 2 matrix (scikit-learn's
    ``predict_proba`` layout) is accepted too, and its second column is read.
    """

    domain = ("probability",)
    hint = "for logits, apply a sigmoid first, e.g. torch.sigmoid(p) or scipy.special.expit(p)"

    def __init__(self, name: str, predict_proba: bool = False):
        super().__init__(name, "probabilities", predict_proba)

    def first_bad(self, arr):
        return C.first_outside01(arr)

    def problem(self, arr, i):
        return "probabilities must not be NaN" if np.isnan(arr[i]) else "probabilities must lie in [0, 1]"


# --------------------------------------------------------------------- classes
def refuse_labels(arr: np.ndarray, name: str, k: int | None = None) -> None:
    """``TypeError`` naming the fix when ``arr`` holds labels (strings) where class
    indices are expected (an object array of numbers is read as numbers)."""
    kind = arr.dtype.kind
    if kind in "US" or (kind == "O" and any(isinstance(v, (str, bytes)) for v in arr.flat)):
        what = "strings" if kind in "US" else "objects"
        classes = f"class indices 0..{k - 1}" if k is not None else "class indices"
        raise TypeError(
            f"{name} holds {what} (dtype {arr.dtype}), not {classes}: pass "
            "labels=[...], the class labels in order, to take them as they are"
        )


def _ready(x, dtype, ndim: int) -> bool:
    """Whether ``x`` is already converted: a C-contiguous ndarray of ``dtype`` and ``ndim``."""
    return type(x) is np.ndarray and x.dtype == dtype and x.ndim == ndim and x.flags.c_contiguous


def integers(arr: np.ndarray, name: str, in_range, problem: str, too_big: str | None = None) -> np.ndarray:
    """A 1-D ``arr`` as ``int64``: floats must hold integers that ``in_range``
    accepts, and ``uint64`` values fit in ``int64`` (else ``BadValueError``,
    ``problem`` or ``too_big``)."""
    kind = arr.dtype.kind
    if kind == "f":
        # checked before the cast, which is undefined for NaN and huge values
        with np.errstate(invalid="ignore", over="ignore"):
            bad = np.flatnonzero(~(in_range(arr) & (arr == np.floor(arr))))
        if bad.size:
            i = int(bad[0])
            raise BadValueError(name, i, arr[i], problem)
    elif kind == "u" and arr.dtype.itemsize == 8 and arr.size and arr.max() > _INT64_MAX:
        big = arr > _INT64_MAX  # the first bad value, out of range or too big
        i = int(np.argmax(big | ~in_range(arr)))
        raise BadValueError(name, i, arr[i], (too_big or problem) if big[i] else problem)
    return np.ascontiguousarray(arr, dtype=np.int64)


def _check_cells(name: str, arr: np.ndarray, i: int, problem: str) -> None:
    """Raise ``BadValueError`` at flat cell ``i`` of the matrix ``arr`` (none when negative)."""
    if i >= 0:
        r, c = divmod(int(i), arr.shape[1])
        raise BadValueError(name, (r, c), arr[r, c], problem)


class ClassIndices(Input):
    """Integer classes ``0..k-1`` (bool, int, or float holding an exact integer)."""

    what = "classes"

    def __init__(self, name: str, k: int):
        super().__init__(name)
        self.k = int(k)
        self.domain = ("classes", self.k)

    def convert(self, x):
        if _ready(x, np.int64, 1):
            return x
        arr = to_numpy(x, self.name)
        refuse_labels(arr, self.name, self.k)
        if arr.ndim == 2 and arr.shape[1] == self.k and arr.shape[1] > 1:
            raise BadShapeError(
                f"{self.name} must be a 1-D array of classes, got an n x {self.k} matrix",
                self.name,
                hint="for class probabilities take their argmax, np.argmax(p, axis=1), or use "
                "Evaluator(task='multiclass'), which takes either",
            )
        return integers(as_1d(arr, self.name), self.name, lambda a: (a >= 0) & (a < self.k), self.problem(arr, 0))

    def first_bad(self, arr):
        return C.first_out_of_range(arr, self.k)

    def problem(self, arr, i):
        return f"classes must be integers in 0..{self.k - 1}" if self.k > 1 else "the only class is 0"


class ClassLabels(Input):
    """Class labels (strings, ints, ...) from a fixed list, encoded as codes ``0..k-1``
    (:class:`~.label_codes.LabelCodes`).

    Encoding checks every value: an unknown label raises ``BadValueError``
    naming it.
    """

    what = "labels"

    def __init__(self, name: str, labels):
        super().__init__(name)
        self.labels = list(labels)
        self.domain = ("classes", len(self.labels))
        self.codes = LabelCodes(self.labels)

    def __eq__(self, other):
        return type(other) is type(self) and other.name == self.name and other.labels == self.labels

    def convert(self, x):
        name = self.name
        arr = to_numpy(x, name)
        if isinstance(x, (list, tuple)) and arr.dtype.kind in "US" and not self.codes.all_text:
            arr = np.array(x, dtype=object)  # keep 1 and "1" apart
        arr = squeeze_column(arr)
        if arr.ndim != 1:
            hint = None
            if arr.ndim == 2 and arr.shape[1] == len(self.labels):
                hint = (
                    "for class probabilities take their argmax, or use Evaluator(task='multiclass'), which takes either"
                )
            raise BadShapeError(f"{name} must be a 1-D array, got shape {arr.shape}", name, hint=hint)
        if arr.size == 0:
            return np.empty(0, np.int64)
        codes = self.codes.encode(arr)
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            i = int(bad[0])
            raise BadValueError(name, i, arr[i], f"not one of the {len(self.labels)} labels")
        return codes


class _Matrix(Input):
    """An n x k matrix, one column per class or label (``k=None``: any number of columns)."""

    #: the domain's kind, what the matrix holds, what one column holds, what a column stands for
    kind, of, noun, per, count = "", "", "", "class", "n_classes"

    def __init__(self, name: str, k: int | None):
        super().__init__(name)
        self.k = None if k is None else int(k)
        self.domain = (self.kind, self.k)

    def takes_form(self, x) -> bool:
        # (one column of K > 1 classes: the classes themselves, not a matrix of them)
        shape = shape_of(x)
        return len(shape) == 2 and not (self.per == "class" and (self.k or 0) > 1 and shape[1] == 1)

    def matrix(self, x) -> np.ndarray:
        """``x`` as a numeric n x k matrix (dtype not yet normalised)."""
        name, k = self.name, self.k
        arr = x if _ready(x, np.float64, 2) else as_numbers(to_numpy(x, name, f"an n x {k or 'K'} matrix"), name)
        if arr.ndim != 2:
            raise BadShapeError(f"{name} must be an n x {k or 'K'} matrix of {self.of}, got shape {arr.shape}", name)
        if k is None and arr.shape[1] < 1:
            raise BadShapeError(f"{name} must have at least one column of {self.of}", name)
        if k is not None and arr.shape[1] != k:
            raise BadShapeError(
                f"{name} has {arr.shape[1]} columns but {self.count} is {k}: a matrix {name} must hold "
                f"one column of {self.noun} per {self.per}",
                name,
            )
        return arr

    def convert(self, x):
        return as_float64(self.matrix(x))

    def check(self, arr):  # (scores; the other matrices check their own domain)
        _check_cells(self.name, arr, C.first_nonfinite(arr.reshape(-1)), "scores must be finite")


class ClassProbabilities(_Matrix):
    """An n x k matrix of class probabilities: entries in [0, 1], rows summing to 1.

    A consumer declaring class codes (``ClassIndices``/``ClassLabels`` of the
    same k) reads the row-wise argmax: the predicted class.
    """

    what = of = "class probabilities"
    kind, noun = "class_probabilities", "probabilities"

    def covers(self, need):
        return need.domain in (self.domain, ("classes", self.k), ("class_scores", self.k))

    def derives(self, need):
        return need.domain == ("classes", self.k)

    def derive(self, arr, need):
        out = np.empty(arr.shape[0], np.int64)  # (the one array derived: the predicted classes)
        C.argmax_rows(arr, out)
        return out

    def check(self, arr):
        check_probability_rows(arr, self.name)


def check_probability_rows(arr: np.ndarray, name: str, pair: bool = False) -> None:
    """``BadValueError`` at the first entry of a float64 matrix outside [0, 1], or
    the first row not summing to 1 within :data:`ROW_SUM_TOLERANCE`. With ``pair``
    (a ``predict_proba`` pair) a bad positive column is left to the column's check."""
    out = np.zeros(1)
    status, i, j = C.first_bad_probability_row(arr, ROW_SUM_TOLERANCE, out)
    if status == 1 and not (pair and j == 1):
        hint = NAN_HINT if np.isnan(arr[i, j]) else _SOFTMAX_HINT
        raise BadValueError(name, (int(i), int(j)), arr[i, j], "class probabilities must lie in [0, 1]", hint=hint)
    if status == 2:
        raise BadValueError(
            name,
            int(i),
            float(out[0]),
            f"each row of class probabilities must sum to 1 (within {ROW_SUM_TOLERANCE:g})",
            relation="sums to",
            hint=_SOFTMAX_HINT,
        )


class ClassScores(_Matrix):
    """An n x k matrix of finite real scores, one column per class
    (probabilities, logits, decision values); rows need not sum to 1.

    Class probabilities are class scores, so a batch prepared for
    :class:`ClassProbabilities` of the same k serves a consumer of this.
    With ``k=None`` any number of columns (at least one) is taken.
    """

    what = of = "class scores"
    kind, noun = "class_scores", "scores"


class ClassCodes(Input):
    """Class indices ``0, 1, 2, ...`` whose number of classes is not fixed in
    advance (bool, int, or float holding an exact integer): the consumer
    checks them against the columns of its score matrix."""

    domain = ("class_codes",)
    what = "classes"

    def convert(self, x):
        if _ready(x, np.int64, 1):
            return x
        arr = to_numpy(x, self.name)
        refuse_labels(arr, self.name)
        return integers(as_1d(arr, self.name), self.name, lambda a: (a >= 0) & (a < 2.0**62), self.problem(arr, 0))

    def first_bad(self, arr):
        return C.first_out_of_range(arr, _INT64_MAX)

    def problem(self, arr, i):
        return "classes must be integers 0, 1, 2, ..."


# ------------------------------------------------------------------ multilabel
def first_not01_matrix(m: np.ndarray) -> int:
    """Flat index of the first cell of a ``uint8``/``int8`` matrix that is not 0
    or 1, else -1. One bitwise-or of every cell (no compile, many times faster
    than a loop) recognises a 0/1 matrix: any other value sets a bit above the
    lowest, a negative ``int8`` the sign bit. Only a bad matrix is searched."""
    if m.size == 0:
        return -1
    acc = int(np.bitwise_or.reduce(m, axis=None))
    if 0 <= acc <= 1:
        return -1
    # as bytes, every bad value (2..255, or a negative int8) is above 1
    return int(np.argmax(np.ascontiguousarray(m).reshape(-1).view(np.uint8) > 1))


class LabelMatrix(_Matrix):
    """An n x L 0/1 matrix, one column per label (bool, int, or float holding
    exactly 0.0/1.0), read as ``uint8`` (``int8`` stays ``int8``).

    Bools, ``uint8`` and ``int8`` are taken as they are and checked by
    :func:`first_not01_matrix` before they are folded; any other dtype is
    checked here, before the cast, so a value such as 0.5 or 2 is refused
    rather than cut.
    """

    what = "0/1 label matrix"
    kind, of, noun, per, count = "label_matrix", "0/1 labels", "0/1 labels", "label", "n_labels"

    def convert(self, x):
        arr = self.matrix(x)
        if arr.dtype.itemsize == 1 and arr.dtype.kind in "biu":  # (viewed, int8 as int8)
            return np.ascontiguousarray(arr).view(np.int8 if arr.dtype.kind == "i" else np.uint8)
        with np.errstate(invalid="ignore"):
            bad = (arr != 0) & (arr != 1)
        if bad.any():
            i = int(np.argmax(bad))  # the first bad cell, row by row
            nan = arr.dtype.kind == "f" and np.isnan(arr[divmod(i, arr.shape[1])])
            _check_cells(self.name, arr, i, "labels must be 0 or 1, got NaN" if nan else "labels must be 0 or 1")
        return np.ascontiguousarray(arr, dtype=np.uint8)

    def check(self, arr):
        _check_cells(self.name, arr, first_not01_matrix(arr), "labels must be 0 or 1")


class LabelScores(_Matrix):
    """An n x L matrix of finite real scores, one column per label
    (probabilities, logits, decision values), read as ``float64``."""

    what = "label scores"
    kind, of, noun, per, count = "label_scores", "scores", "scores", "label", "n_labels"


# -------------------------------------------------------------------- clusters
class ClusterLabels(Input):
    """Integer cluster labels of any value (bool, int, or float holding an integer)."""

    domain = ("cluster",)
    what = "cluster labels"

    def convert(self, x):
        if _ready(x, np.int64, 1):
            return x
        return integers(
            as_1d(x, self.name),
            self.name,
            lambda a: np.abs(a) < 2.0**63,  # (2**63 is inf in float16: overflow ignored)
            "cluster labels must be integers",
            "cluster labels must fit in int64",
        )
