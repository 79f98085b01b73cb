"""Log-loss and Brier totals of 0/1 labels against predicted probabilities.

State: ``sums``, a ``float64[3, 2]`` array of compensated pairs (see
:mod:`.common`): the total weight, the log-loss total and the Brier total. A
zero-length ``w`` means "unweighted" (every weight 1, the total weight exact).

The kernel validates the batch in the same pass and writes the state only when
every label is 0/1 and every probability lies in [0, 1]; it returns 0 when the
batch was folded in, 1 for a bad label, 2 for a bad probability.
"""

from __future__ import annotations

import math

from ._jit import kernel
from .common import BLOCK, neumaier_add

__all__ = ["probability_update", "LOG_FLOOR"]

#: The specification floors both p and 1 - p at 1e-12 before the logarithm.
LOG_FLOOR = 1e-12


@kernel
def probability_update(y, p, w, sums):
    """Fold one batch into ``sums``; return the status code (module docstring)."""
    n = y.shape[0]
    weighted = w.shape[0] > 0
    sw = cw = sl = cl = sb = cb = 0.0
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        bw = bl = bb = 0.0
        for i in range(start, stop):
            yi = y[i]
            pi = p[i]
            y1 = yi == 1
            if not (y1 or yi == 0):
                return 1
            if not (pi >= 0.0 and pi <= 1.0):
                return 2
            q = pi if y1 else 1.0 - pi  # probability given to the outcome
            loss = -math.log(max(q, LOG_FLOOR))
            d = pi - y1
            if weighted:
                wi = w[i]
                bw += wi
                bl += wi * loss
                bb += wi * (d * d)
            else:
                bl += loss
                bb += d * d
        if not weighted:
            bw = float(stop - start)
        sw, cw = neumaier_add(sw, cw, bw)
        sl, cl = neumaier_add(sl, cl, bl)
        sb, cb = neumaier_add(sb, cb, bb)
    t, c = neumaier_add(sums[0, 0], sums[0, 1], sw)
    sums[0, 0] = t
    sums[0, 1] = c + cw
    t, c = neumaier_add(sums[1, 0], sums[1, 1], sl)
    sums[1, 0] = t
    sums[1, 1] = c + cl
    t, c = neumaier_add(sums[2, 0], sums[2, 1], sb)
    sums[2, 0] = t
    sums[2, 1] = c + cb
    return 0
