"""Per-update time by input type, batch 256: the headline accumulators fed numpy
float64 and float32 arrays, torch float64 and float32 CPU tensors, and lists;
each group's ratios are to numpy float64, and ``torch/numpy`` compares a tensor
with the numpy array of its own dtype (medians of several repeats). A row with
``.numpy()`` called by hand in the loop shows the floor of a tensor's cost.

``python -m benchmarks.bench_inputs [--quick]``
"""

from __future__ import annotations

import argparse
import functools

import numpy as np

from ._util import have, per_call_time, print_table, row

BATCH = 256


def _cases(rng):
    """(name, make, y, p): the accumulators and the arrays they read."""
    import streammetrics as sm

    y = (rng.random(BATCH) < 0.5).astype(np.float64)
    p = rng.random(BATCH)
    yr, pr = rng.normal(size=BATCH), rng.normal(size=BATCH)
    yk, pk = rng.integers(0, 5, BATCH).astype(np.float64), rng.integers(0, 5, BATCH).astype(np.float64)
    return [
        ("BinaryConfusion(threshold=0.5)", lambda: sm.BinaryConfusion(threshold=0.5), y, p),
        ("RankAUC", sm.RankAUC, y, p),
        ("ProbabilityScores", sm.ProbabilityScores, y, p),
        ("RegressionErrors", sm.RegressionErrors, yr, pr),
        ("MulticlassConfusion(5)", lambda: sm.MulticlassConfusion(5), yk, pk),
        ("Calibration", sm.Calibration, y, p),
        ("Evaluator(task='binary')", lambda: sm.Evaluator(task="binary"), y, p),
    ]


def run(quick: bool = False) -> list[dict]:
    torch = None
    if have("torch"):
        import torch
    rng = np.random.default_rng(0)
    calls, repeat = (300, 5) if quick else (2000, 7)
    rows = []
    for name, make, y, p in _cases(rng):
        group = f"{name}.update, batch={BATCH}"
        inputs = {"numpy float64": (y, p), "numpy float32": (y.astype(np.float32), p.astype(np.float32))}
        if torch is not None:
            inputs["torch float64"] = (torch.from_numpy(y), torch.from_numpy(p))
            inputs["torch float32"] = (torch.from_numpy(y).float(), torch.from_numpy(p).float())
        inputs["list"] = (y.tolist(), p.tolist())
        # the input types take turns within each repeat, so a busy spell of the
        # machine weighs on all of them alike
        updates = {kind: functools.partial(make().update, a, b) for kind, (a, b) in inputs.items()}
        if torch is not None:  # the floor: the caller's own .numpy() of each tensor
            update, (a, b) = make().update, inputs["torch float64"]
            updates["torch float64, .numpy() by hand"] = lambda u=update, a=a, b=b: u(a.numpy(), b.numpy())
        runs = {kind: [] for kind in updates}
        for _ in range(repeat):
            for kind, update in updates.items():
                runs[kind].append(per_call_time(update, calls=calls, repeat=1))
        times = {kind: float(np.median(t)) for kind, t in runs.items()}
        for kind, t in times.items():
            extra = {}
            if kind.startswith("torch"):
                extra["torch/numpy"] = t / times["numpy" + kind[5:13]]
            rows.append(row(group, ("streammetrics, " if kind == "numpy float64" else "") + kind, t, **extra))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    print_table(run(ap.parse_args().quick))
