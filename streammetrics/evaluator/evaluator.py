"""One accumulator for a whole evaluation: a named collection of accumulators.

The members share each batch: it is converted and checked once, for the
strictest input any member declares, then folded into every member whose
inputs it covers, so a batch one member would refuse is refused before any
member is touched. Where one member's kernel checks exactly what the batch is
checked for (the binary preset's probability scores), ``update`` folds that
member first and lets its kernel do the checking: the batch is read once less.
A member a batch's form does not cover skips it and is left out of the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .._protocol import statefile
from .._protocol.base import Accumulator, locked
from .._protocol.errors import NoWeightsError, StateFileError
from .._protocol.inputs import Batch, convert, prepare, raise_rejected
from .._protocol.keywords import arrays_by_name
from .._protocol.result import Result
from .._protocol.state import checked_entries, loaded
from .._protocol.terms import RowTerms
from ..report.report import EvaluationReport
from .plans import Plan, make_plans
from .presets import PRESETS, TASKS

__all__ = ["Evaluator", "evaluate_batches"]


class Evaluator(Accumulator):
    """Streaming evaluation: every metric of a collection from one pass over batches.

    Parameters
    ----------
    members : mapping of str to Accumulator, or str, optional
        The accumulators to fold every batch into, by name (each is used as
        given, so pass empty ones), or the name of a task (the same as
        ``task=``). Members that take the same form of arrays must check them
        alike or one within the other (a probability is a finite score):
        ``ProbabilityScores`` beside ``RegressionErrors``, whose ``y`` is 0/1
        for one and any real for the other, raises ``ValueError``.
    task : {"binary", "multiclass", "regression", "clustering"}, optional
        A preset collection (the default when ``members`` is not given is
        ``"binary"``). What ``update(y, p)`` receives:

        * ``binary``: ``y`` 0/1 labels, ``p`` scores of the positive class (a
          vector, or an n x 2 ``predict_proba`` matrix whose second column is
          used). Gives the confusion rates at ``threshold``, ROC-AUC and average
          precision, and, for probabilities, log loss and the Brier score.
        * ``multiclass``: ``y`` class labels in ``0..n_classes-1`` (or among
          ``labels``); ``p`` predicted labels, or an n x K matrix of class
          probabilities (the predicted class is the row's argmax, and log loss
          and Brier score are added when every batch came as probabilities).
        * ``regression``: real ``y`` and ``p``.
        * ``clustering``: ``y`` true labels, ``p`` cluster labels (any
          integers); no sample weights.
    threshold : float, optional
        Binary only: ``p >= threshold`` counts as a positive prediction (in the
        scores' own precision, as numpy compares: see ``BinaryConfusion``). The
        default is 0.5 for ``scores="probability"`` and 0.0 for
        ``scores="score"``.
    n_classes : int, optional
        Multiclass only: the number of classes K.
    labels : sequence, optional
        Multiclass only: the class labels in class order (strings, ints, ...);
        reports, JSON and plots name the classes by them.
    top_k : int, optional
        Multiclass only: adds ``TopKAccuracy(top_k)`` for batches of class
        probabilities. Off by default.
    auc : bool
        Multiclass only: ``True`` adds the exact ``MulticlassRankAUC`` for batches
        of class probabilities (off by default: its exact state grows with the rows).
    max_bins : int, optional
        Binary, multiclass (with ``auc``) and multilabel (with a ``threshold``):
        ``None`` (the default) keeps the AUC exact; a number bounds the memory and
        gives ``_lower``/``_upper`` bounds once the scores outnumber the bins.
    max_memory : int or str, optional
        Binary only: a memory budget (bytes, or a string such as ``"1GB"``) past
        which the exact AUC's sorted runs are spilled to temporary files
        (:class:`~streammetrics.RankAUC`'s ``max_memory``). Excludes ``max_bins``.
    scores : {"probability", "score"}
        Binary only. ``"probability"`` (the default) requires every ``p`` in
        [0, 1] (a batch with a value outside is rejected) and adds ``log_loss``
        and ``brier``; ``"score"`` accepts any finite reals (logits, margins).
    calibration_bins : int or None
        Binary (probabilities) and multiclass: the bins of the reliability table
        (15 by default), which adds ``ece``, ``mce`` and the Brier decomposition;
        ``None`` leaves calibration out. Settings added over time load from older
        states with the value those states had (no ``top_k``, ``auc``, budget or table).

    Notes
    -----
    A batch that any member would reject leaves the whole evaluator as it was.
    The Evaluator is itself an :class:`~streammetrics.Accumulator` (``merge``,
    ``+``, ``copy``, pickling, ``save`` and :func:`~streammetrics.load_state`).

    Examples
    --------
    Binary classification, in two batches of probabilities:

    >>> from streammetrics import Evaluator
    >>> ev = Evaluator("binary", threshold=0.5)
    >>> ev.update([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]).update([1, 0], [0.3, 0.1])
    Evaluator(task='binary', threshold=0.5, scores='probability', ...): n=6 auc=0.888889 f1=0.8
    >>> r = ev.finalize()
    >>> round(r.auc, 6), r.tp, r.fn, round(r.log_loss, 4)
    (0.888889, 2, 1, 0.4432)
    >>> r.parts["binary"].fbeta(2)
    0.714...

    Any accumulators, by name:

    >>> from streammetrics import BinaryConfusion, RankAUC
    >>> ev = Evaluator({"auc": RankAUC(), "strict": BinaryConfusion(threshold=0.8)})
    >>> r = ev.update([1, 0, 1, 0], [0.9, 0.2, 0.6, 0.4]).finalize()
    >>> r.auc, r.recall
    (1.0, 0.5)

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

    ``finalize(ci=0.9)`` adds the intervals of the members that offer them,
    shown beside their scores:

    >>> print(ev.finalize(ci=0.9))
    regression evaluation of 4 rows
    ===============================
    <BLANKLINE>
    Errors
      mse       0.5625 [0.138631, 0.986369]
      rmse      0.75 [0.372332, 0.993161]
      mae       0.625 [0.231293, 1.01871]
      mape      0.202381 [0.028336, 0.376426]
      r2        0.847458
    """

    #: ``finalize(ci=...)`` passes the level to the members that take it
    intervals = True

    def __init__(self, members: Mapping | str | None = None, *, task: str | None = None, **settings):
        if isinstance(members, str):
            if task is not None and task != members:
                raise ValueError(f"task given twice: {members!r} and {task!r}")
            task, members = members, None
        if members is not None:
            if task is not None or settings:
                raise ValueError("pass either members or a task with its settings, not both")
            self._init_members(members)
        else:
            self._init_task("binary" if task is None else task, settings)
        self._n = 0
        self._plans = make_plans(self._members, self._names, self._inputs)

    def _init_task(self, task: str, settings: dict) -> None:
        preset = PRESETS.get(task) if isinstance(task, str) else None
        if preset is None:
            raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
        for name, value in settings.items():
            if name not in preset.settings:
                owners = [t for t, p in PRESETS.items() if name in p.settings]
                if not owners:
                    raise TypeError(f"Evaluator() got an unexpected keyword argument {name!r}")
                if value is not None:
                    raise ValueError(f"{name} applies to task={owners[0]!r} only (task is {task!r})")
        given = {k: settings.get(k, v) for k, v in preset.settings.items()}
        checked = preset.check(given)
        self.task = task
        self._preset = preset
        self._config = {"task": task, **checked}
        self._members = dict(preset.members(checked))
        self._inputs = preset.inputs(checked) if preset.inputs is not None else None
        self._names = preset.names
        self.headline = preset.headline

    def _init_members(self, members: Mapping) -> None:
        if not isinstance(members, Mapping) or not members:
            raise TypeError("members must be a non-empty mapping of names to accumulators")
        for name, m in members.items():
            if not isinstance(name, str) or not name or "." in name:
                raise ValueError(f"member names must be non-empty strings without '.', got {name!r}")
            if not isinstance(m, Accumulator) or isinstance(m, Evaluator):
                raise TypeError(f"member {name!r} must be an accumulator, got {type(m).__name__}")
            if getattr(m, "_takes_keys", False):
                kind = type(m).__name__
                raise TypeError(
                    f"member {name!r} is a {kind} accumulator, which takes keys "
                    f"beside y and p: wrap the whole Evaluator instead, "
                    f"{kind}(Evaluator({{...}}))"
                )
            if m.n:
                raise ValueError(f"member {name!r} is not empty: pass empty accumulators")
        arity = {len(m.inputs) for m in members.values()}
        if len(arity) != 1:
            raise ValueError(
                "the members take different numbers of arrays: "
                + ", ".join(f"{k}: {len(m.inputs)}" for k, m in members.items())
            )
        self.task = None
        self._preset = None
        self._members = dict(members)
        self._config = {
            "members": {name: {"class": type(m).__name__, "settings": m.settings} for name, m in members.items()}
        }
        self._inputs = None
        self._names = ("y", "p") if arity == {2} else tuple(i.name for i in next(iter(members.values())).inputs)
        self.headline = tuple(dict.fromkeys(h for m in members.values() for h in m.headline))[:2]

    @classmethod
    def from_settings(cls, settings: dict[str, Any]):
        if "members" in settings:
            members = {}
            spec = settings["members"]
            if not isinstance(spec, dict):
                raise ValueError("members must be a mapping")
            known = statefile.registry()
            for name, d in spec.items():
                if not isinstance(d, dict) or known.get(d.get("class")) is None:
                    raise ValueError(f"member {name!r} is not a known accumulator")
                if not isinstance(d.get("settings"), dict):
                    raise ValueError(f"member {name!r} has invalid settings")
                members[name] = known[d["class"]](**d["settings"])
            return cls(members)
        settings = dict(settings)
        task = settings.pop("task", None)
        preset = PRESETS.get(task) if isinstance(task, str) else None
        if preset is not None:
            # settings a task gained later: a state saved before has their old meaning
            for name, value in preset.legacy.items():
                settings.setdefault(name, value)
        return cls(task=task, **settings)

    def _settings(self) -> dict[str, Any]:
        return dict(self._config)

    def _plan_for(self, arrays) -> Plan:
        if len(self._plans) == 1:
            return self._plans[0]  # its conversion says what is wrong with other forms
        for plan in self._plans:
            if all(i.takes_form(x) for i, x in zip(plan.inputs, arrays)):
                return plan
        return self._plans[0]  # its conversion says what is wrong

    def takes(self, batch: Batch) -> bool:
        """Whether ``batch`` serves this Evaluator: made for one of its input forms,
        or covering a member's inputs."""
        return any(p.inputs is batch.inputs for p in self._plans) or any(
            batch.covers(m.inputs) for m in self._members.values()
        )

    @property
    def inputs(self):
        """The inputs of ``update`` for the members' most common form."""
        return self._plans[0].inputs

    @property
    def takes_weights(self) -> bool:
        return all(m.takes_weights for m in self._members.values())

    def _weights_error(self) -> NoWeightsError:
        if self._preset is not None and self._preset.no_weights:
            return NoWeightsError(f"task={self.task!r}", self._preset.no_weights)
        names = [k for k, m in self._members.items() if not m.takes_weights]
        return NoWeightsError(f"member {names[0]!r}")

    def _checked_call(self, arrays, sample_weight) -> Plan:
        """The plan for ``arrays``; ``TypeError`` for another number of arrays or weights none takes."""
        if len(arrays) != len(self._names):
            raise TypeError(f"expected {len(self._names)} arrays ({', '.join(self._names)}), got {len(arrays)}")
        if sample_weight is not None and not self.takes_weights:
            raise self._weights_error()
        return self._plan_for(arrays)

    def prepare(self, *arrays, sample_weight=None) -> Batch:
        """Convert and check one batch for every member: a :class:`~streammetrics.Batch`."""
        return prepare(self._checked_call(arrays, sample_weight).inputs, arrays, sample_weight)

    def fold(self, batch: Batch):
        """Fold a prepared batch into every member whose inputs it covers; return ``self``."""
        if not isinstance(batch, Batch):
            raise TypeError(f"fold() takes a Batch from prepare(), got {type(batch).__name__}")
        plan = next((p for p in self._plans if p.inputs is batch.inputs), None)  # prepared here?
        takers = plan.members if plan is not None else [m for m in self._members.values() if batch.covers(m.inputs)]
        if not takers:
            raise TypeError("no member of this Evaluator takes this batch's arrays")
        if batch.n == 0:
            return self
        return self._fold_members(batch, takers)

    def _fold_members(self, batch: Batch, takers, lead=None):
        """Fold ``batch`` into ``takers``, every one before another batch starts;
        ``lead`` (one of them), when given, first and unchecked: its kernel
        checks the batch, which is refused before any member is written."""
        with self._guard:
            self._check_room(batch.n)  # members count at most these rows
            if lead is not None and lead.fold_status(batch.arrays_for(lead.inputs), batch.weights, batch.n):
                raise_rejected(batch.inputs, batch.arrays)  # nothing written anywhere
            for m in takers:
                if m is not lead:
                    m.fold(batch)  # cannot raise for a value: the batch is checked
            self._n += batch.n
        return self

    def update(self, *arrays, sample_weight=None, **named):
        """Fold in one batch of truths ``y`` and predictions ``p`` (or the
        arrays the members take, such as query, relevance and score; by name
        too, as ``update(y=..., p=...)``); return ``self``.

        A bad batch raises ``ValueError`` (or ``TypeError``) naming the argument
        and its first offending position and leaves every member unchanged.
        """
        if named:  # names given: a call kept off the positional path of every update
            arrays = arrays_by_name(self.inputs, arrays, named, self)
        if len(self._names) == 2 and len(arrays) == 3 and sample_weight is None:
            *arrays, sample_weight = arrays  # update(y, p, w): the weights third, as ever
        arrays = tuple(arrays)
        plan = self._checked_call(arrays, sample_weight)
        if plan.lead is None or len(self._names) != 2:
            return self.fold(self.prepare(*arrays, sample_weight=sample_weight))
        converted, w, n = convert(plan.inputs, arrays, sample_weight)
        if not n:
            return self
        return self._fold_members(Batch(plan.inputs, converted, w, n), plan.members, plan.lead)

    @property
    def n(self) -> int:
        """Rows folded in so far."""
        return self._n

    @property
    def members(self) -> dict[str, Accumulator]:
        """The member accumulators by name (the live objects; do not update them)."""
        return dict(self._members)

    def _required(self, name: str) -> bool:
        """Whether a member takes every batch form (so its n equals the evaluator's)."""
        m = self._members[name]
        return all(any(m is x for x in plan.members) for plan in self._plans)

    def _linear(self) -> list:
        """``[(name, terms)]`` of the members that declare row terms, in member order."""
        return [(name, t) for name, t in ((k, m.row_terms()) for k, m in self._members.items()) if t is not None]

    def row_terms(self):
        """The row terms of the members that declare them, side by side (slots and
        columns in member order); ``complete`` when every member does. A batch
        serves them when every one of those members takes it."""
        linear = self._linear()
        if not linear:
            return None
        parts = [t for _, t in linear]
        bases = np.cumsum([0] + [t.size for t in parts])
        cols = np.cumsum([0] + [t.width for t in parts])
        counted = np.concatenate([t.counted for t in parts]).nonzero()[0]
        second = None
        if any(t.second is not None for t in parts):
            second = np.concatenate([np.zeros(t.size, np.uint8) if t.second is None else t.second for t in parts])
        members = [self._members[name] for name, _ in linear]

        def fill(batch, lo, slots, values, col, base):
            for t, c, b in zip(parts, cols, bases):
                status = t.fill(batch, lo, slots, values, col + int(c), base + int(b))
                if status:
                    return status
            return 0

        def takes(batch):
            return all(batch.covers(m.inputs) for m in members)

        complete = len(linear) == len(self._members)
        options = dict(counted=counted, counts_only=all(t.counts_only for t in parts), second=second, complete=complete)
        return RowTerms(int(bases[-1]), int(cols[-1]), fill, rows=parts[0].rows, takes=takes, **options)

    def add_sums(self, sums, state=None) -> None:
        """Add summed row terms (see :meth:`row_terms`) into the members that
        declare them, and count their rows."""
        if state is not None:
            raise TypeError("an Evaluator's state is its members': it is not stacked")
        with self._guard:
            self._check_room(int(sums.rows.sum()))
            at = 0
            for name, terms in self._linear():
                self._members[name].add_sums(sums.part(at, at + terms.size))
                at += terms.size
            self._n += int(sums.rows.sum())

    def fold_rest(self, batch: Batch) -> None:
        """Fold ``batch`` into the members that declare no row terms and take it."""
        with self._guard:
            for m in self._members.values():
                if m.row_terms() is None and batch.covers(m.inputs):
                    m.fold(batch)

    def skip_rows(self, n: int) -> None:
        """Count ``n`` rows that none of the members takes (a wrapper kept them
        elsewhere: a bootstrap's rank rows); the report leaves out the members
        that missed them."""
        with self._guard:
            self._check_room(n)
            self._n += n

    @property
    def _state(self) -> dict[str, np.ndarray]:  # read under the lock (save, pickle, ==)
        state = {"n": np.array([self._n], np.int64)}
        for name, m in self._members.items():
            state.update({f"{name}.{k}": v for k, v in m.state_dict().items()})
        return state

    def _checked(self, state) -> tuple[dict, int]:
        """``(members, n)``: the members holding a state (untrusted), checked, and its count."""
        entries = {f"{name}.{f.name}": f.optional for name, m in self._members.items() for f in m.fields}
        optional = {k for k, opt in entries.items() if opt}
        n = checked_entries(state, {"n", *entries}, f"an Evaluator with settings {self._config!r}", optional)
        fresh = {}
        for name in self._members:  # (the entries are checked; no name holds a ".")
            sub = {key[len(name) + 1 :]: v for key, v in state.items() if key.startswith(f"{name}.")}
            m = loaded(self._members[name].copy().reset(), sub, f"member {name!r}")
            bad = m.n != n if self._required(name) else m.n > n
            if bad:
                raise StateFileError(f"member {name!r} counts {m.n} rows but the evaluator {n}")
            fresh[name] = m
        return fresh, n

    def _load(self, state) -> None:
        members, n = state if isinstance(state, tuple) else self._checked(state)
        self._members.update(members)
        self._n = n
        self._plans = make_plans(self._members, self._names, self._inputs)

    def merge(self, other: Evaluator):
        """Fold another Evaluator of the same members into this one; return ``self``."""
        self._check_compatible(other)
        if other is self:
            other = other.copy()
        with locked(self, other):
            # members count at most the evaluator's rows: bounding its count bounds theirs
            self._check_room(other.n, "merging")
            self._merge_check(other)
            for name, m in self._members.items():
                m.merge(other.members[name])
            self._n += other.n
        return self

    def _merge_check(self, other):
        theirs = other.members
        for name, m in self._members.items():
            m.check_merge(theirs[name])

    def _clone(self):  # called under the lock (copy)
        # settings shared (a Sliced Evaluator copies one per slice: no checks again); plans
        # rebuilt over the copied members with the same input tuples, so either takes the other's batches
        out = type(self).__new__(type(self))  # with its own lock
        members = {name: m.copy() for name, m in self._members.items()}
        twin = {id(m): members[name] for name, m in self._members.items()}
        own = {k: v for k, v in self.__dict__.items() if k != "_guard"}
        plans = [plan.rebound(twin) for plan in self._plans]
        vars(out).update(own, _config=dict(self._config), _members=members, _plans=plans)
        return out

    def reset(self):
        with self._guard:
            for m in self._members.values():
                m.reset()
            self._n = 0
        return self

    def _compute(self, ci=None) -> EvaluationReport:
        parts: dict[str, Result] = {}
        for name, m in self._members.items():
            if m.n == self._n:  # a member that skipped batches is left out
                parts[name] = m.finalize(ci=ci) if ci is not None and m.intervals else m.finalize()
        order = list(self._preset.sections) if self._preset is not None else []
        order = [k for k in order if k in parts] + [k for k in parts if k not in order]
        describe = self._preset.describe(self._config) if self._preset is not None else ""
        return EvaluationReport(self._n, parts, self._config, order=order, describe=describe)

    def __repr__(self) -> str:
        text = super().__repr__()
        if self._preset is None:  # the members by name, as built
            call = lambda m: f"{type(m).__name__}({', '.join(f'{a}={b!r}' for a, b in m.settings.items())})"  # noqa: E731
            members = "{" + ", ".join(f"{k!r}: {call(m)}" for k, m in self._members.items()) + "}"
            text = f"Evaluator({members}): n={text.rsplit(': n=', 1)[1]}"
        return text


def evaluate_batches(batches: Iterable, task: str = "binary", **settings) -> EvaluationReport:
    """Fold an iterable of ``(y, p)`` or ``(y, p, sample_weight)`` batches.

    ``settings`` are those of :class:`Evaluator` (a ``members`` mapping, or a
    task's settings). Returns the final report.

    >>> from streammetrics import evaluate_batches
    >>> batches = [([3, 5], [2.5, 5]), ([2, 7], [3, 8], [1.0, 1.0])]
    >>> evaluate_batches(batches, task="regression")["mse"]
    0.5625
    """
    members = settings.pop("members", None)
    ev = Evaluator(members) if members is not None else Evaluator(task=task, **settings)
    for i, batch in enumerate(batches):
        if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3):
            raise ValueError(
                f"batch {i} must be a (y, p) or (y, p, sample_weight) tuple, "
                f"got {type(batch).__name__}" + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
            )
        ev.update(*batch)
    return ev.finalize()
