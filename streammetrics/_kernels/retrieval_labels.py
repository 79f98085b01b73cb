"""Kernel of the label-ranking scores of a multilabel score matrix (one row at a time)."""

from __future__ import annotations

import numpy as np

from ._jit import kernel


def label_ranking_rows(t, s, out) -> None:
    """Write per row of 0/1 labels ``t`` and scores ``s``: its label ranking
    average precision, coverage and ranking loss, into ``out[i, 0:3]`` (each
    row's labels ranked by numpy: a sort compiled into the kernel costs
    seconds at first use)."""
    _label_ranking_rows(t, s, np.argsort(-s, axis=1, kind="stable"), out)


@kernel
def _label_ranking_rows(t, s, orders, out):
    n, m = t.shape
    for i in range(n):
        order = orders[i]
        n_rel = 0
        for j in range(m):
            if t[i, j] != 0:
                n_rel += 1
        lrap, coverage, wrong = 0.0, 0.0, 0.0
        rel_seen, irr_above = 0, 0
        a = 0
        while a < m:  # tie groups, highest score first
            b = a + 1
            while b < m and s[i, order[b]] == s[i, order[a]]:
                b += 1
            group_rel = 0
            for x in range(a, b):
                if t[i, order[x]] != 0:
                    group_rel += 1
            rel_seen += group_rel
            if group_rel:
                lrap += group_rel * rel_seen / b  # each true label of the group: rel_seen of the b at least as high
                coverage = b
                wrong += group_rel * (irr_above + (b - a) - group_rel)  # ties count as wrong
            irr_above += (b - a) - group_rel
            a = b
        out[i, 0] = 1.0 if n_rel == 0 or n_rel == m else lrap / n_rel
        out[i, 1] = coverage
        out[i, 2] = wrong / (n_rel * (m - n_rel)) if 0 < n_rel < m else 0.0
