"""The prepared batch: arrays converted and checked once for declared inputs.

:func:`prepare` makes an immutable :class:`Batch`, which
``Accumulator.fold(batch)`` folds. ``update`` converts the same way
(:func:`convert`) but leaves the value checks to the folding kernel's pass
(:func:`raise_rejected` then names the first bad value).
"""

from __future__ import annotations

from .errors import BadValueError, NoWeightsError
from .validation import EMPTY_WEIGHTS, as_weights, check_same_length, host


class InputTuple(tuple):
    """The declared inputs a batch was prepared for; it remembers which
    consumers' inputs it covers (so a stream of batches checks that once)."""

    def __init__(self, inputs):
        self.memo = {}


class Batch:
    """One batch, converted to the kernels' dtypes and checked once.

    ``inputs`` are the declared inputs it was prepared for, ``arrays`` the
    converted arrays (one per input), ``weights`` the float64 weights (empty
    without weights) and ``n`` the rows. A batch is immutable: its arrays must
    not be modified while it is in use (they may share memory with the
    caller's arrays). Folding a batch into an accumulator whose inputs it
    covers never raises for a value.
    """

    __slots__ = ("_inputs", "_arrays", "_weights", "_n", "_derived")

    def __init__(self, inputs, arrays, weights, n):
        self._inputs = inputs  # (an InputTuple remembers the consumers it covers; a tuple does not)
        self._arrays = tuple(arrays)
        self._weights = weights
        self._n = int(n)
        self._derived = {}

    inputs = property(lambda self: self._inputs, doc="the declared inputs it was prepared for")
    arrays = property(lambda self: self._arrays, doc="the converted arrays, one per input")
    weights = property(lambda self: self._weights, doc="float64 weights (empty: unweighted)")
    n = property(lambda self: self._n, doc="the number of rows")

    @property
    def weighted(self) -> bool:
        return self._weights.shape[0] > 0

    def rows(self, idx) -> Batch:
        """The batch of rows ``idx`` (a slice of step 1, or an array of row indices)."""
        n = len(range(self._n)[idx]) if isinstance(idx, slice) else idx.shape[0]
        w = self._weights[idx] if self.weighted else self._weights
        return Batch(self._inputs, [a[idx] for a in self._arrays], w, n)

    def _resolve(self, needs):
        """Per position: False (read as is), True (derived), or None if not covered."""
        have = self._inputs
        if needs is have:  # the very inputs it was prepared for: every array as is
            return ()
        memo = have.memo if type(have) is InputTuple else {}
        hit = memo.get(id(needs))
        if hit is not None and hit[0] is needs:
            return hit[1]
        plan = None
        if len(needs) == len(have) and all(h is need or h.covers(need) for h, need in zip(have, needs)):
            plan = tuple(h is not need and h.derives(need) for h, need in zip(have, needs))
        if len(memo) > 64:
            memo.clear()
        memo[id(needs)] = (needs, plan)  # holds needs, so its id stays its own
        return plan

    def covers(self, needs) -> bool:
        """Whether this batch serves a consumer declaring the inputs ``needs``."""
        return self._resolve(needs) is not None

    def arrays_for(self, needs) -> tuple | None:
        """The arrays a consumer declaring ``needs`` reads, or ``None`` if this
        batch does not cover its inputs."""
        plan = self._resolve(needs)
        if plan is None:
            return None
        if not any(plan):
            return self._arrays
        return tuple(
            self._derive(i, need) if derive else self._arrays[i] for i, (derive, need) in enumerate(zip(plan, needs))
        )

    def _derive(self, i: int, need):
        """Array ``i`` as a consumer declaring ``need`` reads it, derived once per batch."""
        key = (i, need.domain)
        if key not in self._derived:
            self._derived[key] = self._inputs[i].derive(self._arrays[i], need)
        return self._derived[key]

    def __repr__(self) -> str:
        names = ", ".join(f"{i.name}: {i.what}" for i in self._inputs)
        return f"Batch(n={self._n}, {names}{', weighted' if self.weighted else ''})"


def convert(inputs, arrays, sample_weight, takes_weights: bool = True, owner=None):
    """Convert ``arrays`` for ``inputs`` (no value checks); ``(arrays, w, n)``.

    ``owner`` (an accumulator) is named when weights are refused.
    """
    k = len(inputs)
    if len(arrays) != k:
        names = ", ".join(i.name for i in inputs)
        raise TypeError(f"expected {k} arrays ({names}), got {len(arrays)}")
    if k == 2:  # the common case, spelled out: it runs once per update
        a = inputs[0].convert(host(arrays[0]))
        b = inputs[1].convert(host(arrays[1]))
        n = a.shape[0]
        if b.shape[0] != n:
            check_same_length([inputs[0].name, inputs[1].name], [a, b])
        converted = (a, b)
    else:
        converted = tuple(inp.convert(host(x)) for inp, x in zip(inputs, arrays))
        n = check_same_length([i.name for i in inputs], converted)
    if sample_weight is None:
        return converted, EMPTY_WEIGHTS, n
    if not takes_weights:
        raise NoWeightsError(type(owner).__name__)
    return converted, as_weights(sample_weight, n), n


def prepare(inputs, arrays, sample_weight, takes_weights: bool = True, owner=None) -> Batch:
    """Convert and check ``arrays`` for ``inputs``: a :class:`Batch`."""
    converted, w, n = convert(inputs, arrays, sample_weight, takes_weights, owner)
    if n:
        check_all(inputs, converted)
    return Batch(inputs, converted, w, n)


def raise_rejected(inputs, arrays) -> None:
    """A kernel rejected a batch: raise the error of its first bad value.

    The inputs are checked in their declared order, so the error names the
    same argument and position as :func:`prepare` would.
    """
    check_all(inputs, arrays)
    raise AssertionError("a kernel rejected the batch but no bad value was found")


def check_all(inputs, arrays) -> None:
    """Check the converted ``arrays`` in the declared order. A refused first of two
    vectors that the second input would take, its values the first's, is hinted
    as swapped (``update(p, y)``)."""
    for inp, arr in zip(inputs, arrays):
        try:
            inp.check(arr)
        except BadValueError as exc:
            if inp is not inputs[0] or exc.hint or len(arrays) != 2:
                raise
            a, b = arrays
            if not (a.ndim == b.ndim == 1 and a.dtype == b.dtype) or inputs[0].first_bad(b) >= 0:
                raise
            if inputs[1].first_bad(a) >= 0:
                raise
            raise exc.hinted(f"are {inp.name} and {inputs[1].name} swapped? {inp.name} comes first") from None
