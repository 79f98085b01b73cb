"""Read-only results of ``finalize()`` and of the one-shot functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

import numpy as np

__all__ = ["Result", "safe"]


def safe(x):
    """The specification's guard: ``x + [x == 0]``, so a zero denominator is 1."""
    return x + (x == 0)


def _fmt(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, separator=", ", threshold=20)
    return repr(v)


class Result(Mapping):
    """Scores computed from an accumulator's state: read-only, dict-like.

    Values are reached as attributes (``r.f1``) or keys (``r["f1"]``);
    :meth:`as_dict` returns a plain ``dict`` copy. Arrays inside are read-only.
    """

    __slots__ = ("_values", "_kind")

    def __init__(self, kind: str, values: dict[str, Any]):
        for v in values.values():
            if isinstance(v, np.ndarray):
                v.setflags(write=False)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"{self._kind} has no field {name!r}; fields: {', '.join(self._values)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._values))

    def __reduce__(self):
        return (self.__class__, (self._kind, self._values))

    def as_dict(self) -> dict[str, Any]:
        """A plain ``dict`` of every field (arrays are copied)."""
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._values.items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={_fmt(v)}" for k, v in self._values.items())
        return f"{self._kind}({body})"
