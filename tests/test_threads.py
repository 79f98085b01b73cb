"""Accumulators shared between threads: calls take turns, no row is lost.

Two threads fold alternate batches into one accumulator; the result equals
one thread folding them all (counts exactly, sums to rounding, since the
batches arrive in another order). Kernels release the GIL, so without the
accumulator's lock the threads would run them on one state at the same time.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import streammetrics as sm

from .harness import assert_results_equal
from .registry import CASES


def _batches(case, pieces=40):
    arrays, w = case.data(np.random.default_rng(5))
    n = len(arrays[0])
    reps = 8  # more rows, so the kernels run long enough to overlap
    arrays = tuple(np.concatenate([a] * reps) for a in arrays)
    w = None if w is None or not case.make().takes_weights else np.concatenate([w] * reps)
    edges = np.linspace(0, n * reps, pieces + 1).astype(int)
    return [(tuple(a[lo:hi] for a in arrays), None if w is None else w[lo:hi]) for lo, hi in zip(edges[:-1], edges[1:])]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_two_threads_on_one_accumulator_lose_nothing(case):
    if case.ordered:
        pytest.skip("two threads interleave the rows of its ordered stream")
    batches = _batches(case)
    alone = case.make()
    for args, w in batches:
        alone.update(*args, sample_weight=w)
    shared = case.make()
    start = threading.Barrier(2)
    errors = []

    def work(part):
        try:
            start.wait()
            for args, w in part:
                shared.update(*args, sample_weight=w)
                if len(args[0]) % 7 == 0:
                    shared.finalize()  # reads between the updates
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(batches[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert shared.n == alone.n
    assert_results_equal(shared.finalize(), alone.finalize(), rtol=0 if case.exact else 1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_saving_while_another_thread_updates(case, tmp_path):
    """Every file saved (and pickle made) while another thread updates loads,
    and the updates end in the state one thread alone reaches."""
    batches = _batches(case, pieces=20)
    shared, alone = case.make(), case.make()
    stop, saved, bad = threading.Event(), [], []

    def save_in_a_loop():
        while not stop.is_set() or len(saved) < 2:
            path = tmp_path / f"s{len(saved) % 3}.smstate"
            try:
                shared.save(path)
                sm.load_state(path)
                pickle.loads(pickle.dumps(shared))
            except Exception as exc:  # noqa: BLE001 - reported below
                bad.append(exc)
            saved.append(path)

    saver = threading.Thread(target=save_in_a_loop)
    saver.start()
    passes = 0
    while passes < 2 or (len(saved) < 10 and passes < 8):
        for args, w in batches:
            shared.update(*args, sample_weight=w)
            alone.update(*args, sample_weight=w)
        passes += 1
    stop.set()
    saver.join(timeout=60)
    assert not saver.is_alive() and not bad, bad[:3]
    assert shared == alone


def test_merges_both_ways_at_once_do_not_deadlock():
    a = sm.BinaryConfusion().update([1, 0, 1], [1, 1, 0])
    b = sm.BinaryConfusion().update([0, 0], [0, 1])
    done = []

    def merge_many(x, y):
        for _ in range(300):
            x.merge(y.copy())
            if x.n > 2**40:  # interleaved, the two grow like Fibonacci numbers
                x.reset()
        done.append(True)

    threads = [threading.Thread(target=merge_many, args=(a, b)), threading.Thread(target=merge_many, args=(b, a))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert done == [True, True]


def test_parallel_silhouettes_from_two_threads_under_workqueue():
    """Numba's workqueue layer aborts the process when two threads enter a
    parallel region at once; the silhouette's parallel kernels take turns."""
    script = textwrap.dedent(
        """
        import threading
        import numpy as np
        import streammetrics as sm
        import streammetrics._kernels._jit as J
        J.SERIAL_WORK = 0  # the parallel twins, even for small inputs
        rng = np.random.default_rng(0)
        X = rng.normal(size=(600, 4))
        labels = np.arange(600) % 3
        want = sm.silhouette_score(X, labels)
        got = []
        def run():
            for _ in range(5):
                got.append(sm.silhouette_score(X, labels))
        threads = [threading.Thread(target=run) for _ in range(2)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert len(got) == 10 and all(abs(g - want) < 1e-12 for g in got), got
        print("ok")
        """
    )
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
