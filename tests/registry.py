"""The table of every public accumulator: how to build one, data to feed it,
an independent reference for its scores, and batches it must refuse.

``tests/test_protocol.py`` runs the whole protocol over every row, and
``test_registry_lists_every_accumulator`` fails when a public ``Accumulator``
subclass has no row here, so a new accumulator is protocol-tested (and tried in
an Evaluator, under Dask and across torch ranks) by adding one row.

A row's ``reference(arrays, w)`` returns the expected result fields, computed
without streammetrics (scikit-learn where the conventions agree, else plain
numpy); ``exact`` says whether any batching and merging must give the
identical state (counts) or results within 1e-12 (sums).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import streammetrics as sm

try:  # references; a row without its reference library checks the protocol only
    import sklearn.metrics as skm
except ImportError:  # pragma: no cover
    skm = None

N = 300
LABELS = ["cat", "dog", "bird"]


@dataclass
class Case:
    name: str
    make: Callable[[], Any]
    data: Callable[[np.random.Generator], tuple]  # -> (arrays, weights or None)
    reference: Callable[..., dict] | None = None
    exact: bool = True
    bad: list = field(default_factory=list)  # [(arrays, kwargs, match)]
    other: Callable[[], Any] | None = None  # same class, other settings
    rtol: float = 1e-12
    expected_rtol: float = 1e-10
    ordered: bool = False  # its rows must come in their order (grouped by query): no interleaved threads

    def __repr__(self) -> str:
        return self.name


def _binary(rng, weighted=True):
    y = (rng.random(N) < 0.4).astype(np.int64)
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(N), 0, 1), 2)
    return (y, s), (rng.random(N) * 2 if weighted else None)


def _named(rng, weighted=True):
    """``_binary`` with the classes named: "spam" positive, "ham" negative."""
    (y, s), w = _binary(rng, weighted)
    return (np.where(y == 1, "spam", "ham"), s), w


def _spam(reference):
    """``reference`` of the 0/1 labels ``y == "spam"``."""
    return lambda a, w: reference(((a[0] == "spam").astype(np.int64), a[1]), w)


def _binary_labels(rng):
    (y, s), w = _binary(rng)
    return (y, (s >= 0.5).astype(np.int64)), w


def _multiclass(rng, labels=None):
    y = rng.integers(0, 3, N)
    p = np.where(rng.random(N) < 0.7, y, rng.integers(0, 3, N))
    if labels is not None:
        names = np.array(labels, dtype=object)
        return (names[y], names[p]), rng.random(N)
    return (y, p), rng.random(N)


def _class_probabilities(rng, labels=None):
    y = rng.integers(0, 3, N)
    P = rng.dirichlet(np.ones(3), N)
    if labels is not None:
        return (np.array(labels, dtype=object)[y], P), rng.random(N)
    return (y, P), rng.random(N)


def _class_scores(rng, labels=None, weighted=True):
    """Class probabilities with many ties: small integer counts, normalised."""
    y = rng.integers(0, 3, N)
    counts = rng.integers(0, 4, (N, 3)) + 3 * np.eye(3, dtype=np.int64)[y] * (rng.random((N, 1)) < 0.5)
    counts[counts.sum(axis=1) == 0, 0] = 1
    P = counts / counts.sum(axis=1, keepdims=True)
    w = rng.random(N) if weighted else None
    if labels is not None:
        return (np.array(labels, dtype=object)[y], P), w
    return (y, P), w


def _multilabel(rng, scores=False, weighted=True, k=4):
    """Correlated label matrices with empty rows and a label that is rarely true."""
    Y = (rng.random((N, k)) < np.linspace(0.05, 0.6, k)).astype(np.int64)
    S = np.round(np.clip(0.4 * Y + 0.6 * rng.random((N, k)), 0, 1), 2)
    w = rng.random(N) * 2 if weighted else None
    return (Y, S if scores else (S >= 0.5).astype(np.int64)), w


def _regression(rng):
    y = rng.normal(size=N) * 3 + 100
    return (y, y + rng.normal(size=N)), rng.random(N)


def _tweedie(rng):
    """Compound-Poisson-like truths (a fifth of them 0) and positive predictions."""
    y = rng.gamma(2.0, 1.5, N) * (rng.random(N) > 0.2)
    return (y, rng.gamma(2.0, 1.5, N) + 0.1), rng.random(N) * 2


def _clusters(rng):
    t = rng.integers(-2, 3, N)
    return (t, np.where(rng.random(N) < 0.6, t * 10, rng.integers(0, 4, N))), None


def _sk_binary(y, p, w):
    cm = skm.confusion_matrix(y, p, labels=[0, 1], sample_weight=w)
    (tn, fp), (fn, tp) = cm
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "accuracy": skm.accuracy_score(y, p, sample_weight=w),
        "precision": skm.precision_score(y, p, sample_weight=w, zero_division=0),
        "recall": skm.recall_score(y, p, sample_weight=w, zero_division=0),
        "f1": skm.f1_score(y, p, sample_weight=w, zero_division=0),
        "mcc": skm.matthews_corrcoef(y, p, sample_weight=w),
    }


def _ref_binary(arrays, w, threshold=None):
    y, p = arrays
    return _sk_binary(y, p if threshold is None else (p >= threshold).astype(int), w)


def _ref_probability(arrays, w):
    y, p = arrays
    return {
        "log_loss": skm.log_loss(y, p, sample_weight=w, labels=[0, 1]),
        "brier": skm.brier_score_loss(y, p, sample_weight=w),
        "d2_log_loss": skm.d2_log_loss_score(y, p, sample_weight=w, labels=[0, 1]),
        "d2_brier": skm.d2_brier_score(y, p, sample_weight=w),
    }


def _ref_class_probability(arrays, w, labels=None):
    y, P = arrays
    codes = np.asarray([labels.index(v) for v in y]) if labels is not None else y
    onehot = np.eye(P.shape[1])[codes]
    ww = np.ones(len(codes)) if w is None else w
    return {
        "log_loss": skm.log_loss(codes, P, sample_weight=w, labels=range(P.shape[1])),
        "brier": float(np.sum(ww * np.sum((P - onehot) ** 2, axis=1)) / np.sum(ww)),
        "d2_log_loss": skm.d2_log_loss_score(codes, P, sample_weight=w, labels=range(P.shape[1])),
        "d2_brier": skm.d2_brier_score(codes, P, sample_weight=w, labels=range(P.shape[1])),
    }


def _ref_regression(arrays, w):
    y, p = arrays
    return {
        "mse": skm.mean_squared_error(y, p, sample_weight=w),
        "mae": skm.mean_absolute_error(y, p, sample_weight=w),
        "mape": skm.mean_absolute_percentage_error(y, p, sample_weight=w),
        "r2": skm.r2_score(y, p, sample_weight=w),
    }


def _ref_regression_spread(arrays, w):
    y, p = arrays
    seen = np.ones(len(y), bool) if w is None else w != 0
    return _ref_regression(arrays, w) | {
        "explained_variance": skm.explained_variance_score(y, p, sample_weight=w),
        "max_error": float(np.max(np.abs(y - p)[seen])),
    }


def _ref_msle(arrays, w):
    y, p = arrays
    return {
        "msle": skm.mean_squared_log_error(y, p, sample_weight=w),
        "rmsle": skm.root_mean_squared_log_error(y, p, sample_weight=w),
    }


def _ref_pinball(arrays, w):
    y, p = arrays
    return {"pinball": np.array([skm.mean_pinball_loss(y, p, sample_weight=w, alpha=a) for a in (0.1, 0.5, 0.9)])}


def _ref_quantiles(arrays, w):
    y, p = arrays
    return {
        "median": skm.median_absolute_error(y, p, sample_weight=w),
        "d2_absolute_error": skm.d2_absolute_error_score(y, p, sample_weight=w),
    }


def _rounded_regression(rng):
    """Regression rows with ties (errors on a grid of 0.25) and integer weights, 0 included."""
    (y, p), _ = _regression(rng)
    return (np.round(y * 4) / 4, np.round(p * 4) / 4), rng.integers(0, 4, N).astype(np.float64)


def _ref_tweedie(arrays, w, power=1.5):
    y, p = arrays
    return {
        "mean_deviance": skm.mean_tweedie_deviance(y, p, sample_weight=w, power=power),
        "d2": skm.d2_tweedie_score(y, p, sample_weight=w, power=power),
    }


def _ref_auc(arrays, w):
    y, s = arrays
    ww = np.ones(len(y), np.int64) if w is None else w
    return {"auc": skm.roc_auc_score(y, s, sample_weight=w), "n_pos": ww[y == 1].sum(), "n_neg": ww[y == 0].sum()}


def _ref_multiclass(arrays, w, labels=None):
    y, p = arrays
    lab = labels if labels is not None else [0, 1, 2]
    return {
        "matrix": skm.confusion_matrix(y, p, labels=lab, sample_weight=w),
        "accuracy": skm.accuracy_score(y, p, sample_weight=w),
        "macro_f1": skm.f1_score(y, p, labels=lab, average="macro", sample_weight=w, zero_division=0),
        "mcc": skm.matthews_corrcoef(y, p, sample_weight=w),
        "cohen_kappa": skm.cohen_kappa_score(y, p, sample_weight=w),
    }


def _codes(y, labels):
    return np.asarray([labels.index(v) for v in y]) if labels is not None else np.asarray(y)


def _ref_multiclass_auc(arrays, w, labels=None):
    y, P = arrays
    y = _codes(y, labels)
    out = {
        "auc": skm.roc_auc_score(y, P, multi_class="ovr", sample_weight=w),
        "ovr_weighted_auc": skm.roc_auc_score(y, P, multi_class="ovr", average="weighted", sample_weight=w),
        "per_class_average_precision": [
            skm.average_precision_score(y == c, P[:, c], sample_weight=w) for c in range(P.shape[1])
        ],
    }
    if w is None:  # scikit-learn's one-vs-one takes no weights
        out["ovo_macro_auc"] = skm.roc_auc_score(y, P, multi_class="ovo")
        out["ovo_weighted_auc"] = skm.roc_auc_score(y, P, multi_class="ovo", average="weighted")
        out["support"] = np.bincount(y, minlength=P.shape[1])
    return out


def _ref_multiclass_auc_ovo(arrays, w, labels=None):
    y, P = arrays
    out = _ref_multiclass_auc(arrays, w, labels)
    out["auc"] = skm.roc_auc_score(_codes(y, labels), P, multi_class="ovo")
    return out


def _ref_top_k(arrays, w, k, labels=None):
    y, P = arrays
    y = _codes(y, labels)
    return {"top_k_accuracy": skm.top_k_accuracy_score(y, P, k=k, labels=range(P.shape[1]), sample_weight=w)}


def _queries(rng, grouped=False, weighted=True):
    """Rows of queries (ties, queries with no relevant row, with fewer rows than
    k); grouped: each query contiguous and within one batch of ``batches()``."""
    if grouped:
        sizes = []
        for part in (7, 31, 1, N - 39):
            while part:
                sizes.append(min(part, int(rng.integers(1, 13))))
                part -= sizes[-1]
        q = np.repeat(rng.permutation(10**6)[: len(sizes)], sizes)
    else:
        q = rng.integers(0, 40, N) * 1000 - 7
    rel = rng.integers(0, 4, N) * (rng.random(N) < 0.4)
    s = np.round(rng.random(N) + 0.3 * rel, 1)
    w = None
    if weighted:  # a query's rows share its weight
        _, inverse = np.unique(q, return_inverse=True)
        w = (rng.random(inverse.max() + 1) * 2 + 0.1)[inverse]
    return (q, rel, s), w


def ref_retrieval(arrays, w, k=(1, 5, 10), empty="zero"):
    """Mean scores per k over queries, each from its rows alone (scikit-learn's
    ndcg and dcg, sorting for the others; ties: least relevant first)."""
    q, rel, s = (np.asarray(a) for a in arrays)
    per = {name: [] for name in ("ndcg", "dcg", "map", "precision", "recall", "hit_rate", "mrr_at_k")}
    whole, weights, empties = {"mrr": [], "r_precision": []}, [], []
    for v in np.unique(q):
        at = q == v
        t, sc = rel[at].astype(float), s[at]
        weights.append(1.0 if w is None else float(np.mean(w[at])))
        r = t[np.lexsort((t, -sc))] > 0
        n_rel, first = r.sum(), np.flatnonzero(r)
        empties.append(n_rel == 0)
        row = {name: [] for name in per}
        for cut in k:
            top = r[:cut]
            if t.size > 1:
                row["ndcg"].append(skm.ndcg_score([t], [sc], k=cut))
                row["dcg"].append(skm.dcg_score([t], [sc], k=cut))
            else:
                row["ndcg"].append(float(t[0] > 0))
                row["dcg"].append(t[0])
            prec = np.cumsum(top) / np.arange(1, top.size + 1)
            row["map"].append((prec * top).sum() / n_rel if n_rel else 0.0)
            row["precision"].append(top.sum() / cut)
            row["recall"].append(top.sum() / n_rel if n_rel else 0.0)
            row["hit_rate"].append(float(top.any()))
            row["mrr_at_k"].append(1 / (first[0] + 1) if first.size and first[0] < cut else 0.0)
        for name in per:
            per[name].append(row[name])
        whole["mrr"].append(1 / (first[0] + 1) if first.size else 0.0)
        whole["r_precision"].append(r[:n_rel].sum() / n_rel if n_rel else 0.0)
    weights, empties = np.array(weights), np.array(empties)
    if empty == "skip":
        weights = weights * ~empties
    out = {name: np.average(np.array(v), axis=0, weights=weights) for name, v in per.items()}
    out.update({name: np.average(v, weights=weights) for name, v in whole.items()})
    out.update(queries=len(empties), empty_queries=int(empties.sum()))
    return out


def _ref_multilabel(arrays, w, threshold=None):
    Y, P = arrays
    P = P if threshold is None else (P >= threshold).astype(np.int64)
    mcm = skm.multilabel_confusion_matrix(Y, P, sample_weight=w)
    out = {
        "tn": mcm[:, 0, 0],
        "fp": mcm[:, 0, 1],
        "fn": mcm[:, 1, 0],
        "tp": mcm[:, 1, 1],
        "subset_accuracy": skm.accuracy_score(Y, P, sample_weight=w),
        "hamming_loss": skm.hamming_loss(Y, P, sample_weight=w),
        "samples_jaccard": skm.jaccard_score(Y, P, average="samples", sample_weight=w, zero_division=0),
    }
    for average in (None, "micro", "macro", "weighted", "samples"):
        prf = skm.precision_recall_fscore_support(Y, P, average=average, sample_weight=w, zero_division=0)
        prefix = "" if average is None else f"{average}_"
        for name, v in zip(("precision", "recall", "f1"), prf):
            out[prefix + name] = v
    return out


def _ref_multilabel_auc(arrays, w):
    Y, S = arrays
    return {
        "auc": skm.roc_auc_score(Y, S, average=None, sample_weight=w),
        **{f"{a}_auc": skm.roc_auc_score(Y, S, average=a, sample_weight=w) for a in ("macro", "weighted", "micro")},
    }


def _ref_clusters(arrays, w):
    t, p = arrays
    return {
        "ari": skm.adjusted_rand_score(t, p),
        "ami": skm.adjusted_mutual_info_score(t, p),
        "nmi": skm.normalized_mutual_info_score(t, p),
        "v_measure": skm.v_measure_score(t, p),
        "fowlkes_mallows": skm.fowlkes_mallows_score(t, p),
    }


def _ref_evaluator_binary(arrays, w):
    return {
        **_ref_binary(arrays, w, 0.5),
        **_ref_probability(arrays, w),
        **_ref_auc(arrays, w),
        "average_precision": skm.average_precision_score(*arrays, sample_weight=w),
    }


def _binned(p, n_bins, w):
    """Bins as calibration_curve(strategy="uniform") forms them, and the weights."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], p, side="left"), np.ones(len(p)) if w is None else w


def _ece(conf, hit, n_bins, w):
    b, ww = _binned(conf, n_bins, w)
    W = np.bincount(b, ww, n_bins)
    held = W > 0
    mp = np.bincount(b, ww * conf, n_bins)[held] / W[held]
    fp = np.bincount(b, ww * hit, n_bins)[held] / W[held]
    return float(np.sum(W[held] * np.abs(fp - mp)) / W.sum()), np.bincount(b, None, n_bins)


def _ref_calibration(arrays, w, n_bins=10):
    y, p = arrays
    ece, counts = _ece(p, y, n_bins, w)
    return {"ece": ece, "bin_count": counts}


def _ref_quantile_calibration(arrays, w, n_bins=10):
    y, p = arrays
    edges = np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    b = np.searchsorted(edges[1:-1], p)
    counts = np.bincount(b, None, n_bins)
    held = counts > 0
    gap = np.abs(np.bincount(b, y, n_bins)[held] - np.bincount(b, p, n_bins)[held]) / counts[held]
    return {"ece": float(np.sum(counts[held] * gap) / counts.sum()), "bin_count": counts, "bin_edges": edges}


def _ref_class_calibration(arrays, w, n_bins=5, labels=None):
    y, P = arrays
    codes = np.asarray([labels.index(v) for v in y]) if labels is not None else y
    top = P.argmax(axis=1)
    ece, counts = _ece(P.max(axis=1), (top == codes).astype(float), n_bins, w)
    per = [_ece(P[:, k], (codes == k).astype(float), n_bins, w)[0] for k in range(P.shape[1])]
    return {"ece": ece, "bin_count": counts, "class_ece": np.array(per), "classwise_ece": np.mean(per)}


def _ref_members(arrays, w):
    return {
        **_ref_auc(arrays, w),
        "recall": skm.recall_score(arrays[0], (arrays[1] >= 0.8).astype(int), sample_weight=w, zero_division=0),
    }


NAN = float("nan")

SLICE_NAMES = np.array(["uk", "fr", "de", "emu", None], dtype=object)


def _string_keys(rng):
    return SLICE_NAMES[rng.integers(0, len(SLICE_NAMES), N)]


def _int_keys(rng):
    return rng.integers(-2, 3, N)


def _float_keys(rng):
    """Integer keys with nulls, as pandas holds them (floats with NaN)."""
    k = rng.integers(0, 4, N).astype(float)
    k[rng.random(N) < 0.1] = NAN
    return k


def _row_keys(rng):
    """Distinct int64 row ids in no particular order."""
    return rng.permutation(N).astype(np.int64) * 7 - 1000


def _sliced(data, keys):
    def make(rng):
        arrays, w = data(rng)
        return (*arrays, keys(rng)), w

    return make


def _null_last(k):
    return (k is None or k != k, "" if k is None or k != k else k)


def _ref_sliced(inner, columns):
    """The template's reference run on each slice's rows alone, in key order."""

    def ref(arrays, w):
        *data, keys = arrays
        keys = np.asarray(keys, dtype=object)
        null = np.array([k is None or k != k for k in keys])
        distinct = sorted({k for k, z in zip(keys.tolist(), null) if not z}, key=_null_last)
        masks = [keys == k for k in distinct] + ([null] if null.any() else [])
        full = inner(tuple(data), w)
        out = {"n_slices": len(masks), "slice_n": np.array([m.sum() for m in masks])}
        parts = [inner(tuple(a[m] for a in data), None if w is None else w[m]) for m in masks]
        for c in columns:
            if c in full:
                out[c] = full[c]
                out[f"slice_{c}"] = np.array([float(p[c]) for p in parts])
        return out

    return ref


def _timed(data):
    """The data with one timestamp per row, in no order."""

    def make(rng):
        arrays, w = data(rng)
        return (*arrays, rng.random(N) * 200), w

    return make


def _ref_timed(inner, half_life):
    """The reference with each row weighted by 2**(-age / half_life)."""

    def ref(arrays, w):
        *data, t = arrays
        decay = 2.0 ** (-(t.max() - t) / half_life)
        return inner(tuple(data), decay if w is None else w * decay)

    return ref


def _stepped(data):
    """The data with one training step per row."""

    def make(rng):
        arrays, w = data(rng)
        return (*arrays, rng.integers(0, 4, N)), w

    return make


def _ref_stepped(inner, columns):
    """The reference run on each step's rows alone, steps ascending."""

    def ref(arrays, w):
        *data, steps = arrays
        parts = [(s, steps == s) for s in np.unique(steps)]
        out = {"step": np.array([s for s, _ in parts]), "rows": np.array([m.sum() for _, m in parts])}
        for c in columns:
            out[c] = np.array([inner(tuple(a[m] for a in data), None if w is None else w[m])[c] for _, m in parts])
        return out

    return ref


CASES = [
    Case(
        "BinaryConfusion",
        lambda: sm.BinaryConfusion(),
        _binary_labels,
        _ref_binary,
        bad=[
            (([1, 0, 2], [1, 0, 0]), {}, r"y\[2\] = 2"),
            (([1, 0], [1, 0.5]), {}, r"p\[1\] = 0.5"),
            (([1, 0], [1, 0]), {"sample_weight": [1.0, -2.0]}, r"sample_weight\[1\]"),
        ],
        other=lambda: sm.BinaryConfusion(threshold=0.5),
    ),
    Case(
        "BinaryConfusion(threshold)",
        lambda: sm.BinaryConfusion(threshold=0.5),
        _binary,
        lambda a, w: _ref_binary(a, w, 0.5),
        bad=[
            (([1, 0], [0.3, NAN]), {}, r"p\[1\] = nan: scores must be finite"),
            (([1, 0, 1], [0.3, 0.2]), {}, "different lengths"),
        ],
        other=lambda: sm.BinaryConfusion(threshold=0.4),
    ),
    Case(
        "ProbabilityScores",
        lambda: sm.ProbabilityScores(),
        _binary,
        _ref_probability,
        exact=False,
        bad=[(([1, 0], [0.3, 1.5]), {}, r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]")],
    ),
    Case(
        "ClassProbabilityScores",
        lambda: sm.ClassProbabilityScores(3),
        _class_probabilities,
        _ref_class_probability,
        exact=False,
        bad=[
            (([0, 1], [[0.5, 0.5, 0.0], [0.5, 0.6, 0.0]]), {}, r"p\[1\] sums to 1.1"),
            (([0, 3], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = 3"),
        ],
        other=lambda: sm.ClassProbabilityScores(4),
    ),
    Case(
        "ClassProbabilityScores(labels)",
        lambda: sm.ClassProbabilityScores(labels=LABELS),
        lambda rng: _class_probabilities(rng, LABELS),
        lambda a, w: _ref_class_probability(a, w, LABELS),
        exact=False,
        bad=[((["cat", "cow"], [[1.0, 0, 0], [0, 1.0, 0]]), {}, r"y\[1\] = 'cow'")],
    ),
    Case(
        "RegressionErrors",
        lambda: sm.RegressionErrors(),
        _regression,
        _ref_regression,
        exact=False,
        bad=[(([1.0, NAN], [1.0, 2.0]), {}, r"y\[1\] = nan"), (([1.0, 2.0], [np.inf, 2.0]), {}, r"p\[0\] = inf")],
    ),
    Case(
        "TweedieDeviance(power=1.5)",
        lambda: sm.TweedieDeviance(power=1.5),
        _tweedie,
        _ref_tweedie,
        exact=False,
        bad=[
            (([1.0, -2.0], [1.0, 2.0]), {}, r"y\[1\] = -2.0: the Tweedie deviance of power 1.5 needs y >= 0"),
            (([1.0, 2.0], [0.0, 2.0]), {}, r"p\[0\] = 0.0: the Tweedie deviance of power 1.5 needs p > 0"),
            (([1.0, 2.0], [1.0, NAN]), {}, r"p\[1\] = nan"),
        ],
        other=lambda: sm.TweedieDeviance(power=2),
    ),
    Case(
        "RegressionErrors(spread=True)",
        lambda: sm.RegressionErrors(spread=True),
        _regression,
        _ref_regression_spread,
        exact=False,
    ),
    Case(
        "SquaredLogError",
        lambda: sm.SquaredLogError(),
        _tweedie,
        _ref_msle,
        exact=False,
        bad=[(([1.0, -1.0], [1.0, 2.0]), {}, r"y\[1\] = -1.0: the squared log error needs y > -1")],
    ),
    Case(
        "PinballLoss(alpha=[0.1, 0.5, 0.9])",
        lambda: sm.PinballLoss(alpha=[0.1, 0.5, 0.9]),
        _regression,
        _ref_pinball,
        exact=False,
        bad=[(([1.0, 2.0], [NAN, 2.0]), {}, r"p\[0\] = nan")],
        other=lambda: sm.PinballLoss(alpha=0.5),
    ),
    Case(
        "ErrorQuantiles(truth=True)",
        lambda: sm.ErrorQuantiles(truth=True),
        _rounded_regression,
        _ref_quantiles,
        bad=[(([1.0, 2.0], [1.0, np.inf]), {}, r"p\[1\] = inf")],
        other=lambda: sm.ErrorQuantiles("signed", truth=True),
    ),
    Case(
        "ErrorQuantiles(truth=True, max_memory)",
        lambda: sm.ErrorQuantiles(truth=True, max_memory=4096),
        _rounded_regression,
        _ref_quantiles,
    ),
    Case(
        "RankAUC",
        lambda: sm.RankAUC(),
        lambda rng: _binary(rng, weighted=False),
        _ref_auc,
        bad=[(([1, 0, 3], [0.1, 0.2, 0.3]), {}, r"y\[2\] = 3"), (([1, 0], [0.1, NAN]), {}, r"s\[1\] = nan")],
        other=lambda: sm.RankAUC(max_bins=8),
    ),
    Case("RankAUC(weighted)", lambda: sm.RankAUC(), _binary, _ref_auc, exact=False),
    Case(
        "RankAUC(max_memory)",
        lambda: sm.RankAUC(max_memory=4096),
        lambda rng: _binary(rng, weighted=False),
        _ref_auc,
        other=lambda: sm.RankAUC(max_bins=8),
    ),
    Case("RankAUC(max_memory, weighted)", lambda: sm.RankAUC(max_memory=4096), _binary, _ref_auc, exact=False),
    Case(
        "RankAUC(max_bins)",
        lambda: sm.RankAUC(max_bins=200),
        lambda rng: _binary(rng, weighted=False),
        _ref_auc,
        other=lambda: sm.RankAUC(max_bins=100),
    ),
    Case(
        "RankAUC(pos_label)",
        lambda: sm.RankAUC(pos_label="spam"),
        lambda rng: _named(rng, weighted=False),
        _spam(_ref_auc),
        bad=[(([["spam"], ["ham", "x"]], [0.1, 0.2]), {}, "ragged list")],
        other=lambda: sm.RankAUC(pos_label="ham"),
    ),
    Case(
        "ProbabilityScores(pos_label)",
        lambda: sm.ProbabilityScores(pos_label="spam"),
        _named,
        _spam(_ref_probability),
        exact=False,
        other=lambda: sm.ProbabilityScores(pos_label="ham"),
    ),
    Case(
        "Calibration(pos_label)",
        lambda: sm.Calibration(n_bins=10, pos_label="spam"),
        _named,
        _spam(_ref_calibration),
        exact=False,
        other=lambda: sm.Calibration(n_bins=10),
    ),
    Case(
        "Calibration",
        lambda: sm.Calibration(n_bins=10),
        _binary,
        _ref_calibration,
        exact=False,
        bad=[
            (([1, 0], [0.3, 1.5]), {}, r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]"),
            (([1, 2], [0.3, 0.5]), {}, r"y\[1\] = 2"),
        ],
        other=lambda: sm.Calibration(n_bins=5),
    ),
    Case(
        "QuantileCalibration",
        lambda: sm.Calibration(n_bins=10, strategy="quantile"),
        lambda rng: _binary(rng, weighted=False),
        _ref_quantile_calibration,
        bad=[
            (([1, 0], [0.3, 1.5]), {}, r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]"),
            (([1, 2], [0.3, 0.5]), {}, r"y\[1\] = 2"),
        ],
        other=lambda: sm.QuantileCalibration(n_bins=5),
    ),
    Case(
        "QuantileCalibration(pos_label, max_memory)",
        lambda: sm.QuantileCalibration(n_bins=7, pos_label="spam", max_memory=4096),
        lambda rng: _named(rng, weighted=False),
        _spam(lambda a, w: _ref_quantile_calibration(a, w, n_bins=7)),
    ),
    Case(
        "ClassCalibration(labels)",
        lambda: sm.ClassCalibration(labels=LABELS, n_bins=5),
        lambda rng: _class_probabilities(rng, LABELS),
        lambda a, w: _ref_class_calibration(a, w, 5, LABELS),
        exact=False,
        bad=[((["cat", "dog"], [[0.5, 0.5, 0.5], [1.0, 0, 0]]), {}, r"p\[0\] sums to 1.5")],
        other=lambda: sm.ClassCalibration(labels=LABELS, n_bins=6),
    ),
    Case(
        "MulticlassConfusion",
        lambda: sm.MulticlassConfusion(3),
        lambda rng: (_multiclass(rng)[0], None),
        _ref_multiclass,
        bad=[(([0, 1, 2], [0, 1, 3]), {}, r"p\[2\] = 3")],
        other=lambda: sm.MulticlassConfusion(4),
    ),
    Case(
        "MulticlassConfusion(labels, weighted)",
        lambda: sm.MulticlassConfusion(labels=LABELS),
        lambda rng: _multiclass(rng, LABELS),
        lambda a, w: _ref_multiclass(a, w, LABELS),
        exact=False,
        bad=[((["cat", "dog"], ["cat", "emu"]), {}, r"p\[1\] = 'emu': not one of the 3 labels")],
    ),
    Case(
        "MulticlassRankAUC",
        lambda: sm.MulticlassRankAUC(3),
        lambda rng: _class_scores(rng, weighted=False),
        _ref_multiclass_auc,
        bad=[
            (([0, 3], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = 3"),
            (([0, 1], [[0.5, 0.5, 0.0], [0.5, NAN, 0.0]]), {}, r"P\[1, 1\] = nan: scores must be finite"),
            (([0, 1], [[0.5, 0.5], [0.5, 0.5]]), {}, "P has 2 columns but n_classes is 3"),
        ],
        other=lambda: sm.MulticlassRankAUC(3, multi_class="ovo"),
    ),
    Case(
        "MulticlassRankAUC(labels, weighted)",
        lambda: sm.MulticlassRankAUC(labels=LABELS),
        lambda rng: _class_scores(rng, LABELS),
        lambda a, w: _ref_multiclass_auc(a, w, LABELS),
        exact=False,
        bad=[((["cat", "emu"], [[1.0, 0, 0], [0, 1.0, 0]]), {}, r"y\[1\] = 'emu'")],
        other=lambda: sm.MulticlassRankAUC(labels=LABELS, average="weighted"),
    ),
    # bounded: the scores fit the bins, so the bounded states are exact
    Case(
        "MulticlassRankAUC(max_bins, ovo)",
        lambda: sm.MulticlassRankAUC(3, multi_class="ovo", max_bins=200),
        lambda rng: _class_scores(rng, weighted=False),
        _ref_multiclass_auc_ovo,
        bad=[
            (([0, 3], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = 3"),
            (([0, 1], [[0.5, 0.5, 0.0], [0.5, NAN, 0.0]]), {}, r"P\[1, 1\] = nan: scores must be finite"),
        ],
        other=lambda: sm.MulticlassRankAUC(3, multi_class="ovo", max_bins=100),
    ),
    Case(
        "MulticlassRankAUC(max_bins, labels, weighted)",
        lambda: sm.MulticlassRankAUC(labels=LABELS, max_bins=200),
        lambda rng: _class_scores(rng, LABELS),
        lambda a, w: _ref_multiclass_auc(a, w, LABELS),
        exact=False,
        bad=[((["cat", "emu"], [[1.0, 0, 0], [0, 1.0, 0]]), {}, r"y\[1\] = 'emu'")],
        other=lambda: sm.MulticlassRankAUC(labels=LABELS),
    ),
    # a budget of one page per member: every class and pair state spills
    Case(
        "MulticlassRankAUC(max_memory, ovo)",
        lambda: sm.MulticlassRankAUC(3, multi_class="ovo", max_memory=9 * 4096),
        lambda rng: _class_scores(rng, weighted=False),
        _ref_multiclass_auc_ovo,
        other=lambda: sm.MulticlassRankAUC(3, multi_class="ovo", max_bins=100),
    ),
    Case(
        "TopKAccuracy",
        lambda: sm.TopKAccuracy(2, n_classes=3),
        lambda rng: _class_scores(rng),
        lambda a, w: _ref_top_k(a, w, 2),
        exact=False,
        bad=[
            (([0, 3], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = 3"),
            (([0, 1], [[0.5, 0.5, 0.0], [0.5, np.inf, 0.0]]), {}, r"P\[1, 1\] = inf"),
        ],
        other=lambda: sm.TopKAccuracy(1, n_classes=3),
    ),
    Case(
        "TopKAccuracy(any K)",
        lambda: sm.TopKAccuracy(1),
        lambda rng: _class_scores(rng, weighted=False),
        lambda a, w: _ref_top_k(a, w, 1),
        bad=[
            (([0, 3], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = 3: classes must be integers in 0..2"),
            (([0, -1], [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]), {}, r"y\[1\] = -1"),
        ],
        other=lambda: sm.TopKAccuracy(2),
    ),
    Case(
        "RetrievalScores",
        lambda: sm.RetrievalScores(),
        _queries,
        ref_retrieval,
        exact=False,
        bad=[
            (([1, 1], [1, -1], [0.5, 0.4]), {}, r"relevance\[1\] = -1.0: relevance must be finite and non-negative"),
            (([1, 1], [1, 0], [0.5, NAN]), {}, r"score\[1\] = nan"),
            (([1, 1.5], [1, 0], [0.5, 0.4]), {}, r"query\[1\] = 1.5"),
        ],
        other=lambda: sm.RetrievalScores(k=(1, 5)),
    ),
    Case(
        "RetrievalScores(max_memory)",  # its open rows spill to files past 2 KB
        lambda: sm.RetrievalScores(k=(1, 3), max_memory=4096),
        _queries,
        lambda arrays, w: ref_retrieval(arrays, w, k=(1, 3)),
        exact=False,
        other=lambda: sm.RetrievalScores(k=(1, 3)),
    ),
    Case(
        "RetrievalScores(grouped, exp gain, pessimistic ties, skip empty)",
        lambda: sm.RetrievalScores(k=(2, 3), gain="exp", ties="pessimistic", empty="skip", grouped=True),
        lambda rng: _queries(rng, grouped=True, weighted=False),
        None,
        exact=False,
        bad=[(([1, 2, 1], [1, 0, 0], [0.5, 0.4, 0.1]), {}, r"query\[2\] = 1: with grouped=True")],
        ordered=True,
        other=lambda: sm.RetrievalScores(k=(2, 3), gain="exp", ties="pessimistic", grouped=True),
    ),
    Case(
        "MultilabelConfusion",
        lambda: sm.MultilabelConfusion(4),
        lambda rng: _multilabel(rng, weighted=False),
        _ref_multilabel,
        exact=False,
        bad=[
            (([[0, 1, 0, 0], [1, 2, 0, 0]], [[0, 1, 0, 0], [1, 1, 0, 0]]), {}, r"Y\[1, 1\] = 2"),
            (([[0, 1, 0, 0], [1, 1, 0, 0]], [[0, 1, 0, 0.5], [1, 1, 0, 0]]), {}, r"P\[0, 3\] = 0.5"),
            (([[0, 1, 0, 0]], [[0, 1, 0]]), {}, "P has 3 columns but n_labels is 4"),
        ],
        other=lambda: sm.MultilabelConfusion(4, threshold=0.5),
    ),
    Case(
        "MultilabelConfusion(threshold, weighted)",
        lambda: sm.MultilabelConfusion(labels=["a", "b", "c", "d"], threshold=0.5),
        lambda rng: _multilabel(rng, scores=True),
        lambda a, w: _ref_multilabel(a, w, 0.5),
        exact=False,
        bad=[
            (([[0, 1, 0, 0], [1, 1, 0, 0]], [[0, 1, 0, 0], [1, NAN, 0, 0]]), {}, r"P\[1, 1\] = nan"),
            (([[0, 1, 0, 0]], [[0, 1, 0, 0]]), {"sample_weight": [-1.0]}, r"sample_weight\[0\]"),
        ],
        other=lambda: sm.MultilabelConfusion(labels=["a", "b", "c", "d"], threshold=0.4),
    ),
    Case(
        "MultilabelConfusion(samples_betas, weighted)",
        lambda: sm.MultilabelConfusion(4, samples_betas=(0.5, 2.0)),
        _multilabel,
        _ref_multilabel,
        exact=False,
        other=lambda: sm.MultilabelConfusion(4, samples_betas=(2.0,)),
    ),
    Case(
        "MultilabelRankAUC",
        lambda: sm.MultilabelRankAUC(4),
        lambda rng: _multilabel(rng, scores=True, weighted=False),
        _ref_multilabel_auc,
        bad=[
            (([[0, 1, 0, 0], [1, 1, 0, 3]], [[0, 1, 0, 0], [1, 1, 0, 0]]), {}, r"Y\[1, 3\] = 3"),
            (([[0, 1, 0, 0], [1, 1, 0, 0]], [[0, 1, 0, 0], [1, 1, np.inf, 0]]), {}, r"S\[1, 2\] = inf"),
        ],
        other=lambda: sm.MultilabelRankAUC(labels=["a", "b", "c", "d"]),
    ),
    Case(
        "MultilabelRankAUC(weighted)",
        lambda: sm.MultilabelRankAUC(4),
        lambda rng: _multilabel(rng, scores=True),
        _ref_multilabel_auc,
        exact=False,
    ),
    Case(
        "MultilabelRankAUC(max_bins)",
        lambda: sm.MultilabelRankAUC(4, max_bins=200),
        lambda rng: _multilabel(rng, scores=True, weighted=False),
        _ref_multilabel_auc,
        other=lambda: sm.MultilabelRankAUC(4),
    ),
    Case(
        "MultilabelRankAUC(max_bins, weighted)",
        lambda: sm.MultilabelRankAUC(4, max_bins=200),
        lambda rng: _multilabel(rng, scores=True),
        _ref_multilabel_auc,
        exact=False,
        other=lambda: sm.MultilabelRankAUC(4, max_bins=100),
    ),
    Case(
        "MultilabelRankAUC(max_memory, weighted)",
        lambda: sm.MultilabelRankAUC(4, max_memory=5 * 4096),
        lambda rng: _multilabel(rng, scores=True),
        _ref_multilabel_auc,
        exact=False,
        other=lambda: sm.MultilabelRankAUC(4),
    ),
    Case(
        "ClusterContingency",
        lambda: sm.ClusterContingency(),
        _clusters,
        _ref_clusters,
        bad=[
            (([1, 2], [1.5, 2.0]), {}, r"labels_pred\[0\] = 1.5"),
            (([1, 2], [1, 2]), {"sample_weight": [1.0, 1.0]}, "no sample_weight"),
        ],
        other=lambda: sm.ClusterContingency(average_method="max"),
        rtol=1e-10,
    ),
    Case(
        "Evaluator(binary)",
        lambda: sm.Evaluator(task="binary"),
        _binary,
        _ref_evaluator_binary,
        exact=False,
        bad=[(([1, 0], [0.3, 1.2]), {}, r"p\[1\] = 1.2: probabilities")],
        other=lambda: sm.Evaluator(task="binary", threshold=0.3),
    ),
    Case(
        "Evaluator(multiclass, labels)",
        lambda: sm.Evaluator(task="multiclass", labels=LABELS),
        lambda rng: _class_probabilities(rng, LABELS),
        lambda a, w: _ref_class_probability(a, w, LABELS),
        exact=False,
        bad=[((["cat", "dog"], [[0.5, 0.5, 0.5], [1.0, 0, 0]]), {}, r"p\[0\] sums to 1.5")],
        other=lambda: sm.Evaluator(task="multiclass", n_classes=3),
    ),
    Case(
        "Evaluator(multilabel)",
        lambda: sm.Evaluator(task="multilabel", n_labels=4, threshold=0.5),
        lambda rng: _multilabel(rng, scores=True),
        lambda a, w: {**_ref_multilabel(a, w, 0.5), **_ref_multilabel_auc(a, w)},
        exact=False,
        bad=[
            (([[0, 1, 0, 0], [1, 1, 0, 0]], [[0, 1, 0, 0], [1, NAN, 0, 0]]), {}, r"p\[1, 1\] = nan"),
            (([[0, 1, 0, 0], [1, 1, 0, 2]], [[0, 1, 0, 0], [1, 1, 0, 0]]), {}, r"y\[1, 3\] = 2"),
        ],
        other=lambda: sm.Evaluator(task="multilabel", n_labels=4, threshold=0.4),
    ),
    Case(
        "Evaluator(multiclass, top_k, auc)",
        lambda: sm.Evaluator(task="multiclass", labels=LABELS, top_k=2, auc=True),
        lambda rng: _class_scores(rng, LABELS),
        lambda a, w: {**_ref_top_k(a, w, 2, LABELS), **_ref_multiclass_auc(a, w, LABELS)},
        exact=False,
        bad=[
            ((["cat", "dog"], [[0.5, 0.5, 0.5], [1.0, 0, 0]]), {}, r"p\[0\] sums to 1.5"),
            ((["cat", "owl"], [[0.5, 0.5, 0], [1.0, 0, 0]]), {}, r"y\[1\] = 'owl'"),
        ],
        other=lambda: sm.Evaluator(task="multiclass", labels=LABELS, top_k=1, auc=True),
    ),
    Case(
        "Evaluator(regression)",
        lambda: sm.Evaluator(task="regression"),
        _regression,
        _ref_regression,
        exact=False,
        bad=[(([1.0, 2.0], [1.0, NAN]), {}, r"p\[1\] = nan")],
    ),
    Case(
        "Evaluator(clustering)",
        lambda: sm.Evaluator(task="clustering"),
        _clusters,
        _ref_clusters,
        rtol=1e-10,
        bad=[(([1, 2], [1, 2]), {"sample_weight": [1.0, 1.0]}, "no sample_weight")],
    ),
    Case(
        "Sliced(BinaryConfusion(threshold), string keys)",
        lambda: sm.Sliced(sm.BinaryConfusion(threshold=0.5)),
        _sliced(_binary, _string_keys),
        _ref_sliced(lambda a, w: _ref_binary(a, w, 0.5), ("accuracy", "f1")),
        bad=[
            (([1, 0], [0.3, NAN], ["a", "b"]), {}, r"p\[1\] = nan: scores must be finite"),
            (([1, 0], [0.3, 0.2], ["a"]), {}, "by has 1 rows but the batch has 2"),
            (([1, 2], [0.3, 0.2], ["a", "b"]), {}, r"y\[1\] = 2"),
        ],
        other=lambda: sm.Sliced(sm.BinaryConfusion(threshold=0.4)),
    ),
    Case(
        "Sliced(BinaryConfusion, int keys, unweighted)",
        lambda: sm.Sliced(sm.BinaryConfusion()),
        _sliced(lambda rng: (_binary_labels(rng)[0], None), _int_keys),
        _ref_sliced(_ref_binary, ("accuracy", "f1")),
        bad=[
            (([1, 0], [1, 2], [1, 2]), {}, r"p\[1\] = 2"),
            (([1, 0], [1, 0], [1]), {}, "by has 1 rows but the batch has 2"),
            (([1, 2], [1, 0], [1, 2]), {}, r"y\[1\] = 2"),
        ],
        other=lambda: sm.Sliced(sm.BinaryConfusion(threshold=0.4)),
    ),
    Case(
        "Sliced(ProbabilityScores, int keys)",
        lambda: sm.Sliced(sm.ProbabilityScores()),
        _sliced(_binary, _int_keys),
        _ref_sliced(_ref_probability, ("log_loss", "brier")),
        exact=False,
        bad=[(([1, 0], [0.3, 1.5], [1, 2]), {}, r"p\[1\] = 1.5: probabilities must lie in \[0, 1\]")],
        other=lambda: sm.Sliced(sm.ProbabilityScores(), max_slices=10),
    ),
    Case(
        "Sliced(RegressionErrors, float keys with NaN)",
        lambda: sm.Sliced(sm.RegressionErrors()),
        _sliced(_regression, _float_keys),
        _ref_sliced(
            lambda a, w: {**_ref_regression(a, w), "rmse": np.sqrt(_ref_regression(a, w)["mse"])}, ("rmse", "r2")
        ),
        exact=False,
        bad=[(([1.0, 2.0], [1.0, 2.0], [1.0, np.inf]), {}, r"by\[1\] = inf")],
    ),
    Case(
        "Sliced(RankAUC)",
        lambda: sm.Sliced(sm.RankAUC()),
        _sliced(lambda rng: _binary(rng, weighted=False), _int_keys),
        _ref_sliced(_ref_auc, ("auc",)),
        bad=[(([1, 0, 3], [0.1, 0.2, 0.3], [1, 1, 1]), {}, r"y\[2\] = 3")],
        other=lambda: sm.Sliced(sm.RankAUC(max_bins=8)),
    ),
    Case(
        "Sliced(Evaluator(members))",
        lambda: sm.Sliced(sm.Evaluator({"auc": sm.RankAUC(), "strict": sm.BinaryConfusion(threshold=0.8)})),
        _sliced(_binary, _string_keys),
        _ref_sliced(_ref_members, ("auc",)),
        exact=False,
        bad=[(([1, 0], [0.3, NAN], ["a", None]), {}, r"p\[1\] = nan: scores must be finite")],
    ),
    Case(
        "Bootstrap(BinaryConfusion(threshold), keyed)",
        lambda: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=8, seed=3),
        _sliced(_binary, _row_keys),
        lambda a, w: _ref_binary(a[:-1], w, 0.5),
        bad=[
            (([1, 0], [0.3, NAN], [1, 2]), {}, r"p\[1\] = nan: scores must be finite"),
            (([1, 0], [0.3, 0.2], [1]), {}, "key has 1 rows but the batch has 2"),
            (([1, 2], [0.3, 0.2], [1, 2]), {}, r"y\[1\] = 2"),
        ],
        other=lambda: sm.Bootstrap(sm.BinaryConfusion(threshold=0.5), replicates=8, seed=4),
    ),
    Case(
        "Bootstrap(RankAUC(), keyed)",
        lambda: sm.Bootstrap(sm.RankAUC(), replicates=6, seed=9),
        _sliced(_binary, _row_keys),
        lambda a, w: _ref_auc(a[:-1], w),
        exact=False,
        bad=[
            (([1, 0], [0.3, NAN], [1, 2]), {}, r"s\[1\] = nan: scores must be finite"),
            (([1, 0], [0.3, 0.2], [1]), {}, "key has 1 rows but the batch has 2"),
        ],
        other=lambda: sm.Bootstrap(sm.RankAUC(), replicates=6, seed=10),
    ),
    Case(
        "Bootstrap(Evaluator(members), keyed)",
        lambda: sm.Bootstrap(sm.Evaluator({"auc": sm.RankAUC(), "probability": sm.ProbabilityScores()}), replicates=5),
        _sliced(_binary, _row_keys),
        lambda a, w: {"auc": _ref_auc(a[:-1], w)["auc"], **_ref_probability(a[:-1], w)},
        exact=False,
        bad=[(([1, 0], [0.3, 1.5], [1, 2]), {}, r"p\[1\] = 1.5")],
    ),
    Case(
        "Rolling(BinaryConfusion(threshold), keyed)",
        lambda: sm.Rolling(sm.BinaryConfusion(threshold=0.5), window=1000, key=True),
        _sliced(_binary, lambda rng: np.arange(N)),
        lambda a, w: _ref_binary(a[:-1], w, 0.5),
        bad=[
            (([1, 0], [0.3, NAN], [1, 2]), {}, r"p\[1\] = nan: scores must be finite"),
            (([1, 0], [0.3, 0.2], [1]), {}, "key has 1 rows but the batch has 2"),
            (([1], [0.3], [NAN]), {}, "keys must be finite"),
        ],
        other=lambda: sm.Rolling(sm.BinaryConfusion(threshold=0.5), window=999, key=True),
    ),
    Case(
        "Rolling(RankAUC(), keyed)",
        lambda: sm.Rolling(sm.RankAUC(), window=1000, key=True),
        _sliced(lambda rng: _binary(rng, weighted=False), lambda rng: np.arange(N)),
        lambda a, w: _ref_auc(a[:-1], w),
        bad=[(([1, 0, 3], [0.1, 0.2, 0.3], [1, 1, 1]), {}, r"y\[2\] = 3")],
        other=lambda: sm.Rolling(sm.RankAUC(), window=999, key=True),
    ),
    Case(
        "Evaluator(members)",
        lambda: sm.Evaluator({"auc": sm.RankAUC(), "strict": sm.BinaryConfusion(threshold=0.8)}),
        _binary,
        _ref_members,
        exact=False,
        bad=[(([1, 0], [0.3, NAN]), {}, r"p\[1\] = nan: scores must be finite")],
        other=lambda: sm.Evaluator({"auc": sm.RankAUC(), "strict": sm.BinaryConfusion(threshold=0.7)}),
    ),
    Case(
        "Decayed(BinaryConfusion(threshold), in time)",
        lambda: sm.Decayed(sm.BinaryConfusion(threshold=0.5), half_life=30.0, time=True),
        _timed(_binary),
        _ref_timed(lambda a, w: _ref_binary(a, w, 0.5), 30.0),
        exact=False,
        bad=[
            (([1, 0], [0.3, NAN], [1.0, 2.0]), {}, r"p\[1\] = nan"),
            (([1, 0], [0.3, 0.2], [1.0, NAN]), {}, r"time\[1\]"),
        ],
        other=lambda: sm.Decayed(sm.BinaryConfusion(threshold=0.5), half_life=20.0, time=True),
    ),
    Case(
        "Windowed(BinaryConfusion(threshold), by time)",
        lambda: sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=25.0, time=True),
        _timed(_binary),
        lambda a, w: _ref_binary(a[:2], w, 0.5),
        exact=False,
        bad=[
            (([1, 0], [0.3, NAN], [1.0, 2.0]), {}, r"p\[1\] = nan"),
            (([1, 0], [0.3, 0.2], [1.0, NAN]), {}, r"time\[1\]"),
        ],
        other=lambda: sm.Windowed(sm.BinaryConfusion(threshold=0.5), every=20.0, time=True),
    ),
    Case(
        "History(ProbabilityScores), a step per row",
        lambda: sm.History(sm.ProbabilityScores()),
        _stepped(_binary),
        _ref_stepped(_ref_probability, ("log_loss", "brier")),
        exact=False,
        bad=[
            (([1, 0], [0.3, 1.5], [1, 2]), {}, r"p\[1\] = 1.5"),
            (([1, 0], [0.3, 0.2], [1.0, 2.5]), {}, "step: expected an integer"),
        ],
        other=lambda: sm.History(sm.BinaryConfusion()),
    ),
]

BY_NAME = {c.name: c for c in CASES}


def batches(arrays, w, sizes=(7, 0, 31, 1)):
    """The rows cut into batches of ``sizes`` and the rest, in the harness's format."""
    n = len(arrays[0])
    edges = [0]
    for s in sizes:
        edges.append(min(edges[-1] + s, n))
    edges.append(n)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        args = tuple(a[lo:hi] for a in arrays)
        out.append({"args": args, "sample_weight": None if w is None else w[lo:hi]})
    return out
