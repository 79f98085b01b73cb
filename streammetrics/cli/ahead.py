"""Compiling ahead: a second process compiles a command's kernels from the other end.

Numba compiles each kernel on its first call, one at a time (its compiler
holds a lock), and keeps it in its on-disk cache; the first run of an
installation spends most of its time there. When such a run starts
compiling and the machine has a second core, :class:`Ahead` launches this
module as a helper process. The helper reads the first rows of the
command's first file and folds them into the task's members in the reverse
of their order, finalizes them in reverse too, then runs the command's own
steps on those rows (two shards merged, the report); so it compiles first
the kernels the command needs last, while the command compiles the first
ones, and each finds in the cache the kernels the other has finished.

Only Numba's cache is shared: the command's results never depend on the
helper, which is stopped when the command ends. It is not started on one
core, nor when ``STREAMMETRICS_COMPILE_AHEAD=0`` is set.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

from .._threads import CORES

__all__ = ["Ahead", "ENV", "enabled"]

#: the environment variable that turns the helper off when ``0``
ENV = "STREAMMETRICS_COMPILE_AHEAD"

#: rows of the first file the helper folds
ROWS = 2000


def enabled() -> bool:
    """Whether a helper may be started here: two cores or more, and not turned off."""
    return CORES > 1 and os.environ.get(ENV, "1").strip() != "0"


class Ahead:
    """The helper of one command: :meth:`arm` with what it evaluates, :meth:`start`
    at its first compilation (either order), :meth:`stop` when it ends."""

    def __init__(self):
        self.plan: dict | None = None
        self.proc: subprocess.Popen | None = None
        self._wanted = False

    def arm(self, path: str, columns, settings: dict) -> None:
        """Say what the command evaluates: its first file, columns and task settings."""
        self.plan = {"path": os.fspath(path), "settings": settings,
                     "columns": {"y": columns.y, "p": list(columns.p), "weight": columns.weight,
                                 "labels": columns.labels, "by": list(columns.by),
                                 "text_labels": columns.text_labels}}
        if self._wanted:
            self.start()

    def start(self) -> None:
        """Start the helper, once, if it is armed and enabled (else when armed)."""
        self._wanted = True
        if self.plan is None or self.proc is not None or not enabled():
            return
        try:
            payload = json.dumps(self.plan)
        except (TypeError, ValueError):  # settings the helper cannot be told
            return
        env = dict(os.environ, **{ENV: "0"})  # the helper starts no helper
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _HELPER, payload], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:
            self.proc = None

    def stop(self) -> None:
        """Stop the helper if it still runs (what it compiled stays in the cache)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck helper
            proc.kill()


def _columns(plan: dict):
    from ..io import ColumnSpec

    c = plan["columns"]
    y = tuple(c["y"]) if isinstance(c["y"], list) else c["y"]
    return ColumnSpec(y, tuple(c["p"]), c["weight"], labels=c["labels"], by=tuple(c["by"]),
                      text_labels=bool(c.get("text_labels")))


def run(plan: dict) -> None:
    """The helper's work (see the module docstring)."""
    from ..evaluator.evaluator import Evaluator
    from ..io import open_source
    from ..sliced import Sliced
    from .shards import _keys, make_evaluator

    settings = plan["settings"]
    src = open_source(plan["path"], _columns(plan))
    chunks = list(itertools.islice(src.chunks(ROWS // 2), 2))
    if not chunks:
        return
    first = chunks[0]
    ev = make_evaluator(settings)
    if type(ev) is Evaluator:  # its members from the last: their kernels first
        batch = ev.prepare(first.y, first.p, sample_weight=first.w)
        members = [m.copy() for m in reversed(list(ev.members.values()))]
        for m in members:
            m.fold(batch)
        for m in members:
            m.finalize()
    shards = []
    for chunk in chunks:  # the command's own steps: shards folded, merged, reported
        shard = make_evaluator(settings)
        if isinstance(shard, Sliced):
            shard.update(chunk.y, chunk.p, sample_weight=chunk.w, by=_keys(src, chunk))
        else:
            shard.update(chunk.y, chunk.p, chunk.w)
        shards.append(shard)
    total = shards[0]
    for other in shards[1:]:
        total.merge(other)
    total.finalize().to_text()


def helper_main(payload: str) -> int:
    """The helper process: :func:`run` the plan ``payload`` (JSON); exit status 1
    if it failed, which only leaves kernels uncompiled."""
    try:
        run(json.loads(payload))
    except Exception:
        return 1
    return 0


#: the helper process's program (``-c``: run as ``-m`` it would be imported twice)
_HELPER = "import sys; from streammetrics.cli.ahead import helper_main; sys.exit(helper_main(sys.argv[1]))"
