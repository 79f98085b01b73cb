"""Silhouette score on Gaussian blobs: time and peak memory.

Gaussian blobs with K = 8 centres drawn in [-10, 10]^d and unit spread (what
``sklearn.datasets.make_blobs`` draws), n = 5k, 10k, 20k points in d = 16 and
64 dimensions (quick: n = 5k only). Three implementations, each timed in its own
child process so that its memory can be measured:

* ``streammetrics silhouette_score`` (``convention="sklearn"``, so that the
  values can be checked against scikit-learn's);
* ``sklearn.metrics.silhouette_score`` (default ``working_memory``);
* the floor: ``X @ X.T`` computed in panels of 1024 rows into a reused buffer,
  numpy's BLAS on every core. Every Euclidean silhouette must at least form
  these dot products.

Peak memory is the child's high-water RSS during the timed runs minus its RSS
just before them, with ``X`` and the labels already loaded and every kernel
compiled (Linux: ``VmHWM`` reset through ``/proc/self/clear_refs``; elsewhere
the ``ru_maxrss`` delta, which reads 0 when the compilation peak was higher).

What to read: the peak memory beyond X, which stays under the 64 MB budget
where scikit-learn's grows with n squared, and the time against scikit-learn
and the floor. The machine may be shared: read the ratios, not the seconds.

``python -m benchmarks.bench_silhouette [--quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

import numpy as np

from ._util import have, print_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = 8


def blobs(n: int, d: int, k: int = K, seed: int = 0):
    """``make_blobs``-like data: k centres uniform in [-10, 10]^d, unit spread."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10, 10, size=(k, d))
    labels = rng.integers(0, k, size=n)
    X = centres[labels] + rng.standard_normal((n, d))
    return np.ascontiguousarray(X), labels.astype(np.int64)


# --------------------------------------------------------------------------
# the child: one implementation, one data set


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class _Peak:
    """Peak RSS growth over a region, in MB."""

    def __enter__(self):
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # reset VmHWM to the current RSS
            self.proc = True
            self.base = _rss_kb("VmRSS")
        except OSError:
            self.proc = False
            self.base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.mb = (_rss_kb("VmHWM") - self.base) / 1024
        else:
            self.mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - self.base) / 1024
        return False


def _child(spec: dict) -> dict:
    import gc
    import time

    X = np.load(spec["X"])
    y = np.load(spec["y"])
    impl = spec["impl"]
    if impl == "streammetrics":
        from streammetrics import silhouette_score

        def fn(X=X, y=y):
            return silhouette_score(X, y, convention="sklearn")
    elif impl == "sklearn":
        from sklearn.metrics import silhouette_score as sk_score

        def fn(X=X, y=y):
            return sk_score(X, y)
    elif impl == "floor":
        rows = 1024
        buf = np.empty((rows, X.shape[0]))

        def fn(X=X):
            n = X.shape[0]
            for i in range(0, n, rows):
                m = min(rows, n - i)
                np.matmul(X[i : i + m], X.T, out=buf[:m])
            return float("nan")
    else:
        raise ValueError(impl)
    if impl == "floor":
        fn()  # warm up BLAS and the buffer
    else:
        fn(X[:400], y[:400])  # import, compile, warm up
    times = []
    value = None
    gc.collect()
    with _Peak() as peak:
        for _ in range(spec["repeat"]):
            t0 = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t0)
    return {"times": times, "peak_mb": peak.mb, "value": value}


def _run_child(impl: str, xpath: str, ypath: str, repeat: int) -> dict:
    spec = json.dumps({"impl": impl, "X": xpath, "y": ypath, "repeat": repeat})
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_silhouette", "--child", spec],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{impl} child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------
# the parent


def run(quick: bool) -> list[dict]:
    sizes = [5_000] if quick else [5_000, 10_000, 20_000]
    dims = [16, 64]
    impls = ["streammetrics", "floor"] + (["sklearn"] if have("sklearn") else [])
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_silhouette_") as tmp:
        for n in sizes:
            for d in dims:
                X, y = blobs(n, d)
                xpath = os.path.join(tmp, "X.npy")
                ypath = os.path.join(tmp, "y.npy")
                np.save(xpath, X)
                np.save(ypath, y)
                group = f"silhouette_score, blobs K={K}, n={n}, d={d}"
                results = {}
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
                for impl in impls:
                    repeat = 3 if impl == "sklearn" or quick else 5
                    results[impl] = _run_child(impl, xpath, ypath, repeat)
                ours = results["streammetrics"]
                ours_s = float(np.median(ours["times"]))
                floor_s = float(np.median(results["floor"]["times"]))
                names = {
                    "streammetrics": "streammetrics silhouette_score",
                    "floor": "numpy X @ X.T in panels (floor)",
                    "sklearn": "sklearn silhouette_score",
                }
                for impl in impls:
                    r = results[impl]
                    med = float(np.median(r["times"]))
                    entry = {
                        "group": group,
                        "name": group,
                        "impl": names[impl],
                        "median_s": med,
                        "min_s": float(min(r["times"])),
                        "peak_mb": round(r["peak_mb"], 1),
                        "x_mb": round(X.nbytes / 2**20, 1),
                        "n": n,
                        "d": d,
                    }
                    if impl == "streammetrics":
                        entry["load_avg"] = round(load, 2)  # how busy the machine was
                        entry["vs_floor"] = round(ours_s / floor_s, 2)
                        if "sklearn" in results:
                            sk = results["sklearn"]
                            entry["speedup_vs_sklearn"] = round(float(np.median(sk["times"])) / ours_s, 2)
                            entry["abs_diff_vs_sklearn"] = abs(r["value"] - sk["value"])
                    rows.append(entry)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_silhouette",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="n = 5k only, fewer repeats")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    rows = run(args.quick)
    print_table(rows)
    print("\nratios (streammetrics): speedup over sklearn, time over the X @ X.T floor, peak MB above X")
    for r in rows:
        if r["impl"].startswith("streammetrics"):
            print(
                f"  n={r['n']:>6} d={r['d']:>3}  speedup x{r.get('speedup_vs_sklearn', float('nan')):.2f}"
                f"  floor x{r['vs_floor']:.2f}  peak {r['peak_mb']:.1f} MB"
                f"  (load average {r['load_avg']:.1f} on {os.cpu_count()} CPUs)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
