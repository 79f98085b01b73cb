"""Results that are easy to reach and read: per-class frames of a whole report,
a comparison table, comparing accumulators by their results, the sliced frame's
overall row, exact bounds left out of bootstraps, the confusion first."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

LABELS = ["cat", "dog", "bird"]


def _multiclass(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array(LABELS)[rng.integers(0, 3, n)]
    return y, rng.dirichlet([1, 1, 1], n)


def test_a_whole_report_gives_per_class_frames():
    pytest.importorskip("pandas")
    y, P = _multiclass()
    report = sm.Evaluator(task="multiclass", labels=LABELS, auc=True).update(y, P).finalize()
    frame = report.to_frame(per_class=True)
    assert list(frame.index) == LABELS
    confusion = report.parts["multiclass"].to_frame(per_class=True)
    for col in ("precision", "recall", "f1"):
        assert np.array_equal(frame[col].to_numpy(), confusion[col].to_numpy())
    assert np.array_equal(frame["per_class_auc"].to_numpy(), report.parts["auc"].per_class_auc)
    assert frame.columns.is_unique
    binary = sm.Evaluator(task="binary").update([1, 0, 1], [0.8, 0.3, 0.4]).finalize()
    with pytest.raises(ValueError, match="per-class scores"):
        binary.to_frame(per_class=True)


def test_a_comparison_prints_a_table_with_p_values_at_their_resolution():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 2000)
    good = np.clip(0.4 * y + 0.6 * rng.random(2000), 0, 1)
    poor = rng.random(2000)
    ids = np.arange(2000)
    boot = lambda p: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=200).update(y, p, key=ids)  # noqa: E731
    r = sm.compare(boot(good), boot(poor))
    lines = str(r).splitlines()
    assert lines[0] == "comparison of a - b on 2,000 rows"
    assert lines[3].split() == ["score", "a", "b", "difference", "95%", "interval", "p-value", "method"]
    accuracy = next(line for line in lines if line.strip().startswith("accuracy"))
    assert "< 0.005" in accuracy and r.accuracy_p_value == 0  # 1/200 is what 200 replicates resolve
    assert repr(r).startswith("Comparison(accuracy_a=")


def test_same_results_compares_what_users_read():
    rng = np.random.default_rng(2)
    y, p = rng.integers(0, 2, 1000), rng.random(1000)
    cut = sm.Evaluator(task="binary")
    for i in range(0, 1000, 7):
        cut.update(y[i : i + 7], p[i : i + 7])
    whole = sm.Evaluator(task="binary").update(y, p)
    assert cut != whole  # the compensation terms of the sums differ
    assert cut.same_results(whole) and whole.same_results(cut)
    other = sm.Evaluator(task="binary").update(y, np.roll(p, 1))
    assert not cut.same_results(other)
    assert not sm.ProbabilityScores().update(y, p).same_results(sm.ProbabilityScores().update(y, p * 0.999), rtol=1e-6)
    with pytest.raises(TypeError, match="must be a Evaluator|must be an Evaluator"):
        cut.same_results(sm.RankAUC())
    keys = rng.integers(0, 4, 1000)
    a = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y[:400], p[:400], by=keys[:400])
    a.update(y[400:], p[400:], by=keys[400:])
    assert a.same_results(sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=keys))


def test_the_sliced_frame_ends_with_the_overall_row():
    pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    y, p, keys = rng.integers(0, 2, 500), rng.random(500), rng.integers(0, 5, 500)
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=keys).finalize(ci=0.95)
    frame = r.to_frame()
    assert list(frame.index) == [0, 1, 2, 3, 4, "(all)"]
    last = frame.loc["(all)"]
    assert last["rows"] == 500 and last["f1"] == r.overall.f1 and not last["f1_differs"]
    assert list(r.to_frame(overall=False).index) == [0, 1, 2, 3, 4]
    cross = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=(keys, keys % 2)).finalize()
    assert cross.to_frame().index[-1] == ("(all)", "")


def test_an_exact_bootstrap_leaves_out_bounds_equal_to_the_value():
    rng = np.random.default_rng(4)
    y, p = rng.integers(0, 2, 400), rng.random(400)
    r = sm.Bootstrap(sm.RankAUC(), replicates=20).update(y, p, key=np.arange(400)).finalize()
    assert "auc_ci_lower" in r and "auc_lower" not in r and "auc_lower_ci_lower" not in r


def test_the_multiclass_report_shows_the_confusion_first():
    y, P = _multiclass()
    text = str(sm.Evaluator(task="multiclass", labels=LABELS, auc=True).update(y, P).finalize())
    sections = [
        line for line in text.splitlines() if line and not line.startswith((" ", "=")) and "evaluation" not in line
    ]
    assert sections[0] == "Confusion"


def test_the_slice_plot_keeps_small_bad_slices_and_follows_top(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from streammetrics.report import plots

    drawn = {}

    def capture(labels, *args, **kwargs):
        drawn["labels"], drawn["note"] = list(labels), args[9]
        return "x.png"

    monkeypatch.setattr(plots, "slice_scores", capture)
    rng = np.random.default_rng(5)
    keys = np.repeat(np.arange(50), np.r_[np.full(49, 100), 20])  # slice 49 is the smallest
    y = rng.integers(0, 2, keys.shape[0])
    p = np.where(keys == 49, 1 - y, y).astype(float)  # and the worst
    p[keys != 49] = np.where(rng.random((keys != 49).sum()) < 0.8, y[keys != 49], 1 - y[keys != 49])
    r = sm.Sliced(sm.BinaryConfusion(threshold=0.5)).update(y, p, by=keys).finalize()
    r.plot_scores(str(tmp_path), "f1", max_slices=40)
    assert len(drawn["labels"]) == 40 and "49" in drawn["labels"]
    assert drawn["note"] == "the 20 largest, the 10 highest and 10 lowest f1 of 50 slices"
    r.plot(str(tmp_path), max_slices=8)
    assert len(drawn["labels"]) == 8 and "49" in drawn["labels"]
