"""Group-indexed kernels: a batch's row terms summed per slice, and slice keys coded.

:func:`group_terms` sums row terms (:mod:`streammetrics._protocol.terms`) per
slice in one pass, each row's slice ``local[i] - offset`` (a code, or an
integer key with ``offset`` the smallest). Sums are compensated at every row,
since a slice's rows are scattered through a batch. The other kernels code the
keys (by a table over their range, or hashed) and sort rows by slice.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, kernel
from .arrays import filled_int64
from .compensated import add, fold

__all__ = ["group_terms", "group_merge_pairs", "dense_codes", "group_scatter", "key_range", "hash_codes"]


@inline
def _add_pair(pairs, g, k, x):
    s, c = add(pairs[g, k, 0], pairs[g, k, 1], x)
    pairs[g, k, 0] = s
    pairs[g, k, 1] = c


@kernel
def group_terms(slots, values, lo, w, local, offset, counted, powers, ints, sums, second):
    """Sum row terms per group: row ``lo + i`` adds its terms ``(slots[i, t],
    values[i, t])`` to group ``j = local[lo + i] - offset``: one to the count
    ``ints[j, s]`` where ``counted[s]`` (``int32``: the caller flushes them
    before ``2**31``); ``w v`` (``w`` empty: 1) to the pair ``sums[j, s]``; and
    where ``powers[s]`` is 1 or 2, ``w v**2`` or ``w**2 v**2`` to
    ``second[j, s]`` (``sums``, ``second`` of no groups: skipped)."""
    m, width = slots.shape
    size = ints.shape[1]
    cells = ints.reshape(-1)
    # views indexed from 0: LLVM then knows no index is negative (see key_range)
    rows = local[lo : lo + m]
    for t in range(width):  # the counts first, a term at a time (most often all there is)
        column = slots[:, t]
        for i in range(m):
            s = column[i]
            cells[(rows[i] - offset) * size + s] += counted[s]
    if sums.shape[0] == 0:
        return
    weighted = w.shape[0] > 0
    squared = second.shape[0] > 0
    wb = w[lo : lo + m] if weighted else w
    for i in range(m):
        j = rows[i] - offset
        wi = wb[i] if weighted else 1.0
        for t in range(width):
            s = slots[i, t]
            v = values[i, t]
            _add_pair(sums, j, s, v * wi)
            if squared and powers[s]:
                _add_pair(second, j, s, (v * v) * (wi if powers[s] == 1 else wi * wi))


@kernel
def group_merge_pairs(into, idx, other):
    """Add the pairs ``other[j]`` (``[m, k, 2]``) into ``into[idx[j]]``."""
    for j in range(other.shape[0]):
        g = idx[j]
        for k in range(other.shape[1]):
            fold(into[g], k, other[j, k, 0], other[j, k, 1])


@kernel
def group_scatter(a, local, starts, out):
    """``a``'s rows sorted by slice ``local[i]`` into ``out``, stably, reading ``a``
    once in order (a counting sort: ``starts[j]`` is where slice ``j``'s rows
    begin); ``a = arange(n)`` gives the order that sorts the rows."""
    pos = starts.copy()
    for i in range(a.shape[0]):
        j = local[i]
        out[pos[j]] = a[i]
        pos[j] += 1


@kernel
def key_range(keys, start, stop):
    """``(min, max)`` of ``keys[start:stop]`` (``start < stop``), branch-free."""
    # a loop from 0 over a view: indices from ``start`` could be negative as far
    # as LLVM knows, and each load would be wrapped around (no vector loop)
    keys = keys[start:stop]
    lo = keys[0]
    hi = lo
    for i in range(keys.shape[0]):
        v = keys[i]
        lo = v if v < lo else lo
        hi = v if v > hi else hi
    return lo, hi


_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_MIX_SHIFT = np.uint64(33)


@inline
def _mix(v):
    """MurmurHash3's 64-bit finalizer: every bit of ``v`` moves every bit of the
    slot (a multiplicative hash alone clusters arithmetic progressions)."""
    x = np.uint64(v)
    x ^= x >> _MIX_SHIFT
    x *= _MIX1
    x ^= x >> _MIX_SHIFT
    x *= _MIX2
    x ^= x >> _MIX_SHIFT
    return x


@kernel
def hash_codes(a, cap):
    """Codes of int64 values in a range too wide for a table: ``(codes, values, m)``
    with ``values[:m]`` the distinct values in order of first appearance and
    ``codes[i]`` that of ``a[i]``; ``m`` is ``-1`` (unfinished) past ``cap``
    distinct values. One pass, no sort: open addressing with linear probing
    in a table at most a quarter full (of room for ``cap`` values, or one per row)."""
    n = a.shape[0]
    room = min(cap, n)
    size = 1024
    while size < 4 * room:
        size *= 2
    mask = np.uint64(size - 1)
    # slot j: table[2 j] its value, table[2 j + 1] the value's code (-1 empty)
    table = np.empty(2 * size, np.int64)
    for j in range(size):
        table[2 * j + 1] = -1
    codes = np.empty(n, np.int64)
    values = np.empty(room, np.int64)
    m = 0
    last_v = np.int64(0)
    last_c = np.int64(-1)
    for i in range(n):
        v = a[i]
        if v != last_v or last_c < 0:
            h = _mix(v) & mask
            while True:
                c = table[2 * h + 1]
                if c < 0 or table[2 * h] == v:
                    break
                h = (h + np.uint64(1)) & mask
            if c < 0:  # a value not seen before
                if m == room:
                    return codes, values, -1
                c = m
                values[m] = v
                m += 1
                table[2 * h] = v
                table[2 * h + 1] = c
            last_v = v
            last_c = c
        codes[i] = last_c
    return codes, values[:m], m


@kernel
def dense_codes(a, lo, span):
    """``numpy.unique(a, return_inverse=True)`` for integers in a small range
    (``lo .. lo + span - 1``), without a sort: ``(codes, values)``, ``values``
    ascending and ``codes[i]`` the rank of ``a[i]`` among them."""
    table = filled_int64(span, -1)  # value v's rank at v - lo (-1 absent)
    for i in range(a.shape[0]):
        table[a[i] - lo] = 0
    k = 0
    for v in range(span):
        if table[v] == 0:
            table[v] = k
            k += 1
    values = np.empty(k, np.int64)
    for v in range(span):
        if table[v] >= 0:
            values[table[v]] = v + lo
    codes = np.empty(a.shape[0], np.int64)
    for i in range(a.shape[0]):
        codes[i] = table[a[i] - lo]
    return codes, values
