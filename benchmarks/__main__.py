"""Run the benchmarks: ``python -m benchmarks [--quick] [--only core auc ...]``.

Prints one table (medians and ratios to streammetrics within each group) and
writes every row to ``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time

from ._util import print_table

MODULES = ["core", "auc", "bounds", "multiclass", "silhouette", "evaluate", "dask", "curves", "regression", "retrieval"]
MODULES += ["over_time", "over_time_history", "engines", "probability"]
MODULES += ["plots_memory", "sliced_memory"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--only", nargs="+", choices=MODULES, help="run only these modules")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "latest.json"))
    args = ap.parse_args(argv)
    rows = []
    for name in args.only or MODULES:
        try:
            mod = importlib.import_module(f"benchmarks.bench_{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"benchmarks.bench_{name}":
                continue
            raise
        print(f"# running bench_{name} ...", file=sys.stderr, flush=True)
        rows.extend(mod.run(args.quick))
    print_table(rows)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(
            {
                "when": time.strftime("%Y-%m-%d %H:%M:%S"),
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "quick": args.quick,
                "rows": rows,
            },
            fh,
            indent=1,
        )
    print(f"\nrows written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
