"""``streammetrics evaluate --bootstrap`` and ``streammetrics compare``, end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import cli

N = 2000


def _files(tmp_path, n=N, parts=(0, 700, N)):
    """CSV shards of two models' scores (reading CSV needs pyarrow)."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.4).astype(np.int64)
    a = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1).round(4)
    b = np.clip(0.1 * y + 0.9 * rng.random(n), 0, 1).round(4)
    ids = rng.permutation(n) * 3 + 5
    w = rng.random(n).round(3)
    cols = {"y": y, "a": a, "b": b, "id": ids, "w": w}
    names = []
    for i, (lo, hi) in enumerate(zip(parts[:-1], parts[1:])):
        path = tmp_path / f"part{i}.csv"
        head = ",".join(cols)
        np.savetxt(
            path,
            np.column_stack([c[lo:hi] for c in cols.values()]),
            delimiter=",",
            header=head,
            comments="",
            fmt=["%d", "%.4f", "%.4f", "%d", "%.3f"],
        )
        names.append(str(path))
    return cols, names


def _run(capsys, args):
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_bootstrap_reports_intervals_that_match_the_library(tmp_path, capsys):
    cols, paths = _files(tmp_path)
    code, out, err = _run(
        capsys,
        [
            "evaluate",
            *paths,
            "--p",
            "a",
            "--key",
            "id",
            "--bootstrap",
            "30",
            "--seed",
            "4",
            "--format",
            "json",
            "--progress",
            "never",
        ],
    )
    assert code == 0, err
    doc = json.loads(out)
    want = (
        sm.Bootstrap(sm.Evaluator(task="binary"), replicates=30, seed=4)
        .update(cols["y"], cols["a"], key=cols["id"])
        .finalize()
    )
    assert doc["replicates"] == 30 and doc["n"] == N and doc["key"] == "id"
    for k in ("accuracy", "f1", "log_loss", "auc"):
        got = doc["metrics"][k]
        assert got["value"] == pytest.approx(want[k], rel=1e-12)
        assert got["ci_lower"] == pytest.approx(want[f"{k}_ci_lower"], rel=1e-9)
        assert got["ci_upper"] == pytest.approx(want[f"{k}_ci_upper"], rel=1e-9)
    code, text, _ = _run(
        capsys,
        ["evaluate", *paths, "--p", "a", "--key", "id", "--bootstrap", "30", "--seed", "4", "--progress", "never"],
    )
    line = next(s for s in text.splitlines() if s.strip().startswith("auc "))
    assert "[" in line and "]" in line and "bootstrap" in text


def test_evaluate_bootstrap_keyed_is_the_same_whatever_the_files(tmp_path, capsys):
    _, two = _files(tmp_path)
    one_dir = tmp_path / "one"
    one_dir.mkdir()
    _, one = _files(one_dir, parts=(0, N))
    docs = []
    for paths in (two, one, two[::-1]):
        code, out, err = _run(
            capsys,
            [
                "evaluate",
                *paths,
                "--p",
                "a",
                "--weight",
                "w",
                "--key",
                "id",
                "--bootstrap",
                "20",
                "--format",
                "json",
                "--progress",
                "never",
            ],
        )
        assert code == 0, err
        docs.append(json.loads(out)["metrics"])
    for k in ("accuracy", "recall", "brier"):
        for d in docs[1:]:
            assert d[k]["ci_lower"] == pytest.approx(docs[0][k]["ci_lower"], rel=1e-12)
            assert d[k]["ci_upper"] == pytest.approx(docs[0][k]["ci_upper"], rel=1e-12)


def test_evaluate_bootstrap_refusals(tmp_path, capsys):
    _, paths = _files(tmp_path)
    code, _, err = _run(capsys, ["evaluate", *paths, "--p", "a", "--bootstrap", "5", "--by", "id"])
    assert code == 1 and "--bootstrap does not combine with --by" in err
    code, _, err = _run(capsys, ["evaluate", *paths, "--p", "a", "--bootstrap", "5", "--key", "w"])
    assert code == 1 and "column 'w'" in err and "integer row id" in err
    with pytest.raises(SystemExit):
        cli.main(["evaluate", *paths, "--bootstrap", "0"])
    capsys.readouterr()


def test_compare_reports_the_paired_differences(tmp_path, capsys):
    cols, paths = _files(tmp_path)
    code, out, err = _run(
        capsys,
        [
            "compare",
            *paths,
            "--p",
            "a",
            "--p",
            "b",
            "--key",
            "id",
            "--bootstrap",
            "40",
            "--format",
            "json",
            "--progress",
            "never",
        ],
    )
    assert code == 0, err
    doc = json.loads(out)
    scores = doc["scores"]

    def boot(p):
        return sm.Bootstrap(
            sm.Evaluator(
                {
                    "binary": sm.BinaryConfusion(threshold=0.5),  # noqa: E731
                    "probability": sm.ProbabilityScores(),
                }
            ),
            replicates=40,
        ).update(cols["y"], p, key=cols["id"])

    want = sm.compare(boot(cols["a"]), boot(cols["b"]))
    for k in ("accuracy", "f1", "log_loss"):
        assert scores[k]["diff"] == pytest.approx(want[f"{k}_diff"], rel=1e-12)
        assert scores[k]["diff_ci_lower"] == pytest.approx(want[f"{k}_diff_ci_lower"], rel=1e-9)
        assert scores[k]["p_value"] == want[f"{k}_p_value"]
    auc = sm.paired_delong(cols["y"], cols["a"], cols["b"])
    assert scores["auc"]["diff"] == pytest.approx(auc.auc_diff, rel=1e-12)
    assert scores["auc"]["p_value"] == pytest.approx(auc.p_value, rel=1e-9, abs=1e-300)
    assert scores["auc"]["method"] == "DeLong" and scores["f1"]["method"] == "bootstrap"
    code, text, _ = _run(
        capsys, ["compare", *paths, "--p", "a", "--p", "b", "--progress", "never", "--bootstrap", "40"]
    )
    assert "comparison of a - b on 2,000 rows" in text and "DeLong" in text


def test_compare_a_model_with_itself(tmp_path, capsys):
    cols, _ = _files(tmp_path)
    np.savetxt(
        tmp_path / "same.csv",
        np.column_stack([cols["y"], cols["a"], cols["a"]]),
        delimiter=",",
        header="y,a,c",
        comments="",
        fmt=["%d", "%.4f", "%.4f"],
    )
    code, out, err = _run(
        capsys,
        [
            "compare",
            str(tmp_path / "same.csv"),
            "--p",
            "a",
            "--p",
            "c",
            "--bootstrap",
            "20",
            "--format",
            "json",
            "--progress",
            "never",
        ],
    )
    assert code == 0, err
    for k, s in json.loads(out)["scores"].items():
        assert s["diff"] == 0.0 and s["p_value"] == 1.0, k


def test_compare_refusals(tmp_path, capsys):
    _, paths = _files(tmp_path)
    code, _, err = _run(capsys, ["compare", *paths, "--p", "a"])
    assert code == 1 and "two different --p columns" in err
    code, _, err = _run(capsys, ["compare", *paths, "--p", "a", "--p", "id", "--progress", "never"])
    assert code == 1 and "column 'id'" in err and "--scores score" in err
    with pytest.raises(SystemExit):
        cli.main(["compare", *paths, "--p", "a", "--p", "b", "--batch-rows", "0"])
    err = capsys.readouterr().err
    assert "--batch-rows: expected a number > 0, got 0" in err and "replicates" not in err


def test_evaluate_bootstrap_plots_draw_the_bands(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import streammetrics.report.plots as plots

    cols, paths = _files(tmp_path)
    drawn = {}
    for name in ("roc", "pr"):
        real = getattr(plots, name)

        def spy(*a, _real=real, _name=name, **kw):
            drawn.setdefault(_name, []).append(kw.get("band"))
            return _real(*a, **kw)

        monkeypatch.setattr(plots, name, spy)
    out_dir = tmp_path / "plots"
    code, _, err = _run(
        capsys,
        [
            "evaluate",
            *paths,
            "--p",
            "a",
            "--key",
            "id",
            "--bootstrap",
            "25",
            "--ci",
            "0.9",
            "--plots",
            str(out_dir),
            "--progress",
            "never",
        ],
    )
    assert code == 0, err
    for name in ("roc.png", "pr.png", "threshold.png", "reliability.png", "confusion.png"):
        path = out_dir / name
        assert path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "90% bootstrap bands of 25 replicates" in err
    want = sm.Bootstrap(sm.Evaluator(task="binary"), replicates=25).update(cols["y"], cols["a"], key=cols["id"])
    for name, method in (("roc", want.roc_band), ("pr", want.pr_band)):
        band = drawn[name][-1]  # the last drawing of the file is the one with the band
        assert band is not None and band[3] == 0.9
        for got, ref in zip(band[:3], method(0.9)):
            np.testing.assert_array_equal(got, ref)


def test_evaluate_bootstrap_plots_of_a_binned_rank_state(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _, paths = _files(tmp_path)
    out_dir = tmp_path / "plots"
    code, _, err = _run(
        capsys,
        [
            "evaluate",
            *paths,
            "--p",
            "a",
            "--bootstrap",
            "5",
            "--max-bins",
            "64",
            "--plots",
            str(out_dir),
            "--progress",
            "never",
        ],
    )
    assert code == 0, err
    assert (out_dir / "roc.png").stat().st_size > 1000 and "95% bootstrap bands of 5 replicates" in err
