"""Keep attacking: every accumulator and one-shot function driven with mutated input.

Each example starts from a valid batch of the accumulator's registry row and
applies one or two mutations (another dtype, a bad value at a random place,
a mask, a non-contiguous view, another shape or length, a list, a torch
tensor or a pandas nullable column), then checks the contract:

* the call succeeds, or raises ``ValueError`` / ``TypeError`` (nothing else);
* a refused update leaves the state byte-identical;
* a result, when there is one, holds no NaN.

The normal run tries a few examples per target; ``pytest --fuzz`` (or
``--fuzz=N``) tries N (500 by default) and is the longer run.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streammetrics as sm

from .registry import CASES

pytestmark = pytest.mark.fuzz

DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bool",
    "object",
    "U5",
    "datetime64[s]",
    "complex128",
]
BAD_VALUES = [np.nan, np.inf, -np.inf, -1, 2, 3, 0.5, 1e300, -1e300, 2**63, 1e-320, "x", None]


def _examples(request_config) -> int:
    return request_config.getoption("--fuzz") or 6


@st.composite
def mutation(draw, a):
    """``a`` (a valid array) changed in one of the ways the module docstring lists."""
    a = np.asarray(a)
    kind = draw(
        st.sampled_from(["dtype", "value", "mask", "view", "shape", "length", "list", "torch", "pandas", "none"])
    )
    if kind == "dtype":
        dtype = draw(st.sampled_from(DTYPES))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return a.astype(dtype)
            except (TypeError, ValueError, OverflowError):
                return a
    if kind == "value" and a.size:
        out = a.astype(object).copy()
        i = draw(st.integers(0, a.shape[0] - 1))
        out[i] = draw(st.sampled_from(BAD_VALUES))
        if draw(st.booleans()):
            try:
                return out.astype(np.float64)
            except (TypeError, ValueError):
                return out
        return out
    if kind == "mask" and a.size:
        mask = np.zeros(a.shape, bool)
        mask[draw(st.integers(0, a.shape[0] - 1))] = draw(st.booleans())
        return np.ma.masked_array(a, mask=mask)
    if kind == "view":
        return np.repeat(a, 2, axis=0)[::2]
    if kind == "shape":
        choice = draw(st.sampled_from(["column", "row", "scalar", "3d"]))
        if choice == "column":
            return a.reshape(a.shape[0], -1)[:, :1]
        if choice == "row":
            return a.reshape(1, -1)
        if choice == "scalar":
            return a.ravel()[0] if a.size else np.float64(0)
        return a.reshape(a.shape[0], 1, -1)
    if kind == "length":
        return a[: draw(st.integers(0, max(a.shape[0] - 1, 0)))]
    if kind == "list":
        return a.tolist()
    if kind == "torch":
        torch = pytest.importorskip("torch")
        if a.dtype.kind in "biuf" and a.dtype != np.uint16 and a.dtype != np.uint32:
            t = torch.from_numpy(np.ascontiguousarray(np.repeat(a, 2, axis=0)))
            return t[::2]  # non-contiguous
        return a
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        if a.ndim == 1 and a.dtype.kind in "biu":
            s = pd.array(a.astype(np.int64), dtype="Int64")
            if len(s) and draw(st.booleans()):
                s[draw(st.integers(0, len(s) - 1))] = pd.NA
            return s
        if a.ndim == 1 and a.dtype.kind == "f":
            return pd.array(a, dtype="Float64")
        return a
    return a


def _state_bytes(acc):
    return {k: (v.dtype.str, v.shape, v.tobytes()) for k, v in acc.state_dict().items()}


def _no_nan(result):
    for k, v in result.items():
        if isinstance(v, float):
            assert not math.isnan(v), f"{k} is NaN"
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            assert not np.isnan(v).any(), f"{k} holds NaN"


ALLOWED = (ValueError, TypeError)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_fuzz_update(case, pytestconfig):
    rng = np.random.default_rng(0)
    arrays, w = case.data(rng)
    arrays = [np.asarray(a)[:12] for a in arrays]
    w = None if w is None else np.asarray(w)[:12]

    @settings(
        max_examples=_examples(pytestconfig), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(st.data())
    def run(data):
        acc = case.make()
        acc.update(*arrays, sample_weight=w)  # a valid first batch: the state to keep
        before = _state_bytes(acc)
        target = data.draw(st.integers(0, len(arrays)))  # which argument (or the weights)
        args = list(arrays)
        weights = w
        if target < len(arrays):
            args[target] = data.draw(mutation(arrays[target]))
        else:
            weights = data.draw(mutation(np.asarray(w) if w is not None else rng.random(12)))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                acc.update(*args, sample_weight=weights)
        except ALLOWED:
            assert _state_bytes(acc) == before, "a refused batch changed the state"
            return
        try:
            _no_nan(acc.finalize())
        except ALLOWED:
            pass

    run()


def _one_shots():
    y01 = np.array([0, 1, 1, 0, 1, 0])
    p01 = np.array([0, 1, 0, 0, 1, 1])
    s = np.array([0.1, 0.8, 0.4, 0.3, 0.9, 0.6])
    c3 = np.array([0, 1, 2, 1, 0, 2])
    yr = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    return [
        ("f1", lambda a, b: sm.f1(a, b), (y01, p01)),
        ("matthews", lambda a, b: sm.matthews(a, b), (y01, p01)),
        ("auc", lambda a, b: sm.auc(a, b), (y01, s)),
        ("average_precision", lambda a, b: sm.average_precision(a, b), (y01, s)),
        ("partial_auc", lambda a, b: sm.partial_auc(a, b, 0.5), (y01, s)),
        ("log_loss", lambda a, b: sm.log_loss(a, b), (y01, s)),
        ("expected_calibration_error", lambda a, b: sm.expected_calibration_error(a, b), (y01, s)),
        ("mse", lambda a, b: sm.mse(a, b), (yr, yr + 0.5)),
        ("r2", lambda a, b: sm.r2(a, b), (yr, yr + 0.5)),
        ("confusion_matrix", lambda a, b: sm.confusion_matrix(a, b), (c3, c3[::-1].copy())),
        ("adjusted_rand_score", lambda a, b: sm.adjusted_rand_score(a, b), (c3, c3[::-1].copy())),
        ("adjusted_mutual_info_score", lambda a, b: sm.adjusted_mutual_info_score(a, b), (c3, c3)),
        ("silhouette_score", lambda a, b: sm.silhouette_score(a, b), (np.arange(12.0).reshape(6, 2) ** 1.5, c3)),
    ]


@pytest.mark.parametrize("name, call, arrays", _one_shots(), ids=[n for n, _, _ in _one_shots()])
def test_fuzz_one_shot(name, call, arrays, pytestconfig):
    @settings(
        max_examples=_examples(pytestconfig), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(st.data())
    def run(data):
        args = list(arrays)
        i = data.draw(st.integers(0, len(args) - 1))
        args[i] = data.draw(mutation(args[i]))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                out = call(*args)
        except ALLOWED:
            return
        if isinstance(out, float):
            assert not math.isnan(out)
        elif isinstance(out, np.ndarray) and out.dtype.kind == "f":
            assert not np.isnan(out).any()

    run()
