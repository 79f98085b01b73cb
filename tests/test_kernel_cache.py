"""The test run's Numba cache is keyed by the kernel sources (see the root
conftest.py): editing any kernel, or a helper a kernel inlines from another
file, gives a new key and so a fresh cache, never stale compiled code."""

from __future__ import annotations

import os
import pathlib
import shutil

import conftest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "streammetrics"


def _copy(tmp_path) -> pathlib.Path:
    dest = tmp_path / "streammetrics"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_the_test_run_compiles_into_the_folder_of_its_sources():
    import numba

    folder = pathlib.Path(numba.config.CACHE_DIR)
    assert str(folder) == os.environ["NUMBA_CACHE_DIR"]
    if conftest.CACHES in folder.parents:  # (unless the caller chose a folder)
        assert folder.name == conftest.kernel_cache_key()


def test_every_kernel_source_changes_the_key(tmp_path):
    package = _copy(tmp_path)
    sources = conftest.kernel_sources(package)
    names = {p.relative_to(package).as_posix() for p in sources}
    assert {"_kernels/_jit.py", "_kernels/compensated.py", "_kernels/contingency.py"} <= names
    base = conftest.kernel_cache_key(package)
    seen = {base}
    for path in sources:
        text = path.read_text()
        path.write_text(text.replace("\n", "\n\n", 1))  # a blank line is an edit too
        key = conftest.kernel_cache_key(package)
        assert key not in seen, path
        seen.add(key)
        path.write_text(text)
    assert conftest.kernel_cache_key(package) == base


def test_a_new_kernel_file_changes_the_key_and_other_modules_do_not(tmp_path):
    package = _copy(tmp_path)
    base = conftest.kernel_cache_key(package)
    report = package / "cli" / "common.py"
    report.write_text(report.read_text() + "\n# no kernel here\n")
    assert conftest.kernel_cache_key(package) == base
    (package / "_kernels" / "extra.py").write_text("from ._jit import kernel\n")
    with_extra = conftest.kernel_cache_key(package)
    assert with_extra != base
    (package / "metrics" / "extra.py").write_text("import numba\n")  # kernels outside _kernels/
    assert conftest.kernel_cache_key(package) not in (base, with_extra)
