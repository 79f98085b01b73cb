"""Safe state files: round trips, and every kind of bad file is a ValueError."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest

import streammetrics as sm


@pytest.fixture
def saved(tmp_path):
    acc = sm.BinaryConfusion(threshold=0.25).update([1, 0, 1], [0.3, 0.1, 0.2])
    path = tmp_path / "a.state"
    acc.save(path)
    return acc, path


def test_round_trip_and_exact_path(saved, tmp_path):
    acc, path = saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.state"]
    back = sm.BinaryConfusion.load(path)
    assert back == acc and back.threshold == 0.25
    assert sm.load_state(str(path)) == acc
    # the loaded accumulator keeps working
    back.update([0], [0.9])
    assert back.n == 4


def test_a_path_given_as_bytes_saves_and_loads(saved, tmp_path):
    acc, _ = saved
    path = bytes(tmp_path / "b.state")
    acc.save(path)
    assert sm.load_state(path) == acc


def test_other_class_is_rejected(saved):
    _, path = saved
    with pytest.raises(ValueError, match="holds a BinaryConfusion state, not a RegressionErrors"):
        sm.RegressionErrors.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        sm.BinaryConfusion.load(tmp_path / "nope")


@pytest.mark.parametrize(
    "content, match",
    [
        (b"", "not a streammetrics state file"),
        (b"hello world", "not a streammetrics state file"),
        (pickle.dumps({"a": 1}), "not a streammetrics state file"),
        (b"PK\x03\x04garbage", "corrupt or truncated"),
    ],
)
def test_foreign_files(tmp_path, content, match):
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        sm.load_state(path)


def test_truncated_file(saved, tmp_path):
    _, path = saved
    blob = path.read_bytes()
    for cut in (10, len(blob) // 2, len(blob) - 5):
        bad = tmp_path / f"cut{cut}"
        bad.write_bytes(blob[:cut])
        with pytest.raises(ValueError):
            sm.load_state(bad)


def _write_npz(path, arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _header(**kw):
    h = {"format": "streammetrics-state", "version": 1, "class": "BinaryConfusion", "settings": {"threshold": None}}
    h.update(kw)
    return np.frombuffer(json.dumps(h).encode(), np.uint8)


def _good_arrays():
    return {
        "n": np.array([3], np.int64),
        "counts": np.array([1, 0, 1, 1], np.int64),
        "wsums": np.zeros((4, 2)),
        "weighted": np.zeros(1, np.int64),
    }


def test_crafted_pickle_payload_never_runs(tmp_path):
    # an object array inside the archive: reading it would need pickle
    arrays = _good_arrays()
    arrays["__header__"] = _header()
    arrays["counts"] = np.array([object()], dtype=object)
    path = tmp_path / "evil"
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # numpy pickles object arrays into the member
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="not a valid streammetrics state file"):
        sm.load_state(path)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: a.pop("__header__"), "no header"),
        (lambda a: a.update(__header__=np.frombuffer(b"{not json", np.uint8)), "unreadable header"),
        (lambda a: a.update(__header__=_header(format="other")), "not a streammetrics state file"),
        (lambda a: a.update(__header__=_header(version=99)), "format version 99"),
        (lambda a: a.update(__header__=_header(**{"class": "os.system"})), "unknown accumulator class"),
        (lambda a: a.update(__header__=_header(settings={"threshold": "x"})), "invalid settings"),
        (lambda a: a.pop("wsums"), "do not match"),
        (lambda a: a.update(counts=np.array([1.0, 0, 1, 1])), "dtype"),
        (lambda a: a.update(counts=np.array([1, 0, 1], np.int64)), "shape"),
        (lambda a: a.update(counts=np.array([-1, 0, 1, 1], np.int64)), "negative"),
        (lambda a: a.update(wsums=np.full((4, 2), np.nan)), "NaN"),
        (lambda a: a.update(n=np.array([1], np.int64)), "exceed"),
    ],
)
def test_crafted_files(tmp_path, change, match):
    arrays = _good_arrays()
    arrays["__header__"] = _header()
    change(arrays)
    path = tmp_path / "crafted"
    _write_npz(path, arrays)
    with pytest.raises(ValueError, match=match):
        sm.load_state(path)


def test_good_crafted_file_loads(tmp_path):
    arrays = _good_arrays()
    arrays["__header__"] = _header()
    path = tmp_path / "ok"
    _write_npz(path, arrays)
    r = sm.load_state(path).finalize()
    assert (r.tp, r.fp, r.fn, r.tn) == (1, 0, 1, 1)


def test_extra_member_in_zip_is_rejected(saved, tmp_path):
    _, path = saved
    bad = tmp_path / "extra"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.namelist():
            dst.writestr(item, src.read(item))
        dst.writestr("payload.pkl", pickle.dumps(1))
    with pytest.raises(ValueError, match="unexpected member"):
        sm.load_state(bad)


@pytest.mark.parametrize("cls", [sm.BinaryConfusion, sm.ProbabilityScores, sm.RegressionErrors])
def test_every_core_accumulator_round_trips(cls, tmp_path):
    acc = cls().update([1, 0, 1, 0], [1.0, 0.0, 0.0, 0.0])
    acc.save(tmp_path / "s")
    assert cls.load(tmp_path / "s") == acc
    assert pickle.loads(pickle.dumps(acc)) == acc


# ------------------------------------------------------- saving: errors and leftovers
def test_save_error_names_the_users_path(tmp_path):
    import streammetrics as sm

    target = tmp_path / "missing" / "acc.state"
    with pytest.raises(FileNotFoundError) as info:
        sm.BinaryConfusion().save(target)
    assert info.value.filename == str(target)
    assert str(target) in str(info.value) and ".smtmp" not in str(info.value)


def test_save_removes_what_a_killed_save_left_behind(tmp_path):
    import os
    import subprocess
    import sys

    import streammetrics as sm
    from streammetrics._protocol import tempfiles

    def partial(base, folder=tmp_path):  # a save killed after it wrote part of its file
        code = (
            "import sys, os\n"
            "from streammetrics._protocol import tempfiles\n"
            "owner = tempfiles.Owner(sys.argv[1], sys.argv[2], '.smtmp')\n"
            "open(owner.new_path(), 'wb').write(b'partial')\n"
            "os._exit(0)\n"
        )
        subprocess.run([sys.executable, "-c", code, str(folder), f".{base}."], check=True)

    partial("acc.state")
    partial("other.state")
    stale = sorted(p.name for p in tmp_path.iterdir())
    assert len(stale) == 4  # two partial files and their two lock files
    live = tempfiles.Owner(str(tmp_path), ".acc.state.", ".smtmp")  # a save under way in another process
    live_file = live.new_path()
    open(live_file, "wb").close()
    sm.BinaryConfusion().update([1, 0], [1, 1]).save(tmp_path / "acc.state")
    assert sm.load_state(tmp_path / "acc.state").n == 2
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "acc.state")
    assert [n for n in left if n.startswith(".acc.state.")] == sorted(
        [os.path.basename(live_file), os.path.basename(live_file).rsplit(".", 2)[0] + ".lock"]
    )
    assert len([n for n in left if n.startswith(".other.state.")]) == 2
    live.release()


def test_multiclass_finalize_copies_the_matrix_once():
    import tracemalloc

    import streammetrics as sm

    k = 1500
    rng = np.random.default_rng(0)
    for weights in (None, rng.random(20_000)):
        acc = sm.MulticlassConfusion(k).update(
            rng.integers(0, k, 20_000), rng.integers(0, k, 20_000), sample_weight=weights
        )
        matrix_bytes = k * k * 8
        tracemalloc.start()
        r = acc.finalize()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert r.matrix.shape == (k, k)
        # the result's own copy of the matrix, and little more
        assert peak < 1.3 * matrix_bytes, peak / matrix_bytes
