"""Multiclass rank kernels: per (column, true class) sorted blocks of score keys.

A *block* ``(c, t)`` holds the distinct keys (:mod:`.keys`) of column ``c``
over the rows of class ``t``, increasing, with the count (or weight) at each;
a *block run* ``(keys[m], mass[m], lengths[k, k])`` lays the blocks end to end
column-major. A batch is taken a column at a time: :func:`class_starts` counts
the classes once, :func:`gather_column` writes a column's keys grouped by class,
each block is sorted and :func:`column_run` makes its part of a block run.
:func:`column_scores` reads ``u2[c, t]``, twice the Mann–Whitney U of class
``c`` against class ``t`` by column ``c``: one-vs-one AUCs read ``u2[a, b]``
and ``u2[b, a]``, one-vs-rest ``sum_t u2[c, t]``.

Kernels that validate return a status: ``0`` valid, ``1`` a class outside
``0..k-1``, ``2`` a score NaN or infinite. They write only into scratch.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from .compensated import add
from .keys import key_of

__all__ = [
    "class_mass",
    "class_starts",
    "column_run",
    "column_scores",
    "gather_column",
    "merge_block_runs",
]

_EXPONENT = np.uint64(0x7FF0000000000000)


@kernel
def column_run(keys, vals, starts, out_keys, out_mass, lengths):
    """One column's blocks (each sorted) as distinct keys with their mass:
    counts without weights (``vals`` empty), else the weights' sums, an
    entry whose weights add up to 0 dropped (it weighs in no pair). Fills
    ``lengths[t]`` and returns the entries written (``out_*`` may alias
    ``keys``/``vals``: they are written behind the read position)."""
    weighted = vals.shape[0] > 0
    m = 0
    for t in range(starts.shape[0] - 1):
        first = m
        i = starts[t]
        stop = starts[t + 1]
        while i < stop:
            key = keys[i]
            e = i
            s = 0.0
            while e < stop and keys[e] == key:
                if weighted:
                    s += vals[e]
                e += 1
            if weighted:
                if s > 0.0:
                    out_keys[m] = key
                    out_mass[m] = s
                    m += 1
            else:
                out_keys[m] = key
                out_mass[m] = e - i
                m += 1
            i = e
        lengths[t] = m - first
    return m


@kernel
def merge_block_runs(k1, m1, l1, k2, m2, l2, out_keys, out_mass, out_lengths):
    """Merge two block runs block by block (the masses of a key in both are
    added); returns the entries written. ``l1``, ``l2`` may hold a few
    columns' rows of the lengths (a slice of the runs, merged on its own)."""
    i = 0
    j = 0
    m = 0
    for c in range(l1.shape[0]):
        for t in range(l1.shape[1]):
            first = m
            ei = i + l1[c, t]
            ej = j + l2[c, t]
            while i < ei and j < ej:
                a = k1[i]
                b = k2[j]
                if a < b:
                    out_keys[m] = a
                    out_mass[m] = m1[i]
                    i += 1
                elif b < a:
                    out_keys[m] = b
                    out_mass[m] = m2[j]
                    j += 1
                else:
                    out_keys[m] = a
                    out_mass[m] = m1[i] + m2[j]
                    i += 1
                    j += 1
                m += 1
            while i < ei:
                out_keys[m] = k1[i]
                out_mass[m] = m1[i]
                i += 1
                m += 1
            while j < ej:
                out_keys[m] = k2[j]
                out_mass[m] = m2[j]
                j += 1
                m += 1
            out_lengths[c, t] = m - first
    return m


@kernel
def class_starts(y, k, starts):
    """Validate classes and count them: class ``t``'s block of a column is
    ``starts[t]:starts[t + 1]``. Returns the status (1: a bad class)."""
    for t in range(k + 1):
        starts[t] = 0
    for i in range(y.shape[0]):
        t = y[i]
        if t < 0 or t >= k:
            return 1
        starts[t + 1] += 1  # the counts, summed into starts below
    for t in range(k):
        starts[t + 1] += starts[t]
    return 0


@kernel
def gather_column(y, bits, w, c, starts, pos, keys, vals):
    """Column ``c``'s keys grouped by class, in row order within a class
    (``bits`` is ``P.view(np.uint64)``; ``pos`` scratch of ``k`` int64), and
    the rows' weights alongside when ``w`` is not empty. Returns 2 at a score
    NaN or infinite (the rest then unwritten), else 0."""
    k = starts.shape[0] - 1
    for t in range(k):
        pos[t] = starts[t]
    weighted = w.shape[0] > 0
    for i in range(y.shape[0]):
        b = bits[i, c]
        if (b & _EXPONENT) == _EXPONENT:
            return 2
        t = y[i]
        r = pos[t]
        pos[t] = r + 1
        keys[r] = key_of(b)
        if weighted:
            vals[r] = w[i]
    return 0


@kernel
def column_scores(keys, mass, offs, c, u2, ptr, acc):
    """Class ``c``'s pair counts and average precision from one column.

    The blocks ``keys[offs[t]:offs[t + 1]]`` hold class ``t``'s distinct keys,
    increasing, and ``mass`` their counts or weights. Fills ``u2[t]``, twice the
    Mann–Whitney U of class ``c`` against class ``t`` (``u2[c] = 0``), and returns
    class ``c``'s one-vs-rest average precision. One walk down block ``c``, highest
    key first, with two pointers per other block; counts summed exactly in int64
    (the caller guarantees ``2 n_c n_t < 2**63``), weights in compensated sums.
    ``ptr`` (``k`` int64) and ``acc`` (``k x 4`` of ``u2``'s dtype) are scratch."""
    k = offs.shape[0] - 1
    zero = mass[0] * 0 if mass.shape[0] else 0
    p0 = offs[c]
    p1 = offs[c + 1]
    # per block: the mass above the current key as a compensated pair
    # (``acc[t, 0:2]``), the block's mass (``acc[t, 2]``) and the compensation
    # of ``u2[t]`` (``acc[t, 3]``)
    for t in range(k):
        ptr[t] = offs[t + 1]  # first key above the current one
        u2[t] = 0
        for j in range(4):
            acc[t, j] = 0
    ps = 0.0
    pc = 0.0
    s = 0.0
    sc = 0.0
    for t in range(k):
        ts = zero
        tc = zero
        for q in range(offs[t], offs[t + 1]):
            ts, tc = add(ts, tc, mass[q])
        acc[t, 2] = ts + tc
    i = p1 - 1
    while i >= p0:
        key = keys[i]
        a = zero
        while i >= p0 and keys[i] == key:
            a += mass[i]
            i -= 1
        fsum = 0.0
        for t in range(k):
            if t == c:
                continue
            lo = offs[t]
            q = ptr[t]
            hs = acc[t, 0]
            hc = acc[t, 1]
            while q > lo and keys[q - 1] > key:
                q -= 1
                hs, hc = add(hs, hc, mass[q])
            ptr[t] = q
            acc[t, 0] = hs
            acc[t, 1] = hc
            # every key at or above the previous one is above this one
            q2 = q
            es = hs
            ec = hc
            while q2 > lo and keys[q2 - 1] >= key:
                q2 -= 1
                es, ec = add(es, ec, mass[q2])
            ge = es + ec
            gt = hs + hc
            # 2 * below + equal = 2 (total - ge) + (ge - gt)
            u2[t], acc[t, 3] = add(u2[t], acc[t, 3], a * (2 * (acc[t, 2] - ge) + (ge - gt)))
            fsum += ge
        if a == 0:
            continue
        af = a * 1.0
        ps, pc = add(ps, pc, af)
        tp = ps + pc
        s, sc = add(s, sc, af * tp / (tp + fsum))
    for t in range(k):
        u2[t] += acc[t, 3]
    tp = ps + pc
    return (s + sc) / tp if tp > 0.0 else 0.0


@kernel
def class_mass(mass, lengths, out):
    """``out[t]``: the mass of class ``t`` (column 0's block ``(0, t)``), compensated."""
    k = lengths.shape[0]
    i = 0
    for t in range(k):
        s = 0.0
        cc = 0.0
        for _ in range(lengths[0, t]):
            s, cc = add(s, cc, mass[i] * 1.0)
            i += 1
        out[t] = s + cc


