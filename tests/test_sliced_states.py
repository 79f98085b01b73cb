"""A sliced state of table templates is saved and checked as tables, at once.

Loading checks every slice's state with the template's invariants in one
pass per field over all slices (:meth:`_screen_states`), and only the flagged
slices one by one, for the message. These tests hold that path to the
slice-by-slice one: the same refusals with the same messages, the same
states, and the same file layout.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics.sliced import states
from streammetrics.sliced.accumulator import Sliced

TEMPLATES = {
    "labels": lambda: sm.BinaryConfusion(),
    "threshold": lambda: sm.BinaryConfusion(threshold=0.5),
    "probability": lambda: sm.ProbabilityScores(),
    "regression": lambda: sm.RegressionErrors(),
}

#: values written over one entry of one slice's state
HOSTILE = [-1.0, 0.0, 1.0, 2.0, 0.5, -1e-300, 1e300, np.nan, np.inf, -np.inf, 2.0**62, 2.0**63 - 1024]


def _data(name, rng, n):
    y = (rng.random(n) < 0.4).astype(np.int64)
    if name == "labels":
        p = (rng.random(n) < 0.5).astype(np.int64)
    elif name == "regression":
        y = rng.normal(size=n)
        p = y + rng.normal(size=n)
    else:
        p = rng.random(n)
    return y, p


def _sliced(name, seed, weighted, n=60, slices=5):
    rng = np.random.default_rng(seed)
    y, p = _data(name, rng, n)
    keys = rng.integers(0, slices, n)
    acc = Sliced(TEMPLATES[name]())
    w = rng.random(n) + 0.1 if weighted else None
    acc.update(y, p, by=keys, sample_weight=w)
    return acc


def _long_form(state):
    """``state`` with every ``slices.<field>`` written out slice by slice (each
    slice's values and its own shape) and integer keys as a JSON list: the
    form of the files of earlier releases, which every release reads."""
    out = dict(state)
    doc = json.loads(state["keys"].tobytes())
    if "keys#int64" in state:  # the keys as a JSON list
        doc["keys"] = [[v] for v in out.pop("keys#int64").tolist()]
        out["keys"] = np.frombuffer(json.dumps(doc).encode(), np.uint8).copy()
    g = len(doc["keys"])
    for key, shapes in state.items():
        if key.endswith("#shape") and shapes.shape[0] == 1:
            field = key[: -len("#shape")]
            size = int(np.prod(shapes[0]))
            if state[field].shape[0] != g * size:  # no values: zeros
                out[field] = np.zeros(g * size, state[field].dtype)
            out[key] = np.tile(shapes, (g, 1))
    return out


def _outcome(state, name, one_by_one, monkeypatch):
    """The loaded state, or the message of the refusal."""
    with monkeypatch.context() as m:
        if one_by_one:
            m.setattr(states, "_stacked", lambda cuts, g, fields: None)
        try:
            return Sliced(TEMPLATES[name]()).load_state_dict(state).state_dict()
        except sm.StateFileError as exc:
            return str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(TEMPLATES)),
    seed=st.integers(0, 2**31),
    weighted=st.booleans(),
    pick=st.integers(0, 10**6),
    value=st.sampled_from(HOSTILE),
    scale=st.booleans(),
)
def test_slices_checked_at_once_refuse_what_each_refuses_with_its_message(
    name, seed, weighted, pick, value, scale, monkeypatch
):
    state = _long_form(_sliced(name, seed, weighted).state_dict())
    fields = sorted(k for k in state if k.startswith("slices.") and not k.endswith("#shape"))
    key = fields[pick % len(fields)]
    flat = state[key].copy()
    i = (pick // len(fields)) % flat.shape[0]
    if scale:  # a plausible value: the entry doubled or one more
        flat[i] = flat[i] * 2 if flat.dtype.kind == "f" else flat[i] + 1
    elif flat.dtype.kind == "f":
        flat[i] = value
    elif np.isfinite(value) and abs(value) < 2.0**63:
        flat[i] = int(value)
    state[key] = flat
    at_once = _outcome(state, name, False, monkeypatch)
    one_by_one = _outcome(state, name, True, monkeypatch)
    if isinstance(one_by_one, str):
        assert at_once == one_by_one
    else:
        assert not isinstance(at_once, str), at_once
        assert at_once.keys() == one_by_one.keys()
        for k in at_once:
            np.testing.assert_array_equal(at_once[k], one_by_one[k])


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize("weighted", [False, True])
def test_a_table_state_is_laid_out_slice_after_slice_in_key_order(name, weighted):
    acc = _sliced(name, 3, weighted)
    state = acc.state_dict()
    order = acc._keys.order()
    for k, empty in acc._template_fields.items():
        parts = [acc._slice_acc(g).state_dict()[k] for g in order]
        values = np.concatenate([a.reshape(-1) for a in parts])
        # every slice's array has the template's shape: written once
        np.testing.assert_array_equal(state[f"slices.{k}#shape"], np.array([empty.shape]))
        if values.any():
            np.testing.assert_array_equal(state[f"slices.{k}"], values)
        else:  # all zeros (the weighted sums of unweighted rows): no values
            assert state[f"slices.{k}"].shape == (0,)
        assert state[f"slices.{k}"].dtype == empty.dtype
    if name in ("labels", "threshold"):
        assert (state["slices.wsums"].shape == (0,)) is not weighted
    for form in (state, _long_form(state)):
        back = Sliced(TEMPLATES[name]()).load_state_dict(form)
        assert back == acc
        assert back.state_dict().keys() == state.keys()
        for k, v in back.state_dict().items():
            np.testing.assert_array_equal(v, state[k])
        for key, r in acc.finalize().slices.items():
            assert back.finalize().slices[key] == r


def test_a_slice_without_rows_is_named():
    acc = _sliced("threshold", 1, False)
    state = acc.state_dict()
    first = next(iter(acc.finalize().slices))
    for k in ("slices.n", "slices.counts"):
        state[k] = state[k].copy()
    # slice ``first`` emptied, its rows moved to the next one: totals still agree
    n0 = int(state["slices.n"][0])
    state["slices.n"][0], state["slices.n"][1] = 0, state["slices.n"][1] + n0
    state["slices.counts"][4:8] += state["slices.counts"][0:4]
    state["slices.counts"][0:4] = 0
    with pytest.raises(sm.StateFileError, match=f"slice {first!r} holds no rows"):
        Sliced(sm.BinaryConfusion(threshold=0.5)).load_state_dict(state)


def test_the_short_forms_of_a_state_are_checked():
    acc = _sliced("threshold", 2, False)
    state = acc.state_dict()
    g = acc.n_slices
    load = Sliced(sm.BinaryConfusion(threshold=0.5)).load_state_dict
    assert state["slices.wsums"].shape == (0,) and state["slices.wsums#shape"].tolist() == [[4, 2]]
    # no values stand for zeros of the template's shape only: a file cannot
    # make a load allocate what it does not hold
    for shape in ([4, 3], [1 << 40, 2]):
        bad = dict(state, **{"slices.wsums#shape": np.array([shape], np.int64)})
        with pytest.raises(
            sm.StateFileError,
            match=r"'slices.wsums' holds no values, which stands for "
            r"zeros of the template's shape \(4, 2\) only",
        ):
            load(bad)
    bad = dict(state, **{"slices.counts": state["slices.counts"][:-1]})
    with pytest.raises(sm.StateFileError, match="'slices.counts' does not hold the sizes its shapes give"):
        load(bad)
    # sizes whose product wraps around int64 to the values held
    bad = dict(_long_form(state))
    bad["slices.wsums#shape"] = np.tile(np.array([1 << 32, 1 << 32], np.int64), (g, 1))
    bad["slices.wsums"] = np.zeros(0)
    with pytest.raises(sm.StateFileError, match="'slices.wsums' does not hold the sizes its shapes give"):
        load(bad)
    bad = dict(state, **{"slices.n#shape": np.array([[1], [1]], np.int64)})
    with pytest.raises(sm.StateFileError, match=rf"'slices.n#shape' must be {g} x 1 sizes \(or 1 x 1"):
        load(bad)
    # a part of no values whose other sizes no array could have
    bad = dict(_long_form(state))
    bad["slices.wsums#shape"] = np.tile(np.array([1 << 62, 0], np.int64), (g, 1))
    bad["slices.wsums"] = np.zeros(0)
    with pytest.raises(sm.StateFileError, match="'slices.wsums#shape' gives a part of no values with sizes"):
        load(bad)
    # a state of no slices in the short form
    empty = Sliced(sm.BinaryConfusion(threshold=0.5))
    assert load(empty.state_dict()) == empty


def _with_doc(state, **changes):
    doc = dict(json.loads(state["keys"].tobytes()), **changes)
    return dict(state, keys=np.frombuffer(json.dumps(doc).encode(), np.uint8).copy())


def test_integer_keys_are_one_array_and_it_is_checked():
    acc = _sliced("threshold", 4, False)
    state = acc.state_dict()
    keys = state["keys#int64"]
    assert keys.tolist() == sorted(acc.finalize().slices) and json.loads(state["keys"].tobytes())["keys"] is None
    load = Sliced(sm.BinaryConfusion(threshold=0.5)).load_state_dict
    bad_keys = "entry 'keys' is not a valid list of slice keys"
    cases = [
        (dict(state, **{"keys#int64": keys[::-1].copy()}), "the slice keys are not in key order"),
        (dict(state, **{"keys#int64": np.r_[keys[:1], keys[:-1]]}), rf"{bad_keys} \(the slice keys repeat a key\)"),
        (
            dict(state, **{"keys#int64": keys.astype(np.float64)}),
            rf"{bad_keys} \(entry 'keys#int64' must be a 1-D int64",
        ),
        (dict(state, **{"keys#int64": keys[:-1]}), "'slices.n' does not hold the sizes its shapes give"),
        (_with_doc(state, keys=[[int(v)] for v in keys]), rf"{bad_keys} \(keys given as entry 'keys#int64'"),
        (_with_doc(state, columns=2, names=["a", "b"]), rf"{bad_keys} \(keys given as entry 'keys#int64'"),
        ({k: v for k, v in state.items() if k != "keys#int64"}, rf"{bad_keys} \(the slice keys must be a list\)"),
    ]
    for bad, match in cases:
        with pytest.raises(sm.StateFileError, match=match):
            load(bad)
    # string keys, or a cross, stay a JSON list
    mixed = Sliced(sm.BinaryConfusion()).update([1, 0], [1, 0], by=(["a", "b"], [1, 2])).state_dict()
    assert "keys#int64" not in mixed and json.loads(mixed["keys"].tobytes())["keys"] == [["a", 1], ["b", 2]]


def test_totals_that_overflow_when_squared_are_screened_without_a_warning():
    """Each slice's check computes in Python floats, which overflow to inf quietly;
    the check of all slices at once must too (the test suite makes a warning an error)."""
    acc = _sliced("regression", 0, False)
    state = _long_form(acc.state_dict())
    sums = state["slices.sums"].copy()
    sums[2] = 1e300  # the first slice's sum of absolute errors
    state["slices.sums"] = sums
    first = next(iter(acc.finalize().slices))
    with pytest.raises(sm.StateFileError, match=rf"slice {first!r}: entry 'sums': the absolute errors are too large"):
        Sliced(sm.RegressionErrors()).load_state_dict(state)
