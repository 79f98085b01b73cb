"""The ``streammetrics`` command, end to end, on small generated files."""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import Evaluator, cli, load_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 3000


def _need(module):
    return pytest.importorskip(module)


# ---------------------------------------------------------------- data, files
def _data(task, rng, n=N):
    if task == "binary":
        y = (rng.random(n) < 0.3).astype(np.int64)
        p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1).round(3)
        return {"y": y, "p": p, "w": rng.random(n)}
    if task == "multiclass":
        y = rng.integers(0, 3, n)
        proba = rng.dirichlet(np.ones(3), n)
        return {"y": y, "p0": proba[:, 0], "p1": proba[:, 1], "p2": proba[:, 2], "w": rng.random(n)}
    if task == "regression":
        y = rng.normal(size=n) * 4 + 20
        return {"y": y, "p": y + rng.normal(size=n), "w": rng.random(n)}
    y = rng.integers(0, 4, n)
    return {"y": y, "p": np.where(rng.random(n) < 0.75, y, rng.integers(0, 6, n))}


TASK_ARGS = {
    "binary": ["--task", "binary"],
    "multiclass": ["--task", "multiclass", "--n-classes", "3", "--p", "p0,p1", "--p", "p2"],
    "regression": ["--task", "regression"],
    "clustering": ["--task", "clustering"],
}
MEMBER = {
    "binary": "metrics.ranking",
    "multiclass": "metrics.multiclass",
    "regression": "metrics.regression",
    "clustering": "metrics.clustering",
}


def _need_task(task):
    pytest.importorskip(f"streammetrics.{MEMBER[task]}")


def _write(cols: dict, path: str) -> str:
    fmt = path.rsplit(".", 1)[1]
    if fmt in ("parquet", "csv"):
        pa = _need("pyarrow")
        table = pa.table(cols)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, path, row_group_size=700)
        else:
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, path)
    elif fmt == "npy":
        rec = np.empty(len(next(iter(cols.values()))), dtype=[(k, v.dtype) for k, v in cols.items()])
        for k, v in cols.items():
            rec[k] = v
        np.save(path, rec)
    else:
        np.savez(path, **cols)
    return path


def _direct(task, cols, weighted=False):
    """The report computed in memory, without the command."""
    settings = {"task": task}
    if task == "multiclass":
        settings["n_classes"] = 3
        p = np.column_stack([cols["p0"], cols["p1"], cols["p2"]])
    else:
        p = cols["p"]
    if task == "binary":
        settings["max_bins"] = cli.DEFAULT_MAX_BINS
    return Evaluator(**settings).update(cols["y"], p, cols["w"] if weighted else None).finalize()


def _run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_same_metrics(doc, report):
    assert doc["n"] == report.n
    for k, v in report.items():
        if k == "n":
            continue
        got = doc["metrics"][k]
        if isinstance(v, np.ndarray):
            np.testing.assert_allclose(np.asarray(got, dtype=float), v.astype(float), rtol=1e-12)
        elif isinstance(v, float):
            assert got == pytest.approx(v, rel=1e-12, abs=1e-15), k
        else:
            assert got == v, k


# ------------------------------------------------------------------ end to end
@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy", "npz"])
@pytest.mark.parametrize("task", ["binary", "multiclass", "regression", "clustering"])
def test_evaluate_each_task_and_format(task, fmt, tmp_path, capsys):
    _need_task(task)
    cols = _data(task, np.random.default_rng(7))
    path = _write(cols, str(tmp_path / f"preds.{fmt}"))
    weighted = task != "clustering" and fmt in ("parquet", "npz")
    argv = ["evaluate", path, *TASK_ARGS[task], "--format", "json", "--batch-rows", "1000"]
    if weighted:
        argv += ["--weight", "w"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["task"] == task
    _assert_same_metrics(doc, _direct(task, cols, weighted))


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression", "clustering"])
def test_shards_merged_equal_one_pass(task, tmp_path, capsys):
    _need_task(task)
    cols = _data(task, np.random.default_rng(3))
    one = _write(cols, str(tmp_path / "all.npy"))
    cuts = [0, 1000, 1001, 2400, N]
    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        _write({k: v[a:b] for k, v in cols.items()}, str(shard_dir / f"part-{i}.npy"))
    outputs = []
    for paths in ([one], [str(shard_dir / "part-*.npy")], [str(shard_dir)]):
        code, out, err = _run(["evaluate", *paths, *TASK_ARGS[task], "--format", "json", "--batch-rows", "333"], capsys)
        assert code == 0, err
        outputs.append(json.loads(out))
    _assert_same_metrics(outputs[1], _direct(task, cols))
    assert outputs[1] == outputs[2]
    for k, v in outputs[0]["metrics"].items():
        w = outputs[1]["metrics"][k]
        if isinstance(v, float):
            assert w == pytest.approx(v, rel=1e-12), k
        elif isinstance(v, list) and any(isinstance(x, float) for x in np.ravel(v)):
            np.testing.assert_allclose(w, v, rtol=1e-12, err_msg=k)  # sums, to 1e-12
        else:
            assert w == v, k


def test_save_state_then_merge(tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(5))
    a = _write({k: v[:1200] for k, v in cols.items()}, str(tmp_path / "a.npy"))
    b = _write({k: v[1200:] for k, v in cols.items()}, str(tmp_path / "b.npy"))
    both = _write(cols, str(tmp_path / "both.npy"))
    for src, state in ((a, "a.state"), (b, "b.state"), (both, "both.state")):
        code, _, err = _run(["evaluate", src, "--task", "regression", "--save-state", str(tmp_path / state)], capsys)
        assert code == 0, err
    code, out, err = _run(
        [
            "merge",
            str(tmp_path / "a.state"),
            str(tmp_path / "b.state"),
            "--format",
            "json",
            "--save-state",
            str(tmp_path / "ab.state"),
        ],
        capsys,
    )
    assert code == 0, err
    _assert_same_metrics(json.loads(out), _direct("regression", cols))
    merged = load_state(tmp_path / "ab.state")
    assert merged.n == N
    code, out, _ = _run(["merge", str(tmp_path / "ab.state")], capsys)
    assert code == 0 and "regression evaluation of 3,000 rows" in out


def test_merge_refuses_mixed_states(tmp_path, capsys):
    from streammetrics import RegressionErrors

    Evaluator("regression").update([1.0], [2.0]).save(tmp_path / "ev.state")
    RegressionErrors().update([1.0], [2.0]).save(tmp_path / "raw.state")
    code, out, err = _run(["merge", str(tmp_path / "ev.state"), str(tmp_path / "raw.state")], capsys)
    assert code == 1 and out == ""
    assert err.startswith("streammetrics: error: ") and "RegressionErrors" in err
    # plain accumulator states merge and print their fields
    code, out, err = _run(["merge", str(tmp_path / "raw.state"), str(tmp_path / "raw.state")], capsys)
    assert code == 0 and "mse" in out


def test_subprocess_python_m(tmp_path):
    cols = _data("regression", np.random.default_rng(11))
    path = _write(cols, str(tmp_path / "preds.npz"))
    env = _subprocess_env()
    done = subprocess.run(
        [sys.executable, "-m", "streammetrics", "evaluate", path, "--task", "regression", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    _assert_same_metrics(json.loads(done.stdout), _direct("regression", cols))
    bad = subprocess.run(
        [sys.executable, "-m", "streammetrics", "evaluate", str(tmp_path / "missing.npy")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stderr == f"streammetrics: error: {tmp_path / 'missing.npy'}: no such file\n"


@pytest.mark.parametrize("files", ["auto", "npy"])
def test_demo(files, capsys, tmp_path):
    _need_task("binary")
    code, out, err = _run(
        ["demo", "--rows", "30000", "--shards", "3", "--format-files", files, "--plots", str(tmp_path)]
        if files == "auto" and _has("matplotlib")
        else ["demo", "--rows", "30000", "--shards", "3", "--format-files", files],
        capsys,
    )
    assert code == 0, err
    assert "binary evaluation of 30,000 rows" in out
    assert "identical" in out and "DIFFERENT" not in out
    assert "merged shards" in out and "single pass" in out


def test_demo_says_what_became_of_the_paths_it_shows(tmp_path, capsys):
    _need_task("binary")

    def shown_paths(out):
        """The paths in the commands the demo shows."""
        lines = [line for line in out.splitlines() if line.startswith("$ streammetrics") or "try:" in line]
        assert lines
        return [word.rstrip(";") for line in lines for word in line.split() if os.sep in word]

    argv = ["demo", "--rows", "3000", "--shards", "2", "--format-files", "npy"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    folder = re.search(r"shards, [\d.]+ MiB, to (\S+)\n", out).group(1)
    assert not os.path.exists(folder)
    last = out.splitlines()[-1]
    assert last == (
        f"the temporary folder {folder} has been removed; to keep the files and "
        "try the commands above on them, run: streammetrics demo --keep DIR"
    )
    assert all(p.startswith(folder + os.sep) for p in shown_paths(out))

    kept = str(tmp_path / "kept")
    code, out, err = _run(argv + ["--keep", kept], capsys)
    assert code == 0, err
    assert "removed" not in out
    paths = shown_paths(out)
    assert kept in paths and all(glob.glob(p) for p in paths)


def _has(module):
    import importlib.util

    return importlib.util.find_spec(module) is not None


# ----------------------------------------------------------------------- plots
@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
def test_plots(task, tmp_path, capsys):
    _need("matplotlib")
    _need_task(task)
    cols = _data(task, np.random.default_rng(2))
    path = _write(cols, str(tmp_path / "preds.npy"))
    out_dir = tmp_path / "plots"
    code, _, err = _run(["evaluate", path, *TASK_ARGS[task], "--plots", str(out_dir)], capsys)
    assert code == 0, err
    expected = {
        "binary": {"roc.png", "pr.png", "gain.png", "threshold.png", "reliability.png", "confusion.png"},
        "multiclass": {"reliability.png", "confusion.png"},
        "regression": {"regression.png"},
    }[task]
    assert set(os.listdir(out_dir)) == expected
    for name in expected:
        with open(out_dir / name, "rb") as fh:
            head = fh.read(8)
        assert head == b"\x89PNG\r\n\x1a\n"
        assert os.path.getsize(out_dir / name) > 10_000
    assert "plots written" in err


def test_reservoir_is_bounded_and_uniform():
    res = cli.Reservoir(size=1000, seed=1)
    for start in range(0, 100_000, 7_000):
        stop = min(start + 7_000, 100_000)
        x = np.arange(start, stop, dtype=float)
        res.add(x, -x)
    y, p = res.sample()
    assert y.shape == (1000,) and np.array_equal(p, -y)
    assert len(np.unique(y)) == 1000
    # a uniform sample of 0..99999: its mean is near 50000 (sd ~ 913)
    assert abs(y.mean() - 50_000) < 4_000


def test_progress_bar_on_request(tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(1))
    path = _write(cols, str(tmp_path / "p.npy"))
    code, out, err = _run(
        ["evaluate", path, "--task", "regression", "--progress", "always", "--batch-rows", "500"], capsys
    )
    assert code == 0 and "rmse" in out
    assert err.strip() == "" or "rows" in err or "%" in err
    code, out, err = _run(["evaluate", path, "--task", "regression"], capsys)
    assert code == 0
    assert _stderr_lines(err) == [_summary(err)]  # not a terminal: no bar, only the summary


# ------------------------------------------------- what the command tells as it runs
SUMMARY = re.compile(
    r"streammetrics: ([\d,]+) rows in (\d+\.\d\d) s "
    r"\((\d+\.\d\d M rows/s|[\d,]+ rows/s)\) from ([\d,]+) files?"
    r"( \(of which \d+\.\d s compiling kernels, once\))?"
)
COMPILING = (
    "streammetrics: compiling kernels on first use (once per installation, or ahead with "
    "'streammetrics compile'); later runs start at once"
)


def _stderr_lines(err):
    """The lines of stderr but the note on compiling (given when a kernel compiles)."""
    return [line for line in err.splitlines() if line != COMPILING]


def _summary(err):
    """The summary line that ends ``err``, checked."""
    last = _stderr_lines(err)[-1]
    assert SUMMARY.fullmatch(last), last
    return last


def _subprocess_env(**extra):
    return {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


@pytest.mark.parametrize("bar", ["tqdm", "plain"])
def test_progress_bar_names_each_file(bar, tmp_path, capsys, monkeypatch):
    if bar == "tqdm":
        _need("tqdm")
    else:  # tqdm cannot be imported: the plain line
        monkeypatch.setitem(sys.modules, "tqdm", None)
    cols = _data("regression", np.random.default_rng(1))
    names = ["first-shard.npy", "second-shard.npz", "third-shard.npy"]
    for name, (a, b) in zip(names, [(0, 1000), (1000, 2000), (2000, N)]):
        _write({k: v[a:b] for k, v in cols.items()}, str(tmp_path / name))
    code, out, err = _run(
        [
            "evaluate",
            *(str(tmp_path / n) for n in names),
            "--task",
            "regression",
            "--progress",
            "always",
            "--batch-rows",
            "300",
        ],
        capsys,
    )
    assert code == 0, err
    for name in names:
        assert name in err
    assert str(tmp_path) not in err  # the file's name, not its path
    assert err.index(names[0]) < err.index(names[1]) < err.index(names[2])
    assert all(name not in out for name in names)


def test_gzip_csv_progress_counts_compressed_bytes(tmp_path):
    import gzip

    _need("pyarrow")
    from streammetrics.io import ColumnSpec, open_source

    rng = np.random.default_rng(12)
    n = 300_000  # about 1 MB compressed: more than the reader reads ahead at once
    y, p = (rng.random(n) < 0.3).astype(int).tolist(), rng.integers(0, 10_000, n).tolist()
    text = "y,p\n" + "".join(f"{a},0.{b:04d}\n" for a, b in zip(y, p))
    path = tmp_path / "scores.csv.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    path, size = str(path), os.path.getsize(path)
    src = open_source(path, ColumnSpec("y", ("p",)))
    assert (src.unit, src.total) == ("bytes", size)
    chunks = list(src.chunks(5000))
    done = [c.done for c in chunks]
    assert sum(len(c.y) for c in chunks) == n
    assert all(a <= b for a, b in zip(done, done[1:]))
    assert 0 < done[0] < done[-1] == size


def test_evaluate_ends_with_a_summary_line(tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(1))
    paths = [
        _write({k: v[a:b] for k, v in cols.items()}, str(tmp_path / f"part-{i}.npy"))
        for i, (a, b) in enumerate([(0, 1000), (1000, N)])
    ]
    code, out, err = _run(["evaluate", *paths, "--task", "regression", "--format", "json"], capsys)
    assert code == 0, err
    _assert_same_metrics(json.loads(out), _direct("regression", cols))  # stdout: the report only
    m = SUMMARY.fullmatch(_summary(err))
    assert m.group(1) == "3,000" and m.group(4) == "2"
    assert _stderr_lines(err) == [m.group(0)]
    code, out, err = _run(["evaluate", paths[0], "--task", "regression"], capsys)
    assert code == 0 and _summary(err).endswith(" from 1 file")
    # a failed run ends with its error, and no summary
    msg = _error(["evaluate", *paths, str(tmp_path / "missing.npy"), "--task", "regression"], capsys)
    assert msg.endswith("missing.npy: no such file")


def test_compiling_kernels_is_announced_once(tmp_path):
    path = _write(_data("binary", np.random.default_rng(3), n=300), str(tmp_path / "few.npy"))
    env = _subprocess_env(NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))  # empty: kernels compile
    runs = [
        subprocess.run(
            [sys.executable, "-m", "streammetrics", "evaluate", path, "--format", "json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        json.loads(run.stdout)
        _summary(run.stderr)
    first, again = (run.stderr.splitlines() for run in runs)
    assert first.count(COMPILING) == 1 and first[0] == COMPILING
    assert len(first) == 2
    assert again == [_summary(runs[1].stderr)]  # the kernels come from the cache
    assert "compiling" not in again[0]


def test_compile_watch_times_the_outermost_compilations_only(capsys):
    numba = _need("numba")
    from streammetrics.cli.compiling import CompileWatch

    @numba.njit
    def inner(x):
        return x + 1

    @numba.njit
    def outer(x):
        return inner(x) * 2

    with CompileWatch() as watch:
        assert outer(1) == 4  # compiles outer, and inner within it
        first = watch.seconds
        assert inner(1.5) == 2.5  # another signature: compiles again
    assert 0 < first < watch.seconds
    assert capsys.readouterr().err == COMPILING + "\n"
    spent = watch.seconds
    assert outer(1.5) == 5.0  # compiles with the watch unregistered
    assert watch.seconds == spent and capsys.readouterr().err == ""
    assert watch.share(spent) == ""
    watch.seconds += 3.44
    assert watch.share(spent) == "of which 3.4 s compiling kernels, once"


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"streammetrics {sm.__version__}\n"


# ---------------------------------------------------------------------- errors
def _error(argv, capsys):
    code, out, err = _run(argv, capsys)
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert lines[-1].startswith("streammetrics: error: ")
    assert "Traceback" not in err
    return lines[-1][len("streammetrics: error: ") :]


def test_error_missing_file(tmp_path, capsys):
    msg = _error(["evaluate", str(tmp_path / "nope.parquet")], capsys)
    assert msg == f"{tmp_path / 'nope.parquet'}: no such file"
    msg = _error(["evaluate", str(tmp_path / "nope-*.parquet")], capsys)
    assert msg.endswith("no file matches this pattern")
    msg = _error(["merge", str(tmp_path / "nope.state")], capsys)
    assert msg.endswith("no such file")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy", "npz"])
def test_error_missing_column_lists_columns(fmt, tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(1), n=10)
    path = _write(cols, str(tmp_path / f"d.{fmt}"))
    msg = _error(["evaluate", path, "--task", "regression", "--p", "pred"], capsys)
    assert msg == f"{path}: no column 'pred'; the columns are: 'y', 'p', 'w'"


def test_error_column_named_twice(tmp_path, capsys):
    _need("pyarrow")
    path = tmp_path / "dup.csv"
    path.write_text("y,p,p\n1,0.5,0.1\n0,0.4,0.2\n")
    msg = _error(["evaluate", str(path)], capsys)
    assert msg == f"{path}: 2 columns are named 'p': rename all but the one to read"


def test_error_missing_column_in_2d_npy(tmp_path, capsys):
    path = str(tmp_path / "m.npy")
    np.save(path, np.zeros((5, 2)))
    msg = _error(["evaluate", path, "--task", "regression", "--y", "0", "--p", "2"], capsys)
    assert msg == f"{path}: no column 2: the array has 2 columns (0..1)"
    msg = _error(["evaluate", path, "--task", "regression", "--y", "y"], capsys)
    assert "columns are numbered 0..1" in msg


def test_error_wrong_column_type(tmp_path, capsys):
    pa = _need("pyarrow")
    import pyarrow.parquet as pq

    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"y": [1.0, 2.0], "p": ["a", "b"]}), path)
    msg = _error(["evaluate", path, "--task", "regression"], capsys)
    assert msg.startswith(f"{path}: column 'p' has type string; expected numbers")
    npy = str(tmp_path / "t.npy")
    np.save(npy, np.array([(1.0, "a")], dtype=[("y", "f8"), ("p", "U3")]))
    msg = _error(["evaluate", npy, "--task", "regression"], capsys)
    assert msg.startswith(f"{npy}: column 'p' has dtype <U3; expected numbers")


@pytest.mark.parametrize(
    "name, content",
    [
        ("junk.parquet", b"this is not parquet" * 20),
        ("junk.npy", b"\x93NUMPY garbage"),
        ("junk.npz", b"PK\x03\x04 truncated zip"),
        ("junk.bin", b"\x00\x01 unknown"),
    ],
)
def test_error_unreadable_file(name, content, tmp_path, capsys):
    if name.endswith(".parquet"):
        _need("pyarrow")
    path = tmp_path / name
    path.write_bytes(content)
    msg = _error(["evaluate", str(path), "--task", "regression"], capsys)
    assert msg.startswith(f"{path}: ")
    assert any(w in msg for w in ("cannot read", "not a valid", "unknown file type"))


def test_error_truncated_npy(tmp_path, capsys):
    path = tmp_path / "cut.npy"
    cols = _data("regression", np.random.default_rng(1), n=100)
    _write(cols, str(path))
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    msg = _error(["evaluate", str(path), "--task", "regression"], capsys)
    assert msg.startswith(f"{path}: truncated")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy"])
def test_error_bad_value_names_file_column_and_row(fmt, tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(1), n=2500)
    cols["p"][1734] = np.nan
    path = _write(cols, str(tmp_path / f"bad.{fmt}"))
    msg = _error(["evaluate", path, "--task", "regression", "--batch-rows", "1000"], capsys)
    if fmt == "csv":  # NaN is written as an empty field, read as a missing value
        assert msg == f"{path}: line 1,736, column 'p': missing value (null)"
    else:
        assert msg == f"{path}: row 1,734, column 'p': value nan: values must be finite"


def test_error_bad_value_in_csv_text(tmp_path, capsys):
    _need("pyarrow")
    path = tmp_path / "text.csv"
    rows = ["y,p"] + [f"{i % 2},0.{i % 10}" for i in range(3000)]
    rows[2501] = "1,oops"  # row index 2500
    path.write_text("\n".join(rows) + "\n")
    msg = _error(["evaluate", str(path), "--task", "regression", "--batch-rows", "500"], capsys)
    assert msg == f"{path}: line 2,502, column 'p': 'oops' is not a number"


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("at", [3, 181_234])  # in the first block read, and far beyond it
def test_a_csv_line_with_an_extra_field_is_named(at, gz, tmp_path, capsys):
    _need("pyarrow")
    _need_task("binary")
    lines = ["y,p"] + [f"{i % 2},0.{i % 10}" for i in range(200_000)]
    lines[at + 1] = "0,0.2,7"  # the data row of index `at`
    text = "\n".join(lines) + "\n"
    path = tmp_path / ("scores.csv.gz" if gz else "scores.csv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    msg = _error(["evaluate", str(path), "--batch-rows", "7000"], capsys)
    assert msg == f"{path}: line {at + 2:,} has 3 fields where the header has 2: '0,0.2,7'"


@pytest.mark.parametrize("at", [3217, 181_234])  # in the first block read, and far beyond it
@pytest.mark.parametrize(
    "bad, problem",
    [
        ("1.5", "value 1.5: probabilities must lie in [0, 1]"),  # refused by the evaluator
        ("oops", "'oops' is not a number"),  # refused by the reader
        ("", "missing value (null)"),
    ],
)
def test_csv_error_names_the_line_sed_prints(bad, problem, at, tmp_path, capsys):
    _need("pyarrow")
    _need_task("binary")
    rng = np.random.default_rng(4)
    lines = ["y,p"] + [f"{int(u < 0.3)},{v:.4f}" for u, v in rng.random((200_000, 2))]
    lines[at + 1] = f"1,{bad}"  # the data row of index `at`
    path = tmp_path / "scores.csv"
    path.write_text("\n".join(lines) + "\n")
    for rows in (7000, cli.DEFAULT_BATCH_ROWS):
        msg = _error(["evaluate", str(path), "--batch-rows", str(rows)], capsys)
        m = re.fullmatch(rf"{re.escape(str(path))}: line ([\d,]+), column 'p': (.*)", msg)
        assert m, msg
        assert m.group(2).startswith(problem)
        line = int(m.group(1).replace(",", ""))
        assert line == at + 2
    assert path.read_text().splitlines()[line - 1] == f"1,{bad}"
    if shutil.which("sed"):
        shown = subprocess.run(["sed", "-n", f"{line}p", str(path)], capture_output=True, text=True, timeout=60).stdout
        assert shown == f"1,{bad}\n"


def test_error_null_in_parquet_names_the_row(tmp_path, capsys):
    pa = _need("pyarrow")
    import pyarrow.parquet as pq

    p = [0.5] * 3000
    p[1234] = None
    path = str(tmp_path / "nulls.parquet")
    pq.write_table(pa.table({"y": [1.0] * 3000, "p": p}), path, row_group_size=1000)
    msg = _error(["evaluate", path, "--task", "regression"], capsys)
    assert msg == f"{path}: row 1,234, column 'p': missing value (null)"


def test_error_names_the_class_column(tmp_path, capsys):
    _need_task("multiclass")
    cols = _data("multiclass", np.random.default_rng(1), n=900)
    cols["p1"][300] = np.nan
    path = _write(cols, str(tmp_path / "classes.npy"))
    msg = _error(["evaluate", path, *TASK_ARGS["multiclass"]], capsys)
    assert msg == (
        f"{path}: row 300, column 'p1': value nan: class probabilities must lie in [0, 1]"
    )  # no hint about --scores
    proba = np.column_stack([cols["p0"], cols["p1"], cols["p2"]])
    path = str(tmp_path / "lists.npz")
    np.savez(path, y=cols["y"], proba=proba)
    argv = ["evaluate", path, "--task", "multiclass", "--n-classes", "3", "--p", "proba"]
    msg = _error(argv, capsys)
    assert msg.startswith(f"{path}: row 300, column 'proba[1]': value nan: ")
    np.savez(path, y=cols["y"], proba=proba[:, :2])
    msg = _error(argv, capsys)
    assert msg.startswith(f"{path}: column 'proba': p has 2 columns but n_classes is 3")


def test_weighted_report_names_the_weight_column(tmp_path, capsys):
    _need_task("binary")
    cols = _data("binary", np.random.default_rng(6))
    cols["weights"] = cols.pop("w")
    path = _write(cols, str(tmp_path / "w.npz"))
    code, out, err = _run(["evaluate", path, "--weight", "weights"], capsys)
    assert code == 0, err
    assert "counts are sums of sample weights (column 'weights')" in out
    code, out, err = _run(["evaluate", path, "--weight", "weights", "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["weighted"] is True and doc["weight_column"] == "weights"


def test_error_bad_probability_and_label(tmp_path, capsys):
    _need_task("binary")
    cols = _data("binary", np.random.default_rng(1), n=2000)
    cols["p"][1500] = 1.25
    path = _write(cols, str(tmp_path / "probs.npy"))
    msg = _error(["evaluate", path, "--batch-rows", "1000"], capsys)
    assert msg.startswith(f"{path}: row 1,500, column 'p': value 1.25: probabilities must lie in [0, 1]")
    assert "--scores score" in msg
    cols = _data("binary", np.random.default_rng(1), n=2000)
    cols["y"][1999] = 2
    path = _write(cols, str(tmp_path / "labels.npy"))
    msg = _error(["evaluate", path, "--weight", "w", "--batch-rows", "300"], capsys)
    assert msg.startswith(f"{path}: row 1,999, column 'y': value 2: labels must be 0 or 1")


def test_error_bad_weight_and_class(tmp_path, capsys):
    _need_task("multiclass")
    cols = _data("multiclass", np.random.default_rng(1), n=900)
    cols["w"][812] = -1.0
    path = _write(cols, str(tmp_path / "w.npz"))
    msg = _error(["evaluate", path, *TASK_ARGS["multiclass"], "--weight", "w"], capsys)
    assert msg.startswith(f"{path}: row 812, column 'w': value -1.0: weights must be non-negative")
    cols = _data("multiclass", np.random.default_rng(1), n=900)
    cols["p1"][77] = 0.9  # the row no longer sums to 1
    path = _write(cols, str(tmp_path / "sum.npz"))
    msg = _error(["evaluate", path, *TASK_ARGS["multiclass"]], capsys)
    assert msg.startswith(f"{path}: row 77, column 'p0, p1, p2': sums to ")


def test_error_saves_completed_shards(tmp_path, capsys):
    cols = _data("regression", np.random.default_rng(1), n=2000)
    good = _write(cols, str(tmp_path / "a-good.npy"))
    cols = {k: v.copy() for k, v in cols.items()}
    cols["y"][1234] = np.inf
    bad = _write(cols, str(tmp_path / "b-bad.npy"))
    state = tmp_path / "partial.state"
    code, out, err = _run(["evaluate", good, bad, "--task", "regression", "--save-state", str(state)], capsys)
    assert code == 1 and out == ""
    assert err.splitlines()[-1] == (
        f"streammetrics: error: {bad}: row 1,234, column 'y': value inf: values must be finite"
    )
    assert "1 completed shard(s) (2,000 rows)" in err
    partial = load_state(state)
    assert partial.n == 2000
    # an error before any shard: an empty (but valid, mergeable) state
    code, _, err = _run(
        ["evaluate", str(tmp_path / "missing.npy"), "--task", "regression", "--save-state", str(state)], capsys
    )
    assert code == 1 and load_state(state).n == 0


def test_error_option_combinations(tmp_path, capsys):
    path = _write(_data("regression", np.random.default_rng(1), n=10), str(tmp_path / "r.npy"))
    assert _error(["evaluate", path, "--task", "regression", "--threshold", "0.3"], capsys) == (
        "--threshold applies to --task binary and multilabel only"
    )
    assert _error(["evaluate", path, "--task", "multiclass"], capsys) == (
        "--task multiclass needs --n-classes K, --labels A,B,... or --labels auto (read from the files)"
    )
    assert _error(["evaluate", path, "--task", "regression", "--p", "p,w"], capsys).startswith(
        "--p takes several columns for --task multiclass and multilabel only"
    )
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", path, "--batch-rows", "0"])
    assert info.value.code == 2
    capsys.readouterr()


@pytest.mark.parametrize(
    "bins, problem",
    [
        ("0", "expected a number > 0 (or 'exact'), got 0"),
        ("-3", "expected a number > 0 (or 'exact'), got -3"),
        ("many", "expected a whole number (or 'exact'), got 'many'"),
    ],
)
def test_max_bins_must_be_positive_or_exact(bins, problem, tmp_path, capsys):
    _need_task("binary")
    path = _write(_data("binary", np.random.default_rng(1), n=100), str(tmp_path / "b.npy"))
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", path, "--max-bins", bins])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == (f"streammetrics evaluate: error: argument --max-bins: {problem}")
    for word in ("exact", "none", "EXACT"):
        code, out, err = _run(["evaluate", path, "--max-bins", word], capsys)
        assert code == 0 and "(exact)" in out, err


@pytest.mark.parametrize(
    "size, problem",
    [
        ("1KB", "the memory budget must be at least 4096 bytes, got '1KB' (1000 bytes)"),
        ("lots", "the memory budget must be a number of bytes with an optional unit"),
    ],
)
def test_memory_budget_is_checked(size, problem, tmp_path, capsys):
    _need_task("binary")
    path = _write(_data("binary", np.random.default_rng(1), n=100), str(tmp_path / "b.npy"))
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", path, "--memory", size])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1].startswith(f"streammetrics evaluate: error: argument --memory: {problem}")


def test_exact_by_default_within_a_memory_budget(tmp_path, capsys):
    """The command's AUC is exact unless --max-bins asks for less; a budget
    smaller than the state spills it and changes no figure."""
    _need_task("binary")
    rng = np.random.default_rng(7)
    n = 20_000
    y = (rng.random(n) < 0.4).astype(np.int64)
    cols = {"y": y, "p": np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1)}
    path = _write(cols, str(tmp_path / "b.npy"))
    runs = {}
    for name, extra in {
        "default": [],
        "spilled": ["--memory", "64KiB"],
        "in memory": ["--memory", "none"],
        "binned": ["--max-bins", "100"],
    }.items():
        code, out, err = _run(
            ["evaluate", path, "--format", "json", "--batch-rows", "3000", "--target-recall", "0.8", *extra], capsys
        )
        assert code == 0, err
        runs[name] = json.loads(out)
    assert runs["default"]["settings"]["max_bins"] is None
    assert runs["default"]["settings"]["max_memory"] == cli.DEFAULT_MEMORY_BYTES
    assert runs["spilled"]["settings"]["max_memory"] == 64 * 1024
    assert runs["in memory"]["settings"]["max_memory"] is None
    assert runs["binned"]["settings"] == {**runs["in memory"]["settings"], "max_bins": 100}
    direct = Evaluator(task="binary").update(cols["y"], cols["p"]).finalize()
    for name in ("default", "spilled", "in memory"):
        m = runs[name]["metrics"]
        assert runs[name]["ranking_exact"] is True
        assert m["auc"] == direct.auc and m["average_precision"] == direct.average_precision
        assert m["auc_lower"] == m["auc_upper"] == m["auc"]
        assert runs[name]["operating_points"] == runs["in memory"]["operating_points"]
    binned = runs["binned"]
    assert binned["ranking_exact"] is False
    m = binned["metrics"]
    assert m["auc_lower"] <= direct.auc <= m["auc_upper"]
    assert m["average_precision_lower"] <= direct.average_precision <= m["average_precision_upper"]
    code, out, err = _run(["evaluate", path, "--batch-rows", "3000", "--memory", "64KiB"], capsys)
    assert code == 0 and "exact AUC within 65.5 KB" in out and "(exact)" in out, err


def test_output_paths_are_checked_before_reading(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("a regular file")
    missing = str(tmp_path / "missing.npy")  # read first, it would be the error
    state = ["evaluate", missing, "--task", "regression", "--save-state"]
    cases = [
        (
            state + [str(afile / "sub" / "s.state")],
            f"--save-state {afile / 'sub' / 's.state'}: cannot write the state: {afile} is not a directory",
        ),
        (
            state + [str(tmp_path / "nodir" / "s.state")],
            f"--save-state {tmp_path / 'nodir' / 's.state'}: cannot write the state: "
            f"no such directory {tmp_path / 'nodir'}",
        ),
        (state + [str(tmp_path)], f"--save-state {tmp_path}: is a directory"),
        (["merge", missing, "--save-state", str(tmp_path)], f"--save-state {tmp_path}: is a directory"),
        (
            ["demo", "--rows", "100", "--keep", str(afile / "sub")],
            f"--keep {afile / 'sub'}: cannot create the directory: {afile} is not a directory",
        ),
    ]
    if _has("matplotlib"):
        plots = ["evaluate", missing, "--task", "regression", "--plots"]
        cases += [
            (
                plots + [str(afile / "sub" / "deeper")],
                f"--plots {afile / 'sub' / 'deeper'}: cannot create the directory: {afile} is not a directory",
            ),
            (plots + [str(afile)], f"--plots {afile}: not a directory"),
            (["merge", missing, "--plots", str(afile)], f"--plots {afile}: not a directory"),
            (["demo", "--rows", "100", "--plots", str(afile)], f"--plots {afile}: not a directory"),
            # a good folder is not made when the run stops before it starts
            (
                plots + [str(tmp_path / "new" / "plots"), "--save-state", str(tmp_path)],
                f"--save-state {tmp_path}: is a directory",
            ),
        ]
    for argv, expected in cases:
        code, out, err = _run(argv, capsys)
        assert (code, out, err) == (1, "", f"streammetrics: error: {expected}\n"), argv
    assert sorted(os.listdir(tmp_path)) == ["afile"]


def test_error_empty_input(tmp_path, capsys):
    path = str(tmp_path / "empty.npy")
    np.save(path, np.empty(0, dtype=[("y", "f8"), ("p", "f8")]))
    assert _error(["evaluate", path, "--task", "regression"], capsys) == (
        "the input holds no rows: nothing to evaluate"
    )


@pytest.mark.parametrize("fmt", ["parquet", "npz", "npy"])
def test_multiclass_probability_matrix_in_one_column(fmt, tmp_path, capsys):
    _need_task("multiclass")
    cols = _data("multiclass", np.random.default_rng(9))
    proba = np.column_stack([cols["p0"], cols["p1"], cols["p2"]])
    path = str(tmp_path / f"m.{fmt}")
    if fmt == "parquet":
        pa = _need("pyarrow")
        import pyarrow.parquet as pq

        lists = pa.FixedSizeListArray.from_arrays(pa.array(proba.ravel()), 3)
        pq.write_table(pa.table({"y": cols["y"], "proba": lists}), path, row_group_size=1000)
    elif fmt == "npz":
        np.savez_compressed(path, y=cols["y"], proba=proba)
    else:
        rec = np.empty(N, dtype=[("y", np.int64), ("proba", np.float64, (3,))])
        rec["y"], rec["proba"] = cols["y"], proba
        np.save(path, rec)
    code, out, err = _run(
        [
            "evaluate",
            path,
            "--task",
            "multiclass",
            "--n-classes",
            "3",
            "--p",
            "proba",
            "--format",
            "json",
            "--batch-rows",
            "777",
        ],
        capsys,
    )
    assert code == 0, err
    _assert_same_metrics(json.loads(out), _direct("multiclass", cols))


def test_merge_of_plain_accumulator_states_renders_their_results(tmp_path, capsys):
    rng = np.random.default_rng(8)
    paths = []
    for i in range(2):
        y = rng.integers(0, 2, 200)
        s = rng.random(200) + 0.3 * y
        sm.RankAUC().update(y, s).save(tmp_path / f"r{i}.state")
        paths.append(str(tmp_path / f"r{i}.state"))
    merged = sm.load_state(paths[0]) + sm.load_state(paths[1])
    code, out, _ = _run(["merge", *paths], capsys)
    assert code == 0
    assert out.startswith("Ranking\n=======") and "average_precision" in out and "(exact)" in out
    code, out, _ = _run(["merge", *paths, "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["result"] == "AUCScores" and doc["n"] == 400
    assert doc["metrics"]["auc"] == merged.finalize().auc
    assert doc["metrics"]["average_precision"] == merged.average_precision()


# ------------------------------------------------------- operating points, calibration
def test_operating_targets_and_calibration_in_the_report(tmp_path, capsys):
    cols = _data("binary", np.random.default_rng(8))
    path = _write(cols, str(tmp_path / "preds.npy"))
    code, out, err = _run(
        [
            "evaluate",
            path,
            "--max-bins",
            "exact",
            "--target-recall",
            "0.9",
            "--target-precision",
            "1.0",
            "--target-fpr",
            "0.05",
        ],
        capsys,
    )
    assert code == 0, err
    acc = sm.RankAUC().update(cols["y"], cols["p"])
    want = acc.threshold_for(recall=0.9)
    assert "operating point" in out and "not reached" not in out.split("recall >= 0.9")[1].split("\n")[0]
    line = next(x for x in out.splitlines() if x.strip().startswith("recall >= 0.9"))
    assert f"{want.threshold:g}" in line
    assert "Calibration" in out and "ece" in out
    code, out, err = _run(
        [
            "evaluate",
            path,
            "--max-bins",
            "exact",
            "--format",
            "json",
            "--target-fpr",
            "0.05",
            "--calibration-bins",
            "off",
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    points = {p["point"]: p for p in doc["operating_points"]}
    assert points["fpr <= 0.05"]["threshold"] == acc.threshold_for(fpr=0.05).threshold
    assert points["best F1"]["f1"] == pytest.approx(acc.best_threshold("f1").f1, rel=1e-12)
    assert "ece" not in doc["metrics"] and doc["settings"]["calibration_bins"] is None


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target-recall", "1.5"], "expected a rate in [0, 1], got '1.5'"),
        (["--calibration-bins", "0"], "expected a number > 0 (or 'off'), got 0"),
    ],
)
def test_bad_operating_options(argv, message, tmp_path, capsys):
    path = _write(_data("binary", np.random.default_rng(0)), str(tmp_path / "preds.npy"))
    with pytest.raises(SystemExit):
        _run(["evaluate", path, *argv], capsys)
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ multilabel
def _multilabel_data(rng, n=N, k=3):
    Y = (rng.random((n, k)) < [0.2, 0.5, 0.05][:k]).astype(np.int64)
    S = np.clip(0.4 * Y + 0.6 * rng.random((n, k)), 0, 1).round(3)
    cols = {f"y{j}": Y[:, j] for j in range(k)}
    cols.update({f"s{j}": S[:, j] for j in range(k)})
    cols["w"] = rng.random(n)
    return cols, Y, S


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy", "npz"])
def test_evaluate_multilabel_columns(fmt, tmp_path, capsys):
    cols, Y, S = _multilabel_data(np.random.default_rng(8))
    path = _write(cols, str(tmp_path / f"ml.{fmt}"))
    weighted = fmt in ("parquet", "npz")
    argv = [
        "evaluate",
        path,
        "--task",
        "multilabel",
        "--y",
        "y0,y1,y2",
        "--p",
        "s0,s1,s2",
        "--threshold",
        "0.6",
        "--format",
        "json",
        "--batch-rows",
        "1000",
    ]
    if weighted:
        argv += ["--weight", "w"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["task"] == "multilabel"
    assert doc["metrics"]["labels"] == ["y0", "y1", "y2"]
    direct = Evaluator(task="multilabel", labels=["y0", "y1", "y2"], threshold=0.6)
    _assert_same_metrics(doc, direct.update(Y, S, cols["w"] if weighted else None).finalize())
    assert {"samples_f1", "hamming_loss", "subset_accuracy", "micro_auc"} <= set(doc["metrics"])


def test_evaluate_multilabel_text_and_list_columns(tmp_path, capsys):
    pa = _need("pyarrow")
    import pyarrow.parquet as pq

    _, Y, S = _multilabel_data(np.random.default_rng(9), n=500)
    P = (S >= 0.5).astype(np.int8)
    path = str(tmp_path / "lists.parquet")
    pq.write_table(pa.table({"labels": pa.array(Y.tolist()), "pred": pa.array(P.tolist())}), path)
    code, out, err = _run(
        ["evaluate", path, "--task", "multilabel", "--y", "labels", "--p", "pred", "--n-labels", "3"], capsys
    )
    assert code == 0, err
    r = Evaluator(task="multilabel", n_labels=3).update(Y, P).finalize()
    assert "multilabel evaluation of 500 rows (3 labels, 0/1 predictions)" in out
    assert f"samples_f1          {r.samples_f1:.6g}" in out
    # one list column of truth needs its width
    msg = _error(["evaluate", path, "--task", "multilabel", "--y", "labels", "--p", "pred"], capsys)
    assert "--n-labels" in msg


def test_multilabel_errors_name_file_column_and_row(tmp_path, capsys):
    cols, _, _ = _multilabel_data(np.random.default_rng(10), n=2500)
    cols["y1"][1734] = 2
    path = _write(cols, str(tmp_path / "bad.parquet"))
    msg = _error(
        [
            "evaluate",
            path,
            "--task",
            "multilabel",
            "--y",
            "y0,y1,y2",
            "--p",
            "s0,s1,s2",
            "--threshold",
            "0.5",
            "--batch-rows",
            "1000",
        ],
        capsys,
    )
    assert msg == f"{path}: row 1,734, column 'y1': value 2: labels must be 0 or 1"
    msg = _error(["evaluate", path, "--task", "multilabel", "--y", "y0,y1,y2", "--p", "s0,s1"], capsys)
    assert "one --p column per label" in msg
    msg = _error(["evaluate", path, "--task", "binary", "--n-labels", "3"], capsys)
    assert msg == "--n-labels applies to --task multilabel only"


# ------------------------------------------------------ class names, top-k, AUC
ANIMALS = np.array(["cat", "dog", "bird"])


def _animals(rng, n=900):
    y = ANIMALS[rng.integers(0, 3, n)]
    pred = np.where(rng.random(n) < 0.7, y, ANIMALS[rng.integers(0, 3, n)])
    proba = rng.dirichlet(np.ones(3), n)
    return {
        "animal": y,
        "pred": pred,
        "p_cat": proba[:, 0],
        "p_dog": proba[:, 1],
        "p_bird": proba[:, 2],
        "w": rng.random(n),
    }


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npz"])
def test_multiclass_text_labels(fmt, tmp_path, capsys):
    _need_task("multiclass")
    cols = _animals(np.random.default_rng(4))
    path = _write(cols, str(tmp_path / f"animals.{fmt}"))
    argv = [
        "evaluate",
        path,
        "--task",
        "multiclass",
        "--y",
        "animal",
        "--p",
        "pred",
        "--labels",
        "cat,dog,bird",
        "--format",
        "json",
        "--batch-rows",
        "250",
    ]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    want = sm.MulticlassConfusion(labels=list(ANIMALS)).update(cols["animal"], cols["pred"]).finalize()
    assert doc["metrics"]["labels"] == ["cat", "dog", "bird"]
    assert doc["metrics"]["matrix"] == want.matrix.tolist()
    assert doc["metrics"]["macro_f1"] == pytest.approx(want.macro_f1, rel=1e-12)
    # the text report names the classes
    code, out, err = _run(argv[:-4], capsys)
    assert code == 0, err
    assert re.search(r"^\s+bird\s+\d+", out, re.M) and "  cat " in out


def test_multiclass_labels_auto_reads_the_files_first(tmp_path, capsys):
    _need_task("multiclass")
    rng = np.random.default_rng(5)
    a, b = _animals(rng, 500), _animals(rng, 400)
    b["animal"][:] = np.where(b["animal"] == "bird", "owl", b["animal"])  # a label only in b
    os.makedirs(tmp_path / "shards")
    _write(a, str(tmp_path / "shards" / "a.parquet"))
    _write(b, str(tmp_path / "shards" / "b.parquet"))
    argv = [
        "evaluate",
        str(tmp_path / "shards"),
        "--task",
        "multiclass",
        "--y",
        "animal",
        "--p",
        "pred",
        "--labels",
        "auto",
        "--format",
        "json",
    ]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    assert "labels read from the files: bird, cat, dog, owl" in err
    doc = json.loads(out)
    assert doc["metrics"]["labels"] == ["bird", "cat", "dog", "owl"]
    y = np.concatenate([a["animal"], b["animal"]])
    p = np.concatenate([a["pred"], b["pred"]])
    want = skm_confusion(y, p, ["bird", "cat", "dog", "owl"])
    assert doc["metrics"]["matrix"] == want.tolist()
    # integer labels in a CSV (read as floats) come back as integers
    path = _write({"y": np.array([0, 2, 1, 2]), "p": np.array([0, 2, 2, 1])}, str(tmp_path / "i.csv"))
    code, out, err = _run(["evaluate", path, "--task", "multiclass", "--labels", "auto", "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["metrics"]["labels"] == [0, 1, 2]


def skm_confusion(y, p, labels):
    skm = pytest.importorskip("sklearn.metrics")
    return skm.confusion_matrix(y, p, labels=labels)


def test_multiclass_top_k_and_auc_options(tmp_path, capsys):
    _need_task("multiclass")
    skm = pytest.importorskip("sklearn.metrics")
    cols = _animals(np.random.default_rng(6))
    path = _write(cols, str(tmp_path / "animals.parquet"))
    argv = [
        "evaluate",
        path,
        "--task",
        "multiclass",
        "--y",
        "animal",
        "--p",
        "p_cat,p_dog,p_bird",
        "--labels",
        "cat,dog,bird",
        "--top-k",
        "2",
        "--auc",
        "--weight",
        "w",
        "--format",
        "json",
    ]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["top_k"] == 2 and doc["settings"]["auc"] is True
    y = np.array([["cat", "dog", "bird"].index(v) for v in cols["animal"]])
    P = np.column_stack([cols["p_cat"], cols["p_dog"], cols["p_bird"]])
    assert doc["metrics"]["top_k_accuracy"] == pytest.approx(
        skm.top_k_accuracy_score(y, P, k=2, sample_weight=cols["w"]), rel=1e-12
    )
    assert doc["metrics"]["auc"] == pytest.approx(
        skm.roc_auc_score(y, P, multi_class="ovr", sample_weight=cols["w"]), rel=1e-12
    )
    # without the options, neither is computed
    code, out, err = _run(argv[:10] + ["--format", "json"], capsys)
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    assert "top_k_accuracy" not in metrics and "auc" not in metrics


def test_error_class_label_options(tmp_path, capsys):
    cols = _animals(np.random.default_rng(7), 50)
    path = _write(cols, str(tmp_path / "animals.parquet"))
    base = ["evaluate", path, "--task", "multiclass", "--y", "animal", "--p", "pred"]
    msg = _error(base + ["--n-classes", "3"], capsys)
    assert msg.endswith("(for text class labels, pass --labels A,B,... or --labels auto)")
    assert "column 'animal' has type string" in msg
    first_bird = int(np.flatnonzero(cols["animal"] == "bird")[0])
    msg = _error(base + ["--labels", "cat,dog"], capsys)
    assert msg == f"{path}: row {first_bird:,}, column 'animal': value 'bird': not one of the 2 labels"
    assert _error(base + ["--labels", "cat,dog,bird", "--n-classes", "4"], capsys) == (
        "--n-classes 4 but --labels names 3 classes"
    )
    for opt in (["--labels", "a,b"], ["--top-k", "2"], ["--auc"]):
        assert _error(["evaluate", path, "--task", "regression", *opt], capsys) == (
            f"{opt[0]} applies to --task multiclass only"
        )
    with pytest.raises(SystemExit) as info:
        cli.main(base + ["--labels", "cat,cat"])
    assert info.value.code == 2
    capsys.readouterr()
    reals = _write({"y": np.array([0.5, 1.0]), "p": np.array([1.0, 0.0])}, str(tmp_path / "r.npz"))
    msg = _error(["evaluate", reals, "--task", "multiclass", "--labels", "auto"], capsys)
    assert msg == (
        f"{reals}: row 0, column 'y': value 0.5 is not a class label (--labels auto collects labels: integers or text)"
    )


def test_multiclass_auc_plots_name_the_classes(tmp_path, capsys):
    _need_task("multiclass")
    _need("matplotlib")
    cols = _animals(np.random.default_rng(9), 300)
    path = _write(cols, str(tmp_path / "animals.npz"))
    plots = tmp_path / "plots"
    code, out, err = _run(
        [
            "evaluate",
            path,
            "--task",
            "multiclass",
            "--y",
            "animal",
            "--p",
            "p_cat,p_dog,p_bird",
            "--labels",
            "cat,dog,bird",
            "--auc",
            "--plots",
            str(plots),
        ],
        capsys,
    )
    assert code == 0, err
    written = sorted(os.listdir(plots))
    assert "roc_per_class.png" in written and "pr_per_class.png" in written
    assert "confusion.png" in written


def test_multiclass_labels_from_a_dictionary_column(tmp_path, capsys):
    _need_task("multiclass")
    pa = _need("pyarrow")
    import pyarrow.parquet as pq

    cols = _animals(np.random.default_rng(10), 600)
    table = pa.table(
        {"animal": pa.array(cols["animal"]).dictionary_encode(), "pred": pa.array(cols["pred"]).dictionary_encode()}
    )
    path = str(tmp_path / "dict.parquet")
    pq.write_table(table, path, row_group_size=250)
    assert pa.types.is_dictionary(pq.read_schema(path).field("animal").type)
    code, out, err = _run(
        [
            "evaluate",
            path,
            "--task",
            "multiclass",
            "--y",
            "animal",
            "--p",
            "pred",
            "--labels",
            "cat,dog,bird",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    want = sm.MulticlassConfusion(labels=list(ANIMALS)).update(cols["animal"], cols["pred"])
    assert json.loads(out)["metrics"]["matrix"] == want.matrix().tolist()


# ------------------------------------------------------------------ slices (--by)
def _sliced_data(rng, n=3000, nulls=True):
    cols = _data("binary", rng, n)
    country = rng.choice(np.array(["de", "fr", "uk", "us"]), n)
    cols["country"] = country.astype(object) if nulls else country
    if nulls:
        cols["country"][rng.random(n) < 0.05] = None
    cols["device"] = rng.integers(0, 3, n)
    return cols


def _groupby_reference(cols):
    """Per (country, device) slice: rows, weighted AUC and F1 at 0.5, from pandas
    groupby and scikit-learn on each group."""
    pd = _need("pandas")
    metrics = _need("sklearn.metrics")
    df = pd.DataFrame(cols)
    out = {}
    for (country, device), g in df.groupby(["country", "device"], dropna=False):
        key = (None if not isinstance(country, str) else country, int(device))
        auc = metrics.roc_auc_score(g["y"], g["p"], sample_weight=g["w"]) if g["y"].nunique() == 2 else None
        f1 = metrics.f1_score(g["y"], (g["p"] >= 0.5).astype(int), sample_weight=g["w"], zero_division=0)
        out[key] = (len(g), auc, f1)
    return out


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy", "npz"])
def test_evaluate_by_matches_a_groupby_reference(fmt, tmp_path, capsys):
    rng = np.random.default_rng(11)
    nulls = fmt in ("parquet", "csv")
    cols = _sliced_data(rng, nulls=nulls)
    written = dict(cols)
    if not nulls:
        written["country"] = cols["country"].astype("U2")
    path = _write(written, str(tmp_path / f"d.{fmt}"))
    code, out, _ = _run(
        [
            "evaluate",
            path,
            "--by",
            "country",
            "--by",
            "device",
            "--weight",
            "w",
            "--max-bins",
            "exact",
            "--format",
            "json",
            "--batch-rows",
            "500",
        ],
        capsys,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["by"] == ["country", "device"] and doc["weighted"] is True
    ref = _groupby_reference(cols)
    got = {tuple(s["key"]): s for s in doc["slices"]}
    assert set(got) == set(ref) and (None, 0) in got if nulls else set(got) == set(ref)
    for key, (n, auc, f1) in ref.items():
        s = got[key]
        assert s["n"] == n
        if auc is not None:
            assert s["result"]["auc"] == pytest.approx(auc, rel=1e-9)
        assert s["result"]["f1"] == pytest.approx(f1, rel=1e-9, abs=1e-12)
    single = Evaluator(task="binary", max_bins=None).update(cols["y"], cols["p"], cols["w"]).finalize()
    assert doc["overall"]["auc"] == pytest.approx(single.auc, rel=1e-12)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_empty_key_is_the_null_slice_in_every_format(fmt, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    cols = {
        "y": np.array([1, 0, 1, 0, 1, 0]),
        "p": np.array([0.9, 0.2, 0.7, 0.4, 0.6, 0.1]),
        "country": np.array(["fr", "uk", "uk", "", "", ""], dtype=object),
    }
    path = _write(cols, str(tmp_path / f"k.{fmt}"))
    code, out, _ = _run(["evaluate", path, "--by", "country", "--format", "json"], capsys)
    assert code == 0
    slices = json.loads(out)["slices"]
    assert {s["key"]: s["n"] for s in slices} == {"fr": 1, "uk": 2, None: 3}


def test_text_labels_read_a_csv_whose_labels_look_like_numbers(tmp_path, capsys):
    # "--labels 1,2,x" are text: a shard holding only 1s and 2s reads them as "1" and "2"
    _need("pyarrow")
    (tmp_path / "a.csv").write_text("y,p\n1,2\n2,2\n")
    (tmp_path / "b.csv").write_text("y,p\nx,1\n2,x\n")
    code, out, _ = _run(
        [
            "evaluate",
            str(tmp_path / "a.csv"),
            str(tmp_path / "b.csv"),
            "--task",
            "multiclass",
            "--labels",
            "1,2,x",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(out)["n"] == 4


def test_evaluate_by_text_top_ci_and_merge(tmp_path, capsys):
    rng = np.random.default_rng(12)
    cols = _sliced_data(rng, n=4000)
    a = {k: v[:2500] for k, v in cols.items()}
    b = {k: v[2500:] for k, v in cols.items()}
    pa_, pb = _write(a, str(tmp_path / "a.parquet")), _write(b, str(tmp_path / "b.parquet"))
    code, out, _ = _run(["evaluate", pa_, pb, "--by", "country", "--ci", "0.9", "--top", "2"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert "auc 90% CI" in lines[3] and "differs" in lines[3]
    sizes = {}
    for c in cols["country"]:
        sizes[c] = sizes.get(c, 0) + 1
    largest = sorted(sizes, key=lambda k: -sizes[k])[:2]
    assert [ln.split()[0] for ln in lines[4:6]] == largest
    assert "3 more slices" in lines[6]
    # states saved per shard merge into the same report as one run over both
    for name, path in (("a", pa_), ("b", pb)):
        assert (
            _run(
                [
                    "evaluate",
                    path,
                    "--by",
                    "country",
                    "--format",
                    "json",
                    "--save-state",
                    str(tmp_path / f"{name}.state"),
                ],
                capsys,
            )[0]
            == 0
        )
    code, merged, _ = _run(
        ["merge", str(tmp_path / "a.state"), str(tmp_path / "b.state"), "--format", "json", "--ci", "0.9"], capsys
    )
    code2, both, _ = _run(["evaluate", pa_, pb, "--by", "country", "--format", "json", "--ci", "0.9"], capsys)
    assert code == code2 == 0 and json.loads(merged) == json.loads(both)
    doc = json.loads(both)
    assert doc["ci"] == 0.9 and all("auc_ci_lower" in s["result"] for s in doc["slices"])
    state = load_state(str(tmp_path / "a.state"))
    assert isinstance(state, sm.Sliced) and state.n == 2500


def test_evaluate_by_refusals(tmp_path, capsys):
    rng = np.random.default_rng(13)
    path = _write(_sliced_data(rng, n=500), str(tmp_path / "d.parquet"))
    for argv, message in [
        (["--top", "3"], "--top applies to sliced reports"),
        (["--max-slices", "3"], "--max-slices applies to sliced reports"),
        (["--by", "nope"], "no column 'nope'"),
        (["--by", "device", "--by", "device"], "names a column twice"),
        (["--by", "country", "--max-slices", "2"], "max_slices=2"),
    ]:
        code, _, err = _run(["evaluate", path, *argv], capsys)
        assert code != 0 and message in err, (argv, err)
    with pytest.raises(SystemExit):
        cli.main(["evaluate", path, "--ci", "1.5"])


def test_shards_dropped_once_merged_give_the_state_kept_ones_give(tmp_path):
    """The command keeps no shard: the first shard's Evaluator becomes the total
    and the others are dropped once merged (their spilled runs never copied);
    the merged state is the one merging every shard into an empty total gives."""
    _need("pyarrow")
    from streammetrics.cli.progress import Progress
    from streammetrics.cli.shards import evaluate_sources
    from streammetrics.io import ColumnSpec, open_source

    rng = np.random.default_rng(3)
    paths = []
    for i in range(3):
        n = 6000
        y = (rng.random(n) < 0.4).astype(np.int64)
        paths.append(
            _write({"y": y, "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)}, str(tmp_path / f"s{i}.parquet"))
        )
    settings = {"task": "binary", "max_bins": None, "max_memory": 16 * 1024}
    out = {}
    for keep in (True, False):
        sources = [open_source(p, ColumnSpec("y", ("p",))) for p in paths]
        with Progress(sources, False) as progress:
            total, shards = evaluate_sources(sources, settings, 1000, progress, keep_shards=keep)
        assert len(shards) == (3 if keep else 0) and total.n == 18_000
        assert total._members["auc"].spilled
        out[keep] = total
        del shards
    assert out[True] == out[False]
    a, b = out[True].finalize(), out[False].finalize()
    assert (a.auc, a.average_precision, a.f1) == (b.auc, b.average_precision, b.f1)


def test_npy_columns_named_outside_latin1(tmp_path, capsys):
    """numpy writes such a structured array in format 3.0 (a UTF-8 header)."""
    rng = np.random.default_rng(7)
    y, p = (rng.random(500) < 0.4).astype(np.int64), rng.random(500)
    path = str(tmp_path / "ŷ.npy")
    rec = np.empty(500, dtype=[("ŷ", np.int64), ("p̂", np.float64)])
    rec["ŷ"], rec["p̂"] = y, p
    with pytest.warns(UserWarning, match="format 3.0"):
        np.save(path, rec)
    with open(path, "rb") as fh:
        assert np.lib.format.read_magic(fh) == (3, 0)
    code, out, _ = _run(["evaluate", path, "--y", "ŷ", "--p", "p̂", "--format", "json"], capsys)
    assert code == 0
    _assert_same_metrics(json.loads(out), _direct("binary", {"y": y, "p": p}))
    with open(path, "r+b") as fh:  # a header that is not an array's
        fh.seek(12)
        fh.write(b"[" * 20)
    code, _, err = _run(["evaluate", path, "--y", "ŷ", "--p", "p̂"], capsys)
    assert code == 1 and "not a valid .npy array" in err
