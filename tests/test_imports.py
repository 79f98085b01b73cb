"""Importing the package is cheap: modules load on first use of their names.

Each check runs in a fresh interpreter, since this test process has imported
most of the package already.
"""

import json
import os
import subprocess
import sys

import pytest

import streammetrics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the package's modules that only some users need
OPTIONAL = (
    "streammetrics.sliced",
    "streammetrics.bootstrap",
    "streammetrics.comparison",
    "streammetrics.dask",
    "streammetrics.torch",
    "streammetrics.report",
    "streammetrics.cli",
    "streammetrics.io",
    "streammetrics.evaluator",
    "streammetrics.metrics.silhouette",
    "streammetrics.metrics.ranking",
)
#: third-party packages behind the optional extras
EXTRAS = ("pyarrow", "dask", "matplotlib", "torch", "pandas", "sklearn")


def fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter; return the JSON it prints last."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


LOADED = """
import json, sys
{before}
print(json.dumps(sorted(sys.modules)))
"""


def loaded_after(before: str) -> set:
    return set(fresh(LOADED.format(before=before)))


def test_import_loads_no_optional_module():
    loaded = loaded_after("import streammetrics")
    assert not {m for m in loaded if m.startswith(OPTIONAL)}
    assert not {m for m in loaded if m.split(".")[0] in EXTRAS}
    # nor any metric, kernel or numba: the package's import is a table of names
    assert not {m for m in loaded if m.startswith(("streammetrics.metrics", "streammetrics._kernels"))}
    assert "numba" not in loaded


def test_first_use_loads_only_what_it_needs():
    loaded = loaded_after(
        "import streammetrics as sm\nsm.BinaryConfusion(threshold=0.5).update([1, 0], [0.7, 0.2]).finalize()"
    )
    assert "streammetrics.metrics.binary" in loaded
    assert not {m for m in loaded if m.startswith(OPTIONAL)}, "a confusion count loads no ranking"
    assert not {m for m in loaded if m.split(".")[0] in EXTRAS}


def test_every_name_resolves_alike_in_a_fresh_process():
    got = fresh("""
import json, importlib, streammetrics as sm
out = {}
for name in sm.__all__:
    a = getattr(sm, name)
    b = getattr(importlib.import_module("streammetrics"), name)
    exec(f"from streammetrics import {name} as c", globals())
    out[name] = [a is b is c, getattr(a, "__module__", "")]
print(json.dumps(out))
""")
    assert set(got) == set(streammetrics.__all__)
    for name, (same, module) in got.items():
        assert same, name
        assert module.startswith("streammetrics"), (name, module)
        assert getattr(streammetrics, name).__module__ == module


def test_star_import_and_dir():
    got = fresh("""
import json
ns = {}
exec("from streammetrics import *", ns)
import streammetrics as sm
print(json.dumps([sorted(n for n in ns if not n.startswith("__")), dir(sm)]))
""")
    star, listing = got
    assert star == sorted(streammetrics.__all__)
    assert set(streammetrics.__all__) <= set(listing)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'RocAuc'"):
        streammetrics.RocAuc  # noqa: B018
    assert not hasattr(streammetrics, "not_a_metric")


def test_submodules_are_reachable_as_attributes():
    got = fresh("""
import json, streammetrics as sm
print(json.dumps([sm.bootstrap.__name__, sm.sliced.__name__, sm.report.__name__]))
""")
    assert got == ["streammetrics.bootstrap", "streammetrics.sliced", "streammetrics.report"]


#: states written in one process, each loaded in a fresh one
MAKES = [
    "sm.RankAUC().update([1, 0, 1, 0], [0.9, 0.3, 0.6, 0.7])",
    "sm.Evaluator(task='binary').update([1, 0, 1, 0], [0.9, 0.3, 0.6, 0.7])",
    "sm.Sliced(sm.MulticlassConfusion(3)).update([0, 1, 2], [0, 2, 2], by=[1, 1, 2])",
]


@pytest.fixture(scope="module")
def saved_states(tmp_path_factory):
    """Each of :data:`MAKES` saved by one fresh process: {make: (path, repr)}."""
    folder = tmp_path_factory.mktemp("states")
    paths = [str(folder / f"shard{i}.smstate") for i in range(len(MAKES))]
    lines = "".join(f"acc = {make}\nacc.save({path!r})\nout.append(repr(acc))\n" for make, path in zip(MAKES, paths))
    reprs = fresh(f"import json, streammetrics as sm\nout = []\n{lines}print(json.dumps(out))\n")
    return dict(zip(MAKES, zip(paths, reprs)))


@pytest.mark.parametrize("make", MAKES)
def test_load_state_finds_a_class_not_yet_imported(saved_states, make):
    """A fresh process that loads a state file has imported none of the
    classes in it: ``load_state`` imports them to find them by name."""
    path, saved = saved_states[make]
    loaded = fresh(f"""
import json, sys, streammetrics as sm
before = sorted(m for m in sys.modules if m.startswith("streammetrics.metrics"))
acc = sm.load_state({path!r})
print(json.dumps([before, repr(acc)]))
""")
    assert loaded[0] == []
    assert loaded[1] == saved
