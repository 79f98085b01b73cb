"""The ``streammetrics`` command: evaluate prediction files in bounded memory.

::

    streammetrics evaluate PATH... --task binary --y label --p score
    streammetrics merge STATE...
    streammetrics demo
    streammetrics compile

``evaluate`` reads Parquet, CSV, ``.npy`` and ``.npz`` files chunk by chunk.
Several paths (or a glob, or a directory) are shards: each is evaluated on its
own and the shard states are merged, exactly as separate workers would. Every
problem with the input is reported as one line on stderr naming the file, the
column and the row, with exit status 1. Rows are counted as the format
suggests: for CSV, the file's line (1-based, the header being line 1, as
``sed -n Np`` prints it); for Parquet, ``.npy`` and ``.npz``, the 0-based row
index within the file.

While it runs, the command tells on stderr, never on stdout: the progress bar
names the file being read (``--progress``), the first compilation of the
kernels is announced, and ``evaluate`` ends with a line of the rows, seconds
and rows per second.

The modules, each importing only those listed before it: :mod:`.progress`
and :mod:`.sampling`; :mod:`.common` (the name, defaults, errors and notes
every module shares); :mod:`.parser` (the options); :mod:`.output` (reports,
plots, states); :mod:`.shards` (evaluating and merging the files, and the
library's errors told about the file); :mod:`.compiling` (the note on
compiling kernels, and ``compile``: every kernel compiled ahead);
:mod:`.bootstrapping` (``evaluate --bootstrap`` and ``compare``);
:mod:`.commands` (``evaluate``, ``merge``) and :mod:`.demo`.
"""

from __future__ import annotations

import os
import sys

from .bootstrapping import cmd_compare
from .commands import cmd_evaluate, cmd_merge
from .common import DEFAULT_BATCH_ROWS, DEFAULT_MAX_BINS, DEFAULT_MEMORY, DEFAULT_MEMORY_BYTES, PROG, CommandError
from .compiling import CompileWatch, cmd_compile
from .demo import cmd_demo
from .parser import build_parser
from .sampling import Reservoir

__all__ = ["main", "CommandError", "Reservoir", "DEFAULT_BATCH_ROWS", "DEFAULT_MAX_BINS", "DEFAULT_MEMORY",
           "DEFAULT_MEMORY_BYTES"]

_COMMANDS = {"evaluate": cmd_evaluate, "merge": cmd_merge, "demo": cmd_demo, "compare": cmd_compare,
             "compile": cmd_compile}


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
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
