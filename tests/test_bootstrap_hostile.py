"""Bootstrap under hostile use: forked children, forged files, empty states."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import cli

from .harness import forged, merge_fails


def _run(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_bootstrap_in_a_forked_child_does_not_hang():
    """The replicate threads' pool is made anew in a forked child (it inherits
    the parent's pool without its threads)."""
    done = _run(
        """
        import os, signal, sys, time
        import numpy as np
        import streammetrics as sm
        from streammetrics.bootstrap import ranks
        ranks.CORES = 4  # replicate threads, whatever the machine
        rng = np.random.default_rng(0)
        y, p = rng.integers(0, 2, 20_000), rng.random(20_000)
        def run():
            members = {"auc": sm.RankAUC(), "f1": sm.BinaryConfusion(threshold=0.5)}
            acc = sm.Bootstrap(sm.Evaluator(members), 100, seed=1)
            return acc.update(y, p).finalize(ci=0.9)
        want = run()  # the pool's threads made here
        pid = os.fork()
        if pid == 0:
            os._exit(0 if run() == want else 3)
        for _ in range(400):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                sys.exit(os.waitstatus_to_exitcode(status))
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sys.exit("the forked child hung")
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_file_declaring_a_million_replicates_is_refused_by_merge(tmp_path, capsys):
    y, s = [1, 0, 1, 0], [0.9, 0.2, 0.4, 0.6]
    for template in (sm.RankAUC(), sm.BinaryConfusion(threshold=0.5)):
        path = forged(sm.Bootstrap(template, replicates=2).update(y, s), tmp_path / "b.state", {"replicates": 2**20})
        assert os.path.getsize(path) < 8000
        merge_fails(path, capsys, r"replicates must lie in \[1, 10000\], got 1048576")


def test_a_saved_bootstrap_of_many_replicates_loads(tmp_path):
    """What a file must hold for its replicates is what a save writes for them."""
    b = sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=4000, seed=2).update([1, 0, 1], [0.7, 0.2, 0.4])
    b.save(tmp_path / "b.state")
    assert sm.load_state(tmp_path / "b.state") == b


@pytest.mark.parametrize("template", [sm.RankAUC(), sm.Evaluator(task="binary")], ids=["RankAUC", "Evaluator"])
def test_bands_of_an_empty_bootstrap_say_so_as_the_scores_do(template):
    b = sm.Bootstrap(template, replicates=3)
    for read in (b.finalize, b.roc_band, b.pr_band):
        with pytest.raises(sm.NoObservationsError, match="has no observations: call update"):
            read()


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_rank_intervals_do_not_depend_on_the_scale_of_the_weights(scale):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s, w = rng.normal(size=500) + y, rng.random(500)
    one = sm.Bootstrap(sm.RankAUC(), replicates=20).update(y, s, sample_weight=w).finalize()
    scaled = sm.Bootstrap(sm.RankAUC(), replicates=20).update(y, s, sample_weight=w * scale).finalize()
    for k in ("auc", "auc_ci_lower", "auc_ci_upper"):  # an exact state's bounds equal the AUC: not repeated
        assert scaled[k] == pytest.approx(one[k], rel=1e-12), k
    assert scaled.n_pos_ci_lower == pytest.approx(one.n_pos_ci_lower * scale, rel=1e-12)


def test_row_ids_as_objects_are_read_or_refused_naming_the_row():
    y, p = [1, 0, 1], [1, 0, 0]
    as_ints = sm.Bootstrap(sm.BinaryConfusion(), replicates=4).update(y, p, key=np.array([5, 6, 7]))
    as_objects = sm.Bootstrap(sm.BinaryConfusion(), replicates=4).update(y, p, key=np.array([5, 6, 7], dtype=object))
    assert as_objects == as_ints
    for key, match in (
        ([5, "6", 7], r"key\[1\] = '6'"),
        ([5, 6, None], r"key\[2\] = None"),
        ([True, 6, 7], r"key\[0\] = True"),
    ):
        b = sm.Bootstrap(sm.BinaryConfusion(), replicates=4)
        with pytest.raises(TypeError, match=match + ": row keys must be integers within int64"):
            b.update(y, p, key=np.array(key, dtype=object))
        assert b.n == 0


def test_the_command_refuses_more_replicates_than_a_bootstrap_takes(tmp_path, capsys):
    path = tmp_path / "d.csv"
    path.write_text("y,p\n1,0.9\n0,0.2\n")
    with pytest.raises(SystemExit) as exc:
        cli.main(["evaluate", str(path), "--task", "binary", "--bootstrap", "10001"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("expected between 1 and 10000 replicates, got '10001'")
