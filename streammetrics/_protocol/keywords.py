"""scikit-learn's keyword names for the one-shot scores.

The scores take ``(y, p)`` (or ``(y, s)``, ``(y, P)``); code written for
scikit-learn passes ``y_true=`` and ``y_pred=`` (or ``y_score=``, ``y_prob=``,
``y_proba=``, ``probas_pred=``). The public functions accept both spellings.
"""

from __future__ import annotations

import functools
import inspect

#: scikit-learn's keyword -> the position of the argument it names
ALIASES = {"y_true": 0, "y_pred": 1, "y_score": 1, "y_prob": 1, "y_proba": 1, "probas_pred": 1}
_SECOND = ("p", "s", "P")


def with_sklearn_names(fn):
    """``fn`` taking scikit-learn's keywords for its first two arguments (``fn`` itself if it does not take
    ``(y, p)``-like arguments)."""
    params = list(inspect.signature(fn).parameters)
    if len(params) < 2 or params[0] != "y" or params[1] not in _SECOND:
        return fn
    names = params[:2]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for alias in ALIASES.keys() & kwargs.keys():
            i = ALIASES[alias]
            if names[i] in kwargs or len(args) > i:
                raise TypeError(f"{fn.__name__}() got the argument {names[i]!r} twice (as {alias!r} too)")
            kwargs[names[i]] = kwargs.pop(alias)
        return fn(*args, **kwargs)

    return call


def arrays_by_name(inputs, arrays: tuple, named: dict, owner) -> tuple:
    """``arrays`` with the ones given by name (an input's own name, or scikit-learn's for the first two) put in
    their places: ``update(y=..., p=...)`` as ``update(...)`` positionally."""
    names = [i.name for i in inputs]
    out = list(arrays) + [None] * (len(names) - len(arrays))
    for key, value in named.items():
        at = names.index(key) if key in names else ALIASES.get(key)
        if at is None or at >= len(names):
            raise TypeError(
                f"{type(owner).__name__}.update() got an unexpected argument {key!r} (takes {', '.join(names)})"
            )
        if at < len(arrays) or out[at] is not None:
            raise TypeError(f"{type(owner).__name__}.update() got the argument {names[at]!r} twice (as {key!r} too)")
        out[at] = value
    missing = [names[i] for i, v in enumerate(out) if v is None]
    if missing:
        raise TypeError(f"{type(owner).__name__}.update() is missing {', '.join(missing)}")
    return tuple(out)


def take_names(inputs, arrays: tuple, options: dict, owner, known=()) -> tuple[tuple, dict]:
    """``(arrays, options)``: the arrays among keyword ``options`` (an input's name, or
    scikit-learn's) put in their places, as :func:`arrays_by_name`; the other options as given
    (with arrays named, an option neither an array nor ``known`` is refused)."""
    names = {i.name for i in inputs}
    named = {k: options[k] for k in options if k in names or k in ALIASES}
    if not named:
        return arrays, options
    rest = {k: v for k, v in options.items() if k not in named}
    unknown = [k for k in rest if k not in known]
    if unknown:
        takes = ", ".join(i.name for i in inputs)
        raise TypeError(f"{type(owner).__name__}.update() got an unexpected argument {unknown[0]!r} (takes {takes})")
    return arrays_by_name(inputs, arrays, named, owner), rest
