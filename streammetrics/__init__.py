"""streammetrics: streaming, mergeable model-evaluation metrics.

Every score reads its arguments as (truth, prediction). Accumulators fold
batches into a small state of numpy arrays with Numba-compiled kernels, merge
across shards and workers, and give the same answer however the data is cut.

>>> import streammetrics as sm
>>> sm.f1([1, 1, 1, 0], [1, 0, 1, 1])
0.666...
>>> acc = sm.BinaryConfusion(threshold=0.5)
>>> acc.update([1, 0, 1], [0.8, 0.3, 0.4]).finalize().recall
0.5
"""

from ._auc import RankAUC, auc, average_precision, pr_curve, roc_curve
from ._base import Accumulator, load_state
from ._binary import BinaryConfusion
from ._clustering import (
    ClusterContingency,
    adjusted_mutual_info_score,
    adjusted_rand_score,
    completeness_score,
    fowlkes_mallows_score,
    homogeneity_completeness_v_measure,
    homogeneity_score,
    mutual_info_score,
    normalized_mutual_info_score,
    rand_score,
    v_measure_score,
)
from ._evaluator import EvaluationReport, Evaluator, evaluate_batches
from ._functional import (
    accuracy,
    actual,
    balanced_accuracy,
    brier,
    called,
    f1,
    false_calls,
    fbeta,
    hits,
    log_loss,
    mae,
    mape,
    matthews,
    missed,
    mse,
    precision_score,
    r2,
    recall_score,
    rejected,
    rmse,
    specificity,
)
from ._multiclass import MulticlassConfusion, confusion_matrix, multiclass_scores
from ._probability import ProbabilityScores
from ._regression import RegressionErrors
from ._result import Result
from ._silhouette import silhouette, silhouette_samples, silhouette_score, silhouettes

__version__ = "0.1.0"

__all__ = [
    "Accumulator",
    "BinaryConfusion",
    "ClusterContingency",
    "EvaluationReport",
    "Evaluator",
    "MulticlassConfusion",
    "ProbabilityScores",
    "RankAUC",
    "RegressionErrors",
    "Result",
    "accuracy",
    "actual",
    "adjusted_mutual_info_score",
    "adjusted_rand_score",
    "auc",
    "average_precision",
    "balanced_accuracy",
    "brier",
    "called",
    "completeness_score",
    "confusion_matrix",
    "evaluate_batches",
    "f1",
    "false_calls",
    "fbeta",
    "fowlkes_mallows_score",
    "hits",
    "homogeneity_completeness_v_measure",
    "homogeneity_score",
    "load_state",
    "log_loss",
    "mae",
    "mape",
    "matthews",
    "missed",
    "mse",
    "multiclass_scores",
    "mutual_info_score",
    "normalized_mutual_info_score",
    "pr_curve",
    "precision_score",
    "r2",
    "rand_score",
    "recall_score",
    "rejected",
    "rmse",
    "roc_curve",
    "silhouette",
    "silhouette_samples",
    "silhouette_score",
    "silhouettes",
    "specificity",
    "v_measure_score",
]
