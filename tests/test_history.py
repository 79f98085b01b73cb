"""History: one state per step, its tables, best step and learning curves."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import StateFileError

from .harness import assert_results_equal, forged


def _epochs(rng, steps, n):
    y = (rng.random(n) < 0.5).astype(np.int64)
    out = []
    for s in range(steps):  # better with every step
        right = rng.random(n) < 0.6 + 0.3 * s / max(steps - 1, 1)
        out.append(np.clip(np.where(right, y, 1 - y) * 0.6 + rng.random(n) * 0.4, 0, 1))
    return y, out


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 3), st.booleans(), st.integers(0, 2**31))
def test_each_step_is_its_rows_any_batching_and_sharding(shards, per_row, seed):
    rng = np.random.default_rng(seed)
    y, ps = _epochs(rng, 4, 120)
    parts = [sm.History(sm.ProbabilityScores()) for _ in range(shards)]
    for step, p in enumerate(ps):
        for j, rows in enumerate(np.array_split(rng.permutation(120), shards)):
            steps = np.full(rows.shape[0], step) if per_row else step
            parts[j].update(y[rows], p[rows], step=steps)
    h = parts[0]
    for other in parts[1:]:
        h.merge(other)
    r = h.finalize()
    assert r.step.tolist() == [0, 1, 2, 3] and r.rows.tolist() == [120] * 4
    for i, p in enumerate(ps):
        ref = sm.ProbabilityScores().update(y, p).finalize()
        assert abs(r.log_loss[i] - ref.log_loss) <= 1e-12 * ref.log_loss
        assert_results_equal(h.parts()[i].finalize(), ref, rtol=1e-12)


def test_tables_best_json_and_intervals():
    rng = np.random.default_rng(1)
    y, ps = _epochs(rng, 5, 400)
    h = sm.History(sm.BinaryConfusion(threshold=0.5))
    for step, p in enumerate(ps):
        h.update(y, p, step=step * 10)
    r = h.finalize(ci=0.9)
    assert r.step.tolist() == [0, 10, 20, 30, 40]
    assert (r.accuracy_ci_lower <= r.accuracy).all() and (r.accuracy <= r.accuracy_ci_upper).all()
    best = h.best("accuracy")
    assert best.step == int(r.step[np.argmax(r.accuracy)]) and best.last_step == 40
    losses = sm.History(sm.ProbabilityScores())
    for step, p in enumerate(ps):
        losses.update(y, p, step=step)
    assert losses.best("log_loss").step == int(np.argmin(losses.finalize().log_loss))  # lower is better
    doc = json.loads(h.to_json(ci=0.9))
    assert [s["step"] for s in doc["steps"]] == [0, 10, 20, 30, 40] and "accuracy_ci_upper" in doc["steps"][0]
    with pytest.raises(ValueError, match="not a scalar score"):
        h.best("nope")
    with pytest.raises(TypeError, match="step="):
        h.update(y, ps[0])
    with pytest.raises(ValueError, match="step: expected"):
        h.update(y[:2], ps[0][:2], step=[1.5, 2.0])
    pytest.importorskip("pandas")
    assert h.to_frame()["accuracy"].tolist() == r.accuracy.tolist()


def test_best_against_last_paired_where_rows_carry_keys():
    rng = np.random.default_rng(2)
    y, ps = _epochs(rng, 3, 600)
    ps[2] = np.where(rng.random(600) < 0.5, ps[2], 1 - ps[2])  # the last epoch is worse
    h = sm.History(sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=100, seed=1))
    for step, p in enumerate(ps):
        h.update(y, p, key=np.arange(600), step=step)
    best = h.best("accuracy")
    assert best.step == 1 and best.accuracy_diff > 0 and best.accuracy_p_value < 0.05
    assert best.accuracy_diff_ci_lower > 0


def test_save_load_and_hostile_files(tmp_path):
    rng = np.random.default_rng(3)
    y, ps = _epochs(rng, 3, 100)
    h = sm.History(sm.RankAUC())
    for step, p in enumerate(ps):
        h.update(y, p, step=step)
    path = tmp_path / "h.smstate"
    h.save(path)
    back = sm.load_state(path)
    assert back == h
    assert_results_equal(back.finalize(), h.finalize(), rtol=0)
    st = h.state_dict()
    with pytest.raises(StateFileError, match="ascend"):
        sm.load_state(forged(h, tmp_path / "a.smstate", arrays={"keys": np.array([0, 2, 1], np.int64)}))
    with pytest.raises(StateFileError, match="the count"):
        sm.load_state(forged(h, tmp_path / "b.smstate", arrays={"n": st["n"] + 1}))
    with pytest.raises(StateFileError, match="b.lo"):
        sm.load_state(forged(h, tmp_path / "c.smstate", arrays={"b#shape.lo": st["b#shape.lo"] + 1}))


def test_torch_tensors_and_learning_curve_plot(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    y, ps = _epochs(rng, 4, 256)
    train, val = sm.History(sm.BinaryConfusion(threshold=0.5)), sm.History(sm.BinaryConfusion(threshold=0.5))
    for step, p in enumerate(ps):
        train.update(torch.from_numpy(y), torch.from_numpy(p), step=step)
        val.update(torch.from_numpy(y), torch.from_numpy(p[::-1].copy()), step=step)
    assert train.finalize().accuracy.tolist() == [
        sm.BinaryConfusion(threshold=0.5).update(y, p).finalize().accuracy for p in ps
    ]
    pytest.importorskip("matplotlib")
    png = train.plot("accuracy", tmp_path, others={"validation": val})
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
