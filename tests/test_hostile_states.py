"""Hostile state files and states: every one is a quick, clear ValueError, or a
quick correct answer; none allocates more than the file holds, none runs for
long, none loads into scores a real stream could not give."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import streammetrics as sm
from streammetrics._kernels.contingency import _cell, expected_mutual_info

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG = 2**62


# ------------------------------------------------------------------ forging
def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _header(cls: str, settings, **extra) -> bytes:
    return json.dumps(
        {"format": "streammetrics-state", "version": 1, "class": cls, "settings": settings, **extra}
    ).encode()


def forge(path, cls, settings, arrays, *, header: bytes | None = None, raw=None, compression=zipfile.ZIP_STORED):
    """A state file of ``arrays`` (``raw``: member name -> bytes, written as is)."""
    members = {f"{k}.npy": _npy(v) for k, v in arrays.items()}
    hdr = _header(cls, settings) if header is None else header
    members["__header__.npy"] = _npy(np.frombuffer(hdr, np.uint8))
    members.update(raw or {})
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _binary(n=3, counts=(1, 0, 1, 1)):
    return {
        "n": np.array([n], np.int64),
        "counts": np.array(counts, np.int64),
        "wsums": np.zeros((4, 2)),
        "weighted": np.zeros(1, np.int64),
    }


def _load_fails(path, match, seconds=1.0):
    """``load_state`` raises ``ValueError`` matching ``match``, quickly and in little memory.

    "Quickly" is this process's CPU time: a bound on the work a hostile file
    can cause, which other jobs sharing the machine do not stretch as they
    stretch the wall clock."""
    tracemalloc.start()
    t0 = time.process_time()
    try:
        with pytest.raises(ValueError, match=match) as info:
            sm.load_state(path)
        elapsed = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < seconds, elapsed
    assert peak < 4 * os.path.getsize(path) + (8 << 20), peak
    assert repr(str(path)) in str(info.value)  # names the file
    return info.value


# ------------------------------------------------------------ bounded loading
def _npy_claiming(shape, data: bytes, descr="<i8") -> bytes:
    """A ``.npy`` member whose header declares ``shape`` over the bytes ``data``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue() + data


def test_deflated_member_is_refused_before_inflating(tmp_path):
    # 100 MB of int64 zeros deflated into ~100 KB (the 6 GB bomb, scaled down):
    # refused for being compressed, before a byte is inflated
    declared = 12_500_000
    path = forge(
        tmp_path / "bomb", "BinaryConfusion", {"threshold": None}, {k: v for k, v in _binary().items() if k != "counts"}
    )
    zero = bytes(1_000_000)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("counts.npy", "w", force_zip64=True) as member:
            member.write(_npy_claiming((declared,), b""))
            for _ in range(declared * 8 // len(zero)):
                member.write(zero)
    with zipfile.ZipFile(path) as zf:  # an honest .npy once inflated
        info = zf.getinfo("counts.npy")
        assert info.file_size == 128 + declared * 8 and info.compress_size < 300_000
    assert os.path.getsize(path) < 300_000
    _load_fails(path, "compressed")


def test_compressed_small_file_is_refused(tmp_path):
    # even an honest state written with deflate: the format is uncompressed
    path = forge(tmp_path / "z", "BinaryConfusion", {"threshold": None}, _binary(), compression=zipfile.ZIP_DEFLATED)
    _load_fails(path, "compressed")


@pytest.mark.parametrize("shape", [(10**12,), (2**61,), (5,), (3,), (2**40, 2**40)])
def test_declared_size_must_match_stored_size(tmp_path, shape):
    # an array header claiming 1e12 elements over the 32 bytes of four counts
    arrays = {k: v for k, v in _binary().items() if k != "counts"}
    raw = {"counts.npy": _npy_claiming(shape, np.array([1, 0, 1, 1], np.int64).tobytes())}
    path = forge(tmp_path / "claim", "BinaryConfusion", {"threshold": None}, arrays, raw=raw)
    _load_fails(path, "declares .* bytes")


def test_object_member_is_refused(tmp_path):
    raw = {"counts.npy": _npy_claiming((4,), b"\x80\x04N." * 8, descr="|O")}
    arrays = {k: v for k, v in _binary().items() if k != "counts"}
    path = forge(tmp_path / "obj", "BinaryConfusion", {"threshold": None}, arrays, raw=raw)
    _load_fails(path, "objects")


def test_deep_header_is_a_value_error(tmp_path):
    deep = "[" * 10_000 + "]" * 10_000
    hdr = (
        b'{"format": "streammetrics-state", "version": 1, "class": "BinaryConfusion", '
        b'"settings": {"threshold": null, "x": ' + deep.encode() + b"}}"
    )
    path = forge(tmp_path / "deep", "BinaryConfusion", None, _binary(), header=hdr)
    _load_fails(path, "nested deeper")


@pytest.mark.parametrize(
    "text, match",
    [
        ("1" * 400, "does not fit int64"),
        ("1e400", "not a finite float"),
        ("-1e400", "not a finite float"),
        ("NaN", "not a number"),
        ("Infinity", "not a number"),
        ("0." + "1" * 400, "not a finite float"),
    ],
)
def test_numbers_in_settings_are_bounded(tmp_path, text, match):
    hdr = (
        b'{"format": "streammetrics-state", "version": 1, "class": "BinaryConfusion", '
        b'"settings": {"threshold": ' + text.encode() + b"}}"
    )
    path = forge(tmp_path / "num", "BinaryConfusion", None, _binary(), header=hdr)
    _load_fails(path, match)


def test_huge_header_is_refused(tmp_path):
    hdr = _header("BinaryConfusion", {"threshold": None}, pad="x" * (2 << 20))
    path = forge(tmp_path / "big", "BinaryConfusion", None, _binary(), header=hdr)
    _load_fails(path, "header of", seconds=2.0)


@pytest.mark.parametrize("k", [10**6, 10**9])
def test_declared_n_classes_is_checked_before_allocating(tmp_path, k):
    arrays = {
        "n": np.array([1], np.int64),
        "counts": np.array([[1]], np.int64),
        "wsum": np.zeros((0, 2)),
        "seen": np.zeros((2, 1), np.int64),
    }
    path = forge(tmp_path / "k", "MulticlassConfusion", {"n_classes": k, "labels": None}, arrays)
    _load_fails(path, "settings declare a state entry 'counts'")


def test_declared_n_classes_inside_an_evaluator(tmp_path):
    settings = {"members": {"m": {"class": "MulticlassConfusion", "settings": {"n_classes": 10**6, "labels": None}}}}
    arrays = {
        "n": np.array([0], np.int64),
        "m.n": np.zeros(1, np.int64),
        "m.counts": np.zeros((1, 1), np.int64),
        "m.wsum": np.zeros((0, 2)),
        "m.seen": np.zeros((2, 1), np.int64),
    }
    path = forge(tmp_path / "ev", "Evaluator", settings, arrays)
    _load_fails(path, "settings declare a state entry")


def test_too_many_members(tmp_path):
    raw = {f"x{i}.npy": b"" for i in range(5000)}
    path = forge(tmp_path / "many", "BinaryConfusion", {"threshold": None}, _binary(), raw=raw)
    _load_fails(path, "members", seconds=2.0)


def test_honest_files_still_load(tmp_path):
    acc = sm.MulticlassConfusion(300).update(np.arange(1000) % 300, np.arange(1000) % 299)
    acc.save(tmp_path / "m")
    assert sm.load_state(tmp_path / "m") == acc
    labels = [f"class {i}" for i in range(2000)]
    acc = sm.MulticlassConfusion(labels=labels).update(labels[:5], labels[1:6])
    acc.save(tmp_path / "l")
    assert sm.load_state(tmp_path / "l") == acc


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "streammetrics", *args], capture_output=True, text=True, env=env, timeout=120
    )
    return done, time.perf_counter() - t0


def test_merge_command_on_hostile_files(tmp_path):
    deep = "[" * 10_000 + "]" * 10_000
    hostile = [
        forge(
            tmp_path / "deep",
            "BinaryConfusion",
            None,
            _binary(),
            header=(
                b'{"format": "streammetrics-state", "version": 1, "class": '
                b'"BinaryConfusion", "settings": ' + deep.encode() + b"}"
            ),
        ),
        forge(
            tmp_path / "digits",
            "BinaryConfusion",
            None,
            _binary(),
            header=(
                b'{"format": "streammetrics-state", "version": 1, "class": '
                b'"BinaryConfusion", "settings": {"threshold": 1' + b"0" * 400 + b"}}"
            ),
        ),
        forge(
            tmp_path / "classes",
            "MulticlassConfusion",
            {"n_classes": 10**6, "labels": None},
            {
                "n": np.array([1], np.int64),
                "counts": np.array([[1]], np.int64),
                "wsum": np.zeros((0, 2)),
                "seen": np.zeros((2, 1), np.int64),
            },
        ),
        forge(
            tmp_path / "loss",
            "ProbabilityScores",
            {},
            {"n": np.array([1], np.int64), "sums": np.array([[1.0, 0], [100.0, 0], [0, 0]])},
        ),
    ]
    for path in hostile:
        done, seconds = _cli("merge", str(path))
        assert done.returncode != 0
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("streammetrics: error: ") and str(path) in lines[0], done.stderr
        assert "Traceback" not in done.stderr
        assert seconds < 30  # the interpreter and numpy start included; measured well under


# ------------------------------------------------------- consistent states only
def _state_fails(cls_name, settings, arrays, match, tmp_path):
    path = forge(tmp_path / "s", cls_name, settings, arrays)
    return _load_fails(path, match)


@pytest.mark.parametrize(
    "sums, match",
    [
        ([[1.0, 0], [100.0, 0], [0.0, 0]], "log-loss total"),  # log loss 100 > 27.63
        ([[1.0, 0], [27.7, 0], [0.0, 0]], "log-loss total"),
        ([[1.0, 0], [0.5, 0], [-0.1, 0]], "negative"),  # negative Brier
        ([[1.0, 0], [0.5, 0], [1.5, 0]], "Brier total"),  # binary Brier > 1
        ([[1.0, 0], [-0.5, 0], [0.1, 0]], "negative"),  # negative log loss
        ([[1.0, 1.0], [0.5, 0], [0.1, 0]], "error term"),  # a pair whose error is its sum
    ],
)
def test_probability_totals_are_bounded(tmp_path, sums, match):
    arrays = {"n": np.array([1], np.int64), "sums": np.array(sums)}
    _state_fails("ProbabilityScores", {}, arrays, match, tmp_path)


def test_probability_bounds_are_those_of_real_streams(tmp_path):
    # the worst real rows load: certain and wrong (loss -ln 1e-12, Brier 1)
    acc = sm.ProbabilityScores().update([1, 0] * 50, [0.0, 1.0] * 50)
    acc.save(tmp_path / "worst")
    r = sm.load_state(tmp_path / "worst").finalize()
    assert r.log_loss == pytest.approx(-math.log(1e-12)) and r.brier == 1.0
    m = sm.ClassProbabilityScores(3).update([0, 1], [[0, 1, 0], [0, 0, 1.0]])
    m.save(tmp_path / "mworst")
    assert sm.load_state(tmp_path / "mworst").finalize().brier == 2.0
    # multiclass Brier may reach 2 per row, not more
    arrays = {"n": np.array([1], np.int64), "sums": np.array([[1.0, 0], [0.5, 0], [2.5, 0]])}
    _state_fails("ClassProbabilityScores", {"n_classes": 3}, arrays, "Brier total", tmp_path)


def _regression(sums, moments=(2.0, 0, 0.0, 0.0, 1.0, 0)):
    return {"n": np.array([2], np.int64), "moments": np.array(moments, np.float64), "sums": np.array(sums, np.float64)}


@pytest.mark.parametrize(
    "sums, match",
    [
        ([[-1.0, 0], [1.0, 0], [0.1, 0]], "negative"),  # negative MSE
        ([[1.0, 0], [-1.0, 0], [0.1, 0]], "negative"),  # negative MAE
        ([[1.0, 0], [100.0, 0], [0.1, 0]], "absolute errors"),  # MAE 50 with MSE 0.5
    ],
)
def test_regression_totals_are_consistent(tmp_path, sums, match):
    _state_fails("RegressionErrors", {}, _regression(sums), match, tmp_path)


@pytest.mark.parametrize(
    "arrays, match",
    [
        (_binary(3, (1, 0, -1, 3)), "negative"),  # recall 2: fn = -1
        (_binary(3, (2, 0, 0, 2)), "exceeds"),  # accuracy 4/3
        (_binary(5, (1, 0, 0, 1)), "falls short"),  # rows that no cell counts
        (_binary(BIG, (BIG, BIG, BIG, BIG)), "exceeds"),  # wraps to n in int64
        ({**_binary(3), "wsums": np.array([[1.0, 0]] * 4)}, "no row came with weights"),
    ],
)
def test_binary_counts_are_consistent(tmp_path, arrays, match):
    _state_fails("BinaryConfusion", {"threshold": None}, arrays, match, tmp_path)


def test_multiclass_counts_are_consistent(tmp_path):
    arrays = {
        "n": np.array([2], np.int64),
        "counts": np.array([[3, 0], [0, -1]], np.int64),
        "wsum": np.zeros((0, 2)),
        "seen": np.zeros((2, 2), np.int64),
    }
    _state_fails("MulticlassConfusion", {"n_classes": 2, "labels": None}, arrays, "negative|exceeds", tmp_path)
    arrays["counts"] = np.array([[1, 0], [0, 0]], np.int64)
    arrays["wsum"] = np.ones((4, 2)) * [1.0, 0.0]
    _state_fails("MulticlassConfusion", {"n_classes": 2, "labels": None}, arrays, "do not add up", tmp_path)


def test_rank_counts_cannot_wrap_into_a_negative_n_pos(tmp_path):
    # five counts of 2**62 sum to 2**62 modulo 2**64: the int64 total wraps onto n
    arrays = {
        "n": np.array([BIG], np.int64),
        "weighted": np.zeros(1, np.int64),
        "lo": np.arange(5, dtype=np.float64),
        "hi": np.zeros(0),
        "counts": np.array([[BIG, BIG, BIG, 0, 0], [0, 0, 0, BIG, BIG]], np.int64),
        "weights": np.zeros((2, 0)),
        "pairs": np.zeros((2, 0)),
    }
    assert int(arrays["counts"].sum()) == BIG  # what the wrapped check saw
    _state_fails("RankAUC", {"max_bins": None}, arrays, "do not add up", tmp_path)


def test_contingency_counts_cannot_wrap(tmp_path):
    arrays = {
        "n": np.array([BIG], np.int64),
        "true": np.arange(5, dtype=np.int64),
        "pred": np.zeros(5, np.int64),
        "counts": np.full(5, BIG, np.int64),
    }
    _state_fails("ClusterContingency", {"average_method": "arithmetic"}, arrays, "do not add up", tmp_path)


def test_every_accepted_state_scores_in_range(tmp_path):
    """Honest states of every kind load, and their scores lie in their ranges."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    p = rng.random(200)
    w = rng.random(200)
    accs = [
        sm.BinaryConfusion(0.5).update(y, p, sample_weight=w),
        sm.BinaryConfusion(0.5).update(y, p),
        sm.ProbabilityScores().update(y, p, sample_weight=w),
        sm.RegressionErrors().update(p, y),
        sm.RankAUC().update(y, p),
        sm.RankAUC(max_bins=8).update(y, p, sample_weight=w),
        sm.MulticlassConfusion(3).update(y + (p > 0.8), y, sample_weight=w),
        sm.ClusterContingency().update(y, (p * 4).astype(int)),
    ]
    for i, acc in enumerate(accs):
        acc.save(tmp_path / f"{i}")
        back = sm.load_state(tmp_path / f"{i}")
        assert back == acc


# --------------------------------------------------------------- int64 counts
def _near_limit(cls_name):
    if cls_name == "BinaryConfusion":
        return sm.BinaryConfusion().load_state_dict(_binary(BIG, (BIG, 0, 0, 0)))
    if cls_name == "MulticlassConfusion":
        return sm.MulticlassConfusion(2).load_state_dict(
            {
                "n": np.array([BIG], np.int64),
                "counts": np.array([[BIG, 0], [0, 0]], np.int64),
                "wsum": np.zeros((0, 2)),
                "seen": np.zeros((2, 2), np.int64),
            }
        )
    if cls_name == "ClusterContingency":
        return sm.ClusterContingency().load_state_dict(
            {
                "n": np.array([BIG], np.int64),
                "true": np.array([0, 1], np.int64),
                "pred": np.array([0, 0], np.int64),
                "counts": np.array([BIG - 1, 1], np.int64),
            }
        )
    if cls_name == "RankAUC":
        return sm.RankAUC().load_state_dict(
            {
                "n": np.array([BIG], np.int64),
                "weighted": np.zeros(1, np.int64),
                "lo": np.array([0.0, 1.0]),
                "hi": np.zeros(0),
                "counts": np.array([[0, BIG - 1], [1, 0]], np.int64),
                "weights": np.zeros((2, 0)),
                "pairs": np.zeros((2, 0)),
            }
        )
    if cls_name == "ProbabilityScores":
        return sm.ProbabilityScores().load_state_dict(
            {"n": np.array([BIG], np.int64), "sums": np.array([[4.6e18, 0], [1.0, 0], [1.0, 0]])}
        )
    raise AssertionError(cls_name)


@pytest.mark.parametrize(
    "cls_name", ["BinaryConfusion", "MulticlassConfusion", "ClusterContingency", "RankAUC", "ProbabilityScores"]
)
def test_merging_past_int64_is_a_clear_error(cls_name):
    a, b = _near_limit(cls_name), _near_limit(cls_name)
    before = a.state_dict()
    with pytest.raises(ValueError, match="int64 range") as info:
        a.merge(b)
    assert isinstance(info.value, OverflowError) and isinstance(info.value, sm.CountOverflowError)
    after = a.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)  # unchanged
    with pytest.raises(ValueError, match="int64 range"):
        a + b
    # below the limit, merging still works
    a.merge(type(a)(**a.settings))


def test_merged_files_near_2_62_refuse_to_wrap(tmp_path):
    path = forge(tmp_path / "a", "BinaryConfusion", {"threshold": None}, _binary(BIG, (BIG, 0, 0, 0)))
    a, b = sm.load_state(path), sm.load_state(path)
    with pytest.raises(ValueError, match="int64 range"):
        a.merge(b)
    assert a.finalize().tp == BIG
    done, _ = _cli("merge", str(path), str(path))
    assert done.returncode != 0 and "int64 range" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_updating_past_int64_is_a_clear_error():
    acc = sm.BinaryConfusion().load_state_dict(_binary(2**63 - 3, (2**63 - 3, 0, 0, 0)))
    with pytest.raises(ValueError, match="int64 range"):
        acc.update([1, 1, 1, 1], [1, 1, 1, 1])
    assert acc.n == 2**63 - 3
    acc.update([1, 0], [1, 0])  # what still fits is taken
    assert acc.n == 2**63 - 1
    ev = sm.Evaluator({"b": sm.BinaryConfusion()})
    ev.load_state_dict(
        {
            "n": np.array([2**63 - 1], np.int64),
            "b.n": np.array([2**63 - 1], np.int64),
            "b.counts": np.array([2**63 - 1, 0, 0, 0], np.int64),
            "b.wsums": np.zeros((4, 2)),
            "b.weighted": np.zeros(1, np.int64),
        }
    )
    with pytest.raises(ValueError, match="int64 range"):
        ev.update([1], [1])
    assert ev.n == 2**63 - 1 and ev.members["b"].n == 2**63 - 1


# ---------------------------------------------------------- bounded AMI
def _table_state(counts: np.ndarray) -> dict:
    r, c = counts.shape
    t, p = np.divmod(np.arange(r * c, dtype=np.int64), c)
    return {
        "n": np.array([int(counts.sum())], np.int64),
        "true": t,
        "pred": p,
        "counts": counts.ravel().astype(np.int64),
    }


def test_hostile_contingency_table_finalizes_fast(tmp_path):
    # a 4x4 table of counts near 1e17 (n near 1.6e18): the full expectation
    # would sum ~1e9 terms for each of the 16 pairs of sizes
    rng = np.random.default_rng(17)
    counts = (1e17 * (1 + rng.random((4, 4)))).astype(np.int64)
    path = forge(tmp_path / "huge", "ClusterContingency", {"average_method": "arithmetic"}, _table_state(counts))
    assert os.path.getsize(path) < 4096
    acc = sm.load_state(path)
    t0 = time.perf_counter()
    r = acc.finalize()
    assert time.perf_counter() - t0 < 5
    assert -1 <= r.ami <= 1 and np.isfinite(r.ami)
    a, b = counts.sum(axis=1), counts.sum(axis=0)
    n = int(counts.sum())
    # near independence: E[MI] is (R-1)(C-1)/(2n) to first order
    assert expected_mutual_info(a, b, n) == pytest.approx(9 / (2 * n), rel=1e-6)


def test_emi_matches_the_full_sum_and_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(5)
    for n, k in [(500, 4), (20_000, 6), (150_000, 3)]:
        t = rng.integers(0, k, n)
        p = np.where(rng.random(n) < 0.3, t, rng.integers(0, k + 1, n))
        acc = sm.ClusterContingency().update(t, p)
        a = np.bincount(t).astype(np.int64)
        b = np.bincount(p).astype(np.int64)
        full = expected_mutual_info(a, b, n, width=0, moments_sd=math.inf)  # every term
        assert expected_mutual_info(a, b, n) == pytest.approx(full, rel=1e-13)
        assert acc.finalize().ami == pytest.approx(metrics.adjusted_mutual_info_score(t, p), rel=1e-9)


def test_moment_expansion_agrees_with_the_window():
    # where both are cheap: spreads of 2e3..1e4 (the expansion is used past 16384)
    for a, b, n in [(3 * 10**7, 45 * 10**6, 10**8), (3 * 10**8, 45 * 10**7, 10**9), (5 * 10**8, 10**9, 4 * 10**9)]:
        window = _cell(a, b, n, 40.0, math.inf)
        moments = _cell(a, b, n, 40.0, 0.0)
        assert moments == pytest.approx(window, rel=3e-13)


def test_ami_of_4e9_merged_rows_finishes_in_seconds():
    rng = np.random.default_rng(9)
    counts = (4e9 / 16 * (0.5 + rng.random((4, 4)))).astype(np.int64)
    counts[0, 0] += 3 * int(counts.sum()) // 10  # some agreement
    acc = sm.ClusterContingency().load_state_dict(_table_state(counts))
    assert acc.n > 4e9
    t0 = time.perf_counter()
    r = acc.finalize()
    assert time.perf_counter() - t0 < 10
    a, b, n = counts.sum(axis=1), counts.sum(axis=0), int(counts.sum())
    walked = expected_mutual_info(a, b, n, moments_sd=math.inf)  # every cell walked
    expanded = expected_mutual_info(a, b, n, moments_sd=0.0)  # every cell from its moments
    assert walked == pytest.approx(expanded, rel=1e-12)
    assert 0 < r.ami < 1


# ------------------------------------------------ every accumulator, declared
def _fields_by_key(acc):
    """Each state key of ``acc`` with its declared Field (members' for an Evaluator)."""
    if isinstance(acc, sm.Evaluator):
        return {f"{name}.{f.name}": f for name, m in acc.members.items() for f in m.fields}
    if isinstance(acc, sm.Sliced):  # the template's fields, overall and per slice
        inner = _fields_by_key(acc.template)
        return {f"{part}.{k}": f for part in ("overall", "slices") for k, f in inner.items()}
    if isinstance(acc, sm.Bootstrap):  # the template's fields, point estimate and replicates
        inner = _fields_by_key(acc.template)
        return {f"{part}.{k}": f for part in ("point", "replicates") for k, f in inner.items()}
    if isinstance(acc, (sm.Windowed, sm.History)):  # the template's fields, every bucket's
        return {f"b.{k}": f for k, f in _fields_by_key(acc.template).items()}
    return {f.name: f for f in acc.fields}


def _fed(case):
    from tests.registry import batches

    acc = case.make()
    arrays, w = case.data(np.random.default_rng(0))
    for b in batches(arrays, w):
        acc.update(*b["args"], sample_weight=b["sample_weight"])
    return acc


def _cases():
    from tests.registry import CASES

    return CASES


@pytest.mark.parametrize("case", _cases(), ids=repr)
def test_every_declared_nonnegative_entry_refuses_a_negative_value(case):
    acc = _fed(case)
    fields = _fields_by_key(acc)
    state = acc.state_dict()
    tried = 0
    for key, a in state.items():
        f = fields.get(key)
        if f is None or not f.nonneg or a.size == 0:
            continue
        forged = {k: v.copy() for k, v in state.items()}
        flat = forged[key].reshape(-1)
        flat[0] = -1  # for a pair, (s, c) = (-1, 0): a negative value
        if f.merge == "pairs":
            flat[1] = 0.0
        with pytest.raises(ValueError):
            case.make().load_state_dict(forged)
        tried += 1
    assert tried  # every accumulator declares some non-negative entry


def _cal_mean_outside(st):
    st["predicted"][1, 0] = 0.0  # bin (0.5, 1] with a mean probability of 0


def _class_tables_uneven(st):
    z = lambda *v: np.array([[x, 0.0] for x in v])  # noqa: E731
    st["class_counts"] = np.array([1, 0, 0, 5])  # 6 = n * K in all, 1 and 5 per class
    st["class_weight"], st["class_predicted"] = z(1, 0, 0, 5), z(0.3, 0, 0, 5)
    st["class_observed"] = z(0, 0, 0, 0)


def _multilabel_rows(st):
    st["rows"][:2] = [0, 12]  # exact matches and wrong cells the counts do not show


def _topk_sums(st):
    st["sums"][0, 0] = 0.0  # unweighted: the sums are the hits and the rows


def _rank_rows(st):
    st["n"][0] = 0  # weighted entries of no observation


_P3 = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]])
FORGED = {
    "Calibration mean outside its bin": (
        lambda: sm.Calibration(n_bins=2).update([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.7]),
        _cal_mean_outside,
        "outside its edges",
    ),
    "ClassCalibration tables of other row counts": (
        lambda: sm.ClassCalibration(2, n_bins=2).update([0, 1, 1], [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]),
        _class_tables_uneven,
        "class 0's table counts 1 rows",
    ),
    "MultilabelConfusion rows beside its counts": (
        lambda: sm.MultilabelConfusion(3).update(*[[[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]]] * 2),
        _multilabel_rows,
        "does not fit the counts",
    ),
    "TopKAccuracy sums beside its hits": (
        lambda: sm.TopKAccuracy(1).update([0, 1, 2, 2], _P3[:4]),
        _topk_sums,
        "is not their 3 hits",
    ),
    "weighted MulticlassRankAUC entries of no row": (
        lambda: sm.MulticlassRankAUC(3).update([0, 1, 2, 0, 1, 2], _P3, sample_weight=np.ones(6)),
        _rank_rows,
        "entries but only 0 observations",
    ),
}


@pytest.mark.parametrize("name", FORGED)
def test_a_state_no_stream_could_give_is_refused(name):
    make, forge_state, match = FORGED[name]
    acc = make()
    st = acc.state_dict()
    forge_state(st)
    with pytest.raises(ValueError, match=match):
        acc._empty_like().load_state_dict(st)
    acc._empty_like().load_state_dict(acc.state_dict())  # the true state loads


@pytest.mark.parametrize(
    "template",
    [sm.BinaryConfusion(), sm.MulticlassConfusion(2), sm.ProbabilityScores()],
    ids=lambda t: type(t).__name__,
)
@pytest.mark.parametrize("weighted", [False, True])
def test_a_sliced_overall_state_that_is_not_its_slices_merged_is_refused(template, weighted):
    y, p = np.array([1, 0, 1, 0, 1]), np.array([1, 0, 1, 0, 0])
    if isinstance(template, sm.ProbabilityScores):
        p = np.array([0.9, 0.2, 0.7, 0.4, 0.3])
    w = np.array([0.3, 1.7, 2.2, 0.9, 1e-3]) if weighted else None
    acc = sm.Sliced(template).update(y, p, sample_weight=w, by=["x", "x", "y", "y", "x"])
    st = acc.state_dict()
    sm.Sliced(template).load_state_dict(st)  # the true state loads
    key = next(
        k
        for k in ("overall.counts", "overall.wsums", "overall.wsum", "overall.sums")
        if k in st and st[k].size and st[k].any() and not (weighted and k == "overall.counts")
    )
    a = st[key]
    st[key] = np.roll(a.ravel(), 1).reshape(a.shape) if a.dtype.kind == "i" else a * 1.5
    with pytest.raises(ValueError, match="is not the slices' entries merged|does not|exceed"):
        sm.Sliced(template).load_state_dict(st)


def test_a_small_file_declaring_many_replicates_is_refused_before_allocating(tmp_path):
    settings = {"template": {"class": "Calibration", "settings": {"n_bins": 100}}, "replicates": 10_000, "seed": 0}
    path = forge(tmp_path / "b.state", "Bootstrap", settings, {"n": np.zeros(1, np.int64)})
    _load_fails(path, "10000 replicates of .* more than the file holds")


def test_a_small_file_of_many_zero_slices_is_refused_before_allocating(tmp_path):
    # every slice's fields in the short form of zeros, over 100k keys of a large table
    tmpl = sm.Calibration(n_bins=4000)
    g = 100_000
    arrays = {
        "n": np.zeros(1, np.int64),
        "keys#int64": np.arange(g, dtype=np.int64),
        "keys": np.frombuffer(json.dumps({"columns": 1, "names": ["by"], "keys": None}).encode(), np.uint8),
    }
    for k, v in tmpl.state_dict().items():
        arrays[f"overall.{k}"] = v
        arrays[f"slices.{k}"] = np.zeros(0, v.dtype)
        arrays[f"slices.{k}#shape"] = np.array(v.shape, np.int64).reshape(1, v.ndim)
    settings = {"template": {"class": "Calibration", "settings": {"n_bins": 4000}}, "max_slices": 10**9}
    path = forge(tmp_path / "s.state", "Sliced", settings, arrays)
    _load_fails(path, "100000 slices of zeros .* more than the file holds")


def test_settings_a_state_file_cannot_hold_are_refused_before_writing(tmp_path):
    acc = sm.MulticlassConfusion(labels=[2**70, 1]).update([2**70, 1], [1, 1])
    path = tmp_path / "big-labels.state"
    with pytest.raises(ValueError, match="past int64, which a state file cannot hold"):
        acc.save(path)
    assert not path.exists() and not list(tmp_path.iterdir())  # no file, no temporary left
    assert pickle_round_trip(acc) == acc  # pickling holds any label


def pickle_round_trip(acc):
    import pickle

    return pickle.loads(pickle.dumps(acc))
