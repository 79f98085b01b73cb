"""What every module of the command shares: its name, defaults, errors and notes.

The other modules of :mod:`streammetrics.cli` import from here (and from
:mod:`.progress`), never the other way round.
"""

from __future__ import annotations

import importlib.util

from .progress import write_line

__all__ = [
    "PROG",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_MAX_BINS",
    "DEFAULT_MEMORY",
    "DEFAULT_MEMORY_BYTES",
    "DEMO_ROWS",
    "DEMO_SHARDS",
    "TASKS",
    "PROGRESS",
    "AUTO_LABELS",
    "CommandError",
    "note",
    "need_matplotlib",
    "summary",
]

PROG = "streammetrics"
DEFAULT_BATCH_ROWS = 1 << 18
#: ``--max-bins`` used when the option is not given: none, the AUC is exact.
DEFAULT_MAX_BINS = None
#: ``--memory`` used when the option is not given: the exact AUC's state is
#: held in memory up to this budget and spilled to temporary files beyond it.
DEFAULT_MEMORY = "1GB"
DEFAULT_MEMORY_BYTES = 10**9
DEMO_ROWS = 5_000_000
DEMO_SHARDS = 5
TASKS = ("binary", "multiclass", "multilabel", "regression", "clustering")
PROGRESS = ("auto", "always", "never")
#: ``--labels auto``: the labels are read from the files in a first pass
AUTO_LABELS = "auto"


class CommandError(Exception):
    """An error reported as ``streammetrics: error: <message>`` and exit status 1."""


def note(msg: str) -> None:
    """A line ``streammetrics: <msg>`` on stderr (above the progress bar, if one is drawn)."""
    write_line(f"{PROG}: {msg}")


def need_matplotlib() -> None:
    """Fail early, before any reading, when ``--plots`` cannot be honoured."""
    if importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plots needs matplotlib: pip install 'streammetrics[plot]'")


def summary(rows: int, seconds: float, files: int, compiling: str = "") -> str:
    """``"1,234,567 rows in 2.31 s (0.53 M rows/s) from 3 files"``, then
    ``compiling`` (the share of the time spent compiling) in parentheses.

    A rate under 10,000 rows a second is given in rows a second (``"650 rows/s"``).
    """
    rate = rows / max(seconds, 1e-9)
    rate_text = f"{rate / 1e6:.2f} M rows/s" if rate >= 1e4 else f"{rate:,.0f} rows/s"
    text = (f"{rows:,} rows in {seconds:.2f} s ({rate_text}) "
            f"from {files:,} file{'' if files == 1 else 's'}")
    return f"{text} ({compiling})" if compiling else text
