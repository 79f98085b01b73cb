"""History: one state of a template per training step, for learning curves."""

from __future__ import annotations

import json

import numpy as np

from .._protocol.base import Accumulator
from .._protocol.keywords import take_names
from .._protocol.result import Result, jsonable
from ..report import plots
from . import clock, tables
from .buckets import Buckets

__all__ = ["History"]

#: scores that are better lower (the others are better higher)
LOWER_IS_BETTER = frozenset(
    "log_loss brier mse rmse mae mape ece mce rmsce reliability hamming_loss"
    " mean_tweedie_deviance mean_poisson_deviance mean_gamma_deviance".split()
)


def _step(value) -> int | None:
    """A step as an ``int``, or ``None`` if ``value`` is not one integer."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return None


class History(Buckets):
    """One state of a template per step (epoch, checkpoint, day): a learning curve.

    ``update(*arrays, sample_weight=None, step=s)`` folds a batch into step
    ``s``'s state (``s`` an integer, or one integer per row; it may also come
    as one extra positional column). :meth:`finalize` gives every step's
    scores as columns (intervals with ``ci=``), :meth:`best` the best step of
    a score, :meth:`to_frame` / :meth:`to_json` the table, and :meth:`plot`
    the curve of a score with its interval band, beside other histories
    (train and validation on one figure).

    Steps merge across shards step by step (the same step's states merge), and
    save and load like any accumulator.

    Examples
    --------
    >>> from streammetrics import BinaryConfusion, History
    >>> h = History(BinaryConfusion())
    >>> for epoch, p in enumerate([[0, 0, 1, 1], [1, 0, 1, 1], [1, 0, 1, 0]]):
    ...     _ = h.update([1, 0, 1, 0], p, step=epoch)
    >>> r = h.finalize()
    >>> r.step.tolist(), r.accuracy.tolist()
    ([0, 1, 2], [0.5, 0.75, 1.0])
    >>> h.best("accuracy").step
    2
    """

    _each = "step"

    def __init__(self, template: Accumulator):
        self._setup(template, "step", "steps")

    def update(self, *arrays, sample_weight=None, step=None, **options):
        """Fold one batch into its step(s); return ``self``. A bad value raises
        ``ValueError``, the history unchanged."""
        if options:
            arrays, options = take_names(self._template.inputs, arrays, options, self)
        key = step if type(step) is int else _step(step)
        if key is None or options:
            return super().update(*arrays, sample_weight=sample_weight, step=step, **options)
        # one step: the batch goes whole to its state, by the template's own update
        acc = self._parts.get(key)
        if acc is not None:
            acc.update(*arrays, sample_weight=sample_weight)
            return self
        with self._guard:
            acc = self._template.copy().update(*arrays, sample_weight=sample_weight)
            if acc.n:
                self._install({key: self._parts.get(key, self._template.copy()).merge(acc)})
        return self

    @property
    def n(self) -> int:
        """Rows folded in, over every step."""
        return sum(acc.n for acc in self.parts().values())

    @property
    def seen(self) -> int:
        return self.n

    def _extra(self, value, n: int):
        if value is None:
            raise TypeError("History.update needs step= (an integer, or one per row)")
        key = _step(value)
        if key is not None:
            return np.full(n, key, np.int64)
        a = clock.column(value)
        if a.shape != (n,) or a.dtype.kind not in "iu" or (a.dtype.kind == "u" and a.dtype.itemsize == 8):
            raise ValueError(
                f"step: expected an integer or {n} integers (one per row), got {a.dtype} of shape {a.shape}"
            )
        return a.astype(np.int64)

    def _keys_of(self, steps, n: int) -> np.ndarray:
        return steps

    # -------------------------------------------------------------- reading
    def table(self, ci=None) -> dict:
        """Every step's ``step``, ``rows`` and scalar scores (with ``ci``, their
        intervals), as a dict of lists."""
        got = self._results(ci)
        lead = {"step": [k for k, _, _ in got], "rows": [n for _, n, _ in got]}
        return tables.columns(lead, [r for _, _, r in got], ci)

    def _compute(self, ci=None) -> Result:
        t = self.table(ci)
        values = {k: np.asarray(v, np.int64 if k in ("step", "rows") else np.float64) for k, v in t.items()}
        return Result("History", values, meta={"ci": ci})

    def finalize(self, ci=None) -> Result:
        """Every step's scores as columns: ``step``, ``rows`` and each scalar score
        (NaN for a step that defines none), with ``<score>_ci_lower`` and
        ``<score>_ci_upper`` at level ``ci`` where the template offers
        intervals. ``ValueError`` with no row."""
        return super().finalize(ci=ci)

    def best(self, score: str, higher: bool | None = None, ci: float = 0.95) -> Result:
        """The step where ``score`` is best (``higher``: whether higher is better;
        by default lower for losses and errors), its value, and the last step's.

        Where the template is a :class:`~streammetrics.Bootstrap` fed the same
        rows with keys at every step (a validation set), the result adds the
        paired comparison of the best step against the last
        (:func:`~streammetrics.compare`: ``<score>_diff``, its interval at
        level ``ci`` and p-value).
        """
        t = self.table()
        if score not in t:
            raise ValueError(f"score {score!r} is not a scalar score of this history: {list(t)[2:]}")
        if higher is None:
            higher = score not in LOWER_IS_BETTER
        values = np.asarray(t[score], float)
        if not np.isfinite(values).any():
            raise ValueError(f"no step defines {score!r}")
        i = int(np.nanargmax(values) if higher else np.nanargmin(values))
        out = {"step": t["step"][i], score: values[i], "last_step": t["step"][-1], f"last_{score}": values[-1]}
        parts = self.parts()
        best, last = parts[t["step"][i]], parts[t["step"][-1]]
        if callable(getattr(best, "replicate_scores", None)):
            from ..comparison import compare

            c = compare(best, last, ci=ci)
            out.update({k: c[k] for k in c if k.startswith(score + "_") or k in ("replicates_used", "ci")})
        return Result("Best", out, meta={"higher_is_better": higher})

    def to_frame(self, ci=None):
        """A pandas DataFrame of :meth:`table` (one row per step)."""
        return tables.frame(self.table(ci))

    def to_json(self, ci=None) -> str:
        """The table as JSON: ``{"steps": [{"step": ..., "rows": ..., score: ...}, ...]}``
        (an undefined score is ``null``)."""
        t = self.table(ci)
        rows = [dict(zip(t, values)) for values in zip(*t.values())]
        return json.dumps(jsonable({"steps": rows}))

    def plot(self, score: str, folder=".", *, others=None, label="train", ci=0.95, name=None, title=None) -> str:
        """A learning curve: ``score`` per step with its interval band (level ``ci``
        where the template offers intervals; ``ci=None`` for none), and the
        curves of ``others`` (``{label: History}``, e.g. validation) on the same
        figure; a PNG in ``folder``, its path returned."""
        curves = []
        for lab, h in [(label, self), *dict(others or {}).items()]:
            t = h.table(ci if h.intervals else None)
            if score not in t:
                raise ValueError(f"score {score!r} is not a scalar score of history {lab!r}")
            lo, hi = t.get(f"{score}_ci_lower"), t.get(f"{score}_ci_upper")
            curves.append((lab, t["step"], t[score], lo, hi, None))
        band = f" ({ci:.0%} intervals)" if ci is not None and any(c[3] is not None for c in curves) else ""
        title = title or f"{score} per step{band}"
        return plots.series(curves, score, folder, name or f"history_{score}.png", title, "step")

    def __repr__(self) -> str:
        return f"History({self._inner()}): n={self.n} steps={len(self.parts())}"
