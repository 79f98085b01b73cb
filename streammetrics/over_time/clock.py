"""Durations and timestamps as the time-aware wrappers read them.

A timestamp column is either numbers (any unit: seconds, days, steps) read as
``float64``, or datetimes (``numpy.datetime64``, a pandas datetime column)
read as ``int64`` nanoseconds since the epoch, so that bucket boundaries are
exact. A duration is a positive number (in the timestamps' unit) or a string
such as ``"15min"``, ``"1h"``, ``"1d"`` or a ``timedelta`` (nanoseconds, for
datetimes).
"""

from __future__ import annotations

import datetime
import re

import numpy as np

from .._protocol.validation import host, objects_as_numbers

_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9, "m": 60 * 10**9}
_UNITS.update({"h": 3600 * 10**9, "d": 86400 * 10**9, "w": 7 * 86400 * 10**9})
_DURATION = re.compile(r"^\s*(\d+)\s*(ns|us|ms|s|min|m|h|d|w)\s*$")


def duration(value, name: str):
    """A positive duration: ``int`` nanoseconds for a string, ``timedelta`` or
    ``timedelta64`` (it then serves datetimes only), else a positive finite
    ``float`` in the timestamps' own unit."""
    if isinstance(value, str):
        m = _DURATION.match(value)
        if not m or int(m.group(1)) == 0:
            raise ValueError(f"{name}: {value!r} is not a positive duration such as '30s', '15min', '1h', '1d', '1w'")
        return int(m.group(1)) * _UNITS[m.group(2)]
    if isinstance(value, (datetime.timedelta, np.timedelta64)):
        ns = int(np.timedelta64(value, "ns").astype(np.int64))
        if ns <= 0:
            raise ValueError(f"{name} must be a positive duration, got {value!r}")
        return ns
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number or a duration such as '1h', got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return float(value)


def column(value) -> np.ndarray:
    """A wrapper's own column (keys, timestamps, steps) as an array: numbers held
    as objects read as the numbers, and one column of a 2-D array as that column,
    as the scored arrays may come."""
    a = objects_as_numbers(np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else host(value)))
    return a[:, 0] if a.ndim == 2 and a.shape[1] == 1 else a


def stamps(time, n: int, every, name: str = "time") -> np.ndarray:
    """``time`` (``n`` timestamps) as ``int64`` nanoseconds (datetimes, when
    ``every`` is a duration in nanoseconds) or ``float64`` (numbers, when it is
    a number); ``TypeError``/``ValueError`` naming the first bad entry."""
    if time is None:
        raise TypeError(f"{name}= is required: this wrapper counts time by timestamps")
    a = column(time)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name}: expected {n} timestamps (one per row), got shape {a.shape}")
    if isinstance(every, int):
        if a.dtype.kind != "M":
            if a.shape[0] == 0:
                return np.zeros(0, np.int64)
            raise TypeError(f"{name} must hold datetimes for a duration such as '1h', got {a.dtype}")
        out = a.astype("datetime64[ns]").astype(np.int64)
        bad = np.isnat(a)
    else:
        if a.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers for a numeric duration, got {a.dtype}")
        out = a.astype(np.float64)
        bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] is {a[i]!r}: every row needs a timestamp")
    return out


def shown(t, every) -> object:
    """A timestamp as a person reads it (a ``numpy.datetime64`` for datetimes)."""
    return np.datetime64(int(t), "ns") if isinstance(every, int) else float(t)
