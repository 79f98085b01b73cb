"""State files written by earlier releases still load and give the same scores.

``fixtures/v1`` holds files written by the version-1 format (and the scores
their accumulators gave when they were written, in ``expected.json``).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import streammetrics as sm

HERE = pathlib.Path(__file__).parent / "fixtures"
V1 = HERE / "v1"
EXPECTED = json.loads((V1 / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_version_1_files_load_with_their_scores(name):
    want = EXPECTED[name]
    acc = sm.load_state(V1 / f"{name}.state")
    assert type(acc).__name__ == want["class"]
    assert acc.n == want["n"]
    got = acc.finalize()
    for key, value in want["scores"].items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-12, abs=0), key
        elif isinstance(value, list):
            np.testing.assert_allclose(
                np.asarray(got[key], dtype=float), np.asarray(value, dtype=float), rtol=1e-12, err_msg=key
            )
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_version_1_files_merge_and_save_again(name, tmp_path):
    acc = sm.load_state(V1 / f"{name}.state")
    twice = acc + acc
    assert twice.n == 2 * acc.n
    twice.save(tmp_path / "again.state")
    assert sm.load_state(tmp_path / "again.state") == twice
