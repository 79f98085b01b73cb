"""Kernels of the ranking and retrieval scores of queries.

A query is a segment of rows (relevance, score). Its rows are ranked by score,
highest first; among equal scores the less relevant row comes first (the
pessimistic order, whatever order the rows came in), except for DCG and NDCG
with ``tie_avg``, which average the gains of tied rows over their positions as
scikit-learn's ``dcg_score`` does. A row is relevant when its relevance is
positive.

Per query and per cut-off ``k`` the values are, in this column order:
NDCG@k, DCG@k, AP@k, precision@k, recall@k, hit@k and RR@k; then the
reciprocal rank of the first relevant row and the R-precision, and last 1 if
the query has no relevant row (else 0).
"""

from __future__ import annotations

import numpy as np

from ._jit import inline, inline_ir, kernel

#: the values per cut-off, in column order
PER_K = ("ndcg", "dcg", "map", "precision", "recall", "hit_rate", "mrr")

_SMALL = 64  # segments up to this long are sorted by insertion


@inline_ir
def _ranked(rel, score, lo, hi, r, sc, ideal, reach, order, ideals, at):
    """Rank rows ``lo:hi``: ``r`` and ``sc`` their relevances and scores by
    decreasing score (ties: least relevant first), ``ideal`` the ``reach``
    highest relevances in decreasing order. A segment longer than ``_SMALL``
    reads its rows' ranks from ``order[at:]`` and its relevances in
    decreasing order from ``ideals[at:]``."""
    m = hi - lo
    if m <= _SMALL:  # insertion sorts of the values themselves
        for i in range(m):
            s, v = score[lo + i], rel[lo + i]
            j = i
            while j > 0 and (sc[j - 1] < s or (sc[j - 1] == s and r[j - 1] > v)):
                sc[j] = sc[j - 1]
                r[j] = r[j - 1]
                j -= 1
            sc[j] = s
            r[j] = v
        held = 0
        for i in range(m):
            v = rel[lo + i]
            if held == reach and not v > ideal[held - 1]:
                continue
            j = held if held < reach else reach - 1
            while j > 0 and ideal[j - 1] < v:
                ideal[j] = ideal[j - 1]
                j -= 1
            ideal[j] = v
            held = min(held + 1, reach)
        return
    for i in range(m):  # ranked by numpy beforehand (see query_values)
        r[i] = rel[order[at + i]]
        sc[i] = score[order[at + i]]
        ideal[i] = ideals[at + i]


@inline
def _gain(v, exp_gain):
    return 2.0**v - 1.0 if exp_gain else v


def query_values(starts, ends, rel, score, w, ks, exp_gain, tie_avg, log_base, out) -> None:
    """Write the values of query ``i`` (rows ``starts[i]:ends[i]``) into
    ``out[i]`` (``len(ks) * 7 + 3`` columns), and the mean of its weights ``w``
    after them where ``w`` is not empty; DCG discounts use ``log_base`` (NDCG
    is a ratio: the base cancels). Segments longer than ``_SMALL`` rows are
    ranked here by numpy (a sort compiled into the kernel costs seconds at
    first use), the others by insertion in the kernel."""
    long = np.flatnonzero(ends - starts > _SMALL)
    lengths = ends[long] - starts[long]
    seg = np.repeat(np.arange(long.shape[0]), lengths)
    rows = starts[long][seg] + np.arange(seg.shape[0]) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    r, s = rel[rows], score[rows]
    order = rows[np.lexsort((r, -s, seg))]  # by segment, score decreasing, then least relevant first
    ideals = r[np.lexsort((-r, seg))]  # each segment's relevances, decreasing
    _query_values(starts, ends, rel, score, w, ks, exp_gain, tie_avg, log_base, out, order, ideals)


@kernel
def _query_values(starts, ends, rel, score, w, ks, exp_gain, tie_avg, log_base, out, order, ideals):
    """:func:`query_values`, given the ranks of the long segments' rows."""
    nq = starts.shape[0]
    longest = 0
    for q in range(nq):  # (loops: an array's max() compiles for a third of a second)
        longest = max(longest, ends[q] - starts[q])
    r = np.empty(max(longest, 1), np.float64)
    sc = np.empty(max(longest, 1), np.float64)
    ideal = np.empty(max(longest, 1), np.float64)
    kmax = 1
    for k in ks:
        kmax = max(kmax, k)
    reach = max(longest, kmax)
    disc = np.empty(reach + 1, np.float64)  # disc[i]: discount of position i (0-based)
    scale = np.log(log_base)
    for i in range(reach + 1):
        disc[i] = scale / np.log(i + 2.0)
    nk = ks.shape[0]
    at = 0  # where the next long segment's ranks start in ``order``
    for q in range(nq):
        lo, hi = starts[q], ends[q]
        m = hi - lo
        _ranked(rel, score, lo, hi, r, sc, ideal, min(m, kmax), order, ideals, at)
        if m > _SMALL:
            at += m
        n_rel = 0
        first = -1
        for i in range(m):
            if r[i] > 0:
                n_rel += 1
                if first < 0:
                    first = i
        row = out[q]
        for j in range(nk):
            k = ks[j]
            cut = min(k, m)
            dcg = 0.0
            a = 0
            while a < cut:  # with tie_avg a tie group's gains averaged over its positions, else one position a group
                b = a + 1
                g = _gain(r[a], exp_gain)
                while tie_avg and b < m and sc[b] == sc[a]:
                    g += _gain(r[b], exp_gain)
                    b += 1
                d = 0.0
                for i in range(a, min(b, cut)):
                    d += disc[i]
                dcg += g / (b - a) * d
                a = b
            idcg = 0.0
            hits = 0
            ap = 0.0
            for i in range(cut):
                idcg += _gain(ideal[i], exp_gain) * disc[i]
                if r[i] > 0:
                    hits += 1
                    ap += hits / (i + 1.0)
            c = 7 * j
            row[c] = dcg / idcg if idcg > 0 else 0.0
            row[c + 1] = dcg
            row[c + 2] = ap / n_rel if n_rel else 0.0
            row[c + 3] = hits / k
            row[c + 4] = hits / n_rel if n_rel else 0.0
            row[c + 5] = 1.0 if hits else 0.0
            row[c + 6] = 1.0 / (first + 1.0) if 0 <= first < k else 0.0
        c = 7 * nk
        row[c] = 1.0 / (first + 1.0) if first >= 0 else 0.0
        hits = 0
        for i in range(n_rel):
            if r[i] > 0:
                hits += 1
        row[c + 1] = hits / n_rel if n_rel else 0.0
        row[c + 2] = 0.0 if n_rel else 1.0
        if w.shape[0]:
            total = 0.0
            for i in range(lo, hi):
                total += w[i]
            row[c + 3] = total / m
