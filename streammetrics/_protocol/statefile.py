"""The state file: a zip of plain ``.npy`` arrays with a JSON header, no pickle.

A file holds one accumulator's state in numpy's ``.npz`` layout plus a member
``__header__.npy`` of UTF-8 JSON::

    {"format": "streammetrics-state", "version": 1,
     "class": "BinaryConfusion", "settings": {"threshold": 0.5}}

Reading never unpickles and is bounded by the file: files are written
uncompressed, so a compressed member or one whose ``.npy`` header disagrees
with its size is refused before anything is allocated. The header is at most
:data:`MAX_HEADER_BYTES` long and :data:`MAX_DEPTH` deep, its integers fit
``int64``, its floats are finite. Every failure is a
:class:`~.errors.StateFileError`. The same bytes travel without a file
(:func:`dumps`, :func:`loads`: ``to_bytes`` and ``from_bytes``), checked alike.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
import zlib

import numpy as np

from . import tempfiles
from .errors import StateFileError

FORMAT_NAME = "streammetrics-state"
#: the version this release writes
FORMAT_VERSION = 1
#: the versions this release reads
READABLE_VERSIONS = (1,)
_HEADER_KEY = "__header__"
_REGISTRY: dict = {}
#: the longest JSON header read (a header of settings is a few hundred bytes;
#: class labels make it longer)
MAX_HEADER_BYTES = 1 << 20
#: the deepest nesting of lists and objects in a header
MAX_DEPTH = 32
#: the most members (arrays) a file may hold
MAX_MEMBERS = 4096
#: the longest ``.npy`` header of a member
_MAX_NPY_HEADER = 4096
_INT64 = 1 << 63


def register(cls) -> None:
    """Make ``cls`` loadable by name (every public accumulator class is)."""
    _REGISTRY[cls.__name__] = cls


def registry() -> dict:
    """The loadable classes by name (a copy), every public one registered first:
    the package imports its modules on first use, so a class nobody has touched
    yet is registered only once its module is imported."""
    import streammetrics

    streammetrics.import_all()
    return dict(_REGISTRY)


def write(path, class_name: str, settings: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a state file at exactly ``path`` (via a temporary file and a rename)."""
    path = os.fsdecode(os.fspath(path))  # bytes too: the temporary names are built as str
    members = _members(class_name, settings, arrays)
    folder, base = os.path.split(os.path.abspath(path))
    # a fresh name under a lock held while the save runs, so a later save can
    # tell (and remove) the leftover of a process killed while writing; created
    # like any file of the user's (0666 less the umask)
    owner = tempfiles.Owner(folder, f".{base}.", _TEMP_SUFFIX)
    tmp = None  # the temporary file, once made
    try:
        name = owner.new_path()
        with open(name, "xb") as fh:
            tmp = name
            np.savez(fh, **members)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            tempfiles.unlink(tmp)
        if isinstance(exc, OSError):  # named as the user's path, not the temporary file's
            raise type(exc)(exc.errno, exc.strerror or str(exc), path) from None
        raise
    finally:
        owner.release()


def dumps(class_name: str, settings: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes a state file of these would hold."""
    out = io.BytesIO()
    np.savez(out, **_members(class_name, settings, arrays))
    return out.getvalue()


def _members(class_name: str, settings: dict, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of a state file: the state's and the JSON header."""
    _check_settings_ints(settings, class_name)
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "class": class_name, "settings": settings}
    members = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    members[_HEADER_KEY] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    return members


_TEMP_SUFFIX = ".smtmp"


def _depth(v) -> int:
    """The deepest nesting of lists and objects in the parsed JSON value ``v``."""
    if isinstance(v, (dict, list)):
        return 1 + max(map(_depth, v.values() if isinstance(v, dict) else v), default=0)
    return 0


def _check_settings_ints(value, class_name: str) -> None:
    """Refuse, before writing, settings holding an integer past int64: the file
    would be written but no loader reads it (a loaded header's integers are
    bounded)."""
    if isinstance(value, (dict, list, tuple)):
        for v in value.values() if isinstance(value, dict) else value:
            _check_settings_ints(v, class_name)
    elif isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        raise ValueError(
            f"{class_name}: its settings hold the integer {value}, past int64, which a "
            "state file cannot hold (it pickles): give labels within int64, or as strings"
        )


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -_INT64 <= int(text) < _INT64:
        raise ValueError(f"the integer {text[:24]}{'...' if len(text) > 24 else ''} does not fit int64")
    return int(text)


def _parse_float(text: str) -> float:
    v = float(text)
    if len(text) > 64 or not math.isfinite(v):
        raise ValueError(f"the number {text[:24]}{'...' if len(text) > 24 else ''} is not a finite float")
    return v


def _parse_constant(text: str):
    raise ValueError(f"{text} is not a number a state file holds")


def _header(raw: np.ndarray, where: str) -> dict:
    if raw.shape[0] > MAX_HEADER_BYTES:
        raise StateFileError(f"{where} has a header of {raw.shape[0]} bytes (at most {MAX_HEADER_BYTES})")
    try:
        text = raw.tobytes().decode("utf-8")
        header = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
        if _depth(header) <= MAX_DEPTH:
            return header
    except RecursionError:  # deeper than the interpreter's stack
        pass
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError included
        raise StateFileError(f"{where} has an unreadable header ({exc})") from None
    raise StateFileError(f"{where} has an unreadable header (nested deeper than {MAX_DEPTH} levels)")


def npy_header(fh, max_size: int = _MAX_NPY_HEADER):
    """``(shape, fortran_order, dtype)`` of the ``.npy`` stream ``fh`` (versions 1 to 3), left at its data."""
    major, _ = np.lib.format.read_magic(fh)
    if major not in (1, 2, 3):
        raise ValueError(f"unknown .npy version {major}")
    read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
    return read(fh, max_size)


def _check_npy_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    """Refuse a member whose ``.npy`` header disagrees with its stored size."""
    with zf.open(info) as member:
        shape, fortran, dtype = npy_header(member)
        offset = member.tell()
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r} holds Python objects")
    declared = math.prod(shape) * dtype.itemsize
    if offset + declared != info.file_size:
        raise ValueError(
            f"member {info.filename!r} declares {declared} bytes of {dtype} {shape} "
            f"but stores {info.file_size - offset}"
        )


def read(path):
    """``(cls, settings, arrays, where)`` of a state file; ``StateFileError`` if bad.

    Nothing is allocated beyond the file's own size: see the module docstring.
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        return loads(fh.read(), repr(path))


def loads(blob, where: str = "the state bytes"):
    """``(cls, settings, arrays, where)`` of a state file's bytes (``bytes``,
    ``bytearray`` or ``memoryview``), checked as :func:`read` checks a file."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"a state is read from bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if not blob.startswith(b"PK\x03\x04"):
        raise StateFileError(f"{where} is not a streammetrics state file (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise ValueError(f"{len(infos)} members (at most {MAX_MEMBERS})")
            stored = 0
            for info in infos:
                name = info.filename
                if not name.endswith(".npy") or "/" in name:
                    raise ValueError(f"unexpected member {name!r}")
                if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                    raise ValueError(f"member {name!r} is compressed (state files are written uncompressed)")
                stored += info.file_size
            if stored > len(blob):
                raise ValueError(f"the members claim {stored} bytes in a file of {len(blob)}")
            arrays = {}
            for info in infos:
                key = info.filename[:-4]
                if key in arrays:
                    raise ValueError(f"member {info.filename!r} appears twice")
                _check_npy_header(zf, info)  # sizes agree: reading allocates what the file holds
                with zf.open(info) as member:
                    arrays[key] = np.lib.format.read_array(member, allow_pickle=False, max_header_size=_MAX_NPY_HEADER)
    except ValueError as exc:
        raise StateFileError(f"{where} is not a valid streammetrics state file ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, RuntimeError, OverflowError, zlib.error) as exc:
        raise StateFileError(f"{where} is corrupt or truncated ({type(exc).__name__}: {exc})") from None
    raw = arrays.pop(_HEADER_KEY, None)
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise StateFileError(f"{where} is not a streammetrics state file (no header)")
    header = _header(raw, where)
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise StateFileError(f"{where} is not a streammetrics state file")
    if header.get("version") not in READABLE_VERSIONS:
        raise StateFileError(
            f"{where} has format version {header.get('version')!r}; this streammetrics reads "
            f"version{'s' if len(READABLE_VERSIONS) > 1 else ''} "
            f"{', '.join(str(v) for v in READABLE_VERSIONS)}"
        )
    cls = _REGISTRY.get(header.get("class")) or registry().get(header.get("class"))
    if cls is None:
        raise StateFileError(f"{where} holds an unknown accumulator class {header.get('class')!r}")
    settings = header.get("settings")
    if not isinstance(settings, dict):
        raise StateFileError(f"{where} has invalid settings")
    return cls, settings, arrays, where
