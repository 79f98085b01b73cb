"""Timing helpers shared by every benchmark module.

Each benchmark module exposes ``run(quick: bool) -> list[dict]``; a row is a
dict with at least ``group`` (what is compared), ``impl`` (who computes it) and
``median_s``. Rows of one group are printed together with their ratio to the
group's streammetrics row. Times are medians of repeated runs on the same data
in the same process: on a shared machine, read the ratios, not the seconds.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
from collections.abc import Callable

import numpy as np


def median_time(fn: Callable[[], object], repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def per_call_time(fn: Callable[[], object], calls: int = 2000, repeat: int = 7) -> float:
    """Median seconds per call of a fast ``fn`` (timed in loops of ``calls``)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return float(np.median(times))


def have(module: str) -> bool:
    """Whether an optional comparison library is importable."""
    return importlib.util.find_spec(module) is not None


def row(group: str, impl: str, median_s: float, **extra) -> dict:
    return {"group": group, "impl": impl, "median_s": median_s, **extra}


def print_table(rows: list[dict]) -> None:
    """Print rows grouped, each with its ratio to the group's streammetrics row."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    width = max([len(r["impl"]) for r in rows] + [10])
    for g, rs in groups.items():
        base = next((r for r in rs if r["impl"].startswith("streammetrics")), rs[0])
        print(f"\n{g}")
        for r in rs:
            ratio = r["median_s"] / base["median_s"] if base["median_s"] > 0 else float("nan")
            t = r["median_s"]
            shown = f"{t * 1e6:10.2f} us" if t < 1e-3 else f"{t * 1e3:10.2f} ms" if t < 1 else f"{t:10.3f} s "
            extra = "  ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r.items()
                if k not in ("group", "impl", "median_s")
            )
            print(f"  {r['impl']:<{width}} {shown}  x{ratio:7.2f}  {extra}")


_PEAK = {"rss": 0, "thread": None}


def track_peak_rss(interval: float = 0.02) -> int:
    """Sample this process's RSS every ``interval`` seconds in a thread,
    keeping the peak (run it in each dask worker); the RSS now."""
    import threading

    import psutil

    proc = psutil.Process()
    _PEAK["rss"] = proc.memory_info().rss
    if _PEAK["thread"] is None:

        def loop():
            while True:
                _PEAK["rss"] = max(_PEAK["rss"], proc.memory_info().rss)
                time.sleep(interval)

        _PEAK["thread"] = threading.Thread(target=loop, daemon=True)
        _PEAK["thread"].start()
    return _PEAK["rss"]


def read_peak_rss() -> int:
    """The peak RSS seen by :func:`track_peak_rss` since the last call; starts over."""
    import psutil

    peak, _PEAK["rss"] = _PEAK["rss"], psutil.Process().memory_info().rss
    return peak


def evaluate_command(path: str, *extra: str) -> list[str]:
    """``streammetrics evaluate`` of a binary file, JSON out, no progress bar, in this interpreter."""
    return [
        sys.executable,
        "-m",
        "streammetrics",
        "evaluate",
        path,
        "--task",
        "binary",
        "--format",
        "json",
        "--progress",
        "never",
        *extra,
    ]
