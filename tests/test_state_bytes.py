"""State bytes: ``to_bytes``/``from_bytes`` hold exactly what a state file holds, checked alike."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import streammetrics as sm
from streammetrics._protocol import statefile

from .harness import forged
from .registry import CASES, batches


def _folded(case):
    arrays, w = case.data(np.random.default_rng(0))
    acc = case.make()
    for b in batches(arrays, w):
        acc.update(*b["args"], sample_weight=b["sample_weight"])
    return acc


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_accumulator_round_trips_as_the_bytes_of_its_file(case, tmp_path):
    acc = _folded(case)
    data = acc.to_bytes()
    assert isinstance(data, bytes)
    acc.save(tmp_path / "s")
    assert (tmp_path / "s").read_bytes() == data  # one format: the file's bytes
    for back in (type(acc).from_bytes(data), sm.from_bytes(data), sm.Accumulator.from_bytes(memoryview(data))):
        assert type(back) is type(acc) and back == acc and back.n == acc.n
    assert type(acc).from_bytes(data).finalize().as_dict().keys() == acc.finalize().as_dict().keys()


def test_another_class_s_bytes_are_refused():
    data = sm.BinaryConfusion().update([1, 0], [1, 1]).to_bytes()
    with pytest.raises(sm.StateFileError, match="holds a BinaryConfusion state, not a RankAUC"):
        sm.RankAUC.from_bytes(data)


def test_only_bytes_are_read():
    with pytest.raises(TypeError, match="from bytes, got str"):
        sm.from_bytes("PK")


def test_truncated_and_foreign_bytes_are_refused():
    data = sm.RankAUC().update([0, 1, 1, 0], [0.1, 0.8, 0.3, 0.3]).to_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 5):
        with pytest.raises(sm.StateFileError):
            sm.from_bytes(data[:cut])
    with pytest.raises(sm.StateFileError, match="not a zip archive"):
        sm.from_bytes(b"\x80\x04K\x01.")  # a pickle is never read


def test_forged_bytes_are_refused_as_forged_files_are(tmp_path):
    acc = sm.BinaryConfusion().update([1, 0, 1], [1, 0, 0])
    path = forged(acc, tmp_path / "f", arrays={"n": np.array([1], np.int64)})
    with pytest.raises(sm.StateFileError, match="exceed"):
        sm.BinaryConfusion.from_bytes(Path(path).read_bytes())
    path = forged(acc, tmp_path / "g", settings={"threshold": "x"})
    with pytest.raises(sm.StateFileError, match="invalid settings"):
        sm.from_bytes(Path(path).read_bytes())


def test_a_pickled_member_never_runs():
    arrays = {"n": np.array([3], np.int64), "counts": np.array([object()], dtype=object)}
    header = {"format": "streammetrics-state", "version": 1, "class": "BinaryConfusion", "settings": {}}
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with pytest.raises(sm.StateFileError, match="Python objects"):
        sm.from_bytes(buf.getvalue())


def test_a_member_claiming_more_than_it_stores_allocates_nothing():
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(statefile.dumps("RankAUC", {}, {"n": np.zeros(1, np.int64)}))) as src:
        with zipfile.ZipFile(out, "w") as dst:  # stored, with true CRCs
            for name in src.namelist():
                raw = src.read(name)
                dst.writestr(name, raw.replace(b"'shape': (1,)", b"'shape': (9,)") if name == "n.npy" else raw)
    with pytest.raises(sm.StateFileError, match="declares 72 bytes"):
        sm.from_bytes(out.getvalue())


def test_sliced_and_evaluator_states_travel_as_bytes():
    ev = sm.Sliced(sm.Evaluator("binary"))
    ev.update([1, 0, 1, 0], [0.9, 0.2, 0.4, 0.6], by=["a", "a", "b", "b"])
    back = sm.from_bytes(ev.to_bytes())
    assert back == ev
    assert back.finalize().slices["b"].auc == ev.finalize().slices["b"].auc
