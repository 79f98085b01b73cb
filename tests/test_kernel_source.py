"""Rules the kernels' source keeps, checked on the source itself.

Numba compiles the builtins ``min``, ``max`` and ``int`` as overloads of their
own, one per argument type, on a cold first use (about 0.02 s apiece, several
per kernel): kernels compare with a conditional and cast with ``np.int64``
instead. The check reads every function of ``streammetrics/_kernels`` that is
compiled: decorated by a compiling helper of ``_jit``, passed to one
(``inline(_bin_of_py)``), or defined inside a factory that makes kernels.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "streammetrics" / "_kernels"

#: the compiling helpers of ``_jit``
COMPILERS = {"kernel", "inline", "inline_ir", "parallel_kernel", "Dual"}

#: builtins that Numba compiles as overloads of their own
OVERLOADED = {"min", "max", "int"}


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def compiled_functions(tree: ast.Module):
    """The module's compiled functions (see the module docstring)."""
    passed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in COMPILERS:
            passed.update(a.id for a in node.args if isinstance(a, ast.Name))
    for top in tree.body:
        if not isinstance(top, ast.FunctionDef):
            continue
        decorated = any(_name(d) in COMPILERS for d in top.decorator_list)
        if decorated or top.name in passed:
            yield top
        else:  # a factory: the functions it defines are compiled
            yield from (f for f in ast.walk(top) if isinstance(f, ast.FunctionDef) and f is not top)


def overloaded_calls(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for fn in compiled_functions(tree):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OVERLOADED:
                found.append(f"{path.name}:{node.lineno} {fn.name}: {node.func.id}()")
    return found


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_kernels_call_no_builtin_that_compiles_an_overload(path):
    assert overloaded_calls(path) == []


def test_the_check_sees_a_kernel_calling_min(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("from ._jit import kernel, inline\n\n\n"
                   "@kernel\ndef f(a, b):\n    return min(a, b)\n\n\n"
                   "def _g_py(a):\n    return int(a)\n\n\n_g = inline(_g_py)\n\n\n"
                   "def factory(flag):\n    def h(a):\n        return max(a, 1)\n    return h\n\n\n"
                   "def helper(xs):\n    return max(xs)\n")
    assert [s.split(" ", 1)[1] for s in overloaded_calls(src)] == ["f: min()", "_g_py: int()", "h: max()"]
