"""The accumulator protocol, run over every row of the registry.

Each public accumulator gets the whole harness (update, finalize, merges in
any order, copy, pickle, save/load, reset) against an independent reference,
and the guarantees that hold for all of them: ``merge(other)`` leaves ``other``
as it was in memory as well as in value, mismatched settings are refused with
nothing changed, a rejected batch leaves every array byte-identical, a
prepared batch folds like ``update``, and every accumulator works inside an
Evaluator and its report without code written for it.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import streammetrics as sm

from .harness import check_accumulator
from .registry import CASES, batches

pytest.importorskip("sklearn")


@pytest.fixture(params=CASES, ids=lambda c: c.name)
def case(request):
    return request.param


def _data(case, seed=0):
    return case.data(np.random.default_rng(seed))


def _folded(case, seed=0):
    arrays, w = _data(case, seed)
    acc = case.make()
    for b in batches(arrays, w):
        acc.update(*b["args"], sample_weight=b["sample_weight"])
    return acc


# ------------------------------------------------------------ memory images
def memory_image(obj, _seen=None, _path="acc"):
    """Every numpy array reachable from ``obj``: path -> (id, dtype, shape, bytes).

    Two images are equal only if the object holds the same array objects with
    the same contents: a change in memory (a buffer sorted in place, a run
    replaced, an array resized) shows even where the values read the same.
    """
    seen = set() if _seen is None else _seen
    out = {}
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None))):
        return out
    if callable(obj) and not hasattr(obj, "__dict__") or inspect.isroutine(obj) or inspect.isclass(obj):
        return out
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        out[_path] = (id(obj), obj.dtype.str, obj.shape, obj.tobytes())
        return out
    if all(hasattr(obj, a) for a in ("keys", "vals", "front", "back")):
        # a buffer of pending rows: its free slots between front and back hold
        # nothing (a rejected batch may have been written there and dropped)
        for name in ("keys", "vals"):
            a = getattr(obj, name)
            if a is not None:
                out[f"{_path}.{name}"] = (
                    id(a),
                    a.dtype.str,
                    a.shape,
                    a[: obj.front].tobytes() + a[obj.back :].tobytes(),
                )
        out[f"{_path}.rows"] = (obj.front, obj.back, getattr(obj, "sorted", None))
        return out
    if isinstance(obj, dict):
        items = [(repr(k), v) for k, v in obj.items() if not isinstance(k, int)]
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    else:
        items = list(getattr(obj, "__dict__", {}).items())
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if hasattr(obj, slot):
                    items.append((slot, getattr(obj, slot)))
    for k, v in items:
        if k == "memo":  # a cache of which consumers a batch covers
            continue
        out.update(memory_image(v, seen, f"{_path}.{k}"))
    return out


# ----------------------------------------------------------------- registry
def test_registry_lists_every_accumulator():
    public = {
        name
        for name in sm.__all__
        if isinstance(getattr(sm, name), type)
        and issubclass(getattr(sm, name), sm.Accumulator)
        and getattr(sm, name) is not sm.Accumulator
    }
    covered = {type(c.make()).__name__ for c in CASES}
    assert public - covered == set(), f"accumulators without a registry row: {sorted(public - covered)}"


def test_protocol_and_reference(case):
    arrays, w = _data(case)
    expected = case.reference(arrays, w) if case.reference is not None else None
    check_accumulator(
        case.make, batches(arrays, w), expected, rtol=0 if case.exact else case.rtol, expected_rtol=case.expected_rtol
    )


def test_merge_leaves_other_unchanged_in_memory(case):
    a, b = _folded(case, 1), _folded(case, 2)
    # a partly folded second batch, so that pending rows exist where they can
    arrays, w = _data(case, 3)
    b.update(*(x[:5] for x in arrays), sample_weight=None if w is None else w[:5])
    before, state = memory_image(b), b.state_dict()
    a.merge(b)
    assert memory_image(b) == before
    after = b.state_dict()
    assert after.keys() == state.keys() and all(np.array_equal(after[k], state[k]) for k in state)
    c = b + b
    assert memory_image(b) == before and c.n == 2 * b.n
    b.copy()
    b == a  # noqa: B015 - comparing reads the state
    assert memory_image(b) == before


def test_mismatched_settings_are_refused_and_change_nothing(case):
    if case.other is None:
        pytest.skip("no other settings")
    a, b = _folded(case, 1), case.other()
    arrays, w = _data(case, 2)
    images = memory_image(a), memory_image(b)
    with pytest.raises(ValueError, match="different settings"):
        a.merge(b)
    with pytest.raises(ValueError, match="different settings"):
        b.merge(a)
    with pytest.raises(ValueError, match="different settings"):
        a + b
    assert (memory_image(a), memory_image(b)) == images


def test_rejected_batches_leave_every_array_byte_identical(case):
    if not case.bad:
        pytest.skip("no bad batch listed")
    acc = _folded(case)
    for arrays, kwargs, match in case.bad:
        before, n = memory_image(acc), acc.n
        with pytest.raises(ValueError, match=match):
            acc.update(*arrays, **kwargs)
        assert acc.n == n and memory_image(acc) == before
        with pytest.raises(ValueError, match=match):
            acc.prepare(*arrays, **kwargs)
        assert memory_image(acc) == before


def test_prepared_batches_fold_like_update(case):
    arrays, w = _data(case)
    by_update, by_fold = case.make(), case.make()
    for b in batches(arrays, w):
        by_update.update(*b["args"], sample_weight=b["sample_weight"])
        batch = by_fold.prepare(*b["args"], sample_weight=b["sample_weight"])
        assert batch.n == len(b["args"][0])
        assert by_fold.fold(batch) is by_fold
    assert by_fold == by_update


def test_each_accumulator_works_in_an_evaluator_and_its_report(case, tmp_path):
    make = case.make
    if isinstance(make(), sm.Evaluator):
        pytest.skip("an Evaluator is not a member")
    if isinstance(make(), sm.Sliced):
        pytest.skip("a member takes y and p; Sliced takes its keys too (it slices an Evaluator instead)")
    if isinstance(make(), sm.Bootstrap):
        pytest.skip("a member takes y and p; Bootstrap takes row keys too (it resamples an Evaluator instead)")
    if isinstance(make(), (sm.Decayed, sm.Windowed, sm.History)):
        pytest.skip("a member takes y and p; the time wrappers take timestamps or steps too")
    if isinstance(make(), sm.Rolling):
        pytest.skip("a member takes y and p; a keyed Rolling takes row keys too (it rolls an Evaluator instead)")
    arrays, w = _data(case)
    if not make().takes_weights:
        w = None
    alone = make().update(*arrays, sample_weight=w)
    ev = sm.Evaluator({"m": make()}).update(*arrays, sample_weight=w)
    report = ev.finalize()
    got, want = report.parts["m"], alone.finalize()
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_allclose(np.asarray(got[k], float), np.asarray(want[k], float), rtol=1e-12)
    text = report.to_text()
    assert f"evaluation of {alone.n:,} rows" in text
    doc = json.loads(report.to_json())
    assert doc["n"] == alone.n and set(doc["metrics"]) == set(report) - {"n"}
    ev.save(tmp_path / "ev.state")
    assert sm.load_state(tmp_path / "ev.state") == ev


def test_a_batch_prepared_once_feeds_several_accumulators():
    rng = np.random.default_rng(4)
    y = (rng.random(500) < 0.3).astype(np.int64)
    p = rng.random(500)
    probs = sm.ProbabilityScores()
    batch = probs.prepare(y, p)
    confusion, ranks = sm.BinaryConfusion(threshold=0.5), sm.RankAUC()
    for acc in (probs, confusion, ranks):  # probabilities are finite scores
        acc.fold(batch)
    assert confusion == sm.BinaryConfusion(threshold=0.5).update(y, p)
    assert ranks == sm.RankAUC().update(y, p)
    with pytest.raises(TypeError, match="takes y as 0/1 labels, p as probabilities"):
        sm.ProbabilityScores().fold(sm.BinaryConfusion(threshold=0.5).prepare(y, p * 3))
    with pytest.raises(AttributeError):
        batch.n = 3  # immutable


def _assert_close(got, want, what=""):
    assert got.keys() == want.keys(), what
    for k in want:
        a, b = np.asarray(got[k]), np.asarray(want[k])
        if a.dtype.kind in "biu" and b.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=f"{what}{k}")
        else:
            np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-11, atol=1e-14, err_msg=f"{what}{k}")


def test_declared_row_terms_fold_like_the_accumulator_in_every_wrapper(case):
    """An accumulator that declares its row terms: added up per group they give
    the state its own fold gives (a slice's rows, a replicate's weights),
    counts exactly and sums to rounding."""
    make = case.make
    terms = make().row_terms()
    if terms is None or isinstance(make(), (sm.Evaluator, sm.Sliced, sm.Bootstrap)):
        pytest.skip("declares no row terms")
    arrays, w = _data(case)
    if not make().takes_weights:
        w = None
    by = np.random.default_rng(1).integers(0, 4, len(arrays[0]))
    sliced = sm.Sliced(make()).update(*arrays, sample_weight=w, by=by).finalize()
    _assert_close(sliced.overall, make().update(*arrays, sample_weight=w).finalize(), "overall ")
    for key, got in sliced.slices.items():
        rows = by == key
        want = make().update(*(a[rows] for a in arrays), sample_weight=None if w is None else w[rows])
        _assert_close(got, want.finalize(), f"slice {key}: ")
    one_pass = sm.Bootstrap(make(), replicates=4, seed=2).update(*arrays, sample_weight=w)
    each = sm.Bootstrap(make(), replicates=4, seed=2)
    each._linear = None  # every replicate folded with its own weights
    each.update(*arrays, sample_weight=w)
    _assert_close(one_pass.finalize(), each.finalize(), "bootstrap ")
