"""Class labels encoded as codes, against a dict lookup."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics._protocol.label_codes import LabelCodes


def _reference(labels, values):
    index = {lab: i for i, lab in enumerate(labels)}
    return np.array([index.get(v, -1) for v in values], np.int64)


def _encoded(labels, arr):
    return LabelCodes(labels).encode(arr)


words = st.text(alphabet="abcé字z\u0000", min_size=0, max_size=6)


@given(st.lists(words, min_size=1, max_size=12, unique=True), st.lists(words, min_size=1, max_size=60))
def test_fixed_width_strings_match_a_dict(labels, extra):
    labels = [lab for lab in labels if not lab.endswith("\u0000")]  # numpy strips trailing NULs
    if not labels:
        return
    values = [labels[i % len(labels)] for i in range(len(extra))] + [v.rstrip("\u0000") for v in extra]
    arr = np.array(values)
    np.testing.assert_array_equal(_encoded(labels, arr), _reference(labels, arr.tolist()))


@given(st.lists(words, min_size=1, max_size=12, unique=True), st.lists(st.integers(0, 20), max_size=80))
def test_repeated_objects_match_a_dict(labels, picks):
    pool = np.array(labels + ["unknown", 3, None], dtype=object)
    arr = pool[np.array(picks, np.int64) % len(pool)] if picks else np.zeros(0, object)
    np.testing.assert_array_equal(_encoded(labels, arr), _reference(labels, arr.tolist()))


def test_many_distinct_objects_are_coded():
    labels = ["cat", "dog", "bird"]
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, 20_000)
    arr = np.array(["".join(list(labels[c])) for c in codes], dtype=object)  # every row its own object
    np.testing.assert_array_equal(_encoded(labels, arr), codes)


def test_unknown_labels_are_named_with_their_row():
    acc = sm.MulticlassConfusion(labels=["cat", "dog"])
    for y in (np.array(["cat", "dog", "cow"]), np.array(["cat", "dog", "cow"], dtype=object)):
        with pytest.raises(ValueError, match=r"y\[2\] = 'cow': not one of the 2 labels"):
            acc.update(y, np.array(["cat", "cat", "cat"]))
    assert acc.n == 0


def test_int_and_str_labels_stay_apart():
    acc = sm.MulticlassConfusion(labels=[1, "1"])
    r = acc.update(np.array([1, "1"], dtype=object), np.array(["1", 1], dtype=object)).finalize()
    np.testing.assert_array_equal(r.matrix, [[0, 1], [1, 0]])


def test_a_uint64_label_beyond_int64_is_named_as_given():
    y = np.array([0, 1, 1, 2**64 - 1], dtype=np.uint64)
    for call in (
        lambda: sm.BinaryConfusion().update(y, [0, 1, 1, 0]),
        lambda: sm.RankAUC().update(y, [0.1, 0.2, 0.3, 0.4]),
    ):
        with pytest.raises(ValueError, match=r"^y\[3\] = 18446744073709551615: labels must be 0 or 1"):
            call()
