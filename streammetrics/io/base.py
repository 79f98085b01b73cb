"""The interface of the readers of prediction files, and the choice of a reader.

A reader is a :class:`Source` subclass known through :func:`register`. Every
problem is an :class:`InputError` naming the file and, where it applies, the
column and the row, counted as the reader says (:meth:`Source.where`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = ["InputError", "ColumnSpec", "Chunk", "Source", "register", "open_source", "expand_paths", "OS_PROBLEMS"]


class InputError(Exception):
    """A problem with an input file or column, phrased for the person running it."""


@dataclass(frozen=True)
class ColumnSpec:
    """Which columns hold the truth ``y``, the predictions ``p``, the weights and the slice keys ``by``.

    Several ``p`` columns (or a tuple of ``y`` columns) are read as a matrix; a
    single one may hold a list per row. With ``labels``, ``y`` and a single ``p``
    may hold text class labels; with ``text_labels`` a text file reads them as
    text whatever they look like (``"1"`` stays ``"1"``). ``by`` columns may hold
    strings and nulls (null keys).
    """

    y: str | tuple[str, ...]
    p: tuple[str, ...]
    weight: str | None = None
    labels: bool = False
    by: tuple[str, ...] = ()
    text_labels: bool = False

    def takes_text(self, role: str) -> bool:
        """Whether the column of ``role`` ("y", "p", "w") may hold text labels."""
        return self.labels and (role == "y" or (role == "p" and len(self.p) == 1))

    @property
    def ys(self) -> tuple[str, ...]:
        """The columns of ``y``."""
        return self.y if isinstance(self.y, tuple) else (self.y,)

    def may_be_list(self, role: str) -> bool:
        """Whether the one column of ``role`` may hold a list of values per row."""
        if role == "p":
            return len(self.p) == 1
        return role == "y" and isinstance(self.y, tuple) and len(self.y) == 1

    def roles(self) -> list[tuple[str, str]]:
        """``(role, column)`` pairs, role being ``"y"``, ``"p"``, ``"w"`` or ``"by"``."""
        out = [("y", c) for c in self.ys] + [("p", c) for c in self.p]
        if self.weight is not None:
            out.append(("w", self.weight))
        out.extend(("by", c) for c in self.by)
        return out

    def names(self) -> list[str]:
        """The distinct columns to read, in order."""
        return list(dict.fromkeys(c for _, c in self.roles()))

    def column_of(self, role: str) -> str:
        """The column (or columns, joined) behind ``role`` ("y", "p", "w", "by")."""
        return ", ".join({"y": self.ys, "p": self.p, "w": (self.weight or "?",), "by": self.by}[role])


@dataclass
class Chunk:
    """Consecutive rows of a file from index ``start``: ``y``, ``p`` (1-D, or n x K),
    ``w`` (or None) and ``keys`` (one array per ``by`` column); ``done`` is the
    progress so far in the source's unit (rows or bytes)."""

    start: int
    y: np.ndarray
    p: np.ndarray
    w: np.ndarray | None
    done: int
    keys: tuple = ()

    @classmethod
    def of(cls, columns: ColumnSpec, start: int, column: Callable, done: int, key: Callable | None = None) -> Chunk:
        """The chunk whose arrays ``column(name)`` gives, read in role order;
        ``key(name)`` reads a ``by`` column (by default, ``column``)."""
        ys = [column(c) for c in columns.ys]
        y = ys[0] if len(ys) == 1 else np.column_stack(ys)
        ps = [column(c) for c in columns.p]
        p = ps[0] if len(ps) == 1 else np.column_stack([np.asarray(a, dtype=np.float64) for a in ps])
        w = column(columns.weight) if columns.weight is not None else None
        keys = tuple((key or column)(c) for c in columns.by)
        return cls(start, y, p, w, done, keys)


class Source:
    """An input file opened for reading some columns; the base class of the readers.

    A subclass's :meth:`_open` checks the file and its columns and sets
    ``total_rows`` (when known up front) or ``total_bytes``; :meth:`chunks`
    then iterates the file once.
    """

    #: how rows are called in messages
    noun: ClassVar[str] = "row"

    def __init__(self, path: str, columns: ColumnSpec):
        self.path = path
        self.columns = columns
        self.total_rows: int | None = None
        self.total_bytes: int | None = None
        self._open()

    def _open(self) -> None:
        """Check the file and the columns; set the totals."""
        raise NotImplementedError

    def chunks(self, rows: int) -> Iterator[Chunk]:
        """Iterate the file once, ``rows`` rows at a time (the last chunk may be shorter)."""
        raise NotImplementedError

    @property
    def unit(self) -> str:
        """What the progress counts: ``"rows"`` when their count is known up front, else ``"bytes"``."""
        return "rows" if self.total_rows is not None else "bytes"

    @property
    def total(self) -> int | None:
        """The size of the whole file in :attr:`unit`, if known."""
        return self.total_rows if self.total_rows is not None else self.total_bytes

    def number(self, row: int) -> int:
        """How the row of 0-based index ``row`` is numbered in messages."""
        return row

    def where(self, first: int, last: int | None = None) -> str:
        """Row ``first`` (or rows ``first..last``) as messages name it: ``"row 1,734"``."""
        if last is None or last == first:
            return f"{self.noun} {self.number(first):,}"
        return f"{self.noun}s {self.number(first):,}..{self.number(last):,}"

    def fail(self, what: str) -> InputError:
        """An :class:`InputError` about this file: ``"{path}: {what}"``."""
        return InputError(f"{self.path}: {what}")

    def bad_row(self, row: int, column: str, what: str) -> InputError:
        """An :class:`InputError` about the value of ``column`` at ``row``."""
        return self.fail(f"{self.where(row)}, column {column!r}: {what}")

    def check_columns(self, names) -> None:
        """Refuse a column the run reads that the file has not (listing the ones it has),
        or has more than once (which to read?)."""
        names = list(names)
        more = f", ... ({len(names)} in all)" if len(names) > 40 else ""
        have = f"the columns are: {', '.join(repr(n) for n in names[:40])}{more}" if names else "it has no columns"
        for col in self.columns.names():
            k = names.count(col)
            if k == 0:
                raise self.fail(f"no column {col!r}; {have}")
            if k > 1:
                raise self.fail(f"{k} columns are named {col!r}: rename all but the one to read")


def short(exc: BaseException) -> str:
    """The first line of an exception's message (or its type's name)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_READERS: list[type[Source]] = []

#: how a file that cannot be opened is told
OS_PROBLEMS = {
    FileNotFoundError: "no such file",
    IsADirectoryError: "is a directory",
    PermissionError: "permission denied",
}


def register(suffixes: tuple[str, ...], *, shown: tuple[str, ...] | None = None, magic: bytes | None = None):
    """A class decorator making a reader known to :func:`open_source`, by its file
    name ``suffixes`` (``shown`` in messages) or its leading bytes ``magic``."""

    def deco(cls: type[Source]) -> type[Source]:
        cls.suffixes, cls.shown, cls.magic = suffixes, shown or suffixes, magic
        _READERS.append(cls)
        return cls

    return deco


def _by_name(path: str) -> type[Source] | None:
    return next((cls for cls in _READERS if path.lower().endswith(cls.suffixes)), None)


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def open_source(path: str, columns: ColumnSpec) -> Source:
    """Open ``path`` for reading ``columns``; checks that they exist and hold numbers.
    The reader is chosen by the name's ending, else by the file's first bytes."""
    cls = _by_name(path)
    try:
        with open(path, "rb") as fh:
            head = b"" if cls else fh.read(8)
    except OSError as exc:
        raise InputError(f"{path}: {OS_PROBLEMS.get(type(exc)) or short(exc)}") from None
    cls = cls or next((c for c in _READERS if c.magic and head.startswith(c.magic)), None)
    if cls is None:
        known = _either([s for c in _READERS for s in c.shown])
        raise InputError(f"{path}: unknown file type (expected {known})")
    return cls(path, columns)


def expand_paths(patterns: list[str]) -> list[str]:
    """Files named by ``patterns``: paths, glob patterns or directories.

    A directory stands for the supported files directly inside it. A path that
    does not exist or a pattern that matches nothing is an :class:`InputError`.
    """
    out: list[str] = []
    for pat in patterns:
        if os.path.isdir(pat):
            paths = (os.path.join(pat, name) for name in os.listdir(pat))
            found = sorted(f for f in paths if _by_name(f) is not None and os.path.isfile(f))
            if not found:
                kinds = _either([c.shown[0] for c in _READERS])
                raise InputError(f"{pat}: directory holds no {kinds} file")
            out.extend(found)
        elif os.path.exists(pat):
            out.append(pat)
        elif glob.has_magic(pat):
            found = sorted(f for f in glob.glob(pat) if os.path.isfile(f))
            if not found:
                raise InputError(f"{pat}: no file matches this pattern")
            out.extend(found)
        else:
            raise InputError(f"{pat}: no such file")
    unique: dict[str, str] = {}
    for f in out:
        unique.setdefault(os.path.abspath(f), f)
    return list(unique.values())
