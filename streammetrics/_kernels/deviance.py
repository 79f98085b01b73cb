"""Kernels of the Tweedie deviance: the row terms of a batch (folded by
:func:`~.row_sums.sum_rows`) and the first value outside a power's domain.

A row adds four terms: 1 (its weight), ``y``, its unit deviance
``d(y, p)`` and ``d(y, 1)``, whence D²'s denominator (see
:class:`~streammetrics.TweedieDeviance`'s notes).

``kind`` picks scikit-learn's formula for the power: 0 the normal
(``power == 0``), 1 Poisson, 2 Gamma, 3 the general one (the others,
negative powers included). Each is spelled in scikit-learn's order of
operations, so a row's deviance is the one it computes (three powers a
row at the general powers, which is most of a fold's time: Numba calls the
scalar ``pow`` of the C library).

Domains are lower bounds ``lo <= v < inf`` (NaN fails both): :data:`FINITE`,
the lowest float, for any finite value, ``0.0`` for ``v >= 0`` and
:data:`TINY`, the smallest positive float, for ``v > 0``. Status codes: 0
folded, 1 a value of ``y`` outside its domain, 2 one of ``p``.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import inline, kernel, named

__all__ = ["FINITE", "TINY", "unit_deviances", "tweedie_terms", "first_below"]

#: the lowest finite float64: ``v >= FINITE`` (and ``v < inf``) is ``v`` finite
FINITE = -1.7976931348623157e308
#: the smallest positive float64: ``v >= TINY`` is ``v > 0``
TINY = 5e-324


@inline
def _floored(d):
    """A deviance rounded below zero is 0 (a NaN stays NaN)."""
    return 0.0 if d < 0.0 else d


@inline
def unit_deviances(y, mu, power, kind):
    """``(d(y, mu), d(y, 1))``, the unit deviances of the Tweedie power ``power``
    (of ``kind``) at ``mu`` and at 1; the power of ``y`` both need is taken once."""
    if kind == 0:
        d = (y - mu) * (y - mu)
        d1 = (y - 1.0) * (y - 1.0)
    elif kind == 1:
        t = 0.0 if y == 0.0 else y * math.log(y / mu)
        t1 = 0.0 if y == 0.0 else y * math.log(y)
        d = 2.0 * (t - y + mu)
        d1 = 2.0 * (t1 - y + 1.0)
    elif kind == 2:
        d = 2.0 * (math.log(mu / y) + y / mu - 1.0)
        d1 = 2.0 * (math.log(1.0 / y) + y - 1.0)
    else:
        q = y if y > 0.0 else 0.0
        a = math.pow(q, 2.0 - power) / ((1.0 - power) * (2.0 - power))
        d = 2.0 * (a - y * math.pow(mu, 1.0 - power) / (1.0 - power) + math.pow(mu, 2.0 - power) / (2.0 - power))
        d1 = 2.0 * (a - y / (1.0 - power) + 1.0 / (2.0 - power))
    return _floored(d), _floored(d1)


def _terms_of(kind: int):
    """The terms kernel of one ``kind``: a constant of the closure, so each
    compiles the formula of its power alone (as ``_jit`` makes kernels of a
    flag known at the call)."""

    def row_terms(y, mu, power, ylo, plo, lo, slots, values, col, base):
        for i in range(slots.shape[0]):
            yi = y[lo + i]
            pi = mu[lo + i]
            if not (yi >= ylo and yi < np.inf):
                return 1
            if not (pi >= plo and pi < np.inf):
                return 2
            for t in range(4):
                slots[i, col + t] = base + t
            d, d1 = unit_deviances(yi, pi, power, kind)
            values[i, col] = 1.0
            values[i, col + 1] = yi
            values[i, col + 2] = d
            values[i, col + 3] = d1
        return 0

    return kernel(named(row_terms, f"tweedie_terms_{kind}"))


#: ``tweedie_terms[kind](y, mu, power, ylo, plo, lo, slots, values, col, base)``:
#: the row terms of rows ``lo, lo + 1, ...``: 1, ``y``, ``d(y, mu)`` and
#: ``d(y, 1)`` (slots ``base .. base + 3``, columns ``col .. col + 3``); nothing
#: is written past a row outside its domain (``ylo``, ``plo``): its status.
tweedie_terms = tuple(_terms_of(kind) for kind in range(4))


@kernel
def first_below(v, lo):
    """Index of the first value outside ``lo <= v < inf`` (NaN included), else -1."""
    for i in range(v.shape[0]):
        if not (v[i] >= lo and v[i] < np.inf):
            return i
    return -1
