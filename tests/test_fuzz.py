"""Keep attacking: every accumulator and public function driven with mutated input.

The targets are every row of the registry (``tests/registry.py``, which lists
every public accumulator) and every public function of ``streammetrics``
(:data:`FUNCTIONS`; ``test_every_public_function_is_fuzzed`` fails when one is
missing). Each example starts from a valid batch and applies one mutation
(another dtype, float16, an object array, uint64 with a value past int64, a bad
or non-finite value at a random place, a mask, a non-contiguous view, another
shape or length, a list, a torch tensor or a pandas nullable column), then
checks the contract:

* the call succeeds, or raises ``ValueError`` / ``TypeError`` (nothing else,
  no warning);
* a refused update leaves the state byte-identical;
* a result, when there is one, holds no NaN;
* a mutation that keeps the values (a view, a list, a tensor, a column, an
  object array of the same numbers) gives the state or result of the original.

The normal run tries a few examples per target; ``FUZZ_EXAMPLES=3000`` spreads
that many over all targets, and ``pytest --fuzz=N`` tries N per target.
"""

from __future__ import annotations

import inspect
import math
import os
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
BAD_VALUES = [np.nan, np.inf, -np.inf, -1, 2, 3, 0.5, 1e300, -1e300, 2**63, 2**70, 1e-320, "x", None, 1j]
#: mutations that keep every value: the result must be the original's
SAME_VALUES = {"view", "list", "torch", "object"}


def _examples(config, targets: int) -> int:
    total = int(os.environ.get("FUZZ_EXAMPLES", 0))
    return config.getoption("--fuzz") or (max(1, -(-total // targets)) if total else 4)


@st.composite
def mutation(draw, a):
    """``(a changed, whether it holds the same values)``: ``a`` (a valid array)
    changed in one of the ways the module docstring lists."""
    a = np.asarray(a)
    kind = draw(
        st.sampled_from(
            ["dtype", "object", "uint64", "value", "mask", "view", "shape", "length", "list", "torch", "pandas", "none"]
        )
    )
    if kind == "dtype":
        dtype = draw(st.sampled_from(DTYPES))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return a.astype(dtype), False
            except (TypeError, ValueError, OverflowError):
                return a, True
    if kind == "object":
        return a.astype(object), True
    if kind == "uint64" and a.size and a.dtype.kind in "biuf":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = np.abs(np.nan_to_num(a.astype(np.float64))).astype(np.uint64)
        out.flat[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from([2**63, 2**64 - 1, 2**63 + 1]))
        return out, False
    if kind == "value" and a.size:
        out = a.astype(object).copy()
        i = draw(st.integers(0, a.shape[0] - 1))
        out[i] = draw(st.sampled_from(BAD_VALUES))
        if draw(st.booleans()):
            try:
                return out.astype(np.float64), False
            except (TypeError, ValueError, OverflowError):
                return out, False
        return out, False
    if kind == "mask" and a.size:
        mask = np.zeros(a.shape, bool)
        mask[draw(st.integers(0, a.shape[0] - 1))] = draw(st.booleans())
        return np.ma.masked_array(a, mask=mask), False
    if kind == "view":
        return np.repeat(a, 2, axis=0)[::2], True
    if kind == "shape":
        choice = draw(st.sampled_from(["column", "row", "scalar", "3d"]))
        if choice == "column":
            return a.reshape(a.shape[0], -1)[:, :1], a.ndim == 1
        if choice == "row":
            return a.reshape(1, -1), False
        if choice == "scalar":
            return (a.ravel()[0] if a.size else np.float64(0)), False
        return a.reshape(a.shape[0], 1, -1), False
    if kind == "length":
        return a[: draw(st.integers(0, max(a.shape[0] - 1, 0)))], False
    if kind == "list":
        return a.tolist(), True
    if kind == "torch":
        torch = pytest.importorskip("torch")
        if a.dtype.kind in "biuf" and a.dtype != np.uint16 and a.dtype != np.uint32:
            t = torch.from_numpy(np.ascontiguousarray(np.repeat(a, 2, axis=0)))
            return t[::2], True  # non-contiguous
        return a, True
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        if a.ndim == 1 and a.dtype.kind in "biu":
            s = pd.array(a.astype(np.int64), dtype="Int64")
            if len(s) and draw(st.booleans()):
                s[draw(st.integers(0, len(s) - 1))] = pd.NA
            return s, False
        if a.ndim == 1 and a.dtype.kind == "f":
            return pd.array(a, dtype="Float64"), False
        return a, True
    return a, True


def _state_bytes(acc):
    return {k: (v.dtype.str, v.shape, v.tobytes()) for k, v in acc.state_dict().items()}


def _plain(out):
    """A result as nested dicts, lists, floats and arrays, to compare and search for NaN."""
    if hasattr(out, "as_dict"):
        out = out.as_dict()
    if isinstance(out, dict):
        return {k: _plain(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [_plain(v) for v in out]
    return out


def _no_nan(out, where="result"):
    if isinstance(out, dict):
        for k, v in out.items():
            _no_nan(v, f"{where}.{k}")
    elif isinstance(out, list):
        for i, v in enumerate(out):
            _no_nan(v, f"{where}[{i}]")
    elif isinstance(out, float):
        assert not math.isnan(out), f"{where} is NaN"
    elif isinstance(out, np.ndarray) and out.dtype.kind == "f":
        assert not np.isnan(out).any(), f"{where} holds NaN"


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and (a.dtype.kind not in "fc" and (a == b).all() or np.array_equal(a, b, True))
    return a == b or (a != a and b != b)


ALLOWED = (ValueError, TypeError)


def _fuzz(examples):
    return settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def _strict(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call(*args, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_fuzz_update(case, pytestconfig):
    rng = np.random.default_rng(0)
    arrays, w = case.data(rng)
    arrays = [np.asarray(a)[:12] for a in arrays]
    w = None if w is None else np.asarray(w)[:12]
    first = case.make().update(*arrays, sample_weight=w)  # a valid first batch: the state to keep
    twice = _state_bytes(first.copy().update(*arrays, sample_weight=w))
    n_args = len(arrays) - isinstance(first, (sm.Sliced, sm.Bootstrap))  # the arrays scored, not keys

    @_fuzz(_examples(pytestconfig, len(CASES) + len(FUNCTIONS)))
    @given(st.data())
    def run(data):
        acc = first.copy()
        before = _state_bytes(acc)
        target = data.draw(st.integers(0, len(arrays)))  # which argument (or the weights)
        args, weights = list(arrays), w
        if target < len(arrays):
            args[target], same = data.draw(mutation(arrays[target]))
        else:
            weights, same = data.draw(mutation(np.asarray(w) if w is not None else rng.random(12)))
            same = same and w is not None
        same = same and (target < n_args or target == len(arrays))  # keys: Sliced's and Bootstrap's own forms
        try:
            _strict(acc.update, *args, sample_weight=weights)
        except ALLOWED:
            assert _state_bytes(acc) == before, "a refused batch changed the state"
            assert not same, "a batch holding the original values was refused"
            return
        if same:
            assert _state_bytes(acc) == twice, "the same values gave another state"
        try:
            result = _plain(_strict(acc.finalize))
        except ALLOWED:
            return
        _no_nan(result)

    run()


# ------------------------------------------------------------------ functions
def _replaced_ratios(y, p):
    """The likelihood ratios with an undefined ratio replaced by 1 (its warning is the documented NaN's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sm.UndefinedMetricWarning)
        return sm.class_likelihood_ratios(y, p, replace_undefined_by=1.0)


def _function_rows():
    """``name -> (call, arrays)``: every public function and a valid batch for it."""
    y01 = np.array([0, 1, 1, 0, 1, 0, 1, 0])
    p01 = np.array([0, 1, 0, 0, 1, 1, 1, 0])
    s = np.array([0.1, 0.8, 0.4, 0.3, 0.9, 0.6, 0.7, 0.2])
    c3 = np.array([0, 1, 2, 1, 0, 2, 1, 0])
    q3 = np.array([0, 2, 2, 1, 0, 1, 1, 0])
    P = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]] * 2)
    yr = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    X = np.arange(16.0).reshape(8, 2) ** 1.5
    d = np.abs(X[:, :1] - X[:, :1].T)
    m = np.eye(3)[c3]
    rows = {}
    for name in ("accuracy", "balanced_accuracy", "called", "false_calls", "hits", "missed", "rejected"):
        rows[name] = (getattr(sm, name), (y01, p01))
    for name in ("specificity", "f1", "precision_score", "recall_score", "matthews"):
        rows[name] = (getattr(sm, name), (y01, p01))
    rows["fbeta"] = (lambda a, b: sm.fbeta(a, b, 2), (y01, p01))
    rows["actual"] = (sm.actual, (y01,))
    for name in ("auc", "average_precision", "pr_curve", "roc_curve", "log_loss", "brier"):
        rows[name] = (getattr(sm, name), (y01, s))
    rows["expected_calibration_error"] = (sm.expected_calibration_error, (y01, s))
    for name in ("det_curve", "confusion_matrix_at_thresholds"):
        rows[name] = (getattr(sm, name), (y01, s))
    rows["jaccard_score"] = (sm.jaccard_score, (y01, p01))
    rows["hamming_loss"] = (sm.hamming_loss, (c3, q3))
    rows["cohen_kappa_score"] = (sm.cohen_kappa_score, (c3, q3))
    rows["class_likelihood_ratios"] = (_replaced_ratios, (y01, p01))
    rows["partial_auc"] = (lambda a, b: sm.partial_auc(a, b, 0.5), (y01, s))
    rows["paired_delong"] = (sm.paired_delong, (y01, s, s[::-1].copy()))
    rows["evaluate_batches"] = (lambda a, b: sm.evaluate_batches([(a, b)], task="binary"), (y01, s))
    for name in ("mae", "mape", "mse", "r2", "rmse", "mean_poisson_deviance", "mean_gamma_deviance"):
        rows[name] = (getattr(sm, name), (yr, yr + 0.5))
    regression = "explained_variance_score max_error mean_squared_log_error root_mean_squared_log_error"
    for name in (
        regression + " mean_pinball_loss d2_pinball_score d2_absolute_error_score median_absolute_error"
    ).split():
        rows[name] = (getattr(sm, name), (yr, yr + 0.5))
    rows["d2_tweedie_score"] = (lambda a, b: sm.d2_tweedie_score(a, b, power=1.5), (yr, yr + 0.5))
    rows["mean_tweedie_deviance"] = (lambda a, b: sm.mean_tweedie_deviance(a, b, power=1.5), (yr, yr + 0.5))
    rows["confusion_matrix"] = (sm.confusion_matrix, (c3, q3))
    rows["multiclass_scores"] = (sm.multiclass_scores, (c3, q3))
    rows["class_probability_scores"] = (sm.class_probability_scores, (c3, P))
    rows["d2_log_loss_score"] = (sm.d2_log_loss_score, (y01, s))
    rows["d2_brier_score"] = (sm.d2_brier_score, (c3, P))
    rows["multiclass_auc"] = (sm.multiclass_auc, (c3, P))
    rows["top_k_accuracy"] = (lambda a, b: sm.top_k_accuracy(a, b, 2), (c3, P))
    for name in (
        "adjusted_mutual_info_score",
        "adjusted_rand_score",
        "completeness_score",
        "fowlkes_mallows_score",
        "homogeneity_completeness_v_measure",
        "homogeneity_score",
        "mutual_info_score",
        "normalized_mutual_info_score",
        "rand_score",
        "v_measure_score",
    ):
        rows[name] = (getattr(sm, name), (c3, q3))
    rows["silhouette_score"] = (sm.silhouette_score, (X, c3))
    rows["silhouette_samples"] = (sm.silhouette_samples, (X, c3))
    rows["silhouette"] = (sm.silhouette, (d, m))
    rows["silhouettes"] = (sm.silhouettes, (d, m))
    rel = np.array([[3.0, 2, 0, 1], [0, 1, 1, 0]])
    sc = np.array([[0.9, 0.1, 0.8, 0.4], [0.3, 0.6, 0.2, 0.5]])
    for name in ("ndcg_score", "dcg_score", "mrr_score", "map_at_k", "precision_at_k", "recall_at_k"):
        rows[name] = (getattr(sm, name), (rel, sc))
    for name in ("label_ranking_average_precision_score", "coverage_error", "label_ranking_loss"):
        rows[name] = (getattr(sm, name), ((rel > 0).astype(np.int64), sc))
    return rows


FUNCTIONS = _function_rows()
#: public functions that take no arrays to mutate: files and bootstraps (their hostile
#: inputs are tested in test_hostile_states.py and test_bootstrap*.py)
NOT_FUZZED = {"load_state", "compare", "from_bytes"}  # state bytes: tests/test_state_bytes.py


def test_every_public_function_is_fuzzed():
    public = {n for n in sm.__all__ if inspect.isfunction(getattr(sm, n))}
    assert public - FUNCTIONS.keys() - NOT_FUZZED == set()
    assert FUNCTIONS.keys() <= public


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_fuzz_function(name, pytestconfig):
    call, arrays = FUNCTIONS[name]
    original = _plain(_strict(call, *arrays))

    @_fuzz(_examples(pytestconfig, len(CASES) + len(FUNCTIONS)))
    @given(st.data())
    def run(data):
        args = list(arrays)
        i = data.draw(st.integers(0, len(args) - 1))
        args[i], same = data.draw(mutation(args[i]))
        try:
            out = _plain(_strict(call, *args))
        except ALLOWED:
            assert not same, "arrays holding the original values were refused"
            return
        _no_nan(out)
        if same:
            assert _same(out, original), "the same values gave another result"

    run()
