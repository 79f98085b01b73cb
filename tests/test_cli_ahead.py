"""The command's compile-ahead helper: when it starts, what it runs, and that it
never changes what the command prints or computes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from streammetrics import cli
from streammetrics.cli import ahead as A
from streammetrics.cli.compiling import CompileWatch
from streammetrics.io import ColumnSpec

from .test_cli import _data, _write

COLS = ColumnSpec("y", ("p",))
SETTINGS = {"task": "binary", "max_bins": None, "max_memory": 10**9}


class _Spawned:
    def __init__(self, calls):
        self.calls = calls

    def __call__(self, argv, **kw):
        self.calls.append((argv, kw))
        return _Done()


class _Done:
    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


@pytest.fixture
def spawned(monkeypatch):
    calls = []
    monkeypatch.setattr(A.subprocess, "Popen", _Spawned(calls))
    monkeypatch.setenv(A.ENV, "1")
    monkeypatch.setattr(A, "CORES", 2)
    return calls


def test_started_once_when_armed_and_compiling_in_either_order(spawned, tmp_path):
    a = A.Ahead()
    a.start()  # compiling before the command knows its input: waits for arm
    assert spawned == []
    a.arm(tmp_path / "f.parquet", COLS, SETTINGS)
    assert len(spawned) == 1
    a.start()
    a.arm(tmp_path / "f.parquet", COLS, SETTINGS)
    assert len(spawned) == 1  # once
    argv, kw = spawned[0]
    assert argv[:3] == [sys.executable, "-c", A._HELPER]
    plan = json.loads(argv[3])
    assert plan["path"] == str(tmp_path / "f.parquet") and plan["settings"] == SETTINGS
    assert kw["env"][A.ENV] == "0"  # the helper starts none of its own
    assert kw["stdout"] is subprocess.DEVNULL and kw["stderr"] is subprocess.DEVNULL
    a.stop()
    assert a.proc is None

    b = A.Ahead()
    b.arm(tmp_path / "f.parquet", COLS, SETTINGS)
    assert len(spawned) == 1  # armed, not compiling: nothing started
    b.start()
    assert len(spawned) == 2


@pytest.mark.parametrize("why", ["off", "one core"])
def test_not_started_when_off_or_on_one_core(spawned, monkeypatch, tmp_path, why):
    if why == "off":
        monkeypatch.setenv(A.ENV, "0")
    else:
        monkeypatch.setattr(A, "CORES", 1)
    assert not A.enabled()
    a = A.Ahead()
    a.arm(tmp_path / "f.parquet", COLS, SETTINGS)
    a.start()
    assert spawned == [] and a.proc is None


def test_the_watch_starts_it_at_the_first_compilation_and_stops_it(spawned, tmp_path, capsys):
    with CompileWatch() as watch:
        watch.ahead.arm(tmp_path / "f.parquet", COLS, SETTINGS)
        assert spawned == []
        watch.on_start(None)
        watch.on_end(None)
        watch.on_start(None)
        watch.on_end(None)
        assert len(spawned) == 1
    assert watch.ahead.proc is None
    assert "compiling kernels on first use" in capsys.readouterr().err


def test_a_running_helper_is_stopped_with_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(A, "CORES", 2)
    monkeypatch.setenv(A.ENV, "1")
    a = A.Ahead()
    a.plan = {"path": "x"}
    real = subprocess.Popen
    monkeypatch.setattr(A.subprocess, "Popen",
                        lambda argv, **kw: real([sys.executable, "-c", "import time; time.sleep(60)"], **kw))
    a.start()
    proc = a.proc
    assert proc.poll() is None
    a.stop()
    assert proc.poll() is not None


@pytest.mark.parametrize("by", [False, True])
def test_the_helper_runs_the_task_on_the_first_rows(tmp_path, by):
    pytest.importorskip("pyarrow")
    cols = _data("binary", np.random.default_rng(1))
    if by:
        cols["country"] = np.arange(len(cols["y"])) % 4
    path = _write(cols, str(tmp_path / "preds.parquet"))
    settings = dict(SETTINGS, **({"by": ["country"]} if by else {}))
    a = A.Ahead()
    a.arm(path, ColumnSpec("y", ("p",), by=("country",) if by else ()), settings)
    A.run(json.loads(json.dumps(a.plan)))  # as the helper reads it
    before = sorted(os.listdir(tmp_path))
    assert before == ["preds.parquet"]  # it writes nothing but kernels


def test_the_helper_process_exits_cleanly_and_the_command_agrees(tmp_path, capsys, monkeypatch):
    pytest.importorskip("pyarrow")
    path = _write(_data("binary", np.random.default_rng(2)), str(tmp_path / "preds.parquet"))
    a = A.Ahead()
    a.arm(path, COLS, SETTINGS)
    env = dict(os.environ, **{A.ENV: "0"})
    done = subprocess.run([sys.executable, "-c", A._HELPER, json.dumps(a.plan)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    bad = subprocess.run([sys.executable, "-c", A._HELPER, json.dumps(dict(a.plan, path=str(tmp_path / "none")))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stdout == ""
    argv = ["evaluate", path, "--task", "binary", "--format", "json"]
    monkeypatch.setenv(A.ENV, "0")
    assert cli.main(argv) == 0
    off = json.loads(capsys.readouterr().out)
    monkeypatch.setenv(A.ENV, "1")
    assert cli.main(argv) == 0
    on = json.loads(capsys.readouterr().out)
    assert on == off
