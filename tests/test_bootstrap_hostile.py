"""Bootstrap under hostile use: forked children, forged files, empty states."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


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
