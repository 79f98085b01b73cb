"""Counter-based Poisson(1) weights for the keyed bootstrap, and the one-pass
fold of a batch into every replicate of a linear state.

A row's weight in replicate ``r`` is a pure function of ``(seed, key, r)``:
seed and key mix into a row hash ``h`` (splitmix64's finaliser); replicates
``2q`` and ``2q + 1`` share one more mix of ``h + (q + 1) * c``, whose two
32-bit halves are uniforms ``u``. The count is the number of cut points
``round(2**32 P(X <= k))`` that ``u`` reaches (the first six compared in one
vectorized pass, the rest only when some replicate passes the sixth). No
generator state is carried from row to row, so any batching, sharding or
order gives every row the same weights.

:func:`replicate_sums` adds every row's terms ``vals[i, j]`` into slots
``slots[i, j]`` of all replicates, times each replicate's weight: naive sums
within blocks of :data:`~.compensated.BLOCK` rows, compensated across blocks,
replicate by replicate in row order (independent of how replicates are
grouped on threads).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, inline_ir, kernel
from .compensated import BLOCK, add

__all__ = ["POISSON1_CDF", "POISSON1_CUTS", "RANK_COLUMNS", "poisson_weights", "replicate_sums", "replicate_ranks"]


def _poisson1_cdf(kmax: int = 20) -> np.ndarray:
    p = [math.exp(-1.0) / math.factorial(k) for k in range(kmax + 1)]
    return np.cumsum(np.array(p, np.float64))


#: P(X <= k) for X ~ Poisson(1), k = 0..20 (P(X > 20) is below 2**-53)
POISSON1_CDF = _poisson1_cdf()


def _cuts() -> np.ndarray:
    scaled = np.round(POISSON1_CDF * 2.0**32)
    keep = int(np.argmax(scaled >= 2.0**32))  # the first cut no 32-bit integer reaches
    return scaled[:keep].astype(np.uint64)


#: the cut points of Poisson(1) on 32-bit uniforms: a uniform ``u`` draws the
#: count ``#{k : u >= POISSON1_CUTS[k]}`` (0..12)
POISSON1_CUTS = _cuts().astype(np.uint32)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_RSTEP = np.uint64(0xD1B54A32D192ED03)
_SALT = np.uint64(0x632BE59BD9B4E019)
_LOW = np.uint64(0xFFFFFFFF)


@inline
def _mix(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@inline_ir
def _row_hash(s, key):
    return _mix(s ^ (np.uint64(key) * _GOLDEN))


#: the cut points every uniform is compared with; a uniform past the last of
#: them (probability below 1e-4) is counted on against the rest
_HEAD = 6


@inline_ir
def _draw_pairs(h, q0, nq, sc, uu, kk):
    """Counts of replicates ``2 q0 .. 2 (q0 + nq) - 1`` of the row hashed ``h`` into ``kk``
    (``uu`` int32 scratch for the shifted uniforms; both of at least ``2 nq``
    entries; ``sc`` the signed cuts of :func:`_replicates`, at least ``_HEAD + 1``)."""
    for q in range(nq):
        x = _mix(h + np.uint64(q0 + q + 1) * _RSTEP)
        uu[2 * q] = np.int32(np.int64(x >> np.uint64(32)) - 2147483648)
        uu[2 * q + 1] = np.int32(np.int64(x & _LOW) - 2147483648)
    m = 2 * nq
    c0, c1, c2, c3, c4, c5 = sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]
    top = np.int32(-2147483648)
    for r in range(m):  # the head cuts in one expression, so that the replicates vectorize
        u = uu[r]
        kk[r] = (
            np.int32(u >= c0)
            + np.int32(u >= c1)
            + np.int32(u >= c2)
            + np.int32(u >= c3)
            + np.int32(u >= c4)
            + np.int32(u >= c5)
        )
        top = u if u > top else top
    if top >= sc[_HEAD]:  # a count of 7 or more somewhere: about one row in a hundred
        for r in range(m):
            u = uu[r]
            for j in range(_HEAD, sc.shape[0]):
                kk[r] += np.int32(u >= sc[j])


@inline_ir
def _replicates(seed, r0, R, cuts):
    """``(h, q0, nq, off, sc)`` of replicates ``r0 .. r0 + R - 1``: the seed's hash,
    their pairs ``q0 .. q0 + nq - 1`` (replicate ``r0 + r`` is entry ``r + off``
    of a draw) and the signed cuts: the cut points shifted by ``-2**31`` into
    int32, in the same order as the uint32 uniforms shifted alike, compared
    with the signed comparisons that the vector units have."""
    q0 = r0 // 2
    sc = np.empty(cuts.shape[0], np.int32)
    for j in range(cuts.shape[0]):
        sc[j] = np.int32(np.int64(cuts[j]) - 2147483648)
    h = _mix(np.uint64(seed) * _GOLDEN + _SALT)
    return h, q0, (r0 + R + 1) // 2 - q0, r0 - 2 * q0, sc


# The kernels below each set up their own scratch for :func:`_draw_pairs`: made
# in a helper and returned, the two arrays are no longer known to be distinct.


@kernel
def poisson_weights(seed, keys, first, r0, w, out, cuts):
    """Fill ``out`` (replicates ``r0, r0 + 1, ...`` x rows) with Poisson(1) weights times ``w``.

    ``keys`` holds one int64 key per row; when it is empty the keys are
    ``first, first + 1, ...`` (the rows' positions in the stream). ``w`` holds
    the rows' own weights, or is empty (weights of 1). ``cuts`` is
    :data:`POISSON1_CUTS`.
    """
    R, m = out.shape
    keyed = keys.shape[0] > 0
    weighted = w.shape[0] > 0
    s, q0, nq, off, sc = _replicates(seed, r0, R, cuts)
    uu = np.empty(2 * nq, np.int32)
    kk = np.empty(2 * nq, np.int32)
    for i in range(m):
        key = keys[i] if keyed else first + i
        _draw_pairs(_row_hash(s, key), q0, nq, sc, uu, kk)
        for r in range(R):
            out[r, i] = kk[r + off] * w[i] if weighted else kk[r + off]


@kernel
def replicate_sums(seed, keys, first, r0, w, slots, vals, out, cuts):
    """Add every row's weighted terms into replicates ``r0 .. r0 + R - 1``.

    ``slots`` (int32, rows x P) and ``vals`` (float64, rows x P): row ``i``
    adds ``weight * vals[i, j]`` to slot ``slots[i, j]``, where ``weight`` is
    its Poisson(1) count in the replicate times ``w[i]`` (``w`` None: 1).
    ``out`` (float64, slots x R x 2) holds compensated pairs, added into.
    Keys as in :func:`poisson_weights`, but ``None`` rather than empty (as
    ``w``: a first use compiles only its own loop).
    """
    S, R = out.shape[0], out.shape[1]
    m, P = slots.shape
    s, q0, nq, off, sc = _replicates(seed, r0, R, cuts)
    uu = np.empty(2 * nq, np.int32)
    kk = np.empty(2 * nq, np.int32)
    kf = np.empty(R, np.float64)
    # slot c's sums at acc[c R + r], zeroed block by block (one shape of float
    # allocation in the kernel, and a loop rather than a slice assignment:
    # each compiles on its own on a cold first use)
    acc = np.empty(S * R, np.float64)
    for start in range(0, m, BLOCK):
        stop = m if m < start + BLOCK else start + BLOCK
        for c in range(S * R):
            acc[c] = 0.0
        for i in range(start, stop):
            key = first + i if keys is None else keys[i]
            _draw_pairs(_row_hash(s, key), q0, nq, sc, uu, kk)
            wi = 1.0 if w is None else w[i]
            for r in range(R):
                kf[r] = kk[r + off]
            for j in range(P):
                v = vals[i, j] * wi
                if v != 0.0:
                    row = acc[slots[i, j] * R :]
                    for r in range(R):
                        row[r] += kf[r] * v
        for c in range(S):
            for r in range(R):
                t, e = add(out[c, r, 0], out[c, r, 1], acc[c * R + r])
                out[c, r, 0] = t
                out[c, r, 1] = e


@inline
def _add_into(s, c, r, x):
    """Add ``x`` into the compensated pair ``(s[r], c[r])`` (Neumaier's step,
    written with selects rather than a branch, so that a loop over pairs
    vectorizes)."""
    a = s[r]
    t = a + x
    big = abs(a) >= abs(x)
    c[r] += ((a if big else x) - t) + (x if big else a)
    s[r] = t


@inline
def _precision(tp, fp):
    """``tp / (tp + fp)``, and 0 where nothing is called positive."""
    called = tp + fp
    return tp / (called if called > 0.0 else 1.0)


#: the columns of :func:`replicate_ranks`' output
RANK_COLUMNS = ("n_pos", "n_neg", "u", "u_err", "ap", "ap_err")


#: below ``(1 - _SLACK) x m`` no mass ``t`` has ``t / m`` reach ``x``, however the division rounds
_SLACK = 2.0**-50


@inline
def _reach(xs, roc, prc, at, lim, r, tp0, fp0, tp1, fp1, pos, neg):
    """Fill replicate ``r``'s curves at the rates ``xs`` the step from the point
    ``(tp0, fp0)`` to ``(tp1, fp1)`` reaches: the TPR linear between the two
    points at each rate ``fp0 / neg <= x < fp1 / neg``, the precision at
    ``(tp1, fp1)`` at each recall ``tp0 / pos < x <= tp1 / pos``. ``at[r]``,
    ``at[R + r]`` hold the next rate of the ROC and of the PR curve, and get
    them; ``lim[r]``, ``lim[R + r]`` get masses the walk must pass to reach them
    (a test without a division, for every row)."""
    G = xs.shape[0]
    R = roc.shape[0]
    g = at[r]
    if fp1 > fp0 and g < G and xs[g] < fp1 / neg:
        x0, x1, y0, y1 = fp0 / neg, fp1 / neg, tp0 / pos, tp1 / pos
        while g < G and xs[g] < x1:
            roc[r, g] = y0 + (xs[g] - x0) / (x1 - x0) * (y1 - y0)
            g += 1
        at[r] = g
    q = at[R + r]
    if tp1 > tp0 and q < G and xs[q] <= tp1 / pos:
        x1, p1 = tp1 / pos, tp1 / (tp1 + fp1)
        while q < G and xs[q] <= x1:
            prc[r, q] = p1
            q += 1
        at[R + r] = q
    lim[r] = (1.0 - _SLACK) * xs[g] * neg - 1e-300 if g < G else np.inf
    lim[R + r] = (1.0 - _SLACK) * xs[q] * pos - 1e-300 if q < G else np.inf


@kernel
def replicate_ranks(seed, keys, r0, w, s, y, out, cuts, xs, roc, prc):
    """The rank sums of replicates ``r0 .. r0 + R - 1`` from rows sorted by score,
    and their ROC and PR curves at the rates ``xs`` (if any).

    ``s`` (float64) holds the scores in increasing order (walked from the
    highest), ``y`` (uint8) the 0/1 labels, ``keys`` (int64) the rows' keys
    and ``w`` their own weights (empty: 1). Each row weighs its Poisson(1)
    count in the replicate (drawn as :func:`poisson_weights` draws it) times
    its weight; the rows of one score form one threshold. ``out`` (float64,
    R x 6, overwritten) gets per replicate, in the order of
    :data:`RANK_COLUMNS`: the positive and negative mass, the Mann-Whitney
    ``U`` (the mass of pairs of a positive above a negative, tied pairs
    counting one half) as a compensated pair, and ``sum_t (positive mass at
    t) * precision(t)`` (the average precision times the positive mass) as a
    compensated pair.

    With rates ``xs`` (increasing, in [0, 1]; empty: none) ``out[:, :2]`` must
    hold the masses on entry (from a call without rates) and ``roc`` and
    ``prc`` (R x rates) get each replicate's ROC curve read at the false
    positive rates ``xs`` (linear between the last point at or below each
    rate and the next) and its PR curve at the recalls ``xs`` (the precision
    of the highest threshold reaching each, 1 at recall 0), as a ``RankAUC``
    of the replicate's weights gives them. A replicate lacking a class gets
    arbitrary curves.
    """
    R = out.shape[0]
    m = s.shape[0]
    weighted = w.shape[0] > 0
    h0, q0, nq, off, sc = _replicates(seed, r0, R, cuts)
    uu = np.empty(2 * nq, np.int32)
    kk = np.empty(2 * nq, np.int32)
    # one shape of float allocation, filled here (each of np.zeros and of a
    # 2-D shape compiles on its own on a cold first use)
    tp = np.empty(R, np.float64)  # the masses above the threshold being walked
    fp = np.empty(R, np.float64)
    gp = np.empty(R, np.float64)  # the masses at it
    gn = np.empty(R, np.float64)
    us = np.empty(R, np.float64)  # U and AP as compensated pairs (sum, error)
    uc = np.empty(R, np.float64)
    aps = np.empty(R, np.float64)
    apc = np.empty(R, np.float64)
    for r in range(R):
        tp[r] = fp[r] = gp[r] = gn[r] = us[r] = uc[r] = aps[r] = apc[r] = 0.0
    G = xs.shape[0]
    pos = np.empty(R, np.float64)  # the masses the curves are read with (a class absent: 1)
    neg = np.empty(R, np.float64)
    at = np.empty(2 * R, np.int64)  # each replicate's next rate on its ROC, then on its PR curve
    lim = np.empty(2 * R, np.float64)
    for r in range(R):
        pos[r] = out[r, 0] if G and out[r, 0] > 0.0 else 1.0
        neg[r] = out[r, 1] if G and out[r, 1] > 0.0 else 1.0
        at[r] = 0
        at[R + r] = 1 if G and xs[0] <= 0.0 else 0  # recall 0: precision 1
        if at[R + r]:
            prc[r, 0] = 1.0
        lim[r] = lim[R + r] = -1.0  # (set by the first _reach)
    # rows from the highest score down, each drawn at one call site (the draw
    # is copied into the kernel: a second site doubled its compile); the rows
    # of one score are summed into gp, gn and form one threshold after its
    # lowest row (a score of one row alike), which empties them again
    for i in range(m - 1, -1, -1):
        _draw_pairs(_row_hash(h0, keys[i]), q0, nq, sc, uu, kk)
        wi = w[i] if weighted else 1.0
        g = gp if y[i] == 1 else gn
        for r in range(R):
            g[r] += kk[r + off] * wi
        if i == 0 or s[i - 1] != s[i]:  # the score's lowest row
            hit = False  # (a test that vectorizes, before the calls of the few replicates past a limit)
            for r in range(R if G else 0):
                hit |= (tp[r] + gp[r] > lim[R + r]) | (fp[r] + gn[r] > lim[r])
            if hit:
                for r in range(R):
                    if tp[r] + gp[r] > lim[R + r] or fp[r] + gn[r] > lim[r]:
                        _reach(xs, roc, prc, at, lim, r, tp[r], fp[r], tp[r] + gp[r], fp[r] + gn[r], pos[r], neg[r])
            for r in range(R):
                _add_into(us, uc, r, gn[r] * (tp[r] + 0.5 * gp[r]))
                fp[r] += gn[r]
                tp[r] += gp[r]
                _add_into(aps, apc, r, gp[r] * _precision(tp[r], fp[r]))
                gp[r] = gn[r] = 0.0
    for r in range(R):
        for j in range(at[r], G):  # past the last point: its TPR, 1
            roc[r, j] = 1.0
        out[r, 0] = tp[r]
        out[r, 1] = fp[r]
        out[r, 2] = us[r]
        out[r, 3] = uc[r]
        out[r, 4] = aps[r]
        out[r, 5] = apc[r]
