"""The test run's Numba cache: one folder per version of the kernel sources.

Numba's cache checks only the file of the kernel it loads, so a kernel that
inlines a helper from another file runs its old compiled code after that
helper is edited, until the cache is wiped by hand. The test run therefore
keeps its compiled kernels in ``.numba-cache/<key>`` beside this file, where
``<key>`` is a hash of every kernel source of the package
(:func:`kernel_cache_key`): any edit of any of them starts a fresh folder.
It is set here, before anything imports Numba, so it covers the tests, the
doctests of the package and of README.md, and the processes they start. A
``NUMBA_CACHE_DIR`` set by the caller is kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parent
PACKAGE = ROOT / "streammetrics"
CACHES = ROOT / ".numba-cache"
#: the folders of other versions of the sources kept beside the current one
KEEP = 3

#: a module that compiles kernels, or holds their helpers, names Numba or the policy file
_COMPILES = re.compile(rb"\bnumba\b|\b_jit\b")


def kernel_sources(package: pathlib.Path = PACKAGE) -> list[pathlib.Path]:
    """The package's modules that hold kernels or their helpers: every module
    of ``_kernels/``, and any other that names Numba or ``_jit``."""
    kernels = package / "_kernels"
    return [
        path for path in sorted(package.rglob("*.py")) if kernels in path.parents or _COMPILES.search(path.read_bytes())
    ]


def kernel_cache_key(package: pathlib.Path = PACKAGE) -> str:
    """A hash of the names and contents of :func:`kernel_sources`."""
    digest = hashlib.sha256()
    for path in kernel_sources(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _use_keyed_cache() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    folder = CACHES / kernel_cache_key()
    folder.mkdir(parents=True, exist_ok=True)
    os.utime(folder)  # the most recently used comes first when old ones are cleared
    (CACHES / ".gitignore").write_text("*\n")
    older = sorted(
        (p for p in CACHES.iterdir() if p.is_dir() and p != folder), key=lambda p: p.stat().st_mtime, reverse=True
    )
    for stale in older[KEEP:]:
        shutil.rmtree(stale, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)


_use_keyed_cache()

#: the modules of an optional extra, whose doctests are not collected without it
#: (importing them raises ImportError naming the extra)
collect_ignore = [
    f"streammetrics/{module}.py"
    for module, extra in (("torch", "torch"), ("dask", "dask"), ("spark", "pyspark"), ("ray", "ray"))
    if importlib.util.find_spec(extra) is None
]
