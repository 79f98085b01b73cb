"""Group-indexed kernels: many slices' states as one table, updated in one pass.

A sliced accumulator keeps the states of all its slices as tables whose first
axis is the slice: ``counts[g]`` is slice ``g``'s ``(tp, fp, fn, tn)``,
``sums[g]`` its compensated pairs, ``moments[g]`` its running moments. Each
row of a batch names its slice through two small arrays: ``local[i]`` is the
row's slice among the batch's distinct keys and ``glob[local[i]]`` the row of
the tables (the table rows are the accumulator's dense slice ids, ``glob`` is
a few entries and stays in cache). The counting kernels also take the rows'
integer keys themselves as ``local``, with ``offset`` their smallest value:
``glob[local[i] - offset]`` is then the table row of the key's value, ``-1``
for a value no row holds (so a batch of dense integer keys is never coded).

These kernels do not check values: the batch was checked as a whole before
any of them runs (``prepare``), so a rejected batch never reaches a table.
Weighted sums are compensated at every row (Neumaier's step, :func:`.add`),
since the rows of one slice are scattered through a batch; the result agrees
with the one-slice kernels, which add blocks naively first, to a few ulps.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, inline_ir, kernel
from .arrays import filled_int64
from .compensated import add, fold
from .probability import LOG_FLOOR
from .regression import MAPE_FLOOR, _merge_moments, regression_merge

__all__ = [
    "group_count",
    "group_sum_labels",
    "group_sum_scores",
    "group_probability",
    "group_regression",
    "group_merge_pairs",
    "group_merge_regression",
    "dense_table",
    "table_codes",
    "group_order",
    "group_scatter",
    "group_scatter2",
    "value_counts",
    "value_scatter2",
    "key_range",
    "hash_codes",
    "hash_rows",
    "rank_codes",
    "count_keys",
    "present_keys",
    "commit_keys",
]


@inline
def _cell(y1, p1):
    """The (tp, fp, fn, tn) index of a row: 0 tp, 1 fp, 2 fn, 3 tn."""
    return (0 if p1 else 2) + (0 if y1 else 1)


@inline
def _add_pair(pairs, g, k, x):
    s, c = add(pairs[g, k, 0], pairs[g, k, 1], x)
    pairs[g, k, 0] = s
    pairs[g, k, 1] = c


#: rows counted into a batch's int32 table before it is added to the state
_CHUNK = 1 << 30

#: rows whose table cells are worked out before they are counted
_BLOCK = 4096


@inline_ir
def _commit_counts(tab, glob, rows, counts):
    """Add a batch's per-slice cell counts ``tab[4 j + k]`` into ``counts[glob[j], k]``
    (``glob[j] < 0``: a value no row holds), and clear ``tab``."""
    for j in range(glob.shape[0]):
        g = glob[j]
        if g < 0:
            continue
        total = 0
        for k in range(4):
            c = np.int64(tab[4 * j + k])
            counts[g, k] += c
            total += c
            tab[4 * j + k] = 0
        rows[g, 0] += total


@inline
def _count_block(tab, cells, m):
    # the cells are unsigned: an unsigned index is never wrapped around as a
    # negative one would be, which costs each increment a compare and a select
    # (a quarter of the count into a table in cache, 4.9 against 3.1 ms for 10M rows)
    for i in range(m):
        tab[cells[i]] += 1


@kernel
def group_count(y, p, threshold, local, offset, glob, rows, counts, tab):
    """Unweighted rows into ``counts[g]`` (``int64[G, 4]``): 0/1 labels ``y`` and
    0/1 predictions ``p`` (``threshold`` NaN), or scores ``p`` called positive
    at ``p >= threshold``.

    The batch is counted in a table of its own slices first (``int32``, four
    cells per slice: half the cache of ``int64``, committed every
    ``2**30`` rows), then added to the state's rows. Each block of rows has
    its cells worked out first, then counted: the loads of the rows and the
    scattered increments do not wait on each other. ``tab`` is that table,
    ``int32[4 len(glob)]`` zeros from the caller (left zeroed)."""
    labels = math.isnan(threshold)
    # the kernel's own: LLVM then knows that no write to the table changes a
    # cell (a caller's array made this loop 2.3 times slower)
    cells = np.empty(_BLOCK, np.uint64)
    n = y.shape[0]
    for chunk in range(0, n, _CHUNK):
        end = chunk + _CHUNK if chunk + _CHUNK < n else n
        for lo in range(chunk, end, _BLOCK):
            hi = lo + _BLOCK if lo + _BLOCK < end else end
            # views indexed from 0: LLVM then knows no index is negative (see
            # key_range), and the loop vectorizes
            yb, pb, lb = y[lo:hi], p[lo:hi], local[lo:hi]
            for i in range(yb.shape[0]):
                called = pb[i] == 1 if labels else pb[i] >= threshold
                cells[i] = np.uint64(4 * (lb[i] - offset) + _cell(yb[i] == 1, called))
            _count_block(tab, cells, yb.shape[0])
        _commit_counts(tab, glob, rows, counts)


@inline
def _add_weighted(g, k, wi, keep, rows, weighted, wsums, wsq, wsq_rows):
    _add_pair(wsums, g, k, wi)
    rows[g, 0] += 1
    weighted[g, 0] += 1
    if keep:
        _add_pair(wsq, g, k, wi * wi)
        wsq_rows[g, 0] += 1


@kernel
def group_sum_labels(y, p, w, local, offset, glob, rows, weighted, wsums, keep, wsq, wsq_rows):
    """Weighted 0/1 labels and predictions into the pairs ``wsums[g]`` (``[G, 4, 2]``)
    and, if ``keep``, the squared weights into ``wsq[g]`` (rows counted in ``wsq_rows``)."""
    for i in range(y.shape[0]):
        g = glob[local[i] - offset]
        _add_weighted(g, _cell(y[i] == 1, p[i] == 1), w[i], keep, rows, weighted, wsums, wsq, wsq_rows)


@kernel
def group_sum_scores(y, s, threshold, w, local, offset, glob, rows, weighted, wsums, keep, wsq, wsq_rows):
    """Weighted labels and scores cut at ``threshold`` into ``wsums[g]`` (and ``wsq``)."""
    for i in range(y.shape[0]):
        g = glob[local[i] - offset]
        _add_weighted(g, _cell(y[i] == 1, s[i] >= threshold), w[i], keep, rows, weighted, wsums, wsq,
                      wsq_rows)


@kernel
def group_probability(y, p, w, local, offset, glob, rows, sums, keep, squares, squares_rows):
    """Weight, log-loss and Brier totals into the pairs ``sums[g]`` (``[G, 3, 2]``)
    and, if ``keep``, their second moments (``w loss**2``, ``w (p - y)**4``,
    ``w**2``) into ``squares[g]``, the rows counted in ``squares_rows``."""
    weighted = w.shape[0] > 0
    for i in range(y.shape[0]):
        g = glob[local[i] - offset]
        pi = p[i]
        y1 = y[i] == 1
        q = pi if y1 else 1.0 - pi
        loss = -math.log(LOG_FLOOR if LOG_FLOOR > q else q)
        d = pi - y1
        d2 = d * d
        wi = w[i] if weighted else 1.0
        _add_pair(sums, g, 0, wi)
        _add_pair(sums, g, 1, wi * loss if weighted else loss)
        _add_pair(sums, g, 2, wi * d2 if weighted else d2)
        rows[g, 0] += 1
        if keep:
            _add_pair(squares, g, 0, wi * (loss * loss) if weighted else loss * loss)
            _add_pair(squares, g, 1, wi * (d2 * d2) if weighted else d2 * d2)
            _add_pair(squares, g, 2, wi * wi)
            squares_rows[g, 0] += 1


@kernel
def group_regression(y, p, w, local, glob, rows, moments, sums, keep, squares, squares_rows):
    """Each slice's batch moments (two passes) merged into ``moments[g]`` by Chan's
    formula, its error totals into the pairs ``sums[g]`` (``[G, 3, 2]``) and, if
    ``keep``, their second moments (``w r**4``, ``w ape**2``, ``w**2``) into
    ``squares[g]``, the rows counted in ``squares_rows``.

    As the one-slice kernel: a slice's shift is its first ``y`` in the batch,
    its mean is found first, then the squared deviations about it, corrected
    by the error of the mean.
    """
    u = glob.shape[0]
    n = y.shape[0]
    weighted = w.shape[0] > 0
    shift = np.zeros(u)
    seen = np.zeros(u, np.bool_)
    count = np.zeros(u, np.int64)
    # weight, sum y - shift, sum d, sum d^2, r^2, |r|, ape, r^4, ape^2, w^2
    acc = np.zeros((u, 10, 2))
    for i in range(n):
        j = local[i]
        yi = y[i]
        if not seen[j]:
            seen[j] = True
            shift[j] = yi
        wi = w[i] if weighted else 1.0
        _add_pair(acc, j, 0, wi)
        _add_pair(acc, j, 1, wi * (yi - shift[j]) if weighted else yi - shift[j])
        count[j] += 1
    mean = np.zeros(u)
    for j in range(u):
        wt = acc[j, 0, 0] + acc[j, 0, 1]
        mean[j] = (acc[j, 1, 0] + acc[j, 1, 1]) / wt if wt > 0.0 else 0.0
    for i in range(n):
        j = local[i]
        yi = y[i]
        d = (yi - shift[j]) - mean[j]
        r = yi - p[i]
        ar = abs(r)
        ape = ar / (MAPE_FLOOR if MAPE_FLOOR > abs(yi) else abs(yi))
        r2 = r * r
        if weighted:
            wi = w[i]
            _add_pair(acc, j, 2, wi * d)
            _add_pair(acc, j, 3, wi * (d * d))
            _add_pair(acc, j, 4, wi * r2)
            _add_pair(acc, j, 5, wi * ar)
            _add_pair(acc, j, 6, wi * ape)
            if keep:
                _add_pair(acc, j, 7, wi * (r2 * r2))
                _add_pair(acc, j, 8, wi * (ape * ape))
                _add_pair(acc, j, 9, wi * wi)
        else:
            _add_pair(acc, j, 2, d)
            _add_pair(acc, j, 3, d * d)
            _add_pair(acc, j, 4, r2)
            _add_pair(acc, j, 5, ar)
            _add_pair(acc, j, 6, ape)
            if keep:
                _add_pair(acc, j, 7, r2 * r2)
                _add_pair(acc, j, 8, ape * ape)
    for j in range(u):
        g = glob[j]
        sw = acc[j, 0, 0]
        cw = acc[j, 0, 1]
        wt = sw + cw
        sm = acc[j, 3, 0]
        cm = acc[j, 3, 1]
        if wt > 0.0:
            corr = acc[j, 2, 0] + acc[j, 2, 1]
            sm, cm = add(sm, cm, -corr * (corr / wt))  # corr * corr alone may overflow
            if sm + cm < 0.0:
                sm, cm = 0.0, 0.0
        _merge_moments(moments[g], sw, cw, shift[j], mean[j], sm, cm)
        for k in range(3):
            fold(sums[g], np.intp(k), acc[j, 4 + k, 0], acc[j, 4 + k, 1])
        rows[g, 0] += count[j]
        if keep:
            if not weighted:
                acc[j, 9, 0] = float(count[j])
            for k in range(3):
                fold(squares[g], np.intp(k), acc[j, 7 + k, 0], acc[j, 7 + k, 1])
            squares_rows[g, 0] += count[j]


@kernel
def group_merge_pairs(into, idx, other):
    """Add the pairs ``other[j]`` (``[m, k, 2]``) into ``into[idx[j]]``."""
    for j in range(other.shape[0]):
        g = idx[j]
        for k in range(other.shape[1]):
            fold(into[g], k, other[j, k, 0], other[j, k, 1])


@kernel
def group_merge_regression(moments, sums, idx, other_moments, other_sums):
    """Fold slice ``j`` of another table into slice ``idx[j]`` (Chan et al. for M2)."""
    for j in range(other_moments.shape[0]):
        g = idx[j]
        regression_merge(moments[g], sums[g], other_moments[j], other_sums[j])


@kernel
def group_order(local, starts):
    """The stable order that sorts rows by their slice ``local[i]`` (a counting
    sort: ``starts[j]`` is where slice ``j``'s rows begin), in one linear pass;
    ``numpy.argsort(local, kind="stable")`` without the sort."""
    pos = starts.copy()
    order = np.empty(local.shape[0], np.int64)
    for i in range(local.shape[0]):
        j = local[i]
        order[pos[j]] = i
        pos[j] += 1
    return order


@kernel
def group_scatter(a, local, starts, out):
    """``out = a[group_order(local, starts)]`` for a 1-D ``a``, written by
    reading ``a`` once in order (each slice's rows are a sequential stream of
    writes), not by gathering it at scattered positions."""
    pos = starts.copy()
    for i in range(a.shape[0]):
        j = local[i]
        out[pos[j]] = a[i]
        pos[j] += 1


@kernel
def group_scatter2(a, b, local, starts, out_a, out_b):
    """:func:`group_scatter` of two 1-D arrays of the same rows in one pass
    (the slice of each row read once for both)."""
    pos = starts.copy()
    for i in range(a.shape[0]):
        j = local[i]
        k = pos[j]
        out_a[k] = a[i]
        out_b[k] = b[i]
        pos[j] = k + 1


@kernel
def key_range(keys, start, stop):
    """``(min, max)`` of ``keys[start:stop]`` (``start < stop``), in a pass that
    vectorizes (no branch on the values)."""
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
    """MurmurHash3's 64-bit finalizer: every bit of ``v`` moves every bit of
    the slot. (A multiplicative hash alone put the keys of an arithmetic
    progression into long runs of slots: ten times slower to probe.)"""
    x = np.uint64(v)
    x ^= x >> _MIX_SHIFT
    x *= _MIX1
    x ^= x >> _MIX_SHIFT
    x *= _MIX2
    x ^= x >> _MIX_SHIFT
    return x


@inline
def _empty_slots(size):
    """A hash table of ``size`` empty slots: ``(value, code)`` pairs, code -1."""
    table = np.empty(2 * size, np.int64)
    for j in range(size):
        table[2 * j + 1] = -1
    return table


@inline
def _grown(a, m, room):
    """``a[:m]`` in a new array of ``room`` entries."""
    out = np.empty(room, np.int64)
    out[:m] = a[:m]
    return out


@inline
def _place(table, mask, h, value, code):
    """Put ``(value, code)`` in the first empty slot from ``h`` on (the value known new)."""
    g = h & mask
    while table[2 * g + 1] >= 0:
        g = (g + np.uint64(1)) & mask
    table[2 * g] = value
    table[2 * g + 1] = code


@inline
def _hash_rows(a, i, codes, table, mask, values, m, room):
    """Code rows ``i, i+1, ...`` of ``a`` (see :func:`hash_codes`) until all are
    coded or a new value finds ``m == room``; return ``(i, m)``: the next row,
    the values so far."""
    n = a.shape[0]
    last_v = np.int64(0)
    last_c = np.int64(-1)
    while i < n:
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
                    return i, m
                c = m
                values[m] = v
                m += 1
                table[2 * h] = v
                table[2 * h + 1] = c
            last_v = v
            last_c = c
        codes[i] = last_c
        i += 1
    return i, m


@kernel
def hash_codes(a, cap):
    """Codes of int64 values in a range too wide for a table (see
    :func:`dense_table`): ``(codes, values, m)`` with ``values[:m]`` the distinct
    values in the order they first appear and ``codes[i]`` that of ``a[i]``;
    ``m`` is ``-1`` (the codes unfinished) once more than ``cap`` distinct
    values are seen, which bounds the memory this takes.

    One pass, no sort (``numpy.unique`` sorts every row): an open-addressing
    hash table with linear probing, kept at most a quarter full (half full,
    mispredicted probes made it half as fast) and rebuilt twice as large
    when it fills; a row whose value equals the row before it is not looked up."""
    n = a.shape[0]
    codes = np.empty(n, np.int64)
    values = np.empty(0, np.int64)
    m = 0
    i = 0
    bits = 10
    while True:
        size = 1 << bits
        room = size // 4
        mask = np.uint64(size - 1)
        # slot j: table[2 j] its value, table[2 j + 1] the value's code (-1 empty)
        table = _empty_slots(size)
        values = _grown(values, m, room)
        for k in range(m):
            _place(table, mask, _mix(values[k]), values[k], k)
        i, m = _hash_rows(a, i, codes, table, mask, values, m, (cap if cap < room else room))
        if i == n:
            return codes, values[:m], m
        if m == cap:
            return codes, values, -1
        bits += 1


@inline
def _row_hash(m, i):
    """FNV-1a over the words of row ``i`` of ``m``, then :func:`_mix`."""
    h = np.uint64(14695981039346656037)
    for j in range(m.shape[1]):
        h = (h ^ np.uint64(m[i, j])) * np.uint64(1099511628211)
    return _mix(h)


@inline
def _same_rows(m, i, k):
    for j in range(m.shape[1]):
        if m[i, j] != m[k, j]:
            return False
    return True


@inline
def _hash_string_rows(m, i, codes, table, mask, firsts, f, room):
    """:func:`_hash_rows` for the rows of ``m`` (see :func:`hash_rows`): ``table``
    holds each slot's row hash and code, ``firsts[:f]`` each code's first row."""
    n = m.shape[0]
    while i < n:
        if i > 0 and _same_rows(m, i, i - 1):  # a row equal to the one before it
            codes[i] = codes[i - 1]
            i += 1
            continue
        h = _row_hash(m, i)
        g = h & mask
        while True:
            c = table[2 * g + 1]
            if c < 0 or (np.uint64(table[2 * g]) == h and _same_rows(m, i, firsts[c])):
                break
            g = (g + np.uint64(1)) & mask
        if c < 0:  # a value not seen before
            if f == room:
                return i, f
            c = f
            firsts[f] = i
            f += 1
            table[2 * g] = np.int64(h)
            table[2 * g + 1] = c
        codes[i] = c
        i += 1
    return i, f


@kernel
def hash_rows(m, cap):
    """Codes of the rows of ``m`` (``rows x words``: a fixed-width string array
    viewed as its code units), equal rows one code: ``(codes, firsts, f)`` with
    ``firsts[:f]`` the first row of each code, in the order they first appear;
    ``f`` is ``-1`` once more than ``cap`` distinct rows are seen. The table of
    :func:`hash_codes`, over each row's hash, a row compared in full with the
    first row of a code whose hash it shares."""
    n = m.shape[0]
    codes = np.empty(n, np.int64)
    firsts = np.empty(0, np.int64)
    f = 0
    i = 0
    bits = 10
    while True:
        size = 1 << bits
        room = size // 4
        mask = np.uint64(size - 1)
        # slot j: table[2 j] its row hash (as int64), table[2 j + 1] the code (-1 empty)
        table = _empty_slots(size)
        firsts = _grown(firsts, f, room)
        for k in range(f):
            h = _row_hash(m, firsts[k])
            _place(table, mask, h, np.int64(h), k)
        i, f = _hash_string_rows(m, i, codes, table, mask, firsts, f, cap if cap < room else room)
        if i == n:
            return codes, firsts[:f], f
        if f == cap:
            return codes, firsts, -1
        bits += 1


@kernel
def rank_codes(codes, rank):
    """``codes[i] = rank[codes[i]]``, in place (``rank`` a permutation)."""
    for i in range(codes.shape[0]):
        codes[i] = rank[np.uint64(codes[i])]


@kernel
def dense_table(a, lo, span):
    """``numpy.unique`` with ``return_inverse`` for integers in a small range,
    without a sort, in two halves. This one gives ``(table, values)`` where
    ``table[v - lo]`` is value ``v``'s rank among the distinct values of ``a``
    (``-1`` for a value absent) and ``values`` the distinct values, ascending;
    one pass over ``a``, none written per row."""
    table = filled_int64(span, -1)
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
    return table, values


@kernel
def table_codes(a, lo, table, out):
    """The second half (see :func:`dense_table`): ``out[i] = table[a[i] - lo]``."""
    for i in range(a.shape[0]):
        out[i] = table[a[i] - lo]


@kernel
def value_counts(values, offset, table, k):
    """Rows per code of integer keys read by value (code ``table[v - offset]``,
    one of ``k``): ``numpy.bincount`` of the codes without writing them."""
    out = filled_int64(k, 0)
    for i in range(values.shape[0]):
        out[table[values[i] - offset]] += 1
    return out


@kernel
def value_scatter2(a, b, values, offset, table, starts, out_a, out_b):
    """:func:`group_scatter2` of rows whose codes are read by value (as
    :func:`value_counts`): no array of codes is written."""
    pos = starts.copy()
    for i in range(a.shape[0]):
        j = table[values[i] - offset]
        k = pos[j]
        out_a[k] = a[i]
        out_b[k] = b[i]
        pos[j] = k + 1


# ------------------------------------------------------- rows counted by key
#: rows a count table's cell holds before it wraps around to 0 (``uint8`` cells)
CELL_WRAP = 256


@kernel
def count_keys(y, p, threshold, keys, lo, tab, spill, wraps, start, stop):
    """Check rows ``start..stop-1`` and count each into ``tab[4 (keys[i] - lo) + cell]``
    (four cells a key: see :func:`_cell`): 0/1 labels ``y`` and 0/1
    predictions ``p`` (``threshold`` NaN), or finite scores ``p`` called
    positive at ``p >= threshold``.

    The cells are ``uint8``: a table of 100k keys then fits in a core's L2
    cache, where the scattered increments do not wait on memory (10M rows
    over 100k keys, on two threads, in the same runs: 11.0-12.4 ms with
    ``int32`` cells, 9.5-11.4 ms with these). A cell that wraps around to 0
    has its index written to ``wraps`` (:data:`CELL_WRAP` rows each): a
    table that starts at zeros wraps at most once every 256 of all the rows
    counted into it, over however many calls.

    ``tab`` holds one slot more than the keys it counts: a row whose key
    falls outside them is counted in that last slot (no branch) and its
    index written to ``spill``, for the caller to count apart.

    Returns ``(status, spilled, wrapped)``: status 0; 1 for a value out of
    its domain; 3 when more rows fall outside than ``spill`` holds. ``tab``
    is then partly counted (it is the caller's scratch, never a state). A
    block of rows is checked and its cells worked out in one loop without a
    branch (it vectorizes), then the block is counted, so the loads of the
    rows and the scattered increments do not wait on each other. The caller
    gives fewer than ``2**31`` rows."""
    labels = math.isnan(threshold)
    span = np.uint64(tab.shape[0] // 4 - 1)
    outside = np.int64(4 * (tab.shape[0] // 4 - 1))
    # the kernel's own: LLVM then knows that no write to the table changes a
    # cell (a caller's array made this loop 2.3 times slower)
    cells = np.empty(_BLOCK, np.uint64)
    bad = False
    spilled = 0
    wrapped = 0
    room = spill.shape[0]
    for b in range(start, stop, _BLOCK):
        e = b + _BLOCK if b + _BLOCK < stop else stop
        # views indexed from 0: LLVM then knows no index is negative (see key_range)
        yb, pb, kb = y[b:e], p[b:e], keys[b:e]
        far = False
        if labels:
            for i in range(yb.shape[0]):
                yi = yb[i]
                pi = pb[i]
                k = kb[i] - lo
                inside = np.uint64(k) < span
                bad |= not ((yi == 0 or yi == 1) and (pi == 0 or pi == 1))
                far |= not inside
                cells[i] = np.uint64((4 * k if inside else outside) + 2 * np.int64(pi != 1) + np.int64(yi != 1))
        else:
            for i in range(yb.shape[0]):
                yi = yb[i]
                pi = pb[i]
                k = kb[i] - lo
                inside = np.uint64(k) < span
                bad |= not ((yi == 0 or yi == 1) and pi - pi == 0.0)  # NaN or +-inf
                far |= not inside
                cells[i] = np.uint64((4 * k if inside else outside) + 2 * np.int64(not pi >= threshold)
                                     + np.int64(yi != 1))
        if bad:
            return 1, spilled, wrapped
        if far:
            for i in range(kb.shape[0]):
                if not np.uint64(kb[i] - lo) < span:
                    if spilled == room:
                        return 3, spilled, wrapped
                    spill[spilled] = b + i
                    spilled += 1
        for i in range(yb.shape[0]):
            c = cells[i]
            v = np.uint8(tab[c] + 1)
            tab[c] = v
            if v == 0:
                wraps[wrapped] = c
                wrapped += 1
    return 0, spilled, wrapped


@kernel
def present_keys(words, other, lo):
    """The keys holding a row, ascending: ``lo + j`` for each ``j`` whose
    word (the four ``uint8`` cells of :func:`count_keys`, read as one
    ``uint32``) is not zero in ``words`` or ``other`` (a table like it: zeros
    when there is no second), the last word (the rows outside) left out. A
    key whose every cell wrapped around to 0 is not among them (see
    :func:`count_keys`'s ``wraps``)."""
    span = words.shape[0] - 1
    m = 0
    for j in range(span):
        m += np.int64((words[j] | other[j]) != 0)
    values = np.empty(m, np.int64)
    m = 0
    for j in range(span):
        if (words[j] | other[j]) != 0:
            values[m] = lo + j
            m += 1
    return values


@kernel
def commit_keys(tab, other, values, lo, glob, start, rows, counts):
    """Add the cells of each key ``values[j]`` in the ``uint8`` tables ``tab``
    and ``other`` (a table like it: zeros when there is no second), cell
    ``4 (values[j] - lo) + k``, to the state's row ``g`` (``glob[j]``, or
    ``start + j`` when ``glob`` is empty): ``counts[g]`` (``int64[G, 4]``)
    and its rows ``rows[g, 0]``. The cells' wraps around to 0 are the
    caller's to add."""
    fresh = glob.shape[0] == 0
    for j in range(values.shape[0]):
        s = 4 * (values[j] - lo)
        g = start + j if fresh else glob[j]
        total = np.int64(0)
        for k in range(4):
            c = np.int64(tab[s + k]) + np.int64(other[s + k])
            counts[g, k] += c
            total += c
        rows[g, 0] += total
