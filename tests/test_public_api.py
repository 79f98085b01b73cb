"""The public surface is pinned: every name of the contract is exported."""

import streammetrics

CONTRACT_FUNCTIONS = """hits false_calls missed rejected called actual accuracy precision_score
recall_score specificity f1 fbeta matthews balanced_accuracy log_loss brier mse rmse
mae mape r2 auc silhouettes silhouette silhouette_samples silhouette_score
roc_curve pr_curve average_precision confusion_matrix""".split()

PROTOCOL = "update merge finalize reset copy save load __add__ n".split()


def test_all_is_sorted_and_complete():
    assert streammetrics.__all__ == sorted(streammetrics.__all__)
    public = {n for n in dir(streammetrics) if not n.startswith("_")}
    assert set(streammetrics.__all__) <= public
    for name in CONTRACT_FUNCTIONS:
        assert callable(getattr(streammetrics, name)), name


def test_every_accumulator_has_the_protocol():
    for name in streammetrics.__all__:
        obj = getattr(streammetrics, name)
        if (
            isinstance(obj, type)
            and issubclass(obj, streammetrics.Accumulator)
            and obj is not streammetrics.Accumulator
        ):
            for member in PROTOCOL:
                assert hasattr(obj, member), f"{name}.{member}"
