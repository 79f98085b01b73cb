"""streammetrics.ray on a local Ray (``num_cpus=2``): the single-process results, exactly."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
pa = pytest.importorskip("pyarrow")

from streammetrics import ray as smr  # noqa: E402

from .engines import LABELS, assert_same, assert_same_slices, single, table  # noqa: E402

BLOCKS = 5

# Ray Data warns of its own deprecated settings as it copies its context
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),
    pytest.mark.filterwarnings("ignore::UserWarning:ray.data.context"),
]


@pytest.fixture(scope="session")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # aggregations in tasks of the running workers: the hash shuffle starts new
    # actors (processes) for every dataset, tens of seconds each on two busy cores
    from ray.data.context import DataContext, ShuffleStrategy

    DataContext.get_current().shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    yield
    ray.shutdown()


def dataset(cols, blocks=BLOCKS):
    n = len(cols["label"])
    cut = np.linspace(0, n, blocks + 1).astype(int)
    tables = []
    for a, b in zip(cut[:-1], cut[1:]):
        part = {k: list(v[a:b]) if v.dtype == object or v.ndim > 1 else v[a:b] for k, v in cols.items()}
        tables.append(pa.table(part))
    return ray.data.from_arrow(tables)


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_single_process_result(local_ray, task, weighted):
    cols = table(task, seed=1)
    labels = LABELS if task == "multiclass" else None
    got = smr.evaluate(
        dataset(cols), "label", "prob", task=task, labels=labels, weight="w" if weighted else None, ci=0.95
    )
    assert got.n == len(cols["label"])
    assert_same(got, single(cols, task, weighted, ci=0.95), exact_auc=not weighted)


def test_slices_are_those_of_sliced(local_ray):
    cols = table("binary", seed=2)
    got = smr.evaluate(dataset(cols), by=["g", "h"], weight="w")
    assert_same_slices(got, single(cols, "binary", weighted=True, by=["g", "h"]), exact_auc=False)


def test_a_bad_value_is_the_library_s_error_naming_column_and_row(local_ray):
    cols = table("regression", seed=4)
    cols["prob"][17] = np.inf
    with pytest.raises(sm.BadValueError, match=r"a block of \d+ rows, column 'prob': p\[17\] = inf") as info:
        smr.evaluate(dataset(cols), task="regression")
    assert info.value.argument == "p" and info.value.row == 17


def test_a_missing_column_is_named(local_ray):
    with pytest.raises(ValueError, match="no column 'score'"):
        smr.evaluate(dataset(table("binary")), "label", "score")
