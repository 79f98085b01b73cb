"""One accumulator for a whole evaluation: :class:`Evaluator` and its report.

An :class:`Evaluator` bundles the accumulators a task needs behind a single
``update(y, p, sample_weight=None)`` and a single ``finalize()``:

============  ================================================================
task          members (state keys are prefixed with the member's name)
============  ================================================================
binary        ``BinaryConfusion(threshold)``, ``ProbabilityScores`` (only with
              ``scores="probability"``), ``RankAUC(max_bins)``
multiclass    ``MulticlassConfusion(n_classes)``, plus multiclass log loss and
              Brier score for the batches whose ``p`` is an n x K matrix of
              class probabilities
regression    ``RegressionErrors``
clustering    ``ClusterContingency``
============  ================================================================

It is itself an :class:`~streammetrics.Accumulator`: ``merge``, ``+``,
``copy``, ``reset``, ``n``, pickling and ``save``/``load`` (readable by
:func:`~streammetrics.load_state`) work as for any other accumulator, so shards
can be evaluated anywhere and combined later.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

from ._base import Accumulator
from ._kernels.common import neumaier_add
from ._probability import ProbabilityScores, probability_result
from ._result import Result
from ._validation import (
    as_1d,
    as_labels01,
    as_reals,
    as_weights,
    bad_value,
    check_same_length,
)

__all__ = ["Evaluator", "EvaluationReport", "evaluate_batches", "TASKS"]

TASKS = ("binary", "multiclass", "regression", "clustering")
SCORE_KINDS = ("probability", "score")

#: Default decision threshold for each kind of binary score: 0.5 for
#: probabilities, 0.0 for scores (the logit of 0.5).
DEFAULT_THRESHOLD = {"probability": 0.5, "score": 0.0}

#: Rows of a class-probability matrix must sum to 1 within this tolerance.
ROW_SUM_TOLERANCE = 1e-3

_LOG_FLOOR = 1e-12

# Section titles of the text report, by member name.
_TITLES = {
    "auc": "Ranking",
    "probability": "Probabilities",
    "binary": "Confusion",
    "multiclass": "Confusion",
    "class_probability": "Probabilities",
    "regression": "Errors",
    "clustering": "Agreement",
}


# --------------------------------------------------------------------- helpers
def _as_int_labels(x, name: str, n_classes: int) -> np.ndarray:
    """``x`` as contiguous ``int64`` classes in ``0..n_classes-1``.

    Floats must hold exact integers. The message matches
    :class:`~streammetrics._multiclass.MulticlassConfusion`'s.
    """
    arr = as_1d(x, name)
    problem = f"classes must be integers in 0..{n_classes - 1}" if n_classes > 1 else "the only class is 0"
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = (arr >= 0) & (arr < n_classes) & (arr == np.floor(arr))
    elif arr.dtype.kind == "b":
        ok = arr <= (n_classes - 1)
    else:
        ok = (arr >= 0) & (arr < n_classes)
    if not ok.all():
        raise bad_value(name, arr, int(np.flatnonzero(~ok)[0]), problem)
    return np.ascontiguousarray(arr, dtype=np.int64)


def _as_class_probabilities(p, n_classes: int) -> np.ndarray:
    """Validate an n x K matrix of class probabilities (rows summing to 1)."""
    arr = np.ascontiguousarray(p, dtype=np.float64)
    if arr.shape[1] != n_classes:
        raise ValueError(
            f"p has {arr.shape[1]} columns but n_classes is {n_classes}: a matrix p "
            "must hold one column of probabilities per class"
        )
    with np.errstate(invalid="ignore"):
        ok = (arr >= 0.0) & (arr <= 1.0)
    if not ok.all():
        i = int(np.flatnonzero(~ok.all(axis=1))[0])
        j = int(np.flatnonzero(~ok[i])[0])
        raise ValueError(
            f"p[{i}, {j}] = {float(arr[i, j])!r}: class probabilities must lie in [0, 1]"
        )
    sums = arr.sum(axis=1)
    off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"p[{i}] sums to {float(sums[i])!r}: each row of class probabilities must "
            f"sum to 1 (within {ROW_SUM_TOLERANCE:g})"
        )
    return arr


def _to_array(x, name: str) -> np.ndarray:
    from ._validation import _to_numpy

    return _to_numpy(x, name)


# ------------------------------------------------- multiclass probability member
class _ClassProbabilityScores(ProbabilityScores):
    """Multiclass log loss and Brier score of an n x K probability matrix.

    ``log_loss`` is the mean of ``-ln(max(p[i, y_i], 1e-12))``; ``brier`` is the
    mean over rows of ``sum_k (p[i, k] - [y_i == k])**2`` (Brier's original
    multiclass score, which for two classes is twice the binary Brier score).
    The state and its merging are :class:`ProbabilityScores`'s: compensated
    totals of the weight, the log loss and the Brier score.
    """

    def __init__(self, n_classes: int):
        self.n_classes = int(n_classes)
        super().__init__()

    def _settings(self):
        return {"n_classes": self.n_classes}

    def update(self, y, proba, sample_weight=None):
        y = _as_int_labels(y, "y", self.n_classes)
        if not (isinstance(proba, np.ndarray) and proba.ndim == 2):
            raise ValueError("p must be an n x K matrix of class probabilities")
        proba = _as_class_probabilities(proba, self.n_classes)
        n = check_same_length(y=y, p=proba)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        picked = proba[np.arange(n), y]
        loss = -np.log(np.maximum(picked, _LOG_FLOOR))
        sq = np.einsum("ij,ij->i", proba, proba) - 2.0 * picked + 1.0
        if w.shape[0]:
            totals = (float(np.sum(w)), float(loss @ w), float(sq @ w))
        else:
            totals = (float(n), float(np.sum(loss)), float(np.sum(sq)))
        sums = self._state["sums"]
        for k, t in enumerate(totals):
            s, c = neumaier_add(sums[k, 0], sums[k, 1], t)
            sums[k, 0], sums[k, 1] = s, c
        self._state["n"][0] += n
        return self

    def _compute(self) -> Result:
        return Result("ClassProbabilityScores", dict(probability_result(self._state["sums"], self.n)))


# ---------------------------------------------------------------------- report
def _jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()] if v.ndim else _jsonable(v.item())
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if math.isfinite(v) else None
    return v


def _fmt_number(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v == int(v) and abs(v) < 1e15 and not (0 < abs(v) < 1):
            return f"{v:,.1f}" if abs(v) >= 1e4 else f"{v:g}"
        return f"{v:.6g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.4e}"
    return str(v)


class EvaluationReport(Result):
    """The scores of an :class:`Evaluator`: a read-only mapping of name -> value.

    Values are reached as keys (``report["auc"]``) or attributes
    (``report.auc``). ``str(report)`` (or :meth:`to_text`) is a readable table,
    :meth:`to_json` a JSON document. ``report.parts`` maps each member's name
    to its own result (``report.parts["binary"].fbeta(2)``); ``report.task``
    and ``report.settings`` tell what was evaluated.
    """

    __slots__ = ("_parts", "_settings")

    def __init__(self, values: dict[str, Any], parts: dict[str, Result], settings: dict[str, Any]):
        super().__init__("EvaluationReport", values)
        object.__setattr__(self, "_parts", dict(parts))
        object.__setattr__(self, "_settings", dict(settings))

    def __reduce__(self):
        return (self.__class__, (self._values, self._parts, self._settings))

    @property
    def task(self) -> str:
        """The evaluated task: binary, multiclass, regression or clustering."""
        return self._settings["task"]

    @property
    def settings(self) -> dict[str, Any]:
        """The evaluator's settings (a copy)."""
        return dict(self._settings)

    @property
    def parts(self) -> dict[str, Result]:
        """Each member's own result, by member name (a copy of the mapping)."""
        return dict(self._parts)

    # ------------------------------------------------------------------ output
    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON: ``{"task", "settings", "n", "metrics"}``.

        Arrays become (nested) lists; a non-finite float becomes ``null``.
        """
        doc = {
            "task": self.task,
            "settings": _jsonable(self._settings),
            "n": int(self._values["n"]),
            "metrics": {k: _jsonable(v) for k, v in self._values.items() if k != "n"},
        }
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_text(self) -> str:
        """A plain-text table of every score, grouped by member."""
        s = self._settings
        head = f"{self.task} evaluation of {_fmt_number(self._values['n'])} rows"
        if self.task == "binary":
            head += f" (scores: {s['scores']}, threshold {s['threshold']:g}"
            if s.get("max_bins") is not None:
                head += f", max_bins {s['max_bins']:,}"
            head += ")"
        elif self.task == "multiclass":
            head += f" ({s['n_classes']} classes)"
        lines = [head, "=" * len(head)]
        order = {"binary": ["auc", "probability", "binary"]}.get(self.task, list(self._parts))
        for name in order + [m for m in self._parts if m not in order]:
            if name not in self._parts:
                continue
            part = self._parts[name]
            title = _TITLES.get(name, name)
            if name == "binary":
                title += f" at p >= {s['threshold']:g}"
            lines.append("")
            lines.append(title)
            lines.extend(self._section(name, part))
        return "\n".join(lines)

    def _section(self, name: str, part: Result) -> list[str]:
        keys = [k for k in part if k != "n" and k in self._values]
        if name == "auc" and "average_precision" in self._values:
            keys.append("average_precision")
        out: list[str] = []
        scalars = [k for k in keys if not isinstance(self._values[k], np.ndarray)]
        arrays = [k for k in keys if isinstance(self._values[k], np.ndarray)]
        if name == "binary":
            v = self._values
            cells = [[v["tp"], v["fn"]], [v["fp"], v["tn"]]]
            out.extend(_grid(cells, ["actual 1", "actual 0"], ["predicted 1", "predicted 0"]))
            scalars = [k for k in scalars if k not in ("tp", "fp", "fn", "tn")]
        notes: dict[str, str] = {}
        if name == "auc":
            v = self._values
            scalars = ["auc", "average_precision"] + [
                k for k in scalars if k not in ("auc", "average_precision", "auc_lower", "auc_upper")
            ]
            scalars = [k for k in scalars if k in v]
            if v["auc_lower"] == v["auc_upper"]:
                notes["auc"] = "  (exact)"
            else:
                notes["auc"] = (
                    f"  (bounds {_fmt_number(v['auc_lower'])} .. {_fmt_number(v['auc_upper'])})"
                )
        width = max([len(k) for k in scalars] + [8])
        for k in scalars:
            out.append(f"  {k:<{width}}  {_fmt_number(self._values[k])}{notes.get(k, '')}")
        matrices = [k for k in arrays if self._values[k].ndim == 2]
        vectors = [k for k in arrays if self._values[k].ndim == 1]
        if vectors:
            out.append("")
            out.extend(_per_class(vectors, [self._values[k] for k in vectors]))
        for k in matrices:
            m = self._values[k]
            out.append("")
            out.append(f"  {k} (rows: actual class, columns: predicted class)")
            if m.shape[0] > 20:
                out.append(f"  ({m.shape[0]} x {m.shape[1]}: too large to print; see to_json())")
            else:
                labels = [str(i) for i in range(m.shape[0])]
                out.extend(_grid(m.tolist(), labels, labels))
        return out

    def __str__(self) -> str:
        return self.to_text()


def _grid(cells, row_labels, col_labels) -> list[str]:
    text = [[_fmt_number(c) for c in row] for row in cells]
    rw = max(len(r) for r in row_labels)
    cw = max([len(c) for c in col_labels] + [len(t) for row in text for t in row])
    lines = ["  " + " " * rw + "  " + "  ".join(f"{c:>{cw}}" for c in col_labels)]
    for label, row in zip(row_labels, text):
        lines.append("  " + f"{label:<{rw}}" + "  " + "  ".join(f"{t:>{cw}}" for t in row))
    return lines


def _per_class(names, arrays) -> list[str]:
    k = arrays[0].shape[0]
    shown = range(k) if k <= 50 else list(range(25)) + [None] + list(range(k - 25, k))
    w = max(len(n) for n in names + ["class"]) + 2
    lines = ["  " + f"{'class':>5}" + "".join(f"{n:>{w}}" for n in names)]
    for i in shown:
        if i is None:
            lines.append("  " + f"{'...':>5}")
            continue
        lines.append("  " + f"{i:>5}" + "".join(f"{_fmt_number(a[i]):>{w}}" for a in arrays))
    return lines


# ------------------------------------------------------------------- evaluator
class Evaluator(Accumulator):
    """Streaming evaluation of one task: every metric from one pass over batches.

    Parameters
    ----------
    task : {"binary", "multiclass", "regression", "clustering"}
        What ``update(y, p)`` receives:

        * ``binary``: ``y`` 0/1 labels, ``p`` scores of the positive class (a
          vector, or an n x 2 ``predict_proba`` matrix whose second column is
          used). Gives the confusion rates at ``threshold``, ROC-AUC and average
          precision, and, for probabilities, log loss and the Brier score.
        * ``multiclass``: ``y`` class labels in ``0..n_classes-1``; ``p``
          predicted labels, or an n x K matrix of class probabilities (the
          predicted class is the row's argmax, and log loss and Brier score are
          added when every batch came as probabilities).
        * ``regression``: real ``y`` and ``p``.
        * ``clustering``: ``y`` true labels, ``p`` cluster labels (any
          integers); no sample weights.
    threshold : float, optional
        Binary only: ``p >= threshold`` counts as a positive prediction. The
        default is 0.5 for ``scores="probability"`` and 0.0 for
        ``scores="score"`` (the logit of 0.5).
    n_classes : int
        Multiclass only: the number of classes K (classes ``0..K-1``).
    labels : sequence of hashable, optional
        Multiclass only, instead of (or matching) ``n_classes``: the class
        labels in matrix order, e.g. strings; ``y`` and hard predictions ``p``
        are then labels, and the columns of a probability matrix ``p`` follow
        this order.
    max_bins : int, optional
        Binary only: passed to ``RankAUC``. ``None`` keeps the AUC exact (memory
        grows with the number of distinct scores); a number bounds the memory
        and gives ``auc_lower``/``auc_upper`` bounds once the scores outnumber
        the bins.
    scores : {"probability", "score"}
        Binary only. ``"probability"`` (the default) requires every ``p`` in
        [0, 1] and adds ``log_loss`` and ``brier``; a batch with a value outside
        [0, 1] is rejected (it is not silently dropped from some metrics).
        ``"score"`` accepts any finite reals (logits, margins, ranks) and
        reports no probabilistic score.

    Notes
    -----
    Each batch is converted once (to the dtypes the kernels read) and handed to
    every member. A batch that any member rejects leaves the whole evaluator
    exactly as it was: the members updated before the failing one are rolled
    back, so no metric ever counts rows that another one refused.

    Examples
    --------
    Binary classification, in two batches of probabilities:

    >>> from streammetrics._evaluator import Evaluator
    >>> ev = Evaluator("binary", threshold=0.5)
    >>> ev.update([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]).update([1, 0], [0.3, 0.1])
    Evaluator(task='binary', threshold=0.5, scores='probability', max_bins=None): n=6 auc=0.888889 f1=0.8
    >>> r = ev.finalize()
    >>> round(r.auc, 6), r.tp, r.fn, round(r.log_loss, 4)
    (0.888889, 2, 1, 0.4432)
    >>> r.parts["binary"].fbeta(2)
    0.714...

    Regression, and the text report:

    >>> ev = Evaluator("regression")
    >>> ev.update([3, 5], [2.5, 5]).update([2, 7], [3, 8])
    Evaluator(task='regression'): n=4 rmse=0.75 r2=0.847458
    >>> report = ev.finalize()
    >>> report["mae"], round(report.r2, 6)
    (0.625, 0.847458)
    >>> print(report)
    regression evaluation of 4 rows
    ===============================
    <BLANKLINE>
    Errors
      mse       0.5625
      rmse      0.75
      mae       0.625
      mape      0.202381
      r2        0.847458
    """

    _HEADLINES = {
        "binary": ("auc", "f1"),
        "multiclass": ("accuracy", "macro_f1"),
        "regression": ("rmse", "r2"),
        "clustering": ("ari", "nmi"),
    }

    def __init__(
        self,
        task: str = "binary",
        threshold: float | None = None,
        n_classes: int | None = None,
        max_bins: int | None = None,
        scores: str | None = None,
        labels=None,
    ):
        if task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
        if task != "binary":
            for name, value in (("threshold", threshold), ("max_bins", max_bins), ("scores", scores)):
                if value is not None:
                    raise ValueError(f"{name} applies to task='binary' only (task is {task!r})")
        if task != "multiclass":
            for name, value in (("n_classes", n_classes), ("labels", labels)):
                if value is not None:
                    raise ValueError(f"{name} applies to task='multiclass' only (task is {task!r})")
        self.task = task
        settings: dict[str, Any] = {"task": task}
        members: dict[str, Accumulator] = {}
        if task == "binary":
            from ._auc import RankAUC
            from ._binary import BinaryConfusion
            from ._probability import ProbabilityScores

            scores = "probability" if scores is None else scores
            if scores not in SCORE_KINDS:
                raise ValueError(f"scores must be 'probability' or 'score'; got {scores!r}")
            if threshold is None:
                threshold = DEFAULT_THRESHOLD[scores]
            members["binary"] = BinaryConfusion(threshold=threshold)
            if scores == "probability":
                if not 0.0 <= members["binary"].threshold <= 1.0:
                    raise ValueError(
                        f"threshold {threshold!r} is outside [0, 1], where probabilities lie; "
                        "pass scores='score' for unbounded scores"
                    )
                members["probability"] = ProbabilityScores()
            # RankAUC last: its state may be large, and the members before it are
            # snapshotted (cheaply) so that a batch it rejects can be rolled back
            members["auc"] = RankAUC(max_bins=max_bins)
            settings.update(
                threshold=members["binary"].threshold, scores=scores, max_bins=max_bins
            )
        elif task == "multiclass":
            from ._multiclass import MulticlassConfusion

            if n_classes is None and labels is None:
                raise ValueError(
                    "task='multiclass' needs n_classes (classes 0..K-1) or labels (the class labels)"
                )
            mc = MulticlassConfusion(n_classes, labels=labels)
            # class probabilities first: see update()
            members["class_probability"] = _ClassProbabilityScores(mc.n_classes)
            members["multiclass"] = mc
            settings["n_classes"] = mc.n_classes
            if mc.labels is not None:
                settings["labels"] = mc.labels
        elif task == "regression":
            from ._regression import RegressionErrors

            members["regression"] = RegressionErrors()
        else:
            from ._clustering import ClusterContingency

            members["clustering"] = ClusterContingency()
        self._config = settings
        self._members = members
        self._headline = self._HEADLINES[task]
        self._n = np.zeros(1, np.int64)

    # ----------------------------------------------------------- state plumbing
    def _settings(self) -> dict[str, Any]:
        return dict(self._config)

    @property
    def _state(self) -> dict[str, np.ndarray]:
        state = {"n": self._n}
        for name, m in self._members.items():
            for k, v in m._state.items():
                state[f"{name}.{k}"] = v
        return state

    @_state.setter
    def _state(self, state: dict[str, np.ndarray]) -> None:
        parts: dict[str, dict[str, np.ndarray]] = {name: {} for name in self._members}
        for key, v in state.items():
            if key == "n":
                continue
            name, _, sub = key.partition(".")
            parts[name][sub] = v
        self._n = state["n"]
        for name, m in self._members.items():
            m._state = parts[name]

    def _new_state(self) -> dict[str, np.ndarray]:
        state = {"n": np.zeros(1, np.int64)}
        for name, m in self._members.items():
            for k, v in m._new_state().items():
                state[f"{name}.{k}"] = v
        return state

    @property
    def n(self) -> int:
        """Rows folded in so far."""
        return int(self._n[0])

    @property
    def members(self) -> dict[str, Accumulator]:
        """The member accumulators by name (the live objects; do not update them)."""
        return dict(self._members)

    def _merge_state(self, other: dict[str, np.ndarray]) -> None:
        parts: dict[str, dict[str, np.ndarray]] = {name: {} for name in self._members}
        for key, v in other.items():
            if key != "n":
                name, _, sub = key.partition(".")
                parts[name][sub] = v
        for name, m in self._members.items():
            m._merge_state(parts[name])
        self._n += other["n"]

    @classmethod
    def _from_saved(cls, settings, arrays, where):
        try:
            obj = cls(**settings)
        except (TypeError, ValueError, ImportError) as exc:
            raise ValueError(f"{where}: invalid Evaluator settings {settings!r} ({exc})") from None
        expected = set(obj._new_state())
        if set(arrays) != expected:
            raise ValueError(
                f"{where}: state entries {sorted(arrays)} do not match an Evaluator "
                f"with settings {settings!r} ({sorted(expected)})"
            )
        n = arrays["n"]
        if n.dtype != np.int64 or n.shape != (1,) or n[0] < 0:
            raise ValueError(f"{where}: entry 'n' must be one non-negative int64")
        for name, m in obj._members.items():
            prefix = name + "."
            sub = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
            loaded = type(m)._from_saved(m._settings(), sub, f"{where} (member {name!r})")
            if name != "class_probability" and loaded.n != n[0]:
                raise ValueError(
                    f"{where}: member {name!r} counts {loaded.n} rows but the evaluator {n[0]}"
                )
            obj._members[name] = loaded
        obj._n = np.array(n, copy=True)
        return obj

    # ------------------------------------------------------------------ update
    def _prepare(self, y, p, sample_weight):
        """Convert and check one batch; return ``(n, [(member, args, weights)])``."""
        task = self.task
        if task == "binary":
            y = as_labels01(y, "y")
            arr = _to_array(p, "p")
            if arr.ndim == 2 and arr.shape[1] == 2 and arr.dtype.kind in "biuf":
                arr = arr[:, 1]  # predict_proba layout: the positive class's column
            p = as_reals(arr, "p")
            n = check_same_length(y=y, p=p)
            w = as_weights(sample_weight, n)
            calls = [(m, (y, p), w) for m in self._members.values()]
        elif task == "multiclass":
            arr = _to_array(p, "p")
            mc = self._members["multiclass"]
            if arr.ndim == 2:
                if arr.dtype.kind not in "biuf":
                    raise TypeError(f"p must hold numbers, got dtype {arr.dtype}")
                k = self._config["n_classes"]
                if mc.labels is not None:
                    y_given, y = mc._encoder.encode(y, "y")
                else:
                    y = y_given = _as_int_labels(y, "y", k)
                proba = _as_class_probabilities(arr, k)
                n = check_same_length(y=y, p=proba)
                w = as_weights(sample_weight, n)
                pred = np.argmax(proba, axis=1).astype(np.int64) if n else np.zeros(0, np.int64)
                if mc.labels is not None:
                    pred = np.array(mc.labels, dtype=object)[pred]  # back to the labels
                # the probability member checks everything it reads up front;
                # the confusion member then gets labels known to be valid
                calls = [(self._members["class_probability"], (y, proba), w), (mc, (y_given, pred), w)]
            else:
                # hard labels: the confusion member converts and checks them once
                n = len(y) if mc.labels is not None else as_1d(y, "y").shape[0]
                calls = [(mc, (y, arr), sample_weight)]
        elif task == "regression":
            y = as_reals(y, "y")
            p = as_reals(p, "p")
            n = check_same_length(y=y, p=p)
            w = as_weights(sample_weight, n)
            calls = [(self._members["regression"], (y, p), w)]
        else:
            if sample_weight is not None:
                raise ValueError("task='clustering' takes no sample_weight")
            n = as_1d(y, "y").shape[0]
            calls = [(self._members["clustering"], (y, p), None)]
        return n, calls

    def update(self, y, p, sample_weight=None):
        """Fold in one batch of truths ``y`` and predictions ``p``; return ``self``.

        A bad batch raises ``ValueError`` (or ``TypeError``) naming the argument
        and its first offending position and leaves every member unchanged.
        """
        n, calls = self._prepare(y, p, sample_weight)
        if n == 0:
            return self
        prepared = self.task in ("binary", "regression")
        # Members before the last are snapshotted (their states are tiny); the
        # last one keeps itself unchanged when it rejects the batch.
        snapshots = [
            (m, {k: v.copy() for k, v in m._state.items()}) for m, _, _ in calls[:-1]
        ]
        try:
            for m, args, w in calls:
                if m is self._members.get("clustering"):
                    m.update(*args)
                elif prepared and hasattr(m, "_fold_prepared"):
                    # arrays converted once above, exactly as m.update would
                    m._fold_prepared(*args, w)
                else:
                    empty = isinstance(w, np.ndarray) and w.shape[0] == 0
                    m.update(*args, sample_weight=None if empty else w)
        except BaseException:
            for m, snap in snapshots:
                m._state = snap
            raise
        self._n[0] += n
        return self

    # --------------------------------------------------------------- finalize
    def _compute(self) -> EvaluationReport:
        parts: dict[str, Result] = {}
        values: dict[str, Any] = {"n": self.n}
        for name, m in self._members.items():
            if name == "class_probability" and m.n != self.n:
                continue  # not every batch came with class probabilities
            r = m.finalize()
            parts[name] = r
            for k, v in r.items():
                if k == "n":
                    continue
                key = k if k not in values else f"{name}_{k}"
                values[key] = v
            if name == "auc":
                values["average_precision"] = float(m.average_precision())
        return EvaluationReport(values, parts, self._config)

    def finalize(self) -> EvaluationReport:
        """The report of every member's scores; the state is not changed.

        Raises ``ValueError`` when no row has been folded in.
        """
        return super().finalize()

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self._config.items())
        head = f"Evaluator({settings})"
        if self.n == 0:
            return f"{head}: n=0"
        try:
            r = self._compute()
            fields = " ".join(f"{k}={r[k]:.6g}" for k in self._headline if k in r)
        except (ValueError, KeyError):
            fields = ""
        return f"{head}: n={self.n} {fields}".rstrip()


def evaluate_batches(batches: Iterable, task: str = "binary", **settings) -> EvaluationReport:
    """Fold an iterable of ``(y, p)`` or ``(y, p, sample_weight)`` batches.

    ``settings`` are those of :class:`Evaluator`. Returns the final report.

    >>> from streammetrics._evaluator import evaluate_batches
    >>> batches = [([3, 5], [2.5, 5]), ([2, 7], [3, 8], [1.0, 1.0])]
    >>> evaluate_batches(batches, task="regression")["mse"]
    0.5625
    """
    ev = Evaluator(task, **settings)
    for i, batch in enumerate(batches):
        if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
            raise ValueError(
                f"batch {i} must be a (y, p) or (y, p, sample_weight) tuple, "
                f"got {type(batch).__name__}"
                + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            )
        ev.update(*batch)
    return ev.finalize()
