"""The ``streammetrics`` command: evaluate prediction files in bounded memory.

::

    streammetrics evaluate PATH... --task binary --y label --p score
    streammetrics merge STATE...
    streammetrics demo
    streammetrics compile

Several paths (a glob, a directory) are shards, evaluated apart and merged as
separate workers would. A problem with the input is one line on stderr naming
the file, the column and the row (exit status 1); notes go to stderr too, never
to stdout. The modules import one way: :mod:`.progress`, then
:mod:`.common`, :mod:`.parser`, :mod:`.output`, :mod:`.shards`, :mod:`.compiling`,
:mod:`.bootstrapping`, and last :mod:`.commands` and :mod:`.demo`.
"""

from __future__ import annotations

import contextlib
import os
import sys

from .bootstrapping import cmd_compare
from .commands import cmd_evaluate, cmd_merge
from .common import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_MAX_BINS,
    DEFAULT_MEMORY,
    DEFAULT_MEMORY_BYTES,
    PROG,
    CommandError,
    Reservoir,
)
from .compiling import CompileWatch, cmd_compile
from .demo import cmd_demo
from .parser import build_parser

__all__ = [
    "main",
    "CommandError",
    "Reservoir",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_MAX_BINS",
    "DEFAULT_MEMORY",
    "DEFAULT_MEMORY_BYTES",
]

_COMMANDS = {
    "evaluate": cmd_evaluate,
    "merge": cmd_merge,
    "demo": cmd_demo,
    "compare": cmd_compare,
    "compile": cmd_compile,
}


def main(argv=None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        with CompileWatch() as watch:
            return _COMMANDS[args.command](args, watch)
    except CommandError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a traceback
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 1
