"""The state file: a zip of plain ``.npy`` arrays with a JSON header, no pickle.

A file holds one accumulator's state (``Accumulator._state``) as numpy's
``.npz`` layout plus a member ``__header__.npy`` of UTF-8 JSON::

    {"format": "streammetrics-state", "version": 1,
     "class": "BinaryConfusion", "settings": {"threshold": 0.5}}

Reading never unpickles (object arrays are refused), so loading an untrusted
file cannot run code; every entry is then checked against the class's declared
state before an accumulator is built from it.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import socket
import zipfile

import numpy as np

from .errors import StateFileError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "READABLE_VERSIONS", "write", "read", "register", "registry"]

FORMAT_NAME = "streammetrics-state"
#: the version this release writes
FORMAT_VERSION = 1
#: the versions this release reads
READABLE_VERSIONS = (1,)
_HEADER_KEY = "__header__"
_REGISTRY: dict = {}


def register(cls) -> None:
    """Make ``cls`` loadable by name (every public accumulator class is)."""
    _REGISTRY[cls.__name__] = cls


def registry() -> dict:
    """The loadable classes by name (a copy)."""
    return dict(_REGISTRY)


def write(path, class_name: str, settings: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a state file at exactly ``path`` (via a temporary file and a rename)."""
    path = os.fspath(path)
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "class": class_name,
              "settings": settings}
    members = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    members[_HEADER_KEY] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    folder, base = os.path.split(os.path.abspath(path))
    prefix = _temp_prefix(base)
    _remove_stale(folder, prefix)
    # created like any file of the user's (0666 less the umask), under a fresh
    # name that says whose it is (host and process), so a later save can tell
    # the leftover of a process that was killed while writing
    tmp = os.path.join(folder, f"{prefix}{os.getpid()}.{secrets.token_hex(4)}{_TEMP_SUFFIX}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _about(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise _about(exc, path) from None
    except BaseException:
        _unlink(tmp)
        raise


_TEMP_SUFFIX = ".smtmp"


def _temp_prefix(base: str) -> str:
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())
    return f".{base}.{host}."


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _about(exc: OSError, path: str) -> OSError:
    """``exc`` naming the user's ``path`` rather than the temporary file."""
    out = type(exc)(exc.errno, exc.strerror or str(exc), path)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or we cannot tell: keep its file
    return True


def _remove_stale(folder: str, prefix: str) -> None:
    """Delete the temporary files that saves of the same file, on this host, by
    processes that no longer run, left behind (a process killed while writing)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return  # the save itself reports what is wrong with the folder
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            _unlink(os.path.join(folder, name))


def read(path):
    """``(cls, settings, arrays, where)`` of a state file; ``StateFileError`` if bad."""
    path = os.fspath(path)
    where = repr(path)
    with open(path, "rb") as fh:
        blob = fh.read()
    if not blob.startswith(b"PK\x03\x04"):
        raise StateFileError(f"{where} is not a streammetrics state file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            arrays = {}
            for name in zf.namelist():
                if not name.endswith(".npy") or "/" in name:
                    raise ValueError(f"unexpected member {name!r}")
                with zf.open(name) as member:
                    arrays[name[:-4]] = np.lib.format.read_array(member, allow_pickle=False)
    except ValueError as exc:
        raise StateFileError(f"{where} is not a valid streammetrics state file ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, RuntimeError) as exc:
        raise StateFileError(f"{where} is corrupt or truncated ({type(exc).__name__}: {exc})") from None
    raw = arrays.pop(_HEADER_KEY, None)
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise StateFileError(f"{where} is not a streammetrics state file (no header)")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFileError(f"{where} has an unreadable header ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise StateFileError(f"{where} is not a streammetrics state file")
    if header.get("version") not in READABLE_VERSIONS:
        raise StateFileError(
            f"{where} has format version {header.get('version')!r}; this streammetrics reads "
            f"version{'s' if len(READABLE_VERSIONS) > 1 else ''} "
            f"{', '.join(str(v) for v in READABLE_VERSIONS)}"
        )
    cls = _REGISTRY.get(header.get("class"))
    if cls is None:
        raise StateFileError(f"{where} holds an unknown accumulator class {header.get('class')!r}")
    settings = header.get("settings")
    if not isinstance(settings, dict):
        raise StateFileError(f"{where} has invalid settings")
    return cls, settings, arrays, where
