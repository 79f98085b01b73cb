"""The invariants of a saved rank state, checked before a state is loaded."""

from __future__ import annotations

import numpy as np

from ..._kernels import compensated
from ..._protocol.state import count_total


def run_of_state(state, weighted: bool):
    """``(lo, masses)`` of a checked state, the masses float64 when ``weighted``."""
    ab = state["weights" if state["weighted"][0] else "counts"]
    return state["lo"], ab.astype(np.float64) if weighted and ab.dtype != np.float64 else ab


def weighted_flag(state) -> bool:
    flag = int(state["weighted"][0])
    if flag not in (0, 1):
        raise ValueError(f"entry 'weighted' must be 0 or 1, got {flag}")
    return bool(flag)


def mass_entry(state, shape):
    """``(weighted, name, masses)``: the entry of weights or counts, of ``shape``; the other one empty."""
    weighted = weighted_flag(state)
    name, other = ("weights", "counts") if weighted else ("counts", "weights")
    if state[name].shape != shape:
        raise ValueError(f"entry {name!r} has shape {state[name].shape}, expected {shape}")
    if state[other].shape != shape[:-1] + (0,):
        raise ValueError(f"entry {other!r} must be empty in this state")
    if weighted and np.any((state[name] > 0) & (state[name] < np.finfo(np.float64).tiny)):
        raise ValueError(f"entry {name!r} holds a subnormal mass (no sum of weights that update() takes)")
    return weighted, name, state[name]


def run_entries(state, per_row: int = 1):
    """``(n, lo, weighted, name, masses)`` of a state holding one run ``lo`` of at most ``per_row`` entries a row."""
    n, lo = int(state["n"][0]), state["lo"]
    if lo.ndim != 1:
        raise ValueError(f"entry 'lo' must be 1-D, got shape {lo.shape}")
    weighted, name, ab = mass_entry(state, (2, lo.shape[0]))
    if lo.shape[0] > per_row * n:
        raise ValueError(f"{lo.shape[0]} entries but only {n} observations")
    return n, lo, weighted, name, ab


def check_rank_state(state, max_bins):
    """The invariants of a saved rank state (exact when ``max_bins`` is None)."""
    n, lo, weighted, name, ab = run_entries(state)
    hi, pairs, m = state["hi"], state["pairs"], lo.shape[0]
    if m:
        if np.any(ab < 0):
            raise ValueError(f"entry {name!r} holds negative values")
        if np.any(ab[0] + ab[1] <= 0) if weighted else np.any((ab[0] == 0) & (ab[1] == 0)):
            raise ValueError("an entry holds no observation")
        if not weighted and (np.any(ab > n) or count_total(ab) != n):
            raise ValueError("the counts do not add up to the observation count")
    bits = int(state["score_bits"][0]) if "score_bits" in state else 0
    if bits not in (0, 16, 32, 64) or (n == 0 and bits):
        raise ValueError("entry 'score_bits' must be 16, 32 or 64, or 0 (always without observations)")
    if bits in (16, 32):  # thresholds are rounded to that width: every score must be one of its values
        narrow = np.float16 if bits == 16 else np.float32
        with np.errstate(over="ignore"):
            if any(np.any(e.astype(narrow).astype(np.float64) != e) for e in (lo, hi)):
                raise ValueError(f"entries 'lo'/'hi' hold a score that is no float{bits}, as 'score_bits' says")
    if state["wsq_rows"][0] > n:
        raise ValueError("more rows counted in 'wsq' than observations")
    if np.any(compensated.values(state["wsq"]) < 0):
        raise ValueError("entry 'wsq' holds negative sums")
    if max_bins is None:
        if hi.shape != (0,) or pairs.shape != (2, 0):
            raise ValueError("an exact state holds no bins ('hi', 'pairs' must be empty)")
        if np.any(np.diff(lo) <= 0):
            raise ValueError("the scores are not strictly increasing")
        return
    if hi.shape != (m,) or pairs.shape != (2, m):
        raise ValueError(f"entries 'hi' and 'pairs' must have shapes ({m},) and (2, {m})")
    if m > 2 * max_bins:
        raise ValueError(f"{m} bins, more than 2 * max_bins = {2 * max_bins}")
    if np.any(hi < lo):
        raise ValueError("a bin's upper edge is below its lower edge")
    dl, dh = np.diff(lo), np.diff(hi)
    point = hi == lo
    if np.any((dl < 0) | ((dl == 0) & (dh < 0)) | ((dl == 0) & (dh == 0) & point[:-1])):
        raise ValueError("the bins are not sorted by (lo, hi) with distinct points")
    if np.any(pairs < 0):
        raise ValueError("entry 'pairs' holds negative values")
    with np.errstate(over="ignore", invalid="ignore"):  # masses near 1e308: compared as infinities
        pn = ab[0].astype(np.float64) * ab[1]
        tol = 1e-9 * pn + 1e-300
        if np.any(pairs[0] + 2 * pairs[1] > 2 * pn + 2 * tol):
            raise ValueError("a bin's pair masses exceed its positive x negative mass")
        if np.any(point & ((pairs[1] != 0) | (np.abs(pairs[0] - pn) > tol))):
            raise ValueError("a single-score entry must hold ties only")
