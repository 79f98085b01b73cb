"""The accumulator protocol shared by every streaming metric.

An accumulator holds its state as a few named numpy arrays. Subclasses declare

* ``_settings()``: the constructor arguments that define compatibility (two
  accumulators merge only when these are equal) and that ``save`` records;
* ``_new_state()``: the empty state, a ``dict`` of name -> ``numpy.ndarray``;
* ``_merge_state(other_state)``: fold another state into ``self._state``;
* ``_compute()``: the :class:`~streammetrics._result.Result` of the state;
* ``update(...)``: validate one batch, then fold it in.

and get ``merge``, ``+``, ``copy``, ``reset``, ``n``, ``finalize``, pickling and
a safe ``save``/``load`` for free. Every state has an ``int64`` entry
``"n"`` of shape ``(1,)``: the number of observations (rows) folded in.
"""

from __future__ import annotations

import copy as _copy
import io
import json
import os
import tempfile
import zipfile
from typing import Any, ClassVar

import numpy as np

from ._result import Result

__all__ = ["Accumulator", "load_state", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "streammetrics-state"
FORMAT_VERSION = 1
_HEADER_KEY = "__header__"
_REGISTRY: dict[str, type["Accumulator"]] = {}


class Accumulator:
    """Base class of the streaming, mergeable metrics (see the module docstring)."""

    #: fields shown by ``repr`` when the accumulator is not empty
    _headline: ClassVar[tuple[str, ...]] = ()
    #: state entries whose shape may vary (others must keep their empty shape)
    _variable_shape: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            _REGISTRY[cls.__name__] = cls

    # ---------------------------------------------------------------- to override
    def _settings(self) -> dict[str, Any]:
        return {}

    def _new_state(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _merge_state(self, other: dict[str, np.ndarray]) -> None:
        for k, v in other.items():
            self._state[k] += v

    def _compute(self) -> Result:
        raise NotImplementedError

    def _check_state(self, state: dict[str, np.ndarray]) -> None:
        """Extra value checks for a loaded state; raise ``ValueError`` if bad."""

    # ------------------------------------------------------------------- protocol
    def _init_state(self) -> None:
        self._state = self._new_state()

    @property
    def n(self) -> int:
        """Observations (rows) folded in so far."""
        return int(self._state["n"][0])

    def reset(self):
        """Forget every observation; return ``self``."""
        self._init_state()
        return self

    def _check_compatible(self, other: "Accumulator") -> None:
        if type(other) is not type(self):
            raise TypeError(
                f"cannot merge {type(other).__name__} into {type(self).__name__}"
            )
        mine, theirs = self._settings(), other._settings()
        if mine != theirs:
            diff = ", ".join(
                f"{k}={mine.get(k)!r} vs {theirs.get(k)!r}"
                for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)
            )
            raise ValueError(
                f"cannot merge {type(self).__name__} accumulators with different "
                f"settings: {diff}"
            )

    def merge(self, other: "Accumulator"):
        """Fold ``other`` (same class and settings) into ``self``; return ``self``.

        ``other`` is not changed. Settings that differ raise ``ValueError`` and
        leave both accumulators unchanged.
        """
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        self._merge_state(other._state)
        return self

    def __add__(self, other: "Accumulator"):
        if not isinstance(other, Accumulator):
            return NotImplemented
        self._check_compatible(other)
        return self.copy().merge(other)

    def __iadd__(self, other: "Accumulator"):
        if not isinstance(other, Accumulator):
            return NotImplemented
        return self.merge(other)

    def copy(self):
        """An independent copy: updating one never changes the other."""
        return _copy.deepcopy(self)

    def finalize(self) -> Result:
        """The scores of the current state, as a read-only :class:`Result`.

        The state is not changed, so updates may continue afterwards. Raises
        ``ValueError`` when no observation has been folded in.
        """
        if self.n == 0:
            raise ValueError(
                f"{type(self).__name__} has no observations: call update() first"
            )
        return self._compute()

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self._settings().items())
        head = f"{type(self).__name__}({settings})"
        if self.n == 0 or not self._headline:
            return f"{head}: n=0" if self.n == 0 else f"{head}: n={self.n}"
        try:
            r = self._compute()
            fields = " ".join(f"{k}={getattr(r, k):.6g}" for k in self._headline)
        except ValueError:
            fields = ""
        return f"{head}: n={self.n} {fields}".rstrip()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        if self._settings() != other._settings():
            return False
        a, b = self._state, other._state
        return a.keys() == b.keys() and all(
            a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in a
        )

    __hash__ = None  # mutable

    # ---------------------------------------------------------------- pickling
    def __getstate__(self):
        return {"settings": self._settings(), "state": self._state}

    def __setstate__(self, d):
        self.__init__(**d["settings"])
        self._state = d["state"]

    # ------------------------------------------------------------- save / load
    def save(self, path) -> None:
        """Write the state to ``path`` exactly (no suffix added).

        The file is a zip of ``.npy`` arrays (numpy's ``.npz`` layout) plus a
        JSON header naming the class, its settings and the format version. It
        holds no pickled object, so :meth:`load` can never run code from it.
        The file is written to a temporary name and renamed, so a crash never
        leaves a half-written state at ``path``.
        """
        path = os.fspath(path)
        header = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "class": type(self).__name__,
            "settings": self._settings(),
        }
        arrays = {k: np.ascontiguousarray(v) for k, v in self._state.items()}
        arrays[_HEADER_KEY] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".streammetrics-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path):
        """Read an accumulator written by :meth:`save`.

        A missing file raises ``FileNotFoundError``; a corrupt, truncated,
        empty or foreign file, a file of another class, or one that carries
        pickled objects raises ``ValueError``.
        """
        obj = load_state(path)
        if cls is not Accumulator and type(obj) is not cls:
            raise ValueError(
                f"{os.fspath(path)!r} holds a {type(obj).__name__} state, "
                f"not a {cls.__name__}"
            )
        return obj

    @classmethod
    def _from_saved(cls, settings: dict[str, Any], arrays: dict[str, np.ndarray], where: str):
        try:
            obj = cls(**settings)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: invalid settings {settings!r} ({exc})") from None
        template = obj._new_state()
        if set(arrays) != set(template):
            raise ValueError(
                f"{where}: state entries {sorted(arrays)} do not match "
                f"{cls.__name__}'s {sorted(template)}"
            )
        state = {}
        for k, t in template.items():
            a = arrays[k]
            if a.dtype != t.dtype:
                raise ValueError(f"{where}: entry {k!r} has dtype {a.dtype}, expected {t.dtype}")
            if k not in cls._variable_shape and a.shape != t.shape:
                raise ValueError(f"{where}: entry {k!r} has shape {a.shape}, expected {t.shape}")
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"{where}: entry {k!r} holds NaN or infinite values")
            state[k] = np.array(a, copy=True)
        if state["n"][0] < 0:
            raise ValueError(f"{where}: negative observation count")
        try:
            obj._check_state(state)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        obj._state = state
        return obj


def load_state(path) -> Accumulator:
    """Load any accumulator saved with ``save``, whatever its class.

    >>> import os, tempfile
    >>> from streammetrics import BinaryConfusion, load_state
    >>> path = os.path.join(tempfile.mkdtemp(), "shard0.smstate")
    >>> BinaryConfusion().update([1, 0, 1], [1, 0, 0]).save(path)
    >>> load_state(path)
    BinaryConfusion(threshold=None): n=3 accuracy=0.666667 f1=0.666667
    """
    path = os.fspath(path)
    where = repr(path)
    with open(path, "rb") as fh:
        blob = fh.read()
    if not blob.startswith(b"PK\x03\x04"):
        raise ValueError(f"{where} is not a streammetrics state file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            names = zf.namelist()
            arrays = {}
            for name in names:
                if not name.endswith(".npy") or "/" in name:
                    raise ValueError(f"unexpected member {name!r}")
                with zf.open(name) as member:
                    arrays[name[:-4]] = np.lib.format.read_array(member, allow_pickle=False)
    except ValueError as exc:
        raise ValueError(f"{where} is not a valid streammetrics state file ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, RuntimeError) as exc:
        raise ValueError(f"{where} is corrupt or truncated ({type(exc).__name__}: {exc})") from None
    raw = arrays.pop(_HEADER_KEY, None)
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise ValueError(f"{where} is not a streammetrics state file (no header)")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where} has an unreadable header ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ValueError(f"{where} is not a streammetrics state file")
    if header.get("version") != FORMAT_VERSION:
        raise ValueError(
            f"{where} has format version {header.get('version')!r}; "
            f"this streammetrics reads version {FORMAT_VERSION}"
        )
    cls = _REGISTRY.get(header.get("class"))
    if cls is None:
        raise ValueError(f"{where} holds an unknown accumulator class {header.get('class')!r}")
    settings = header.get("settings")
    if not isinstance(settings, dict):
        raise ValueError(f"{where} has invalid settings")
    return cls._from_saved(settings, arrays, where)
