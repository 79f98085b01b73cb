"""The process's helper threads, for kernels that split their work.

The kernels release the GIL, so parts of one call run on helper threads
while the calling thread runs the first part. The helpers are made once per
process, as they are first needed (a forked child makes its own).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["CORES", "MAX_THREADS", "on_threads"]


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: the cores this process may run on
CORES = _cpu_count()
#: the most parts a call splits into (the calling thread runs one)
MAX_THREADS = 8

_lock = threading.Lock()
_pool = None


def _forget_pool() -> None:  # a forked child inherits the pool but none of its threads
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def on_threads(fn, calls: list) -> list:
    """``[fn(*args) for args in calls]``: the first on the calling thread, the others
    on the helper threads (at most :data:`MAX_THREADS` calls). Every call is waited
    for, even when one raises (they write into the caller's arrays)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_THREADS - 1, thread_name_prefix="streammetrics")
        jobs = [_pool.submit(fn, *args) for args in calls[1:]]
    try:
        first = fn(*calls[0])
    finally:
        wait(jobs)
    return [first, *(job.result() for job in jobs)]
