"""Rank kernels: sorting scores, counting Mann–Whitney pairs, merging sorted runs.

Scores are sorted as 64-bit integer *keys*: the bits of a float64 with the sign
bit flipped for positives and every bit flipped for negatives, so that integer
order is float order (``-0.0`` is keyed as ``+0.0``; NaN never gets here).
Keys alone are sorted by numpy's vectorised sort (on the benchmark machine as
fast as a radix sort on distinct scores and twice as fast on rounded ones),
keys with weights by the radix sort of :mod:`.sort` (``np.argsort`` and a
gather are three to six times slower); see
:func:`streammetrics.metrics.ranking.sorting.sort_classes`. The kernels take
the scores' bits (``scores.view(np.uint64)``, made by the caller).

A batch is first split by label, in the same pass that validates it:
positives' keys go to the front of a buffer and negatives' keys to the back
(:func:`append_split`; an accumulator's buffer of pending rows takes batch
after batch into its free middle), and each part is sorted on its own. The
sorted parts then give, in one merge pass, either ``2U`` directly (the
one-shot AUC) or a *run*: the distinct scores in increasing order with the
positive and negative count (or weight) at each, ``(scores[m], ab[2, m])``
with ``ab[0]`` positives and ``ab[1]`` negatives (:func:`run_into`, which also
merges an existing run in the same pass), or ``2U`` of a run and sorted parts
together without writing their run (:func:`u2_run_keys`). In bounded memory the sorted parts
are grouped into items straight away (:func:`bin_keys`), without a run.

``2U`` is twice the Mann–Whitney statistic of the positive class with midranks,
``sum_i pos_i * (2 * negatives below score_i + neg_i)``: an integer for counts.

Bounded-memory states hold *items* ``(lo, hi, ab, cw)``: a range of scores
``[lo, hi]`` (a point when ``lo == hi``), the positive and negative mass in it,
and ``cw[0]`` (twice the concordance already known among its own pairs, ties
counting one half) and ``cw[1]`` (the mass of its own pairs whose order is
unknown). Items are kept sorted by ``(lo, hi)``; their ranges may overlap, and
pairs between overlapping items count as unknown.

Kernels that validate return a status: ``0`` valid, ``1`` a label is not 0/1,
``2`` a score is NaN or infinite. They write only into scratch buffers or into
the free slots of a pending buffer, never into the rows an accumulator holds.

Large outputs (runs, merged runs, sort scratch) are allocated by the caller
with numpy and filled here (the ``*_into`` kernels): numpy backs big arrays
with transparent huge pages where the system offers them, and touching fresh
memory through 4 KB pages (what an allocation inside a kernel gets) made a
merge of two 4M-entry runs nearly twice as slow on a virtual machine.
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, inline_ir, kernel
from .compensated import add
from .sort import sort_keys, sort_payload

__all__ = [
    "split_keys",
    "split_keys_weighted",
    "split_scores",
    "partition_below",
    "floats_below",
    "float_keys",
    "score_keys",
    "key_bits",
    "append_split",
    "append_split_weighted",
    "sort_keys",
    "sort_parts_payload",
    "sort_payload",
    "sort_two_payload",
    "u2_sorted",
    "u2_run_keys",
    "run_into",
    "run_into_weighted",
    "merge_into",
    "merge_records",
    "pack_records",
    "records_cut",
    "u2_int",
    "u2_int128",
    "u2_float",
    "points_as_items",
    "few_scores",
    "bin_keys",
    "bin_keys_weighted",
    "merge_items",
    "sweep",
    "compact",
]

_SIGN = np.uint64(0x8000000000000000)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_BYTE = np.uint64(255)
_EXPONENT = np.uint64(0x7FF0000000000000)


# ------------------------------------------------------------------ keys
@inline_ir
def _key(bits):
    """Order-preserving integer key of float64 bits (``-0.0`` as ``+0.0``)."""
    if bits == _SIGN:
        bits = _ZERO
    mask = _ZERO - (bits >> np.uint64(63))  # all ones for negatives
    return bits ^ (mask | _SIGN)


@inline_ir
def _key_bits(k):
    """The float64 bits of a key (the inverse of :func:`_key`)."""
    if k & _SIGN:
        return k ^ _SIGN
    return ~k


def score_keys(scores):
    """The keys of float64 scores (see :func:`_key`)."""
    return key_bits(np.ascontiguousarray(scores, dtype=np.float64).view(np.uint64))


@kernel
def key_bits(bits):
    """The keys of float64 scores given as their bits (``scores.view(np.uint64)``)."""
    out = np.empty(bits.shape[0], np.uint64)
    for i in range(bits.shape[0]):
        out[i] = _key(bits[i])
    return out


@inline_ir
def _split_into(y, bits, out, front, back, as_keys):
    """Validate rows and write each one's key (``as_keys``) or its score's bits
    (``-0.0`` as ``+0.0``) into ``out``: positives up from ``front``,
    negatives down from ``back - 1``. Returns ``(status, f, b)``: status 1 for
    a label not 0/1, 2 for a score not finite, the next free slots otherwise."""
    f = front
    b = back - 1
    bad_y = False
    bad_s = False
    for i in range(y.shape[0]):
        yi = y[i]
        y1 = yi == 1
        bad_y |= not (y1 or yi == 0)
        bi = bits[i]
        bad_s |= (bi & _EXPONENT) == _EXPONENT  # NaN or +-inf: every exponent bit set
        if as_keys:
            v = _key(bi)
        else:
            v = _ZERO if bi == _SIGN else bi
        # write to both ends of the free slots, advance one: no branch on the label
        out[f] = v
        out[b] = v
        f += y1
        b -= 1 - y1
    return 1 if bad_y else (2 if bad_s else 0), f, b


@kernel
def append_split(y, bits, keys, front, back):
    """Validate one batch and write its keys into the free slots ``keys[front:back]``.

    ``bits`` are the scores' float64 bits (``s.view(np.uint64)``: the caller
    makes the view, so no kernel compiles one). Positives' keys go up from
    ``front``, negatives' keys down from ``back`` (in no particular order);
    ``back - front`` must be at least the batch length. Returns ``(status,
    front, back)``: the new bounds, or the old ones when the batch is bad
    (then only free slots were written).
    """
    status, f, b = _split_into(y, bits, keys, front, back, True)
    if status:
        return status, front, back
    return 0, f, b + 1


@kernel
def append_split_weighted(y, bits, w, keys, vals, front, back):
    """Like :func:`append_split`, carrying the weights; rows of weight 0 are dropped."""
    n = y.shape[0]
    f = front
    b = back - 1
    bad_y = False
    bad_s = False
    for i in range(n):
        yi = y[i]
        y1 = yi == 1
        bad_y |= not (y1 or yi == 0)
        bi = bits[i]
        bad_s |= (bi & _EXPONENT) == _EXPONENT
        k = _key(bi)
        wi = w[i]
        keep = wi != 0.0
        keys[f] = k
        keys[b] = k
        vals[f] = wi
        vals[b] = wi
        f += y1 and keep
        b -= (not y1) and keep
    if bad_y:
        return 1, front, back
    if bad_s:
        return 2, front, back
    return 0, f, b + 1


@kernel
def split_keys(y, bits, keys):
    """Validate one batch and write its keys split by label.

    Positives' keys fill ``keys[:n_pos]`` and negatives' keys ``keys[n_pos:]``
    (in no particular order). Returns ``(status, n_pos)``.
    """
    status, front, _ = append_split(y, bits, keys, np.intp(0), y.shape[0])
    return status, front


@kernel
def split_scores(y, bits, out):
    """Like :func:`split_keys`, writing the scores' own bits (``-0.0`` as
    ``+0.0``) instead of their keys: viewed as float64 they sort as the keys
    do, and numpy sorts float64 faster than 64-bit integers on CPUs without
    AVX-512 (whose 64-bit integer compares AVX2 lacks). Returns ``(status, n_pos)``."""
    status, f, _ = _split_into(y, bits, out, np.intp(0), y.shape[0], False)
    return status, f


@kernel
def split_keys_weighted(y, bits, w, keys, vals):
    """Like :func:`split_keys`, carrying the weights; rows of weight 0 are dropped.

    Positives fill ``keys[:front]``, negatives ``keys[back:]``. Returns
    ``(status, front, back)``.
    """
    return append_split_weighted(y, bits, w, keys, vals, np.intp(0), y.shape[0])


# --------------------------------------------------------------- sorting
# sort_keys and sort_payload are the radix sorts of :mod:`.sort`


@kernel
def sort_parts_payload(keys, vals, front, back, tk, tv):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place, moving ``vals`` along."""
    sort_payload(keys[:front], vals[:front], tk, tv)
    sort_payload(keys[back:], vals[back:], tk, tv)


@kernel
def sort_two_payload(keys, vals, front, back):
    """Sort ``keys[:front]`` and ``keys[back:]`` in place, moving ``vals`` along."""
    rest = keys.shape[0] - back
    size = rest if rest > front else front
    sort_parts_payload(keys, vals, front, back, np.empty(size, np.uint64), np.empty(size, vals.dtype))


@kernel
def partition_below(x, cut):
    """Move the values of ``x`` below ``cut`` to its front, in place (in no
    particular order); returns how many there are. Branch free: each step
    swaps the value read with the first one not below ``cut``."""
    j = 0
    for i in range(x.shape[0]):
        v = x[i]
        x[i] = x[j]
        x[j] = v
        j += v < cut
    return j


@kernel
def floats_below(k, cut):
    """In place: replace each key of ``k`` by its score's float64 bits (the
    inverse of :func:`_key`), the keys below ``cut`` moved to the front as
    :func:`partition_below` moves them (in no particular order); returns how
    many there are (none for ``cut = 0``). numpy sorts float64 faster than
    uint64 on some CPUs: the keys are sorted as floats, then made keys again
    by :func:`float_keys`."""
    j = 0
    for i in range(k.shape[0]):
        v = k[i]
        below = v < cut
        mask = _ZERO - (~v >> np.uint64(63))  # all ones for the keys of negatives
        k[i] = k[j]
        k[j] = v ^ (mask | _SIGN)
        j += below
    return j


@kernel
def float_keys(k):
    """In place: replace the float64 bits ``k`` (no NaN, no ``-0.0``) by their keys,
    the inverse of :func:`floats_below`."""
    for i in range(k.shape[0]):
        v = k[i]
        k[i] = v ^ ((_ZERO - (v >> np.uint64(63))) | _SIGN)


# ------------------------------------------------------- counting pairs
@kernel
def u2_sorted(kp, kn):
    """``2U`` (int64) from the sorted keys of the positives and the negatives.

    The caller guarantees ``2 * n_pos * n_neg < 2**63``.
    """
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    u2 = 0
    i = 0
    j = 0
    while i < n1:
        k = kp[i]
        c = 0
        while i < n1 and kp[i] == k:
            i += 1
            c += 1
        while j < n0 and kn[j] < k:
            j += 1
        e = j
        while e < n0 and kn[e] == k:
            e += 1
        u2 += c * (j + e)  # 2 * below + equal = j + e
    return u2


_TOP = np.uint64(0xFFFFFFFFFFFFFFFF)


@kernel
def u2_run_keys(b1, ab1, kp, kn):
    """``(2U, n_pos, n_neg)`` (int64) of the run ``(s1, ab1)`` (its scores as
    bits, ``b1 = s1.view(np.uint64)``) and sorted keys ``kp``, ``kn`` together.

    ``2U`` is what :func:`u2_int` gives on the run :func:`run_into` would
    write from the same inputs, counted in one pass that writes nothing. The
    caller guarantees ``2 * n_pos * n_neg < 2**63`` over all three. Branch
    free but for the end of each input and a new score (as predictable as
    distinct scores make it): 1.4x faster than branching on the run's head.
    """
    m1 = b1.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    r = 0
    i = 0
    j = 0
    below = 0  # negatives below the current score
    seen = 0  # positives below the current score
    p = 0  # positives and negatives at the current score
    q = 0
    u2 = 0
    last = _ZERO
    while r < m1 or i < n1 or j < n0:
        a = kp[i] if i < n1 else _TOP
        b = kn[j] if j < n0 else _TOP
        if r < m1:
            c = _key(b1[r])
            ra = ab1[0, r]
            rb = ab1[1, r]
        else:
            c = _TOP
            ra = 0
            rb = 0
        k = b if b < a else a
        k = c if c < k else k
        tr = c == k
        tp = a == k
        tn = b == k
        if k != last:
            u2 += p * (2 * below + q)
            below += q
            seen += p
            p = 0
            q = 0
            last = k
        p += ra * tr + tp
        q += rb * tr + tn
        r += tr
        i += tp
        j += tn
    return u2 + p * (2 * below + q), seen + p, below + q


@kernel
def run_into(b1, ab1, kp, kn, bits, ab):
    """Write the run holding the run ``(s1, ab1)`` (its scores as bits ``b1``)
    and sorted keys ``kp``, ``kn``.

    ``kp`` are positives' keys and ``kn`` negatives' keys, each sorted, with
    repeats; ``s1``, ``ab1`` (int64 counts) is a run, possibly empty. The
    merged run is written to ``bits`` (the uint64 view of its float64
    scores) and ``ab`` (room for all three inputs); returns its length. One
    branch-free pass: each step takes the smallest key of the three heads and
    adds every head equal to it, so unpredictable labels cost no mispredicted
    branches (1.5x faster than branching on them, for distinct scores).
    """
    m1 = b1.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    r = 0
    i = 0
    j = 0
    m = -1
    last = _ZERO
    while r < m1 or i < n1 or j < n0:
        a = kp[i] if i < n1 else _TOP
        b = kn[j] if j < n0 else _TOP
        c = _key(b1[r]) if r < m1 else _TOP
        k = b if b < a else a
        k = c if c < k else k
        tr = c == k
        tp = a == k
        tn = b == k
        if m < 0 or k != last:
            m += 1
            bits[m] = _key_bits(k)
            ab[0, m] = 0
            ab[1, m] = 0
            last = k
        if tr:
            ab[0, m] += ab1[0, r]
            ab[1, m] += ab1[1, r]
        ab[0, m] += tp
        ab[1, m] += tn
        r += tr
        i += tp
        j += tn
    return m + 1


@kernel
def run_into_weighted(b1, ab1, kp, vp, kn, vn, bits, ab):
    """Like :func:`run_into` with the keys' weights ``vp``, ``vn`` (``ab`` float64)."""
    m1 = b1.shape[0]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    r = 0
    i = 0
    j = 0
    m = -1
    last = _ZERO
    while r < m1 or i < n1 or j < n0:
        a = kp[i] if i < n1 else _TOP
        b = kn[j] if j < n0 else _TOP
        c = _key(b1[r]) if r < m1 else _TOP
        k = b if b < a else a
        k = c if c < k else k
        tr = c == k
        tp = a == k
        tn = b == k
        if m < 0 or k != last:
            m += 1
            bits[m] = _key_bits(k)
            ab[0, m] = 0.0
            ab[1, m] = 0.0
            last = k
        if tr:
            ab[0, m] += ab1[0, r]
            ab[1, m] += ab1[1, r]
        if tp:
            ab[0, m] += vp[i]
        if tn:
            ab[1, m] += vn[j]
        r += tr
        i += tp
        j += tn
    return m + 1


@kernel
def merge_into(s1, ab1, s2, ab2, s, ab):
    """Merge two runs into ``s``, ``ab`` (room for both), adding the masses of
    scores present in both; returns the merged length."""
    m1 = s1.shape[0]
    m2 = s2.shape[0]
    i = 0
    j = 0
    m = 0
    while i < m1 and j < m2:
        a = s1[i]
        b = s2[j]
        if a < b:
            s[m] = a
            ab[0, m] = ab1[0, i]
            ab[1, m] = ab1[1, i]
            i += 1
        elif b < a:
            s[m] = b
            ab[0, m] = ab2[0, j]
            ab[1, m] = ab2[1, j]
            j += 1
        else:
            s[m] = a
            ab[0, m] = ab1[0, i] + ab2[0, j]
            ab[1, m] = ab1[1, i] + ab2[1, j]
            i += 1
            j += 1
        m += 1
    while i < m1:
        s[m] = s1[i]
        ab[0, m] = ab1[0, i]
        ab[1, m] = ab1[1, i]
        i += 1
        m += 1
    while j < m2:
        s[m] = s2[j]
        ab[0, m] = ab2[0, j]
        ab[1, m] = ab2[1, j]
        j += 1
        m += 1
    return m


@kernel
def merge_k(scores, ab, starts, s, out):
    """Merge ``k`` sorted runs held one after another in ``scores``, ``ab``
    (run ``i`` is ``starts[i]:starts[i + 1]``) into ``s``, ``out``; the masses
    of a score held by several runs are added in the runs' order (as merging
    them pairwise, the first two first, adds them). Returns the merged length."""
    k = starts.shape[0] - 1
    pos = starts[:k].copy()
    m = 0
    while True:
        best = -1
        v = 0.0
        for i in range(k):
            if pos[i] < starts[i + 1] and (best < 0 or scores[pos[i]] < v):
                best = i
                v = scores[pos[i]]
        if best < 0:
            return m
        j = pos[best]
        p = ab[0, j]
        q = ab[1, j]
        pos[best] = j + 1
        for i in range(best + 1, k):
            j = pos[i]
            if j < starts[i + 1] and scores[j] == v:
                p = p + ab[0, j]
                q = q + ab[1, j]
                pos[i] = j + 1
        s[m] = v
        out[0, m] = p
        out[1, m] = q
        m += 1


@inline
def _beats(head, rank, a, b):
    """Source ``a``'s head comes before source ``b``'s: a lower score, or the same
    score and a lower rank (the index; past every index once used up, whose
    head is then ``+inf``)."""
    x = head[a]
    y = head[b]
    return x < y or (x == y and rank[a] < rank[b])


@inline
def _next_head(sc, pos, ends, head, rank, i, leaves):
    """Advance source ``i`` past its head; read its next score, or mark it used up."""
    r = pos[i] + 1
    pos[i] = r
    if r < ends[i]:
        head[i] = sc[r, 0]
    else:
        head[i] = np.inf
        rank[i] = i + leaves


@inline
def _replay(tree, head, rank, w, leaves):
    """Play source ``w``, whose head changed, up from its leaf: at each node the
    loser stays and the winner goes on; the overall winner lands in ``tree[0]``."""
    n = (leaves + w) >> 1
    while n >= 1:
        t = tree[n]
        if _beats(head, rank, t, w):
            tree[n] = w
            w = t
        n >>= 1
    tree[0] = w


@kernel
def merge_records(sc, val, starts, ends, s, out):
    """Merge ``k`` sorted runs held as records in one buffer into ``s``, ``out``.

    ``sc`` and ``val`` are two views of the same ``(T, 3)`` records (score,
    positive, negative): ``sc`` as float64 (the scores, column 0) and ``val``
    as the masses' dtype (columns 1 and 2); run ``i`` is rows
    ``starts[i]:ends[i]``, its scores increasing and distinct. The masses of
    a score held by several runs are added in the runs' order (the sums
    :func:`merge_k` makes, to the bit): the runs' heads play a tournament
    (a tree of losers: one comparison per level for each entry taken, where
    a binary heap makes two), ordered by score and then by run, so equal
    scores come out lowest run first. ``O(log k)`` per entry where
    :func:`merge_k` scans all ``k`` heads. Returns the merged length.
    """
    k = starts.shape[0]
    if k == 0:
        return 0
    leaves = 1
    while leaves < k:
        leaves *= 2
    pos = np.zeros(leaves, np.int64)
    head = np.full(leaves, np.inf)
    rank = np.arange(leaves, 2 * leaves)  # the padding leaves are used up from the start
    for i in range(k):
        pos[i] = starts[i]
        if starts[i] < ends[i]:
            head[i] = sc[starts[i], 0]
            rank[i] = i
    # the first tournament: winners bottom up, each node keeping its loser
    win = np.empty(2 * leaves, np.int64)
    tree = np.empty(leaves, np.int64)
    for i in range(leaves):
        win[leaves + i] = i
    for n in range(leaves - 1, 0, -1):
        a = win[2 * n]
        b = win[2 * n + 1]
        if _beats(head, rank, a, b):
            win[n] = a
            tree[n] = b
        else:
            win[n] = b
            tree[n] = a
    tree[0] = win[1] if leaves > 1 else 0
    m = 0
    while rank[tree[0]] < leaves:
        i = tree[0]
        r = pos[i]
        v = head[i]
        p = val[r, 1]
        q = val[r, 2]
        while True:  # take the winner, then every other run's entry of the same score
            _next_head(sc, pos, ends, head, rank, i, leaves)
            _replay(tree, head, rank, i, leaves)
            i = tree[0]
            if rank[i] >= leaves or head[i] != v:
                break
            r = pos[i]
            p = p + val[r, 1]
            q = q + val[r, 2]
        s[m] = v
        out[0, m] = p
        out[1, m] = q
        m += 1
    return m


@kernel
def pack_records(scores, ab, sc, val, at):
    """Write a run ``(scores, ab)`` as records from row ``at`` of ``sc``/``val``
    (two views of the same ``(T, 3)`` records, as in :func:`merge_records`)."""
    for i in range(scores.shape[0]):
        sc[at + i, 0] = scores[i]
        val[at + i, 1] = ab[0, i]
        val[at + i, 2] = ab[1, i]


@kernel
def records_cut(sc, a, b, bound, right):
    """The first row in ``a:b`` of records ``sc`` (scores in column 0, increasing)
    whose score is above ``bound`` (``right``) or at least ``bound``."""
    lo = a
    hi = b
    while lo < hi:
        mid = (lo + hi) >> 1
        x = sc[mid, 0]
        if x < bound or (right and x == bound):
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def u2_int(ab):
    """``2U`` of a run of int64 counts; needs ``2 * n_pos * n_neg < 2**63``."""
    cum = 0
    u2 = 0
    for i in range(ab.shape[1]):
        q = ab[1, i]
        u2 += ab[0, i] * (2 * cum + q)
        cum += q
    return u2


@kernel
def _mul128(a, b):
    """The 128-bit product of two uint64 as ``(high, low)``."""
    mask = np.uint64(0xFFFFFFFF)
    half = np.uint64(32)
    a0 = a & mask
    a1 = a >> half
    b0 = b & mask
    b1 = b >> half
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> half) + (p01 & mask) + (p10 & mask)
    low = (p00 & mask) | (mid << half)
    high = p11 + (p01 >> half) + (p10 >> half) + (mid >> half)
    return high, low


@kernel
def u2_int128(ab):
    """``2U`` of a run of int64 counts as a 128-bit ``(high, low)`` pair.

    For counts whose ``2 * n_pos * n_neg`` passes ``2**63`` (merged streams of
    billions of rows): ``2 * cum + q <= 2 * n_neg`` fits a uint64.
    """
    high = _ZERO
    low = _ZERO
    cum = _ZERO
    two = np.uint64(2)
    for i in range(ab.shape[1]):
        p = np.uint64(ab[0, i])
        q = np.uint64(ab[1, i])
        th, tl = _mul128(p, two * cum + q)
        s = low + tl
        carry = _ONE if s < low else _ZERO
        low = s
        high = high + th + carry
        cum += q
    return high, low


@kernel
def u2_float(ab, scale_pos, scale_neg):
    """``2U * scale_pos * scale_neg`` of a run of float64 weights (compensated).

    With ``scale_pos = 1 / n_pos`` and ``scale_neg = 1 / n_neg`` this is twice
    the AUC, and no product of large weights can overflow.
    """
    cs = 0.0
    cc = 0.0
    us = 0.0
    uc = 0.0
    for i in range(ab.shape[1]):
        q = ab[1, i] * scale_neg
        us, uc = add(us, uc, (ab[0, i] * scale_pos) * (2.0 * (cs + cc) + q))
        cs, cc = add(cs, cc, q)
    return us + uc


@kernel
def masses_carry(ab, carry):
    """Add each class's mass of a run of float64 weights to the compensated
    sums ``carry = [sp, cp, sn, cn]`` (in place): a run read in chunks gives
    the same sums, to the bit, as read at once."""
    sp = carry[0]
    cp = carry[1]
    sn = carry[2]
    cn = carry[3]
    for i in range(ab.shape[1]):
        sp, cp = add(sp, cp, ab[0, i])
        sn, cn = add(sn, cn, ab[1, i])
    carry[0] = sp
    carry[1] = cp
    carry[2] = sn
    carry[3] = cn


@kernel
def u2_float_carry(ab, scale_pos, scale_neg, carry):
    """:func:`u2_float` continued over a run read in chunks: ``carry =
    [cs, cc, us, uc]`` (the scaled negative mass below, and ``2U`` so far,
    compensated) is updated in place; ``carry[2] + carry[3]`` at the end is the
    value :func:`u2_float` gives on the whole run, to the bit."""
    cs = carry[0]
    cc = carry[1]
    us = carry[2]
    uc = carry[3]
    for i in range(ab.shape[1]):
        q = ab[1, i] * scale_neg
        us, uc = add(us, uc, (ab[0, i] * scale_pos) * (2.0 * (cs + cc) + q))
        cs, cc = add(cs, cc, q)
    carry[0] = cs
    carry[1] = cc
    carry[2] = us
    carry[3] = uc


# ------------------------------------------------------- bounded memory
@kernel
def points_as_items(scores, ab):
    """Items of a run: points whose own pairs are all ties (known, one half each)."""
    m = scores.shape[0]
    cw = np.zeros((2, m), np.float64)
    for i in range(m):
        cw[0, i] = float(ab[0, i]) * float(ab[1, i])
    return scores, scores.copy(), ab, cw


@kernel
def few_scores(kp, kn, cap):
    """Whether sorted keys ``kp`` and ``kn`` hold at most ``cap`` distinct keys together.

    Counts each part first (predictable passes) and walks both only when that
    does not settle it.
    """
    dp = 0
    for i in range(kp.shape[0]):
        dp += i == 0 or kp[i] != kp[i - 1]
    dn = 0
    for i in range(kn.shape[0]):
        dn += i == 0 or kn[i] != kn[i - 1]
    if dp + dn <= cap:
        return True
    if dp > cap or dn > cap:
        return False
    common = 0
    i = 0
    j = 0
    while i < kp.shape[0] and j < kn.shape[0]:
        a = kp[i]
        b = kn[j]
        if a < b:
            i += 1
        elif b < a:
            j += 1
        else:
            common += 1
            while i < kp.shape[0] and kp[i] == a:
                i += 1
            while j < kn.shape[0] and kn[j] == a:
                j += 1
    return dp + dn - common <= cap


@kernel
def _part_mass(pre, a, b, weighted):
    """Mass of rows ``a:b`` of one class: a count, or from inclusive prefix sums."""
    if not weighted:
        return float(b - a)
    if b == a:
        return 0.0
    return pre[b - 1] - (pre[a - 1] if a > 0 else 0.0)


@kernel
def _group_cells(kp, kn, pre_p, pre_n, weighted, budget, mass_cap, cuts, limit, bounds):
    """Group sorted rows along the dyadic cells of their keys (see :func:`bin_keys`).

    The rows are first cut at the keys ``cuts`` (sorted), and a cell is a
    group only if it holds no rows of another segment, so the groups are the
    largest cells within the limits that do not hold rows on both sides of a
    cut (what splitting every cell from the top would give, without visiting
    the cells around every cut). Writes the groups' row ranges ``(pos start, pos
    end, neg start, neg end)`` into the columns of ``bounds`` while it has
    room, and returns the number of groups, or -1 as soon as there are more
    than ``limit``.
    """
    room = bounds.shape[1]
    n1 = kp.shape[0]
    n0 = kn.shape[0]
    st = np.empty((4, 140), np.int64)
    st_l = np.empty(140, np.int64)
    st_k = np.empty(140, np.uint64)
    g = 0
    i = 0
    j = 0
    c = 0
    while i < n1 or j < n0:
        # the next segment: rows below the first cut above the smallest row
        if j >= n0 or (i < n1 and kp[i] < kn[j]):
            first = kp[i]
        else:
            first = kn[j]
        while c < cuts.shape[0] and cuts[c] <= first:
            c += 1
        ap = i
        an = j
        if c < cuts.shape[0]:
            edge = cuts[c]
            while i < n1 and kp[i] < edge:
                i += 1
            while j < n0 and kn[j] < edge:
                j += 1
        else:
            i = n1
            j = n0
        # the nearest rows outside the segment: a cell holding one of them
        # holds rows on both sides of a cut and is split further
        has_below = ap > 0 or an > 0
        below = _ZERO
        if ap > 0:
            below = kp[ap - 1]
        if an > 0 and kn[an - 1] > below:
            below = kn[an - 1]
        has_above = i < n1 or j < n0
        above = _ZERO
        if i < n1:
            above = kp[i]
        if j < n0 and (i >= n1 or kn[j] < above):
            above = kn[j]
        # dyadic cells within the segment, from the smallest one holding it
        if ap == i:
            last = kn[j - 1]
        elif an == j:
            last = kp[i - 1]
        else:
            last, other = kp[i - 1], kn[j - 1]
            last = other if other > last else last
        lev = _bit_length(first ^ last)
        st[0, 0] = ap
        st[1, 0] = i
        st[2, 0] = an
        st[3, 0] = j
        st_l[0] = lev
        st_k[0] = _ZERO if lev == 64 else (first >> np.uint64(lev)) << np.uint64(lev)
        depth = 1
        while depth > 0:
            depth -= 1
            a1 = st[0, depth]
            b1 = st[1, depth]
            a0 = st[2, depth]
            b0 = st[3, depth]
            if a1 == b1 and a0 == b0:
                continue
            if a1 == b1:
                lo_k = kn[a0]
                hi_k = kn[b0 - 1]
            elif a0 == b0:
                lo_k = kp[a1]
                hi_k = kp[b1 - 1]
            else:
                lo_k, other = kp[a1], kn[a0]
                lo_k = other if other < lo_k else lo_k
                hi_k, other = kp[b1 - 1], kn[b0 - 1]
                hi_k = other if other > hi_k else hi_k
            emit = lo_k == hi_k  # a single score
            if not emit:
                lev_c = st_l[depth]
                base_c = st_k[depth]
                clean = not has_below or below < base_c
                if has_above:
                    clean &= lev_c < 64 and above - base_c >= (_ONE << np.uint64(lev_c))
                if clean:
                    p = _part_mass(pre_p, a1, b1, weighted)
                    q = _part_mass(pre_n, a0, b0, weighted)
                    emit = not (p * q > budget or p + q > mass_cap)
            if emit:
                if g < room:
                    bounds[0, g] = a1
                    bounds[1, g] = b1
                    bounds[2, g] = a0
                    bounds[3, g] = b0
                g += 1
                if g > limit:
                    return -1
                continue
            half = st_l[depth] - 1
            base = st_k[depth]
            mid = base + (_ONE << np.uint64(half))
            c1 = a1 + np.searchsorted(kp[a1:b1], mid)
            c0 = a0 + np.searchsorted(kn[a0:b0], mid)
            # the upper half first on the stack, so the lower one is emitted first
            st[0, depth] = c1
            st[1, depth] = b1
            st[2, depth] = c0
            st[3, depth] = b0
            st_l[depth] = half
            st_k[depth] = mid
            st[0, depth + 1] = a1
            st[1, depth + 1] = c1
            st[2, depth + 1] = a0
            st[3, depth + 1] = c0
            st_l[depth + 1] = half
            st_k[depth + 1] = base
            depth += 2
    return g


@kernel
def _group_items(kp, vp, kn, vn, weighted, bounds, g, ab):
    """The items of the groups ``bounds[:, :g]``, their masses written into ``ab``."""
    lo = np.empty(g, np.uint64)
    hi = np.empty(g, np.uint64)
    cw = np.zeros((2, g), np.float64)
    for t in range(g):
        ap = bounds[0, t]
        bp = bounds[1, t]
        an = bounds[2, t]
        bn = bounds[3, t]
        if ap == bp:
            first = kn[an]
            last = kn[bn - 1]
        elif an == bn:
            first = kp[ap]
            last = kp[bp - 1]
        else:
            first, other = kp[ap], kn[an]
            first = other if other < first else first
            last, other = kp[bp - 1], kn[bn - 1]
            last = other if other > last else last
        lo[t] = _key_bits(first)
        hi[t] = _key_bits(last)
        # the group's own 2U: sum over positives of 2 * negatives below + equal
        below = 0.0
        k2 = 0.0
        sp = 0.0
        j = an
        i = ap
        while i < bp:
            k = kp[i]
            c = 0.0
            while i < bp and kp[i] == k:
                c += vp[i] if weighted else 1.0
                i += 1
            while j < bn and kn[j] < k:
                below += vn[j] if weighted else 1.0
                j += 1
            e = j
            eq = 0.0
            while e < bn and kn[e] == k:
                eq += vn[e] if weighted else 1.0
                e += 1
            k2 += c * (2.0 * below + eq)
            sp += c
        if weighted:
            sn = 0.0
            for r in range(an, bn):
                sn += vn[r]
            ab[0, t] = sp
            ab[1, t] = sn
        else:
            ab[0, t] = bp - ap
            ab[1, t] = bn - an
        cw[0, t] = k2
    return lo.view(np.float64), hi.view(np.float64), cw


@kernel
def bin_keys(kp, kn, budget, mass_cap, cuts, limit):
    """Items of sorted positive keys ``kp`` and negative keys ``kn`` (counts).

    The rows are grouped along the dyadic cells of :func:`compact` (halves,
    quarters, ... of the ``2**64`` keys), straight from the sorted keys: a
    cell becomes one item when it holds a single score, or when its ``pos *
    neg`` mass is at most ``budget`` and its ``pos + neg`` mass at most
    ``mass_cap``. The rows are first cut at the sorted keys ``cuts``: the
    caller passes the lower edges of the bins the items will join, and one
    past their upper edges, so a group never straddles a bin and its pairs
    with a bin are unknown only when it lies inside the bin's range, as for
    single points.
    The order of every pair inside a group is known: ``cw[0]`` is twice their
    concordance (ties one half), ``cw[1]`` is 0. Cell masses come from
    binary searches, so the work is linear in the rows and the cuts plus the
    cells times a logarithm, and nothing the size of the rows is allocated. Returns ``(g,
    lo, hi, ab, cw)`` with ``g`` items sorted by ``(lo, hi)``, or ``g = -1``
    and empty arrays when there would be more than ``limit``.
    """
    none = np.zeros(0, np.float64)
    g = _group_cells(kp, kn, none, none, False, budget, mass_cap, cuts, limit,
                     np.empty((4, 0), np.int64))
    if g < 0:
        return -1, none, none, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float64)
    bounds = np.empty((4, g), np.int64)
    _group_cells(kp, kn, none, none, False, budget, mass_cap, cuts, limit, bounds)
    ab = np.empty((2, g), np.int64)
    lo, hi, cw = _group_items(kp, none, kn, none, False, bounds, g, ab)
    return g, lo, hi, ab, cw


@kernel
def bin_keys_weighted(kp, vp, kn, vn, pre_p, pre_n, budget, mass_cap, cuts, limit):
    """Like :func:`bin_keys` with the rows' weights ``vp``, ``vn``.

    ``pre_p`` and ``pre_n`` are the inclusive prefix sums of the weights; they
    serve only to choose the cells, every mass of an item is summed anew.
    """
    g = _group_cells(kp, kn, pre_p, pre_n, True, budget, mass_cap, cuts, limit,
                     np.empty((4, 0), np.int64))
    none = np.zeros(0, np.float64)
    if g < 0:
        return -1, none, none, np.zeros((2, 0), np.float64), np.zeros((2, 0), np.float64)
    bounds = np.empty((4, g), np.int64)
    _group_cells(kp, kn, pre_p, pre_n, True, budget, mass_cap, cuts, limit, bounds)
    ab = np.empty((2, g), np.float64)
    lo, hi, cw = _group_items(kp, vp, kn, vn, True, bounds, g, ab)
    return g, lo, hi, ab, cw


@kernel
def merge_items(lo1, hi1, ab1, cw1, lo2, hi2, ab2, cw2):
    """Merge two item lists sorted by ``(lo, hi)``; equal points become one."""
    m1 = lo1.shape[0]
    m2 = lo2.shape[0]
    cap = m1 + m2
    lo = np.empty(cap, np.float64)
    hi = np.empty(cap, np.float64)
    ab = np.empty((2, cap), ab1.dtype)
    cw = np.empty((2, cap), np.float64)
    i = 0
    j = 0
    m = 0
    while i < m1 or j < m2:
        if j >= m2:
            take = 1
        elif i >= m1:
            take = 2
        elif lo1[i] < lo2[j] or (lo1[i] == lo2[j] and hi1[i] < hi2[j]):
            take = 1
        elif lo2[j] < lo1[i] or (lo1[i] == lo2[j] and hi2[j] < hi1[i]):
            take = 2
        elif lo1[i] == hi1[i]:
            take = 3  # the same point in both
        else:
            take = 1  # two bins with the same range: keep both
        if take == 1:
            lo[m] = lo1[i]
            hi[m] = hi1[i]
            ab[0, m] = ab1[0, i]
            ab[1, m] = ab1[1, i]
            cw[0, m] = cw1[0, i]
            cw[1, m] = cw1[1, i]
            i += 1
        elif take == 2:
            lo[m] = lo2[j]
            hi[m] = hi2[j]
            ab[0, m] = ab2[0, j]
            ab[1, m] = ab2[1, j]
            cw[0, m] = cw2[0, j]
            cw[1, m] = cw2[1, j]
            j += 1
        else:
            p = ab1[0, i] + ab2[0, j]
            q = ab1[1, i] + ab2[1, j]
            lo[m] = lo1[i]
            hi[m] = hi1[i]
            ab[0, m] = p
            ab[1, m] = q
            cw[0, m] = float(p) * float(q)
            cw[1, m] = 0.0
            i += 1
            j += 1
        m += 1
    if m == cap:
        return lo, hi, ab, cw
    ab_out = np.empty((2, m), ab1.dtype)
    cw_out = np.empty((2, m), np.float64)
    for r in range(2):
        for i in range(m):  # a loop, not a slice assignment: nothing to shape-check
            ab_out[r, i] = ab[r, i]
            cw_out[r, i] = cw[r, i]
    return lo[:m].copy(), hi[:m].copy(), ab_out, cw_out


@kernel
def _heap_push(heap, size, idx, key):
    pos = size
    heap[pos] = idx
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[heap[parent]] <= key[heap[pos]]:
            break
        t = heap[parent]
        heap[parent] = heap[pos]
        heap[pos] = t
        pos = parent
    return size + 1


@kernel
def _heap_pop(heap, size, key):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and key[heap[left + 1]] < key[heap[left]]:
            child = left + 1
        if key[heap[pos]] <= key[heap[child]]:
            break
        t = heap[child]
        heap[child] = heap[pos]
        heap[pos] = t
        pos = child
    return top, size


@kernel
def _sweep(lo, hi, ab, cw, idx, k, heap):
    """Known and unknown pair mass among the items ``idx[:k]`` (sorted by ``(lo, hi)``).

    Returns ``(k2, unknown)``: ``k2`` is twice the known concordance (the
    items' own ``cw[0]``, plus ``pos(Y) * neg(X)`` for every item X entirely
    below item Y), ``unknown`` the mass of pairs whose order is not known (the
    items' own ``cw[1]``, plus ``pos(X) neg(Y) + pos(Y) neg(X)`` for every two
    items whose closed ranges overlap). ``heap`` is int64 scratch of length
    ``k`` or more.
    """
    zero = ab[0, idx[0]] * 0
    below_p = zero
    below_n = zero
    seen_p = zero
    seen_n = zero
    k2 = 0.0
    unknown = 0.0
    size = 0
    for t in range(k):
        j = idx[t]
        edge = lo[j]
        while size > 0 and hi[heap[0]] < edge:
            x, size = _heap_pop(heap, size, hi)
            below_p += ab[0, x]
            below_n += ab[1, x]
        p = float(ab[0, j])
        q = float(ab[1, j])
        k2 += cw[0, j] + 2.0 * p * float(below_n)
        unknown += cw[1, j] + p * float(seen_n - below_n) + q * float(seen_p - below_p)
        size = _heap_push(heap, size, j, hi)
        seen_p += ab[0, j]
        seen_n += ab[1, j]
    return k2, (0.0 if 0.0 > unknown else unknown)


@kernel
def sweep(lo, hi, ab, cw):
    """``(k2, unknown)`` of all the items: see :func:`_sweep`."""
    m = lo.shape[0]
    return _sweep(lo, hi, ab, cw, np.arange(m), m, np.empty(m, np.int64))


@kernel
def _bit_length(x):
    n = 0
    for s in (32, 16, 8, 4, 2, 1):
        if x >> np.uint64(s):
            x >>= np.uint64(s)
            n += s
    if x:
        n += 1
    return n


@kernel
def _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g):
    """Write the bin of items ``members[:k]`` as output ``g``."""
    first = members[0]
    top = hi[first]
    sp = ab[0, first]
    sn = ab[1, first]
    for t in range(1, k):
        i = members[t]
        if hi[i] > top:
            top = hi[i]
        sp += ab[0, i]
        sn += ab[1, i]
    out_lo[g] = lo[first]
    out_hi[g] = top
    out_ab[0, g] = sp
    out_ab[1, g] = sn
    if k == 1:
        out_cw[0, g] = cw[0, first]
        out_cw[1, g] = cw[1, first]
    else:
        k2, unknown = _sweep(lo, hi, ab, cw, members, k, heap)
        out_cw[0, g] = k2
        out_cw[1, g] = unknown


@kernel
def compact(lo, hi, ab, cw, budget, mass_cap):
    """Group items into bins along the dyadic cells of the score keys.

    The key space (``2**64`` keys) is split top down into halves, quarters,
    ...: the items in a cell become one bin when the cell's ``pos * neg``
    mass is at most ``budget`` and its ``pos + neg`` mass at most
    ``mass_cap``, or when it holds a single item. Items are never split: an
    item whose own cell (the smallest cell holding its range) is the cell
    being split stays a bin of its own (several such items become one), and
    the split goes on for the rest; pairs between it and the data later
    binned inside its range stay unknown. Any two cells are nested or
    disjoint, so bins of different shards never chain into ever wider ranges.
    Each bin keeps its tight score range and, from :func:`_sweep`, the known
    and unknown mass of its own pairs. Items must be sorted by ``(lo, hi)``;
    the bins come out in cell order (sort them by ``(lo, hi)`` afterwards).
    """
    m = lo.shape[0]
    klo = np.empty(m, np.uint64)
    level = np.empty(m, np.int64)
    blo = lo.view(np.uint64)
    bhi = hi.view(np.uint64)
    for i in range(m):
        a = _key(blo[i])
        klo[i] = a
        level[i] = _bit_length(a ^ _key(bhi[i]))
    taken = np.zeros(m, np.bool_)
    members = np.empty(m, np.int64)
    heap = np.empty(m, np.int64)
    out_lo = np.empty(m, np.float64)
    out_hi = np.empty(m, np.float64)
    out_ab = np.empty((2, m), ab.dtype)
    out_cw = np.empty((2, m), np.float64)
    # explicit DFS stack of cells: (first item, end item, level, first key)
    st_a = np.empty(140, np.int64)
    st_b = np.empty(140, np.int64)
    st_l = np.empty(140, np.int64)
    st_k = np.empty(140, np.uint64)
    st_a[0] = 0
    st_b[0] = m
    st_l[0] = 64
    st_k[0] = _ZERO
    depth = 1
    g = 0
    while depth > 0:
        depth -= 1
        a = st_a[depth]
        b = st_b[depth]
        lev = st_l[depth]
        base = st_k[depth]
        p = 0.0
        q = 0.0
        count = 0
        stuck = 0
        for i in range(a, b):
            if not taken[i]:
                count += 1
                p += float(ab[0, i])
                q += float(ab[1, i])
                stuck += level[i] >= lev
        if count == 0:
            continue
        if count == 1 or stuck == count or not (p * q > budget or p + q > mass_cap):
            k = 0
            for i in range(a, b):
                if not taken[i]:
                    members[k] = i
                    k += 1
            _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g)
            g += 1
            continue
        if stuck:
            k = 0
            for i in range(a, b):
                if not taken[i] and level[i] >= lev:
                    members[k] = i
                    k += 1
                    taken[i] = True
            _emit(lo, hi, ab, cw, members, k, heap, out_lo, out_hi, out_ab, out_cw, g)
            g += 1
        half = lev - 1
        mid = base + (_ONE << np.uint64(half))
        c = a + np.searchsorted(klo[a:b], mid)
        st_a[depth] = c
        st_b[depth] = b
        st_l[depth] = half
        st_k[depth] = mid
        st_a[depth + 1] = a
        st_b[depth + 1] = c
        st_l[depth + 1] = half
        st_k[depth + 1] = base
        depth += 2
    ab_out = np.empty((2, g), ab.dtype)
    cw_out = np.empty((2, g), np.float64)
    for r in range(2):
        for i in range(g):
            ab_out[r, i] = out_ab[r, i]
            cw_out[r, i] = out_cw[r, i]
    return out_lo[:g].copy(), out_hi[:g].copy(), ab_out, cw_out
