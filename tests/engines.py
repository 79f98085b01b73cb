"""Data and checks shared by the Spark and Ray tests: tables of a few thousand
rows, and the comparison of an engine's result with the single-process one."""

from __future__ import annotations

import numpy as np

import streammetrics as sm

ROWS = 3000
LABELS = ["cat", "dog", "bird"]


def table(task: str, seed: int = 0, rows: int = ROWS):
    """``(columns, arrays for update)``: a dict of numpy columns (``label``,
    ``prob``, ``w``, ``g``, ``h``) and the ``(y, p)`` the single process folds."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 4, rows)
    h = np.array(["x", "y"], dtype=object)[rng.integers(0, 2, rows)]
    w = rng.random(rows) * 2
    if task == "binary":
        y = (rng.random(rows) < 0.4).astype(np.int64)
        p = np.round(np.clip(0.3 * y + 0.7 * rng.random(rows), 0, 1), 3)  # ties across partitions
    elif task == "multiclass":
        y = np.array(LABELS, dtype=object)[rng.integers(0, 3, rows)]
        p = rng.dirichlet(np.ones(3), rows)
    else:
        y = rng.normal(size=rows)
        p = y + rng.normal(scale=0.5, size=rows)
    return {"label": y, "prob": p, "w": w, "g": g, "h": h}


def single(cols, task, weighted=False, by=None, ci=None):
    """The single-process result of the same evaluation."""
    ev = sm.Evaluator(task=task, labels=LABELS) if task == "multiclass" else sm.Evaluator(task=task)
    w = cols["w"] if weighted else None
    if by is None:
        return ev.update(cols["label"], cols["prob"], sample_weight=w).finalize(ci=ci)
    keys = tuple(cols[c] for c in by)
    return sm.Sliced(ev).update(cols["label"], cols["prob"], sample_weight=w, by=keys).finalize(ci=ci)


def assert_same(got, want, exact_auc: bool):
    """Counts (and, without weights, the AUC) identical; every other number within 1e-12."""
    a, b = got.as_dict(), want.as_dict()
    assert a.keys() == b.keys()
    for k, v in b.items():
        if isinstance(v, (list, str)) or v is None:
            assert a[k] == v, k
            continue
        x, y = np.asarray(a[k]), np.asarray(v)
        if y.dtype.kind in "iub" or (exact_auc and k == "auc"):
            assert np.array_equal(x, y), k
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=k)


def assert_same_slices(got, want, exact_auc: bool):
    assert sorted(got.slices, key=repr) == sorted(want.slices, key=repr)
    assert_same(got.overall, want.overall, exact_auc)
    for key in want.slices:
        assert_same(got.slices[key], want.slices[key], exact_auc)
