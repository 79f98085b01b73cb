"""``streammetrics compile``: the kernels a task uses compiled ahead, so that a
fresh process with the same cache compiles nothing at its first use."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from streammetrics import cli
from streammetrics.cli import compiling as P
from streammetrics.cli.common import TASKS, CommandError

#: a fresh process's first use of the regression accumulators, weighted or not, printing how
#: many kernels Numba compiled for it
FIRST_USE = """
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, e): compiled.append(e.data["dispatcher"].py_func.__name__)
    def on_end(self, e): pass
event.register("numba:compile", Count())
import numpy as np, streammetrics as sm
y = np.array([1.0, 2.0, 4.0, 3.0]); p = np.array([1.5, 2.0, 3.0, 3.5])
sm.RegressionErrors().update(y, p).finalize()
sm.Evaluator(task="regression").update(y, p).finalize()
sm.Evaluator(task="regression").update(y, p, sample_weight=[1.0, 0.5, 2.0, 1.0]).finalize()
print(len(compiled), sorted(set(compiled)))
"""


def _run(args, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600)


def test_a_compiled_task_compiles_nothing_at_its_first_use(tmp_path):
    cache = tmp_path / "numba-cache"
    cold = _run(["-m", "streammetrics", "compile", "--task", "regression", "--jobs", "1"], cache)
    assert cold.returncode == 0, cold.stderr
    lines = cold.stderr.splitlines()
    assert lines[0] == "streammetrics: compiling the kernels of regression on 1 process"
    assert lines[-1].startswith("streammetrics: compiled in ") and lines[-1].endswith(
        "s of compiling in all); later runs start at once"
    ), lines
    assert cold.stdout == ""
    first = _run(["-c", FIRST_USE], cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == "0", first.stdout  # every kernel loaded from the cache
    again = _run(["-m", "streammetrics", "compile", "--task", "regression"], cache)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[-1].startswith(
        "streammetrics: nothing to compile: the kernels of regression were already compiled ("
    )


def test_an_empty_cache_compiles_at_first_use():
    """The check above can fail: without the command, the first use compiles."""
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        first = _run(["-c", FIRST_USE], cache)
    assert first.returncode == 0, first.stderr
    assert int(first.stdout.split()[0]) > 0


def test_tasks_are_dealt_to_balance_the_workers(monkeypatch):
    # the costliest first, each to the worker with the least so far
    monkeypatch.setattr(
        P,
        "COST",
        {"binary": 28.0, "multiclass": 10.0, "multilabel": 9.0, "clustering": 9.0, "regression": 3.5, "ranking": 3.0},
    )
    two = [["binary", "regression"], ["multiclass", "multilabel", "clustering", "ranking"]]
    assert P._shares(list(P.UNITS), 2) == two
    assert P._shares(list(P.UNITS), 1) == [
        ["binary", "multiclass", "multilabel", "clustering", "regression", "ranking"]
    ]
    assert P._shares(["regression", "binary", "regression"], 8) == [["binary"], ["regression"]]
    monkeypatch.undo()
    # every task of the command has its units and its cost
    assert set(P.UNITS) == set(P.COST) == set(TASKS)


def test_a_failing_worker_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(P, "_WORKER", "import sys; sys.stderr.write('boom: no kernel\\n'); sys.exit(3)")
    args = types.SimpleNamespace(task=["regression", "regression"], jobs=None)
    with pytest.raises(CommandError, match=r"^compiling failed for regression: boom: no kernel$"):
        P.cmd_compile(args)


@pytest.mark.parametrize(
    "argv, message",
    [(["compile", "--task", "vision"], "invalid choice: 'vision'"), (["compile", "--jobs", "0"], "--jobs")],
)
def test_bad_options_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
