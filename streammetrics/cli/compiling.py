"""Saying that Numba compiles the kernels, and how long it took.

The kernels are compiled on their first call and cached on disk, so the first
run of an installation (or of a new kind of input) spends seconds compiling
that later runs do not: :class:`CompileWatch` says so when it starts and counts
the seconds it takes.
"""

from __future__ import annotations

import time

from numba.core import event

from .ahead import Ahead
from .output import note

__all__ = ["CompileWatch", "COMPILING_NOTE"]

#: the line on stderr at the first compilation of a run
COMPILING_NOTE = ("compiling kernels on first use (once per installation, or ahead with "
                  "'streammetrics compile'); later runs start at once")

#: compilations shorter than this (in all) go unmentioned in the summaries
_WORTH_SAYING = 1.0


class CompileWatch(event.Listener):
    """A listener to Numba's ``"numba:compile"`` events, used as a context manager.

    At the first compilation it prints :data:`COMPILING_NOTE` on stderr, once;
    it counts the seconds of the outermost compilations only (compiling a
    kernel compiles the kernels it calls within it). Entering registers it
    with Numba, leaving unregisters it.

    Attributes
    ----------
    seconds : float
        The time spent compiling so far.
    announced : bool
        Whether the note has been printed.
    ahead : Ahead
        The helper process that compiles the command's kernels from the other
        end (:mod:`.ahead`): started at the first compilation once the command
        has armed it, stopped when the watch is left.
    """

    kind = "numba:compile"

    def __init__(self):
        self.seconds = 0.0
        self.announced = False
        self.ahead = Ahead()
        self._depth = 0
        self._since = 0.0

    def on_start(self, event):
        """A compilation starts: announce the first one; time the outermost ones."""
        if self._depth == 0:
            if not self.announced:
                self.announced = True
                note(COMPILING_NOTE)
                self.ahead.start()
            self._since = time.perf_counter()
        self._depth += 1

    def on_end(self, event):
        """A compilation ends."""
        if self._depth == 0:  # begun before the listener was registered
            return
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._since

    def __enter__(self) -> "CompileWatch":
        event.register(self.kind, self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister(self.kind, self)
        self.ahead.stop()

    def share(self, since: float = 0.0) -> str:
        """``"of which 3.4 s compiling kernels, once"``: the compiling done since
        :attr:`seconds` was ``since``, when it took over a second; else ``""``."""
        spent = self.seconds - since
        if spent <= _WORTH_SAYING:
            return ""
        return f"of which {spent:.1f} s compiling kernels, once"
