"""The exceptions of streammetrics: one type per kind of bad condition.

Each subclasses the built-in a caller catches (``ValueError``; wrong types
stay ``TypeError``) and carries attributes that say what was wrong:
:class:`BadValueError` (a value at a position, ``p[17] = 1.3: ...``),
:class:`BadShapeError`, :class:`NoObservationsError`,
:class:`SettingsMismatchError`, :class:`StateFileError`,
:class:`CountOverflowError`, :class:`NoWeightsError` and
:class:`WeightOverflowError`.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

#: the extra of the package that installs an optional module (others: pip install the module)
EXTRAS = {"matplotlib": "plot", "pyarrow": "io", "tqdm": "io", "torch": "torch", "dask": "dask"}


def value_repr(v: Any) -> str:
    """How a bad value is shown: the Python scalar's ``repr``."""
    if isinstance(v, np.generic):
        v = v.item()
    return repr(v)


def a_an(word: str) -> str:
    """``word`` with its indefinite article: ``"an Evaluator"``, ``"a RankAUC"``."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def optional(module: str, what: str):
    """``import module`` for ``what`` (``"plot()"``); missing, a ``ModuleNotFoundError``
    naming the command that installs it (the package's extra where it has one)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        how = f'"streammetrics[{EXTRAS[top]}]"' if top in EXTRAS else top
        raise ModuleNotFoundError(f"{what} needs {top}: pip install {how}", name=top) from exc


class BadValueError(ValueError):
    """A bad value at one position of an argument.

    Attributes: ``argument`` (``"y"``, ...), ``index`` (a row, or ``(row,
    column)``), ``value``, ``problem``, ``relation`` (``"="`` or e.g. ``"sums
    to"``), ``context`` (where the batch came from) and ``hint`` (what to
    change). The message is ``"{context}: {argument}[{index}] {relation}
    {value!r}: {problem} ({hint})"``:

    >>> err = BadValueError("p", 17, 1.3, "probabilities must lie in [0, 1]")
    >>> str(err)
    'p[17] = 1.3: probabilities must lie in [0, 1]'
    >>> err.argument, err.index, err.value
    ('p', 17, 1.3)
    """

    def __init__(self, argument: str, index, value, problem: str, *, relation="=", context=None, hint=None):
        if isinstance(value, np.generic):
            value = value.item()
        self.argument = argument
        self.index = index
        self.value = value
        self.problem = problem
        self.relation = relation
        self.context = context
        self.hint = hint
        super().__init__(self._message())

    @property
    def row(self) -> int:
        """The offending row (the first coordinate of a matrix position)."""
        return self.index[0] if isinstance(self.index, tuple) else self.index

    @property
    def column(self) -> int | None:
        """The offending column of a matrix argument, else ``None``."""
        return self.index[1] if isinstance(self.index, tuple) else None

    @property
    def detail(self) -> str:
        """The message after the position: ``"= 1.3: probabilities must ..."``."""
        return f"{self.relation} {value_repr(self.value)}: {self.problem}"

    def _message(self) -> str:
        pos = ", ".join(str(i) for i in self.index) if isinstance(self.index, tuple) else self.index
        text = f"{self.argument}[{pos}] {self.detail}"
        if self.hint:
            text += f" ({self.hint})"
        return f"{self.context}: {text}" if self.context else text

    def _args(self) -> tuple:
        return self.argument, self.index, self.value, self.problem, self.relation, self.context, self.hint

    def hinted(self, hint: str) -> BadValueError:
        """The same error with ``hint``."""
        return _rebuild_bad_value(*self._args()[:-1], hint)

    def shifted(self, offset: int, context: str | None = None) -> BadValueError:
        """The same error ``offset`` rows further on (a batch cut out of a larger whole)."""
        index = (self.index[0] + offset, *self.index[1:]) if isinstance(self.index, tuple) else self.index + offset
        return _rebuild_bad_value(self.argument, index, self.value, self.problem, self.relation, context, self.hint)

    def __reduce__(self):
        return (_rebuild_bad_value, self._args())


def _rebuild_bad_value(argument, index, value, problem, relation, context, hint=None):
    return BadValueError(argument, index, value, problem, relation=relation, context=context, hint=hint)


class BadShapeError(ValueError):
    """Arguments whose shapes do not fit: wrong dimensions or different lengths.

    ``arguments`` names the argument(s) concerned.
    """

    def __init__(self, message: str, *arguments: str, hint: str | None = None):
        self.arguments = arguments
        self.hint = hint
        super().__init__(f"{message} ({hint})" if hint else message)

    def __reduce__(self):
        return (type(self), (str(self), *self.arguments))  # the hint is in the text


class RaggedInputError(BadShapeError, TypeError):
    """A nested list whose rows differ in length, which no array can hold: a
    ``ValueError`` (as scikit-learn raises for such labels) and, as any input
    numpy cannot convert, a ``TypeError``."""


class NoObservationsError(ValueError):
    """A score was asked of an accumulator (or an input) holding no observation."""


class SettingsMismatchError(ValueError):
    """Two accumulators with different settings cannot be merged."""


class StateFileError(ValueError):
    """A state file or state dict that is not a valid, consistent state."""


class CountOverflowError(OverflowError, ValueError):
    """Counts that would pass the ``int64`` range (merging, or folding a batch).

    Both an ``OverflowError`` and a ``ValueError``; the accumulator is left
    unchanged.
    """


class NoWeightsError(TypeError, ValueError):
    """Sample weights given to an accumulator whose scores take none.

    Both a ``TypeError`` (an argument the accumulator does not take) and a
    ``ValueError`` (a bad batch), so either ``except`` clause catches it.
    """

    def __init__(self, owner: str = "this accumulator", reason: str = "its scores are defined on counts of rows"):
        self.owner = owner
        super().__init__(f"{owner} takes no sample_weight: {reason}")

    def __reduce__(self):
        return (NoWeightsError, (self.owner, str(self).split(": ", 1)[1]))


def in_context(exc: Exception, context: str, offset: int | None = None) -> Exception:
    """The same error about a batch cut out of a larger whole.

    A :class:`BadValueError` moves its position ``offset`` rows on (when the
    offset is known) and carries ``context``; other errors keep their type and
    get ``context`` in front of their message.
    """
    if isinstance(exc, BadValueError):
        return exc.shifted(offset or 0, context)
    if isinstance(exc, BadShapeError):
        return BadShapeError(f"{context}: {exc}", *exc.arguments)
    if isinstance(exc, NoWeightsError):
        return exc
    try:
        return type(exc)(f"{context}: {exc}")
    except TypeError:
        return exc


class WeightOverflowError(ValueError):
    """The sums of a batch's sample weights would overflow float64 (weights
    near 1e308): the batch was not folded in. With ``scores``, what overflowed
    when the scores were computed (the state is kept as it was)."""

    def __init__(self, what: str = "this batch", *, scores: str | None = None):
        if scores is not None:  # found when the scores are computed: the state stays
            problem = f"{scores} overflow float64 (the weights are too large);"
        else:
            problem = (
                f"the weighted totals of {what} would overflow float64 (weights near 1e308); nothing was folded in:"
            )
        super().__init__(
            f"sample_weight: {problem} rescale the weights (every score is the same for any positive scale of them)"
        )


# named (tracebacks, reprs) where users import them from
_VALUE_ERRORS = (BadValueError, BadShapeError, NoObservationsError, SettingsMismatchError, StateFileError)
for _error in (*_VALUE_ERRORS, CountOverflowError, NoWeightsError):
    _error.__module__ = "streammetrics"
