"""One memory budget shared by the exact rank states made from one accumulator (its copies: a
:class:`~streammetrics.Sliced`'s slices and overall, an Evaluator's copies, ...)."""

from __future__ import annotations

import os
import threading
import weakref

_POOLS: weakref.WeakSet = weakref.WeakSet()


class MemoryPool:
    """The in-memory bytes of every member (an exact :class:`~streammetrics.RankAUC` with ``max_memory``), kept
    within ``budget`` together: past :attr:`limit` (half the budget; the other half is one merge's scratch) the members
    holding the most spill, largest first, until the total is under half of it; a merge spills only the state it
    folds into. A member leaves the pool when collected; a pickled or loaded accumulator makes its own pool.

    Locks, in this order: a member's own, then the pool's, which only guards its counts and is never held while a
    member spills; a member other than the one asking spills only if its lock is free at once (``spill(wait=False)``),
    so two members making room at the same time never wait for each other.
    """

    __slots__ = ("budget", "limit", "_lock", "_held", "_dead", "_total", "__weakref__")

    def __init__(self, budget: int):
        self.budget = budget
        self.limit = budget // 2
        self._lock = threading.Lock()
        self._held: dict = {}  # id(member) -> [weak reference, bytes]
        self._dead: list = []  # references of collected members (appended by their callbacks)
        self._total = 0
        _POOLS.add(self)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held by a thread the child lacks)."""
        self._lock = threading.Lock()

    def __reduce__(self):  # (a copy of the pool is a new pool of the same budget)
        return MemoryPool, (self.budget,)

    @property
    def total(self) -> int:
        """Bytes held in memory by the members, as they last told."""
        with self._lock:
            self._forget_dead()
            return self._total

    def share(self, row_bytes: int, most: int = 1024) -> int:
        """Rows of ``row_bytes`` a member may keep in a new buffer: at most ``most``, and its even share of
        half the limit."""
        return max(1, min(most, self.limit // (2 * row_bytes * max(1, len(self._held)))))

    def _forget_dead(self) -> None:
        while self._dead:
            ref = self._dead.pop()
            entry = self._held.get(ref.key)
            if entry is not None and entry[0] is ref:
                self._total -= entry[1]
                del self._held[ref.key]

    def _set(self, member, nbytes: int) -> None:
        """Record ``member``'s bytes (under the lock)."""
        self._forget_dead()
        key = id(member)
        entry = self._held.get(key)
        if entry is None or entry[0]() is not member:  # a new member (or a collected one's id, reused)
            if entry is not None:
                self._total -= entry[1]
            ref = weakref.KeyedRef(member, self._dead.append, key)
            entry = self._held[key] = [ref, 0]
        self._total += nbytes - entry[1]
        entry[1] = nbytes

    def note(self, member, nbytes: int) -> None:
        """``member`` now holds ``nbytes`` in memory."""
        with self._lock:
            self._set(member, nbytes)

    def reserve(self, member, nbytes: int, others: bool = True) -> None:
        """``member`` is about to hold ``nbytes``: spill the members holding the most first
        if the total would pass :attr:`limit` (``member`` itself among them; ``others=False``:
        ``member`` only, as a merge does)."""
        with self._lock:
            self._set(member, nbytes)
            if self._total <= self.limit:
                return
            excess = self._total - self.limit // 2
            victims = []
            for ref, held in sorted(self._held.values(), key=lambda e: -e[1]):
                if excess <= 0 or held <= 0:
                    break
                victim = ref()
                if victim is not None and (others or victim is member):
                    victims.append(victim)
                    excess -= held
        for victim in victims:  # (the pool's lock let go: each spill takes the member's lock)
            victim.spill(wait=victim is member)


def _fresh_locks() -> None:
    for pool in list(_POOLS):
        pool.after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks)
