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

Importing the package is cheap: each public name is looked up in the table
below and its module is imported on first use, so a script that only counts a
confusion matrix never imports (or compiles) the ranking, clustering or
bootstrap code. ``import streammetrics as sm; sm.X`` and
``from streammetrics import X`` work alike for every name of ``__all__``.
"""

import importlib
import types

__version__ = "0.1.0"

#: where each public name lives (imported on first access), names separated by spaces
_HOMES = {
    "._protocol.base": "Accumulator from_bytes load_state",
    "._protocol.batch": "Batch",
    "._protocol.errors": "BadShapeError BadValueError CountOverflowError NoObservationsError NoWeightsError"
    " SettingsMismatchError StateFileError",
    "._protocol.result": "Result",
    ".evaluator": "Evaluator evaluate_batches",
    ".metrics.binary": "BinaryConfusion accuracy actual balanced_accuracy called f1 false_calls fbeta hits matthews"
    " missed precision_score recall_score rejected specificity",
    ".metrics.calibration": "Calibration ClassCalibration expected_calibration_error",
    ".metrics.calibration_quantile": "QuantileCalibration",
    ".metrics.clustering": "ClusterContingency adjusted_mutual_info_score adjusted_rand_score completeness_score"
    " fowlkes_mallows_score homogeneity_completeness_v_measure homogeneity_score mutual_info_score"
    " normalized_mutual_info_score rand_score v_measure_score",
    ".metrics.multiclass": "MulticlassConfusion confusion_matrix multiclass_scores",
    ".metrics.labels": "cohen_kappa_score",
    ".metrics.multiclass_rank": "MulticlassRankAUC multiclass_auc",
    ".metrics.multilabel": "MultilabelConfusion MultilabelRankAUC",
    ".metrics.probability": "ClassProbabilityScores ProbabilityScores brier class_probability_scores log_loss"
    " d2_log_loss_score d2_brier_score",
    ".metrics.ranking": "RankAUC auc average_precision partial_auc pr_curve roc_curve",
    ".metrics.ranking.functions": "confusion_matrix_at_thresholds det_curve",
    ".metrics.sets": "UndefinedMetricWarning class_likelihood_ratios hamming_loss jaccard_score",
    ".metrics.regression": "RegressionErrors mae mape mse r2 rmse",
    ".metrics.deviance": "TweedieDeviance d2_tweedie_score mean_gamma_deviance mean_poisson_deviance"
    " mean_tweedie_deviance",
    ".metrics.losses": "PinballLoss SquaredLogError",
    ".metrics.quantiles": "ErrorQuantiles",
    ".metrics.regression_scores": "d2_absolute_error_score d2_pinball_score explained_variance_score max_error"
    " mean_pinball_loss mean_squared_log_error median_absolute_error root_mean_squared_log_error",
    ".metrics.topk": "TopKAccuracy top_k_accuracy",
    ".metrics.retrieval": "RetrievalScores",
    ".metrics.retrieval_functions": "coverage_error dcg_score label_ranking_average_precision_score label_ranking_loss"
    " map_at_k mrr_score ndcg_score precision_at_k recall_at_k",
    ".metrics.silhouette": "silhouette silhouette_samples silhouette_score silhouettes",
    ".report": "EvaluationReport",
    ".sliced": "Sliced SlicedResult",
    ".bootstrap": "Bootstrap",
    ".comparison": "compare paired_delong",
    ".over_time.decayed": "Decayed",
    ".over_time.windowed": "Windowed",
    ".over_time.history": "History",
    ".over_time.rolling": "Rolling",
}
_HOME = {name: module for module, names in _HOMES.items() for name in names.split()}
__all__ = sorted(_HOME)
#: submodules reachable as attributes (``sm.bootstrap.DEFAULT_GRID``) before an
#: explicit ``import streammetrics.bootstrap``; the optional ones (``dask``,
#: ``torch``, ``io``, ``cli``, ``spark``, ``ray``) raise their own ImportError naming the extra
_SUBMODULES = frozenset(
    "_kernels _protocol bootstrap cli comparison dask evaluator io metrics over_time ray report sliced spark"
    " torch".split()
)


def __getattr__(name):
    module = _HOME.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        if isinstance(value, types.FunctionType):  # a score takes scikit-learn's y_true=, y_pred= too
            from ._protocol.keywords import with_sklearn_names

            value = with_sklearn_names(value)
    elif name in _SUBMODULES:
        value = importlib.import_module("." + name, __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def import_all() -> None:
    """Import every module behind ``__all__`` (so that every accumulator class
    is registered, as :func:`load_state` needs to find a class by its name)."""
    for module in _HOMES:
        importlib.import_module(module, __name__)
