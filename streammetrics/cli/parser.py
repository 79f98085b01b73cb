"""The command line of ``streammetrics``: its subcommands, options and defaults."""

from __future__ import annotations

import argparse
import contextlib
import math

from streammetrics import __version__

from .common import (
    AUTO_LABELS,
    DEFAULT_BATCH_ROWS,
    DEFAULT_MAX_BINS,
    DEFAULT_MEMORY,
    DEMO_ROWS,
    DEMO_SHARDS,
    PROG,
    PROGRESS,
    TASKS,
)

__all__ = ["build_parser"]

#: the replicates of ``compare`` unless ``--bootstrap`` says otherwise
COMPARE_REPLICATES = 200


def _number(kind=int, low=None, high=None, words=(), noun=None, span=None, open_ends=False):
    """An option's type: a ``kind`` (int or float) in ``[low, high]`` (``(low, high)``
    with ``open_ends``), or None for one of ``words``; ``noun`` and ``span`` phrase the refusals."""
    alt = f" (or {words[0]!r})" if words else ""
    noun = noun or ("a whole number" if kind is int else "a number")

    def parse(text: str):
        if text.strip().lower() in words:
            return None
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}{alt}, got {text!r}") from None
        if kind is float and not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        outside = (low is not None and (v <= low if open_ends else v < low)) or (
            high is not None and (v >= high if open_ends else v > high)
        )
        if outside:
            raise argparse.ArgumentTypeError(
                f"expected {span}{alt}, got {text!r}" if span else f"expected a number > 0{alt}, got {v}"
            )
        return v

    return parse


_positive_int = _number(int, 1)
_max_bins = _number(int, 1, words=("exact", "none"))
_calibration_bins = _number(int, 1, words=("off", "none"))
_finite_float = _number(float)
_level = _number(float, 0.0, 1.0, span="a confidence level in (0, 1)", open_ends=True)
_rate = _number(float, 0.0, 1.0, span="a rate in [0, 1]")
_bootstrap = _number(int, 1, 10_000, noun="a whole number of replicates", span="between 1 and 10000 replicates")
_seed = _number(int, 0, (1 << 64) - 1, noun="an integer seed", span="a seed in [0, 2**64)")


def _memory(text: str):
    """``--memory``: a size such as ``1GB`` or ``512MiB``, or ``none`` (no budget)."""
    if text.strip().lower() in ("none", "unlimited"):
        return None
    from ..metrics.ranking.spill import parse_memory

    try:
        return parse_memory(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("max_memory", "the memory budget")) from None


def _labels(text: str):
    """``--labels``: ``"auto"``, or the comma-separated labels (integers when
    every one is an integer, else text), without repeats."""
    if text.strip().lower() == AUTO_LABELS:
        return AUTO_LABELS
    labels = [v.strip() for v in text.split(",")]
    if not all(labels):
        raise argparse.ArgumentTypeError(f"expected labels separated by commas, got {text!r}")
    with contextlib.suppress(ValueError):
        labels = [int(v) for v in labels]
    repeated = next((v for i, v in enumerate(labels) if v in labels[:i]), None)
    if repeated is not None:
        raise argparse.ArgumentTypeError(f"label {repeated!r} is given twice")
    return labels


def _output_options() -> argparse.ArgumentParser:
    """The options of the commands that print a report (``evaluate``, ``merge``)."""
    out = argparse.ArgumentParser(add_help=False)
    _format(out)
    out.add_argument("--plots", metavar="DIR", help="write PNG plots (ROC, PR, confusion matrix, regression) into DIR")
    state = "save the merged state to FILE (for 'streammetrics merge' or streammetrics.load_state)"
    out.add_argument("--save-state", metavar="FILE", help=state)
    ci = (
        "add confidence intervals at LEVEL (e.g. 0.95) to the scores that offer them; with --by, flag the slices "
        "whose interval leaves out the overall score"
    )
    out.add_argument("--ci", type=_level, metavar="LEVEL", help=ci)
    top = "sliced reports (--by): show the N largest slices in the text report (the JSON report holds every slice)"
    out.add_argument("--top", type=_positive_int, metavar="N", help=top)
    for name, what in (
        ("recall", "the highest threshold whose recall is at least R"),
        ("precision", "the lowest threshold whose precision is at least R"),
        ("fpr", "the lowest threshold whose false positive rate is at most R"),
    ):
        what = f"binary: report {what} under 'operating points' (repeatable)"
        out.add_argument(f"--target-{name}", type=_rate, action="append", metavar="R", help=what)
    return out


def _format(p) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text", help="report format on stdout (default: text)")


#: the help of ``evaluate``'s options
_EVALUATE_HELP = {
    "--y": "column of the truth (default: y); for a 2-D .npy, a column index; for multilabel, one list column or "
    "one 0/1 column per label, as --y y0,y1,y2",
    "--p": "column of the predictions (default: p); for multiclass class probabilities (or multilabel "
    "predictions), one list column or one column per class, as --p p0,p1,p2 or --p p0 --p p1 --p p2",
    "--by": "report the scores per slice of COL's values as well as overall; repeat it for the slices of a cross "
    "of columns (--by country --by device)",
    "--max-slices": "with --by: the most distinct slices kept (default 10000); more stop the evaluation with an error",
    "--threshold": "binary: p >= T is a positive prediction (default 0.5 for probabilities, 0 for scores); "
    "multilabel: the columns of p are scores and p >= T predicts a label (default: p holds 0/1 predictions)",
    "--scores": "binary: 'probability' (p in [0, 1], adds log loss and Brier; the default) or 'score' (any finite "
    "reals, e.g. logits)",
    "--n-labels": "multilabel: the number of labels, when --y is one list column (with several --y columns, "
    "their number)",
    "--labels": "multiclass: the class labels in class order (that of the probability columns), as y (and a p of "
    "predicted labels) holds them, e.g. cat,dog,bird; 'auto': the sorted distinct values, read in a first pass",
    "--auc": "multiclass with class probabilities: add the one-vs-rest and one-vs-one AUC (exact, with a state "
    "that grows with the rows; --max-bins bounds it to one-vs-rest) and per-class ROC and PR plots",
    "--memory": f"binary and multilabel scores: the exact AUC's memory budget (default {DEFAULT_MEMORY}), past "
    "which sorted runs of scores are spilled to $TMPDIR and merged back: every ranking figure stays exact; "
    "with --by, one budget for every slice together; --task ranking: the budget of the open queries' rows; "
    "'none': no budget",
    "--max-bins": "binary, multiclass --auc and multilabel scores: approximate the AUC with at most 2B bins (per "
    "class), every ranking figure with certified bounds; default: exact",
    "--calibration-bins": "binary probabilities and multiclass: bins of the reliability table (ECE, MCE, Brier "
    "decomposition; default 15); 'off' leaves calibration out",
    "--bootstrap": "percentile intervals from N keyed Poisson bootstrap replicates for every score (at the --ci "
    "level, default 0.95), and with --plots bands around the ROC and PR curves; an exact AUC keeps the rows in "
    "memory (17 bytes each)",
}


def _evaluate_options(ev) -> None:
    h = _EVALUATE_HELP
    _file_options(ev, DEFAULT_BATCH_ROWS)
    ev.add_argument("--task", choices=TASKS, default="binary", help="what to evaluate (default: binary)")
    ev.add_argument("--y", default="y", metavar="COL", help=h["--y"])
    ev.add_argument("--p", action="append", metavar="COL", help=h["--p"])
    ev.add_argument("--by", action="append", metavar="COL", help=h["--by"])
    ev.add_argument("--query", metavar="COL", help="ranking: column of the query ids (integers or text)")
    ev.add_argument("--relevance", metavar="COL", help="ranking: column of the graded relevance (default: relevance)")
    ev.add_argument("--score", metavar="COL", help="ranking: column of the scores that rank a query's rows")
    ev.add_argument("--k", metavar="K,K,...", help="ranking: the cut-offs, such as 1,5,10 (default: 1,5,10)")
    grouped = "ranking: each query's rows are contiguous in each file (scored as the next query starts)"
    ev.add_argument("--grouped", action="store_true", help=grouped)
    ev.add_argument("--max-slices", type=_positive_int, metavar="N", help=h["--max-slices"])
    ev.add_argument("--threshold", type=_finite_float, metavar="T", help=h["--threshold"])
    ev.add_argument("--scores", choices=("probability", "score"), help=h["--scores"])
    k = "multiclass: the number of classes (classes are 0..K-1)"
    ev.add_argument("--n-classes", type=_positive_int, metavar="K", help=k)
    ev.add_argument("--n-labels", type=_positive_int, metavar="L", help=h["--n-labels"])
    ev.add_argument("--labels", type=_labels, metavar="A,B,...", help=h["--labels"])
    k = "multiclass with class probabilities: add top-K accuracy"
    ev.add_argument("--top-k", type=_positive_int, metavar="K", help=k)
    ev.add_argument("--auc", action="store_true", help=h["--auc"])
    ev.add_argument("--memory", type=_memory, default=DEFAULT_MEMORY, metavar="SIZE", help=h["--memory"])
    ev.add_argument("--max-bins", type=_max_bins, default=DEFAULT_MAX_BINS, metavar="B", help=h["--max-bins"])
    ev.add_argument("--calibration-bins", type=_calibration_bins, default=15, metavar="B", help=h["--calibration-bins"])
    ev.add_argument("--time", metavar="COL", help="column of timestamps: report the scores per bucket of --every")
    every = "bucket length with --time: 1d, 6h, 15min, ... or a number in the time column's unit"
    ev.add_argument("--every", metavar="SPAN", help=every)
    keep = "with --time: keep the last N buckets only"
    ev.add_argument("--keep", dest="keep_buckets", type=_positive_int, metavar="N", help=keep)
    ev.add_argument("--window", type=_positive_int, metavar="N", help="report the scores of the last N rows only")
    ev.add_argument("--bootstrap", type=_bootstrap, metavar="N", help=h["--bootstrap"])  # (Bootstrap's MAX_REPLICATES)


def _demo_options(dm) -> None:
    dm.add_argument("--rows", type=_positive_int, default=DEMO_ROWS, help=argparse.SUPPRESS)
    dm.add_argument("--shards", type=_positive_int, default=DEMO_SHARDS, help=argparse.SUPPRESS)
    dm.add_argument("--format-files", choices=("auto", "parquet", "npy"), default="auto", help=argparse.SUPPRESS)
    dm.add_argument("--keep", metavar="DIR", help="write the files into DIR and keep them")
    dm.add_argument("--plots", metavar="DIR", help="also write the plots into DIR")
    dm.add_argument("--progress", choices=PROGRESS, default="auto", help=argparse.SUPPRESS)


def _file_options(p, batch_rows: int) -> None:
    """The options of the commands that read files (``evaluate``, ``compare``)."""
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, globs or directories")
    p.add_argument("--weight", metavar="COL", help="column of sample weights")
    rows = f"rows per batch (default {batch_rows})"
    p.add_argument("--batch-rows", type=_positive_int, default=batch_rows, metavar="N", help=rows)
    bar = "progress bar on stderr (default: when stderr is a terminal)"
    p.add_argument("--progress", choices=PROGRESS, default="auto", help=bar)
    key = (
        "column of integer row ids that key the bootstrap weights (the same row gets the same weights in any file, "
        "shard or order); without it, a row's position in the files, in the order given"
    )
    p.add_argument("--key", metavar="COL", help=key)
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the bootstrap weights (default: 0)")


def _compare_options(cp) -> None:
    _file_options(cp, 1 << 20)
    cp.add_argument("--y", default="y", metavar="COL", help="column of the 0/1 truth (default: y)")
    p = "a model's column of scores; give it twice: --p model_a --p model_b"
    cp.add_argument("--p", action="append", metavar="COL", required=True, help=p)
    t = "rows with a score >= T are called positive (default: 0.5)"
    cp.add_argument("--threshold", type=_finite_float, default=0.5, metavar="T", help=t)
    scores = "'score' for unbounded scores (no log loss or Brier score)"
    cp.add_argument("--scores", choices=("probability", "score"), default="probability", help=scores)
    n = f"bootstrap replicates (default: {COMPARE_REPLICATES})"
    cp.add_argument("--bootstrap", type=_bootstrap, default=COMPARE_REPLICATES, metavar="N", help=n)
    ci = "level of the intervals of the differences (default: 0.95)"
    cp.add_argument("--ci", type=_level, default=0.95, metavar="LEVEL", help=ci)
    _format(cp)


#: the commands, in the order of the help: their help line and description
_COMMANDS = {
    "evaluate": (
        "evaluate prediction files",
        "Evaluate predictions stored in Parquet, CSV, .npy or .npz files, batch by batch in bounded "
        "memory. Several paths, a glob or a directory are shards: each is evaluated on its own and merged.",
    ),
    "merge": (
        "merge saved states and print the report",
        "Load states saved with --save-state (or Accumulator.save), merge them and print the report.",
    ),
    "demo": (
        "evaluate a synthetic data set, streaming and sharded",
        "Write synthetic binary predictions in shards into a temporary folder, evaluate "
        "them streaming, and check that the merged shard states equal a single pass.",
    ),
    "compare": (
        "compare two models on the same rows",
        "Compare two models' predictions of the same rows (two --p columns of the same files): the "
        "difference of each score with a paired bootstrap interval and p-value, and DeLong's paired test of the "
        "two AUCs.",
    ),
    "compile": (
        "compile every kernel ahead, once per installation",
        "Compile the kernels each task uses into Numba's on-disk cache, one worker "
        "process per core, so that no later run waits for them (e.g. in an image's build).",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``streammetrics`` command."""
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Streaming, mergeable model evaluation of prediction files.",
        epilog="Run 'streammetrics demo' for a tour, or 'streammetrics evaluate -h'.",
    )
    ap.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    out = [_output_options()]  # (the options of the commands that print a report)
    cmd = {
        name: sub.add_parser(name, help=line, description=text, parents=out if name in ("evaluate", "merge") else [])
        for name, (line, text) in _COMMANDS.items()
    }
    _evaluate_options(cmd["evaluate"])
    cmd["merge"].add_argument("states", nargs="+", metavar="STATE", help="state files")
    _demo_options(cmd["demo"])
    _compare_options(cmd["compare"])
    cp = cmd["compile"]
    task = "compile the kernels of this task only (repeatable; default: every task)"
    cp.add_argument("--task", action="append", choices=TASKS, help=task)
    cp.add_argument("--jobs", type=_positive_int, metavar="N", help="worker processes (default: one per core)")
    return ap
