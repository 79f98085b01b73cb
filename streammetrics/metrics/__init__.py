"""The metric families: each module holds a family's formulas, its
accumulator(s), result type and one-shot functions together.

========================  ===================================================
module                    family
========================  ===================================================
:mod:`.binary`            the four confusion counts and their rates
:mod:`.probability`       log loss and Brier score, binary and multiclass
:mod:`.regression`        MSE, RMSE, MAE, MAPE, R²
:mod:`.multiclass`        the K x K confusion matrix and its averages
:mod:`.ranking`           the exact rank-merge AUC, curves, average precision
:mod:`.clustering`        the contingency table and agreement scores
:mod:`.silhouette`        the blockwise silhouette
========================  ===================================================
"""
