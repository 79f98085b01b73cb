"""Running totals of a rank state's masses, for queries at any threshold.

The points of a rank state are its distinct scores in increasing order with
the positive and negative mass at each (``ab[0]``, ``ab[1]``). A threshold
query needs, for every cut ``k``, the mass of the ``k`` highest scores (the
rows called positive at a threshold just at or below the ``k``-th highest
score) and, with weights, the mass of the rest summed on its own so that a
small remainder keeps its relative precision. Integer counts are summed
exactly with numpy; float weights with these compensated running sums.
"""

from __future__ import annotations

from ._jit import kernel
from .compensated import add

__all__ = ["running_sums"]


@kernel
def running_sums(ab, from_top, out):
    """Compensated running totals of the ``(2, m)`` float masses ``ab``.

    With ``from_top``, ``out[:, k]`` is the mass of the ``k`` highest scores
    (``out[:, 0] = 0``); otherwise the mass of the ``k`` lowest. ``out`` has
    shape ``(2, m + 1)``.
    """
    m = ab.shape[1]
    for r in range(2):
        s = 0.0
        c = 0.0
        out[r, 0] = 0.0
        for k in range(m):
            j = m - 1 - k if from_top else k
            s, c = add(s, c, ab[r, j])
            out[r, k + 1] = s + c
    return out
