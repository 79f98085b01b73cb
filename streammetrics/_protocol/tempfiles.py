"""Temporary files that say whose they are, and the clean-up of those a killed process left.

A name is ``<stem><host>.<pid>.<random><suffix>``: a later process on the same
host removes the files of a ``stem`` and ``suffix`` whose process no longer
runs (:func:`remove_stale`), and never another host's or a live process's.
"""

from __future__ import annotations

import os
import secrets
import socket


def prefix(stem: str) -> str:
    """``stem`` followed by this host's name (made safe for a file name) and a dot."""
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())
    return f"{stem}{host}."


def new_path(folder: str, stem: str, suffix: str) -> str:
    """A fresh name in ``folder`` for a temporary file of this process."""
    return os.path.join(folder, f"{prefix(stem)}{os.getpid()}.{secrets.token_hex(6)}{suffix}")


def unlink(path: str) -> None:
    """Remove ``path``; a file already gone (or not removable) is left to be."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process, or we cannot tell: keep its files
    return True


def remove_stale(folder: str, stem: str, suffix: str) -> int:
    """Remove the files of ``stem`` and ``suffix`` in ``folder`` that processes of
    this host which no longer run left; returns how many were removed."""
    start = prefix(stem)
    try:
        names = os.listdir(folder)
    except OSError:
        return 0  # whoever writes there reports what is wrong with the folder
    removed = 0
    for name in names:
        if name.startswith(start) and name.endswith(suffix):
            pid = name[len(start) :].split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                path = os.path.join(folder, name)
                unlink(path)
                removed += not os.path.exists(path)
    return removed
