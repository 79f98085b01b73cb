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

from ._protocol import (
    Accumulator,
    BadShapeError,
    BadValueError,
    Batch,
    CountOverflowError,
    NoObservationsError,
    NoWeightsError,
    Result,
    SettingsMismatchError,
    StateFileError,
    load_state,
)
from .evaluator import Evaluator, evaluate_batches
from .metrics.binary import (
    BinaryConfusion,
    accuracy,
    actual,
    balanced_accuracy,
    called,
    f1,
    false_calls,
    fbeta,
    hits,
    matthews,
    missed,
    precision_score,
    recall_score,
    rejected,
    specificity,
)
from .metrics.calibration import Calibration, ClassCalibration, expected_calibration_error
from .metrics.clustering import (
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
from .metrics.multiclass import MulticlassConfusion, confusion_matrix, multiclass_scores
from .metrics.multiclass_rank import MulticlassRankAUC, multiclass_auc
from .metrics.multilabel import MultilabelConfusion, MultilabelRankAUC
from .metrics.probability import (
    ClassProbabilityScores,
    ProbabilityScores,
    brier,
    class_probability_scores,
    log_loss,
)
from .metrics.ranking import RankAUC, auc, average_precision, partial_auc, pr_curve, roc_curve
from .metrics.regression import RegressionErrors, mae, mape, mse, r2, rmse
from .metrics.topk import TopKAccuracy, top_k_accuracy
from .metrics.silhouette import silhouette, silhouette_samples, silhouette_score, silhouettes
from .report import EvaluationReport
from .sliced import Sliced, SlicedResult
from .bootstrap import Bootstrap
from .comparison import compare, paired_delong

__version__ = "0.1.0"

__all__ = [
    "Accumulator",
    "BadShapeError",
    "BadValueError",
    "Batch",
    "BinaryConfusion",
    "Bootstrap",
    "Calibration",
    "ClassCalibration",
    "ClassProbabilityScores",
    "ClusterContingency",
    "CountOverflowError",
    "EvaluationReport",
    "Evaluator",
    "MulticlassConfusion",
    "MulticlassRankAUC",
    "MultilabelConfusion",
    "MultilabelRankAUC",
    "NoObservationsError",
    "NoWeightsError",
    "ProbabilityScores",
    "RankAUC",
    "RegressionErrors",
    "Result",
    "SettingsMismatchError",
    "Sliced",
    "SlicedResult",
    "StateFileError",
    "TopKAccuracy",
    "accuracy",
    "actual",
    "adjusted_mutual_info_score",
    "adjusted_rand_score",
    "auc",
    "average_precision",
    "balanced_accuracy",
    "brier",
    "called",
    "class_probability_scores",
    "compare",
    "completeness_score",
    "confusion_matrix",
    "evaluate_batches",
    "expected_calibration_error",
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
    "multiclass_auc",
    "multiclass_scores",
    "mutual_info_score",
    "normalized_mutual_info_score",
    "paired_delong",
    "partial_auc",
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
    "top_k_accuracy",
    "v_measure_score",
]
