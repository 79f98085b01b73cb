"""Multiclass confusion scores and clustering agreement scores vs scikit-learn.

``python -m benchmarks.bench_multiclass [--quick]``

* multiclass, K = 10, 10M rows (quick: 1M): ``MulticlassConfusion`` (one
  update and ``finalize()``, which gives every score) against
  ``sklearn.metrics.confusion_matrix`` plus
  ``precision_recall_fscore_support`` (per-class scores only);
* ARI and AMI on 1M rows, with 10 x 12 and with 1000 x 1000 clusters, from the
  label vectors (building the contingency table included);
* one-vs-rest AUC, K = 10, 10M rows of class probabilities (quick: 1M):
  ``multiclass_auc`` and ``MulticlassRankAUC`` (one update and
  ``finalize()``, which gives both averages, the one-vs-one scores and the
  per-class average precision too), and the bounded
  ``MulticlassRankAUC(max_bins=1000)`` (one update, and ten updates of a
  tenth of the rows; its state's bytes and the width of its bounds shown)
  against ``sklearn.metrics.roc_auc_score(multi_class="ovr")``;
* top-k accuracy, K = 100, k = 5, 1M rows (quick: 200k): ``top_k_accuracy``
  and ``TopKAccuracy`` against ``sklearn.metrics.top_k_accuracy_score``;
* multilabel, L = 20, 1M rows (quick: 200k): ``MultilabelConfusion`` (one
  update and ``finalize()``, which gives every score) on 0/1 matrices, and on
  scores with a threshold, against
  ``sklearn.metrics.precision_recall_fscore_support(average="samples")`` plus
  ``hamming_loss`` on the same 0/1 matrices.

scikit-learn's AMI on 1000 x 1000 clusters sums ~1e9 lgamma terms (about a
minute); it is timed once in the full run and skipped with ``--quick``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ._util import have, median_time, print_table, row


def _multiclass_rows(quick: bool) -> list[dict]:
    from streammetrics import MulticlassConfusion

    n = 1_000_000 if quick else 10_000_000
    k = 10
    rng = np.random.default_rng(0)
    y = rng.integers(0, k, n)
    p = np.where(rng.random(n) < 0.7, y, rng.integers(0, k, n))
    w = rng.random(n)
    group = f"multiclass K={k}, n={n:,}"
    rows = [
        row(
            group,
            "streammetrics MulticlassConfusion",
            median_time(lambda: MulticlassConfusion(k).update(y, p).finalize(), repeat=3 if quick else 5),
        ),
        row(
            group,
            "streammetrics MulticlassConfusion (weighted)",
            median_time(
                lambda: MulticlassConfusion(k).update(y, p, sample_weight=w).finalize(), repeat=3 if quick else 5
            ),
        ),
    ]
    if have("sklearn"):
        import sklearn.metrics as skm

        def sk():
            skm.confusion_matrix(y, p)
            skm.precision_recall_fscore_support(y, p, zero_division=0)

        rows.append(
            row(
                group,
                "sklearn confusion_matrix + precision_recall_fscore_support",
                median_time(sk, repeat=1 if not quick else 2, warmup=0 if not quick else 1),
            )
        )
    return rows


def _preset_rows(quick: bool) -> list[dict]:
    """The multiclass preset on class probabilities: class indices against labels."""
    import streammetrics as sm

    n, k = 1_000_000, 10
    rng = np.random.default_rng(2)
    y = rng.integers(0, k, n)
    proba = rng.dirichlet(np.ones(k), n)
    labels = [f"class_{i}" for i in range(k)]
    as_objects = np.array(labels, dtype=object)[y]  # e.g. a pandas column of str
    as_strings = np.array(labels)[y]
    group = f"Evaluator(task='multiclass') on an n x K probability matrix, K={k}, n={n:,}"
    repeat = 3 if quick else 7

    def run(truth, **settings):
        return lambda: sm.Evaluator(task="multiclass", **settings).update(truth, proba).finalize()

    return [
        row(group, "streammetrics n_classes=10, y as int64", median_time(run(y, n_classes=k), repeat)),
        row(group, "labels=[10 str], y as object array of str", median_time(run(as_objects, labels=labels), repeat)),
        row(group, "labels=[10 str], y as numpy str array", median_time(run(as_strings, labels=labels), repeat)),
    ]


def _clustering_rows(quick: bool) -> list[dict]:
    from streammetrics import adjusted_mutual_info_score, adjusted_rand_score

    n = 1_000_000
    rng = np.random.default_rng(1)
    rows = []
    for r_true, r_pred in ((10, 12), (1000, 1000)):
        t = rng.integers(0, r_true, n)
        p = np.where(rng.random(n) < 0.5, t % r_pred, rng.integers(0, r_pred, n))
        shape = f"{r_true}x{r_pred} clusters, n={n:,}"
        rows.append(
            row(
                f"ARI {shape}",
                "streammetrics adjusted_rand_score",
                median_time(lambda: adjusted_rand_score(t, p), repeat=5),
            )
        )
        rows.append(
            row(
                f"AMI {shape}",
                "streammetrics adjusted_mutual_info_score",
                median_time(lambda: adjusted_mutual_info_score(t, p), repeat=5),
            )
        )
        if not have("sklearn"):
            continue
        import sklearn.metrics as skm

        rows.append(
            row(
                f"ARI {shape}",
                "sklearn adjusted_rand_score",
                median_time(lambda: skm.adjusted_rand_score(t, p), repeat=3 if quick else 5),
            )
        )
        if r_true * r_pred > 10_000 and quick:
            continue  # ~1e9 lgamma terms: about a minute, full run only
        big = r_true * r_pred > 10_000
        rows.append(
            row(
                f"AMI {shape}",
                "sklearn adjusted_mutual_info_score",
                median_time(
                    lambda: skm.adjusted_mutual_info_score(t, p), repeat=1 if big else 3, warmup=0 if big else 1
                ),
            )
        )
    return rows


def _rank_auc_rows(quick: bool) -> list[dict]:
    from streammetrics import MulticlassRankAUC, multiclass_auc

    n = 1_000_000 if quick else 10_000_000
    k = 10
    rng = np.random.default_rng(3)
    y = rng.integers(0, k, n)
    proba = rng.dirichlet(np.ones(k), n)
    group = f"one-vs-rest AUC, K={k}, n={n:,}"
    repeat = 3 if quick else 5
    bins = 1000
    batch = n // 10

    def bounded_stream():
        acc = MulticlassRankAUC(k, max_bins=bins)
        for lo in range(0, n, batch):
            acc.update(y[lo : lo + batch], proba[lo : lo + batch])
        return acc.finalize()

    exact_bytes = MulticlassRankAUC(k).update(y, proba).nbytes
    bounded = MulticlassRankAUC(k, max_bins=bins).update(y, proba)
    stream = bounded_stream()
    rows = [
        row(group, "streammetrics multiclass_auc", median_time(lambda: multiclass_auc(y, proba), repeat)),
        row(
            group,
            "streammetrics MulticlassRankAUC (update + finalize)",
            median_time(lambda: MulticlassRankAUC(k).update(y, proba).finalize(), repeat),
            state_bytes=exact_bytes,
        ),
        row(
            group,
            f"streammetrics MulticlassRankAUC(max_bins={bins}) (update + finalize)",
            median_time(lambda: MulticlassRankAUC(k, max_bins=bins).update(y, proba).finalize(), repeat),
            state_bytes=bounded.nbytes,
        ),
        row(
            group,
            f"streammetrics MulticlassRankAUC(max_bins={bins}), 10 updates of {batch:,} rows",
            median_time(bounded_stream, repeat),
            state_bytes=bounded.nbytes,
            bounds_width=float(stream.auc_upper - stream.auc_lower),
        ),
    ]
    if have("sklearn"):
        import sklearn.metrics as skm

        rows.append(
            row(
                group,
                "sklearn roc_auc_score(multi_class='ovr')",
                median_time(lambda: skm.roc_auc_score(y, proba, multi_class="ovr"), repeat=3, warmup=1 if quick else 0),
            )
        )
    return rows


def _top_k_rows(quick: bool) -> list[dict]:
    from streammetrics import TopKAccuracy, top_k_accuracy

    n = 200_000 if quick else 1_000_000
    k_classes, k = 100, 5
    rng = np.random.default_rng(4)
    y = rng.integers(0, k_classes, n)
    scores = rng.random((n, k_classes))
    w = rng.random(n)
    group = f"top-{k} accuracy, K={k_classes}, n={n:,}"
    rows = [
        row(group, "streammetrics top_k_accuracy", median_time(lambda: top_k_accuracy(y, scores, k), 5)),
        row(
            group,
            "streammetrics TopKAccuracy (weighted)",
            median_time(lambda: TopKAccuracy(k).update(y, scores, sample_weight=w).finalize(), 5),
        ),
    ]
    if have("sklearn"):
        import sklearn.metrics as skm

        labels = np.arange(k_classes)
        rows.append(
            row(
                group,
                "sklearn top_k_accuracy_score",
                median_time(
                    lambda: skm.top_k_accuracy_score(y, scores, k=k, labels=labels), repeat=3, warmup=1 if quick else 0
                ),
            )
        )
    return rows


def _multilabel_rows(quick: bool) -> list[dict]:
    from streammetrics import MultilabelConfusion

    n, k = (200_000 if quick else 1_000_000), 20
    rng = np.random.default_rng(4)
    Y = (rng.random((n, k)) < np.linspace(0.02, 0.4, k)).astype(np.int8)
    S = np.clip(0.4 * Y + 0.6 * rng.random((n, k)), 0, 1)
    P = (S >= 0.5).astype(np.int8)
    w = rng.random(n)
    group = f"multilabel L={k}, n={n:,}"
    repeat = 3 if quick else 5
    rows = [
        row(
            group,
            "streammetrics MultilabelConfusion (0/1 int8)",
            median_time(lambda: MultilabelConfusion(k).update(Y, P).finalize(), repeat),
        ),
        row(
            group,
            "streammetrics MultilabelConfusion (scores, threshold 0.5)",
            median_time(lambda: MultilabelConfusion(k, threshold=0.5).update(Y, S).finalize(), repeat),
        ),
        row(
            group,
            "streammetrics MultilabelConfusion (0/1, weighted)",
            median_time(lambda: MultilabelConfusion(k).update(Y, P, sample_weight=w).finalize(), repeat),
        ),
    ]
    if have("sklearn"):
        import sklearn.metrics as skm

        def sk():
            skm.precision_recall_fscore_support(Y, P, average="samples", zero_division=0)
            skm.hamming_loss(Y, P)

        rows.append(
            row(
                group,
                "sklearn prfs(average='samples') + hamming_loss",
                median_time(sk, repeat=3, warmup=1 if quick else 0),
            )
        )
    return rows


def run(quick: bool) -> list[dict]:
    """Benchmark rows (see the module docstring); ``quick`` shrinks the sizes."""
    return (
        _multiclass_rows(quick)
        + _preset_rows(quick)
        + _clustering_rows(quick)
        + _rank_auc_rows(quick)
        + _top_k_rows(quick)
        + _multilabel_rows(quick)
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_multiclass", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="1M multiclass rows, skip the slowest sklearn run")
    ap.add_argument(
        "--only",
        choices=("confusion", "preset", "clustering", "rank_auc", "top_k", "multilabel"),
        help="run one group of rows",
    )
    args = ap.parse_args(argv)
    if args.only:
        parts = {
            "confusion": _multiclass_rows,
            "preset": _preset_rows,
            "clustering": _clustering_rows,
            "rank_auc": _rank_auc_rows,
            "top_k": _top_k_rows,
            "multilabel": _multilabel_rows,
        }
        print_table(parts[args.only](args.quick))
    else:
        print_table(run(args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
