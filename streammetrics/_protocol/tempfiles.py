"""Temporary files owned through a lock, and the clean-up of those a dead owner left.

An :class:`Owner` holds an exclusive ``flock`` on its lock file
``<stem><host>.<token>.lock`` for as long as its files live; each of its files
is ``<stem><host>.<token>.<random><suffix>``. :func:`remove_stale` removes the
files of an owner only when it can take that lock itself, which is possible
only once every process holding it (the owner and any forked child) is gone:
a live process in another PID namespace that shares the folder keeps its files,
where a guess from process ids would not. Without ``fcntl`` (Windows) nothing
is ever swept.
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket
import threading

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_SUFFIX = ".lock"


def prefix(stem: str) -> str:
    """``stem`` followed by this host's name (made safe for a file name) and a dot."""
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())
    return f"{stem}{host}."


def unlink(path: str) -> None:
    """Remove ``path``; a file already gone (or not removable) is left to be."""
    try:
        os.unlink(path)
    except OSError:
        pass


class Owner:
    """The lock that says a set of temporary files in ``folder`` is in use.

    The lock file is made at the first :meth:`new_path`; :meth:`release` removes
    it (the files themselves are the caller's to remove first). The process that
    made the owner is ``pid``: a forked child inherits the lock, so the parent's
    files stay safe from a sweep while either lives.
    """

    def __init__(self, folder: str, stem: str, suffix: str):
        self.folder, self.stem, self.suffix = folder, stem, suffix
        self.pid = os.getpid()
        self.fd = None
        #: every file of this owner's is named ``<base><anything>``, its lock ``<base>.lock``
        self.base = os.path.join(folder, f"{prefix(stem)}{secrets.token_hex(8)}")

    def _lock(self) -> None:
        remove_stale(self.folder, self.stem, self.suffix)  # once per owner: what dead owners left
        self.fd = os.open(self.base + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        if fcntl is not None:  # (a fresh file: nobody else holds its lock)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def new_path(self) -> str:
        """A fresh name for a file of this owner (the first takes the lock)."""
        if self.fd is None:
            self._lock()
        return f"{self.base}.{secrets.token_hex(6)}{self.suffix}"

    def release(self) -> None:
        """Remove the lock file and let go of the lock (in the process that made it only)."""
        fd, self.fd = self.fd, None
        if fd is None:
            return
        if os.getpid() == self.pid:
            unlink(self.base + LOCK_SUFFIX)
        os.close(fd)


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


def shared(folder: str, stem: str, suffix: str) -> Owner:
    """This process's owner of ``stem``/``suffix`` files in ``folder``: one lock (one open file) per folder for the
    process's life, however many files and states use it (a forked child makes its own)."""
    key = (os.getpid(), folder, stem, suffix)
    with _SHARED_LOCK:
        owner = _SHARED.get(key)
        if owner is None:
            owner = _SHARED[key] = Owner(folder, stem, suffix)
    return owner


@atexit.register
def _release_shared() -> None:
    for owner in list(_SHARED.values()):
        owner.release()


def remove_stale(folder: str, stem: str, suffix: str) -> int:
    """Remove the files of ``stem`` and ``suffix`` in ``folder`` whose owner's lock
    nobody holds any more, and those lock files; returns how many files were removed."""
    if fcntl is None:  # pragma: no cover
        return 0
    start = prefix(stem)
    try:
        names = os.listdir(folder)
    except OSError:
        return 0  # whoever writes there reports what is wrong with the folder
    removed = 0
    for name in names:
        if not (name.startswith(start) and name.endswith(LOCK_SUFFIX)):
            continue
        lock = os.path.join(folder, name)
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # held: its owner lives
            mine = name[: -len(LOCK_SUFFIX)] + "."  # the owner's files: <stem><host>.<token>.*
            for other in names:
                if other.startswith(mine) and other.endswith(suffix):
                    path = os.path.join(folder, other)
                    unlink(path)
                    removed += not os.path.exists(path)
            unlink(lock)
        finally:
            os.close(fd)
    return removed
