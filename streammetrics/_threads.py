"""The process's helper thread, for kernels that split a batch in two.

The kernels release the GIL, so one half of a batch runs on the helper
thread while the calling thread runs the other. One helper is made per
process (a forked child makes its own) and kept for the process's life.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["CORES", "helper_pool"]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: the cores this process may run on
CORES = _cpu_count()

_lock = threading.Lock()
_pool = None  # (pid, executor)


def helper_pool() -> ThreadPoolExecutor:
    """The process's one helper thread (an executor of one worker)."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="streammetrics-helper"))
        return _pool[1]
