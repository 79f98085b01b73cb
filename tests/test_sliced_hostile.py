"""Sliced under hostile use: forged state files, keys that look alike."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

from .harness import forged, merge_fails


def test_slice_keys_nested_deep_are_refused_in_one_line(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    doc = '{"columns": 1, "names": ["by"], "keys": [[' + deep + "]]}"
    keys = np.frombuffer(doc.encode(), np.uint8)
    acc = sm.Sliced(sm.BinaryConfusion()).update([1, 0], [1, 1], by=["a", "b"])
    path = forged(acc, tmp_path / "s.state", arrays={"keys": keys})
    with pytest.raises(sm.StateFileError, match="nested too deep"):
        sm.load_state(path)
    merge_fails(path, capsys, "nested too deep")


@pytest.mark.parametrize("template", [sm.RankAUC(), sm.RankAUC(max_bins=4)], ids=["exact", "bounded"])
def test_an_overall_rank_state_that_is_not_its_slices_is_refused(tmp_path, capsys, template):
    # (true states load: here slices of rows with and without weights)
    mixed = sm.Sliced(template).update([1, 0, 1], [0.1, 0.2, 0.3], by=["a", "a", "b"])
    mixed.update([1, 0], [0.5, 0.6], by=["b", "b"], sample_weight=[0.5, 2.0])
    assert sm.Sliced(template).load_state_dict(mixed.state_dict()) == mixed
    acc = sm.Sliced(template).update([1, 0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4, 0.5], by=[1, 1, 2, 2, 2])
    counts = acc.state_dict()["overall.counts"].copy()
    counts[:, 0] = counts[::-1, 0]  # one row's label swapped: n unchanged
    path = forged(acc, tmp_path / "s.state", arrays={"overall.counts": counts})
    with pytest.raises(sm.StateFileError, match="does not count the rows its slices count"):
        sm.load_state(path)
    merge_fails(path, capsys, "does not count the rows")


B = 2**53


@pytest.mark.parametrize(
    "by, slices",
    [
        ([B, B + 1, 0.5], [0.5, B, B + 1]),
        ((B + 1, None, B, 1.5), [1.5, B, B + 1, None]),
        (["a", "a\x00"], ["a", "a\x00"]),
        ([b"a\x00", b"a"], ["a", "a\x00"]),
        (np.array(["a", "a\x00", "b"], dtype=object), ["a", "a\x00", "b"]),
    ],
    ids=["ints past 2**53 beside a float", "and beside None", "a trailing NUL", "in bytes", "in objects"],
)
def test_distinct_keys_are_distinct_slices_whatever_the_container(by, slices):
    n = len(by)
    acc = sm.Sliced(sm.BinaryConfusion()).update(np.ones(n, int), np.ones(n, int), by=by)
    assert list(acc.finalize().slices) == slices


@pytest.mark.parametrize(
    "by, match",
    [
        ([1, True], r"by\[1\] = True: the keys 1 and True are of different kinds"),
        (np.array([7.0, 2.0**53, np.nan]), r"by\[1\] = 9007199254740992.0: a float key from 2\*\*53 on"),
        ([1.5, float(B + 2)], r"by\[1\] = 9007199254740994.0: a float key"),
    ],
    ids=["True and 1", "nullable ints read as floats", "a float list"],
)
def test_keys_a_container_cannot_keep_apart_are_refused(by, match):
    acc = sm.Sliced(sm.BinaryConfusion())
    with pytest.raises(ValueError, match=match):
        acc.update(np.ones(len(by), int), np.ones(len(by), int), by=by)
    assert acc.n == 0
