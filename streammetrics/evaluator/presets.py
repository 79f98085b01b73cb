"""The tasks of ``Evaluator(task=...)``: one row of a table each.

A :class:`Preset` says which settings a task takes, how they are checked, which
members it builds and how its report reads. Adding a task, or a member to a task,
is an edit of this table only: the Evaluator, the report and the command read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._protocol.inputs import Finite, Labels01, Probabilities
from ..metrics.binary import BinaryConfusion
from ..metrics.calibration import Calibration, ClassCalibration
from ..metrics.clustering import ClusterContingency
from ..metrics.multiclass import MulticlassConfusion, class_settings
from ..metrics.multiclass_rank import MulticlassRankAUC
from ..metrics.multilabel import MultilabelConfusion, MultilabelRankAUC, label_settings
from ..metrics.probability import ClassProbabilityScores, ProbabilityScores
from ..metrics.ranking import RankAUC
from ..metrics.regression import RegressionErrors
from ..metrics.retrieval import RetrievalScores
from ..metrics.topk import TopKAccuracy

__all__ = ["Preset", "PRESETS", "TASKS", "SCORE_KINDS", "DEFAULT_THRESHOLD"]

SCORE_KINDS = ("probability", "score")

#: Default decision threshold for each kind of binary score: 0.5 for
#: probabilities, 0.0 for scores (the logit of 0.5).
DEFAULT_THRESHOLD = {"probability": 0.5, "score": 0.0}


@dataclass(frozen=True)
class Preset:
    """One task of the Evaluator (see the module docstring)."""

    name: str
    #: the settings the task takes, with their defaults (in saved order)
    settings: dict[str, Any]
    #: settings -> the members, by name, in folding and flattening order
    members: Callable[[dict], dict]
    #: settings -> checked settings (defaults filled in); raises ValueError
    check: Callable[[dict], dict] = staticmethod(lambda s: s)
    #: settings -> the declared inputs of update(y, p), or None: the members'
    inputs: Callable[[dict], tuple] | None = None
    #: result fields shown by repr
    headline: tuple = ()
    #: members in the order the text report shows them (others follow)
    sections: tuple = ()
    #: settings -> the words after "<task> evaluation of N rows"
    describe: Callable[[dict], str] = staticmethod(lambda s: "")
    #: why the task takes no weights (None: it takes them)
    no_weights: str | None = None
    #: names of update's two arguments
    names: tuple = field(default=("y", "p"))
    #: settings added after states of the task were first saved, with the
    #: value that gives the members those states have (used when loading)
    legacy: dict = field(default_factory=dict)


def _check_binary(s):
    scores = "probability" if s["scores"] is None else s["scores"]
    if scores not in SCORE_KINDS:
        raise ValueError(f"scores must be 'probability' or 'score'; got {scores!r}")
    threshold = DEFAULT_THRESHOLD[scores] if s["threshold"] is None else s["threshold"]
    threshold = BinaryConfusion(threshold=threshold).threshold  # checks it
    if scores == "probability" and not 0.0 <= threshold <= 1.0:
        raise ValueError(
            f"threshold {threshold!r} is outside [0, 1], where probabilities lie; "
            "pass scores='score' for unbounded scores"
        )
    max_bins, max_memory = _check_rank_limits(s)
    bins = _check_calibration_bins(s["calibration_bins"]) if scores == "probability" else None
    return dict(
        threshold=threshold, scores=scores, max_bins=s["max_bins"], max_memory=max_memory, calibration_bins=bins
    )


def _check_calibration_bins(bins):
    return None if bins is None else Calibration(bins).n_bins


def _binary_members(s):
    members = {"binary": BinaryConfusion(threshold=s["threshold"])}
    if s["scores"] == "probability":
        members["probability"] = ProbabilityScores()
        if s["calibration_bins"] is not None:
            members["calibration"] = Calibration(s["calibration_bins"])
    members["auc"] = RankAUC(max_bins=s["max_bins"], max_memory=s.get("max_memory"))
    return members


def _binary_inputs(s):
    if s["scores"] != "probability":
        return (Labels01("y"), Finite("p", "scores", predict_proba=True))
    advice = "for unbounded scores such as logits, pass scores='score'"
    return (Labels01("y"), Probabilities("p", predict_proba=True).advised(advice))


def format_memory(nbytes: int) -> str:
    """``1000000000`` as ``"1 GB"``, ``536870912`` as ``"537 MB"`` (decimal units)."""
    for unit, name in ((10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "KB")):
        if nbytes >= unit:
            return f"{nbytes / unit:.3g} {name}"
    return f"{nbytes} B"


def _describe_auc(s, exact="", prefix="") -> str:
    """How a preset's AUC is kept, for the line that introduces its report."""
    if s.get("max_bins") is not None:
        return f", {prefix}max_bins {s['max_bins']:,}"
    if s.get("max_memory") is not None:
        return f", exact AUC within {format_memory(s['max_memory'])}"
    return exact


def _describe_binary(s):
    return f"(scores: {s['scores']}, threshold {s['threshold']:g}{_describe_auc(s)})"


def _check_multiclass(s):
    if s["n_classes"] is None and s["labels"] is None:
        raise ValueError("task='multiclass' needs n_classes (classes 0..K-1) or labels (the class labels)")
    k, labels = class_settings("task='multiclass'", s["n_classes"], s["labels"])
    out = {"n_classes": k} if labels is None else {"n_classes": k, "labels": labels}
    out["calibration_bins"] = _check_calibration_bins(s["calibration_bins"])
    top_k = s.get("top_k")
    out["top_k"] = None if top_k is None else TopKAccuracy(top_k, k, labels=labels).k
    auc = s.get("auc", False)
    if not isinstance(auc, (bool, np.bool_)):
        raise TypeError(f"auc must be True or False, got {type(auc).__name__}")
    out["auc"] = bool(auc)
    out["max_bins"], out["max_memory"] = _check_rank_limits(s)
    return out


def _check_rank_limits(s):
    """``(max_bins, max_memory)`` of a preset's rank member, checked (they exclude each other)."""
    auc = RankAUC(max_bins=s.get("max_bins"), max_memory=s.get("max_memory"))
    return auc.max_bins, auc.max_memory


def _multiclass_members(s):
    k, labels = s["n_classes"], s.get("labels")
    members = {"class_probability": ClassProbabilityScores(k, labels=labels)}
    if s["calibration_bins"] is not None:
        members["calibration"] = ClassCalibration(k, s["calibration_bins"], labels=labels)
    if s.get("top_k") is not None:
        members["top_k"] = TopKAccuracy(s["top_k"], k, labels=labels)
    if s.get("auc"):
        members["auc"] = MulticlassRankAUC(k, labels=labels, max_bins=s.get("max_bins"), max_memory=s.get("max_memory"))
    members["multiclass"] = MulticlassConfusion(k, labels=labels)
    return members


def _describe_multiclass(s):
    text = f"{s['n_classes']} classes"
    if s.get("top_k") is not None:
        text += f", top-{s['top_k']} accuracy"
    if s.get("auc"):
        text += _describe_auc(s, ", exact AUC", "AUC ")
    return f"({text})"


def _check_multilabel(s):
    if s["n_labels"] is None and s["labels"] is None:
        raise ValueError("task='multilabel' needs n_labels (the columns of Y) or labels (their names)")
    k, labels = label_settings("task='multilabel'", s["n_labels"], s["labels"])
    threshold = MultilabelConfusion(1, threshold=s["threshold"]).threshold  # checks it
    max_bins, max_memory = _check_rank_limits(s)
    return {"n_labels": k, "labels": labels, "threshold": threshold, "max_bins": max_bins, "max_memory": max_memory}


def _multilabel_members(s):
    k, labels, threshold = s["n_labels"], s["labels"], s["threshold"]
    members = {"multilabel": MultilabelConfusion(k, threshold=threshold, labels=labels)}
    if threshold is not None:  # scores: their ranking is scored too
        members["auc"] = MultilabelRankAUC(k, labels=labels, max_bins=s.get("max_bins"), max_memory=s.get("max_memory"))
    return members


def _describe_multilabel(s):
    if s["threshold"] is None:
        return f"({s['n_labels']} labels, 0/1 predictions)"
    return f"({s['n_labels']} labels, scores, threshold {s['threshold']:g}{_describe_auc(s, prefix='AUC ')})"


def _check_ranking(s):
    acc = RetrievalScores(
        s["k"], gain=s["gain"], ties=s["ties"], empty=s["empty"], grouped=s["grouped"], max_memory=s["max_memory"]
    )
    return {"max_memory": None} | {k: v for k, v in acc.settings.items() if k != "per_query"}


PRESETS: dict[str, Preset] = {
    "binary": Preset(
        "binary",
        {"threshold": None, "scores": None, "max_bins": None, "max_memory": None, "calibration_bins": 15},
        _binary_members,
        check=_check_binary,
        inputs=_binary_inputs,
        headline=("auc", "f1"),
        sections=("auc", "probability", "calibration", "binary"),
        describe=_describe_binary,
        legacy={"calibration_bins": None, "max_memory": None},
    ),
    "multiclass": Preset(
        "multiclass",
        dict(n_classes=None, labels=None, calibration_bins=15, top_k=None, auc=False, max_bins=None, max_memory=None),
        _multiclass_members,
        check=_check_multiclass,
        headline=("accuracy", "macro_f1"),
        sections=("multiclass", "top_k", "auc", "class_probability", "calibration"),  # the confusion first
        describe=_describe_multiclass,
        legacy={"calibration_bins": None, "top_k": None, "auc": False, "max_bins": None, "max_memory": None},
    ),
    "multilabel": Preset(
        "multilabel",
        {"n_labels": None, "labels": None, "threshold": None, "max_bins": None, "max_memory": None},
        _multilabel_members,
        check=_check_multilabel,
        headline=("micro_f1", "macro_f1"),
        sections=("multilabel", "auc"),
        describe=_describe_multilabel,
        legacy={"max_bins": None, "max_memory": None},
    ),
    "regression": Preset("regression", {}, lambda s: {"regression": RegressionErrors()}, headline=("rmse", "r2")),
    "clustering": Preset(
        "clustering",
        {},
        lambda s: {"clustering": ClusterContingency()},
        headline=("ari", "nmi"),
        no_weights="the agreement scores are defined on counts of pairs",
    ),
    "ranking": Preset(
        "ranking",
        {"k": (1, 5, 10), "gain": "linear", "ties": "average", "empty": "zero", "grouped": False, "max_memory": None},
        lambda s: {"ranking": RetrievalScores(**s)},
        check=_check_ranking,
        headline=("mrr", "r_precision"),
        describe=lambda s: (
            f"(k {', '.join(map(str, s['k']))}, {s['gain']} gain, {'grouped' if s['grouped'] else 'any order'})"
        ),
        names=("query", "relevance", "score"),
        legacy={"max_memory": None},
    ),
}

TASKS = tuple(PRESETS)
