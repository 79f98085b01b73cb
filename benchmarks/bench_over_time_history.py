"""What History, Windowed and Decayed add to a template's update in a training
loop: batches of 256 rows as torch tensors (numpy without torch), per call.

``python -m benchmarks.bench_over_time_history [--quick]``; the figure to read
is ``overhead_us``, the wrapper's time per update less the template's, both
timed in alternating loops and the fastest loop of each kept (for History,
less the update of the step's own state, so that both fold into the same
state).
"""

from __future__ import annotations

import sys

import numpy as np

import streammetrics as sm

from ._util import have, print_table, row

BATCH = 256


def _paired(base, other, calls: int, repeat: int = 15) -> tuple[float, float]:
    """Seconds per call of ``base`` and ``other``, timed in alternating loops of
    ``calls`` (so that both see the same load) and the fastest loop of each
    kept: on a shared machine the minimum is the cost, the rest is waiting."""
    import time

    best = [float("inf"), float("inf")]
    base(), other()
    for _ in range(repeat):
        for j, fn in enumerate((base, other)):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[j] = min(best[j], (time.perf_counter() - t0) / calls)
    return best[0], best[1]


def _batches(count: int):
    rng = np.random.default_rng(0)
    y = (rng.random((count, BATCH)) < 0.4).astype(np.int64)
    p = rng.random((count, BATCH))
    if have("torch"):
        import torch

        return [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in zip(y, p)]
    return list(zip(y, p))


def run(quick: bool = False) -> list[dict]:
    calls = 200 if quick else 1000
    data = _batches(64)
    rows = []
    for name, make in (
        ("BinaryConfusion", lambda: sm.BinaryConfusion(threshold=0.5)),
        ("ProbabilityScores", sm.ProbabilityScores),
    ):
        group = f"update of {BATCH} rows, {name}"
        plain = make()
        history = sm.History(make())
        windowed = sm.Windowed(make(), every=10_000)
        it = {"i": 0}

        def batch():
            it["i"] = (it["i"] + 1) % len(data)
            return data[it["i"]]

        def template():
            plain.update(*batch())

        fixed = data[0]  # (one batch for both: the wrapper's cost does not depend on the values)

        def history_step():
            history.update(*fixed, step=0)

        history_step()
        own = history.parts()[0]  # the step's own state: the same work without the wrapper

        def step_state():
            own.update(*fixed)

        def windowed_rows():
            windowed.update(*batch())

        base, _ = _paired(template, template, calls)
        rows.append(row(group, "streammetrics (template)", base, overhead_us=0.0))
        b, t = _paired(step_state, history_step, calls, repeat=40)
        rows.append(row(group, "History(step=)", t, overhead_us=round((t - b) * 1e6, 2)))
        b, t = _paired(template, windowed_rows, calls)
        rows.append(row(group, "Windowed(every=10_000)", t, overhead_us=round((t - b) * 1e6, 2)))
        if name == "BinaryConfusion":
            decayed = sm.Decayed(make(), half_life=10_000)

            def decayed_rows():
                decayed.update(*batch())

            b, t = _paired(template, decayed_rows, calls)
            rows.append(row(group, "Decayed(half_life=10_000)", t, overhead_us=round((t - b) * 1e6, 2)))
    return rows


if __name__ == "__main__":
    result = run("--quick" in sys.argv)
    print_table(result)
    for r in result:
        print(f"{r['group']:40s} {r['impl']:28s} {r['median_s'] * 1e6:9.2f} us  +{r['overhead_us']:.2f} us")
