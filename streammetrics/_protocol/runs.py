"""A log-structured stack of sorted runs.

A state that is a sorted table (``RankAUC``'s distinct scores,
``ClusterContingency``'s cells) folds a batch by sorting it into a *run* pushed
here; a run is merged into the one below while that one is at most twice as
long, so at most ``log2(total)`` runs remain and folding ``n`` entries costs
``O(n log n)``. Runs are never changed in place: copies share them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

Run = TypeVar("Run")


class RunStack(Generic[Run]):
    """Sorted runs, longest first, merged log-structured (see the module docstring).

    ``merge(a, b)`` returns one run holding both; ``size(run)`` its entries.
    """

    __slots__ = ("merge", "size", "runs")

    def __init__(self, merge: Callable[[Run, Run], Run], size: Callable[[Run], int], runs=()):
        self.merge = merge
        self.size = size
        self.runs: list = list(runs)

    def push(self, run: Run) -> None:
        """Add a run, then merge the top two while the lower is at most twice the upper."""
        runs = self.runs
        runs.append(run)
        while len(runs) >= 2 and self.size(runs[-2]) <= 2 * self.size(runs[-1]):
            b = runs.pop()
            a = runs.pop()
            runs.append(self.merge(a, b))

    def top(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def pop(self) -> Run:
        return self.runs.pop()

    def merged(self) -> Run | None:
        """One run holding every run (smallest merged first); the stack is unchanged."""
        runs = self.runs
        if not runs:
            return None
        out = runs[-1]
        for r in reversed(runs[:-1]):
            out = self.merge(r, out)
        return out

    def collapse(self) -> Run | None:
        """Merge every run into one and keep only that; returns it (``None`` if empty)."""
        out = self.merged()
        self.runs = [] if out is None else [out]
        return out

    def entries(self) -> int:
        """Entries held in all runs."""
        return sum(self.size(r) for r in self.runs)

    def copy(self) -> RunStack:
        """A stack sharing these (immutable) runs."""
        return RunStack(self.merge, self.size, self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self):
        return iter(self.runs)
