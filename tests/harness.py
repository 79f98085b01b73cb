"""One test harness for every accumulator.

``check_accumulator(make, batches, expected)`` folds ``batches`` (a list of
tuples of positional arrays, optionally with a ``"sample_weight"`` dict entry)
into fresh accumulators built by ``make()`` and checks the whole protocol:

* ``update`` returns ``self`` and ``n`` counts the rows;
* ``finalize`` matches ``expected`` (if given), is idempotent, and leaves the
  state unchanged, so updates may continue after it;
* merging with an empty accumulator changes nothing;
* splitting the batches across 4 shards and merging in two different orders
  gives the single-pass result (counts exactly, floats to ``rtol``);
* ``a + b`` is a new accumulator and leaves both operands unchanged;
* ``copy`` is independent; ``reset`` empties; ``finalize`` on empty raises;
* pickle and ``save``/``load`` round trips give equal states.
"""

from __future__ import annotations

import os
import pickle
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest


def _kwargs(batch):
    if isinstance(batch, dict):
        return batch["args"], {"sample_weight": batch.get("sample_weight")}
    return batch, {}


def fold(acc, batches):
    for b in batches:
        args, kw = _kwargs(b)
        out = acc.update(*args, **kw)
        assert out is acc, "update must return self"
    return acc


def assert_results_equal(a, b, rtol: float = 1e-12, atol: float = 0.0, what: str = ""):
    """Compare two results field by field: ints exactly, floats to ``rtol``."""
    da, db = dict(a.as_dict()), dict(b.as_dict())
    assert da.keys() == db.keys(), what
    for k in da:
        va, vb = da[k], db[k]
        if isinstance(va, (int, np.integer)) and isinstance(vb, (int, np.integer)):
            assert va == vb, f"{what}{k}: {va} != {vb}"
        elif isinstance(va, (list, str)):  # class labels
            assert va == vb, f"{what}{k}: {va} != {vb}"
        elif isinstance(va, np.ndarray) and va.dtype.kind in "iub":
            np.testing.assert_array_equal(va, vb, err_msg=f"{what}{k}")
        else:
            np.testing.assert_allclose(va, vb, rtol=rtol, atol=atol, err_msg=f"{what}{k}")


def assert_matches(result, expected: dict[str, Any], rtol=1e-12, atol=0.0):
    for k, v in expected.items():
        got = getattr(result, k)
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            assert got == v, f"{k}: {got} != {v}"
        else:
            np.testing.assert_allclose(got, v, rtol=rtol, atol=atol, err_msg=k)


def state_snapshot(acc):
    return {k: np.array(v, copy=True) for k, v in acc._state.items()}


def assert_state_unchanged(acc, snapshot):
    state = acc._state
    assert state.keys() == snapshot.keys()
    for k in state:
        np.testing.assert_array_equal(state[k], snapshot[k], err_msg=f"state {k!r} changed")


def check_accumulator(
    make: Callable[[], Any],
    batches: Sequence,
    expected: dict[str, Any] | None = None,
    *,
    rtol: float = 1e-12,
    atol: float = 0.0,
    expected_rtol: float = 1e-12,
):
    assert len(batches) >= 1
    n_rows = sum(len(_kwargs(b)[0][0]) for b in batches)

    # single pass
    acc = fold(make(), batches)
    assert acc.n == n_rows
    r1 = acc.finalize()
    if expected:
        assert_matches(r1, expected, rtol=expected_rtol, atol=atol)

    # finalize is idempotent and does not touch the state
    snap = state_snapshot(acc)
    r2 = acc.finalize()
    assert_results_equal(r1, r2, rtol=0)
    assert_state_unchanged(acc, snap)
    with pytest.raises(AttributeError):
        r1.n = 0  # read-only

    # merging an empty accumulator, in both directions
    assert_results_equal(acc.copy().merge(make()).finalize(), r1, rtol=rtol, atol=atol)
    assert_results_equal(make().merge(acc).finalize(), r1, rtol=rtol, atol=atol)

    # 4 shards, merged in two orders
    shards = [fold(make(), batches[i::4]) for i in range(4)]
    left = make()
    for s in shards:
        left.merge(s)
    right = shards[3].copy().merge(shards[2].copy().merge(shards[1].copy().merge(shards[0])))
    assert_results_equal(left.finalize(), r1, rtol=rtol, atol=atol, what="4 shards: ")
    assert_results_equal(right.finalize(), r1, rtol=rtol, atol=atol, what="reversed shards: ")

    # a + b: a new object, operands unchanged
    a, b = shards[0], shards[1]
    sa, sb = state_snapshot(a), state_snapshot(b)
    c = a + b
    assert c is not a and c is not b
    assert_state_unchanged(a, sa)
    assert_state_unchanged(b, sb)
    assert c.n == a.n + b.n

    # updates continue after finalize: the same as folding everything at once
    half = len(batches) // 2
    cont = fold(make(), batches[:half])
    if cont.n:
        cont.finalize()
    fold(cont, batches[half:])
    assert_results_equal(cont.finalize(), r1, rtol=rtol, atol=atol, what="continued: ")

    # copy is independent
    cp = acc.copy()
    fold(cp, batches[:1])
    assert_state_unchanged(acc, snap)

    # pickle round trip
    back = pickle.loads(pickle.dumps(acc))
    assert type(back) is type(acc)
    assert back == acc
    assert_results_equal(back.finalize(), r1, rtol=0)

    # save / load round trip, written at exactly the path given
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "state-without-suffix")
        acc.save(path)
        assert os.listdir(d) == ["state-without-suffix"]
        loaded = type(acc).load(path)
        assert loaded == acc
        assert_results_equal(loaded.finalize(), r1, rtol=0)

    # reset empties; finalize on empty is a usage error
    assert acc.reset() is acc
    assert acc.n == 0
    with pytest.raises(ValueError):
        acc.finalize()
    assert "n=0" in repr(acc)
    return r1


def check_rejected_batch(acc, args, kwargs=None, match: str | None = None):
    """A bad batch raises ValueError and leaves ``acc`` exactly as it was."""
    snap = state_snapshot(acc)
    n = acc.n
    with pytest.raises(ValueError, match=match):
        acc.update(*args, **(kwargs or {}))
    assert acc.n == n
    assert_state_unchanged(acc, snap)


def sharded(make: Callable[[], Any], arrays: Sequence[np.ndarray], w, cuts, order: str = "reverse"):
    """Fold ``arrays`` cut at ``cuts`` into one accumulator per piece, merged.

    ``order`` is "forward" (merge), "reverse" (merge, last piece first) or
    "plus" (``a + b`` chains). Used by the batching/sharding property tests.
    """
    n = len(arrays[0])
    edges = sorted({0, n, *[c for c in cuts if c <= n]})
    parts = [
        make().update(*[a[lo:hi] for a in arrays], sample_weight=None if w is None else w[lo:hi])
        for lo, hi in zip(edges[:-1], edges[1:])
    ]
    if order == "reverse":
        parts = parts[::-1]
    merged = make()
    for part in parts:
        merged = merged + part if order == "plus" else merged.merge(part)
    return merged


def forged(acc, path, settings=None, arrays=None) -> str:
    """``acc`` saved at ``path`` with some of its settings and arrays replaced."""
    from streammetrics._protocol import statefile

    acc.save(path)
    cls, saved, held, _ = statefile.read(path)
    statefile.write(path, cls.__name__, {**saved, **(settings or {})}, {**held, **(arrays or {})})
    return str(path)


def merge_fails(path, capsys, match: str):
    """``streammetrics merge path`` exits 1 with one line, within a second of CPU."""
    from streammetrics import cli

    start = time.process_time()
    code = cli.main(["merge", path])
    _, err = capsys.readouterr()
    assert time.process_time() - start < 1.0
    assert code == 1 and len(err.splitlines()) == 1 and re.search(match, err), err


def merge_peak(acc, other) -> int:
    """``acc.merge(other)``; the peak of the memory it allocated (tracemalloc), in bytes."""
    import tracemalloc

    tracemalloc.start()
    try:
        acc.merge(other)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def rank_states(root) -> list:
    """Every RankAUC reachable from ``root`` through containers and the library's objects."""
    import streammetrics as sm

    seen, out, todo = set(), [], [root]
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, (type, np.ndarray, str, bytes)):
            continue
        seen.add(id(o))
        if isinstance(o, sm.RankAUC):
            out.append(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
        elif isinstance(o, (list, tuple, set)):
            todo.extend(o)
        elif type(o).__module__.startswith("streammetrics") and hasattr(o, "__dict__"):
            todo.extend(vars(o).values())
    return out
