"""Multiclass rank kernels. A *block* ``(c, t)`` holds the distinct keys (:mod:`.keys`) of column ``c`` over the rows
of class ``t``, increasing, with the count (or weight) at each; a *block run* ``(keys[m], mass[m], lengths[k, k])``
lays the blocks end to end column-major.
"""

from __future__ import annotations

from ._jit import kernel
from .compensated import add
from .keys import EXPONENT, TOP, key_of


@kernel
def column_run(keys, vals, starts, out_keys, out_mass, lengths):
    """One column's sorted blocks as distinct keys with their counts (``vals`` empty) or weights (weight 0 dropped);
    fills ``lengths[t]``, returns the entries written (``out_*`` may alias ``keys``: written behind the reads)."""
    weighted = vals.shape[0] > 0
    m = 0
    for t in range(starts.shape[0] - 1):
        first = m
        i = starts[t]
        stop = starts[t + 1]
        while i < stop:
            key = keys[i]
            s = 0.0  # the key's weight, or its count (exact in float64)
            while i < stop and keys[i] == key:
                s += vals[i] if weighted else 1.0
                i += 1
            if s > 0.0:  # (a key of weight 0 is dropped)
                out_keys[m] = key
                out_mass[m] = s
                m += 1
        lengths[t] = m - first
    return m


@kernel
def merge_block_runs(k1, m1, l1, k2, m2, l2, out_keys, out_mass, out_lengths):
    """Merge two block runs block by block (masses of a key in both added); returns the entries written."""
    i = 0
    j = 0
    m = 0
    for c in range(l1.shape[0]):
        for t in range(l1.shape[1]):
            first = m
            ei = i + l1[c, t]
            ej = j + l2[c, t]
            while i < ei or j < ej:
                a = k1[i] if i < ei else TOP
                b = k2[j] if j < ej else TOP
                if a <= b:
                    out_keys[m] = a
                    out_mass[m] = m1[i]
                    i += 1
                    if a == b:
                        out_mass[m] += m2[j]
                        j += 1
                else:
                    out_keys[m] = b
                    out_mass[m] = m2[j]
                    j += 1
                m += 1
            out_lengths[c, t] = m - first
    return m


@kernel
def gather_column(y, bits, w, c, starts, pos, keys, vals):
    """Column ``c``'s keys grouped by class in row order, weights alongside unless ``w`` is empty (``bits``:
    ``P.view(np.uint64)``, ``pos``: scratch); returns 2 for a NaN or infinite score, else 0."""
    k = starts.shape[0] - 1
    for t in range(k):
        pos[t] = starts[t]
    weighted = w.shape[0] > 0
    for i in range(y.shape[0]):
        b = bits[i, c]
        if (b & EXPONENT) == EXPONENT:
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
    """Fills ``u2[t]``, twice the U of class ``c`` against class ``t``, and returns class ``c``'s one-vs-rest average
    precision from column ``c``'s blocks ``keys[offs[t]:offs[t + 1]]``, in one walk down block ``c`` with a pointer
    per other block. Counts exact (needs ``2 n_c n_t < 2**63``), weights compensated; ``ptr``, ``acc`` scratch."""
    k = offs.shape[0] - 1
    zero = mass[0] * 0 if mass.shape[0] else 0
    # per block: the mass above the current key (compensated, acc[t, 0:2]), the
    # block's mass (acc[t, 2]) and the compensation of u2[t] (acc[t, 3])
    for t in range(k):
        ptr[t] = offs[t + 1]  # the first key above the current one
        u2[t] = 0
        ts = zero
        tc = zero
        for q in range(offs[t], offs[t + 1]):
            ts, tc = add(ts, tc, mass[q])
        acc[t, 0] = 0
        acc[t, 1] = 0
        acc[t, 2] = ts + tc
        acc[t, 3] = 0
    ps = 0.0
    pc = 0.0
    s = 0.0
    sc = 0.0
    for i in range(offs[c + 1] - 1, offs[c] - 1, -1):
        key = keys[i]
        a = mass[i]
        fsum = 0.0
        for t in range(k):
            if t == c:
                continue
            q = ptr[t]
            hs = acc[t, 0]
            hc = acc[t, 1]
            while q > offs[t] and keys[q - 1] > key:
                q -= 1
                hs, hc = add(hs, hc, mass[q])
            ptr[t] = q
            acc[t, 0] = hs
            acc[t, 1] = hc
            es = hs
            ec = hc
            if q > offs[t] and keys[q - 1] == key:
                es, ec = add(hs, hc, mass[q - 1])
            ge = es + ec
            gt = hs + hc
            # 2 * below + equal = 2 (total - ge) + (ge - gt)
            u2[t], acc[t, 3] = add(u2[t], acc[t, 3], a * (2 * (acc[t, 2] - ge) + (ge - gt)))
            fsum += ge
        if a == 0:  # (a weight scaled below the smallest float)
            continue
        af = a * 1.0
        ps, pc = add(ps, pc, af)
        tp = ps + pc
        s, sc = add(s, sc, af * tp / (tp + fsum))
    for t in range(k):
        u2[t] += acc[t, 3]
    tp = ps + pc
    return (s + sc) / tp if tp > 0.0 else 0.0
